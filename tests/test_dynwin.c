/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Dynamic windows across processes (rcx-run, 2 to 4 ranks): attach, put,
 * get, accumulates, fetch-and-op and compare-and-swap in lock_all, lock
 * and fence epochs, then detach, in cycles; the origins' copies of the
 * region tables (read once, kept, read again after a detach and a
 * re-attach elsewhere or at the same address); rcx_win_order on a dynamic
 * window; every call's bad input; and two programs of MPICH's RMA tests
 * written again for rcx.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <rcx/rcx.h>
#include "lib/win/win_int.h"
#include "tu.h"
#include "tu_mp.h"

#define REG 4096 /* bytes each rank attaches */

static uint8_t pat(size_t i, int src, int dst, int salt)
{
	return (uint8_t)(i * 7 + src * 31 + dst * 13 + salt * 101);
}

/* Every rank's address of p. */
static uint64_t *addrs(struct tp_job *j, const void *p)
{
	uint64_t me = (uintptr_t)p, *all = calloc(j->size, sizeof(*all));

	if (TP_CHECK(all))
		TP_CHECK_OK(rcx_group_allgather(j->g, &me, sizeof(me), all));
	return all;
}

static uint8_t *region(size_t len)
{
	uint8_t *p = NULL;

	TP_CHECK_EQ(posix_memalign((void **)&p, 64, len), 0);
	if (p)
		memset(p, 0, len);
	return p;
}

/* ---- put, get, atomics in every epoch, attach/detach cycles */

/* One cycle on attached regions at a[] (passive target). */
static void passive_cycle(struct tp_job *j, struct rcx_win *w, uint8_t *mine,
			  const uint64_t *a, int salt)
{
	int right = (j->rank + 1) % j->size,
	    left = (j->rank + j->size - 1) % j->size;
	int ll = (left + j->size - 1) % j->size, succ = 0, *wins = NULL;
	uint8_t src[512], back[512];
	int64_t one = 1, old = -1, want = 0, swap = j->rank + 1;
	int32_t add = j->rank + 1;
	size_t i;
	int t, bad = 0, k;

	for (i = 0; i < sizeof(src); i++)
		src[i] = pat(i, j->rank, right, salt);
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_put(w, src, sizeof(src), right, a[right]));
	TP_CHECK_OK(rcx_win_flush_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (i = 0; i < sizeof(src); i++)
		bad += mine[i] != pat(i, left, j->rank, salt);
	TP_CHECK_EQ(bad, 0);
	/* what left's left put into left */
	TP_CHECK_OK(rcx_get(w, back, sizeof(back), left, a[left]));
	TP_CHECK_OK(rcx_win_flush_local_all(w));
	for (i = 0, bad = 0; i < sizeof(back); i++)
		bad += back[i] != pat(i, ll, left, salt);
	TP_CHECK_EQ(bad, 0);
	/* a counter at rank 0 (NIC fetch-add, its own too), a CAS word
	 * there, and an int32 sum (software path) at every rank */
	for (k = 0; k < 10; k++)
		TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, RCX_INT64, 0,
					     a[0] + 1024, RCX_SUM));
	TP_CHECK_OK(rcx_compare_and_swap(w, &swap, &want, &old, RCX_INT64, 0,
					 a[0] + 1032));
	TP_CHECK_OK(rcx_win_flush(w, 0));
	succ = old == 0;
	for (t = 0; t < j->size; t++)
		TP_CHECK_OK(rcx_accumulate(w, &add, 1, RCX_INT32, t,
					   a[t] + 1100, RCX_SUM));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	wins = calloc(j->size, sizeof(int));
	if (TP_CHECK(wins))
		TP_CHECK_OK(
			rcx_group_allgather(j->g, &succ, sizeof(int), wins));
	for (t = 0, k = 0; wins && t < j->size; t++)
		k += wins[t];
	TP_CHECK_EQ(k, 1);
	free(wins);
	if (j->rank == 0) {
		int64_t c, s;

		memcpy(&c, mine + 1024, 8);
		memcpy(&s, mine + 1032, 8);
		TP_CHECK_EQ(c, 10 * j->size);
		TP_CHECK(s >= 1 && s <= j->size);
	}
	memcpy(&add, mine + 1100, 4);
	TP_CHECK_EQ(add, j->size * (j->size + 1) / 2);
}

/* Fence epoch and lock/unlock: a put to the right, a get back. */
static void active_cycle(struct tp_job *j, struct rcx_win *w, uint8_t *mine,
			 const uint64_t *a, int salt)
{
	int right = (j->rank + 1) % j->size,
	    left = (j->rank + j->size - 1) % j->size;
	uint8_t src[64], back[64];
	size_t i;
	int bad = 0;

	for (i = 0; i < sizeof(src); i++)
		src[i] = pat(i, j->rank, right, salt + 1);
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOPRECEDE));
	TP_CHECK_OK(rcx_put(w, src, sizeof(src), right, a[right] + 3000));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (i = 0; i < sizeof(src); i++)
		bad += mine[3000 + i] != pat(i, left, j->rank, salt + 1);
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, right));
	TP_CHECK_OK(rcx_get(w, back, sizeof(back), right, a[right] + 3000));
	TP_CHECK_OK(rcx_win_unlock(w, right));
	TP_CHECK_EQ(memcmp(back, src, sizeof(src)), 0);
}

static void sc_rma(struct tp_job *j)
{
	struct rcx_win *w = NULL;
	uint8_t *mine;
	uint64_t *a;
	int cycle;

	TP_CHECK_OK(rcx_win_create_dynamic(j->g, NULL, &w));
	if (!w)
		return;
	/* new memory each cycle: the origins' copies must follow */
	for (cycle = 0; cycle < 3; cycle++) {
		mine = region(REG);
		if (!mine)
			break;
		TP_CHECK_OK(rcx_win_attach(w, mine, REG));
		a = addrs(j, mine);
		if (a) {
			passive_cycle(j, w, mine, a, cycle);
			active_cycle(j, w, mine, a, cycle);
		}
		TP_CHECK_OK(rcx_group_barrier(j->g));
		TP_CHECK_OK(rcx_win_detach(w, mine));
		free(a);
		free(mine);
	}
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- the origins' copies of the tables */

static void sc_cache(struct tp_job *j)
{
	const int tgt = 1;
	struct rcx_win *w = NULL;
	uint8_t *ra = region(REG), *rb = region(REG), *rc = region(REG);
	uint8_t v[64], got[64];
	uint64_t *a = NULL, *b = NULL, *c = NULL, r0, r1;
	int k;

	memset(v, 0x5a, sizeof(v));
	TP_CHECK_OK(rcx_win_create_dynamic(j->g, NULL, &w));
	if (!w || !ra || !rb || !rc)
		goto out;
	if (j->rank == tgt)
		TP_CHECK_OK(rcx_win_attach(w, ra, REG));
	a = addrs(j, ra);
	if (j->rank == 0 && a) {
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, tgt));
		TP_CHECK_OK(rcx_put(w, v, sizeof(v), tgt, a[tgt]));
		r0 = rcx__win_dyn_reads(w);
		/* read once: later accesses, flushes between, use the copy */
		TP_CHECK_EQ(r0, 1);
		for (k = 0; k < 20; k++) {
			TP_CHECK_OK(rcx_put(w, v, sizeof(v), tgt,
					    a[tgt] + 64 * (k % 8)));
			if (k % 5 == 0)
				TP_CHECK_OK(rcx_win_flush(w, tgt));
		}
		TP_CHECK_EQ(rcx__win_dyn_reads(w), r0);
		TP_CHECK_OK(rcx_win_unlock(w, tgt));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	/* the target moves its memory: detach, attach elsewhere */
	if (j->rank == tgt) {
		TP_CHECK_OK(rcx_win_detach(w, ra));
		TP_CHECK_OK(rcx_win_attach(w, rb, REG));
	}
	b = addrs(j, rb);
	if (j->rank == 0 && b) {
		r0 = rcx__win_dyn_reads(w);
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, tgt));
		/* the copy is checked (it moved): the old address is gone */
		TP_CHECK_EQ(rcx_put(w, v, sizeof(v), tgt, a[tgt]),
			    RCX_ERR_REMOTE_ACCESS);
		TP_CHECK_EQ(rcx_get(w, got, 8, tgt, a[tgt]),
			    RCX_ERR_REMOTE_ACCESS);
		r1 = rcx__win_dyn_reads(w);
		TP_CHECK(r1 > r0);
		TP_CHECK_OK(rcx_put(w, v, sizeof(v), tgt, b[tgt] + 128));
		TP_CHECK_OK(rcx_win_unlock(w, tgt));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == tgt) {
		TP_CHECK_EQ(memcmp(rb + 128, v, sizeof(v)), 0);
		/* the detached memory kept what it had */
		TP_CHECK_EQ(memcmp(ra, v, sizeof(v)), 0);
		TP_CHECK_EQ(ra[64 * 8], 0);
	}
	/* a region attached during an epoch: found by a miss, no sync */
	if (j->rank == 0)
		TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == tgt)
		TP_CHECK_OK(rcx_win_attach(w, rc, REG));
	c = addrs(j, rc);
	if (j->rank == 0 && c) {
		r0 = rcx__win_dyn_reads(w);
		TP_CHECK_OK(rcx_put(w, v, sizeof(v), tgt, c[tgt] + 256));
		TP_CHECK_EQ(rcx__win_dyn_reads(w), r0 + 1);
		TP_CHECK_OK(rcx_win_unlock_all(w));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	/* detached and attached again at the same address: a new key */
	if (j->rank == tgt) {
		TP_CHECK_EQ(memcmp(rc + 256, v, sizeof(v)), 0);
		TP_CHECK_OK(rcx_win_detach(w, rb));
		TP_CHECK_OK(rcx_win_attach(w, rb, REG));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		memset(v, 0xa5, sizeof(v));
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, tgt));
		TP_CHECK_OK(rcx_put(w, v, sizeof(v), tgt, b[tgt]));
		TP_CHECK_OK(rcx_get(w, got, sizeof(got), tgt, c[tgt] + 256));
		TP_CHECK_OK(rcx_win_unlock(w, tgt));
		memset(v, 0x5a, sizeof(v));
		TP_CHECK_EQ(memcmp(got, v, sizeof(v)), 0);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == tgt) {
		memset(v, 0xa5, sizeof(v));
		TP_CHECK_EQ(memcmp(rb, v, sizeof(v)), 0);
		TP_CHECK_OK(rcx_win_detach(w, rb));
		TP_CHECK_OK(rcx_win_detach(w, rc));
	}
out:
	TP_CHECK_OK(rcx_win_free(&w));
	free(a);
	free(b);
	free(c);
	free(ra);
	free(rb);
	free(rc);
}

/* ---- rcx_win_order on a dynamic window */

#define ORD_LEN 65536

static void sc_order(struct tp_job *j)
{
	struct rcx_win *w = NULL;
	uint8_t *mine = region(ORD_LEN + 64), *data = region(ORD_LEN);
	struct rcx__win_stats st;
	uint64_t *a = NULL, flag, old = 0, nv;
	size_t i;
	int k, bad;

	TP_CHECK_OK(rcx_win_create_dynamic(j->g, NULL, &w));
	if (!w || !mine || !data)
		goto out;
	TP_CHECK_OK(rcx_win_attach(w, mine, ORD_LEN + 64));
	a = addrs(j, mine);
	if (!a)
		goto out;
	TP_CHECK_OK(rcx_win_lock_all(w));
	for (k = 1; k <= 10; k++) {
		if (j->rank == 0) {
			/* data, order, flag: the flag never arrives first */
			memset(data, k, ORD_LEN);
			flag = (uint64_t)k;
			TP_CHECK_OK(rcx_put(w, data, ORD_LEN, 1, a[1]));
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
			TP_CHECK_OK(rcx_put(w, &flag, 8, 1, a[1] + ORD_LEN));
			/* a read, then a write to the word it read */
			TP_CHECK_OK(rcx_get(w, &old, 8, 1, a[1] + 8));
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
			nv = 0xfeedULL + (uint64_t)k;
			TP_CHECK_OK(rcx_put(w, &nv, 8, 1, a[1] + 8));
			TP_CHECK_OK(rcx_win_flush(w, 1));
			/* the get saw the data put, not the put after it */
			memset(&flag, k, sizeof(flag));
			TP_CHECK_EQ(old, flag);
		} else if (j->rank == 1) {
			uint64_t *f = (uint64_t *)(mine + ORD_LEN);

			while (__atomic_load_n(f, __ATOMIC_ACQUIRE) !=
			       (uint64_t)k)
				rcx_progress(j->ctx);
			for (i = 16, bad = 0; i < ORD_LEN; i++)
				bad += mine[i] != (uint8_t)k;
			TP_CHECK_EQ(bad, 0);
		}
		TP_CHECK_OK(rcx_group_barrier(j->g));
	}
	TP_CHECK_OK(rcx_win_unlock_all(w));
	if (j->rank == 0) {
		TP_CHECK_OK(rcx__win_stats(w, &st));
		TP_CHECK_EQ(st.orders, 20);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_detach(w, mine));
out:
	TP_CHECK_OK(rcx_win_free(&w));
	free(a);
	free(mine);
	free(data);
}

/* ---- bad input: named errors, nothing changed */

static void sc_bad(struct tp_job *j)
{
	struct rcx_win *w = NULL, *plain = NULL, *keep;
	uint8_t *buf = region(8192), *many = region(64 * 64), *gone;
	uint64_t *a = NULL, v = 7, res = 0, cmp = 0;
	int peer = (j->rank + 1) % j->size, i;
	size_t sz, du;
	void *p;

	TP_CHECK_EQ(rcx_win_create_dynamic(NULL, NULL, &w), -EINVAL);
	TP_CHECK_EQ(rcx_win_create_dynamic(j->g, NULL, NULL), -EINVAL);
	TP_CHECK_OK(rcx_win_create_dynamic(j->g, NULL, &w));
	if (!w || !buf || !many)
		goto out;
	keep = w;
	TP_CHECK_EQ(rcx_win_attach(NULL, buf, 64), -EINVAL);
	TP_CHECK_EQ(rcx_win_attach(w, NULL, 64), -EINVAL);
	TP_CHECK_EQ(rcx_win_attach(w, buf, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_attach(w, buf, SIZE_MAX), -EINVAL);
	gone = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (TP_CHECK(gone != MAP_FAILED)) {
		munmap(gone, 8192);
		TP_CHECK_EQ(rcx_win_attach(w, gone, 8192), -EFAULT);
	}
	TP_CHECK_OK(rcx_win_attach(w, buf, 4096));
	/* overlaps: inside, across the end, around it, the same */
	TP_CHECK_EQ(rcx_win_attach(w, buf + 100, 10), -EEXIST);
	TP_CHECK_EQ(rcx_win_attach(w, buf + 4000, 200), -EEXIST);
	TP_CHECK_EQ(rcx_win_attach(w, buf, 8192), -EEXIST);
	TP_CHECK_EQ(rcx_win_attach(w, buf, 4096), -EEXIST);
	/* next to it is not an overlap */
	TP_CHECK_OK(rcx_win_attach(w, buf + 4096, 4096));
	TP_CHECK_OK(rcx_win_detach(w, buf + 4096));
	/* the limit: RCX_WIN_ATTACH_MAX regions, buf being one */
	for (i = 0; i < RCX_WIN_ATTACH_MAX - 1; i++)
		TP_CHECK_OK(rcx_win_attach(w, many + 64 * i, 64));
	TP_CHECK_EQ(rcx_win_attach(w, buf + 4096, 64), -ENOSPC);
	for (i = 0; i < RCX_WIN_ATTACH_MAX - 1; i++)
		TP_CHECK_OK(rcx_win_detach(w, many + 64 * i));
	TP_CHECK_EQ(rcx_win_detach(NULL, buf), -EINVAL);
	TP_CHECK_EQ(rcx_win_detach(w, buf + 1), -ENOENT);
	TP_CHECK_EQ(rcx_win_detach(w, NULL), -ENOENT);
	TP_CHECK_EQ(rcx_win_detach(w, many), -ENOENT);
	/* not a dynamic window */
	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 1, NULL, &p, &plain));
	TP_CHECK_EQ(rcx_win_attach(plain, buf + 4096, 64), -EINVAL);
	TP_CHECK_EQ(rcx_win_detach(plain, p), -EINVAL);
	TP_CHECK_EQ(rcx_win_shared_query(w, 0, &sz, &du, &p), -EINVAL);
	a = addrs(j, buf);
	if (!a)
		goto out;
	/* memory nobody attached, at a peer and here */
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_EQ(rcx_put(w, &v, 8, peer, a[peer] + 4096),
		    RCX_ERR_REMOTE_ACCESS);
	TP_CHECK_EQ(rcx_put(w, &v, 8, peer, a[peer] + 4092),
		    RCX_ERR_REMOTE_ACCESS);
	TP_CHECK_EQ(rcx_get(w, &res, 8, peer, 64), RCX_ERR_REMOTE_ACCESS);
	TP_CHECK_EQ(rcx_accumulate(w, &v, 1, RCX_INT64, peer, a[peer] + 4096,
				   RCX_SUM),
		    RCX_ERR_REMOTE_ACCESS);
	TP_CHECK_EQ(rcx_fetch_and_op(w, &v, &res, RCX_INT64, peer,
				     a[peer] + 8192, RCX_SUM),
		    RCX_ERR_REMOTE_ACCESS);
	TP_CHECK_EQ(rcx_compare_and_swap(w, &v, &cmp, &res, RCX_INT64, peer,
					 (uintptr_t)many),
		    RCX_ERR_REMOTE_ACCESS);
	TP_CHECK_EQ(rcx_put(w, &v, 8, j->rank, (uintptr_t)many),
		    RCX_ERR_REMOTE_ACCESS);
	TP_CHECK_EQ(rcx_put(w, &v, 8, j->size, a[peer]), -EINVAL);
	TP_CHECK_EQ(res, 0);
	/* what is attached still works */
	TP_CHECK_OK(rcx_put(w, &v, 8, peer, a[peer] + 4088));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	memcpy(&res, buf + 4088, 8);
	TP_CHECK_EQ(res, 7);
	TP_CHECK(w == keep);
	TP_CHECK_OK(rcx_win_detach(w, buf));
	TP_CHECK_EQ(rcx_win_detach(w, buf), -ENOENT);
out:
	if (plain)
		TP_CHECK_OK(rcx_win_free(&plain));
	TP_CHECK_OK(rcx_win_free(&w));
	free(a);
	free(buf);
	free(many);
}

/* ---- MPICH's test/mpi/rma/win_dynamic_acc.c, written for rcx */

/*
 * One int attached per rank; 25 rounds per rank, each a fence epoch in
 * which every rank adds 1 to the int of rank (round mod size).
 */
static void sc_dyn_acc(struct tp_job *j)
{
	const int iter = 25 * j->size;
	struct rcx_win *w = NULL;
	int32_t *val = (int32_t *)region(64), one = 1;
	uint64_t *a = NULL;
	int i;

	TP_CHECK_OK(rcx_win_create_dynamic(j->g, NULL, &w));
	if (!w || !val)
		goto out;
	TP_CHECK_OK(rcx_win_attach(w, val, sizeof(*val)));
	a = addrs(j, val);
	for (i = 0; a && i < iter; i++) {
		TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOPRECEDE));
		TP_CHECK_OK(rcx_accumulate(w, &one, 1, RCX_INT32, i % j->size,
					   a[i % j->size], RCX_SUM));
		TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(*val, iter);
	TP_CHECK_OK(rcx_win_detach(w, val));
out:
	TP_CHECK_OK(rcx_win_free(&w));
	free(a);
	free(val);
}

/* ---- MPICH's test/mpi/rma/linked_list.c, written for rcx */

#define LL_ELEMS 24

struct ll_ptr {
	int32_t rank; /* -1: nil */
	int32_t pad;
	uint64_t disp; /* the element's address at rank */
};

struct ll_elem {
	int32_t value;
	int32_t pad;
	struct ll_ptr next;
};

struct ll {
	struct rcx_win *w;
	struct ll_elem *mine[LL_ELEMS + 1];
	int n;
};

static uint64_t ll_new(struct ll *l, int value)
{
	struct ll_elem *e = (struct ll_elem *)region(sizeof(*e));

	if (!TP_CHECK(e && l->n <= LL_ELEMS))
		return 0;
	e->value = value;
	e->next.rank = -1;
	TP_CHECK_OK(rcx_win_attach(l->w, e, sizeof(*e)));
	l->mine[l->n++] = e;
	return (uintptr_t)e;
}

/*
 * Every rank appends LL_ELEMS elements of its own to a list whose head
 * is at rank 0: it swaps its element into the tail's next.rank (an
 * int32 compare-and-swap under an exclusive lock), then writes the
 * address; when the tail was not the tail any more it follows next.
 * Rank 0 walks the list at the end and counts each rank's elements.
 */
static void sc_llist(struct tp_job *j)
{
	const size_t off_rank = offsetof(struct ll_elem, next.rank);
	const size_t off_disp = offsetof(struct ll_elem, next.disp);
	struct ll l = { 0 };
	struct ll_ptr head = { 0 }, tail, me;
	int32_t nil = -1, prev;
	int *counts = calloc(j->size, sizeof(int)), i, n = 0;

	TP_CHECK_OK(rcx_win_create_dynamic(j->g, NULL, &l.w));
	if (!l.w || !counts)
		goto out;
	if (j->rank == 0)
		head.disp = ll_new(&l, -1);
	TP_CHECK_OK(rcx_group_bcast(j->g, &head.disp, 8, 0));
	tail = head;
	for (i = 0; i < LL_ELEMS; i++) {
		me.rank = j->rank;
		me.disp = ll_new(&l, j->rank);
		for (;;) {
			TP_CHECK_OK(rcx_win_lock(l.w, RCX_LOCK_EXCLUSIVE,
						 tail.rank));
			prev = 0;
			TP_CHECK_OK(rcx_compare_and_swap(
				l.w, &me.rank, &nil, &prev, RCX_INT32,
				tail.rank, tail.disp + off_rank));
			TP_CHECK_OK(rcx_win_unlock(l.w, tail.rank));
			if (prev == nil)
				break;
			/* stale tail: its next address, once written */
			struct ll_ptr next = { .rank = prev };

			do {
				TP_CHECK_OK(rcx_win_lock(
					l.w, RCX_LOCK_EXCLUSIVE, tail.rank));
				TP_CHECK_OK(rcx_get(l.w, &next.disp, 8,
						    tail.rank,
						    tail.disp + off_disp));
				TP_CHECK_OK(rcx_win_unlock(l.w, tail.rank));
			} while (!next.disp && tp_failures() == 0);
			tail = next;
			if (tp_failures())
				goto out;
		}
		TP_CHECK_OK(rcx_win_lock(l.w, RCX_LOCK_EXCLUSIVE, tail.rank));
		TP_CHECK_OK(rcx_put(l.w, &me.disp, 8, tail.rank,
				    tail.disp + off_disp));
		TP_CHECK_OK(rcx_win_unlock(l.w, tail.rank));
		tail = me;
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		struct ll_elem e;
		struct ll_ptr p = head;
		bool root = true;

		while (p.rank >= 0 && n <= LL_ELEMS * j->size) {
			TP_CHECK_OK(
				rcx_win_lock(l.w, RCX_LOCK_EXCLUSIVE, p.rank));
			TP_CHECK_OK(
				rcx_get(l.w, &e, sizeof(e), p.rank, p.disp));
			TP_CHECK_OK(rcx_win_unlock(l.w, p.rank));
			if (root) {
				TP_CHECK_EQ(e.value, -1);
				root = false;
			} else if (TP_CHECK(e.value >= 0 &&
					    e.value < j->size)) {
				counts[e.value]++;
				n++;
			}
			p = e.next;
			if (p.rank >= 0 && !p.disp) /* not written yet */
				break;
		}
		for (i = 0; i < j->size; i++)
			TP_CHECK_EQ(counts[i], LL_ELEMS);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
out:
	if (l.w)
		TP_CHECK_OK(rcx_win_free(&l.w));
	for (i = 0; i < l.n; i++)
		free(l.mine[i]);
	free(counts);
}

/* ---- the peer role */

static const struct tp_scenario scenarios[] = {
	{ .name = "rma", .run = sc_rma },
	{ .name = "cache", .run = sc_cache },
	{ .name = "order", .run = sc_order, .size = 2 },
	{ .name = "bad", .run = sc_bad },
	{ .name = "dyn_acc", .run = sc_dyn_acc },
	{ .name = "llist", .run = sc_llist },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("dynwin", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_dynwin = { "dynwin", peer_main };

/* ---- the CUnit side: one job per test */

static void job(int n, const char *scenario, int timeout_s)
{
	CU_ASSERT_EQUAL(tu_mp_run(n, "dynwin", scenario, timeout_s), 0);
}

static void test_rma_2(void)
{
	job(2, "rma", 300);
}

static void test_rma_4(void)
{
	job(4, "rma", 300);
}

static void test_cache(void)
{
	job(2, "cache", 300);
}

static void test_order(void)
{
	job(2, "order", 300);
}

static void test_bad(void)
{
	job(2, "bad", 300);
}

static void test_dyn_acc(void)
{
	job(3, "dyn_acc", 300);
}

static void test_llist(void)
{
	job(4, "llist", 600);
}

static const CU_TestInfo tests[] = {
	{ "attach_rma_atomics_detach_2procs", test_rma_2 },
	{ "attach_rma_atomics_detach_4procs", test_rma_4 },
	{ "lookup_cache_and_invalidation", test_cache },
	{ "order_on_dynamic_window", test_order },
	{ "bad_input", test_bad },
	{ "mpich_win_dynamic_acc", test_dyn_acc },
	{ "mpich_linked_list", test_llist },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_dynwin = {
	"dynwin", TU_DEVICE, NULL, NULL, tests,
};
