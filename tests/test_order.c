/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rcx_win_order. With the recording provider ("fault" over verbs): the
 * mapping of every (earlier operation, order kind, later operation,
 * overlap) to what the later operation's work request carries, WR by WR
 * (fence or not) and whether it had to wait instead; same-location
 * accumulate order; thread and process scope; the window's own memory.
 * On rxe end to end: put(data) -> order(WRITE) -> put(flag), where the
 * target must never see the flag before the data, and get(x) ->
 * order(ALL) -> put(x), where the get must return the value from before
 * the put.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "lib/win/win_int.h"
#include "providers/fault/fault.h"
#include "tu.h"
#include "tu_mp.h"
#include "tu_scale.h"

/*
 * Rounds of the end-to-end tests. The issue asks for 100,000 of each.
 * Measured on this project's TCG-emulated rxe (2 vCPUs, a busy host):
 * get -> order -> put takes 0.08-0.25 ms a round, so 100,000 rounds run
 * in 8-26 s; put(4 KiB) -> order -> put(flag) takes 0.33-0.83 ms a round
 * (the 4 KiB write is four packets), so 60,000 rounds keep it under
 * about a minute. RCX_ORDER_ROUNDS=N sets both (N=100000 for the full
 * count of the issue). The default run on a device runs a tenth of each
 * (rounds() below); TEST_FULL_SIZE=1 runs them all.
 */
#define ORDER_WRITE_ROUNDS 60000
#define ORDER_WAR_ROUNDS   100000

/* ---- the mapping table, WR by WR */

enum { E_PUT, E_GET, E_FOP, E_ACC, E_N };
enum { L_PUT, L_GET, L_FOP, L_CAS, L_ACC, L_N };
enum { K_NONE, K_READ, K_WRITE, K_DATA, K_ALL, K_N };

static const char *const e_names[] = { "put", "get", "fetch_and_op(nic)",
				       "accumulate(sw)" };
static const char *const l_names[] = { "put", "get", "fetch_and_op(nic)",
				       "compare_and_swap(nic)",
				       "accumulate(sw)" };
static const char *const k_names[] = { "none", "READ", "WRITE", "DATA", "ALL" };
static const int k_kind[] = { 0, RCX_ORDER_READ, RCX_ORDER_WRITE,
			      RCX_ORDER_DATA, RCX_ORDER_ALL };

/*
 * What the later operation needs, written out from the IBA rules (lib/
 * order.c) rather than computed by them. Per (earlier, kind): for each
 * later operation (put, get, fetch_and_op, compare_and_swap, software
 * accumulate) two characters, overlapping and disjoint ranges:
 * 'F' its WR carries the fence, '.' nothing, 'W' it waits for the
 * earlier one to complete (the earlier runs in software at the target,
 * or the later is a software accumulate, which the core posts).
 *   put:  an RDMA WRITE before anything is ordered by RC.
 *   get:  an RDMA READ before a later read is ordered; before a write it
 *         needs the fence.
 *   fetch_and_op: an ATOMIC before anything needs the fence; two
 *         accumulates to one location are ordered without an order call.
 *   accumulate(sw): before anything but another software accumulate the
 *         later one waits for its reply.
 *                   put get fop cas acc */
static const char *const expect[E_N][K_N] = {
	[E_PUT] = {
		[K_NONE] = ".. .. .. .. ..",
		[K_READ] = ".. .. .. .. ..",
		[K_WRITE] = ".. .. .. .. ..",
		[K_DATA] = ".. .. .. .. ..",
		[K_ALL] = ".. .. .. .. ..",
	},
	[E_GET] = {
		[K_NONE] = ".. .. .. .. ..",
		[K_READ] = ".. .. FF FF ..",
		[K_WRITE] = "FF .. FF FF WW",
		[K_DATA] = "F. .. F. F. W.",
		[K_ALL] = "FF .. FF FF WW",
	},
	[E_FOP] = {
		[K_NONE] = ".. .. F. F. W.",
		[K_READ] = ".. FF FF FF W.",
		[K_WRITE] = "FF .. FF FF WW",
		[K_DATA] = "F. F. F. F. W.",
		[K_ALL] = "FF FF FF FF WW",
	},
	[E_ACC] = {
		[K_NONE] = ".. .. W. W. ..",
		[K_READ] = ".. WW WW WW ..",
		[K_WRITE] = "WW .. WW WW ..",
		[K_DATA] = "W. W. W. W. ..",
		[K_ALL] = "WW WW WW WW ..",
	},
};

/*
 * A target reached through two paths (auto with a device, a peer on this
 * node: RDMA and NIC atomics through the window's own NIC endpoint,
 * software accumulates through shared memory) keeps every decision above
 * except where a put (a WRITE, on the NIC path) comes before a software
 * accumulate, which takes the other path: it must then wait.
 *                           put get fop cas acc */
static const char *const expect_split_put_acc[K_N] = {
	[K_NONE] = "..", [K_READ] = "..", [K_WRITE] = "WW",
	[K_DATA] = "W.", [K_ALL] = "WW",
};

/* Does the window reach t through two paths? */
static bool two_paths(const struct rcx_win *w, int t)
{
	return w->nep && w->nep[t].ep;
}

/* The endpoint the window's RDMA and NIC atomics to t go out on. */
static const struct rcx_ep *rma_ep(struct rcx_win *w, int t)
{
	struct rcx_ep *ep = NULL;
	uint32_t *sq;

	TP_CHECK_OK(rcx__win_ep(w, t, &ep, &sq));
	return ep;
}

#define OFF_SAME 0  /* where the earlier op works */
#define OFF_DISJ 32 /* disjoint from it */

static int issue_e(struct rcx_win *w, int e, int t, uint64_t *res)
{
	static int64_t one = 1;
	static int32_t one32 = 1;
	static uint64_t buf;

	switch (e) {
	case E_PUT:
		return rcx_put(w, &buf, 8, t, OFF_SAME);
	case E_GET:
		return rcx_get(w, &buf, 8, t, OFF_SAME);
	case E_FOP:
		return rcx_fetch_and_op(w, &one, res, RCX_INT64, t, OFF_SAME,
					RCX_SUM);
	default:
		return rcx_accumulate(w, &one32, 1, RCX_INT32, t, OFF_SAME,
				      RCX_SUM);
	}
}

static int issue_l(struct rcx_win *w, int l, int t, size_t off, uint64_t *res)
{
	static int64_t one = 1, zero;
	static int32_t one32 = 1;
	static uint64_t buf;

	switch (l) {
	case L_PUT:
		return rcx_put(w, &buf, 8, t, off);
	case L_GET:
		return rcx_get(w, &buf, 8, t, off);
	case L_FOP:
		return rcx_fetch_and_op(w, &one, res, RCX_INT64, t, off,
					RCX_SUM);
	case L_CAS:
		return rcx_compare_and_swap(w, &one, &zero, res, RCX_INT64, t,
					    off);
	default:
		return rcx_accumulate(w, &one32, 1, RCX_INT32, t, off, RCX_SUM);
	}
}

/* The WR that carried operation l: first of its kind after mark on ep. */
static bool find_wr(size_t mark, const struct rcx_ep *ep, int l,
		    struct rcx_fault_wr *out)
{
	static const uint8_t ops[] = { RCX_OP_WRITE, RCX_OP_READ, RCX_OP_FADD,
				       RCX_OP_CSWAP, RCX_OP_SEND };
	size_t i, n = rcx__fault_log_count();

	for (i = mark; i < n; i++) {
		if (rcx__fault_log_get(i, out) || out->ep != ep ||
		    out->op != ops[l])
			continue;
		/* a bare header is a credit message, not the accumulate */
		if (l == L_ACC && out->length <= sizeof(struct rcx__hdr))
			continue;
		return true;
	}
	return false;
}

/*
 * The context's counters tell what the table tells, without a recording
 * provider: c0 before the order call, c1 after it, c2 after the later
 * operation, whose decision was got ('F', 'W' or '.').
 */
static void stats_case(const struct rcx_stats *c0, const struct rcx_stats *c1,
		       const struct rcx_stats *c2, bool ordered, char got)
{
	TP_CHECK_EQ(c1->order_calls - c0->order_calls, ordered);
	/* the order call itself decides and posts nothing */
	TP_CHECK_EQ(c1->wrs_posted, c0->wrs_posted);
	TP_CHECK_EQ(c1->order_fenced + c1->order_waited + c1->order_nothing,
		    c0->order_fenced + c0->order_waited + c0->order_nothing);
	TP_CHECK_EQ(c2->order_fenced - c1->order_fenced, got == 'F');
	TP_CHECK_EQ(c2->wrs_fenced - c1->wrs_fenced, got == 'F');
	if (got == 'W')
		TP_CHECK(c2->order_waited > c1->order_waited);
	else
		TP_CHECK_EQ(c2->order_waited, c1->order_waited);
	TP_CHECK(c2->wrs_posted > c1->wrs_posted);
}

static void one_case(struct tp_job *j, struct rcx_win *w, int e, int k, int l,
		     bool disjoint)
{
	/* software accumulates go out on the group's endpoint */
	const struct rcx_ep *ep =
		l == L_ACC ? j->g->conns[1]->ep : rma_ep(w, 1);
	struct rcx__win_stats s0, s1;
	struct rcx_stats c0 = { .size = sizeof(c0) }, c1 = c0, c2 = c0;
	struct rcx_fault_wr wr;
	char want = expect[e][k][l * 3 + disjoint], got;
	uint64_t r1 = 0, r2 = 0;
	size_t mark;

	if (two_paths(w, 1) && e == E_PUT && l == L_ACC)
		want = expect_split_put_acc[k][disjoint];
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	TP_CHECK_OK(issue_e(w, e, 1, &r1));
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &c0));
	if (k != K_NONE) {
		mark = rcx__fault_log_count();
		TP_CHECK_OK(rcx_win_order(w, k_kind[k]));
		/* the order call itself posts nothing */
		TP_CHECK_EQ(rcx__fault_log_count(), mark);
	}
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &c1));
	mark = rcx__fault_log_count();
	TP_CHECK_OK(issue_l(w, l, 1, disjoint ? OFF_DISJ : OFF_SAME, &r2));
	TP_CHECK_OK(rcx__win_stats(w, &s1));
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &c2));
	if (!find_wr(mark, ep, l, &wr)) {
		TP_FAIL("%s, order %s, %s: no WR recorded", e_names[e],
			k_names[k], l_names[l]);
		return;
	}
	if (s1.waits > s0.waits)
		got = 'W';
	else if (wr.flags & RCX_WR_FENCE)
		got = 'F';
	else
		got = '.';
	/* a wait never comes with a fence, and a fence is counted */
	if (got == 'W' && (wr.flags & RCX_WR_FENCE))
		got = '!';
	if (got == 'F' && s1.fences != s0.fences + 1)
		got = '?';
	if (got != want)
		TP_FAIL("%s, order %s, %s (%s): got '%c', want '%c'",
			e_names[e], k_names[k], l_names[l],
			disjoint ? "disjoint" : "overlapping", got, want);
	stats_case(&c0, &c1, &c2, k != K_NONE, got);
	/* complete both: the next case starts from nothing outstanding */
	TP_CHECK_OK(rcx_win_flush_all(w));
}

static void sc_table(struct tp_job *j)
{
	struct rcx_win *w;
	uint64_t *base;
	int e, k, l, d, cases = 0;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 1, NULL, (void **)&base, &w));
	if (j->rank == 0) {
		printf("rank 0: rank 1 reached through %s\n",
		       two_paths(w, 1) ? "two paths" : "one path");
		TP_CHECK_OK(rcx_win_lock_all(w));
		for (e = 0; e < E_N; e++)
			for (k = 0; k < K_N; k++)
				for (l = 0; l < L_N; l++)
					for (d = 0; d < 2; d++, cases++)
						one_case(j, w, e, k, l, d);
		TP_CHECK_OK(rcx_win_unlock_all(w));
		printf("rank 0: %d cases (earlier op x order kind x later op "
		       "x overlap) checked WR by WR\n",
		       cases);
	}
	/* rank 1 answers the software accumulates while it waits here */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * A fence covers what precedes it: after one fenced WR, later WRs need
 * none for the same earlier READ. An order with nothing outstanding
 * marks nothing.
 */
static void sc_cover(struct tp_job *j)
{
	const struct rcx_ep *ep;
	struct rcx_fault_wr wr;
	struct rcx_win *w;
	uint64_t *base, buf = 0;
	size_t mark;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 1, NULL, (void **)&base, &w));
	if (j->rank == 0) {
		ep = rma_ep(w, 1);
		TP_CHECK_OK(rcx_win_lock_all(w));
		/* get, order(WRITE), put (fenced), put (not again) */
		TP_CHECK_OK(rcx_get(w, &buf, 8, 1, 0));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
		mark = rcx__fault_log_count();
		TP_CHECK_OK(rcx_put(w, &buf, 8, 1, 8));
		TP_CHECK(find_wr(mark, ep, L_PUT, &wr) &&
			 (wr.flags & RCX_WR_FENCE));
		mark = rcx__fault_log_count();
		TP_CHECK_OK(rcx_put(w, &buf, 8, 1, 16));
		TP_CHECK(find_wr(mark, ep, L_PUT, &wr) &&
			 !(wr.flags & RCX_WR_FENCE));
		TP_CHECK_OK(rcx_win_flush_all(w));
		/* order after everything completed: nothing to mark */
		TP_CHECK_OK(rcx_get(w, &buf, 8, 1, 0));
		TP_CHECK_OK(rcx_win_flush(w, 1));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
		mark = rcx__fault_log_count();
		TP_CHECK_OK(rcx_put(w, &buf, 8, 1, 8));
		TP_CHECK(find_wr(mark, ep, L_PUT, &wr) &&
			 !(wr.flags & RCX_WR_FENCE));
		/* the mark is per target: an outstanding get to rank 1 does
		 * not fence a put to this process (done in place) */
		TP_CHECK_OK(rcx_get(w, &buf, 8, 1, 0));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
		TP_CHECK_OK(rcx_put(w, &buf, 8, 0, 0));
		TP_CHECK_OK(rcx_win_unlock_all(w));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- scope: the calling thread's operations, or the process's */

struct scope_arg {
	struct rcx_win *w;
	pthread_barrier_t *bar;
	int step_ok;
};

static void *scope_other(void *p)
{
	struct scope_arg *a = p;

	pthread_barrier_wait(a->bar); /* the main thread's get is out */
	a->step_ok = rcx_win_order(a->w, RCX_ORDER_WRITE) == 0;
	pthread_barrier_wait(a->bar);
	return NULL;
}

static void scope_case(struct tp_job *j, bool process)
{
	struct rcx_info *info = NULL;
	struct scope_arg a = { 0 };
	pthread_barrier_t bar;
	struct rcx_fault_wr wr;
	struct rcx_win *w;
	pthread_t th;
	uint64_t *base, buf = 0;
	size_t mark;

	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_ORDER_SCOPE,
				 process ? "process" : "thread"));
	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 1, info, (void **)&base, &w));
	rcx_info_free(&info);
	if (j->rank == 0) {
		pthread_barrier_init(&bar, NULL, 2);
		a.w = w;
		a.bar = &bar;
		TP_CHECK_OK(rcx_win_lock_all(w));
		pthread_create(&th, NULL, scope_other, &a);
		TP_CHECK_OK(rcx_get(w, &buf, 8, 1, 0));
		pthread_barrier_wait(&bar);
		pthread_barrier_wait(&bar); /* the other thread ordered */
		mark = rcx__fault_log_count();
		TP_CHECK_OK(rcx_put(w, &buf, 8, 1, 0));
		TP_CHECK(a.step_ok);
		if (TP_CHECK(find_wr(mark, rma_ep(w, 1), L_PUT, &wr))) {
			if (process)
				TP_CHECK(wr.flags & RCX_WR_FENCE);
			else
				TP_CHECK(!(wr.flags & RCX_WR_FENCE));
		}
		/* the thread's own order still applies to itself */
		TP_CHECK_OK(rcx_get(w, &buf, 8, 1, 0));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
		mark = rcx__fault_log_count();
		TP_CHECK_OK(rcx_put(w, &buf, 8, 1, 0));
		TP_CHECK(find_wr(mark, rma_ep(w, 1), L_PUT, &wr) &&
			 (wr.flags & RCX_WR_FENCE));
		pthread_join(th, NULL);
		TP_CHECK_OK(rcx_win_unlock_all(w));
		pthread_barrier_destroy(&bar);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

static void sc_scope(struct tp_job *j)
{
	scope_case(j, false);
	scope_case(j, true);
}

/*
 * The window's own memory: a NIC fetch-add on it goes out on the
 * loopback pair, and an access in place after it has to wait for it.
 */
static void sc_self(struct tp_job *j)
{
	const struct rcx_ep *peer_ep = j->g->conns[j->rank ? 0 : 1]->ep;
	struct rcx__win_stats s0, s1;
	struct rcx_fault_wr wr;
	struct rcx_win *w;
	int64_t *base, one = 1, old = -1, v = 0;
	int32_t rep = 77;
	size_t mark, i, n;
	bool loop = false;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	TP_CHECK_OK(rcx_win_lock_all(w));
	base[0] = 41;
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	mark = rcx__fault_log_count();
	TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, RCX_INT64, j->rank, 0,
				     RCX_SUM));
	n = rcx__fault_log_count();
	for (i = mark; i < n; i++)
		if (!rcx__fault_log_get(i, &wr) && wr.op == RCX_OP_FADD)
			loop = wr.ep != peer_ep;
	TP_CHECK(loop); /* on an endpoint that is not the peer's */
	TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
	TP_CHECK_OK(rcx_get(w, &v, 8, j->rank, 0)); /* in place: waits */
	TP_CHECK_OK(rcx__win_stats(w, &s1));
	TP_CHECK_EQ(s1.waits, s0.waits + 1);
	TP_CHECK_EQ(v, 42);
	/* same location, no order call: accumulates stay in order */
	TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, RCX_INT64, j->rank, 0,
				     RCX_SUM));
	TP_CHECK_OK(
		rcx_accumulate(w, &rep, 1, RCX_INT32, j->rank, 0, RCX_REPLACE));
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	TP_CHECK_EQ(s0.waits, s1.waits + 1);
	TP_CHECK_OK(rcx_win_flush(w, j->rank));
	TP_CHECK_EQ(old, 42);
	TP_CHECK_EQ(*(int32_t *)base, 77);
	/*
	 * Two fetch-adds to one own word: the second is ordered after the
	 * first by a wait, not by a fence on the loopback pair (rxe held
	 * such fenced WRs for good; a device that runs WRs in order needs
	 * neither).
	 */
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	mark = rcx__fault_log_count();
	TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, RCX_INT64, j->rank, 0,
				     RCX_SUM));
	TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, RCX_INT64, j->rank, 0,
				     RCX_SUM));
	TP_CHECK_OK(rcx__win_stats(w, &s1));
	n = rcx__fault_log_count();
	for (i = mark; i < n; i++)
		if (!rcx__fault_log_get(i, &wr) && wr.op == RCX_OP_FADD)
			TP_CHECK(!(wr.flags & RCX_WR_FENCE));
	TP_CHECK_EQ(s1.fences, s0.fences);
	TP_CHECK_EQ(s1.waits, s0.waits + !j->ctx->info.ordered);
	TP_CHECK_OK(rcx_win_flush(w, j->rank));
	TP_CHECK_EQ(old, 77 + 1);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

/* The provider is chosen by RCX_PROVIDER; RCX_FAULT_LOWER names the
 * provider below it. */
static void sc_select(struct tp_job *j)
{
	struct rcx_win *w;
	uint64_t *base, v = 5;
	size_t mark;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 1, NULL, (void **)&base, &w));
	mark = rcx__fault_log_count();
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_OK(rcx_put(w, &v, 8, (j->rank + 1) % j->size, 0));
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	/* the barriers and the put went through the recording provider */
	TP_CHECK(rcx__fault_log_count() > mark);
	TP_CHECK_EQ(base[0], 5);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- end to end on rxe */

/*
 * RCX_ORDER_ROUNDS=N sets the rounds; else the default, a fifth of it
 * under RCX_TEST_ORDER_SHORT=1 (the auto and autonode entries: the same
 * RDMA through auto's NIC endpoint that the verbs entry runs at the full
 * count; their own subject is mixed providers and the two paths), and a
 * tenth of it at most where long cases are scaled down (tu_scale.h: the
 * default run on a device, whose rounds cost a millisecond or more when
 * the host is busy; e2e_write's ring of SLOTS still turns 90 times).
 */
static long rounds(long dflt)
{
	const char *e = getenv("RCX_ORDER_ROUNDS"),
		   *s = getenv("RCX_TEST_ORDER_SHORT");
	long n = e ? atol(e) : 0;

	if (n > 0)
		return n;
	n = s && *s == '1' ? dflt / 5 : dflt;
	return tu_scale(n, n < dflt / 10 ? n : dflt / 10);
}

#define E2E_TAG	  7
#define DATA_SIZE 4096 /* four packets at rxe's 1024-byte MTU */
#define SLOTS	  64   /* rounds in flight */
#define SLOT_SIZE (DATA_SIZE + 64)

/*
 * put(data) -> order(WRITE) -> put(flag), through a ring of SLOTS
 * slots: round i writes its number into every word of slot i % SLOTS,
 * then that slot's flag. When the target sees flag i, all of the slot's
 * data must be round i's. The target hands slots back in batches (a
 * message with the last round it checked), so a slot is never rewritten
 * while the target may still read it.
 */
static void sc_e2e_write(struct tp_job *j)
{
	long n = rounds(ORDER_WRITE_ROUNDS), i, k, bad = 0, badrounds = 0;
	long acked = 0;
	long long t0 = tu_now_ms();
	struct rcx_req *req[SLOTS] = { 0 };
	struct rcx_win *w;
	uint8_t *base;
	uint64_t *data, ack;
	volatile uint64_t *flag;
	int s;

	TP_CHECK_OK(rcx_win_allocate(j->g, SLOTS * SLOT_SIZE, 1, NULL,
				     (void **)&base, &w));
	if (j->rank == 0) {
		/* the sources are this process's window: registered */
		TP_CHECK_OK(rcx_win_lock_all(w));
		for (i = 1; i <= n && !tp_failures(); i++) {
			s = (int)(i % SLOTS);
			while (i - SLOTS > acked) {
				TP_CHECK_OK(rcx_recv(j->g, &ack, 8, 1, E2E_TAG,
						     RCX_STATUS_IGNORE));
				acked = (long)ack;
			}
			/* the source of round i - SLOTS is free again */
			TP_CHECK_OK(rcx_wait(&req[s], RCX_STATUS_IGNORE));
			data = (uint64_t *)(base + (size_t)s * SLOT_SIZE);
			for (k = 0; k <= DATA_SIZE / 8; k++)
				data[k] = (uint64_t)i;
			TP_CHECK_OK(rcx_rput(w, data, DATA_SIZE, 1,
					     (size_t)s * SLOT_SIZE, &req[s]));
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
			TP_CHECK_OK(rcx_put(w, &data[DATA_SIZE / 8], 8, 1,
					    (size_t)s * SLOT_SIZE + DATA_SIZE));
		}
		while (acked < n && !tp_failures()) {
			TP_CHECK_OK(rcx_recv(j->g, &ack, 8, 1, E2E_TAG,
					     RCX_STATUS_IGNORE));
			acked = (long)ack;
		}
		TP_CHECK_OK(rcx_waitall(SLOTS, req, RCX_STATUSES_IGNORE));
		TP_CHECK_OK(rcx_win_unlock_all(w));
		printf("rank 0: %ld rounds of put -> order(WRITE) -> "
		       "put(flag) in %lld ms\n",
		       n, tu_now_ms() - t0);
	} else if (j->rank == 1) {
		for (i = 1; i <= n; i++) {
			s = (int)(i % SLOTS);
			data = (uint64_t *)(base + (size_t)s * SLOT_SIZE);
			flag = (volatile uint64_t *)&data[DATA_SIZE / 8];
			/* leave the CPU to rxe's kernel work while waiting */
			while (*flag != (uint64_t)i)
				sched_yield();
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			for (k = 0, bad = 0; k < DATA_SIZE / 8; k++)
				bad += ((volatile uint64_t *)data)[k] !=
				       (uint64_t)i;
			if (bad && badrounds++ < 5)
				TP_FAIL("round %ld: flag seen, %ld data words "
					"older",
					i, bad);
			if (i % (SLOTS / 2) == 0 || i == n) {
				ack = (uint64_t)i;
				if (!TP_CHECK_OK(rcx_send(j->g, &ack, 8, 0,
							  E2E_TAG)))
					break;
			}
		}
		TP_CHECK_EQ(badrounds, 0);
		printf("rank 1: %ld rounds, flag seen before the data in %ld\n",
		       n, badrounds);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * get(x) -> order(ALL) -> put(x): the get returns round i's value, never
 * the put's. Each round ends with a flush.
 */
static void sc_e2e_war(struct tp_job *j)
{
	long n = rounds(ORDER_WAR_ROUNDS), i, wrong = 0;
	long long t0 = tu_now_ms();
	struct rcx__win_stats st;
	struct rcx_win *w;
	uint64_t *base, got, next;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	base[0] = 0;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 1));
		for (i = 0; i < n && !tp_failures(); i++) {
			got = UINT64_MAX;
			next = (uint64_t)i + 1;
			TP_CHECK_OK(rcx_get(w, &got, 8, 1, 0));
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
			TP_CHECK_OK(rcx_put(w, &next, 8, 1, 0));
			TP_CHECK_OK(rcx_win_flush(w, 1));
			if (got != (uint64_t)i && wrong++ < 5)
				TP_FAIL("round %ld: get returned %llu", i,
					(unsigned long long)got);
		}
		TP_CHECK_OK(rcx_win_unlock(w, 1));
		TP_CHECK_EQ(wrong, 0);
		TP_CHECK_OK(rcx__win_stats(w, &st));
		/* a fence per round, but none on a device that runs WRs in
		 * order (shm: C11 fences instead), nor where order waits */
		TP_CHECK_EQ(st.fences,
			    w->ctx->info.ordered || w->ctx->fence_wait ? 0 : n);
		printf("rank 0: %ld rounds of get -> order(ALL) -> put in "
		       "%lld ms, %ld wrong, %llu fenced WRs re-driven\n",
		       n, tu_now_ms() - t0, wrong,
		       (unsigned long long)st.kicks);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1)
		TP_CHECK_EQ(base[0], n);
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * A fenced WR the device leaves waiting (RCX_FAULT_STALL_FENCE: the fault
 * provider holds every fenced WR until the next post on its endpoint, as
 * rxe does when it loses the fenced WR's wakeup), with a program that only
 * ever tests its requests: progress itself must re-drive it. Each round:
 * rget -> order(ALL) -> rput (fenced), then rcx_test until both are done,
 * for at most 10 s.
 */
#define STALL_ROUNDS 20

/*
 * The scenarios that look at fenced WRs fence on every device: on one
 * whose fenced WRs may stall (rxe), RCX_ORDER_FENCE=auto waits instead.
 * So does e2e_war, whose READ -> fenced WRITE rounds rxe has always run
 * (100,000 of them); fenced_loop, with the atomics that meet rxe's stall,
 * runs on the default.
 */
static void fence_env(void)
{
	setenv("RCX_ORDER_FENCE", "fence", 1);
}

static void stall_env(void)
{
	fence_env();
	setenv("RCX_FAULT_STALL_FENCE", "1", 1);
}

static void sc_stall(struct tp_job *j)
{
	struct rcx__win_stats st;
	struct rcx_req *r[2];
	struct rcx_win *w;
	uint64_t *base, got, next;
	long long t0, end;
	int i, done[2], left;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	base[0] = 0;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 1));
		t0 = tu_now_ms();
		for (i = 0; i < STALL_ROUNDS && !tp_failures(); i++) {
			got = UINT64_MAX;
			next = (uint64_t)i + 1;
			TP_CHECK_OK(rcx_rget(w, &got, 8, 1, 0, &r[0]));
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
			TP_CHECK_OK(rcx_rput(w, &next, 8, 1, 0, &r[1]));
			end = tu_now_ms() + 10000;
			done[0] = done[1] = 0;
			do {
				left = 0;
				for (int k = 0; k < 2; k++) {
					if (!done[k])
						TP_CHECK_OK(rcx_test(
							&r[k], &done[k],
							RCX_STATUS_IGNORE));
					left += !done[k];
				}
			} while (left && tu_now_ms() < end && !tp_failures());
			if (left) {
				TP_FAIL("round %d: the fenced put never "
					"completed "
					"under rcx_test",
					i);
				break;
			}
			TP_CHECK_EQ(got, (uint64_t)i);
		}
		TP_CHECK_OK(rcx__win_stats(w, &st));
		TP_CHECK_EQ(st.fences, STALL_ROUNDS);
		TP_CHECK(st.kicks >= STALL_ROUNDS);
		printf("rank 0: %d fenced puts held back by the device, "
		       "completed under rcx_test in %lld ms with %llu "
		       "re-drives\n",
		       STALL_ROUNDS, tu_now_ms() - t0,
		       (unsigned long long)st.kicks);
		TP_CHECK_OK(rcx_win_unlock(w, 1));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1)
		TP_CHECK_EQ(base[0], STALL_ROUNDS);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- the re-drive of stalled fenced WRs does not starve itself */

/*
 * kick() posts a READ behind a fenced WR that may be stuck; the READ
 * completes only after it. A wait that sees no completion for a long time
 * must not pile such READs up (they would fill the send-queue budget and
 * then nothing could be posted again): RCX__WIN_KICKS_MAX at most per
 * target. Here a fenced op to rank 1 is pretended and the idle re-drive
 * called again and again without reaping a completion: that many kicks
 * go out, and another only after one completed.
 */
/* Kick READs to t posted and not reaped yet. */
static int kicks_out(const struct rcx_win *w, int t)
{
	return (int)w->tgt[t].kick.out;
}

static bool kick_reaped(struct tp_job *j, struct rcx_win *w, int t)
{
	long long end = tu_now_ms() + 10000;

	while (kicks_out(w, t) && tu_now_ms() < end)
		rcx_progress(j->ctx);
	return !kicks_out(w, t);
}

static void kick_idle(struct rcx_win *w, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		w->ctx->kick_at_us = 0; /* look now, not in 50 ms */
		rcx__win_idle(w->ctx);
	}
}

static void sc_kick_bound(struct tp_job *j)
{
	struct rcx__win_stats s0, s1;
	struct rcx_win *w;
	uint64_t *base;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	if (j->rank == 0) {
		TP_CHECK_OK(rcx_win_lock_all(w));
		TP_CHECK_OK(rcx__win_stats(w, &s0));
		w->tgt[1].fenced++;
		w->ctx->win_fenced++;
		kick_idle(w, 2 * RCX__WIN_SQ_DEPTH);
		TP_CHECK_EQ(kicks_out(w, 1), RCX__WIN_KICKS_MAX);
		TP_CHECK_OK(rcx__win_stats(w, &s1));
		TP_CHECK_EQ(s1.kicks - s0.kicks, RCX__WIN_KICKS_MAX);
		/* once they completed, the next looks may kick again */
		TP_CHECK(kick_reaped(j, w, 1));
		kick_idle(w, 2 * RCX__WIN_KICKS_MAX);
		TP_CHECK_EQ(kicks_out(w, 1), RCX__WIN_KICKS_MAX);
		TP_CHECK_OK(rcx__win_stats(w, &s0));
		TP_CHECK_EQ(s0.kicks - s1.kicks, RCX__WIN_KICKS_MAX);
		TP_CHECK(kick_reaped(j, w, 1));
		w->tgt[1].fenced--;
		w->ctx->win_fenced--;
		TP_CHECK_OK(rcx_win_unlock_all(w));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * A stuck fenced WR with everything else taken: every operation slot in
 * use (ops queued behind it hold them) and the send-queue budget as full
 * as operations may fill it. A kick must still go out, or nothing would
 * ever move the queue again (the wait for a slot or for room is the very
 * wait that kicks).
 */
static void sc_kick_starved(struct tp_job *j)
{
	struct rcx__win_op *held = NULL, *op;
	struct rcx__win_stats s0, s1;
	struct rcx_win *w;
	struct rcx_ep *ep;
	uint32_t *sq, saved;
	uint64_t *base;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	if (j->rank == 0) {
		TP_CHECK_OK(rcx_win_lock_all(w));
		TP_CHECK_OK(rcx__win_ep(w, 1, &ep, &sq));
		w->tgt[1].fenced++;
		w->ctx->win_fenced++;
		while ((op = w->op_free)) {
			w->op_free = op->next;
			op->next = held;
			held = op;
		}
		saved = *sq;
		*sq = RCX__WIN_SQ_DEPTH - RCX__WIN_KICKS_MAX;
		TP_CHECK_OK(rcx__win_stats(w, &s0));
		kick_idle(w, 2 * RCX__WIN_KICKS_MAX);
		TP_CHECK_OK(rcx__win_stats(w, &s1));
		TP_CHECK_EQ(s1.kicks - s0.kicks, RCX__WIN_KICKS_MAX);
		TP_CHECK_EQ(kicks_out(w, 1), RCX__WIN_KICKS_MAX);
		TP_CHECK(kick_reaped(j, w, 1));
		TP_CHECK_EQ(*sq, RCX__WIN_SQ_DEPTH - RCX__WIN_KICKS_MAX);
		*sq = saved;
		while ((op = held)) {
			held = op->next;
			op->next = w->op_free;
			w->op_free = op;
		}
		w->tgt[1].fenced--;
		w->ctx->win_fenced--;
		TP_CHECK_OK(rcx_win_unlock_all(w));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

#define FL_LOOPS 10
#define FL_OPS	 40

/*
 * On rxe (Linux 6.1; auto, 2 simulated nodes, 3 ranks) a fenced WR
 * sometimes stays stuck for good, and the fence then never returns. What
 * is left is not rcx's send queue: the budget has room, slots are free,
 * all RCX__WIN_KICKS_MAX kicks went out behind the WR and every earlier WR
 * of the queue has completed, yet the device posts nothing more (5 of 6
 * runs with fences; 0 of 3 with waits). So RCX_ORDER_FENCE=auto waits
 * there (ctx.c), and this loop runs on the default: it must complete on
 * every provider, with no fenced WR where fences may stall. With
 * RCX_ORDER_FENCE=fence by hand it shows the stall: rcx-run -n 3 --nodes
 * 2 rcx_tests --peer order fenced_loop (RCX_PROVIDER=auto).
 *
 * Many fenced WRs completed by fences and flushes, in a loop: every rank
 * fetch-adds one word at every rank and reads it back atomically (same
 * location: each after the first carries the fence), then orders a put
 * behind them (fenced again), FL_OPS times per target; in fence epochs,
 * then in a lock_all epoch with a flush per target. Every fence and flush
 * must return, and the counts come out exact.
 */
static void fl_round(struct tp_job *j, struct rcx_win *w, int t)
{
	/* results arrive after the round, when a fence or flush completes
	 * the ops: they may not live on its stack */
	static int64_t one = 1, old, got;
	int k;

	for (k = 0; k < FL_OPS && !tp_failures(); k++) {
		TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, RCX_INT64, t, 0,
					     RCX_SUM));
		TP_CHECK_OK(rcx_get_accumulate(w, NULL, &got, 1, RCX_INT64, t,
					       0, RCX_NO_OP));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
		TP_CHECK_OK(rcx_put(w, &one, 8, t, 1 + (size_t)j->rank));
	}
}

static void sc_fenced_loop(struct tp_job *j)
{
	struct rcx__win_stats st;
	struct rcx_win *w;
	int64_t *base;
	int loop, t;

	TP_CHECK(j->size <= 7);
	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (loop = 0; loop < FL_LOOPS && !tp_failures(); loop++) {
		for (t = 0; t < j->size; t++)
			fl_round(j, w, (j->rank + t) % j->size);
		TP_CHECK_OK(rcx_win_fence(w, 0));
		TP_CHECK_EQ(base[0], (int64_t)(loop + 1) * j->size * FL_OPS);
		TP_CHECK_OK(rcx_win_fence(w, 0));
	}
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_lock_all(w));
	for (loop = 0; loop < FL_LOOPS && !tp_failures(); loop++) {
		for (t = 0; t < j->size; t++) {
			fl_round(j, w, (j->rank + t) % j->size);
			TP_CHECK_OK(rcx_win_flush(w, (j->rank + t) % j->size));
		}
	}
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(base[0], (int64_t)2 * FL_LOOPS * j->size * FL_OPS);
	TP_CHECK_OK(rcx__win_stats(w, &st));
	printf("rank %d: %llu fenced WRs, %llu re-drives (%s, "
	       "RCX_ORDER_FENCE=%s)\n",
	       j->rank, (unsigned long long)st.fences,
	       (unsigned long long)st.kicks, j->ctx->info.name,
	       j->ctx->cfg.order_fence);
	if (j->ctx->info.fence_stalls &&
	    !strcmp(j->ctx->cfg.order_fence, "auto"))
		TP_CHECK_EQ(st.fences, 0);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- puts and gets the provider runs at once */

#define NOW_N 300 /* puts, and as many gets, per window */

/* Does the provider of this run reach rank 1's allocated memory mapped? */
static bool now_expected(void)
{
	const char *p = getenv("RCX_PROVIDER"), *d = getenv("RCX_DEVICE");

	return p && (!strcmp(p, "shm") ||
		     (!strcmp(p, "auto") && d && !strcmp(d, "shm")));
}

/* NOW_N put + get + flush to rank 1: the gets read the puts' values. */
static void now_loop(struct rcx_win *w, uint64_t *now)
{
	struct rcx__win_stats s0, s1;
	uint64_t v, back;
	int i, bad = 0;

	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	for (i = 0; i < NOW_N; i++) {
		v = 1000 + i;
		TP_CHECK_OK(rcx_put(w, &v, 8, 1, i));
		v = 0; /* the origin buffer is the caller's again */
		back = 0;
		TP_CHECK_OK(rcx_get(w, &back, 8, 1, i));
		TP_CHECK_OK(rcx_win_flush(w, 1));
		bad += back != (uint64_t)(1000 + i);
	}
	TP_CHECK_OK(rcx__win_stats(w, &s1));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_EQ(bad, 0);
	*now = s1.now - s0.now;
}

/*
 * On a window of rcx_win_allocate whose target memory the provider maps
 * (shm) every put and get runs at once (progress, where a peer's death
 * is seen, is made by the puts themselves, win_rma.c: none is posted for
 * it), but perhaps the first two, behind the traffic of the window's
 * creation; on one of rcx_win_create (memory of the program's, reached by
 * cross-memory attach) and on a NIC, none does. Every put lands either
 * way.
 */
static void sc_now(struct tp_job *j)
{
	uint64_t *base = NULL, *mem = calloc(NOW_N, 8), now = 0, lo;
	struct rcx_win *w = NULL, *w2 = NULL;
	int i, bad = 0;

	if (!TP_CHECK(mem != NULL))
		return;
	TP_CHECK_OK(
		rcx_win_allocate(j->g, NOW_N * 8, 8, NULL, (void **)&base, &w));
	TP_CHECK_OK(rcx_win_create(j->g, mem, NOW_N * 8, 8, NULL, &w2));
	if (j->rank == 0 && w && w2) {
		now_loop(w, &now);
		lo = 2 * NOW_N - 2;
		printf("rank 0: allocated window: %llu of %d ops at once\n",
		       (unsigned long long)now, 2 * NOW_N);
		if (now_expected())
			TP_CHECK(now >= lo && now <= 2 * NOW_N);
		else if (!strcmp(getenv("RCX_PROVIDER") ?: "", "verbs"))
			TP_CHECK_EQ(now, 0);
		now_loop(w2, &now);
		TP_CHECK_EQ(now, 0);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1 && base)
		for (i = 0; i < NOW_N; i++)
			bad += base[i] != (uint64_t)(1000 + i) ||
			       mem[i] != (uint64_t)(1000 + i);
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_win_free(&w2));
	TP_CHECK_OK(rcx_win_free(&w));
	free(mem);
}

/* ---- a target reached through two paths */

/*
 * The scenarios below run on every provider; where rank 1 is reached
 * through two paths (the CTest entries that set RCX_TEST_TWO_PATHS: auto
 * with a device, all ranks on one node) they also check that it is.
 */
static void check_two_paths(struct rcx_win *w, int t)
{
	const char *want = getenv("RCX_TEST_TWO_PATHS");

	if (want && *want == '1' && !two_paths(w, t))
		TP_FAIL("rank %d is reached through one path, not two", t);
}

#define PATHS_BIG    (4u << 20)
#define PATHS_ROUNDS 10

/*
 * put(4 MiB) -> order(DATA, WRITE or ALL) -> accumulate(+1) in software
 * on the put's last word -> unlock: the accumulate must find the put's
 * value there. Across two paths the put (RDMA, NIC endpoint) and the
 * accumulate (a message through shared memory) race unless the
 * accumulate waits for the put.
 */
static void sc_paths_acc(struct tp_job *j)
{
	static const int kinds[] = { RCX_ORDER_DATA, RCX_ORDER_WRITE,
				     RCX_ORDER_ALL };
	const size_t n = PATHS_BIG / 4;
	struct rcx__win_stats st;
	struct rcx_win *w;
	uint32_t *base, *src = malloc(PATHS_BIG), one = 1, v;
	size_t k;
	int r, wrong = 0;

	TP_CHECK(src != NULL);
	TP_CHECK_OK(
		rcx_win_allocate(j->g, PATHS_BIG, 4, NULL, (void **)&base, &w));
	for (r = 0; r < PATHS_ROUNDS && src && !tp_failures(); r++) {
		v = (uint32_t)(r + 1) * 1000;
		if (j->rank == 0) {
			check_two_paths(w, 1);
			for (k = 0; k < n; k++)
				src[k] = v;
			TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 1));
			TP_CHECK_OK(rcx_put(w, src, PATHS_BIG, 1, 0));
			TP_CHECK_OK(rcx_win_order(w, kinds[r % 3]));
			TP_CHECK_OK(rcx_accumulate(w, &one, 1, RCX_INT32, 1,
						   n - 1, RCX_SUM));
			TP_CHECK_OK(rcx_win_unlock(w, 1));
		}
		TP_CHECK_OK(rcx_group_barrier(j->g));
		if (j->rank == 1 && base[n - 1] != v + 1 && wrong++ < 5)
			TP_FAIL("round %d (order kind %d): last word %u, want "
				"%u: the accumulate ran before the put",
				r, kinds[r % 3], base[n - 1], v + 1);
		TP_CHECK_OK(rcx_group_barrier(j->g));
	}
	if (j->rank == 1)
		TP_CHECK_EQ(wrong, 0);
	if (j->rank == 0) {
		TP_CHECK_OK(rcx__win_stats(w, &st));
		/* every accumulate waited for the put on the other path */
		TP_CHECK_EQ(st.flushes, two_paths(w, 1) ? PATHS_ROUNDS : 0);
		printf("rank 0: %d rounds of put(4 MiB) -> order -> "
		       "accumulate, %llu waits for the other path\n",
		       PATHS_ROUNDS, (unsigned long long)st.flushes);
	}
	TP_CHECK_OK(rcx_win_free(&w));
	free(src);
}

#define FLAG_SIZE   (4u << 20)
#define FLAG_ROUNDS 20
#define FLAG_TAG    9

/*
 * put(data) -> order(WRITE) -> accumulate(REPLACE) of a flag word, which
 * runs in software at the target; the target polls the flag (making
 * progress, so that the accumulate runs) and then reads the data: when it
 * sees round i's flag, every data word must be round i's.
 */
static void sc_paths_flag(struct tp_job *j)
{
	const size_t n = FLAG_SIZE / 4;
	struct rcx_win *w;
	uint32_t *base, *src = malloc(FLAG_SIZE), ack;
	volatile uint32_t *flag;
	int32_t i;
	size_t k, bad;
	int badrounds = 0;

	TP_CHECK(src != NULL);
	TP_CHECK_OK(rcx_win_allocate(j->g, FLAG_SIZE + 64, 1, NULL,
				     (void **)&base, &w));
	flag = &base[n];
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0 && src) {
		check_two_paths(w, 1);
		TP_CHECK_OK(rcx_win_lock_all(w));
		for (i = 1; i <= FLAG_ROUNDS && !tp_failures(); i++) {
			for (k = 0; k < n; k++)
				src[k] = (uint32_t)i;
			TP_CHECK_OK(rcx_put(w, src, FLAG_SIZE, 1, 0));
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
			TP_CHECK_OK(rcx_accumulate(w, &i, 1, RCX_INT32, 1,
						   FLAG_SIZE, RCX_REPLACE));
			TP_CHECK_OK(rcx_win_flush(w, 1));
			/* the target has checked: the data may change */
			TP_CHECK_OK(rcx_recv(j->g, &ack, 4, 1, FLAG_TAG,
					     RCX_STATUS_IGNORE));
		}
		TP_CHECK_OK(rcx_win_unlock_all(w));
	} else if (j->rank == 1) {
		for (i = 1; i <= FLAG_ROUNDS; i++) {
			while (*flag != (uint32_t)i)
				rcx_progress(j->ctx);
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			for (k = 0, bad = 0; k < n; k++)
				bad += ((volatile uint32_t *)base)[k] !=
				       (uint32_t)i;
			if (bad && badrounds++ < 5)
				TP_FAIL("round %d: flag seen, %zu of %zu data "
					"words older",
					i, bad, n);
			ack = (uint32_t)i;
			if (!TP_CHECK_OK(rcx_send(j->g, &ack, 4, 0, FLAG_TAG)))
				break;
		}
		TP_CHECK_EQ(badrounds, 0);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
	free(src);
}

/* ---- the peer role */

/* Selecting the provider by environment, and a bad lower provider. */
static void select_env(void)
{
	struct rcx_ctx_attr a = { .provider = "fault" };
	const char *lower = getenv("RCX_FAULT_LOWER");
	char keep[32] = "";
	struct rcx_ctx *ctx;

	if (lower)
		snprintf(keep, sizeof(keep), "%s", lower);
	setenv("RCX_FAULT_LOWER", "nosuch", 1);
	TP_CHECK_EQ(rcx_ctx_create(&a, &ctx), -ENODEV);
	/* back to the lower provider the suite runs on (default verbs) */
	if (keep[0])
		setenv("RCX_FAULT_LOWER", keep, 1);
	else
		unsetenv("RCX_FAULT_LOWER");
	setenv("RCX_PROVIDER", "fault", 1);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "table",
	  .run = sc_table,
	  .provider = "fault",
	  .setup = fence_env },
	{ .name = "cover",
	  .run = sc_cover,
	  .provider = "fault",
	  .setup = fence_env },
	{ .name = "scope",
	  .run = sc_scope,
	  .provider = "fault",
	  .thread_level = RCX_THREAD_MULTIPLE,
	  .setup = fence_env },
	{ .name = "self", .run = sc_self, .provider = "fault" },
	{ .name = "select", .run = sc_select, .setup = select_env },
	{ .name = "e2e_write", .run = sc_e2e_write },
	{ .name = "e2e_war", .run = sc_e2e_war, .setup = fence_env },
	{ .name = "kick_bound",
	  .run = sc_kick_bound,
	  .size = 2,
	  .setup = fence_env },
	{ .name = "kick_starved",
	  .run = sc_kick_starved,
	  .size = 2,
	  .setup = fence_env },
	{ .name = "fenced_loop", .run = sc_fenced_loop },
	{ .name = "paths_acc", .run = sc_paths_acc },
	{ .name = "paths_flag", .run = sc_paths_flag },
	{ .name = "now", .run = sc_now, .size = 2 },
	{ .name = "stall",
	  .run = sc_stall,
	  .provider = "fault",
	  .size = 2,
	  .setup = stall_env },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("order", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_order = { "order", peer_main };

/* ---- the CUnit side */

static void test_table(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "table", 900), 0);
}

static void test_cover(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "cover", 120), 0);
}

static void test_scope(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "scope", 120), 0);
}

static void test_self(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "self", 120), 0);
}

static void test_select(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(3, "order", "select", 120), 0);
}

static void test_e2e_write(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "e2e_write", 600), 0);
}

static void test_e2e_war(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "e2e_war", 600), 0);
}

static void test_stall(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "stall", 120), 0);
}

static void test_kick_bound(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "kick_bound", 120), 0);
}

static void test_kick_starved(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "kick_starved", 120), 0);
}

static void test_fenced_loop(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(3, "order", "fenced_loop", 600), 0);
}

/* A mode that is none of auto, fence, wait: the context is refused. */
static void test_fence_mode_bad(void)
{
	struct rcx_ctx *ctx = NULL;

	setenv("RCX_ORDER_FENCE", "sometimes", 1);
	CU_ASSERT_EQUAL(rcx_ctx_create(NULL, &ctx), -EINVAL);
	CU_ASSERT_PTR_NULL(ctx);
	unsetenv("RCX_ORDER_FENCE");
}

static void test_paths_acc(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "paths_acc", 300), 0);
}

static void test_paths_flag(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "paths_flag", 300), 0);
}

static void test_now(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "order", "now", 120), 0);
}

static const CU_TestInfo tests[] = {
	{ "mapping_table_wr_by_wr", test_table },
	{ "fence_covers_earlier", test_cover },
	{ "thread_and_process_scope", test_scope },
	{ "own_memory_loopback", test_self },
	{ "provider_by_environment", test_select },
	{ "put_order_write_put_flag", test_e2e_write },
	{ "get_order_all_put", test_e2e_war },
	{ "stalled_fence_under_test", test_stall },
	{ "one_redrive_per_target", test_kick_bound },
	{ "redrive_with_slots_and_queue_full", test_kick_starved },
	{ "fenced_atomics_in_a_loop", test_fenced_loop },
	{ "fence_mode_refused", test_fence_mode_bad },
	{ "put_order_accumulate_last_word", test_paths_acc },
	{ "put_order_accumulate_flag", test_paths_flag },
	{ "put_get_at_once_on_mapped_memory", test_now },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_order = {
	"order", TU_DEVICE, NULL, NULL, tests,
};
