/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "stop_win": a window's own NIC endpoint to a peer of its node
 * (auto with a device: the group reaches the peer through shared memory,
 * the window's RDMA and NIC atomics go through the NIC, lib/win/win_nep.c)
 * breaks on a live peer. The fault provider makes the transport give up
 * on it, as when the queue pair's retries run out (it fails the
 * completion of a WR that did its work and flushes the rest): the
 * endpoint is made again, the puts and gets in flight at the break go
 * again, those issued meanwhile wait for it and keep rcx_win_order's
 * decisions, an atomic in flight reports RCX_ERR_TRANSPORT and runs
 * once; nobody is declared failed and the window stays valid. A remake
 * that cannot be made is bounded: RCX_FT_TIMEOUT_MS from the break the
 * peer is declared failed, whether it takes no part or its group
 * connection was made again meanwhile.
 *
 * Two ranks of one node under `rcx-run --ft`; rank 1 breaks its endpoint
 * to rank 0 and issues, rank 0 sleeps meanwhile so that the endpoint
 * cannot be made again before rank 1 has issued everything.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "providers/fault/fault.h"
#include "lib/win/win_int.h"
#include "tu.h"
#include "tu_mp.h"
#include "test_stop.h"

#define QW	 (TS_NWORD / 4)
#define PIECE	 16 /* words an operation moves */
#define DONE_TAG 97

/* The window's NIC endpoint to target: there must be one. */
static struct rcx__win_lep *nep_to(struct rcx_win *w, int target)
{
	if (!TP_CHECK(w->nep != NULL) || !TP_CHECK(w->nep[target].ep != NULL))
		return NULL;
	return &w->nep[target];
}

/* Arm the break on l, with nothing else on it. */
static void arm_break(struct tp_job *j, struct rcx__win_lep *l)
{
	long long end = tu_now_ms() + 10000;

	while (l->wr && tu_now_ms() < end)
		rcx_progress(j->ctx);
	TP_CHECK_EQ(l->wr, 0);
	rcx__fault_fail_next(l, RCX_ERR_TRANSPORT);
}

/* Progress until l is being made again (the break's completion polled). */
static void until_remade(struct tp_job *j, struct rcx__win_lep *l)
{
	long long end = tu_now_ms() + 10000;

	while (l->state != RCX__CONN_RECONN && tu_now_ms() < end)
		rcx_progress(j->ctx);
	TP_CHECK_EQ(l->state, RCX__CONN_RECONN);
}

/* The endpoint was made again, here as at the peer; nobody failed. */
static void mended(struct tp_job *j, struct rcx_win *w,
		   const struct rcx_stats *st0)
{
	struct rcx_stats st1;
	struct rcx__win_lep *l = nep_to(w, 1 - j->rank);
	long long end = tu_now_ms() + 10000;

	/* the side that accepted takes the new endpoint on its next look */
	while (l && l->state != RCX__CONN_UP && tu_now_ms() < end)
		rcx_progress(j->ctx);
	memset(&st1, 0, sizeof(st1));
	st1.size = sizeof(st1);
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &st1));
	TP_CHECK(st1.connects > st0->connects);
	if (l)
		TP_CHECK_EQ(l->state, RCX__CONN_UP);
	ts_none_failed(j);
}

static bool fenced(void)
{
	const char *v = getenv("RCX_ORDER_FENCE");

	return v && !strcmp(v, "fence");
}

static struct rcx_win *start(struct tp_job *j, uint64_t **base,
			     struct rcx_stats *st0)
{
	struct rcx_win *w = ts_make(j, base);

	memset(st0, 0, sizeof(*st0));
	st0->size = sizeof(*st0);
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, st0));
	return w;
}

/*
 * lock_all epoch. Rank 0's window in quarters: [2] rank 1 puts round 41
 * there with the break; [3] rank 0 filled it (round 40): rank 1 gets it
 * with the break, and while the endpoint is made again gets each piece,
 * orders (RCX_ORDER_ALL) and puts round 42 over it, so its gets must
 * still see round 40 (the put fenced, or waiting, behind the get on the
 * new endpoint). Then the epoch goes on both ways (quarters [0] and
 * [1], ts_put_get_back).
 */
static void sc_nep_rma(struct tp_job *j)
{
	static uint64_t src[2][QW], got[2][QW];
	struct rcx__win_stats ws;
	struct rcx__win_lep *l;
	struct rcx_stats st0;
	struct rcx_win *w;
	uint64_t *base;
	size_t k, n = PIECE * 8;

	if (!(w = start(j, &base, &st0)))
		return;
	if (j->rank == 0)
		ts_fill(base + 3 * QW, 0, 40, QW);
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1 && (l = nep_to(w, 0))) {
		ts_fill(src[0], 1, 41, QW);
		ts_fill(src[1], 1, 42, QW);
		memset(got, 0, sizeof(got));
		arm_break(j, l);
		for (k = 0; k < QW; k += PIECE) {
			TP_CHECK_OK(rcx_put(w, src[0] + k, n, 0, 2 * QW + k));
			TP_CHECK_OK(rcx_get(w, got[0] + k, n, 0, 3 * QW + k));
		}
		until_remade(j, l);
		for (k = 0; k < QW; k += PIECE) {
			TP_CHECK_OK(rcx_get(w, got[1] + k, n, 0, 3 * QW + k));
			if (!k)
				TP_CHECK_EQ(l->state, RCX__CONN_RECONN);
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
			TP_CHECK_OK(rcx_put(w, src[1] + k, n, 0, 3 * QW + k));
		}
		TP_CHECK_OK(rcx_win_flush(w, 0));
		TP_CHECK_EQ(ts_wrong(got[0], 0, 40, QW), 0);
		TP_CHECK_EQ(ts_wrong(got[1], 0, 40, QW), 0);
		TP_CHECK_OK(rcx__win_stats(w, &ws));
		TP_CHECK(ws.replays > 0);
		/* the order was kept by a fence, or by a wait */
		TP_CHECK(fenced() ? ws.fences > 0 : ws.waits > 0);
		ts_tell(j, DONE_TAG);
	} else if (j->rank == 0) {
		ts_nap_then_hear(j, DONE_TAG);
		TP_CHECK_EQ(ts_wrong(base + 2 * QW, 1, 41, QW), 0);
		TP_CHECK_EQ(ts_wrong(base + 3 * QW, 1, 42, QW), 0);
	}
	mended(j, w, &st0);
	ts_put_get_back(j, w, 43);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * A NIC atomic in flight at the break may have run at the target: it
 * reports RCX_ERR_TRANSPORT and is not sent again; one issued while the
 * endpoint is made again runs once, after it: rank 0's counter ends at
 * 1 + 10, and the second fetch saw 1.
 */
static void sc_nep_atomic(struct tp_job *j)
{
	int64_t one = 1, ten = 10, old1 = -1, old2 = -1;
	struct rcx__win_lep *l;
	struct rcx_stats st0;
	struct rcx_win *w;
	uint64_t *base;

	if (!(w = start(j, &base, &st0)))
		return;
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1 && (l = nep_to(w, 0))) {
		arm_break(j, l);
		TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old1, RCX_INT64, 0, 0,
					     RCX_SUM));
		until_remade(j, l);
		TP_CHECK_OK(rcx_fetch_and_op(w, &ten, &old2, RCX_INT64, 0, 0,
					     RCX_SUM));
		TP_CHECK_EQ(l->state, RCX__CONN_RECONN);
		TP_CHECK_EQ(rcx_win_flush(w, 0), RCX_ERR_TRANSPORT);
		TP_CHECK_EQ(old2, 1);
		ts_tell(j, DONE_TAG);
	} else if (j->rank == 0) {
		ts_nap_then_hear(j, DONE_TAG);
	}
	mended(j, w, &st0);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0)
		TP_CHECK_EQ(base[0], 11);
	ts_none_failed(j);
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * Rank 1 (whose endpoint to rank 0 is being made again) after the
 * failure: its rput reported it, rank 0 is the one failed here, the
 * window is invalid and goes; the world goes without the final barrier.
 */
static void failed_peer_0(struct tp_job *j, struct rcx_win **w,
			  struct rcx__win_lep *l, struct rcx_req **r)
{
	int ranks[2] = { -1, -1 }, n = -1;

	TP_CHECK_EQ(rcx_wait(r, RCX_STATUS_IGNORE), RCX_ERR_PROC_FAILED);
	TP_CHECK_EQ(l->state, RCX__CONN_FAILED);
	TP_CHECK_EQ(rcx_win_flush(*w, 0), RCX_ERR_WIN_INVALID);
	TP_CHECK_OK(rcx_group_get_failed(j->g, ranks, 2, &n));
	TP_CHECK_EQ(n, 1);
	TP_CHECK_EQ(ranks[0], 0);
	TP_CHECK_OK(rcx_win_free(w));
	TP_CHECK_OK(rcx_group_free(&j->g));
}

/* Rank 0, declared failed by rank 1: killed by the launcher (rcx-run). */
static void until_killed(struct tp_job *j, bool progress)
{
	long long end = tu_now_ms() + 60000;

	while (tu_now_ms() < end) {
		if (progress)
			rcx_progress(j->ctx);
		usleep(progress ? 1000 : 100000);
	}
	TP_CHECK(!"killed as declared failed");
	exit(tp_exit());
}

/*
 * A peer that takes no part in the remake (rank 0 computes, making no
 * call, from the break on) is declared failed RCX_FT_TIMEOUT_MS after
 * the break: rank 1's request-based put across the break reports
 * RCX_ERR_PROC_FAILED, the window is invalid, and the launcher kills
 * rank 0 (rcx-run --ft, where a SIGKILL is a failure it survives).
 */
static void sc_nep_stalled(struct tp_job *j)
{
	static uint64_t src[PIECE];
	struct rcx_req *r = NULL;
	struct rcx__win_lep *l;
	struct rcx_win *w;
	uint64_t *base;

	if (!(w = ts_make(j, &base)))
		return;
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0)
		until_killed(j, false);
	if (!(l = nep_to(w, 0)))
		return;
	arm_break(j, l);
	TP_CHECK_OK(rcx_rput(w, src, sizeof(src), 0, 0, &r));
	failed_peer_0(j, &w, l, &r);
}

/*
 * The group's connection to the peer breaks while the NIC endpoint is
 * being made again, and is made again at once (both ranks progress),
 * which ends the peer's suspicion; the NIC endpoint cannot be (its path
 * to the peer refuses every attempt: rank 1 names an address that is
 * none). The remake has
 * its own deadline from the break: the peer is declared failed
 * RCX_FT_TIMEOUT_MS after it, and a wait for the put across the break
 * (asleep, nothing else to wake it) ends with RCX_ERR_PROC_FAILED. It
 * used to wait forever.
 */
static void sc_nep_group_back(struct tp_job *j)
{
	static uint64_t src[PIECE];
	struct rcx_req *r = NULL;
	struct rcx__win_lep *l;
	struct rcx__conn *c;
	struct rcx_win *w;
	uint64_t *base, v = 1;
	long long end;

	if (!(w = ts_make(j, &base)))
		return;
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		/* the message sent across the group's break, once */
		TP_CHECK_OK(rcx_recv(j->g, &v, sizeof(v), 1, DONE_TAG, NULL));
		TP_CHECK_EQ(v, 1);
		until_killed(j, true);
	}
	if (!(l = nep_to(w, 0)))
		return;
	c = j->g->conns[0];
	free(l->addr);
	l->addr = strdup("auto:unreachable");
	arm_break(j, l);
	TP_CHECK_OK(rcx_rput(w, src, sizeof(src), 0, 0, &r));
	until_remade(j, l);
	/* then the group's connection (the fault provider breaks one at a
	 * time) */
	end = tu_now_ms() + 10000;
	while (c->tx_inflight && tu_now_ms() < end)
		rcx_progress(j->ctx);
	rcx__fault_fail_next(c, RCX_ERR_TRANSPORT);
	TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 0, DONE_TAG));
	while (c->state != RCX__CONN_RECONN && tu_now_ms() < end)
		rcx_progress(j->ctx);
	TP_CHECK_EQ(c->state, RCX__CONN_RECONN);
	/* the group's connection is back and the peer no longer suspect,
	 * the NIC endpoint still being made again */
	while ((c->state != RCX__CONN_UP || c->suspect_us) && tu_now_ms() < end)
		rcx_progress(j->ctx);
	TP_CHECK_EQ(c->state, RCX__CONN_UP);
	TP_CHECK_EQ(c->suspect_us, 0);
	TP_CHECK_EQ(l->state, RCX__CONN_RECONN);
	/* asleep, with nothing else to wake it: a receive rank 0 never
	 * answers ends with its failure */
	TP_CHECK_EQ(rcx_recv(j->g, &v, sizeof(v), 0, DONE_TAG, NULL),
		    RCX_ERR_PROC_FAILED);
	failed_peer_0(j, &w, l, &r);
}

static void remake_env(void)
{
	/* room for the remake under emulation, a bound all the same */
	setenv("RCX_FT_TIMEOUT_MS", "30000", 1);
}

/* rcx_win_order fences instead of waiting (rxe's default is to wait) */
static void remake_fence_env(void)
{
	remake_env();
	setenv("RCX_ORDER_FENCE", "fence", 1);
}

/* a short bound: the peer that takes no part is failed soon */
static void stalled_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "1000", 1);
}

/*
 * Room for the group's reconnection under emulation before the bound;
 * an eager world, whose sleeps no lazy connection's probe cuts short.
 */
static void group_back_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "6000", 1);
	setenv("RCX_CONNECT", "eager", 1);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "nep_rma",
	  .run = sc_nep_rma,
	  .provider = "fault",
	  .size = 2,
	  .setup = remake_env },
	{ .name = "nep_rma_fence",
	  .run = sc_nep_rma,
	  .provider = "fault",
	  .size = 2,
	  .setup = remake_fence_env },
	{ .name = "nep_atomic",
	  .run = sc_nep_atomic,
	  .provider = "fault",
	  .size = 2,
	  .setup = remake_env },
	{ .name = "nep_stalled",
	  .run = sc_nep_stalled,
	  .provider = "fault",
	  .size = 2,
	  .setup = stalled_env },
	{ .name = "nep_group_back",
	  .run = sc_nep_group_back,
	  .provider = "fault",
	  .size = 2,
	  .setup = group_back_env },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("stop_win", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_stop_win = { "stop_win", peer_main };

/* Under rcx-run --ft (the launcher's failure notices on). */
static void job(const char *scenario)
{
	setenv("RCX_RUN_FT", "1", 1);
	CU_ASSERT_EQUAL(tu_mp_run(2, "stop_win", scenario, 120), 0);
	unsetenv("RCX_RUN_FT");
}

static void test_nep_rma(void)
{
	job("nep_rma");
}

static void test_nep_rma_fence(void)
{
	job("nep_rma_fence");
}

static void test_nep_atomic(void)
{
	job("nep_atomic");
}

static void test_nep_stalled(void)
{
	job("nep_stalled");
}

static void test_nep_group_back(void)
{
	job("nep_group_back");
}

static const CU_TestInfo tests[] = {
	{ "nic_endpoint_broken_in_lock_all_remade_rma_replayed", test_nep_rma },
	{ "nic_endpoint_broken_order_fenced_again_on_new_endpoint",
	  test_nep_rma_fence },
	{ "nic_endpoint_broken_atomic_in_flight_reports_transport_once",
	  test_nep_atomic },
	{ "nic_endpoint_remake_peer_stalled_declared_failed_in_bound",
	  test_nep_stalled },
	{ "nic_endpoint_remake_bounded_after_group_connection_came_back",
	  test_nep_group_back },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_stop_win = {
	"stop_win", TU_DEVICE, NULL, NULL, tests,
};
