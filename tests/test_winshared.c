/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared-memory windows across processes (rcx-run, 2 to 4 ranks): each
 * rank stores into its part, the others load it after a barrier; the
 * default layout is contiguous, alloc_shared_noncontig puts each part on
 * pages of its own; rcx_win_shared_query of every rank and of
 * RCX_PROC_NULL; RMA calls on the window; CPU atomics through the
 * pointers mixed with rcx's atomics on the same words; a group spanning
 * two nodes refused at every rank; bad input; and MPICH's
 * win_shared_noncontig.c written again for rcx.
 *
 * The ranks that share a window are those of one node: under auto with
 * rcx-run --nodes 2 (RCX_NODE "host/k") a 4-rank job makes two groups of
 * two; elsewhere the group is the whole job.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "lib/win/win_int.h"
#include "tu.h"
#include "tu_mp.h"

#define NELEM 1000 /* int32 elements per rank */

/* The ranks of this rank's node (rcx-run --nodes: "host/k"). */
static struct rcx_group *node_group(struct tp_job *j)
{
	const char *node = getenv("RCX_NODE"), *k;
	struct rcx_group *g = NULL;
	int color = 0;

	k = node ? strrchr(node, '/') : NULL;
	if (k)
		color = atoi(k + 1);
	TP_CHECK_OK(rcx_group_split(j->g, color, j->rank, &g));
	return g;
}

static int32_t val(int rank, int i)
{
	return rank * 100000 + i;
}

/* Stores here, loads of every part after a barrier; query checks. */
static void check_parts(struct rcx_group *g, struct rcx_win *w, int32_t *mine,
			size_t n, bool contig)
{
	int me = rcx_group_rank(g), size = rcx_group_size(g), r, bad = 0;
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *first = NULL, *expect = NULL;
	size_t sz, du, i;
	int32_t *p;

	for (i = 0; i < n; i++)
		mine[i] = val(me, (int)i);
	TP_CHECK_OK(rcx_win_sync(w));
	TP_CHECK_OK(rcx_group_barrier(g));
	TP_CHECK_OK(rcx_win_sync(w));
	for (r = 0; r < size; r++) {
		sz = du = 0;
		p = NULL;
		TP_CHECK_OK(rcx_win_shared_query(w, r, &sz, &du, (void **)&p));
		TP_CHECK_EQ(sz, n * sizeof(int32_t));
		TP_CHECK_EQ(du, sizeof(int32_t));
		if (!TP_CHECK(p))
			continue;
		if (r == me)
			TP_CHECK(p == mine);
		if (!first)
			expect = first = (uint8_t *)p;
		if (contig)
			TP_CHECK((uint8_t *)p == expect);
		else
			TP_CHECK((uintptr_t)p % (uintptr_t)pg == 0);
		expect = (uint8_t *)p + sz;
		for (i = 0; i < n; i++)
			bad += p[i] != val(r, (int)i);
	}
	TP_CHECK_EQ(bad, 0);
	/* PROC_NULL: the lowest rank with memory, here rank 0 */
	TP_CHECK_OK(
		rcx_win_shared_query(w, RCX_PROC_NULL, &sz, &du, (void **)&p));
	TP_CHECK((uint8_t *)p == first);
	TP_CHECK_OK(rcx_group_barrier(g));
}

static void sc_layout(struct tp_job *j)
{
	struct rcx_group *g = node_group(j);
	struct rcx_win *w = NULL;
	struct rcx_info *info = NULL;
	int32_t *mine = NULL;

	if (!g)
		return;
	TP_CHECK_OK(rcx_win_allocate_shared(g, NELEM * sizeof(int32_t),
					    sizeof(int32_t), NULL,
					    (void **)&mine, &w));
	if (w) {
		check_parts(g, w, mine, NELEM, true);
		TP_CHECK_OK(rcx_win_free(&w));
	}
	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_ALLOC_SHARED_NONCONTIG, "true"));
	TP_CHECK_OK(rcx_win_allocate_shared(g, NELEM * sizeof(int32_t),
					    sizeof(int32_t), info,
					    (void **)&mine, &w));
	if (w) {
		check_parts(g, w, mine, NELEM, false);
		TP_CHECK_OK(rcx_win_free(&w));
	}
	rcx_info_free(&info);
	rcx_group_free(&g);
}

/* Empty parts: PROC_NULL names the first non-empty one, or none. */
static void sc_empty(struct tp_job *j)
{
	struct rcx_group *g = node_group(j);
	struct rcx_win *w = NULL;
	size_t sz = 1, du = 0;
	void *p = NULL, *base = NULL, *one = NULL;
	int me;

	if (!g)
		return;
	me = rcx_group_rank(g);
	TP_CHECK_OK(rcx_win_allocate_shared(g, me == 0 ? 0 : 64, 8, NULL, &base,
					    &w));
	if (w && rcx_group_size(g) > 1) {
		TP_CHECK_OK(rcx_win_shared_query(w, 1, &sz, &du, &one));
		TP_CHECK_OK(
			rcx_win_shared_query(w, RCX_PROC_NULL, &sz, &du, &p));
		TP_CHECK_EQ(sz, 64);
		TP_CHECK(p == one);
		TP_CHECK_OK(rcx_win_shared_query(w, 0, &sz, &du, &p));
		TP_CHECK_EQ(sz, 0);
	}
	if (w)
		TP_CHECK_OK(rcx_win_free(&w));
	TP_CHECK_OK(rcx_win_allocate_shared(g, 0, 1, NULL, &base, &w));
	if (w) {
		p = (void *)1;
		TP_CHECK_OK(
			rcx_win_shared_query(w, RCX_PROC_NULL, &sz, &du, &p));
		TP_CHECK_EQ(sz, 0);
		TP_CHECK(p == NULL);
		TP_CHECK_OK(rcx_win_free(&w));
	}
	rcx_group_free(&g);
}

/* put, get, accumulate on the window: plain copies into the parts */
static void sc_rma(struct tp_job *j)
{
	struct rcx_group *g = node_group(j);
	struct rcx_win *w = NULL;
	int me, size, right, left;
	uint8_t *mine = NULL, src[256], back[256];
	int32_t add;
	size_t i;
	int bad = 0, t;

	if (!g)
		return;
	me = rcx_group_rank(g);
	size = rcx_group_size(g);
	right = (me + 1) % size;
	left = (me + size - 1) % size;
	TP_CHECK_OK(
		rcx_win_allocate_shared(g, 4096, 1, NULL, (void **)&mine, &w));
	if (!w)
		goto out;
	for (i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i + me * 7);
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_put(w, src, sizeof(src), right, 512));
	add = me + 1;
	for (t = 0; t < size; t++)
		TP_CHECK_OK(rcx_accumulate(w, &add, 1, RCX_INT32, t, 2048,
					   RCX_SUM));
	TP_CHECK_OK(rcx_win_flush_all(w));
	TP_CHECK_OK(rcx_group_barrier(g));
	for (i = 0; i < sizeof(src); i++)
		bad += mine[512 + i] != (uint8_t)(i + left * 7);
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_get(w, back, sizeof(back), right, 512));
	TP_CHECK_OK(rcx_win_flush_local(w, right));
	TP_CHECK_EQ(memcmp(back, src, sizeof(src)), 0);
	memcpy(&add, mine + 2048, 4);
	TP_CHECK_EQ(add, size * (size + 1) / 2);
	TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_free(&w));
out:
	rcx_group_free(&g);
}

/* enough that the ranks' loops overlap in time for a good while */
#define ATOM_ITERS 20000

/* One 64-bit and one 32-bit counter in rank 0's part, two kinds of adds. */
static void sc_atomics(struct tp_job *j)
{
	struct rcx_group *g = node_group(j);
	struct rcx_win *w = NULL;
	uint64_t *mine = NULL, *c64 = NULL, one = 1, old;
	int32_t *c32, one32 = 1;
	size_t sz, du;
	int size, k;

	if (!g)
		return;
	size = rcx_group_size(g);
	TP_CHECK_OK(
		rcx_win_allocate_shared(g, 64, 8, NULL, (void **)&mine, &w));
	if (!w)
		goto out;
	TP_CHECK_OK(rcx_win_shared_query(w, 0, &sz, &du, (void **)&c64));
	if (!c64)
		goto out;
	c32 = (int32_t *)(c64 + 1);
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(g));
	for (k = 0; k < ATOM_ITERS; k++) {
		if (k % 2) {
			__atomic_fetch_add(c64, 1, __ATOMIC_SEQ_CST);
			__atomic_fetch_add(c32, 1, __ATOMIC_SEQ_CST);
		} else {
			TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, RCX_UINT64,
						     0, 0, RCX_SUM));
			TP_CHECK_OK(rcx_accumulate(w, &one32, 1, RCX_INT32, 0,
						   1, RCX_SUM));
		}
	}
	TP_CHECK_OK(rcx_win_flush_all(w));
	TP_CHECK_OK(rcx_group_barrier(g));
	TP_CHECK_EQ(__atomic_load_n(c64, __ATOMIC_SEQ_CST),
		    (uint64_t)size * ATOM_ITERS);
	TP_CHECK_EQ(__atomic_load_n(c32, __ATOMIC_SEQ_CST), size * ATOM_ITERS);
	/* compare-and-swap through rcx against a store through the pointer */
	TP_CHECK_OK(rcx_group_barrier(g));
	if (rcx_group_rank(g) == 0)
		__atomic_store_n(&c64[2], 0, __ATOMIC_SEQ_CST);
	TP_CHECK_OK(rcx_group_barrier(g));
	{
		uint64_t want = 0, swap = (uint64_t)rcx_group_rank(g) + 1,
			 res = 99;
		int won = 0, *all = calloc(size, sizeof(int)), n = 0, i;

		TP_CHECK_OK(rcx_compare_and_swap(w, &swap, &want, &res,
						 RCX_UINT64, 0, 2));
		TP_CHECK_OK(rcx_win_flush(w, 0));
		won = res == 0;
		if (TP_CHECK(all))
			TP_CHECK_OK(
				rcx_group_allgather(g, &won, sizeof(int), all));
		for (i = 0; all && i < size; i++)
			n += all[i];
		TP_CHECK_EQ(n, 1);
		free(all);
	}
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_free(&w));
out:
	if (w)
		TP_CHECK_OK(rcx_win_free(&w));
	rcx_group_free(&g);
}

/*
 * A group on two nodes: under auto with two nodes the job is one; on
 * one node the odd ranks' node keys are made to differ. Every rank gets
 * -EXDEV and no window.
 */
static void sc_nodes(struct tp_job *j)
{
	const char *node = getenv("RCX_NODE");
	struct rcx_win *w = NULL;
	void *base = (void *)&w;

	if (!node || !strrchr(node, '/')) {
		rcx__lock(j->ctx);
		if (j->rank % 2)
			snprintf(j->ctx->node + strlen(j->ctx->node) / 2, 8,
				 "+other");
		rcx__unlock(j->ctx);
	}
	TP_CHECK_EQ(rcx_win_allocate_shared(j->g, 64, 1, NULL, &base, &w),
		    -EXDEV);
	TP_CHECK(w == NULL);
	TP_CHECK(base == (void *)&w);
}

static void sc_bad(struct tp_job *j)
{
	struct rcx_group *g = node_group(j);
	struct rcx_win *w = NULL, *plain = NULL;
	struct rcx_info *info = NULL;
	void *base = (void *)&w, *p = (void *)&info;
	size_t sz = 77, du = 77;
	uint8_t *mine;
	int64_t v = 1, res;
	int me, ret;

	if (!g)
		return;
	me = rcx_group_rank(g);
	TP_CHECK_EQ(rcx_win_allocate_shared(NULL, 64, 1, NULL, &base, &w),
		    -EINVAL);
	TP_CHECK_EQ(rcx_win_allocate_shared(g, 64, 1, NULL, NULL, &w), -EINVAL);
	TP_CHECK_EQ(rcx_win_allocate_shared(g, 64, 1, NULL, &base, NULL),
		    -EINVAL);
	/* disp_unit 0 at every rank, then only at rank 1 */
	TP_CHECK_EQ(rcx_win_allocate_shared(g, 64, 0, NULL, &base, &w),
		    -EINVAL);
	if (rcx_group_size(g) > 1) {
		ret = rcx_win_allocate_shared(g, 64, me == 1 ? 0 : 1, NULL,
					      &base, &w);
		TP_CHECK_EQ(ret, me == 1 ? -EINVAL : RCX_ERR_REMOTE_OP);
	}
	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_ALLOC_SHARED_NONCONTIG, "maybe"));
	TP_CHECK_EQ(rcx_win_allocate_shared(g, 64, 1, info, &base, &w),
		    -EINVAL);
	rcx_info_free(&info);
	TP_CHECK(w == NULL && base == (void *)&w);
	TP_CHECK_OK(
		rcx_win_allocate_shared(g, 64, 1, NULL, (void **)&mine, &w));
	if (!w)
		goto out;
	TP_CHECK_EQ(rcx_win_shared_query(NULL, 0, &sz, &du, &p), -EINVAL);
	TP_CHECK_EQ(rcx_win_shared_query(w, rcx_group_size(g), &sz, &du, &p),
		    -EINVAL);
	TP_CHECK_EQ(rcx_win_shared_query(w, -1, &sz, &du, &p), -EINVAL);
	TP_CHECK_EQ(rcx_win_shared_query(w, 0, NULL, &du, &p), -EINVAL);
	TP_CHECK_EQ(rcx_win_shared_query(w, 0, &sz, NULL, &p), -EINVAL);
	TP_CHECK_EQ(rcx_win_shared_query(w, 0, &sz, &du, NULL), -EINVAL);
	TP_CHECK(sz == 77 && du == 77 && p == (void *)&info);
	/* a misaligned atomic: refused, nothing changed */
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_EQ(rcx_fetch_and_op(w, &v, &res, RCX_INT64, me, 3, RCX_SUM),
		    -EINVAL);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_EQ(mine[3], 0);
	TP_CHECK_EQ(rcx_win_attach(w, mine, 8), -EINVAL);
	TP_CHECK_OK(rcx_win_allocate(g, 64, 1, NULL, &p, &plain));
	TP_CHECK_EQ(rcx_win_shared_query(plain, 0, &sz, &du, &p), -EINVAL);
	TP_CHECK_OK(rcx_win_free(&plain));
	TP_CHECK_OK(rcx_win_free(&w));
out:
	rcx_group_free(&g);
}

/*
 * MPICH's test/mpi/rma/win_shared_noncontig.c, written for rcx: each
 * rank of the node allocates 10000 ints (alloc_shared_noncontig), writes
 * its own in a lock_all epoch, syncs around a barrier, and reads every
 * rank's part through the queried pointers.
 */
#define NC_ELEMS 10000

static void sc_mpich_noncontig(struct tp_job *j)
{
	struct rcx_group *g = node_group(j);
	struct rcx_info *info = NULL;
	struct rcx_win *w = NULL;
	int32_t *mine = NULL, *p;
	size_t sz, du;
	int i, r, errors = 0;

	if (!g)
		return;
	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_ALLOC_SHARED_NONCONTIG, "true"));
	TP_CHECK_OK(rcx_win_allocate_shared(g, sizeof(int32_t) * NC_ELEMS, 4,
					    info, (void **)&mine, &w));
	rcx_info_free(&info);
	if (!w)
		goto out;
	TP_CHECK_OK(rcx_win_lock_all(w));
	for (i = 0; i < NC_ELEMS; i++)
		mine[i] = i;
	TP_CHECK_OK(rcx_win_sync(w));
	TP_CHECK_OK(rcx_group_barrier(g));
	TP_CHECK_OK(rcx_win_sync(w));
	for (r = 0; r < rcx_group_size(g); r++) {
		p = NULL;
		TP_CHECK_OK(rcx_win_shared_query(w, r, &sz, &du, (void **)&p));
		TP_CHECK_EQ(sz, NC_ELEMS * sizeof(int32_t));
		for (i = 0; p && i < NC_ELEMS; i++)
			errors += p[i] != i;
	}
	TP_CHECK_EQ(errors, 0);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_free(&w));
out:
	rcx_group_free(&g);
}

/* ---- the peer role */

static const struct tp_scenario scenarios[] = {
	{ .name = "layout", .run = sc_layout },
	{ .name = "empty", .run = sc_empty },
	{ .name = "rma", .run = sc_rma },
	{ .name = "atomics", .run = sc_atomics },
	{ .name = "nodes", .run = sc_nodes },
	{ .name = "bad", .run = sc_bad },
	{ .name = "mpich_noncontig", .run = sc_mpich_noncontig },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("winshared", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_winshared = { "winshared", peer_main };

/* ---- the CUnit side: one job per test (4 ranks: two per node under
 * auto's two nodes) */

static void job(int n, const char *scenario, int timeout_s)
{
	CU_ASSERT_EQUAL(tu_mp_run(n, "winshared", scenario, timeout_s), 0);
}

static void test_layout(void)
{
	job(4, "layout", 300);
}

static void test_empty(void)
{
	job(4, "empty", 300);
}

static void test_rma(void)
{
	job(4, "rma", 300);
}

static void test_atomics(void)
{
	job(4, "atomics", 300);
}

static void test_nodes(void)
{
	job(2, "nodes", 300);
}

static void test_bad(void)
{
	job(4, "bad", 300);
}

static void test_noncontig(void)
{
	job(4, "mpich_noncontig", 300);
}

static const CU_TestInfo tests[] = {
	{ "store_load_layout_query", test_layout },
	{ "empty_parts_proc_null", test_empty },
	{ "rma_on_shared_window", test_rma },
	{ "cpu_atomics_and_rcx_atomics", test_atomics },
	{ "two_nodes_refused", test_nodes },
	{ "bad_input", test_bad },
	{ "mpich_win_shared_noncontig", test_noncontig },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_winshared = {
	"winshared", TU_DEVICE, NULL, NULL, tests,
};
