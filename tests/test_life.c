/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "life": what is made from a group outlives the user's handle to
 * it (MPI_Comm_free's deferred deallocation). A persistent point-to-point
 * request and a window are used after rcx_group_free; the group, its
 * connections and its failure state live on until the last of them goes.
 * And a connection's own life: an error the connection manager reports
 * on a live peer's connection is a break, not a failure; a peer that
 * leaves is known to have left, its BYE not lost on the way.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "providers/fault/fault.h"
#include "lib/core/core.h"
#include "lib/core/conn_int.h"
#include "tu.h"
#include "tu_mp.h"
#include "test_stop.h"

enum { LF_TAG = 17, LF_STARTS = 4, LF_BATCH = 32 };

static uint64_t word(int start, size_t i)
{
	return ((uint64_t)start << 40) ^ (i * 0x9e3779b97f4a7c15ull);
}

/* Both ends of one persistent pair, started after the group is freed. */
static void persistent_pair(struct tp_job *j, size_t len)
{
	size_t n = len / sizeof(uint64_t), i, bad;
	uint64_t *buf = malloc(len);
	struct rcx_req *r = NULL;
	struct rcx_status st;
	int k, ret;

	if (!TP_CHECK(buf))
		return;
	if (j->rank == 0)
		ret = rcx_send_init(j->g, buf, len, 1, LF_TAG, &r);
	else
		ret = rcx_recv_init(j->g, buf, len, 0, LF_TAG, &r);
	if (!TP_CHECK_OK(ret)) {
		free(buf);
		return;
	}
	for (k = 0; k < LF_STARTS; k++) {
		for (i = 0; i < n; i++)
			buf[i] = j->rank == 0 ? word(k, i) : 0;
		if (!TP_CHECK_OK(rcx_start(r)) ||
		    !TP_CHECK_OK(rcx_wait(&r, &st)))
			break;
		TP_CHECK(r != NULL); /* persistent: still there */
		TP_CHECK_EQ(st.count, len);
		if (j->rank != 1)
			continue;
		TP_CHECK_EQ(st.source, 0);
		TP_CHECK_EQ(st.tag, LF_TAG);
		for (i = 0, bad = 0; i < n; i++)
			bad += buf[i] != word(k, i);
		TP_CHECK_EQ(bad, 0);
	}
	TP_CHECK_OK(rcx_req_free(&r));
	free(buf);
}

/*
 * Persistent send and receive made on the world, the world freed, then
 * started and completed several times: eager (64 B) and rendezvous
 * (1 MiB) messages. The request held the group; the handle is dead to
 * the API.
 */
static void sc_persistent_after_free(struct tp_job *j)
{
	static const size_t lens[] = { 64, 1 << 20 };
	struct rcx_group *g = j->g;
	struct rcx_req *pre[2] = { NULL, NULL };
	int i;

	/* made before the free, used after it */
	for (i = 0; i < 2; i++)
		TP_CHECK_OK(j->rank == 0
				    ? rcx_send_init(g, NULL, 0, 1, i, &pre[i])
				    : rcx_recv_init(g, NULL, 0, 0, i, &pre[i]));
	TP_CHECK_OK(rcx_group_barrier(g));
	TP_CHECK_OK(rcx_group_free(&j->g));
	TP_CHECK(j->g == NULL);
	/* the freed handle is refused, not read */
	TP_CHECK_EQ(rcx_group_rank(g), -EINVAL);
	TP_CHECK_EQ(rcx_group_barrier(g), -EINVAL);
	for (i = 0; i < 2; i++) {
		TP_CHECK_OK(rcx_start(pre[i]));
		TP_CHECK_OK(rcx_wait(&pre[i], RCX_STATUS_IGNORE));
		TP_CHECK_OK(rcx_req_free(&pre[i]));
	}
	/* the world again: the same group, live for the API again */
	TP_CHECK_OK(rcx_group_world(j->ctx, &j->g));
	for (i = 0; i < 2; i++)
		persistent_pair(j, lens[i]);
	TP_CHECK_OK(rcx_group_free(&j->g));
}

/*
 * A request made on the world outlives every handle the user had: the
 * group goes with the request's free. (The harness's closing barrier is
 * skipped: j->g stays NULL.)
 */
static void sc_persistent_last_holder(struct tp_job *j)
{
	struct rcx_req *r = NULL;
	uint64_t v = 0;

	if (j->rank == 0) {
		v = 0x1234;
		TP_CHECK_OK(rcx_send_init(j->g, &v, sizeof(v), 1, LF_TAG, &r));
	} else {
		TP_CHECK_OK(rcx_recv_init(j->g, &v, sizeof(v), 0, LF_TAG, &r));
	}
	TP_CHECK_OK(rcx_group_free(&j->g));
	if (!TP_CHECK(r))
		return;
	TP_CHECK_OK(rcx_start(r));
	TP_CHECK_OK(rcx_wait(&r, RCX_STATUS_IGNORE));
	TP_CHECK_EQ(v, 0x1234);
	TP_CHECK_OK(rcx_req_free(&r));
}

/*
 * A window allocated on the world, the world freed, then a passive epoch
 * (put to the next rank), a fence epoch and the window's free: all go
 * through the group the window holds.
 */
static void sc_window_after_free(struct tp_job *j)
{
	int next = (j->rank + 1) % j->size, prev;
	uint64_t *base = NULL, v;
	struct rcx_win *w = NULL;
	int nf = -1;

	prev = (j->rank + j->size - 1) % j->size;
	if (!TP_CHECK_OK(rcx_win_allocate(j->g, 4 * sizeof(uint64_t),
					  sizeof(uint64_t), NULL,
					  (void **)&base, &w)))
		return;
	TP_CHECK_OK(rcx_group_free(&j->g));
	v = 1000 + (uint64_t)j->rank;
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_put(w, &v, sizeof(v), next, 0));
	TP_CHECK_OK(rcx_win_flush(w, next));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_EQ(base[0], 1000 + (uint64_t)prev);
	v = 2000 + (uint64_t)j->rank;
	TP_CHECK_OK(rcx_put(w, &v, sizeof(v), next, 1));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_EQ(base[1], 2000 + (uint64_t)prev);
	TP_CHECK_OK(rcx_win_get_failed(w, NULL, 0, &nf));
	TP_CHECK_EQ(nf, 0);
	TP_CHECK_OK(rcx_win_free(&w));
}

static void sc_lazy_conn(void)
{
	setenv("RCX_CONNECT", "lazy", 1);
}

/* pid's process has exited (a zombie, or reaped) */
static bool exited(pid_t pid)
{
	char path[64], buf[256], *p;
	FILE *f;
	bool z;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return true;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	z = p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	fclose(f);
	return z;
}

/*
 * RCX_CONNECT=lazy: rank 2 talks to rank 1 only, then leaves (group free,
 * context destroyed, process gone). Rank 0, never connected to it, then
 * sends to it and receives from it: both end at once with -ECONNRESET
 * (it left), not with a hang or a process failure.
 */
static void sc_left_lazy(struct tp_job *j)
{
	int64_t pid = getpid(), v = 0;
	struct rcx_req *r = NULL;
	long long end;
	bool gone;

	if (j->rank == 2) {
		TP_CHECK_OK(rcx_send(j->g, &pid, sizeof(pid), 1, LF_TAG));
		TP_CHECK_OK(rcx_group_free(&j->g));
		return; /* the harness destroys the context: gone */
	}
	if (j->rank == 1) {
		TP_CHECK_OK(rcx_recv(j->g, &pid, sizeof(pid), 2, LF_TAG, NULL));
		/* its BYE ends a receive from it */
		TP_CHECK_EQ(rcx_recv(j->g, &v, sizeof(v), 2, LF_TAG, NULL),
			    -ECONNRESET);
		/* gone: exited (a zombie) or reaped; the first sight holds
		 * (the pid is not looked at again, it may be reused) */
		end = tu_now_ms() + 60000;
		while (!(gone = exited((pid_t)pid)) && tu_now_ms() < end)
			usleep(1000);
		TP_CHECK(gone);
		TP_CHECK_OK(rcx_send(j->g, &pid, sizeof(pid), 0, LF_TAG));
	} else {
		TP_CHECK_OK(rcx_recv(j->g, &pid, sizeof(pid), 1, LF_TAG, NULL));
		TP_CHECK(j->g->conns[2]->state == RCX__CONN_IDLE);
		TP_CHECK_EQ(rcx_send(j->g, &v, sizeof(v), 2, LF_TAG),
			    -ECONNRESET);
		TP_CHECK_EQ(rcx_irecv(j->g, &v, sizeof(v), 2, LF_TAG, &r),
			    -ECONNRESET);
		TP_CHECK(r == NULL);
	}
	/* the survivors' closing barrier without rank 2 */
	TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 1 - j->rank, LF_TAG + 1));
	TP_CHECK_OK(
		rcx_recv(j->g, &v, sizeof(v), 1 - j->rank, LF_TAG + 1, NULL));
	TP_CHECK_OK(rcx_group_free(&j->g));
}

/*
 * Messages k .. k + n - 1 (n <= LF_BATCH) both ways with the peer of a
 * 2-rank job, then one more (the sentinel k + n): each must arrive once
 * and in order, so a message lost, or taken twice, is a wrong number.
 * Returns the receives that got the wrong one.
 */
static int exchange(struct tp_job *j, int k, int n)
{
	uint64_t in[LF_BATCH + 1], out[LF_BATCH + 1];
	struct rcx_req *r[2 * (LF_BATCH + 1)];
	int peer = 1 - j->rank, i, m = 0, bad = 0;

	for (i = 0; i <= n; i++) {
		in[i] = 0;
		out[i] = word((j->rank << 20) + k + i, 7);
		if (!TP_CHECK_OK(rcx_irecv(j->g, &in[i], 8, peer, LF_TAG + 2,
					   &r[m])))
			break;
		m++;
		if (!TP_CHECK_OK(rcx_isend(j->g, &out[i], 8, peer, LF_TAG + 2,
					   &r[m])))
			break;
		m++;
	}
	/* a failed post ends the batch: what went is waited for */
	if (!TP_CHECK_OK(rcx_waitall(m, r, RCX_STATUSES_IGNORE)) ||
	    m < 2 * (n + 1))
		return n + 1;
	for (i = 0; i <= n; i++)
		bad += in[i] != word((peer << 20) + k + i, 7);
	return bad;
}

static uint64_t connects(struct tp_job *j)
{
	struct rcx_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &st));
	return st.connects;
}

/* The connection manager reports ev_type with status on c, as the
 * provider would (conn.c takes it from cm progress). */
static void cm_event(struct tp_job *j, struct rcx__conn *c, int ev_type,
		     int status)
{
	struct rcx_cm_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.type = (uint8_t)ev_type;
	ev.status = status;
	ev.ep = c->ep;
	ev.ep_ctx = &c->obj;
	rcx__lock(j->ctx);
	c->obj.on_cm(&c->obj, &ev);
	rcx__unlock(j->ctx);
}

/*
 * A stream across two breaks of a live peer's connection, up: the
 * connection manager reports ev_type on it, with st0 at rank 0 (which
 * accepted it), later with st1 at rank 1 (which made it). Each is a
 * break: the connection is made again, the stream across it arrives
 * whole, each message once and in order, and nobody is failed.
 */
static void cm_breaks(struct tp_job *j, int ev_type, int st0, int st1)
{
	struct rcx__conn *c;
	uint64_t before;
	int k, bad;

	bad = exchange(j, 0, LF_BATCH);
	c = j->g->conns[1 - j->rank];
	/* counted before either end sees a break */
	before = connects(j);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (k = 1; k < 5 && !bad; k++) {
		if ((k == 1 && j->rank == 0) || (k == 3 && j->rank == 1)) {
			TP_CHECK_EQ(c->state, RCX__CONN_UP);
			cm_event(j, c, ev_type, j->rank == 0 ? st0 : st1);
		}
		bad += exchange(j, k * (LF_BATCH + 1), LF_BATCH);
	}
	TP_CHECK_EQ(bad, 0);
	/* made again, here as at the peer, and up */
	TP_CHECK(connects(j) >= before + 2);
	TP_CHECK_EQ(c->state, RCX__CONN_UP);
	ts_none_failed(j);
}

/* An error of the connection manager (as when its handshake's messages
 * are lost on a link after the peer's first message made it up). */
static void sc_cm_error(struct tp_job *j)
{
	cm_breaks(j, RCX_CM_ERROR, -ECONNABORTED, -ECONNABORTED);
}

/*
 * A disconnect: at rank 0 the peer's own (-ECONNRESET: a live peer that
 * gave up an endpoint of a reconnection sends it so; it shows it lives
 * in time), at rank 1 one of ours unanswered (-ETIMEDOUT).
 */
static void sc_disc_live(struct tp_job *j)
{
	cm_breaks(j, RCX_CM_DISCONNECTED, -ECONNRESET, -ETIMEDOUT);
}

/*
 * c has nothing in flight, its unsignaled tail returned: the next send
 * posted on it is the first one of what comes next.
 */
static void quiet(struct tp_job *j, struct rcx__conn *c)
{
	long long end = tu_now_ms() + 30000;

	rcx__lock(j->ctx);
	rcx__conn_tx_mark(c);
	rcx__unlock(j->ctx);
	while ((c->tx_inflight || c->mark_busy) && tu_now_ms() < end)
		rcx_ctx_wait(j->ctx, 10);
	TP_CHECK(!c->tx_inflight && !c->mark_busy && !c->tx_unsig);
}

/*
 * Rank 1 leaves (frees the world, then its context goes), and the
 * device refuses the post of its BYE (the fault provider, once). The
 * exit sends it again: rank 0 learns that rank 1 left (the connection
 * closed, a send to it -ECONNRESET at once), not that it failed, as a
 * peer whose BYE never came would take it.
 */
static void sc_bye_refused(struct tp_job *j)
{
	struct rcx__conn *c;
	long long end;
	uint64_t v = 0;
	int n = -1;

	TP_CHECK_EQ(exchange(j, 0, LF_BATCH), 0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	c = j->g->conns[1 - j->rank];
	if (j->rank == 1) {
		quiet(j, c);
		rcx__fault_post_fail(c, 0, 0, -ENOMEM);
		TP_CHECK_OK(rcx_group_free(&j->g));
		return;
	}
	/* until rank 1 left: it said BYE, or it is failed */
	end = tu_now_ms() + 30000;
	while (c->state != RCX__CONN_CLOSED && c->state != RCX__CONN_FAILED &&
	       tu_now_ms() < end)
		rcx_ctx_wait(j->ctx, 10);
	TP_CHECK_EQ(c->state, RCX__CONN_CLOSED);
	TP_CHECK_EQ(rcx_send(j->g, &v, sizeof(v), 1, LF_TAG), -ECONNRESET);
	TP_CHECK_OK(rcx_group_get_failed(j->g, NULL, 0, &n));
	TP_CHECK_EQ(n, 0);
	TP_CHECK_OK(rcx_group_free(&j->g));
}

/*
 * Rank 1's device refuses a batch of receive buffers part-way (the fault
 * provider: 3 of its list go, the rest refused). What went is counted
 * posted (the break's drain waits for exactly their completions), the
 * rest is held for the next endpoint, and the refusal is a break, not a
 * failure: the connection is made again, the stream arrives whole, each
 * message once and in order, nobody is failed, and every ring buffer is
 * posted or held, once.
 */
static void sc_rx_refused(struct tp_job *j)
{
	struct rcx__conn *c = j->g->conns[1 - j->rank];
	uint64_t before;
	int k, bad;

	bad = exchange(j, 0, LF_BATCH);
	before = connects(j);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK(c->rx_batch > 3);
	if (j->rank == 1)
		rcx__fault_post_fail(c, 1, 3, -ENOMEM);
	for (k = 1; k < 5 && !bad; k++)
		bad += exchange(j, k * (LF_BATCH + 1), LF_BATCH);
	TP_CHECK_EQ(bad, 0);
	TP_CHECK(connects(j) > before);
	TP_CHECK_EQ(c->state, RCX__CONN_UP);
	TP_CHECK_EQ(c->rx_posted + c->nhold, (int)j->ctx->cfg.rx_depth);
	ts_none_failed(j);
}

/*
 * Rank 1 leaves; its BYE arrives, but the send's completion fails (the
 * fault provider: as when the ACK is lost and the retries run out). Its
 * exit remakes the connection to send the BYE again, and rank 0, which
 * has the BYE (the connection closed), refuses it. The refusal ends the
 * exit's wait at once: it waited for RCX_FT_TIMEOUT_MS (10 minutes
 * here, past the job's time limit). Rank 0 goes on answering until rank
 * 1's process is gone; nobody is failed.
 */
static void sc_bye_ack_lost(struct tp_job *j)
{
	struct rcx__conn *c;
	int64_t pid = getpid();
	long long end;
	bool gone = false;

	if (j->rank == 1)
		TP_CHECK_OK(rcx_send(j->g, &pid, sizeof(pid), 0, LF_TAG));
	else
		TP_CHECK_OK(rcx_recv(j->g, &pid, sizeof(pid), 1, LF_TAG, NULL));
	TP_CHECK_EQ(exchange(j, 0, LF_BATCH), 0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	c = j->g->conns[1 - j->rank];
	if (j->rank == 1) {
		TP_CHECK(c->lazy_connect); /* it remakes the connection */
		quiet(j, c);
		rcx__fault_fail_next(c, RCX_ERR_TRANSPORT);
		TP_CHECK_OK(rcx_group_free(&j->g));
		return;
	}
	end = tu_now_ms() + 60000;
	while (c->state == RCX__CONN_UP && tu_now_ms() < end)
		rcx_ctx_wait(j->ctx, 10);
	TP_CHECK_EQ(c->state, RCX__CONN_CLOSED);
	ts_none_failed(j);
	/* answering its reconnection (refused) until it is gone */
	end = tu_now_ms() + 120000;
	while (!(gone = exited((pid_t)pid)) && tu_now_ms() < end)
		rcx_ctx_wait(j->ctx, 10);
	TP_CHECK(gone);
	TP_CHECK_OK(rcx_group_free(&j->g));
}

static void sc_long_ft_timeout(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "600000", 1);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "persistent_after_free",
	  .run = sc_persistent_after_free,
	  .size = 2 },
	{ .name = "persistent_last_holder",
	  .run = sc_persistent_last_holder,
	  .size = 2 },
	{ .name = "window_after_free", .run = sc_window_after_free },
	{ .name = "left_lazy",
	  .run = sc_left_lazy,
	  .size = 3,
	  .setup = sc_lazy_conn },
	{ .name = "cm_error", .run = sc_cm_error, .size = 2 },
	TS_FAULT_SC("bye_refused", sc_bye_refused, NULL),
	TS_FAULT_SC("rx_refused", sc_rx_refused, NULL),
	{ .name = "disc_live", .run = sc_disc_live, .size = 2 },
	TS_FAULT_SC("bye_ack_lost", sc_bye_ack_lost, sc_long_ft_timeout),
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("life", scenarios, TP_COUNT(scenarios), argc, argv);
}

const struct tu_peer tu_peer_life = { "life", peer_main };

static void job(int nprocs, const char *scenario, int timeout_s)
{
	CU_ASSERT_EQUAL(tu_mp_run(nprocs, "life", scenario, timeout_s), 0);
}

static void test_persistent_after_free(void)
{
	job(2, "persistent_after_free", 180);
}

static void test_persistent_last_holder(void)
{
	job(2, "persistent_last_holder", 120);
}

static void test_window_after_free(void)
{
	job(3, "window_after_free", 180);
}

static void test_left_lazy(void)
{
	job(3, "left_lazy", 180);
}

static void test_cm_error(void)
{
	job(2, "cm_error", 180);
}

static void test_bye_refused(void)
{
	job(2, "bye_refused", 180);
}

static void test_rx_refused(void)
{
	job(2, "rx_refused", 180);
}

static void test_disc_live(void)
{
	job(2, "disc_live", 180);
}

static void test_bye_ack_lost(void)
{
	job(2, "bye_ack_lost", 180);
}

static const CU_TestInfo tests[] = {
	{ "persistent_after_group_free", test_persistent_after_free },
	{ "persistent_last_holder", test_persistent_last_holder },
	{ "window_after_group_free", test_window_after_free },
	{ "lazy_send_to_rank_that_left", test_left_lazy },
	{ "cm_error_on_live_peer_is_a_break", test_cm_error },
	{ "bye_post_refused_peer_still_told", test_bye_refused },
	{ "rx_batch_refused_part_way_is_a_break", test_rx_refused },
	{ "disconnect_on_live_peer_is_a_break", test_disc_live },
	{ "bye_ack_lost_close_ends_on_refusal", test_bye_ack_lost },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_life = {
	"life", TU_DEVICE, NULL, NULL, tests,
};
