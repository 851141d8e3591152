/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "loss": a lossy link is no process failure. Two ranks under
 * `rcx-run --ft`, each on its own Soft-RoCE device of a veth pair
 * (perftest/link) whose ends lose, duplicate, reorder and delay packets
 * (netem); tests/run-loss makes the link and runs this suite across it
 * (RCX_TEST_LINK names each rank's device and CPU). Point-to-point
 * messages (eager and rendezvous), bound channels (both protocols) and
 * window epochs (lock_all with flushes, fence) run with every byte
 * checked; every operation must complete and neither rank may be
 * declared failed. Where the transport gives up on the connection (its
 * retries run out), the connection is made again: that is what the
 * suite exercises, and each rank prints how many connections it made.
 * With short retries the transport gives up again and again, and the
 * connections must have been made again; bound channels' queue pairs
 * too (remade, chan_remake.c), each message once.
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "tu.h"
#include "tu_mp.h"
#include "test_stop.h"

#define DATA_TAG  95
#define CHAN_TAG  96
#define EAGER_LEN 512
#define RNDV_LEN  (16 * 1024) /* past RCX_EAGER_SIZE */

/* the scenario runs with short retries: connections must be remade */
static bool short_retries;

/* rounds of each scenario; RCX_TEST_LOSS_ROUNDS sets them (--full) */
static int rounds(int deflt)
{
	const char *v = getenv("RCX_TEST_LOSS_ROUNDS");

	return v && atoi(v) > 0 ? atoi(v) : deflt;
}

/*
 * Before the context: this rank's device and CPU from RCX_TEST_LINK
 * ("DEV_A:CPU_A,DEV_B:CPU_B"; rank 0 on side a, rank 1 on side b).
 */
static void link_side(void)
{
	const char *link = getenv("RCX_TEST_LINK"), *r = getenv("RCX_RANK");
	char dev[2][32];
	int cpu[2], side = r ? atoi(r) : -1;
	cpu_set_t set;

	if (!link || side < 0 || side > 1 ||
	    sscanf(link, "%31[^:]:%d,%31[^:]:%d", dev[0], &cpu[0], dev[1],
		   &cpu[1]) != 4) {
		TP_FAIL("RCX_TEST_LINK=%s RCX_RANK=%s: no side of the link",
			link ? link : "(unset)", r ? r : "(unset)");
		return;
	}
	setenv("RCX_DEVICE", dev[side], 1);
	CPU_ZERO(&set);
	CPU_SET(cpu[side], &set);
	TP_CHECK_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
}

/*
 * The same with retries that run out within milliseconds (a timeout
 * of 4.096 us x 2^12 = 17 ms, one retry): a packet lost twice, or held
 * up by the jitter and the emulation, is enough. The transport gives
 * up on live peers again and again; the connections are made again.
 */
static void link_side_short(void)
{
	link_side();
	setenv("RCX_QP_TIMEOUT", "12", 1);
	setenv("RCX_QP_RETRY", "1", 1);
	/*
	 * Under a loaded emulation a remade connection may break again at
	 * once, several times in a row: the peer stays a suspect longer than
	 * the default 10 s before it is declared failed. What is checked is
	 * that the connections are made again, not how fast.
	 */
	setenv("RCX_FT_TIMEOUT_MS", "30000", 1);
	short_retries = true;
}

/*
 * The connections this rank made (the first and any made again); with
 * short retries, it must have made the connection again.
 */
static void connects(struct tp_job *j, const char *what)
{
	struct rcx_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (!TP_CHECK_OK(rcx_ctx_stats(j->ctx, &st)))
		return;
	printf("rank %d: %s%s: %llu connection(s) made\n", j->rank, what,
	       short_retries ? " (short retries)" : "",
	       (unsigned long long)st.connects);
	if (short_retries)
		TP_CHECK(st.connects > 1);
}

/*
 * Another round? The first n always; past them, with short retries,
 * more while neither rank has made a connection again (the link's loss
 * is random: a short scenario may go through without a break), up to
 * cap. Decided together (an allreduce): both ranks run the same rounds.
 */
static bool more_rounds(struct tp_job *j, int k, int n, int cap)
{
	struct rcx_stats st;
	uint64_t mine, least = 0;

	if (k < n)
		return true;
	if (!short_retries || k >= cap)
		return false;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (!TP_CHECK_OK(rcx_ctx_stats(j->ctx, &st)))
		return false;
	mine = st.connects;
	if (!TP_CHECK_OK(rcx_group_allreduce(j->g, &mine, &least, 1, RCX_UINT64,
					     RCX_MIN)))
		return false;
	return least <= 1;
}

/* Point-to-point both ways, eager and rendezvous, each round checked. */
static void sc_p2p(struct tp_job *j)
{
	size_t ne = EAGER_LEN / 8, nr = RNDV_LEN / 8;
	uint64_t *se = malloc(EAGER_LEN), *re = malloc(EAGER_LEN);
	uint64_t *sr = malloc(RNDV_LEN), *rr = malloc(RNDV_LEN);
	struct rcx_req *r[4] = { NULL };
	int peer = 1 - j->rank, k, bad = 0;
	/* each break costs a reconnection: fewer rounds with short retries */
	int n = rounds(short_retries ? 4 : 8);

	if (!TP_CHECK(se && re && sr && rr))
		goto out;
	for (k = 0; k < n; k++) {
		ts_fill(se, j->rank, 2 * k, ne);
		ts_fill(sr, j->rank, 2 * k + 1, nr);
		memset(re, 0, EAGER_LEN);
		memset(rr, 0, RNDV_LEN);
		TP_CHECK_OK(
			rcx_irecv(j->g, re, EAGER_LEN, peer, DATA_TAG, &r[0]));
		TP_CHECK_OK(rcx_irecv(j->g, rr, RNDV_LEN, peer, DATA_TAG + 1,
				      &r[1]));
		TP_CHECK_OK(
			rcx_isend(j->g, se, EAGER_LEN, peer, DATA_TAG, &r[2]));
		TP_CHECK_OK(rcx_isend(j->g, sr, RNDV_LEN, peer, DATA_TAG + 1,
				      &r[3]));
		TP_CHECK_OK(rcx_waitall(4, r, RCX_STATUSES_IGNORE));
		bad += ts_wrong(re, peer, 2 * k, ne) != 0;
		bad += ts_wrong(rr, peer, 2 * k + 1, nr) != 0;
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	ts_none_failed(j);
	connects(j, "p2p");
out:
	free(se);
	free(re);
	free(sr);
	free(rr);
}

/* A bound channel of this rank's: to (send) or from (receive) the peer. */
static struct rcx_req *chan(struct tp_job *j, bool send, const char *proto,
			    uint64_t *buf, struct rcx_req **init)
{
	struct rcx_info *info = NULL;
	struct rcx_req *ch = NULL;
	int peer = 1 - j->rank, tag = CHAN_TAG + (send ? j->rank : peer);

	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_PROTOCOL, proto));
	TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_SLOTS, "4"));
	if (send)
		TP_CHECK_OK(rcx_send_init(j->g, buf, 8, peer, tag, init));
	else
		TP_CHECK_OK(rcx_recv_init(j->g, buf, 8, peer, tag, init));
	TP_CHECK_OK(rcx_bind(*init, info, &ch));
	rcx_info_free(&info);
	return ch;
}

/*
 * Two channels' streams at once: 0 -> 1 on write_imm, 1 -> 0 on the
 * send protocol (four slots each); every message arrives, in its slot.
 * With short retries the stream goes on past its rounds until a
 * connection was made again (a short stream may see no break).
 */
static void sc_chan(struct tp_job *j)
{
	uint64_t sbuf[4] = { 0 }, rbuf[4] = { 0 };
	struct rcx_req *si = NULL, *ri = NULL, *ch[2];
	struct rcx_status st[2];
	int k, n = rounds(10) * 8, bad = 0;

	/* binds in the peer's order: each blocks until the peer answers */
	if (j->rank == 0)
		ch[0] = chan(j, true, "write_imm", sbuf, &si);
	ch[1] = chan(j, false, j->rank ? "write_imm" : "send", rbuf, &ri);
	if (j->rank == 1)
		ch[0] = chan(j, true, "send", sbuf, &si);
	if (!TP_CHECK(ch[0] && ch[1]))
		goto out;
	/* with short retries, on (8 more at a time) until one was remade */
	for (k = 0; k % 8 || more_rounds(j, k, n, 50 * n); k++) {
		sbuf[k % 4] = ts_word(j->rank, k, 0);
		if (!TP_CHECK_OK(rcx_startall(2, ch)) ||
		    !TP_CHECK_OK(rcx_waitall(2, ch, st)))
			break;
		bad += st[1].slot != k % 4 || st[1].count != 8 ||
		       rbuf[k % 4] != ts_word(1 - j->rank, k, 0);
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	ts_none_failed(j);
	connects(j, "chan");
	TP_CHECK_OK(rcx_bind_free(ch, 2));
out:
	rcx_req_free(&si);
	rcx_req_free(&ri);
}

/*
 * A lock_all epoch with flushes (a put, read back, per round), then
 * fence epochs in which both put a block to the other.
 */
static void sc_win(struct tp_job *j)
{
	uint64_t *base, src[TS_NWORD / 4];
	int peer = 1 - j->rank, k, n = rounds(10), bad = 0, last;
	size_t q = TS_NWORD / 4;
	struct rcx_win *w;

	if (!(w = ts_make(j, &base)))
		return;
	TP_CHECK_OK(rcx_win_lock_all(w));
	for (k = 0; more_rounds(j, k, n, 50 * n); k++)
		ts_put_get_back(j, w, k);
	last = k - 1;
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (k = 0; k < n; k++) {
		ts_fill(src, j->rank, 1000 + k, q);
		TP_CHECK_OK(rcx_put(w, src, sizeof(src), peer, 2 * q));
		TP_CHECK_OK(rcx_win_fence(w, 0));
		bad += ts_wrong(base + 2 * q, peer, 1000 + k, q) != 0;
		/* nobody writes there before the next fence has passed */
		TP_CHECK_OK(rcx_win_fence(w, 0));
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_EQ(ts_wrong(base + (size_t)peer * q, peer, last, q), 0);
	ts_none_failed(j);
	connects(j, "win");
	TP_CHECK_OK(rcx_win_free(&w));
}

#define LINK_SC(n, f, s)                                    \
	{                                                   \
		.name = n, .run = f, .size = 2, .setup = s, \
	}

static const struct tp_scenario scenarios[] = {
	LINK_SC("p2p", sc_p2p, link_side),
	LINK_SC("chan", sc_chan, link_side),
	LINK_SC("win", sc_win, link_side),
	LINK_SC("p2p_short", sc_p2p, link_side_short),
	LINK_SC("win_short", sc_win, link_side_short),
	LINK_SC("chan_short", sc_chan, link_side_short),
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("loss", scenarios, TP_COUNT(scenarios), argc, argv);
}

const struct tu_peer tu_peer_loss = { "loss", peer_main };

/* Under rcx-run --ft, across the link tests/run-loss made. */
static void job(const char *scenario)
{
	if (!getenv("RCX_TEST_LINK")) {
		CU_FAIL("RCX_TEST_LINK unset: run the suite with "
			"tests/run-loss");
		return;
	}
	setenv("RCX_RUN_FT", "1", 1);
	CU_ASSERT_EQUAL(tu_mp_run(2, "loss", scenario, 240), 0);
	unsetenv("RCX_RUN_FT");
}

static void test_p2p(void)
{
	job("p2p");
}

static void test_chan(void)
{
	job("chan");
}

static void test_win(void)
{
	job("win");
}

static void test_p2p_short(void)
{
	job("p2p_short");
}

static void test_win_short(void)
{
	job("win_short");
}

static void test_chan_short(void)
{
	job("chan_short");
}

static const CU_TestInfo tests[] = {
	{ "lossy_link_p2p_eager_and_rendezvous", test_p2p },
	{ "lossy_link_channel_streams", test_chan },
	{ "lossy_link_lock_all_and_fence_epochs", test_win },
	{ "lossy_link_short_retries_p2p_reconnected", test_p2p_short },
	{ "lossy_link_short_retries_epochs_reconnected", test_win_short },
	{ "lossy_link_short_retries_channel_streams_remade", test_chan_short },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_loss = {
	"loss", TU_DEVICE, NULL, NULL, tests,
};
