/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "coll": the group collectives rcx_group_bcast/reduce/allreduce/
 * gather and their nonblocking forms on 2, 3 and 4 processes (sizes that
 * are and are not powers of two), every root, every element type and
 * operation, eager and rendezvous sizes, in place, on sub-groups, with
 * a continuation; each result is checked against a sum computed here.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "tu.h"
#include "tu_mp.h"

static const int dtypes[] = { RCX_INT32, RCX_INT64, RCX_UINT64, RCX_FLOAT,
			      RCX_DOUBLE };
static const int ops[] = { RCX_SUM,  RCX_PROD, RCX_MIN, RCX_MAX,
			   RCX_BAND, RCX_BOR,  RCX_BXOR };

/* eager, and long enough for the rendezvous (past RCX_EAGER_SIZE) */
static const size_t counts[] = { 5, 40000 };

static bool is_float(int dt)
{
	return dt == RCX_FLOAT || dt == RCX_DOUBLE;
}

static size_t esize(int dt)
{
	return dt == RCX_INT32 || dt == RCX_FLOAT ? 4 : 8;
}

/* Rank r's element i: small, exact in every type, negative in some. */
static int64_t val(int dt, int r, size_t i)
{
	int64_t v = (int64_t)((r * 7 + i * 3) % 11);

	return dt == RCX_UINT64 ? v + 1 : v - 4;
}

static void put_val(int dt, void *buf, size_t i, int64_t v)
{
	switch (dt) {
	case RCX_INT32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case RCX_INT64:
	case RCX_UINT64:
		((int64_t *)buf)[i] = v;
		break;
	case RCX_FLOAT:
		((float *)buf)[i] = (float)v;
		break;
	case RCX_DOUBLE:
		((double *)buf)[i] = (double)v;
		break;
	}
}

static int64_t get_val(int dt, const void *buf, size_t i)
{
	switch (dt) {
	case RCX_INT32:
		return ((const int32_t *)buf)[i];
	case RCX_FLOAT:
		return (int64_t)((const float *)buf)[i];
	case RCX_DOUBLE:
		return (int64_t)((const double *)buf)[i];
	}
	return ((const int64_t *)buf)[i];
}

/* The reference: a op b on int64 (the values never overflow it). */
static int64_t ref(int op, int64_t a, int64_t b)
{
	switch (op) {
	case RCX_SUM:
		return a + b;
	case RCX_PROD:
		return a * b;
	case RCX_MIN:
		return b < a ? b : a;
	case RCX_MAX:
		return b > a ? b : a;
	case RCX_BAND:
		return a & b;
	case RCX_BOR:
		return a | b;
	}
	return a ^ b;
}

static int64_t expect(int dt, int op, int n, size_t i)
{
	int64_t e = val(dt, 0, i);
	int r;

	for (r = 1; r < n; r++)
		e = ref(op, e, val(dt, r, i));
	return e;
}

/* out's count elements against the reduction of every rank's; bad ones */
static size_t check_red(int dt, int op, int n, const void *out, size_t count)
{
	size_t i, bad = 0;

	for (i = 0; i < count; i++)
		bad += get_val(dt, out, i) != expect(dt, op, n, i);
	return bad;
}

static void fill(int dt, void *buf, int r, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++)
		put_val(dt, buf, i, val(dt, r, i));
}

/* Every type and op: reduce at every root, allreduce (in place too). */
static void reductions(struct rcx_group *g)
{
	int me = rcx_group_rank(g), n = rcx_group_size(g), root;
	size_t d, o, k, max = counts[1] * 8;
	uint8_t *in = malloc(max), *out = malloc(max);

	if (!TP_CHECK(in && out))
		goto out;
	for (d = 0; d < TP_COUNT(dtypes); d++) {
		int dt = dtypes[d];

		for (o = 0; o < TP_COUNT(ops); o++) {
			int op = ops[o];

			if (is_float(dt) && op >= RCX_BAND) {
				TP_CHECK_EQ(rcx_group_allreduce(g, in, out, 1,
								dt, op),
					    -EINVAL);
				continue;
			}
			for (k = 0; k < TP_COUNT(counts); k++) {
				size_t c = counts[k];

				fill(dt, in, me, c);
				memset(out, 0xee, c * esize(dt));
				TP_CHECK_OK(rcx_group_allreduce(g, in, out, c,
								dt, op));
				if (TP_CHECK_EQ(check_red(dt, op, n, out, c),
						0))
					continue;
				printf("allreduce dtype %d op %d count %zu\n",
				       dt, op, c);
			}
			/* in place */
			fill(dt, out, me, counts[0]);
			TP_CHECK_OK(rcx_group_allreduce(g, out, out, counts[0],
							dt, op));
			TP_CHECK_EQ(check_red(dt, op, n, out, counts[0]), 0);
			for (root = 0; root < n; root++) {
				fill(dt, in, me, counts[0]);
				memset(out, 0xee, counts[0] * esize(dt));
				TP_CHECK_OK(rcx_group_reduce(
					g, in, me == root ? out : NULL,
					counts[0], dt, op, root));
				if (me == root)
					TP_CHECK_EQ(check_red(dt, op, n, out,
							      counts[0]),
						    0);
			}
		}
	}
	/* a long reduce, to the last rank */
	fill(RCX_INT64, in, me, counts[1]);
	TP_CHECK_OK(rcx_group_reduce(g, in, out, counts[1], RCX_INT64, RCX_SUM,
				     n - 1));
	if (me == n - 1)
		TP_CHECK_EQ(check_red(RCX_INT64, RCX_SUM, n, out, counts[1]),
			    0);
out:
	free(in);
	free(out);
}

static uint8_t pattern(int root, size_t i)
{
	return (uint8_t)(root * 31 + i * 7 + 1);
}

/* bcast and gather from every root, short and long. */
static void moves(struct rcx_group *g)
{
	int me = rcx_group_rank(g), n = rcx_group_size(g), root, r;
	size_t k, i, bad, lens[] = { 1, 1000, 300000 };
	uint8_t *buf = malloc(lens[2] * 4);

	if (!TP_CHECK(buf))
		return;
	for (k = 0; k < TP_COUNT(lens); k++) {
		for (root = 0; root < n; root++) {
			for (i = 0; i < lens[k]; i++)
				buf[i] = me == root ? pattern(root, i) : 0;
			TP_CHECK_OK(rcx_group_bcast(g, buf, lens[k], root));
			for (i = 0, bad = 0; i < lens[k]; i++)
				bad += buf[i] != pattern(root, i);
			TP_CHECK_EQ(bad, 0);
		}
	}
	for (k = 0; k < TP_COUNT(lens) - 1; k++) {
		uint8_t *in = malloc(lens[k]);

		if (!TP_CHECK(in))
			break;
		for (i = 0; i < lens[k]; i++)
			in[i] = pattern(me, i);
		for (root = 0; root < n; root++) {
			memset(buf, 0, lens[k] * (size_t)n);
			TP_CHECK_OK(rcx_group_gather(
				g, in, lens[k], me == root ? buf : NULL, root));
			if (me != root)
				continue;
			for (r = 0, bad = 0; r < n; r++)
				for (i = 0; i < lens[k]; i++)
					bad += buf[(size_t)r * lens[k] + i] !=
					       pattern(r, i);
			TP_CHECK_EQ(bad, 0);
		}
		free(in);
	}
	free(buf);
}

static void on_done(struct rcx_status *st, void *arg)
{
	(void)st;
	++*(int *)arg;
}

/*
 * Nonblocking: a bcast, an allreduce and a gather in flight at once,
 * tested to completion; a continuation follows another allreduce.
 */
static void nonblocking(struct tp_job *j, struct rcx_group *g)
{
	int me = rcx_group_rank(g), n = rcx_group_size(g), ran = 0, flag = 0;
	int64_t in[8], out[8], red[8], all[8 * 8];
	struct rcx_req *r[3], *cr = NULL, *op;
	struct rcx_status st;
	uint8_t b[64];
	size_t i;

	memset(b, me == n - 1 ? 0x5c : 0, sizeof(b));
	fill(RCX_INT64, in, me, 8);
	TP_CHECK_OK(rcx_group_ibcast(g, b, sizeof(b), n - 1, &r[0]));
	TP_CHECK_OK(
		rcx_group_iallreduce(g, in, out, 8, RCX_INT64, RCX_MAX, &r[1]));
	TP_CHECK_OK(rcx_group_igather(g, in, sizeof(in), all, 0, &r[2]));
	while (!flag)
		TP_CHECK_OK(rcx_testall(3, r, &flag, RCX_STATUSES_IGNORE));
	for (i = 0; i < sizeof(b); i++)
		TP_CHECK_EQ(b[i], 0x5c);
	TP_CHECK_EQ(check_red(RCX_INT64, RCX_MAX, n, out, 8), 0);
	if (me == 0)
		for (i = 0; i < (size_t)n * 8; i++)
			TP_CHECK_EQ(all[i],
				    val(RCX_INT64, (int)(i / 8), i % 8));
	/* a continuation follows the request */
	TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &cr));
	TP_CHECK_OK(
		rcx_group_iallreduce(g, in, red, 8, RCX_INT64, RCX_SUM, &op));
	TP_CHECK_OK(rcx_continue(&op, on_done, &ran, 0, &st, cr));
	TP_CHECK(op == NULL);
	TP_CHECK_OK(rcx_wait(&cr, RCX_STATUS_IGNORE));
	TP_CHECK_EQ(ran, 1);
	TP_CHECK_EQ(st.error, 0);
	TP_CHECK_EQ(check_red(RCX_INT64, RCX_SUM, n, red, 8), 0);
	TP_CHECK_OK(rcx_req_free(&cr));
	/* freed while it runs: it still completes (the group holds). Its
	 * buffers must outlive it, and nothing says when that is: not on
	 * this stack, which the barrier below may well outlast */
	{
		static int64_t fin[8], fred[8];

		memcpy(fin, in, sizeof(fin));
		TP_CHECK_OK(rcx_group_iallreduce(g, fin, fred, 8, RCX_INT64,
						 RCX_SUM, &op));
		TP_CHECK_OK(rcx_req_free(&op));
	}
	TP_CHECK_OK(rcx_group_barrier(g));
}

static void bad_args(struct rcx_group *g)
{
	struct rcx_req *r = NULL;
	int64_t v = 0, w;

	TP_CHECK_EQ(rcx_group_bcast(NULL, &v, 8, 0), -EINVAL);
	TP_CHECK_EQ(rcx_group_bcast(g, &v, 8, rcx_group_size(g)), -EINVAL);
	TP_CHECK_EQ(rcx_group_bcast(g, NULL, 8, 0), -EINVAL);
	TP_CHECK_EQ(rcx_group_ibcast(g, &v, 8, 0, NULL), -EINVAL);
	TP_CHECK_EQ(rcx_group_allreduce(g, &v, &w, 1, 99, RCX_SUM), -EINVAL);
	TP_CHECK_EQ(rcx_group_allreduce(g, &v, &w, 1, RCX_INT64, 99), -EINVAL);
	TP_CHECK_EQ(rcx_group_allreduce(g, &v, &w, 1, RCX_INT64, RCX_REPLACE),
		    -EINVAL);
	TP_CHECK_EQ(rcx_group_allreduce(g, &v, NULL, 1, RCX_INT64, RCX_SUM),
		    -EINVAL);
	TP_CHECK_EQ(rcx_group_reduce(g, &v, &w, 1, RCX_DOUBLE, RCX_BXOR, 0),
		    -EINVAL);
	TP_CHECK_EQ(rcx_group_reduce(g, &v, &w, 1, RCX_INT64, RCX_SUM, -1),
		    -EINVAL);
	TP_CHECK_EQ(rcx_group_igather(g, &v, 8, NULL, rcx_group_rank(g), &r),
		    -EINVAL);
	TP_CHECK(r == NULL);
}

/* On the world, then on sub-groups: by parity, and all but rank 0. */
static void sc_all(struct tp_job *j)
{
	struct rcx_group *s = NULL;
	int zero = 0;

	bad_args(j->g);
	moves(j->g);
	reductions(j->g);
	nonblocking(j, j->g);
	TP_CHECK_OK(rcx_group_split(j->g, j->rank % 2, j->rank, &s));
	moves(s);
	reductions(s);
	nonblocking(j, s);
	TP_CHECK_OK(rcx_group_free(&s));
	TP_CHECK_OK(rcx_group_excl(j->g, 1, &zero, &s));
	/* the parent freed first (everywhere: no closing barrier on it) */
	TP_CHECK_OK(rcx_group_free(&j->g));
	if (s) {
		reductions(s);
		nonblocking(j, s);
		TP_CHECK_OK(rcx_group_free(&s));
	}
}

static const struct tp_scenario scenarios[] = {
	{ .name = "all", .run = sc_all },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("coll", scenarios, TP_COUNT(scenarios), argc, argv);
}

const struct tu_peer tu_peer_coll = { "coll", peer_main };

static void test_2(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "coll", "all", 300), 0);
}

static void test_3(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(3, "coll", "all", 300), 0);
}

static void test_4(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(4, "coll", "all", 300), 0);
}

static const CU_TestInfo tests[] = {
	{ "collectives_2_ranks", test_2 },
	{ "collectives_3_ranks", test_3 },
	{ "collectives_4_ranks", test_4 },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_coll = {
	"coll", TU_DEVICE, NULL, NULL, tests,
};
