/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound collectives (include/rcx/bcoll.h) on 2, 3 and 4 ranks (powers of
 * two and not): barrier, broadcast from two roots, allreduce with several
 * types and operations, in place and not (one into a buffer off its
 * type's alignment), reduce to two roots and
 * allgather, each started
 * 300 times (TEST_BCOLL_ITERS asks for more: tools/test --full runs
 * 10,000 on shared memory and on Soft-RoCE; the default run on an RDMA
 * device 48, each collective on one of the rank counts) with the data
 * changing between starts and every result checked at every rank; a
 * 1 MiB allreduce; a continuation on each start; bad input; and a rank
 * that kills itself mid-stream under `rcx-run --ft` (on the world, and on
 * a sub-group without rank 0), after which every survivor's started
 * collective completes with RCX_ERR_PROC_FAILED and the bound collective
 * is freed (also when it dies while the others sleep in their waits);
 * a survivor freeing it while a completion of its write is
 * still to be polled (the fault provider holds it back); and a start
 * whose write waits for a late
 * rank's credit, whose wait must sleep until the credit comes (rank 0's
 * empty polls counted); and a start whose lazy write still waits for a
 * credit (held back) when its result is in, which must wait for that
 * write, so the others' starts complete while it makes no call.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "lib/bcoll/bcoll_int.h"
#include "lib/core/core.h"
#include "providers/fault/fault.h"
#include "providers/provider.h"
#include "tu.h"
#include "tu_mp.h"

/* starts of each collective; TEST_BCOLL_ITERS may ask for others */
#define ITERS_DEFAULT 300
/*
 * On an RDMA device (verbs, auto across two nodes) a run that does not
 * set TEST_BCOLL_ITERS is the default run of tools/test, where the
 * emulated device makes each start and each launch slow: fewer starts
 * (still many times the slots a channel turns through, the data
 * changing at each), and each collective on one of 2, 3 and 4 ranks
 * (dev_ranks; shared memory runs every one on all three, and so does
 * TEST_BCOLL_ITERS, tools/test --part bcoll and --full).
 */
#define ITERS_QUICK 48
static int iters = ITERS_DEFAULT;
#define ITERS	   iters
#define COUNT	   5 /* elements of the small collectives: odd on purpose */
#define BIG	   (1u << 17) /* int64 elements: 1 MiB */
#define BIG_ITER   20
#define CONT_ITERS 500
/* kill: the start at which the last rank dies */
#define KILL_AT 500
/* sched: starts of each allreduce bound with each schedule */
#define SCHED_ITERS 20
/* the quick run's BIG_ITER and SCHED_ITERS */
#define FEW_QUICK 4
static int cont_iters = CONT_ITERS, kill_at = KILL_AT, big_iters = BIG_ITER,
	   sched_iters = SCHED_ITERS;
/* credit_wake: starts with a late rank, how late, and what rank 0 may
 * poll meanwhile (sleeping: a few polls a start; polling: thousands) */
#define WAKE_STARTS  10
#define WAKE_LATE_US 50000
#define WAKE_POLLS   200
/*
 * one_cpu: starts of a bound allreduce with both ranks on one CPU, and
 * the empty polls the median start may take (two ranks, one step: each
 * rank's wait; the shm provider once spun 256 polls a wait before it
 * gave the CPU to the peer queued behind it)
 */
#define ONE_CPU_STARTS 200
#define ONE_CPU_POLLS  64
/* kill_asleep: the start into which the last rank dies late */
#define KILL_ASLEEP_AT 20
/*
 * late: the starts before the one whose write's completion is held; that
 * start (the 23rd) writes no credit, which on verbs is a WRITE_IMM too
 * (credits go with starts 1, 5, 9, ...: four slots; shm's sixteen: 1,
 * 17, 33, ...)
 */
#define LATE_STARTS 22
/*
 * hold: how long rank 0 waits, making no library call, for the others'
 * starts to complete (milliseconds: a bound, not a measure); the start
 * whose writes need their readers' second credit is hold_at()
 */
#define HOLD_WAIT_MS 10000

static struct rcx_ctx *ctx;
static struct rcx_group *g;
static int rank, size;

static bool start_wait(struct rcx_req *r)
{
	return TP_CHECK_OK(rcx_start(r)) && TP_CHECK_OK(rcx_wait(&r, NULL));
}

static struct rcx_req *bind(struct rcx_req *init)
{
	struct rcx_req *c = NULL;

	if (!TP_CHECK(init))
		return NULL;
	if (!TP_CHECK_OK(rcx_bind_coll(init, NULL, &c)))
		c = NULL;
	TP_CHECK_OK(rcx_req_free(&init));
	return c;
}

static struct rcx_req *barrier_new(void)
{
	struct rcx_req *init = NULL;

	TP_CHECK_OK(rcx_barrier_init(g, NULL, &init));
	return bind(init);
}

static void sc_barrier(void)
{
	struct rcx_req *b = barrier_new();
	int i, bad = 0;

	if (!b)
		return;
	for (i = 0; i < ITERS && !bad; i++)
		bad = !start_wait(b);
	TP_CHECK_OK(rcx_bind_free(&b, 1));
	TP_CHECK(b == NULL);
}

/*
 * Run with RCX_SPIN_US=0 (the test sets it): the last rank starts each
 * barrier WAKE_LATE_US late, so rank 0's write of the first step waits
 * for that rank's credit (2 ranks: the one step). A wait for a credit
 * sleeps until it comes, on every provider: on shm the credit's store
 * kicks it, on verbs the credit is a WRITE with immediate into a receive
 * the writer keeps posted. One that polled instead took the CPU the late
 * rank needs (on a loaded host a start took a scheduler slice,
 * milliseconds). Counted: rank 0's empty polls over the starts.
 */
static void sc_wake(void)
{
	struct rcx_stats s0 = { .size = sizeof(s0) },
			 s1 = { .size = sizeof(s1) };
	struct rcx_req *b = barrier_new();
	int i;

	if (!b)
		return;
	/* the first start hands out every credit once */
	TP_CHECK(start_wait(b));
	TP_CHECK_OK(rcx_ctx_stats(ctx, &s0));
	for (i = 0; i < WAKE_STARTS; i++) {
		if (rank == size - 1)
			usleep(WAKE_LATE_US);
		if (!start_wait(b))
			break;
	}
	TP_CHECK_OK(rcx_ctx_stats(ctx, &s1));
	TP_CHECK_EQ(i, WAKE_STARTS);
	if (rank == 0) {
		if (!TP_CHECK(s1.empty_polls - s0.empty_polls < WAKE_POLLS))
			fprintf(stderr,
				"rank 0 polled %llu times in %d starts\n",
				(unsigned long long)(s1.empty_polls -
						     s0.empty_polls),
				WAKE_STARTS);
	}
	TP_CHECK_OK(rcx_bind_free(&b, 1));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Run on shm with RCX_YIELD=never and a spin that never ends (the test
 * sets them): both ranks pinned to one CPU, a start's wait holds the CPU
 * its peer needs to make the data it waits for. The provider gives the
 * CPU to the peer queued behind it after a few empty polls: a waiter
 * that spun on took a time slice a start, one that spun 256 polls first
 * about 10 us (20 us an allreduce of 2 ranks on a 2-cpu guest). Counted,
 * not timed: each start's empty polls at each rank, of which the median
 * (now and then a waiter spins on without yielding, SHM_YIELD_PAUSE, so
 * the scheduler may move its peer to another CPU); the result checked.
 */
static void sc_one_cpu(void)
{
	struct rcx_stats s0 = { .size = sizeof(s0) },
			 s1 = { .size = sizeof(s1) };
	struct rcx_req *init = NULL, *c;
	uint64_t polls[ONE_CPU_STARTS];
	int64_t v;
	int i, cpu;

	TP_CHECK_OK(rcx_allreduce_init(RCX_IN_PLACE, &v, 1, RCX_INT64, RCX_SUM,
				       g, NULL, &init));
	c = bind(init);
	if (!c)
		return;
	cpu = tp_pin_cpu(0);
	TP_CHECK(cpu >= 0);
	for (i = 0; i < ONE_CPU_STARTS; i++) {
		TP_CHECK_OK(rcx_ctx_stats(ctx, &s0));
		v = rank + i;
		if (!start_wait(c) || !TP_CHECK_EQ(v, 2 * i + 1))
			break;
		TP_CHECK_OK(rcx_ctx_stats(ctx, &s1));
		polls[i] = s1.empty_polls - s0.empty_polls;
	}
	if (TP_CHECK_EQ(i, ONE_CPU_STARTS)) {
		qsort(polls, ONE_CPU_STARTS, sizeof(polls[0]), cmp_u64);
		printf("rank %d on cpu %d: empty polls a start: median %llu, "
		       "most %llu\n",
		       rank, cpu, (unsigned long long)polls[ONE_CPU_STARTS / 2],
		       (unsigned long long)polls[ONE_CPU_STARTS - 1]);
		TP_CHECK(polls[ONE_CPU_STARTS / 2] < ONE_CPU_POLLS);
	}
	TP_CHECK_OK(rcx_bind_free(&c, 1));
}

static int64_t bval(int root, int i, int j)
{
	return (int64_t)i * 1000003 + j * 7 + root;
}

static void sc_bcast(void)
{
	int64_t buf[2][COUNT];
	struct rcx_req *init, *c[2] = { NULL, NULL };
	int root[2] = { 0, size - 1 }, i, j, k, bad = 0;

	for (k = 0; k < 2; k++) {
		init = NULL;
		TP_CHECK_OK(rcx_bcast_init(buf[k], COUNT, RCX_INT64, root[k], g,
					   NULL, &init));
		c[k] = bind(init);
		if (!c[k])
			return;
	}
	/* ITERS starts in all, the roots taking turns */
	for (i = 0; i < ITERS && !bad; i++) {
		k = i % 2;
		for (j = 0; j < COUNT; j++)
			buf[k][j] = rank == root[k] ? bval(k, i, j) : -1;
		bad = !start_wait(c[k]);
		for (j = 0; j < COUNT && !bad; j++)
			bad = !TP_CHECK_EQ(buf[k][j], bval(k, i, j));
	}
	TP_CHECK_OK(rcx_bind_free(c, 2));
}

/* int64 SUM in place: rank r gives (r + 1) * (i + 1) + j */
static void check_sum(struct rcx_req *c, int64_t *buf, int n, int i)
{
	int64_t want;
	int j;

	for (j = 0; j < n; j++)
		buf[j] = (int64_t)(rank + 1) * (i + 1) + j;
	if (!start_wait(c))
		return;
	for (j = 0; j < n; j++) {
		want = (int64_t)(i + 1) * size * (size + 1) / 2 +
		       (int64_t)size * j;
		if (!TP_CHECK_EQ(buf[j], want))
			return;
	}
}

/*
 * int64 SUM in place into a buffer one byte off the type's alignment:
 * the bound collective folds through the general fold, which bounces
 * (under the undefined-behaviour sanitizer a fold that read an int64 there
 * would stop the test).
 */
static void unaligned_sum(void)
{
	static alignas(8) uint8_t raw[COUNT * 8 + 1];
	uint8_t *buf = raw + 1;
	struct rcx_req *init = NULL, *c;
	int64_t v, want;
	int i, j;

	TP_CHECK_OK(rcx_allreduce_init(RCX_IN_PLACE, buf, COUNT, RCX_INT64,
				       RCX_SUM, g, NULL, &init));
	c = bind(init);
	for (i = 0; c && i < 20; i++) {
		for (j = 0; j < COUNT; j++) {
			v = (int64_t)(rank + 1) * (i + 1) + j;
			memcpy(buf + 8 * j, &v, 8);
		}
		if (!start_wait(c))
			break;
		for (j = 0; j < COUNT; j++) {
			want = (int64_t)(i + 1) * size * (size + 1) / 2 +
			       (int64_t)size * j;
			memcpy(&v, buf + 8 * j, 8);
			if (!TP_CHECK_EQ(v, want))
				break;
		}
	}
	if (c)
		TP_CHECK_OK(rcx_bind_free(&c, 1));
}

static void sc_allreduce(void)
{
	int64_t sum[COUNT];
	double dsend[COUNT], dmax[COUNT];
	int32_t isend[COUNT], imin[COUNT], xsend[COUNT], xr[COUNT];
	struct rcx_req *init, *c[4];
	int i, j, k, r, fails = tp_failures();
	int32_t x;

	init = NULL;
	TP_CHECK_OK(rcx_allreduce_init(RCX_IN_PLACE, sum, COUNT, RCX_INT64,
				       RCX_SUM, g, NULL, &init));
	c[0] = bind(init);
	init = NULL;
	TP_CHECK_OK(rcx_allreduce_init(dsend, dmax, COUNT, RCX_DOUBLE, RCX_MAX,
				       g, NULL, &init));
	c[1] = bind(init);
	init = NULL;
	TP_CHECK_OK(rcx_allreduce_init(isend, imin, COUNT, RCX_INT32, RCX_MIN,
				       g, NULL, &init));
	c[2] = bind(init);
	init = NULL;
	TP_CHECK_OK(rcx_allreduce_init(xsend, xr, COUNT, RCX_INT32, RCX_BXOR, g,
				       NULL, &init));
	c[3] = bind(init);
	for (k = 0; k < 4; k++)
		if (!TP_CHECK(c[k]))
			return;
	/* ITERS starts in all, the four taking turns */
	for (i = 0; i < ITERS && tp_failures() == fails; i++) {
		k = i % 4;
		if (k == 0) {
			check_sum(c[0], sum, COUNT, i);
			continue;
		}
		for (j = 0; j < COUNT; j++) {
			/* the extreme comes from a rank that moves */
			dsend[j] = (rank == (i + j) % size ? 1e6 : 0) + i + j;
			isend[j] = (rank == (i + j) % size ? -1000 : 0) - i;
			xsend[j] = (int32_t)((rank + 1) * 0x9e3779b1u ^ i ^ j);
		}
		if (!start_wait(c[k]))
			break;
		for (j = 0; j < COUNT; j++) {
			for (x = 0, r = 0; r < size; r++)
				x ^= (int32_t)((r + 1) * 0x9e3779b1u ^ i ^ j);
			if (k == 1)
				TP_CHECK(dmax[j] == 1e6 + i + j);
			else if (k == 2)
				TP_CHECK_EQ(imin[j], -1000 - i);
			else
				TP_CHECK_EQ(xr[j], x);
		}
	}
	TP_CHECK_OK(rcx_bind_free(c, 4));
	unaligned_sum();
}

/* int64 SUM to each root in turn, not in place and in place */
static void sc_reduce(void)
{
	int64_t send[COUNT] = { 0 }, recv[COUNT] = { 0 }, want;
	struct rcx_req *init, *c[2] = { NULL, NULL };
	int i, j, k, bad = 0;

	for (k = 0; k < 2; k++) {
		init = NULL;
		TP_CHECK_OK(rcx_reduce_init(k ? RCX_IN_PLACE : send, recv,
					    COUNT, RCX_INT64, RCX_SUM,
					    k ? size - 1 : 0, g, NULL, &init));
		c[k] = bind(init);
		if (!c[k])
			return;
	}
	for (i = 0; i < ITERS && !bad; i++) {
		k = i % 2;
		for (j = 0; j < COUNT; j++) {
			send[j] = (int64_t)(rank + 1) * (i + 1) + j;
			recv[j] = k ? send[j] : -1;
		}
		bad = !start_wait(c[k]);
		if (rank != (k ? size - 1 : 0))
			continue;
		for (j = 0; j < COUNT && !bad; j++) {
			want = (int64_t)(i + 1) * size * (size + 1) / 2 +
			       (int64_t)size * j;
			bad = !TP_CHECK_EQ(recv[j], want);
		}
	}
	TP_CHECK_OK(rcx_bind_free(c, 2));
}

/* int32 blocks of COUNT from every rank, not in place */
static int32_t gval(int r, int i, int j)
{
	return (int32_t)(r * 7919 + i * 31 + j);
}

static void sc_allgather(void)
{
	int32_t mine[COUNT], *all = calloc((size_t)size * COUNT, 4);
	struct rcx_req *init = NULL, *c;
	int i, j, r, bad = 0;

	if (!TP_CHECK(all))
		return;
	TP_CHECK_OK(rcx_allgather_init(mine, all, COUNT, RCX_INT32, g, NULL,
				       &init));
	c = bind(init);
	for (i = 0; c && i < ITERS && !bad; i++) {
		for (j = 0; j < COUNT; j++)
			mine[j] = gval(rank, i, j);
		for (j = 0; j < size * COUNT; j++)
			all[j] = -1;
		bad = !start_wait(c);
		for (r = 0; r < size && !bad; r++)
			for (j = 0; j < COUNT && !bad; j++)
				bad = !TP_CHECK_EQ(all[r * COUNT + j],
						   gval(r, i, j));
	}
	if (c)
		TP_CHECK_OK(rcx_bind_free(&c, 1));
	free(all);
}

/* rank r's block for rank t at start i */
static int64_t aval(int r, int t, int i, int j)
{
	return (int64_t)r * 1000000 + t * 1000 + i * 7 + j;
}

/* int64 blocks of COUNT, not in place and in place, taking turns */
static void sc_alltoall(void)
{
	size_t n = (size_t)size * COUNT;
	int64_t *snd = calloc(n, 8), *rcv = calloc(n, 8), *ip = calloc(n, 8);
	struct rcx_req *init, *c[2] = { NULL, NULL };
	int i, j, t, k, bad = 0;

	if (!TP_CHECK(snd && rcv && ip))
		goto out;
	for (k = 0; k < 2; k++) {
		init = NULL;
		TP_CHECK_OK(rcx_alltoall_init(k ? RCX_IN_PLACE : snd,
					      k ? ip : rcv, COUNT, RCX_INT64, g,
					      NULL, &init));
		c[k] = bind(init);
		if (!c[k])
			goto out;
	}
	for (i = 0; i < ITERS && !bad; i++) {
		int64_t *in = i % 2 ? ip : snd, *out = i % 2 ? ip : rcv;

		for (t = 0; t < size; t++)
			for (j = 0; j < COUNT; j++) {
				in[t * COUNT + j] = aval(rank, t, i, j);
				if (out != in)
					out[t * COUNT + j] = -1;
			}
		bad = !start_wait(c[i % 2]);
		for (t = 0; t < size && !bad; t++)
			for (j = 0; j < COUNT && !bad; j++)
				bad = !TP_CHECK_EQ(out[t * COUNT + j],
						   aval(t, rank, i, j));
	}
out:
	for (k = 0; k < 2; k++)
		if (c[k])
			TP_CHECK_OK(rcx_bind_free(&c[k], 1));
	free(snd);
	free(rcv);
	free(ip);
}

/* an allreduce bound with schedule sched (NULL: the default) */
static struct rcx_req *allreduce_sched(const void *sbuf, void *rbuf,
				       size_t count, int dtype, int op,
				       const char *sched)
{
	struct rcx_req *init = NULL, *c = NULL;
	struct rcx_info *info = NULL;

	if (!TP_CHECK_OK(rcx_allreduce_init(sbuf, rbuf, count, dtype, op, g,
					    NULL, &init)))
		return NULL;
	if (sched &&
	    (!TP_CHECK_OK(rcx_info_create(&info)) ||
	     !TP_CHECK_OK(rcx_info_set(info, RCX_BCOLL_SCHEDULE, sched))))
		sched = NULL;
	if (!TP_CHECK_OK(rcx_bind_coll(init, info, &c)))
		c = NULL;
	rcx_info_free(&info);
	TP_CHECK_OK(rcx_req_free(&init));
	return c;
}

/*
 * Each allreduce schedule, forced, on counts that do and do not divide
 * into the group's segments (and 64 KiB and up, where the default is
 * the ring): the same results as the default's, exactly (integer SUM,
 * double MAX).
 */
static void sc_sched(void)
{
	static const char *const sched[] = { NULL, "recursive_doubling", "tree",
					     "ring" };
	static const size_t counts[] = { 7, 64, 9001 };
	int64_t *buf = malloc(9001 * 8);
	double *dsend = malloc(9001 * 8), *dmax = malloc(9001 * 8);
	struct rcx_req *c[2];
	size_t ci;
	int k, i, bad = 0;

	if (!TP_CHECK(buf && dsend && dmax))
		goto out;
	for (ci = 0; ci < sizeof(counts) / sizeof(counts[0]) && !bad; ci++)
		for (k = 0; k < 4 && !bad; k++) {
			size_t n = counts[ci], j;

			c[0] = allreduce_sched(RCX_IN_PLACE, buf, n, RCX_INT64,
					       RCX_SUM, sched[k]);
			c[1] = allreduce_sched(dsend, dmax, n, RCX_DOUBLE,
					       RCX_MAX, sched[k]);
			if (!TP_CHECK(c[0] && c[1]))
				break;
			for (i = 0; i < sched_iters && !bad; i++) {
				check_sum(c[0], buf, (int)n, i);
				for (j = 0; j < n; j++)
					dsend[j] = rank == (int)((j + i) % size)
							   ? 1e6 + j
							   : (double)i;
				bad = !start_wait(c[1]);
				for (j = 0; j < n && !bad; j++)
					bad = !TP_CHECK(dmax[j] == 1e6 + j);
			}
			TP_CHECK_OK(rcx_bind_free(c, 2));
		}
out:
	free(buf);
	free(dsend);
	free(dmax);
}

/* 1 MiB in place, a few times */
static void sc_big(void)
{
	int64_t *buf = malloc(BIG * sizeof(*buf));
	struct rcx_req *init = NULL, *c;
	int i;

	if (!TP_CHECK(buf))
		return;
	TP_CHECK_OK(rcx_allreduce_init(RCX_IN_PLACE, buf, BIG, RCX_INT64,
				       RCX_SUM, g, NULL, &init));
	c = bind(init);
	for (i = 0; c && i < big_iters; i++)
		check_sum(c, buf, BIG, i);
	if (c)
		TP_CHECK_OK(rcx_bind_free(&c, 1));
	free(buf);
}

/* a schedule that is unknown, or not the collective's, is refused */
static void misuse_sched(void)
{
	struct rcx_req *init = NULL, *c = NULL;
	struct rcx_info *info = NULL;

	if (!TP_CHECK_OK(rcx_info_create(&info)) ||
	    !TP_CHECK_OK(rcx_barrier_init(g, NULL, &init)))
		return;
	TP_CHECK_OK(rcx_info_set(info, RCX_BCOLL_SCHEDULE, "butterfly"));
	TP_CHECK_EQ(rcx_bind_coll(init, info, &c), -EINVAL);
	TP_CHECK_OK(rcx_info_set(info, RCX_BCOLL_SCHEDULE, "ring"));
	TP_CHECK_EQ(rcx_bind_coll(init, info, &c), -EINVAL);
	TP_CHECK(c == NULL);
	rcx_info_free(&info);
	TP_CHECK_OK(rcx_req_free(&init));
}

/* bad input returns a named error and changes nothing */
static void sc_misuse(void)
{
	int64_t a[2] = { 0, 0 }, b2[2];
	struct rcx_req *init = NULL, *c = NULL, *keep;

	TP_CHECK_EQ(
		rcx_allreduce_init(a, a, 2, RCX_INT64, RCX_SUM, g, NULL, &init),
		-EINVAL);
	TP_CHECK_EQ(rcx_allreduce_init(a, b2, 2, RCX_DOUBLE, RCX_BAND, g, NULL,
				       &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_allreduce_init(a, b2, 2, 77, RCX_SUM, g, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_allreduce_init(a, b2, 0, RCX_INT64, RCX_SUM, g, NULL,
				       &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_allreduce_init(a, b2, 2, RCX_INT64, RCX_REPLACE, g,
				       NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_bcast_init(a, 2, RCX_INT64, size, g, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_bcast_init(a, 2, RCX_INT64, -1, g, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_allgather_init(NULL, b2, 1, RCX_INT64, g, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_allgather_init(a, b2, 1, 0, g, NULL, &init), -EINVAL);
	TP_CHECK_EQ(rcx_reduce_init(a, b2, 2, RCX_INT64, RCX_SUM, size, g, NULL,
				    &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_barrier_init(NULL, NULL, &init), -EINVAL);
	TP_CHECK_EQ(rcx_alltoall_init(a, a, 1, RCX_INT64, g, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_alltoall_init(NULL, b2, 1, RCX_INT64, g, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_alltoall_init(a, NULL, 1, RCX_INT64, g, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_alltoall_init(a, b2, 0, RCX_INT64, g, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_alltoall_init(a, b2, 1, 77, g, NULL, &init), -EINVAL);
	TP_CHECK_EQ(rcx_alltoall_init(a, b2, 1, RCX_INT64, NULL, NULL, &init),
		    -EINVAL);
	TP_CHECK_EQ(rcx_alltoall_init(a, b2, 1, RCX_INT64, g, NULL, NULL),
		    -EINVAL);
	TP_CHECK(init == NULL);
	misuse_sched();
	TP_CHECK_EQ(rcx_bind_coll(NULL, NULL, &c), -EINVAL);
	TP_CHECK_OK(rcx_barrier_init(g, NULL, &init));
	/* an init request is not started itself */
	TP_CHECK_EQ(rcx_start(init), -EOPNOTSUPP);
	TP_CHECK_EQ(rcx_bind_coll(init, NULL, NULL), -EINVAL);
	TP_CHECK_OK(rcx_bind_coll(init, NULL, &c));
	TP_CHECK_OK(rcx_req_free(&init));
	/* not an init request */
	keep = c;
	TP_CHECK_EQ(rcx_bind_coll(c, NULL, &init), -EINVAL);
	/* bound collectives end with rcx_bind_free */
	TP_CHECK_EQ(rcx_req_free(&c), -EINVAL);
	TP_CHECK(c == keep);
	TP_CHECK_OK(rcx_start(c));
	TP_CHECK_EQ(rcx_start(c), -EBUSY);
	TP_CHECK_EQ(rcx_bind_free(&c, 1), -EBUSY);
	TP_CHECK_OK(rcx_wait(&c, NULL));
	TP_CHECK(c == keep);
	TP_CHECK_OK(rcx_bind_free(&c, 1));
	TP_CHECK(c == NULL);
}

static void cont_cb(struct rcx_status *st, void *arg)
{
	int *runs = arg;

	TP_CHECK_OK(st->error);
	(*runs)++;
}

/* a continuation on each start, run when the collective completes */
static void sc_cont(void)
{
	int64_t buf[COUNT];
	struct rcx_req *init = NULL, *c, *r, *cr = NULL;
	struct rcx_status st;
	int i, runs = 0;

	TP_CHECK_OK(rcx_allreduce_init(RCX_IN_PLACE, buf, COUNT, RCX_INT64,
				       RCX_SUM, g, NULL, &init));
	c = bind(init);
	if (!c || !TP_CHECK_OK(rcx_continue_init(ctx, NULL, &cr)))
		return;
	for (i = 0; i < cont_iters; i++) {
		int j;

		for (j = 0; j < COUNT; j++)
			buf[j] = (int64_t)(rank + 1) * (i + 1) + j;
		if (!TP_CHECK_OK(rcx_start(c)))
			break;
		r = c;
		if (!TP_CHECK_OK(
			    rcx_continue(&r, cont_cb, &runs, 0, &st, cr)) ||
		    !TP_CHECK_OK(rcx_wait(&cr, RCX_STATUS_IGNORE)))
			break;
		if (!TP_CHECK_EQ(runs, i + 1) ||
		    !TP_CHECK_EQ(buf[COUNT - 1],
				 (int64_t)(i + 1) * size * (size + 1) / 2 +
					 (int64_t)size * (COUNT - 1)))
			break;
	}
	TP_CHECK_OK(rcx_req_free(&cr));
	TP_CHECK_OK(rcx_bind_free(&c, 1));
}

/* --ft: the in-place allreduce of COUNT int64 of the ranks on grp */
static struct rcx_req *ft_allreduce(struct rcx_group *grp, int64_t *buf)
{
	struct rcx_req *init = NULL;

	TP_CHECK_OK(rcx_allreduce_init(RCX_IN_PLACE, buf, COUNT, RCX_INT64,
				       RCX_SUM, grp, NULL, &init));
	return bind(init);
}

/* ... its start i: each rank's data, then start and wait */
static int ft_start(struct rcx_req *c, int64_t *buf, int i)
{
	int j, ret;

	for (j = 0; j < COUNT; j++)
		buf[j] = rank + i + j;
	ret = rcx_start(c);
	return ret ? ret : rcx_wait(&c, NULL);
}

/*
 * --ft: every rank of grp loops an allreduce; the world's last rank
 * kills itself in the middle of the stream. Every survivor's collective
 * ends with RCX_ERR_PROC_FAILED (a hang is the test's timeout) and frees.
 */
static void kill_loop(struct rcx_group *grp, int at, int late_us)
{
	struct rcx_stats s0 = { .size = sizeof(s0) },
			 s1 = { .size = sizeof(s1) };
	int64_t buf[COUNT];
	struct rcx_req *c = ft_allreduce(grp, buf);
	int i, ret = 0;

	if (!c)
		return;
	for (i = 0; i < 1000000 && !ret; i++) {
		if (i == at)
			TP_CHECK_OK(rcx_ctx_stats(ctx, &s0));
		if (rank == size - 1 && i == at) {
			if (late_us)
				usleep((useconds_t)late_us);
			fflush(NULL);
			raise(SIGKILL);
		}
		ret = ft_start(c, buf, i);
	}
	TP_CHECK_EQ(ret, RCX_ERR_PROC_FAILED);
	/* late: the survivors were asleep in the start it never made */
	if (late_us) {
		TP_CHECK_OK(rcx_ctx_stats(ctx, &s1));
		TP_CHECK_EQ(i, at + 1);
		if (!TP_CHECK(s1.empty_polls - s0.empty_polls < WAKE_POLLS))
			fprintf(stderr,
				"rank %d polled %llu times in the start "
				"its peer died in\n",
				rank,
				(unsigned long long)(s1.empty_polls -
						     s0.empty_polls));
	} else
		TP_CHECK(i > at * 4 / 5);
	/* broken for good: later starts say so at once */
	TP_CHECK_EQ(rcx_start(c), RCX_ERR_PROC_FAILED);
	TP_CHECK_OK(rcx_bind_free(&c, 1));
}

/*
 * --ft, 2 ranks, on the fault provider: rank 0's write of the last start
 * lands (rank 1's start completes) but its completion is held back, as
 * one not polled yet (on verbs: the acknowledgement not in yet). Rank
 * 0's start completes all the same, with the sum: its result is known
 * once rank 1's data is in, the write's completion is collected later
 * (before the fix it waited for it: a hang, the test's timeout). Then
 * rank 1 dies, once rank 0 is past that start (a group barrier: a
 * start's own writes may still be in flight when it completes). Rank
 * 0's next start waits for the held completion before it writes again
 * and ends with RCX_ERR_PROC_FAILED, and the held completion comes
 * while its free reaps the failed channels: of a channel freed with its
 * WR in flight, it must be taken quietly. It must come (else this
 * proves nothing).
 */
static void sc_late(void)
{
	int64_t buf[COUNT];
	struct rcx_req *c = ft_allreduce(g, buf);
	size_t held = 0, back = 0;
	int i, j, ret = 0;

	if (!c)
		return;
	for (i = 0; i <= LATE_STARTS && !ret; i++) {
		if (rank == 0 && i == LATE_STARTS)
			rcx__fault_hold_next(RCX_OP_WRITE_IMM);
		ret = ft_start(c, buf, i);
		for (j = 0; !ret && j < COUNT; j++)
			if (!TP_CHECK_EQ(buf[j], (int64_t)size * (i + j) +
							 size * (size - 1) / 2))
				break;
	}
	TP_CHECK_OK(ret);
	ret = rcx_group_barrier(g);
	if (rank == 1) {
		TP_CHECK_OK(ret);
		fflush(NULL);
		raise(SIGKILL);
	}
	/* rank 0's barrier may end either way: rank 1 dies right after its
	 * own completed */
	TP_CHECK_EQ(ft_start(c, buf, i), RCX_ERR_PROC_FAILED);
	rcx__fault_hold_counts(&held, &back);
	TP_CHECK_EQ(held, 1);
	TP_CHECK_EQ(back, 0);
	TP_CHECK_OK(rcx_bind_free(&c, 1));
	rcx__fault_hold_counts(&held, &back);
	TP_CHECK_EQ(back, 1);
}

/*
 * hold: what the ranks tell each other outside the library, in a page
 * they all map: rank 0's result of the start is known (its sum is in
 * its buffer), and how many other ranks' starts completed
 */
struct hold_page {
	atomic_int known;
	atomic_int done;
};

/* hold: rank 1 keeps its next credit write back until it lets it go */
static const struct rcx_provider_ops *hold_real;
static struct rcx_provider_ops hold_ops;
static bool hold_armed;
static struct rcx_ep *held_ep;
static struct rcx_pwr *held_pwr;

static int hold_pwr_post(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	if (hold_armed && n == 1) {
		hold_armed = false;
		held_ep = ep;
		held_pwr = pwr[0];
		return 0;
	}
	return hold_real->pwr_post(ep, pwr, n);
}

/* a page of the job's ranks, named by rank 0's pid; NULL: failed */
static struct hold_page *hold_page_map(void)
{
	struct hold_page *p = MAP_FAILED;
	long long pid = getpid();
	char name[64];
	int fd;

	if (!TP_CHECK_OK(rcx_group_bcast(g, &pid, sizeof(pid), 0)))
		return NULL;
	snprintf(name, sizeof(name), "/rcx-test-bcoll-hold-%lld", pid);
	fd = shm_open(name, O_CREAT | O_RDWR, 0600);
	if (TP_CHECK(fd >= 0)) {
		if (TP_CHECK_OK(ftruncate(fd, sizeof(*p))))
			p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, 0);
		close(fd);
	}
	TP_CHECK_OK(rcx_group_barrier(g));
	if (rank == 0)
		shm_unlink(name);
	return TP_CHECK(p != MAP_FAILED) ? p : NULL;
}

/* in-place int64 SUM of check_sum: is start i's result in buf? */
static bool sum_in(const int64_t *buf, int i)
{
	int j;

	for (j = 0; j < COUNT; j++)
		if (buf[j] != (int64_t)(i + 1) * size * (size + 1) / 2 +
				      (int64_t)size * j)
			return false;
	return true;
}

/*
 * Start hold_at() (i: its index) of the in-place allreduce (its sends lazy: they read
 * stages of the collective's own), on 2 and 4 ranks. Rank 1 holds back
 * the write of its credit to rank 0 (its first post in that start, the
 * receives' credits going first): rank 0's write to rank 1 waits for that
 * credit, unposted, while rank 1's data, and so rank 0's result, come.
 * Rank 0 tests its start until it completes, saying in the page once its
 * sum is in (then rank 1 lets its credit go); after its start completed
 * it makes no library call until every other rank's start completed (or
 * HOLD_WAIT_MS passed: a failure). A start that completed with its write
 * still unposted (before the fix) left the write to rank 0's next call,
 * and rank 1's start waiting for it.
 */
static void hold_start(struct rcx_req *c, int64_t *buf, struct hold_page *p,
		       int i)
{
	struct rcx_req *r = c;
	int j, flag = 0, waited = 0;
	bool held = false;

	for (j = 0; j < COUNT; j++)
		buf[j] = (int64_t)(rank + 1) * (i + 1) + j;
	hold_armed = rank == 1;
	if (!TP_CHECK_OK(rcx_start(c)))
		return;
	/* what it held must be the credit (8 bytes) */
	if (rank == 1 && TP_CHECK(held_pwr))
		TP_CHECK_EQ(*held_pwr->length, 8);
	while (!flag && TP_CHECK_OK(rcx_test(&r, &flag, NULL))) {
		if (rank == 0 && !flag && !held && sum_in(buf, i)) {
			held = true;
			atomic_store(&p->known, 1);
		}
		if (rank == 1 && held_pwr && atomic_load(&p->known)) {
			TP_CHECK_OK(hold_real->pwr_post(held_ep, &held_pwr, 1));
			held_pwr = NULL;
		}
	}
	if (rank != 0) {
		atomic_fetch_add(&p->done, 1);
		TP_CHECK(sum_in(buf, i));
		return;
	}
	atomic_store(&p->known, 1);
	while (atomic_load(&p->done) < size - 1 && waited++ < HOLD_WAIT_MS)
		usleep(1000);
	if (!TP_CHECK_EQ(atomic_load(&p->done), size - 1))
		fprintf(stderr,
			"rank 0's start completed with a write unposted: "
			"the others' starts waited for its next call\n");
	/* the start waited for its write: its sum was in before */
	TP_CHECK(held);
	TP_CHECK(sum_in(buf, i));
}

/*
 * hold: the start whose writes need their readers' second credit: a
 * reader's credit goes with its starts 1, 1 + slots, ... (the slots a
 * channel of the small allreduce turns through, lib/bcoll: sixteen where
 * the provider's write wakes its reader, else four)
 */
static int hold_at(void)
{
	return 1 + (ctx->ops->caps & RCX_PROV_WRITE_WAKES ? BC_NSLOTS_WAKES
							  : BC_NSLOTS);
}

static void sc_hold(void)
{
	struct hold_page *p = hold_page_map();
	int64_t buf[COUNT];
	struct rcx_req *c;
	int i, at = hold_at();

	if (!p)
		return;
	if (rank == 1) {
		hold_real = ctx->ops;
		hold_ops = *hold_real;
		hold_ops.pwr_post = hold_pwr_post;
		/* the channels take their post at the bind */
		ctx->ops = &hold_ops;
	}
	c = ft_allreduce(g, buf);
	/* every start, after a failure too: the others make theirs */
	for (i = 0; c && i < at + 3; i++) {
		if (i + 1 == at)
			hold_start(c, buf, p, i);
		else
			check_sum(c, buf, COUNT, i);
	}
	if (c)
		TP_CHECK_OK(rcx_bind_free(&c, 1));
	if (rank == 1)
		ctx->ops = hold_real;
	munmap(p, sizeof(*p));
}

/* credits: the 8-byte posts (a reader's credit writes) counted */
static unsigned long credit_posts;

static int count_pwr_post(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	int i;

	for (i = 0; i < n; i++)
		credit_posts += *pwr[i]->length == 8;
	return hold_real->pwr_post(ep, pwr, n);
}

/*
 * The small allreduce (in place, COUNT int64: its receives land in
 * slots that turn), on 2 and 4 ranks, the data changing at each start:
 * a reader writes its credit once in as many starts as its channels
 * have slots (hold_at() - 1: sixteen where the provider's write wakes its
 * reader), at starts 1, 1 + slots, ... of each of its log2(size)
 * receiving channels. Four slots on shm wrote four times as many.
 */
static void sc_credits(void)
{
	int64_t buf[COUNT];
	struct rcx_req *c;
	int i, slots = hold_at() - 1, starts = 4 * slots, steps = 0;

	while ((1 << steps) < size)
		steps++;
	hold_real = ctx->ops;
	hold_ops = *hold_real;
	hold_ops.pwr_post = count_pwr_post;
	/* the channels take their post at the bind */
	ctx->ops = &hold_ops;
	c = ft_allreduce(g, buf);
	credit_posts = 0;
	for (i = 0; c && i < starts; i++)
		check_sum(c, buf, COUNT, i);
	TP_CHECK_EQ(credit_posts, (unsigned long)(steps * starts / slots));
	if (c)
		TP_CHECK_OK(rcx_bind_free(&c, 1));
	ctx->ops = hold_real;
}

static void sc_kill(void)
{
	kill_loop(g, kill_at, 0);
}

/*
 * Run with RCX_SPIN_US=0 (the test sets it): the last rank dies
 * WAKE_LATE_US into a start it never makes, while the others sleep in
 * their waits for its data (on shm its exit wakes them through its
 * pidfd, on verbs through the connection's end, and the launcher's
 * notice wakes either). Each survivor's wait must end with
 * RCX_ERR_PROC_FAILED in that very start after a few polls (on verbs
 * a write waiting for the dead rank's credit sleeps too: the credit is a
 * WRITE with immediate, lib/chan/chan.c): a wake-up
 * that does not take what woke it (the launcher's notice is read once
 * in 100 ms, fail.c) wakes again at once, and polls thousands of times
 * until it is taken; a wait that slept on after the death (taken in the
 * pass before the sleep) is the test's timeout.
 */
static void sc_kill_asleep(void)
{
	kill_loop(g, KILL_ASLEEP_AT, WAKE_LATE_US);
}

/*
 * The same on the sub-group of every rank but 0 (the world's failure
 * reaches the sub-group's collective, under the member's rank there);
 * rank 0 stays out.
 */
static void sc_kill_sub(void)
{
	const int out = 0;
	struct rcx_group *sub = NULL;

	if (!TP_CHECK_OK(rcx_group_excl(g, 1, &out, &sub)))
		return;
	if (rank != 0)
		kill_loop(sub, kill_at, 0);
	if (sub)
		TP_CHECK_OK(rcx_group_free(&sub));
}

static const struct {
	const char *name;
	void (*fn)(void);
	bool ft;	      /* a rank dies: no final barrier */
	const char *provider; /* NULL: RCX_PROVIDER's */
} scenarios[] = {
	{ "barrier", sc_barrier, false, NULL },
	{ "bcast", sc_bcast, false, NULL },
	{ "allreduce", sc_allreduce, false, NULL },
	{ "big", sc_big, false, NULL },
	{ "misuse", sc_misuse, false, NULL },
	{ "cont", sc_cont, false, NULL },
	{ "allgather", sc_allgather, false, NULL },
	{ "reduce", sc_reduce, false, NULL },
	{ "kill", sc_kill, true, NULL },
	{ "kill_sub", sc_kill_sub, true, NULL },
	{ "kill_asleep", sc_kill_asleep, true, NULL },
	{ "late", sc_late, true, "fault" },
	{ "wake", sc_wake, false, NULL },
	{ "alltoall", sc_alltoall, false, NULL },
	{ "sched", sc_sched, false, NULL },
	{ "hold", sc_hold, false, NULL },
	{ "one_cpu", sc_one_cpu, false, "shm" },
	{ "credits", sc_credits, false, NULL },
};

/*
 * The default run on an RDMA device: no TEST_BCOLL_ITERS, and a
 * provider that is not shared memory only (shm, auto with RCX_DEVICE
 * shm, the fault provider over either). The peers and the suite decide
 * alike, from the same environment.
 */
static bool quick(void)
{
	const char *p = tu_provider(), *d = getenv("RCX_DEVICE");
	const char *lower = getenv("RCX_FAULT_LOWER");

	if (getenv("TEST_BCOLL_ITERS"))
		return false;
	if (!strcmp(p, "fault"))
		p = lower && *lower ? lower : "auto";
	return strcmp(p, "shm") &&
	       !(!strcmp(p, "auto") && d && !strcmp(d, "shm"));
}

static int peer_main(int argc, char **argv)
{
	struct rcx_ctx_attr a = { 0 };
	size_t i, n = sizeof(scenarios) / sizeof(scenarios[0]);

	if (argc < 1)
		return 2;
	if (getenv("TEST_BCOLL_ITERS"))
		iters = atoi(getenv("TEST_BCOLL_ITERS"));
	if (quick()) {
		iters = cont_iters = kill_at = ITERS_QUICK;
		big_iters = sched_iters = FEW_QUICK;
	}
	for (i = 0; i < n && strcmp(scenarios[i].name, argv[0]); i++)
		;
	if (i == n) {
		fprintf(stderr, "bcoll peer: unknown scenario %s\n", argv[0]);
		return 2;
	}
	a.provider = scenarios[i].provider;
	if (!tp_world(&a, &ctx, &g, &rank, &size))
		return tp_exit();
	scenarios[i].fn();
	if (!scenarios[i].ft)
		TP_CHECK_OK(rcx_group_barrier(g));
	TP_CHECK_OK(rcx_group_free(&g));
	TP_CHECK_OK(rcx_ctx_destroy(ctx));
	return tp_exit();
}

/*
 * The scenario on 2, 3 and 4 ranks; in the quick run on a device on
 * dev_ranks only (0: all three): between them the collectives cover
 * each of the three there too (2: big, alltoall, late, wake, misuse;
 * 3: barrier, bcast, reduce, sched, kill; 4: allreduce, allgather,
 * cont, kill_sub).
 */
static void run234(const char *sc, int timeout, int dev_ranks)
{
	int n;

	for (n = 2; n <= 4; n++)
		if (!dev_ranks || !quick() || n == dev_ranks)
			CU_ASSERT_EQUAL(tu_mp_run(n, "bcoll", sc, timeout), 0);
}

static void test_barrier(void)
{
	run234("barrier", 300, 3);
}

static void test_bcast(void)
{
	run234("bcast", 300, 3);
}

/* quick on a device: 4 ranks (big and late run allreduces on 2 ranks
 * there, kill and sched on 3) */
static void test_allreduce(void)
{
	run234("allreduce", 600, 4);
}

static void test_allgather(void)
{
	run234("allgather", 600, 4);
}

static void test_reduce(void)
{
	run234("reduce", 600, 3);
}

static void test_big(void)
{
	run234("big", 300, 2);
}

static void test_misuse(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "bcoll", "misuse", 120), 0);
}

static void test_cont(void)
{
	run234("cont", 300, 4);
}

/* on 3 and 4 ranks (quick on a device: 3; the sub-group's test has 3 of
 * 4) */
static void test_kill(void)
{
	int n;

	setenv("RCX_RUN_FT", "1", 1);
	for (n = 3; n <= (quick() ? 3 : 4); n++)
		CU_ASSERT_EQUAL(tu_mp_run(n, "bcoll", "kill", 180), 0);
	unsetenv("RCX_RUN_FT");
}

/* 2, 3 and 4 ranks, three times each (quick on a device: once on 3) */
static void test_kill_asleep(void)
{
	int n, k;

	setenv("RCX_RUN_FT", "1", 1);
	setenv("RCX_SPIN_US", "0", 1);
	for (n = quick() ? 3 : 2; n <= (quick() ? 3 : 4); n++)
		for (k = 0; k < (quick() ? 1 : 3); k++)
			CU_ASSERT_EQUAL(
				tu_mp_run(n, "bcoll", "kill_asleep", 120), 0);
	unsetenv("RCX_SPIN_US");
	unsetenv("RCX_RUN_FT");
}

static void test_late(void)
{
	setenv("RCX_RUN_FT", "1", 1);
	/* nothing inline: a sender's start waits for its WRITE_IMM's
	 * completion (an inline one completes at the post, unsignaled) */
	setenv("RCX_INLINE", "0", 1);
	CU_ASSERT_EQUAL(tu_mp_run(2, "bcoll", "late", 120), 0);
	unsetenv("RCX_INLINE");
	unsetenv("RCX_RUN_FT");
}

/* 4 ranks: a sub-group of 3 (not a power of two) and one of 2 (quick on
 * a device: 4 only) */
static void test_kill_sub(void)
{
	int n;

	setenv("RCX_RUN_FT", "1", 1);
	for (n = quick() ? 4 : 3; n <= 4; n++)
		CU_ASSERT_EQUAL(tu_mp_run(n, "bcoll", "kill_sub", 180), 0);
	unsetenv("RCX_RUN_FT");
}

static void test_alltoall(void)
{
	run234("alltoall", 600, 2);
}

static void test_sched(void)
{
	run234("sched", 600, 3);
}

static void test_wake(void)
{
	setenv("RCX_SPIN_US", "0", 1);
	CU_ASSERT_EQUAL(tu_mp_run(2, "bcoll", "wake", 120), 0);
	unsetenv("RCX_SPIN_US");
}

/* on shm whatever the entry: the yield to a peer on the same CPU is the
 * shm provider's (on verbs, RCX_YIELD's) */
static void test_one_cpu(void)
{
	setenv("RCX_YIELD", "never", 1);
	setenv("RCX_SPIN_US", "10000000", 1);
	CU_ASSERT_EQUAL(tu_mp_run(2, "bcoll", "one_cpu", 120), 0);
	unsetenv("RCX_SPIN_US");
	unsetenv("RCX_YIELD");
}

/* 2 and 4 ranks (quick on a device: 2) */
static void test_hold(void)
{
	int n;

	for (n = 2; n <= (quick() ? 2 : 4); n += 2)
		CU_ASSERT_EQUAL(tu_mp_run(n, "bcoll", "hold", 120), 0);
}

/* 2 and 4 ranks: the small allreduce's slots turn over a power of two */
static void test_credits(void)
{
	int n;

	for (n = 2; n <= 4; n += 2)
		CU_ASSERT_EQUAL(tu_mp_run(n, "bcoll", "credits", 120), 0);
}

static const CU_TestInfo tests[] = {
	{ "barrier_10k", test_barrier },
	{ "bcast_two_roots_10k", test_bcast },
	{ "allreduce_types_ops_10k", test_allreduce },
	{ "allgather_ring_10k", test_allgather },
	{ "reduce_two_roots_10k", test_reduce },
	{ "allreduce_1mib", test_big },
	{ "misuse", test_misuse },
	{ "continuation_per_start", test_cont },
	{ "member_killed_mid_stream", test_kill },
	{ "sub_group_member_killed", test_kill_sub },
	{ "member_killed_while_others_sleep", test_kill_asleep },
	{ "freed_with_a_completion_late", test_late },
	{ "credit_wait_sleeps", test_wake },
	{ "alltoall_in_place_and_not_10k", test_alltoall },
	{ "allreduce_schedules_agree", test_sched },
	{ "start_waits_for_its_unposted_write", test_hold },
	{ "one_cpu_waits_yield_early", test_one_cpu },
	{ "credit_once_in_its_slots", test_credits },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_bcoll = { "bcoll", TU_DEVICE, NULL, NULL,
					 tests };
const struct tu_peer tu_peer_bcoll = { "bcoll", peer_main };
