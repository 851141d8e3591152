/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The win suite's accumulates and atomics (test_win.c runs them): every
 * accumulate call x datatype x operation against a reference computed
 * here, on the NIC path, the software path and misaligned memory; many
 * int64 elements in one message; atomicity under contention and
 * same-location order across the two paths.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "lib/win/win_int.h"
#include "providers/fault/fault.h"
#include "tu.h"
#include "tu_mp.h"
#include "test_win.h"

/* ---- accumulates against a reference */

union elem {
	int32_t i32;
	int64_t i64;
	uint64_t u64;
	float f32;
	double f64;
	uint8_t b[8];
};

static const int dtypes[] = { RCX_INT32, RCX_INT64, RCX_UINT64, RCX_FLOAT,
			      RCX_DOUBLE };
static const char *const dt_names[] = { "",	  "int32", "int64",
					"uint64", "float", "double" };
static const char *const op_names[] = { "",	   "SUM",  "PROD", "MIN",
					"MAX",	   "BAND", "BOR",  "BXOR",
					"REPLACE", "NO_OP" };

static size_t esize(int dt)
{
	return dt == RCX_INT32 || dt == RCX_FLOAT ? 4 : 8;
}

static bool bitwise(int op)
{
	return op == RCX_BAND || op == RCX_BOR || op == RCX_BXOR;
}

static bool is_fp(int dt)
{
	return dt == RCX_FLOAT || dt == RCX_DOUBLE;
}

/*
 * Small values (products and sums stay exact and in range) for
 * arithmetic; wider bit patterns for the bitwise ops. a: 0 initial
 * value, 1 operand.
 */
static union elem val(int dt, int op, int which, int owner, int origin, int k)
{
	long v = ((owner * 7 + origin * 3 + k * 5 + which * 11) % 9) - 4;
	union elem e;

	memset(&e, 0, sizeof(e));
	if (bitwise(op))
		v = (long)(0x5a3c96e1L ^ (owner * 0x1111L) ^
			   (origin * 0x10101L) ^ (k * 0x3f0L) ^ (which << 20));
	switch (dt) {
	case RCX_INT32:
		e.i32 = (int32_t)v;
		break;
	case RCX_INT64:
		e.i64 = bitwise(op) ? (int64_t)v << 24 | v : v;
		break;
	case RCX_UINT64:
		e.u64 = bitwise(op) ? (uint64_t)v << 28 | (uint64_t)v
				    : (uint64_t)(v + 4);
		break;
	case RCX_FLOAT:
		e.f32 = (float)v / 2;
		break;
	case RCX_DOUBLE:
		e.f64 = (double)v / 4;
		break;
	}
	return e;
}

/* The reference: a op b, written independently of the library. */
static union elem ref(int dt, int op, union elem a, union elem b)
{
	union elem r = a;

	if (op == RCX_NO_OP)
		return a;
	if (op == RCX_REPLACE)
		return b;
	switch (dt) {
	case RCX_INT32:
		if (op == RCX_SUM)
			r.i32 = a.i32 + b.i32;
		if (op == RCX_PROD)
			r.i32 = a.i32 * b.i32;
		if (op == RCX_MIN)
			r.i32 = a.i32 < b.i32 ? a.i32 : b.i32;
		if (op == RCX_MAX)
			r.i32 = a.i32 > b.i32 ? a.i32 : b.i32;
		if (op == RCX_BAND)
			r.i32 = a.i32 & b.i32;
		if (op == RCX_BOR)
			r.i32 = a.i32 | b.i32;
		if (op == RCX_BXOR)
			r.i32 = a.i32 ^ b.i32;
		break;
	case RCX_INT64:
		if (op == RCX_SUM)
			r.i64 = a.i64 + b.i64;
		if (op == RCX_PROD)
			r.i64 = a.i64 * b.i64;
		if (op == RCX_MIN)
			r.i64 = a.i64 < b.i64 ? a.i64 : b.i64;
		if (op == RCX_MAX)
			r.i64 = a.i64 > b.i64 ? a.i64 : b.i64;
		if (op == RCX_BAND)
			r.i64 = a.i64 & b.i64;
		if (op == RCX_BOR)
			r.i64 = a.i64 | b.i64;
		if (op == RCX_BXOR)
			r.i64 = a.i64 ^ b.i64;
		break;
	case RCX_UINT64:
		if (op == RCX_SUM)
			r.u64 = a.u64 + b.u64;
		if (op == RCX_PROD)
			r.u64 = a.u64 * b.u64;
		if (op == RCX_MIN)
			r.u64 = a.u64 < b.u64 ? a.u64 : b.u64;
		if (op == RCX_MAX)
			r.u64 = a.u64 > b.u64 ? a.u64 : b.u64;
		if (op == RCX_BAND)
			r.u64 = a.u64 & b.u64;
		if (op == RCX_BOR)
			r.u64 = a.u64 | b.u64;
		if (op == RCX_BXOR)
			r.u64 = a.u64 ^ b.u64;
		break;
	case RCX_FLOAT:
		if (op == RCX_SUM)
			r.f32 = a.f32 + b.f32;
		if (op == RCX_PROD)
			r.f32 = a.f32 * b.f32;
		if (op == RCX_MIN)
			r.f32 = a.f32 < b.f32 ? a.f32 : b.f32;
		if (op == RCX_MAX)
			r.f32 = a.f32 > b.f32 ? a.f32 : b.f32;
		break;
	case RCX_DOUBLE:
		if (op == RCX_SUM)
			r.f64 = a.f64 + b.f64;
		if (op == RCX_PROD)
			r.f64 = a.f64 * b.f64;
		if (op == RCX_MIN)
			r.f64 = a.f64 < b.f64 ? a.f64 : b.f64;
		if (op == RCX_MAX)
			r.f64 = a.f64 > b.f64 ? a.f64 : b.f64;
		break;
	}
	return r;
}

/*
 * Layout of one rank's window: per origin a slot of AC_STRIDE bytes
 * holding AC_N accumulate elements, AC_N get_accumulate elements (each
 * contiguous), one fetch_and_op element and one compare_and_swap element,
 * fields 8-byte aligned. shift moves it all by 4 bytes, so
 * 8-byte elements are misaligned and cannot use NIC atomics.
 */
#define AC_N	  6
#define AC_ACC	  0
#define AC_GACC	  (AC_N * 8)
#define AC_FOP	  (2 * AC_N * 8)
#define AC_CAS	  (2 * AC_N * 8 + 8)
#define AC_STRIDE (2 * AC_N * 8 + 16)

struct ac_ctx {
	struct tp_job *j;
	struct rcx_win *w;
	uint8_t *base;
	size_t shift;
	const char *what;
};

static uint8_t *ac_at(struct ac_ctx *c, int dt, int origin, size_t field, int k)
{
	return c->base + c->shift + (size_t)origin * AC_STRIDE + field +
	       (size_t)k * esize(dt);
}

static size_t ac_disp(struct ac_ctx *c, int origin, size_t field)
{
	return c->shift + (size_t)origin * AC_STRIDE + field;
}

static bool elem_eq(int dt, const void *a, const void *b)
{
	return !memcmp(a, b, esize(dt));
}

static void ac_fail(struct ac_ctx *c, int dt, int op, const char *call,
		    int other, int k, const void *got, const void *want)
{
	union elem g, w;

	memcpy(&g, got, 8);
	memcpy(&w, want, 8);
	TP_FAIL("%s %s %s %s with %d, element %d: got 0x%llx, want 0x%llx",
		c->what, call, dt_names[dt], op_names[op], other, k,
		(unsigned long long)(esize(dt) == 4 ? g.u64 & 0xffffffffu
						    : g.u64),
		(unsigned long long)(esize(dt) == 4 ? w.u64 & 0xffffffffu
						    : w.u64));
}

/* One (datatype, op) round: every rank with every rank, self included. */
static void ac_round(struct ac_ctx *c, int dt, int op)
{
	struct tp_job *j = c->j;
	size_t es = esize(dt);
	union elem v[AC_N], e, want, *res, *fres, *cres, cmp;
	int t, o, k;

	res = calloc((size_t)j->size * AC_N, sizeof(*res));
	fres = calloc(j->size, sizeof(*fres));
	cres = calloc(j->size, sizeof(*cres));
	for (o = 0; o < j->size; o++) {
		for (k = 0; k < AC_N; k++) {
			e = val(dt, op, 0, j->rank, o, k);
			memcpy(ac_at(c, dt, o, AC_ACC, k), &e, es);
			memcpy(ac_at(c, dt, o, AC_GACC, k), &e, es);
		}
		e = val(dt, op, 0, j->rank, o, AC_N);
		memcpy(ac_at(c, dt, o, AC_FOP, 0), &e, es);
		memcpy(ac_at(c, dt, o, AC_CAS, 0), &e, es);
	}
	tw_fence(c->w);
	for (t = 0; t < j->size; t++) {
		uint8_t ops[AC_N * 8];

		for (k = 0; k < AC_N; k++) {
			v[k] = val(dt, op, 1, t, j->rank, k);
			memcpy(ops + k * es, &v[k], es);
		}
		TP_CHECK_OK(rcx_accumulate(c->w, ops, AC_N, dt, t,
					   ac_disp(c, j->rank, AC_ACC), op));
		TP_CHECK_OK(rcx_get_accumulate(
			c->w, ops, (uint8_t *)&res[t * AC_N], AC_N, dt, t,
			ac_disp(c, j->rank, AC_GACC), op));
		e = val(dt, op, 1, t, j->rank, AC_N);
		TP_CHECK_OK(rcx_fetch_and_op(c->w, &e, &fres[t], dt, t,
					     ac_disp(c, j->rank, AC_FOP), op));
		if (!is_fp(dt) && op == RCX_SUM) {
			/* swaps where the compare value matches: even t */
			cmp = val(dt, op, 0, t, j->rank, AC_N);
			if (t & 1)
				cmp.u64 ^= 1;
			TP_CHECK_OK(rcx_compare_and_swap(
				c->w, &e, &cmp, &cres[t], dt, t,
				ac_disp(c, j->rank, AC_CAS)));
		}
	}
	tw_fence(c->w);
	/* the results are in a contiguous array of es-byte elements */
	for (t = 0; t < j->size; t++) {
		for (k = 0; k < AC_N; k++) {
			want = val(dt, op, 0, t, j->rank, k);
			if (!elem_eq(dt, (uint8_t *)&res[t * AC_N] + k * es,
				     &want))
				ac_fail(c, dt, op, "get_accumulate result", t,
					k, (uint8_t *)&res[t * AC_N] + k * es,
					&want);
		}
		want = val(dt, op, 0, t, j->rank, AC_N);
		if (!elem_eq(dt, &fres[t], &want))
			ac_fail(c, dt, op, "fetch_and_op result", t, 0,
				&fres[t], &want);
		if (!is_fp(dt) && op == RCX_SUM &&
		    !elem_eq(dt, &cres[t], &want))
			ac_fail(c, dt, op, "compare_and_swap result", t, 0,
				&cres[t], &want);
	}
	/* what every origin did to this rank's memory */
	for (o = 0; o < j->size; o++) {
		for (k = 0; k < AC_N; k++) {
			want = ref(dt, op, val(dt, op, 0, j->rank, o, k),
				   val(dt, op, 1, j->rank, o, k));
			if (!elem_eq(dt, ac_at(c, dt, o, AC_ACC, k), &want))
				ac_fail(c, dt, op, "accumulate", o, k,
					ac_at(c, dt, o, AC_ACC, k), &want);
			if (!elem_eq(dt, ac_at(c, dt, o, AC_GACC, k), &want))
				ac_fail(c, dt, op, "get_accumulate", o, k,
					ac_at(c, dt, o, AC_GACC, k), &want);
		}
		e = val(dt, op, 0, j->rank, o, AC_N);
		want = ref(dt, op, e, val(dt, op, 1, j->rank, o, AC_N));
		if (!elem_eq(dt, ac_at(c, dt, o, AC_FOP, 0), &want))
			ac_fail(c, dt, op, "fetch_and_op", o, 0,
				ac_at(c, dt, o, AC_FOP, 0), &want);
		if (!is_fp(dt) && op == RCX_SUM) {
			/* swapped at even targets (see above) */
			want = (j->rank & 1) ? e
					     : val(dt, op, 1, j->rank, o, AC_N);
			if (!elem_eq(dt, ac_at(c, dt, o, AC_CAS, 0), &want))
				ac_fail(c, dt, op, "compare_and_swap", o, 0,
					ac_at(c, dt, o, AC_CAS, 0), &want);
		}
	}
	free(res);
	free(fres);
	free(cres);
}

static void ac_window(struct tp_job *j, const char *what, bool nic,
		      size_t shift)
{
	struct ac_ctx c = { .j = j, .shift = shift, .what = what };
	struct rcx__win_stats st;
	struct rcx_info *info;
	size_t d;
	int op;

	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(
		rcx_info_set(info, RCX_ACCUMULATE_NIC, nic ? "true" : "false"));
	TP_CHECK_OK(rcx_win_allocate(j->g, (size_t)j->size * AC_STRIDE + 8, 1,
				     info, (void **)&c.base, &c.w));
	rcx_info_free(&info);
	tw_fence(c.w);
	for (d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
		for (op = RCX_SUM; op <= RCX_NO_OP; op++) {
			if (is_fp(dtypes[d]) && bitwise(op)) {
				/* refused, nothing sent */
				TP_CHECK_EQ(rcx_accumulate(c.w, c.base, 1,
							   dtypes[d], 0, 0, op),
					    -EINVAL);
				continue;
			}
			ac_round(&c, dtypes[d], op);
		}
	}
	TP_CHECK_OK(rcx__win_stats(c.w, &st));
	/* which path ran: NIC atomics only for aligned 64-bit SUM, NO_OP
	 * and CAS with the NIC allowed; the software path otherwise */
	if (nic && !shift)
		TP_CHECK(st.nic > 0);
	else
		TP_CHECK_EQ(st.nic, 0);
	TP_CHECK(st.sw > 0);
	printf("rank %d: %s: %llu NIC atomics, %llu software accumulates\n",
	       j->rank, what, (unsigned long long)st.nic,
	       (unsigned long long)st.sw);
	TP_CHECK_OK(rcx_win_fence(c.w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&c.w));
}

void tw_sc_acc(struct tp_job *j)
{
	ac_window(j, "nic", true, 0);
	ac_window(j, "software", false, 0);
	ac_window(j, "misaligned", true, 4);
}

/* ---- atomicity under contention, same-location order */

#define AT_K 100

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Every rank fetch-adds 1 AT_K times to one word at rank 0 (rank 0
 * included, through its loopback): the old values seen by all must be
 * 0 .. size*AT_K-1, each once.
 */
static void at_fetch_add(struct tp_job *j, struct rcx_win *w, int dt,
			 int64_t *word)
{
	int64_t *seen = calloc(AT_K, sizeof(*seen));
	int64_t *all = calloc((size_t)j->size * AT_K, sizeof(*all));
	union elem one, old;
	int k, n = j->size * AT_K, bad = 0;

	memset(&one, 0, sizeof(one));
	if (dt == RCX_INT32)
		one.i32 = 1;
	else if (dt == RCX_DOUBLE)
		one.f64 = 1;
	else
		one.i64 = 1;
	if (j->rank == 0)
		*word = 0;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (k = 0; k < AT_K; k++) {
		memset(&old, 0, sizeof(old));
		TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, dt, 0, 0, RCX_SUM));
		TP_CHECK_OK(rcx_win_flush(w, 0));
		seen[k] = dt == RCX_INT32    ? old.i32
			  : dt == RCX_DOUBLE ? (int64_t)old.f64
					     : old.i64;
	}
	TP_CHECK_OK(rcx_group_allgather(j->g, seen, AT_K * sizeof(*seen), all));
	qsort(all, n, sizeof(*all), cmp_i64);
	for (k = 0; k < n; k++)
		bad += all[k] != k;
	if (bad)
		TP_FAIL("%s fetch_and_op from %d ranks: %d old values wrong",
			dt_names[dt], j->size, bad);
	free(seen);
	free(all);
}

/* Compare-and-swap increments: the total must come out exact. */
static void at_cas(struct tp_job *j, struct rcx_win *w, int dt, int64_t *word)
{
	union elem cur, nv, got;
	int k, tries = 0;

	if (j->rank == 0)
		*word = 0;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (k = 0; k < AT_K; k++) {
		do {
			memset(&cur, 0, sizeof(cur));
			TP_CHECK_OK(rcx_fetch_and_op(w, NULL, &cur, dt, 0, 0,
						     RCX_NO_OP));
			TP_CHECK_OK(rcx_win_flush(w, 0));
			nv = cur;
			if (dt == RCX_INT32)
				nv.i32++;
			else
				nv.i64++;
			memset(&got, 0xff, sizeof(got));
			TP_CHECK_OK(rcx_compare_and_swap(w, &nv, &cur, &got, dt,
							 0, 0));
			TP_CHECK_OK(rcx_win_flush(w, 0));
			tries++;
		} while (!elem_eq(dt, &got, &cur) && !tp_failures());
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0)
		TP_CHECK_EQ(dt == RCX_INT32 ? *(int32_t *)word : *word,
			    j->size * AT_K);
	printf("rank %d: %s CAS: %d increments in %d tries\n", j->rank,
	       dt_names[dt], AT_K, tries);
}

/*
 * One origin, one location, both paths, no flush between: NIC
 * fetch-add, software REPLACE, NIC fetch-add, NIC atomic read, software
 * MAX, software get_accumulate: each sees the one before.
 */
static void at_mixed(struct tp_job *j, struct rcx_win *w, int64_t *base)
{
	int t = (j->rank + 1) % j->size;
	int64_t ten = 10, hundred = 100, one = 1, seven = 7, five = 5;
	int64_t r1 = -1, r2 = -1, r3 = -1, r4 = -1;

	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, t));
	TP_CHECK_OK(rcx_put(w, &five, 8, t, 1));
	TP_CHECK_OK(rcx_win_flush(w, t));
	TP_CHECK_OK(rcx_fetch_and_op(w, &ten, &r1, RCX_INT64, t, 1, RCX_SUM));
	TP_CHECK_OK(
		rcx_accumulate(w, &hundred, 1, RCX_INT64, t, 1, RCX_REPLACE));
	TP_CHECK_OK(rcx_fetch_and_op(w, &one, &r2, RCX_INT64, t, 1, RCX_SUM));
	TP_CHECK_OK(rcx_get_accumulate(w, NULL, &r3, 1, RCX_INT64, t, 1,
				       RCX_NO_OP));
	TP_CHECK_OK(rcx_accumulate(w, &seven, 1, RCX_INT64, t, 1, RCX_MAX));
	TP_CHECK_OK(rcx_get_accumulate(w, &seven, &r4, 1, RCX_INT64, t, 1,
				       RCX_PROD));
	TP_CHECK_OK(rcx_win_unlock(w, t));
	TP_CHECK_EQ(r1, 5);
	TP_CHECK_EQ(r2, 100);
	TP_CHECK_EQ(r3, 101);
	TP_CHECK_EQ(r4, 101);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(base[1], 707);
}

/* ---- many 64-bit elements in one accumulate */

#define BK_N	  1000
#define BK_ROUNDS 4

/* WRs of op rank j posted since mark, on any endpoint. */
static size_t bk_count(size_t mark, uint8_t op)
{
	struct rcx_fault_wr r;
	size_t i, n = 0;

	for (i = mark; i < rcx__fault_log_count(); i++)
		n += !rcx__fault_log_get(i, &r) && r.op == op;
	return n;
}

/*
 * An int64 SUM get_accumulate of BK_N elements from rank 0 to rank 1 is
 * one message, not one NIC atomic per element: the recording provider
 * shows no atomic posted by rank 0, the window's counters one software
 * message; rank 1 applies the elements with its NIC atomics (so they
 * still exclude single fetch-adds from others). Then, with three ranks,
 * rank 0's bulk SUMs and rank 2's single fetch_and_ops hit the same
 * words at the same time: every increment must land.
 */
void tw_sc_acc_bulk(struct tp_job *j)
{
	static int64_t add[BK_N], old[BK_N];
	struct rcx__win_stats s0, s1;
	struct rcx_win *w;
	int64_t *base, one = 1, got;
	size_t k, mark, bad = 0;
	int r;

	TP_CHECK_OK(
		rcx_win_allocate(j->g, BK_N * 8, 8, NULL, (void **)&base, &w));
	for (k = 0; k < BK_N; k++) {
		base[k] = 3 * (int64_t)k;
		add[k] = (int64_t)k + 1;
	}
	/* before the fence: rank 0's message may come while rank 1 is in it */
	mark = rcx__fault_log_count();
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	tw_fence(w);
	if (j->rank == 0)
		TP_CHECK_OK(rcx_get_accumulate(w, add, old, BK_N, RCX_INT64, 1,
					       0, RCX_SUM));
	tw_fence(w);
	TP_CHECK_OK(rcx__win_stats(w, &s1));
	if (j->rank == 0) {
		TP_CHECK_EQ(s1.sw - s0.sw, 1);
		TP_CHECK_EQ(s1.bulk - s0.bulk, 1);
		TP_CHECK_EQ(s1.nic - s0.nic, 0);
		TP_CHECK_EQ(bk_count(mark, RCX_OP_FADD), 0);
		for (k = 0; k < BK_N; k++)
			bad += old[k] != 3 * (int64_t)k;
		TP_CHECK_EQ(bad, 0);
		printf("rank 0: get_accumulate of %d int64: %llu message, "
		       "%zu atomics posted here\n",
		       BK_N, (unsigned long long)(s1.sw - s0.sw),
		       bk_count(mark, RCX_OP_FADD));
	} else if (j->rank == 1) {
		/* applied here, by the NIC */
		TP_CHECK_EQ(bk_count(mark, RCX_OP_FADD), BK_N);
		for (k = 0; k < BK_N; k++)
			if (base[k] != 4 * (int64_t)k + 1 && !bad++)
				TP_FAIL("word %zu is %lld, not %lld", k,
					(long long)base[k],
					(long long)(4 * (int64_t)k + 1));
		TP_CHECK_EQ(bad, 0);
	}
	/* nothing of the next part before rank 1 has checked */
	tw_fence(w);
	/* an atomic read of them all, as uint64: one message as well */
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	if (j->rank == 0)
		TP_CHECK_OK(rcx_get_accumulate(w, NULL, old, BK_N, RCX_UINT64,
					       1, 0, RCX_NO_OP));
	tw_fence(w);
	TP_CHECK_OK(rcx__win_stats(w, &s1));
	if (j->rank == 0) {
		TP_CHECK_EQ(s1.bulk - s0.bulk, 1);
		for (k = 0, bad = 0; k < BK_N; k++)
			bad += old[k] != 4 * (int64_t)k + 1;
		TP_CHECK_EQ(bad, 0);
	}
	/* bulk and single atomics on the same words at once */
	for (r = 0; r < BK_ROUNDS && j->size > 2; r++) {
		if (j->rank == 0)
			TP_CHECK_OK(rcx_accumulate(w, add, BK_N, RCX_INT64, 1,
						   0, RCX_SUM));
		else if (j->rank == 2)
			for (k = 0; k < BK_N; k++)
				TP_CHECK_OK(rcx_fetch_and_op(w, &one, &got,
							     RCX_INT64, 1, k,
							     RCX_SUM));
		tw_fence(w);
	}
	if (j->rank == 1 && j->size > 2) {
		for (k = 0, bad = 0; k < BK_N; k++)
			if (base[k] != 4 * (int64_t)k + 1 +
					       BK_ROUNDS * ((int64_t)k + 2) &&
			    !bad++)
				TP_FAIL("word %zu is %lld, %lld short", k,
					(long long)base[k],
					(long long)(4 * (int64_t)k + 1 +
						    BK_ROUNDS *
							    ((int64_t)k + 2) -
						    base[k]));
		TP_CHECK_EQ(bad, 0);
	}
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&w));
}

void tw_sc_atomic(struct tp_job *j)
{
	struct rcx_win *w;
	int64_t *base;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	TP_CHECK_OK(rcx_win_lock_all(w));
	at_fetch_add(j, w, RCX_INT64, base); /* NIC */
	at_fetch_add(j, w, RCX_UINT64, base);
	at_fetch_add(j, w, RCX_INT32, base); /* software */
	at_fetch_add(j, w, RCX_DOUBLE, base);
	at_cas(j, w, RCX_INT64, base); /* NIC */
	at_cas(j, w, RCX_INT32, base); /* software */
	TP_CHECK_OK(rcx_win_unlock_all(w));
	at_mixed(j, w, base);
	TP_CHECK_OK(rcx_win_free(&w));
}
