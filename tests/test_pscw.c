/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * General active target synchronisation (rcx_win_post, start, complete,
 * wait, test) across processes (rcx-run, 2 to 4 ranks): put, get and
 * accumulates (NIC and software paths) in post/start epochs; an origin
 * with two targets and a target with two origins, many epochs in a row;
 * rcx_win_test polling; RCX_MODE_NOCHECK, alone and mixed with checked
 * epochs; rcx_win_order inside an access epoch; bad input and epoch
 * mixing; a rank killed in an epoch (rcx-run --ft); and MPICH's
 * test/mpi/rma pscw_ordering.c, putpscw1.c and accpscw1.c, written again
 * for rcx.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "lib/win/win_int.h"
#include "tu.h"
#include "tu_mp.h"

#define NSLOT 64 /* int64 slots of each rank's window */

static struct rcx_win *win_new(struct tp_job *j, int64_t **base)
{
	struct rcx_win *w = NULL;

	TP_CHECK_OK(
		rcx_win_allocate(j->g, NSLOT * 8, 8, NULL, (void **)base, &w));
	return w;
}

static int64_t val(int src, int dst, int i, int round)
{
	return (int64_t)src * 1000003 + dst * 10007 + i * 101 + round;
}

/* ---- put, get, accumulates: a ring, every rank origin and target */

static void sc_basic(struct tp_job *j)
{
	int right = (j->rank + 1) % j->size;
	int left = (j->rank + j->size - 1) % j->size;
	int64_t *base, src[8], got[8], one = 1;
	double d[4] = { 0.5, 1.5, 2.5, 3.5 }, *dd;
	struct rcx_win *w = win_new(j, &base);
	const char *paths = getenv("RCX_TEST_TWO_PATHS");
	int round, i;

	if (!w)
		return;
	/* the entries that set it: the right neighbour is reached through
	 * the NIC (puts, NIC atomics, complete's word) and shared memory
	 * (software accumulates), and complete's word waits for both */
	if (paths && *paths == '1' && !(w->nep && w->nep[right].ep))
		TP_FAIL("rank %d is reached through one path, not two", right);
	for (round = 0; round < 5; round++) {
		/* local stores before the post: the origin's get sees them */
		for (i = 0; i < 8; i++)
			base[32 + i] = val(j->rank, 0, i, round);
		TP_CHECK_OK(rcx_win_post(w, 1, &left, 0));
		TP_CHECK_OK(rcx_win_start(w, 1, &right, 0));
		for (i = 0; i < 8; i++)
			src[i] = val(j->rank, right, i, round);
		TP_CHECK_OK(rcx_put(w, src, sizeof(src), right, 0));
		/* NIC path (64-bit sum) and software path (double) */
		TP_CHECK_OK(rcx_accumulate(w, src, 8, RCX_INT64, right, 8,
					   RCX_SUM));
		TP_CHECK_OK(rcx_accumulate(w, &one, 1, RCX_INT64, right, 40,
					   RCX_SUM));
		TP_CHECK_OK(rcx_accumulate(w, d, 4, RCX_DOUBLE, right, 16,
					   RCX_SUM));
		TP_CHECK_OK(rcx_get(w, got, sizeof(got), right, 32));
		TP_CHECK_OK(rcx_win_complete(w));
		for (i = 0; i < 8; i++)
			TP_CHECK_EQ(got[i], val(right, 0, i, round));
		TP_CHECK_OK(rcx_win_wait(w));
		dd = (double *)&base[16];
		for (i = 0; i < 8; i++) {
			TP_CHECK_EQ(base[i], val(left, j->rank, i, round));
			/* sums over the rounds so far */
			TP_CHECK_EQ(base[8 + i],
				    (round + 1) * (int64_t)val(left, j->rank, i,
							       0) +
					    round * (round + 1) / 2);
		}
		TP_CHECK_EQ(base[40], round + 1);
		for (i = 0; i < 4; i++)
			TP_CHECK(dd[i] == (round + 1) * d[i]);
	}
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- rank 0 accesses 1 and 2; rank 1 is exposed to 0 and 2 */

/*
 * An access epoch of this rank to the n targets: its value into each
 * one's slot (the slot of rank 0's puts is 0, rank 2's is 2) and 1 added
 * to rank 1's word 4.
 */
static void two_access(struct rcx_win *w, int rank, int n, const int *t,
		       int round)
{
	int64_t v, one = 1;
	int i;

	TP_CHECK_OK(rcx_win_start(w, n, t, 0));
	for (i = 0; i < n; i++) {
		v = val(rank, t[i], 0, round);
		TP_CHECK_OK(rcx_put(w, &v, 8, t[i], (size_t)rank));
	}
	TP_CHECK_OK(rcx_accumulate(w, &one, 1, RCX_INT64, 1, 4, RCX_SUM));
	TP_CHECK_OK(rcx_win_complete(w));
}

static void sc_two(struct tp_job *j)
{
	static const int t0[] = { 1, 2 }, t2[] = { 1 }, o1[] = { 0, 2 },
			 o2[] = { 0 };
	struct rcx_win *w;
	int64_t *base;
	int round;

	if (!(w = win_new(j, &base)))
		return;
	for (round = 1; round <= 20; round++) {
		if (j->rank == 1)
			TP_CHECK_OK(rcx_win_post(w, 2, o1, 0));
		if (j->rank == 2)
			TP_CHECK_OK(rcx_win_post(w, 1, o2, 0));
		if (j->rank == 0)
			two_access(w, 0, 2, t0, round);
		if (j->rank == 2)
			two_access(w, 2, 1, t2, round);
		if (j->rank == 1) {
			TP_CHECK_OK(rcx_win_wait(w));
			TP_CHECK_EQ(base[0], val(0, 1, 0, round));
			TP_CHECK_EQ(base[2], val(2, 1, 0, round));
			TP_CHECK_EQ(base[4], 2 * round);
		}
		if (j->rank == 2) {
			TP_CHECK_OK(rcx_win_wait(w));
			TP_CHECK_EQ(base[0], val(0, 2, 0, round));
		}
	}
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- rcx_win_test polling at the target */

static void sc_poll(struct tp_job *j)
{
	int peer = 1 - j->rank, flag = -1, round;
	int64_t *base, v;
	struct rcx_win *w = win_new(j, &base);
	long polls;

	if (!w)
		return;
	for (round = 0; round < 10; round++) {
		if (j->rank == 0) {
			TP_CHECK_OK(rcx_win_post(w, 1, &peer, 0));
			/* the origin waits for this barrier: not done yet */
			TP_CHECK_OK(rcx_win_test(w, &flag));
			TP_CHECK_EQ(flag, 0);
			TP_CHECK_OK(rcx_group_barrier(j->g));
			polls = 0;
			do {
				flag = -1;
				TP_CHECK_OK(rcx_win_test(w, &flag));
				polls++;
			} while (flag == 0);
			TP_CHECK_EQ(flag, 1);
			TP_CHECK_EQ(base[round], val(1, 0, round, round));
			/* the epoch ended with the flag */
			TP_CHECK_EQ(rcx_win_test(w, &flag), RCX_ERR_EPOCH);
			TP_CHECK_EQ(rcx_win_wait(w), RCX_ERR_EPOCH);
			if (round == 0)
				printf("rank 0: %ld rcx_win_test calls\n",
				       polls);
		} else {
			TP_CHECK_OK(rcx_group_barrier(j->g));
			TP_CHECK_OK(rcx_win_start(w, 1, &peer, 0));
			v = val(1, 0, round, round);
			TP_CHECK_OK(rcx_put(w, &v, 8, peer, (size_t)round));
			TP_CHECK_OK(rcx_win_complete(w));
		}
	}
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- RCX_MODE_NOCHECK: starts that do not wait, mixed with some that do */

static void sc_nocheck(struct tp_job *j)
{
	int peer = 1 - j->rank, round, nc;
	int64_t *base, v;
	struct rcx_win *w = win_new(j, &base);

	if (!w)
		return;
	for (round = 0; round < 12; round++) {
		/* rounds 0, 1, 3, 4, ... assert NOCHECK; 2, 5, 8, ... not:
		 * the post of a checked round carries the count past the
		 * posts that wrote nothing */
		nc = round % 3 != 2 ? RCX_MODE_NOCHECK : 0;
		if (j->rank == 0) {
			TP_CHECK_OK(rcx_win_post(w, 1, &peer,
						 nc | RCX_MODE_NOSTORE));
			/* NOCHECK: the post is made before the start */
			TP_CHECK_OK(rcx_group_barrier(j->g));
			TP_CHECK_OK(rcx_win_wait(w));
			TP_CHECK_EQ(base[round], val(1, 0, round, 0));
		} else {
			TP_CHECK_OK(rcx_group_barrier(j->g));
			TP_CHECK_OK(rcx_win_start(w, 1, &peer, nc));
			v = val(1, 0, round, 0);
			TP_CHECK_OK(rcx_put(w, &v, 8, peer, (size_t)round));
			TP_CHECK_OK(rcx_win_complete(w));
		}
	}
	/* NOPUT: a post whose origins only read */
	base[40] = 4242;
	if (j->rank == 0)
		TP_CHECK_OK(rcx_win_post(w, 1, &peer, RCX_MODE_NOPUT));
	else
		TP_CHECK_OK(rcx_win_start(w, 1, &peer, 0));
	if (j->rank == 1) {
		TP_CHECK_OK(rcx_get(w, &v, 8, peer, 40));
		TP_CHECK_OK(rcx_win_complete(w));
		TP_CHECK_EQ(v, 4242);
	} else {
		TP_CHECK_OK(rcx_win_wait(w));
	}
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- rcx_win_order inside an access epoch */

static void sc_order(struct tp_job *j)
{
	int peer = 1 - j->rank, round;
	int64_t *base, v, old = -1, res = -1, res2 = -1, add = 5;
	struct rcx__win_stats st0, st1, st2;
	struct rcx_win *w = win_new(j, &base);

	if (!w)
		return;
	TP_CHECK_EQ(rcx_win_order(w, RCX_ORDER_ALL), RCX_ERR_EPOCH);
	for (round = 0; round < 10; round++) {
		base[0] = base[1] = base[2] = base[3] = 7;
		if (j->rank == 0) {
			TP_CHECK_OK(rcx_win_post(w, 1, &peer, 0));
			TP_CHECK_OK(rcx_win_wait(w));
			/* the later write of each pair is what stays */
			TP_CHECK_EQ(base[0], 200 + round);
			TP_CHECK_EQ(base[1], 300 + round);
			TP_CHECK_EQ(base[2], 400 + round);
			TP_CHECK_EQ(base[3], 12);
			continue;
		}
		TP_CHECK_OK(rcx_win_start(w, 1, &peer, 0));
		rcx__win_stats(w, &st0);
		/* put -> order -> put to the same word */
		v = 100 + round;
		TP_CHECK_OK(rcx_put(w, &v, 8, peer, 0));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
		v = 200 + round;
		TP_CHECK_OK(rcx_put(w, &v, 8, peer, 0));
		/* get -> order -> put: the get reads the value before */
		TP_CHECK_OK(rcx_get(w, &old, 8, peer, 1));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
		v = 300 + round;
		TP_CHECK_OK(rcx_put(w, &v, 8, peer, 1));
		/* fetch-and-add -> order -> put */
		TP_CHECK_OK(rcx_fetch_and_op(w, &add, &res, RCX_INT64, peer, 2,
					     RCX_SUM));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
		v = 400 + round;
		TP_CHECK_OK(rcx_put(w, &v, 8, peer, 2));
		rcx__win_stats(w, &st1);
		TP_CHECK_EQ(st1.orders - st0.orders, 3);
		/* an atomic last: complete's word must not pass it, so on a
		 * device that may reorder it goes with the fence indicator,
		 * or after a wait where fences may stall (RCX_ORDER_FENCE) */
		TP_CHECK_OK(rcx_fetch_and_op(w, &add, &res2, RCX_INT64, peer, 3,
					     RCX_SUM));
		TP_CHECK_OK(rcx_win_complete(w));
		rcx__win_stats(w, &st2);
		if (w->ctx->fence_wait && !w->ctx->info.ordered)
			TP_CHECK(st2.waits > st1.waits);
		else if (!w->ctx->info.ordered)
			TP_CHECK(st2.fences > st1.fences);
		TP_CHECK_EQ(old, 7);
		TP_CHECK_EQ(res, 7);
		TP_CHECK_EQ(res2, 7);
		TP_CHECK_EQ(rcx_win_order(w, RCX_ORDER_ALL), RCX_ERR_EPOCH);
	}
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- bad input: refused with a named error, nothing changed */

static void sc_bad(struct tp_job *j)
{
	int peer = 1 - j->rank, flag = 7;
	int both[2] = { 0, 1 }, dup[2] = { peer, peer }, out[1] = { 2 };
	int neg[1] = { -1 };
	struct rcx_req *r = NULL;
	int64_t *base, v = 1;
	struct rcx_win *w = win_new(j, &base);

	if (!w)
		return;
	/* no window */
	TP_CHECK_EQ(rcx_win_post(NULL, 1, &peer, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(NULL, 1, &peer, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_complete(NULL), -EINVAL);
	TP_CHECK_EQ(rcx_win_wait(NULL), -EINVAL);
	TP_CHECK_EQ(rcx_win_test(NULL, &flag), -EINVAL);
	/* asserts where MPI does not take them, and unknown bits */
	TP_CHECK_EQ(rcx_win_post(w, 1, &peer, RCX_MODE_NOPRECEDE), -EINVAL);
	TP_CHECK_EQ(rcx_win_post(w, 1, &peer, RCX_MODE_NOSUCCEED), -EINVAL);
	TP_CHECK_EQ(rcx_win_post(w, 1, &peer, 1 << 10), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(w, 1, &peer, RCX_MODE_NOSTORE), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(w, 1, &peer, RCX_MODE_NOPUT), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(w, 1, &peer, 1 << 10), -EINVAL);
	/* ranks out of range, given twice, counts, no list */
	TP_CHECK_EQ(rcx_win_post(w, 1, out, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_post(w, 1, neg, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_post(w, 2, dup, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_post(w, 3, both, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_post(w, -1, both, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_post(w, 1, NULL, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(w, 1, out, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(w, 1, neg, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(w, 2, dup, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(w, 3, both, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_start(w, 1, NULL, 0), -EINVAL);
	/* closing what is not open */
	TP_CHECK_EQ(rcx_win_complete(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_wait(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_test(w, &flag), RCX_ERR_EPOCH);
	TP_CHECK_EQ(flag, 7);
	/* none of that opened an epoch */
	TP_CHECK_EQ(rcx_put(w, &v, 8, peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_group_barrier(j->g));

	/* a good epoch: both ranks origin and target of each other */
	TP_CHECK_OK(rcx_win_post(w, 1, &peer, 0));
	TP_CHECK_EQ(rcx_win_post(w, 1, &peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_test(w, NULL), -EINVAL);
	TP_CHECK_OK(rcx_win_start(w, 1, &peer, 0));
	TP_CHECK_EQ(rcx_win_start(w, 1, &peer, 0), RCX_ERR_EPOCH);
	/* RMA outside the start group; request-based RMA (passive only) */
	TP_CHECK_EQ(rcx_put(w, &v, 8, j->rank, 0), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_accumulate(w, &v, 1, RCX_INT64, j->rank, 0, RCX_SUM),
		    RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_rput(w, &v, 8, peer, 0, &r), RCX_ERR_EPOCH);
	TP_CHECK(r == NULL);
	TP_CHECK_EQ(rcx_win_flush(w, peer), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_free(&w), RCX_ERR_EPOCH);
	TP_CHECK(w != NULL);
	v = 31 + j->rank;
	TP_CHECK_OK(rcx_put(w, &v, 8, peer, 3));
	TP_CHECK_OK(rcx_win_complete(w));
	TP_CHECK_EQ(rcx_win_complete(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_put(w, &v, 8, peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_wait(w));
	TP_CHECK_EQ(rcx_win_wait(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(base[3], 31 + peer);
	/* empty groups: epochs with nobody */
	TP_CHECK_OK(rcx_win_post(w, 0, NULL, 0));
	TP_CHECK_OK(rcx_win_start(w, 0, NULL, 0));
	TP_CHECK_EQ(rcx_put(w, &v, 8, peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_complete(w));
	TP_CHECK_OK(rcx_win_test(w, &flag));
	TP_CHECK_EQ(flag, 1);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- epochs of different kinds do not mix */

static void sc_mix(struct tp_job *j)
{
	int peer = 1 - j->rank;
	int64_t *base, v = 1;
	struct rcx_win *w = win_new(j, &base);

	if (!w)
		return;
	/* passive epochs refuse post and start */
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_EQ(rcx_win_post(w, 1, &peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_start(w, 1, &peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, peer));
	TP_CHECK_EQ(rcx_win_post(w, 1, &peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_start(w, 1, &peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_unlock(w, peer));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	/* a fence epoch with operations refuses them */
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOPRECEDE | RCX_MODE_NOSTORE));
	TP_CHECK_OK(rcx_put(w, &v, 8, peer, 0));
	TP_CHECK_EQ(rcx_win_post(w, 1, &peer, 0), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_start(w, 1, &peer, 0), RCX_ERR_EPOCH);
	/* one without operations gives way, as it does to a lock */
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOPUT));
	TP_CHECK_OK(rcx_win_post(w, 1, &peer, 0));
	/* an exposure epoch refuses locks and fences */
	TP_CHECK_EQ(rcx_win_lock(w, RCX_LOCK_SHARED, peer), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_lock_all(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_fence(w, 0), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_start(w, 1, &peer, 0));
	/* and so does an access epoch (the fence epoch ended) */
	TP_CHECK_EQ(rcx_win_lock(w, RCX_LOCK_SHARED, peer), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_lock_all(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_fence(w, 0), RCX_ERR_EPOCH);
	v = 77;
	TP_CHECK_OK(rcx_put(w, &v, 8, peer, 1));
	TP_CHECK_OK(rcx_win_complete(w));
	TP_CHECK_EQ(rcx_win_lock_all(w), RCX_ERR_EPOCH); /* still exposed */
	TP_CHECK_OK(rcx_win_wait(w));
	TP_CHECK_EQ(base[1], 77);
	/* all closed: passive and fence epochs again */
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- MPICH test/mpi/rma/pscw_ordering.c, written again for rcx:
 * start before post, made safe by odd and even groups */

static void sc_mpich_ordering(struct tp_job *j)
{
	int nodd = j->size / 2, neven = j->size - j->size / 2, i;
	int *odd = calloc((size_t)j->size, sizeof(int));
	int *even = calloc((size_t)j->size, sizeof(int));
	bool me_even = j->rank % 2 == 0;
	int64_t *base, me = j->rank;
	struct rcx_win *w;

	if (!TP_CHECK(odd && even) || !(w = win_new(j, &base)))
		goto out;
	for (i = 0; i < neven; i++)
		even[i] = 2 * i;
	for (i = 0; i < nodd; i++)
		odd[i] = 2 * i + 1;
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, j->rank));
	for (i = 0; i < j->size; i++)
		base[i] = -1;
	TP_CHECK_OK(rcx_win_unlock(w, j->rank));
	/* round 1: even ranks access odd ones, odd ranks even ones; the
	 * even ranks start before they post */
	if (me_even) {
		TP_CHECK_OK(rcx_win_start(w, nodd, odd, 0));
		TP_CHECK_OK(rcx_win_post(w, nodd, odd, 0));
		for (i = 0; i < nodd; i++)
			TP_CHECK_OK(rcx_put(w, &me, 8, odd[i], (size_t)me));
	} else {
		TP_CHECK_OK(rcx_win_post(w, neven, even, 0));
		TP_CHECK_OK(rcx_win_start(w, neven, even, 0));
		for (i = 0; i < neven; i++)
			TP_CHECK_OK(rcx_put(w, &me, 8, even[i], (size_t)me));
	}
	TP_CHECK_OK(rcx_win_complete(w));
	TP_CHECK_OK(rcx_win_wait(w));
	/* round 2: each parity with itself, this rank included */
	TP_CHECK_OK(rcx_win_post(w, me_even ? neven : nodd,
				 me_even ? even : odd, 0));
	TP_CHECK_OK(rcx_win_start(w, me_even ? neven : nodd,
				  me_even ? even : odd, 0));
	for (i = 0; i < (me_even ? neven : nodd); i++)
		TP_CHECK_OK(rcx_put(w, &me, 8, me_even ? even[i] : odd[i],
				    (size_t)me));
	TP_CHECK_OK(rcx_win_complete(w));
	TP_CHECK_OK(rcx_win_wait(w));
	for (i = 0; i < j->size; i++)
		TP_CHECK_EQ(base[i], i);
	TP_CHECK_OK(rcx_win_free(&w));
out:
	free(odd);
	free(even);
}

/* ---- MPICH test/mpi/rma/putpscw1.c, written again for rcx: rank 0
 * puts into rank size - 1's window, one window per buffer length; the
 * ranks between take no part */

static void sc_mpich_put(struct tp_job *j)
{
	static const size_t lens[] = { 1, 7, 64, 1000, 4096, 65536, 300000 };
	int orig = 0, target = j->size - 1;
	struct rcx_win *w;
	uint8_t *mem, *src;
	size_t n, i, bad;

	for (n = 0; n < TP_COUNT(lens); n++) {
		mem = calloc(1, lens[n]);
		src = malloc(lens[n]);
		if (!TP_CHECK(mem && src)) {
			free(mem);
			free(src);
			return;
		}
		for (i = 0; i < lens[n]; i++)
			src[i] = (uint8_t)(i * 7 + n);
		w = NULL;
		TP_CHECK_OK(rcx_win_create(j->g, mem, lens[n], 1, NULL, &w));
		if (w && j->rank == orig) {
			TP_CHECK_OK(rcx_win_start(w, 1, &target, 0));
			TP_CHECK_OK(rcx_put(w, src, lens[n], target, 0));
			TP_CHECK_OK(rcx_win_complete(w));
		} else if (w && j->rank == target) {
			TP_CHECK_OK(rcx_win_post(w, 1, &orig, 0));
			TP_CHECK_OK(rcx_win_wait(w));
			for (i = bad = 0; i < lens[n]; i++)
				bad += mem[i] != src[i];
			if (!TP_CHECK_EQ(bad, 0))
				printf("rank %d: %zu of %zu bytes wrong\n",
				       j->rank, bad, lens[n]);
		}
		if (w)
			TP_CHECK_OK(rcx_win_free(&w));
		free(mem);
		free(src);
	}
}

/* Elements of dtype with values of that type (no NaN patterns). */
static void fill(int dtype, void *buf, size_t count, int salt)
{
	size_t i;

	for (i = 0; i < count; i++) {
		long long x = (long long)(i * 3 + (size_t)salt) - 50;

		switch (dtype) {
		case RCX_INT32:
			((int32_t *)buf)[i] = (int32_t)x;
			break;
		case RCX_FLOAT:
			((float *)buf)[i] = (float)x * 0.25f;
			break;
		case RCX_DOUBLE:
			((double *)buf)[i] = (double)x * 0.125;
			break;
		default:
			((int64_t *)buf)[i] = x * 1000000007LL;
		}
	}
}

/* ---- MPICH test/mpi/rma/accpscw1.c, written again for rcx: rank 0
 * accumulates with RCX_REPLACE into rank size - 1's window, per type and
 * count; the target's memory is the data sent */

static void sc_mpich_acc(struct tp_job *j)
{
	static const int dts[] = { RCX_INT32, RCX_INT64, RCX_UINT64, RCX_FLOAT,
				   RCX_DOUBLE };
	static const size_t counts[] = { 1, 2, 17, 100, 1000 };
	int orig = 0, target = j->size - 1;
	size_t d, c, es, len, i, bad;
	struct rcx_win *w;
	uint8_t *mem, *src;

	for (d = 0; d < TP_COUNT(dts); d++) {
		for (c = 0; c < TP_COUNT(counts); c++) {
			es = dts[d] == RCX_INT32 || dts[d] == RCX_FLOAT ? 4 : 8;
			len = es * counts[c];
			mem = malloc(len);
			src = malloc(len);
			if (!TP_CHECK(mem && src)) {
				free(mem);
				free(src);
				return;
			}
			/* every rank a buffer, set apart from the data */
			memset(mem, 0xee, len);
			fill(dts[d], src, counts[c], (int)(d + c));
			w = NULL;
			TP_CHECK_OK(
				rcx_win_create(j->g, mem, len, es, NULL, &w));
			if (w && j->rank == orig) {
				TP_CHECK_OK(rcx_win_start(w, 1, &target, 0));
				TP_CHECK_OK(rcx_accumulate(w, src, counts[c],
							   dts[d], target, 0,
							   RCX_REPLACE));
				TP_CHECK_OK(rcx_win_complete(w));
			} else if (w && j->rank == target) {
				TP_CHECK_OK(rcx_win_post(w, 1, &orig, 0));
				TP_CHECK_OK(rcx_win_wait(w));
				for (i = bad = 0; i < len; i++)
					bad += mem[i] != src[i];
				if (!TP_CHECK_EQ(bad, 0))
					printf("rank %d: type %d count %zu: "
					       "%zu bytes wrong\n",
					       j->rank, dts[d], counts[c], bad);
			}
			if (w)
				TP_CHECK_OK(rcx_win_free(&w));
			free(mem);
			free(src);
		}
	}
}

/* ---- a rank killed in an epoch (rcx-run --ft): nobody hangs */

#define VICTIM 3

static bool err_of_failure(int ret)
{
	return ret == RCX_ERR_PROC_FAILED || ret == RCX_ERR_WIN_INVALID;
}

static void sc_kill(struct tp_job *j)
{
	static const int o0[] = { 1, VICTIM };
	int zero = 0, victim = VICTIM, others[2], k, n, ret;
	long long end;
	int64_t *base, v = j->rank + 100;
	struct rcx_win *w = win_new(j, &base);

	if (!w)
		return;
	/* rank 0 exposes itself to 1 and to the victim; the victim posts
	 * nothing that rank 2 waits for */
	if (j->rank == 0)
		TP_CHECK_OK(rcx_win_post(w, 2, o0, 0));
	ret = rcx_group_barrier(j->g);
	TP_CHECK(ret == 0 || ret == RCX_ERR_PROC_FAILED);
	if (j->rank == VICTIM) {
		/* it accesses rank 0 and dies before complete */
		TP_CHECK_OK(rcx_win_start(w, 1, &zero, 0));
		TP_CHECK_OK(rcx_put(w, &v, 8, 0, 8));
		fflush(NULL);
		raise(SIGKILL);
	}
	if (j->rank == 0) {
		ret = rcx_win_wait(w); /* the victim never completes */
		if (!TP_CHECK(err_of_failure(ret)))
			printf("rank 0: wait: %s\n", rcx_strerror(ret));
	} else if (j->rank == 1) {
		ret = rcx_win_start(w, 1, &zero, 0);
		if (!ret) {
			ret = rcx_put(w, &v, 8, 0, 1);
			TP_CHECK(ret == 0 || err_of_failure(ret));
			ret = rcx_win_complete(w);
		}
		TP_CHECK(ret == 0 || err_of_failure(ret));
	} else {
		ret = rcx_win_start(w, 1, &victim, 0); /* never posted */
		if (!TP_CHECK(err_of_failure(ret)))
			printf("rank 2: start: %s\n", rcx_strerror(ret));
	}
	/* rank 1 may be through before the failure is known here */
	end = rcx__now_us() + 60 * 1000000LL;
	while (!w->invalid && rcx__now_us() < end)
		rcx_group_get_failed(j->g, NULL, 0, &n);
	TP_CHECK(w->invalid);
	TP_CHECK_EQ(rcx_win_post(w, 1, &zero, 0), RCX_ERR_WIN_INVALID);
	TP_CHECK_EQ(rcx_win_complete(w), RCX_ERR_WIN_INVALID);
	TP_CHECK_EQ(rcx_win_wait(w), RCX_ERR_WIN_INVALID);
	TP_CHECK_OK(rcx_win_get_failed(w, &k, 1, &n));
	TP_CHECK(n == 1 && k == VICTIM);
	/* rebuilt with the survivors: post/start from zero again */
	TP_CHECK_OK(rcx_win_validate(w));
	for (k = n = 0; k < 3; k++)
		if (k != j->rank)
			others[n++] = k;
	TP_CHECK_OK(rcx_win_post(w, 2, others, 0));
	TP_CHECK_OK(rcx_win_start(w, 2, others, 0));
	for (k = 0; k < 2; k++)
		TP_CHECK_OK(rcx_put(w, &v, 8, others[k], 16 + (size_t)j->rank));
	/* the dead rank: its failure is what an access to it reports */
	TP_CHECK_EQ(rcx_put(w, &v, 8, VICTIM, 0), RCX_ERR_PROC_FAILED);
	TP_CHECK_OK(rcx_win_complete(w));
	TP_CHECK_OK(rcx_win_wait(w));
	for (k = 0; k < 2; k++)
		TP_CHECK_EQ(base[16 + others[k]], others[k] + 100);
	/* an epoch with the dead rank is refused */
	TP_CHECK_EQ(rcx_win_start(w, 1, &victim, 0), RCX_ERR_PROC_FAILED);
	TP_CHECK_OK(rcx_win_free(&w));
	/* no final barrier on the world: it lost a member */
	TP_CHECK_OK(rcx_group_free(&j->g));
}

/*
 * Lock with RCX_MODE_NOCHECK (rcx_win_lock_assert, _lock_all_assert):
 * the target's lock word is not touched during the epoch, where a plain
 * lock sets it; operations complete at unlock all the same. Bad asserts
 * are refused and open no epoch.
 */
static void lock_word_is(struct tp_job *j, struct rcx_win *w, bool held)
{
	const uint8_t *sh =
		(const uint8_t *)w->ctrl + rcx__win_ctrl_shared(w->size);
	bool set;
	int k;

	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		/* the exclusive word, or a rank's shared byte */
		set = __atomic_load_n(w->ctrl, __ATOMIC_ACQUIRE) != 0;
		for (k = 0; k < w->size; k++)
			set |= __atomic_load_n(&sh[k], __ATOMIC_ACQUIRE) != 0;
		TP_CHECK_EQ(set, held);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
}

static void sc_lock_nocheck(struct tp_job *j)
{
	struct rcx_win *w;
	uint64_t *base, v;
	int round;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	base[0] = 0;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (round = 0; round < 4 && !tp_failures(); round++) {
		bool nocheck = round % 2 == 0, all = round >= 2;

		v = (uint64_t)round + 1;
		if (j->rank == 0) {
			if (all)
				TP_CHECK_OK(rcx_win_lock_all_assert(
					w, nocheck ? RCX_MODE_NOCHECK : 0));
			else
				TP_CHECK_OK(rcx_win_lock_assert(
					w, RCX_LOCK_EXCLUSIVE, 1,
					nocheck ? RCX_MODE_NOCHECK : 0));
			TP_CHECK_OK(rcx_put(w, &v, 8, 1, 0));
		}
		lock_word_is(j, w, !nocheck);
		if (j->rank == 0)
			TP_CHECK_OK(all ? rcx_win_unlock_all(w)
					: rcx_win_unlock(w, 1));
		TP_CHECK_OK(rcx_group_barrier(j->g));
		if (j->rank == 1)
			TP_CHECK_EQ(base[0], v);
		/* released: nothing left in the word */
		lock_word_is(j, w, false);
	}
	if (j->rank == 0) {
		TP_CHECK_EQ(rcx_win_lock_assert(w, RCX_LOCK_SHARED, 1,
						RCX_MODE_NOPUT),
			    -EINVAL);
		TP_CHECK_EQ(rcx_win_lock_all_assert(w, 0x4000), -EINVAL);
		/* no epoch was opened by the refused calls */
		TP_CHECK_EQ(rcx_win_unlock(w, 1), RCX_ERR_EPOCH);
		TP_CHECK_EQ(rcx_win_unlock_all(w), RCX_ERR_EPOCH);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
}

static const struct tp_scenario scenarios[] = {
	{ .name = "basic", .run = sc_basic },
	{ .name = "two", .run = sc_two, .size = 3 },
	{ .name = "poll", .run = sc_poll, .size = 2 },
	{ .name = "nocheck", .run = sc_nocheck, .size = 2 },
	{ .name = "order", .run = sc_order, .size = 2 },
	{ .name = "bad", .run = sc_bad, .size = 2 },
	{ .name = "mix", .run = sc_mix, .size = 2 },
	{ .name = "mpich_ordering", .run = sc_mpich_ordering },
	{ .name = "mpich_put", .run = sc_mpich_put },
	{ .name = "mpich_acc", .run = sc_mpich_acc },
	{ .name = "kill", .run = sc_kill, .size = 4 },
	{ .name = "lock_nocheck", .run = sc_lock_nocheck, .size = 2 },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("pscw", scenarios, TP_COUNT(scenarios), argc, argv);
}

const struct tu_peer tu_peer_pscw = { "pscw", peer_main };

/* ---- the CUnit side: one job per test */

static void job(int n, const char *scenario, int timeout_s)
{
	CU_ASSERT_EQUAL(tu_mp_run(n, "pscw", scenario, timeout_s), 0);
}

static void test_basic_2(void)
{
	job(2, "basic", 180);
}

static void test_basic_4(void)
{
	job(4, "basic", 300);
}

static void test_two(void)
{
	job(3, "two", 300);
}

static void test_poll(void)
{
	job(2, "poll", 180);
}

static void test_nocheck(void)
{
	job(2, "nocheck", 180);
}

static void test_order(void)
{
	job(2, "order", 180);
}

static void test_bad(void)
{
	job(2, "bad", 180);
}

static void test_mix(void)
{
	job(2, "mix", 180);
}

static void test_mpich_ordering(void)
{
	job(4, "mpich_ordering", 180);
	job(3, "mpich_ordering", 180);
	job(2, "mpich_ordering", 180);
}

static void test_mpich_put(void)
{
	job(3, "mpich_put", 300);
}

static void test_mpich_acc(void)
{
	job(2, "mpich_acc", 300);
}

static void test_kill(void)
{
	setenv("RCX_RUN_FT", "1", 1);
	job(4, "kill", 180);
	unsetenv("RCX_RUN_FT");
}

static void test_lock_nocheck(void)
{
	job(2, "lock_nocheck", 180);
}

static const CU_TestInfo tests[] = {
	{ "put_get_accumulate_ring_2procs", test_basic_2 },
	{ "put_get_accumulate_ring_4procs", test_basic_4 },
	{ "two_targets_two_origins", test_two },
	{ "test_polling", test_poll },
	{ "nocheck_mixed_with_checked", test_nocheck },
	{ "order_in_access_epoch", test_order },
	{ "bad_input", test_bad },
	{ "epoch_mixing", test_mix },
	{ "mpich_pscw_ordering", test_mpich_ordering },
	{ "mpich_putpscw1", test_mpich_put },
	{ "mpich_accpscw1", test_mpich_acc },
	{ "kill_in_epoch_no_hang_validate", test_kill },
	{ "lock_nocheck_leaves_the_lock_word", test_lock_nocheck },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_pscw = {
	"pscw", TU_DEVICE, NULL, NULL, tests,
};
