/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Datatypes, strided layouts, window queries and RCX_PROC_NULL as an RMA
 * target (rcx-run, 2 to 4 ranks): every element type x every operation
 * it takes through rcx_accumulate, rcx_get_accumulate, rcx_group_allreduce
 * and a bound allreduce, against a reference computed here; MAXLOC and
 * MINLOC with ties; the combinations refused; strided put, get and
 * accumulate with the gaps left intact, with more blocks than the send
 * queue holds; rcx_win_get_group, get_info, set_name and get_name;
 * RCX_PROC_NULL in every epoch. Three programs of MPICH's test/mpi/rma
 * written again against rcx (named at each).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "tu.h"
#include "tu_mp.h"

/* ---- element types: values written and read as small integers */

enum { K_SINT = 1, K_UINT, K_FLT, K_PAIR };

struct ty {
	int dt;
	const char *name;
	size_t size;
	int kind;
};

#define TY(dt, T, k)                  \
	{                             \
		dt, #dt, sizeof(T), k \
	}
static const struct ty types[] = {
	TY(RCX_INT8, int8_t, K_SINT),
	TY(RCX_UINT8, uint8_t, K_UINT),
	TY(RCX_INT16, int16_t, K_SINT),
	TY(RCX_UINT16, uint16_t, K_UINT),
	TY(RCX_INT32, int32_t, K_SINT),
	TY(RCX_UINT32, uint32_t, K_UINT),
	TY(RCX_INT64, int64_t, K_SINT),
	TY(RCX_UINT64, uint64_t, K_UINT),
	TY(RCX_FLOAT, float, K_FLT),
	TY(RCX_DOUBLE, double, K_FLT),
	TY(RCX_LONG_DOUBLE, long double, K_FLT),
	TY(RCX_FLOAT_INT, struct rcx_float_int, K_PAIR),
	TY(RCX_DOUBLE_INT, struct rcx_double_int, K_PAIR),
	TY(RCX_LONG_INT, struct rcx_long_int, K_PAIR),
	TY(RCX_2INT, struct rcx_2int, K_PAIR),
	TY(RCX_SHORT_INT, struct rcx_short_int, K_PAIR),
	TY(RCX_LONG_DOUBLE_INT, struct rcx_long_double_int, K_PAIR),
};

/* An element to or from a value (and an index, for a pair type). */
#define VAL(T)                                      \
	do {                                        \
		T e_;                               \
		if (set) {                          \
			e_ = (T)*v;                 \
			memcpy(p, &e_, sizeof(e_)); \
		} else {                            \
			memcpy(&e_, p, sizeof(e_)); \
			*v = (long long)e_;         \
		}                                   \
	} while (0)
#define PAIR(T)                                              \
	do {                                                 \
		T e_;                                        \
		memset(&e_, 0, sizeof(e_));                  \
		if (set) {                                   \
			e_.value = (__typeof__(e_.value))*v; \
			e_.index = *idx;                     \
			memcpy(p, &e_, sizeof(e_));          \
		} else {                                     \
			memcpy(&e_, p, sizeof(e_));          \
			*v = (long long)e_.value;            \
			*idx = e_.index;                     \
		}                                            \
	} while (0)

static void el_io(int dt, uint8_t *p, long long *v, int *idx, bool set)
{
	switch (dt) {
	case RCX_INT8:
		VAL(int8_t);
		break;
	case RCX_UINT8:
		VAL(uint8_t);
		break;
	case RCX_INT16:
		VAL(int16_t);
		break;
	case RCX_UINT16:
		VAL(uint16_t);
		break;
	case RCX_INT32:
		VAL(int32_t);
		break;
	case RCX_UINT32:
		VAL(uint32_t);
		break;
	case RCX_INT64:
		VAL(int64_t);
		break;
	case RCX_UINT64:
		VAL(uint64_t);
		break;
	case RCX_FLOAT:
		VAL(float);
		break;
	case RCX_DOUBLE:
		VAL(double);
		break;
	case RCX_LONG_DOUBLE:
		VAL(long double);
		break;
	case RCX_FLOAT_INT:
		PAIR(struct rcx_float_int);
		break;
	case RCX_DOUBLE_INT:
		PAIR(struct rcx_double_int);
		break;
	case RCX_LONG_INT:
		PAIR(struct rcx_long_int);
		break;
	case RCX_2INT:
		PAIR(struct rcx_2int);
		break;
	case RCX_SHORT_INT:
		PAIR(struct rcx_short_int);
		break;
	case RCX_LONG_DOUBLE_INT:
		PAIR(struct rcx_long_double_int);
		break;
	}
}

/* element i of base: value v (and index idx for a pair) */
static void el_set(int dt, void *base, size_t size, size_t i, long long v,
		   int idx)
{
	uint8_t *p = (uint8_t *)base + i * size;

	memset(p, 0, size); /* long double's padding compares equal */
	el_io(dt, p, &v, &idx, true);
}

static long long el_get(int dt, const void *base, size_t size, size_t i,
			int *idx)
{
	long long v = 0;

	*idx = 0;
	el_io(dt, (uint8_t *)base + i * size, &v, idx, false);
	return v;
}

/* the operations a kind takes (accumulates: REPLACE and NO_OP too) */
static const int int_ops[] = { RCX_SUM,	 RCX_PROD,    RCX_MIN,
			       RCX_MAX,	 RCX_BAND,    RCX_BOR,
			       RCX_BXOR, RCX_REPLACE, RCX_NO_OP };
static const int flt_ops[] = { RCX_SUM, RCX_PROD,    RCX_MIN,
			       RCX_MAX, RCX_REPLACE, RCX_NO_OP };
static const int pair_ops[] = { RCX_MAXLOC, RCX_MINLOC, RCX_REPLACE,
				RCX_NO_OP };

static const int *ops_of(const struct ty *t, size_t *n)
{
	if (t->kind == K_PAIR) {
		*n = TP_COUNT(pair_ops);
		return pair_ops;
	}
	if (t->kind == K_FLT) {
		*n = TP_COUNT(flt_ops);
		return flt_ops;
	}
	*n = TP_COUNT(int_ops);
	return int_ops;
}

/* An element as the reference sees it. */
struct ev {
	long long v;
	int idx;
};

/* origin r's element i for op: small, so no type overflows on 4 ranks;
 * pairs tie often (two values), the index says which rank */
static struct ev origin_val(const struct ty *t, int op, int r, size_t i)
{
	struct ev e = { 1 + (long long)((i * 7 + (size_t)r * 3) % 5), r * 10 };

	if (op == RCX_PROD)
		e.v = 1 + (long long)((i + (size_t)r) % 2);
	else if (t->kind == K_PAIR)
		e.v = (long long)((i + (size_t)r) % 2);
	else if (t->kind != K_UINT && op != RCX_BAND && op != RCX_BOR &&
		 op != RCX_BXOR)
		e.v -= 3; /* negative values too */
	return e;
}

/* what a target's element i holds first: it ties with the origins too;
 * index -1 wins a tie, 100 + i loses it */
static struct ev init_val(const struct ty *t, size_t i)
{
	struct ev e = { 1 + (long long)(i % 3), 100 + (int)i };

	if (t->kind == K_PAIR) {
		e.v = (long long)(i % 2);
		if (i % 4 == 0)
			e.idx = -1;
	}
	return e;
}

static struct ev ref_op(int op, struct ev a, struct ev b)
{
	switch (op) {
	case RCX_SUM:
		a.v += b.v;
		break;
	case RCX_PROD:
		a.v *= b.v;
		break;
	case RCX_MIN:
		a.v = b.v < a.v ? b.v : a.v;
		break;
	case RCX_MAX:
		a.v = b.v > a.v ? b.v : a.v;
		break;
	case RCX_BAND:
		a.v &= b.v;
		break;
	case RCX_BOR:
		a.v |= b.v;
		break;
	case RCX_BXOR:
		a.v ^= b.v;
		break;
	case RCX_REPLACE:
		a = b;
		break;
	case RCX_MAXLOC:
	case RCX_MINLOC:
		if (op == RCX_MAXLOC ? b.v > a.v : b.v < a.v)
			a = b;
		else if (b.v == a.v && b.idx < a.idx)
			a.idx = b.idx;
		break;
	}
	return a;
}

static bool ev_check(const struct ty *t, int op, const void *base, size_t i,
		     struct ev want, const char *what)
{
	int idx;
	long long v = el_get(t->dt, base, t->size, i, &idx);

	if (v == want.v && (t->kind != K_PAIR || idx == want.idx))
		return true;
	TP_FAIL("%s %s op %d element %zu: %lld/%d, want %lld/%d", what, t->name,
		op, i, v, idx, want.v, want.idx);
	return false;
}

#define NEL 12 /* elements per block */

/*
 * One type, one op. Window: block 0, which every rank accumulates into
 * (RCX_REPLACE: rank 0 alone), then one block per origin for
 * get_accumulate, whose old values are known.
 */
static void one_acc(struct tp_job *j, const struct ty *t, int op)
{
	size_t es = t->size, i, bl = NEL * es;
	uint8_t *src = calloc(1, bl), *res = calloc((size_t)j->size, bl);
	uint8_t *base = NULL;
	struct rcx_win *w = NULL;
	struct ev want, e;
	int r, tg;

	if (!TP_CHECK(src && res) ||
	    !TP_CHECK_OK(rcx_win_allocate(j->g, bl * (1 + (size_t)j->size), es,
					  NULL, (void **)&base, &w)))
		goto out;
	for (i = 0; i < NEL * (1 + (size_t)j->size); i++) {
		e = init_val(t, i % NEL);
		el_set(t->dt, base, es, i, e.v, e.idx);
	}
	for (i = 0; i < NEL; i++) {
		e = origin_val(t, op, j->rank, i);
		el_set(t->dt, src, es, i, e.v, e.idx);
	}
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (tg = 0; tg < j->size; tg++) {
		if (op != RCX_REPLACE || j->rank == 0)
			TP_CHECK_OK(
				rcx_accumulate(w, src, NEL, t->dt, tg, 0, op));
		TP_CHECK_OK(rcx_get_accumulate(
			w, src, res + (size_t)tg * bl, NEL, t->dt, tg,
			NEL * (1 + (size_t)j->rank), op));
	}
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (i = 0; i < NEL; i++) {
		want = init_val(t, i);
		for (r = 0; r < j->size; r++)
			if (op != RCX_REPLACE || r == 0)
				want = ref_op(op, want,
					      origin_val(t, op, r, i));
		if (!ev_check(t, op, base, i, want, "accumulate"))
			break;
	}
	for (r = 0; r < j->size; r++)
		for (i = 0; i < NEL; i++) {
			want = ref_op(op, init_val(t, i),
				      origin_val(t, op, r, i));
			if (!ev_check(t, op, base + bl * (1 + (size_t)r), i,
				      want, "get_accumulate target"))
				break;
		}
	for (tg = 0; tg < j->size; tg++)
		for (i = 0; i < NEL; i++)
			if (!ev_check(t, op, res + (size_t)tg * bl, i,
				      init_val(t, i), "get_accumulate result"))
				break;
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
out:
	if (w)
		TP_CHECK_OK(rcx_win_free(&w));
	free(src);
	free(res);
}

/* allreduce of one type and op, by the group's collective and, when
 * bound, by a bound collective */
static void one_allreduce(struct tp_job *j, const struct ty *t, int op,
			  bool bound)
{
	size_t es = t->size, i;
	uint8_t *in = calloc(NEL, es), *out = calloc(NEL, es);
	struct rcx_req *init = NULL, *c = NULL;
	struct ev want, e;
	int r;

	if (!TP_CHECK(in && out))
		goto out;
	for (i = 0; i < NEL; i++) {
		e = origin_val(t, op, j->rank, i);
		el_set(t->dt, in, es, i, e.v, e.idx);
	}
	TP_CHECK_OK(rcx_group_allreduce(j->g, in, out, NEL, t->dt, op));
	for (i = 0; i < NEL; i++) {
		want = origin_val(t, op, 0, i);
		for (r = 1; r < j->size; r++)
			want = ref_op(op, want, origin_val(t, op, r, i));
		if (!ev_check(t, op, out, i, want, "allreduce"))
			break;
	}
	if (!bound)
		goto out;
	memset(out, 0, NEL * es);
	if (TP_CHECK_OK(rcx_allreduce_init(in, out, NEL, t->dt, op, j->g, NULL,
					   &init)) &&
	    TP_CHECK_OK(rcx_bind_coll(init, NULL, &c))) {
		TP_CHECK_OK(rcx_start(c));
		TP_CHECK_OK(rcx_wait(&c, NULL));
		for (i = 0; i < NEL; i++) {
			want = origin_val(t, op, 0, i);
			for (r = 1; r < j->size; r++)
				want = ref_op(op, want,
					      origin_val(t, op, r, i));
			if (!ev_check(t, op, out, i, want, "bound allreduce"))
				break;
		}
		TP_CHECK_OK(rcx_bind_free(&c, 1));
	}
	if (init)
		TP_CHECK_OK(rcx_req_free(&init));
out:
	free(in);
	free(out);
}

static void sc_types(struct tp_job *j)
{
	const int *ops;
	size_t k, o, n;
	int fails = tp_failures();

	for (k = 0; k < TP_COUNT(types) && tp_failures() == fails; k++) {
		ops = ops_of(&types[k], &n);
		for (o = 0; o < n; o++) {
			one_acc(j, &types[k], ops[o]);
			if (ops[o] == RCX_REPLACE || ops[o] == RCX_NO_OP)
				continue;
			/* one bound allreduce per type, and MINLOC */
			one_allreduce(j, &types[k], ops[o],
				      o == 0 || ops[o] == RCX_MINLOC);
		}
	}
}

/* combinations that no call takes: -EINVAL, nothing changed */
static void sc_refused(struct tp_job *j)
{
	static const int bad[][2] = {
		{ RCX_INT32, RCX_MAXLOC },
		{ RCX_DOUBLE, RCX_MINLOC },
		{ RCX_FLOAT, RCX_BAND },
		{ RCX_LONG_DOUBLE, RCX_BXOR },
		{ RCX_2INT, RCX_SUM },
		{ RCX_DOUBLE_INT, RCX_MAX },
		{ RCX_SHORT_INT, RCX_BOR },
		{ RCX_UINT8, RCX_MAXLOC },
		{ RCX_LONG_DOUBLE_INT + 1, RCX_SUM },
		{ 0, RCX_SUM },
		{ RCX_INT16, RCX_MINLOC + 1 },
	};
	uint8_t src[64], res[64], cmp[64], *base = NULL, zero[256];
	struct rcx_req *init = NULL;
	struct rcx_win *w = NULL;
	size_t k;
	int t = (j->rank + 1) % j->size;

	memset(src, 1, sizeof(src));
	memset(cmp, 0, sizeof(cmp));
	memset(zero, 0, sizeof(zero));
	if (!TP_CHECK_OK(rcx_win_allocate(j->g, sizeof(zero), 1, NULL,
					  (void **)&base, &w)))
		return;
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (k = 0; k < TP_COUNT(bad); k++) {
		TP_CHECK_EQ(
			rcx_accumulate(w, src, 2, bad[k][0], t, 0, bad[k][1]),
			-EINVAL);
		TP_CHECK_EQ(rcx_get_accumulate(w, src, res, 2, bad[k][0], t, 0,
					       bad[k][1]),
			    -EINVAL);
		TP_CHECK_EQ(rcx_fetch_and_op(w, src, res, bad[k][0], t, 0,
					     bad[k][1]),
			    -EINVAL);
		TP_CHECK_EQ(rcx_group_allreduce(j->g, src, res, 2, bad[k][0],
						bad[k][1]),
			    -EINVAL);
		TP_CHECK_EQ(rcx_allreduce_init(src, res, 2, bad[k][0],
					       bad[k][1], j->g, NULL, &init),
			    -EINVAL);
		TP_CHECK(init == NULL);
	}
	/* REPLACE and NO_OP are not reductions */
	TP_CHECK_EQ(
		rcx_group_allreduce(j->g, src, res, 2, RCX_2INT, RCX_REPLACE),
		-EINVAL);
	TP_CHECK_EQ(rcx_allreduce_init(src, res, 2, RCX_INT8, RCX_NO_OP, j->g,
				       NULL, &init),
		    -EINVAL);
	/* compare-and-swap: integer types only */
	TP_CHECK_EQ(
		rcx_compare_and_swap(w, src, cmp, res, RCX_LONG_DOUBLE, t, 0),
		-EINVAL);
	TP_CHECK_EQ(rcx_compare_and_swap(w, src, cmp, res, RCX_2INT, t, 0),
		    -EINVAL);
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK(!memcmp(base, zero, sizeof(zero)));
	TP_CHECK_OK(rcx_group_barrier(j->g)); /* checked before the CAS */
	/* 8- and 16-bit compare-and-swap, by the software path */
	TP_CHECK_OK(rcx_compare_and_swap(w, src, cmp, res, RCX_INT8, t, 3));
	TP_CHECK_OK(
		rcx_compare_and_swap(w, src, cmp, res + 2, RCX_UINT16, t, 8));
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_EQ(base[3], 1);
	TP_CHECK_EQ(base[8] + base[9], 2);
	TP_CHECK_EQ(res[0] + res[2] + res[3], 0);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- strided layouts */

#define GAP  0xee /* bytes no operation may touch */
#define OGAP 0xdd /* the same at the origin */

static uint8_t sval(size_t i, int src)
{
	return (uint8_t)(i * 29 + (size_t)src * 71 + 1) % 200;
}

/* bytes of a layout (unit 1) from its first block at base: each in the
 * blocks gets sval(position in the data, src), gaps get gap */
static void layout_fill(uint8_t *base, ptrdiff_t lo, ptrdiff_t hi,
			const struct rcx_strided *l, int src, uint8_t gap)
{
	size_t b, k, n = 0;

	memset(base + lo, gap, (size_t)(hi - lo));
	for (b = 0; b < l->count; b++)
		for (k = 0; k < l->blocklen; k++)
			base[(ptrdiff_t)b * l->stride + (ptrdiff_t)k] =
				sval(n++, src);
}

/* the same as a check; false (reported) at the first wrong byte */
static bool layout_check(const uint8_t *base, ptrdiff_t lo, ptrdiff_t hi,
			 const struct rcx_strided *l, int src, uint8_t gap,
			 const char *what)
{
	uint8_t *want = malloc((size_t)(hi - lo));
	ptrdiff_t x;
	bool ok = true;

	if (!TP_CHECK(want))
		return false;
	layout_fill(want - lo, lo, hi, l, src, gap);
	for (x = lo; x < hi && ok; x++)
		if (base[x] != want[x - lo]) {
			TP_FAIL("%s: byte %td is %#x, want %#x (%s)", what, x,
				base[x], want[x - lo],
				want[x - lo] == gap ? "a gap" : "data");
			ok = false;
		}
	free(want);
	return ok;
}

/* a target shape, and an origin shape of the same bytes */
struct shape {
	struct rcx_strided t, o;
	ptrdiff_t tfirst; /* byte of the target's first block */
};

static const struct shape shapes[] = {
	/* contiguous origin, a column of 3-byte blocks */
	{ { 40, 3, 7 }, { 1, 120, 0 }, 0 },
	/* both strided, different shapes: 4 x 30 against 40 x 3 */
	{ { 40, 3, 11 }, { 4, 30, 33 }, 0 },
	/* more blocks than the send queue holds (RCX__WIN_SQ_DEPTH 128) */
	{ { 700, 2, 5 }, { 350, 4, 6 }, 0 },
	/* a negative stride: blocks below the first one */
	{ { 50, 4, -9 }, { 50, 4, 9 }, 49 * 9 },
	/* blocks longer than a bounce buffer */
	{ { 3, 1500, 1700 }, { 1, 4500, 0 }, 0 },
};

static void lo_hi(const struct rcx_strided *l, ptrdiff_t *lo, ptrdiff_t *hi)
{
	ptrdiff_t last = (ptrdiff_t)(l->count - 1) * l->stride;

	*lo = last < 0 ? last : 0;
	*hi = (last > 0 ? last : 0) + (ptrdiff_t)l->blocklen;
}

#define SWIN 8192

/* lock: a lock of type on tg; -1 its unlock; 0 a fence */
static void epoch(struct rcx_win *w, int lock, int tg)
{
	if (lock > 0)
		TP_CHECK_OK(rcx_win_lock(w, lock, tg));
	else if (lock < 0)
		TP_CHECK_OK(rcx_win_unlock(w, tg));
	else
		TP_CHECK_OK(rcx_win_fence(w, 0));
}

static void one_shape(struct tp_job *j, struct rcx_win *w, uint8_t *base,
		      const struct shape *sh, bool lock)
{
	int t = (j->rank + 1) % j->size,
	    from = (j->rank + j->size - 1) % j->size;
	ptrdiff_t olo, ohi;
	uint8_t *ob;
	int pass;

	lo_hi(&sh->o, &olo, &ohi);
	ob = malloc((size_t)(ohi - olo));
	if (!TP_CHECK(ob))
		return;
	/* twice: to the next rank, then to this one (copies) */
	for (pass = 0; pass < 2; pass++) {
		int tg = pass ? j->rank : t, src = pass ? j->rank : from;

		memset(base, GAP, SWIN);
		layout_fill(ob - olo, olo, ohi, &sh->o, j->rank, OGAP);
		TP_CHECK_OK(rcx_group_barrier(j->g));
		epoch(w, lock ? RCX_LOCK_EXCLUSIVE : 0, tg);
		TP_CHECK_OK(rcx_put_strided(w, ob - olo, &sh->o, tg,
					    (size_t)sh->tfirst, &sh->t));
		epoch(w, lock ? -1 : 0, tg);
		TP_CHECK_OK(rcx_group_barrier(j->g));
		/* the whole window, counted from the first block */
		layout_check(base + sh->tfirst, -sh->tfirst, SWIN - sh->tfirst,
			     &sh->t, src, GAP, "put_strided at the target");
		/* and back: the target's layout into the origin's shape,
		 * whose gaps stay */
		memset(ob, OGAP, (size_t)(ohi - olo));
		epoch(w, lock ? RCX_LOCK_SHARED : 0, tg);
		TP_CHECK_OK(rcx_get_strided(w, ob - olo, &sh->o, tg,
					    (size_t)sh->tfirst, &sh->t));
		epoch(w, lock ? -1 : 0, tg);
		layout_check(ob - olo, olo, ohi, &sh->o, j->rank, OGAP,
			     "get_strided at the origin");
		/* no rank refills its window while another reads it */
		TP_CHECK_OK(rcx_group_barrier(j->g));
	}
	free(ob);
}

/* accumulate: every rank adds into the next rank's target layout */
static void strided_acc(struct tp_job *j, struct rcx_win *w, uint8_t *base)
{
	/* doubles: 300 blocks of 2, stride 3 at the target; 150 of 4,
	 * stride 9 at the origin */
	const struct rcx_strided tl = { 300, 2, 3 }, ol = { 150, 4, 9 };
	double *src = malloc(150 * 9 * sizeof(double)), *tb = (double *)base;
	int t = (j->rank + 1) % j->size, r;
	size_t b, k, n;
	double want;

	if (!TP_CHECK(src))
		return;
	for (n = 0; n < 150 * 9; n++)
		src[n] = -1e9;
	for (b = 0, n = 0; b < ol.count; b++)
		for (k = 0; k < ol.blocklen; k++)
			src[b * 9 + k] = (double)(n++ % 17) + j->rank;
	for (n = 0; n < SWIN / sizeof(double); n++)
		tb[n] = 0.5;
	TP_CHECK_OK(rcx_win_fence(w, 0));
	/* every rank to t, and to t's neighbours: 1 to 3 origins each */
	for (r = 0; r < (j->size < 3 ? j->size : 3); r++)
		TP_CHECK_OK(rcx_accumulate_strided(w, src, &ol, RCX_DOUBLE,
						   (t + r) % j->size, 0, &tl,
						   RCX_SUM));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (n = 0; n < SWIN / sizeof(double); n++) {
		want = 0.5;
		if (n < tl.count * 3 && n % 3 < 2)
			for (r = 0; r < (j->size < 3 ? j->size : 3); r++)
				/* origins rank - 1 - r */
				want += (double)((n / 3 * 2 + n % 3) % 17) +
					(j->rank + 2 * j->size - 1 - r) %
						j->size;
		if (tb[n] != want) {
			TP_FAIL("accumulate_strided: element %zu is %g, "
				"want %g",
				n, tb[n], want);
			break;
		}
	}
	free(src);
}

static void sc_strided(struct tp_job *j)
{
	uint8_t *base = NULL, buf[64];
	struct rcx_win *w = NULL;
	const struct rcx_strided big = { 2, 8, SWIN }, l8 = { 1, 8, 0 },
				 l16 = { 2, 8, 8 },
				 huge = { 3, 1, PTRDIFF_MAX };
	size_t k;
	int t = (j->rank + 1) % j->size;

	if (!TP_CHECK_OK(
		    rcx_win_allocate(j->g, SWIN, 1, NULL, (void **)&base, &w)))
		return;
	for (k = 0; k < TP_COUNT(shapes); k++) {
		one_shape(j, w, base, &shapes[k], false);
		one_shape(j, w, base, &shapes[k], true);
	}
	strided_acc(j, w, base);
	/* refused, with nothing touched */
	memset(base, GAP, SWIN);
	memset(buf, 1, sizeof(buf));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_EQ(rcx_put_strided(w, buf, &l16, t, 0, &big), -EINVAL);
	TP_CHECK_EQ(rcx_put_strided(w, buf, &l8, t, SWIN - 4, &l8), -EINVAL);
	TP_CHECK_EQ(rcx_put_strided(w, buf, &l8, t, 0, &l16), -EINVAL);
	TP_CHECK_EQ(rcx_get_strided(w, buf, NULL, t, 0, &l8), -EINVAL);
	TP_CHECK_EQ(rcx_get_strided(w, buf, &l8, t, 0, NULL), -EINVAL);
	TP_CHECK_EQ(rcx_get_strided(w, NULL, &l8, t, 0, &l8), -EINVAL);
	TP_CHECK_EQ(rcx_put_strided(w, buf, &huge, t, 0, &huge), -EINVAL);
	TP_CHECK_EQ(rcx_get_strided(w, buf, &l8, j->size, 0, &l8), -EINVAL);
	TP_CHECK_EQ(rcx_accumulate_strided(w, buf, &l8, RCX_FLOAT, t, 0, &l8,
					   RCX_BOR),
		    -EINVAL);
	TP_CHECK_EQ(rcx_accumulate_strided(w, buf, &l8, RCX_INT32, t, SWIN - 16,
					   &l16, RCX_SUM),
		    -EINVAL);
	/* PROC_NULL: nothing */
	TP_CHECK_OK(rcx_put_strided(w, buf, &l8, RCX_PROC_NULL, 0, &l8));
	TP_CHECK_OK(rcx_accumulate_strided(w, buf, &l8, RCX_INT8, RCX_PROC_NULL,
					   0, &l8, RCX_SUM));
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	for (k = 0; k < SWIN; k++)
		if (!TP_CHECK_EQ(base[k], GAP))
			break;
	/* outside an epoch */
	TP_CHECK_EQ(rcx_put_strided(w, buf, &l8, t, 0, &l8), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- MPICH's test/mpi/rma, written again against rcx */

/*
 * After MPICH's test/mpi/rma/transpose1.c: rank 0 puts its matrix into
 * rank 1's window transposed. MPICH describes the origin with a vector
 * of columns inside an hvector; here each column is one strided layout
 * (NROWS blocks of one int, a row apart) put to a contiguous row of the
 * target. Smaller than MPICH's 1000 x 1000 and not square.
 */
#define T_ROWS 200
#define T_COLS 150

static void sc_transpose(struct tp_job *j)
{
	const struct rcx_strided col = { T_ROWS, sizeof(int),
					 T_COLS * sizeof(int) },
				 row = { 1, T_ROWS * sizeof(int), 0 };
	int *a = calloc(T_ROWS * T_COLS, sizeof(int));
	struct rcx_win *w = NULL;
	int r, c, errs = 0;

	if (!TP_CHECK(a))
		return;
	for (r = 0; r < T_ROWS; r++)
		for (c = 0; c < T_COLS; c++)
			a[r * T_COLS + c] = j->rank == 0 ? r * T_COLS + c : -1;
	/* rank 1 exposes its matrix; the others nothing */
	if (!TP_CHECK_OK(rcx_win_create(
		    j->g, j->rank == 1 ? a : NULL,
		    j->rank == 1 ? T_ROWS * T_COLS * sizeof(int) : 0,
		    sizeof(int), NULL, &w)))
		goto out;
	TP_CHECK_OK(rcx_win_fence(w, 0));
	if (j->rank == 0)
		for (c = 0; c < T_COLS; c++)
			TP_CHECK_OK(rcx_put_strided(w, &a[c], &col, 1,
						    (size_t)c * T_ROWS, &row));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	if (j->rank == 1)
		for (c = 0; c < T_COLS; c++)
			for (r = 0; r < T_ROWS; r++)
				if (a[c * T_ROWS + r] != r * T_COLS + c &&
				    errs++ < 5)
					TP_FAIL("transpose: [%d][%d] = %d, "
						"want %d",
						c, r, a[c * T_ROWS + r],
						r * T_COLS + c);
	TP_CHECK_EQ(errs, 0);
	TP_CHECK_OK(rcx_win_free(&w));
out:
	free(a);
}

/*
 * After MPICH's test/mpi/rma/strided_putget_indexed.c: ITERATIONS times
 * a strided put, then a strided get, of a SUB_YDIM x SUB_XDIM block of
 * doubles in an XDIM-wide matrix, each under its own exclusive lock of
 * the next rank; then each rank checks its window. MPICH's indexed
 * types with equal blocks are a vector: one rcx_strided. SUB_XDIM is 5
 * here, not 8 (= XDIM), so that the rows have gaps to keep.
 */
#define P_XDIM	     8
#define P_YDIM	     1024
#define P_SUB_XDIM   5
#define P_SUB_YDIM   255
#define P_ITERATIONS 10

static void sc_putget_indexed(struct tp_job *j)
{
	const struct rcx_strided l = { P_SUB_YDIM, P_SUB_XDIM * sizeof(double),
				       P_XDIM * sizeof(double) };
	size_t n = P_XDIM * P_YDIM, x, y;
	double *win_buf = NULL, *src = malloc(n * sizeof(double)),
	       *dst = malloc(n * sizeof(double)), want;
	struct rcx_win *w = NULL;
	int peer = (j->rank + 1) % j->size, i, errs = 0;

	if (!TP_CHECK(src && dst) ||
	    !TP_CHECK_OK(rcx_win_allocate(j->g, n * sizeof(double), 1, NULL,
					  (void **)&win_buf, &w)))
		goto out;
	for (x = 0; x < n; x++) {
		win_buf[x] = -1.0;
		src[x] = 1.0 + j->rank;
		dst[x] = -2.0;
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (i = 0; i < P_ITERATIONS; i++) {
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, peer));
		TP_CHECK_OK(rcx_put_strided(w, src, &l, peer, 0, &l));
		TP_CHECK_OK(rcx_win_unlock(w, peer));
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, peer));
		TP_CHECK_OK(rcx_get_strided(w, dst, &l, peer, 0, &l));
		TP_CHECK_OK(rcx_win_unlock(w, peer));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, j->rank));
	for (y = 0; y < P_YDIM; y++)
		for (x = 0; x < P_XDIM; x++) {
			bool in = y < P_SUB_YDIM && x < P_SUB_XDIM;

			want = in ? 1.0 + (j->rank + j->size - 1) % j->size
				  : -1.0;
			if (win_buf[y * P_XDIM + x] != want && errs++ < 5)
				TP_FAIL("putget_indexed: window [%zu, %zu] = "
					"%g, want %g",
					y, x, win_buf[y * P_XDIM + x], want);
			/* what the get brought back; its gaps untouched */
			want = in ? 1.0 + j->rank : -2.0;
			if (dst[y * P_XDIM + x] != want && errs++ < 5)
				TP_FAIL("putget_indexed: got [%zu, %zu] = %g, "
					"want %g",
					y, x, dst[y * P_XDIM + x], want);
		}
	TP_CHECK_OK(rcx_win_unlock(w, j->rank));
	TP_CHECK_EQ(errs, 0);
out:
	if (w)
		TP_CHECK_OK(rcx_win_free(&w));
	free(src);
	free(dst);
}

/*
 * After MPICH's test/mpi/rma/acc_loc.c: every rank accumulates
 * { nproc - me, me } (RCX_2INT) into rank 0's one element with MAXLOC
 * (rank 0 wins), then MINLOC (the last rank wins), under fences; then
 * { 1, me } under shared locks, where every value ties and the lowest
 * index, rank 0, wins both.
 */
static void accloc_round(struct tp_job *j, struct rcx_win *w,
			 struct rcx_2int *data, int op, int val, bool lock,
			 int want_val, int want_loc)
{
	struct rcx_2int mine = { val, j->rank };

	if (j->rank == 0) {
		data->value = op == RCX_MAXLOC ? 0 : j->size;
		data->index = -1;
	}
	TP_CHECK_OK(rcx_win_fence(w, lock ? RCX_MODE_NOSUCCEED : 0));
	if (lock)
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, 0));
	TP_CHECK_OK(rcx_accumulate(w, &mine, 1, RCX_2INT, 0, 0, op));
	if (lock) {
		TP_CHECK_OK(rcx_win_unlock(w, 0));
		TP_CHECK_OK(rcx_group_barrier(j->g));
	} else {
		TP_CHECK_OK(rcx_win_fence(w, 0));
	}
	if (j->rank == 0 &&
	    (data->index != want_loc || data->value != want_val))
		TP_FAIL("acc_loc: op %d lock %d: { %d, %d }, want { %d, %d }",
			op, lock, data->value, data->index, want_val, want_loc);
	if (lock)
		TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOPRECEDE));
}

static void sc_accloc(struct tp_job *j)
{
	struct rcx_2int *data = NULL;
	struct rcx_win *w = NULL;
	int n = j->size, me = j->rank;

	if (!TP_CHECK_OK(rcx_win_allocate(j->g, me == 0 ? sizeof(*data) : 0, 1,
					  NULL, (void **)&data, &w)))
		return;
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOPRECEDE));
	accloc_round(j, w, data, RCX_MAXLOC, n - me, false, n, 0);
	accloc_round(j, w, data, RCX_MINLOC, n - me, false, 1, n - 1);
	accloc_round(j, w, data, RCX_MAXLOC, 1, true, 1, 0);
	accloc_round(j, w, data, RCX_MINLOC, 1, true, 1, 0);
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- queries */

static void check_info(struct rcx_win *w, const char *scope, const char *ord,
		       const char *nic)
{
	struct rcx_info *info = NULL;
	char v[RCX_INFO_VAL_MAX + 1];
	int flag = 0;

	if (!TP_CHECK_OK(rcx_win_get_info(w, &info)))
		return;
	TP_CHECK_OK(rcx_info_get(info, "rcx_order_scope", v, sizeof(v), &flag));
	TP_CHECK(flag && !strcmp(v, scope));
	TP_CHECK_OK(
		rcx_info_get(info, "accumulate_ordering", v, sizeof(v), &flag));
	TP_CHECK(flag && !strcmp(v, ord));
	TP_CHECK_OK(
		rcx_info_get(info, "rcx_accumulate_nic", v, sizeof(v), &flag));
	TP_CHECK(flag && !strcmp(v, nic));
	TP_CHECK_OK(rcx_info_free(&info));
}

static void sc_queries(struct tp_job *j)
{
	struct rcx_win *w = NULL, *w2 = NULL;
	struct rcx_group *g = NULL;
	struct rcx_info *info = NULL, *out = NULL;
	char name[RCX_MAX_OBJECT_NAME + 8], longname[200];
	uint64_t v = 0, *base;
	int len = -1;

	if (!TP_CHECK_OK(
		    rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w)))
		return;
	/* the group: a handle of our own, freed while the window lives */
	TP_CHECK_OK(rcx_win_get_group(w, &g));
	TP_CHECK_EQ(rcx_group_rank(g), j->rank);
	TP_CHECK_EQ(rcx_group_size(g), j->size);
	TP_CHECK_OK(rcx_group_barrier(g));
	TP_CHECK_OK(rcx_group_free(&g));
	TP_CHECK_EQ(rcx_win_get_group(w, NULL), -EINVAL);
	TP_CHECK_EQ(rcx_win_get_group(NULL, &g), -EINVAL);
	TP_CHECK(g == NULL);
	/* the info: the defaults, then what creation was given */
	check_info(w, "thread", "rar,raw,war,waw", "true");
	TP_CHECK_EQ(rcx_win_get_info(w, NULL), -EINVAL);
	TP_CHECK_EQ(rcx_win_get_info(NULL, &out), -EINVAL);
	TP_CHECK(out == NULL);
	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, "rcx_order_scope", "process"));
	TP_CHECK_OK(rcx_info_set(info, "accumulate_ordering", "none"));
	TP_CHECK_OK(rcx_info_set(info, "rcx_accumulate_nic", "false"));
	TP_CHECK_OK(rcx_info_set(info, "unknown_key", "x"));
	if (TP_CHECK_OK(rcx_win_create(j->g, &v, 8, 8, info, &w2))) {
		check_info(w2, "process", "none", "false");
		TP_CHECK_OK(rcx_win_free(&w2));
	}
	TP_CHECK_OK(rcx_info_free(&info));
	/* the name: "" at first, set, cut at RCX_MAX_OBJECT_NAME - 1 */
	memset(name, 'x', sizeof(name));
	TP_CHECK_OK(rcx_win_get_name(w, name, &len));
	TP_CHECK_EQ(len, 0);
	TP_CHECK_EQ(name[0], '\0');
	TP_CHECK_OK(rcx_win_set_name(w, "matrix"));
	TP_CHECK_OK(rcx_win_get_name(w, name, &len));
	TP_CHECK(len == 6 && !strcmp(name, "matrix"));
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	TP_CHECK_OK(rcx_win_set_name(w, longname));
	memset(name, 'x', sizeof(name));
	TP_CHECK_OK(rcx_win_get_name(w, name, &len));
	TP_CHECK_EQ(len, RCX_MAX_OBJECT_NAME - 1);
	TP_CHECK(!strncmp(name, longname, RCX_MAX_OBJECT_NAME - 1) &&
		 name[RCX_MAX_OBJECT_NAME - 1] == '\0' &&
		 name[RCX_MAX_OBJECT_NAME] == 'x');
	/* refused: nothing changes */
	TP_CHECK_EQ(rcx_win_set_name(w, NULL), -EINVAL);
	TP_CHECK_EQ(rcx_win_set_name(NULL, "a"), -EINVAL);
	TP_CHECK_EQ(rcx_win_get_name(w, NULL, &len), -EINVAL);
	TP_CHECK_EQ(rcx_win_get_name(w, name, NULL), -EINVAL);
	TP_CHECK_OK(rcx_win_set_name(w, ""));
	TP_CHECK_OK(rcx_win_get_name(w, name, &len));
	TP_CHECK_EQ(len, 0);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- RCX_PROC_NULL as a target */

/* every operation to RCX_PROC_NULL: 0, nothing touched, requests done */
static void null_ops(struct rcx_win *w)
{
	struct rcx_req *rq[4] = { NULL };
	struct rcx_status st;
	uint64_t buf = 7, res = 9, cmp = 0, got = 5;
	int k, flag;

	TP_CHECK_OK(rcx_put(w, &buf, 8, RCX_PROC_NULL, 0));
	TP_CHECK_OK(rcx_get(w, &got, 8, RCX_PROC_NULL, 1u << 30));
	TP_CHECK_OK(rcx_accumulate(w, &buf, 1, RCX_INT64, RCX_PROC_NULL, 0,
				   RCX_SUM));
	TP_CHECK_OK(rcx_get_accumulate(w, &buf, &res, 1, RCX_UINT64,
				       RCX_PROC_NULL, 0, RCX_SUM));
	TP_CHECK_OK(rcx_fetch_and_op(w, &buf, &res, RCX_INT64, RCX_PROC_NULL, 0,
				     RCX_NO_OP));
	TP_CHECK_OK(rcx_compare_and_swap(w, &buf, &cmp, &res, RCX_INT64,
					 RCX_PROC_NULL, 0));
	/* a bad type or op is still refused */
	TP_CHECK_EQ(rcx_accumulate(w, &buf, 1, RCX_FLOAT, RCX_PROC_NULL, 0,
				   RCX_BAND),
		    -EINVAL);
	TP_CHECK_OK(rcx_rput(w, &buf, 8, RCX_PROC_NULL, 0, &rq[0]));
	TP_CHECK_OK(rcx_rget(w, &got, 8, RCX_PROC_NULL, 0, &rq[1]));
	TP_CHECK_OK(rcx_raccumulate(w, &buf, 1, RCX_INT64, RCX_PROC_NULL, 0,
				    RCX_MAX, &rq[2]));
	TP_CHECK_OK(rcx_rget_accumulate(w, &buf, &res, 1, RCX_INT64,
					RCX_PROC_NULL, 0, RCX_SUM, &rq[3]));
	for (k = 0; k < 4; k++) {
		flag = 0;
		if (!TP_CHECK(rq[k]))
			continue;
		/* complete at once: the first test says so */
		TP_CHECK_OK(rcx_test(&rq[k], &flag, &st));
		TP_CHECK_EQ(flag, 1);
		TP_CHECK_EQ(st.source, RCX_PROC_NULL);
		TP_CHECK_EQ(st.error, 0);
		TP_CHECK(rq[k] == NULL);
	}
	TP_CHECK_OK(rcx_win_flush(w, RCX_PROC_NULL));
	TP_CHECK_OK(rcx_win_flush_local(w, RCX_PROC_NULL));
	TP_CHECK_EQ(got, 5);
	TP_CHECK_EQ(res, 9);
}

static void sc_procnull(struct tp_job *j)
{
	uint64_t *base = NULL;
	struct rcx_win *w = NULL;
	int t = (j->rank + 1) % j->size, i;

	if (!TP_CHECK_OK(
		    rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w)))
		return;
	for (i = 0; i < 8; i++)
		base[i] = 100 + (uint64_t)i;
	/* no epoch at all */
	null_ops(w);
	/* fence */
	TP_CHECK_OK(rcx_win_fence(w, 0));
	null_ops(w);
	TP_CHECK_OK(rcx_win_fence(w, 0));
	/* lock of PROC_NULL: no epoch opens, and nothing stops a lock_all */
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, RCX_PROC_NULL));
	null_ops(w);
	TP_CHECK_OK(rcx_win_unlock(w, RCX_PROC_NULL));
	TP_CHECK_EQ(rcx_win_lock(w, 3, RCX_PROC_NULL), -EINVAL);
	TP_CHECK_EQ(rcx_win_lock(w, RCX_LOCK_SHARED, -3), -EINVAL);
	/* lock of a real target, PROC_NULL inside it */
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, t));
	null_ops(w);
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, RCX_PROC_NULL));
	TP_CHECK_OK(rcx_win_unlock(w, RCX_PROC_NULL));
	TP_CHECK_OK(rcx_win_unlock(w, t));
	/* lock_all */
	TP_CHECK_OK(rcx_win_lock_all(w));
	null_ops(w);
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, RCX_PROC_NULL));
	TP_CHECK_OK(rcx_win_unlock(w, RCX_PROC_NULL));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (i = 0; i < 8; i++)
		TP_CHECK_EQ(base[i], 100 + i);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- the peer role */

static const struct tp_scenario scenarios[] = {
	{ .name = "types", .run = sc_types },
	{ .name = "refused", .run = sc_refused },
	{ .name = "procnull", .run = sc_procnull },
	{ .name = "queries", .run = sc_queries },
	{ .name = "strided", .run = sc_strided },
	{ .name = "transpose", .run = sc_transpose },
	{ .name = "putget_indexed", .run = sc_putget_indexed },
	{ .name = "accloc", .run = sc_accloc },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("wintypes", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_wintypes = { "wintypes", peer_main };

/* ---- the CUnit side: one job per test */

static void job(int n, const char *scenario, int timeout_s)
{
	CU_ASSERT_EQUAL(tu_mp_run(n, "wintypes", scenario, timeout_s), 0);
}

static void test_types_2(void)
{
	job(2, "types", 600);
}

static void test_types_3(void)
{
	job(3, "types", 600);
}

static void test_types_4(void)
{
	job(4, "types", 600);
}

static void test_refused(void)
{
	job(2, "refused", 300);
}

static void test_procnull(void)
{
	job(2, "procnull", 300);
}

static void test_queries(void)
{
	job(3, "queries", 300);
}

static void test_strided_2(void)
{
	job(2, "strided", 600);
}

static void test_strided_4(void)
{
	job(4, "strided", 600);
}

static void test_transpose(void)
{
	job(2, "transpose", 600);
}

static void test_putget_indexed(void)
{
	job(3, "putget_indexed", 600);
}

static void test_accloc(void)
{
	job(4, "accloc", 300);
}

static const CU_TestInfo tests[] = {
	{ "every_type_and_op_2procs", test_types_2 },
	{ "every_type_and_op_3procs", test_types_3 },
	{ "every_type_and_op_4procs", test_types_4 },
	{ "refused_type_op_combinations", test_refused },
	{ "proc_null_target_every_epoch", test_procnull },
	{ "group_info_name", test_queries },
	{ "strided_put_get_acc_2procs", test_strided_2 },
	{ "strided_put_get_acc_4procs", test_strided_4 },
	{ "mpich_transpose1", test_transpose },
	{ "mpich_strided_putget_indexed", test_putget_indexed },
	{ "mpich_acc_loc", test_accloc },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_wintypes = {
	"wintypes", TU_DEVICE, NULL, NULL, tests,
};
