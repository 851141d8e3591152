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
 * once; nobody is declared failed and the window stays valid.
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

static const CU_TestInfo tests[] = {
	{ "nic_endpoint_broken_in_lock_all_remade_rma_replayed", test_nep_rma },
	{ "nic_endpoint_broken_order_fenced_again_on_new_endpoint",
	  test_nep_rma_fence },
	{ "nic_endpoint_broken_atomic_in_flight_reports_transport_once",
	  test_nep_atomic },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_stop_win = {
	"stop_win", TU_DEVICE, NULL, NULL, tests,
};
