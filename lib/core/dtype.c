/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Element types and operations: the table of types, which operation
 * applies to which, and the fold, run on this CPU by the collectives'
 * reductions and the accumulates' software path.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdint.h>
#include <string.h>
#include <rcx/rcx.h>
#include "lib/core/dtype.h"
#include "lib/log/log.h"

enum { K_INT = 1, K_FLOAT, K_PAIR };

/* the operations with a fold: the reductions (REPLACE and NO_OP are
 * rcx__dtype_fold's own) */
#define NOPS (RCX_MINLOC + 1)

struct dtype {
	const char *name;
	uint8_t size;
	uint8_t align;
	uint8_t kind;
	rcx__fold_fn *fold[NOPS]; /* by operation; NULL: does not apply */
};

/*
 * One function per type and operation: the compiler vectorises each
 * loop, and a caller that runs the same fold again and again picks it
 * once (rcx__dtype_folder).
 */
#define FN(name, T, expr)                                     \
	static void name(void *acc, const void *in, size_t n) \
	{                                                     \
		T *a = acc;                                   \
		const T *b = in;                              \
		size_t i;                                     \
		for (i = 0; i < n; i++) {                     \
			T x = a[i], y = b[i];                 \
			a[i] = (expr);                        \
		}                                             \
	}

/* SUM, PROD, MIN, MAX on T (U: the type the arithmetic wraps in) */
#define ARITH(p, T, U)                    \
	FN(p##_sum, T, (T)((U)x + (U)y))  \
	FN(p##_prod, T, (T)((U)x * (U)y)) \
	FN(p##_min, T, y < x ? y : x)     \
	FN(p##_max, T, y > x ? y : x)
#define INT(p, T, U)                \
	ARITH(p, T, U)              \
	FN(p##_band, T, (T)(x & y)) \
	FN(p##_bor, T, (T)(x | y))  \
	FN(p##_bxor, T, (T)(x ^ y))

/*
 * MAXLOC, MINLOC on value-index pairs: the larger (smaller) value and
 * its index; of equal values the lower index (MPI 5.9.4).
 */
#define WINS(cmp) \
	(y.value cmp x.value || (y.value == x.value && y.index < x.index))
#define LOC(p, T)                          \
	FN(p##_maxloc, T, WINS(>) ? y : x) \
	FN(p##_minloc, T, WINS(<) ? y : x)

/* the integers: arithmetic wraps (in unsigned int below 32 bits, so
 * that no promotion to int overflows) */
INT(i8, int8_t, unsigned int)
INT(u8, uint8_t, unsigned int)
INT(i16, int16_t, unsigned int)
INT(u16, uint16_t, unsigned int)
INT(i32, int32_t, uint32_t)
INT(u32, uint32_t, uint32_t)
INT(i64, int64_t, uint64_t)
INT(u64, uint64_t, uint64_t)
ARITH(f32, float, float)
ARITH(f64, double, double)
ARITH(ld, long double, long double)
LOC(fi, struct rcx_float_int)
LOC(di, struct rcx_double_int)
LOC(li, struct rcx_long_int)
LOC(two_i, struct rcx_2int)
LOC(si, struct rcx_short_int)
LOC(ldi, struct rcx_long_double_int)

/* a type's row of folds */
#define R_ARITH(p)                                                       \
	[RCX_SUM] = p##_sum, [RCX_PROD] = p##_prod, [RCX_MIN] = p##_min, \
	[RCX_MAX] = p##_max
#define R_INT(p)                                                \
	R_ARITH(p), [RCX_BAND] = p##_band, [RCX_BOR] = p##_bor, \
		    [RCX_BXOR] = p##_bxor
#define R_LOC(p) [RCX_MAXLOC] = p##_maxloc, [RCX_MINLOC] = p##_minloc

#define DT(e, T, k, ...)                                       \
	[e] = {                                                \
		#e, sizeof(T), alignof(T), k, { __VA_ARGS__ }, \
	}

static const struct dtype types[] = {
	DT(RCX_INT32, int32_t, K_INT, R_INT(i32)),
	DT(RCX_INT64, int64_t, K_INT, R_INT(i64)),
	DT(RCX_UINT64, uint64_t, K_INT, R_INT(u64)),
	DT(RCX_FLOAT, float, K_FLOAT, R_ARITH(f32)),
	DT(RCX_DOUBLE, double, K_FLOAT, R_ARITH(f64)),
	DT(RCX_INT8, int8_t, K_INT, R_INT(i8)),
	DT(RCX_UINT8, uint8_t, K_INT, R_INT(u8)),
	DT(RCX_INT16, int16_t, K_INT, R_INT(i16)),
	DT(RCX_UINT16, uint16_t, K_INT, R_INT(u16)),
	DT(RCX_UINT32, uint32_t, K_INT, R_INT(u32)),
	DT(RCX_LONG_DOUBLE, long double, K_FLOAT, R_ARITH(ld)),
	DT(RCX_FLOAT_INT, struct rcx_float_int, K_PAIR, R_LOC(fi)),
	DT(RCX_DOUBLE_INT, struct rcx_double_int, K_PAIR, R_LOC(di)),
	DT(RCX_LONG_INT, struct rcx_long_int, K_PAIR, R_LOC(li)),
	DT(RCX_2INT, struct rcx_2int, K_PAIR, R_LOC(two_i)),
	DT(RCX_SHORT_INT, struct rcx_short_int, K_PAIR, R_LOC(si)),
	DT(RCX_LONG_DOUBLE_INT, struct rcx_long_double_int, K_PAIR, R_LOC(ldi)),
};

static const char *const ops[] = {
	[RCX_SUM] = "RCX_SUM",	     [RCX_PROD] = "RCX_PROD",
	[RCX_MIN] = "RCX_MIN",	     [RCX_MAX] = "RCX_MAX",
	[RCX_BAND] = "RCX_BAND",     [RCX_BOR] = "RCX_BOR",
	[RCX_BXOR] = "RCX_BXOR",     [RCX_REPLACE] = "RCX_REPLACE",
	[RCX_NO_OP] = "RCX_NO_OP",   [RCX_MAXLOC] = "RCX_MAXLOC",
	[RCX_MINLOC] = "RCX_MINLOC",
};

static const struct dtype *type(int dtype)
{
	if (dtype < 0 || (size_t)dtype >= sizeof(types) / sizeof(types[0]) ||
	    !types[dtype].size)
		return NULL;
	return &types[dtype];
}

size_t rcx__dtype_size(int dtype)
{
	const struct dtype *t = type(dtype);

	return t ? t->size : 0;
}

const char *rcx__dtype_name(int dtype)
{
	const struct dtype *t = type(dtype);

	return t ? t->name : "unknown";
}

const char *rcx__op_name(int op)
{
	if (op < 0 || (size_t)op >= sizeof(ops) / sizeof(ops[0]) || !ops[op])
		return "unknown";
	return ops[op];
}

bool rcx__dtype_ok(int dtype, int op, enum rcx__dtype_use use)
{
	const struct dtype *t = type(dtype);

	if (!t)
		return false;
	if (use == RCX__DT_CAS)
		return t->kind == K_INT;
	switch (op) {
	case RCX_SUM:
	case RCX_PROD:
	case RCX_MIN:
	case RCX_MAX:
		return t->kind != K_PAIR;
	case RCX_MAXLOC:
	case RCX_MINLOC:
		return t->kind == K_PAIR;
	case RCX_BAND:
	case RCX_BOR:
	case RCX_BXOR:
		return t->kind == K_INT;
	case RCX_REPLACE:
	case RCX_NO_OP:
		return use == RCX__DT_ACC;
	}
	return false;
}

int rcx__dtype_check(const char *area, const char *fn, int dtype, int op,
		     enum rcx__dtype_use use)
{
	if (!type(dtype)) {
		rcx__log(RCX__LOG_ERROR, area, "%s: unknown datatype %d", fn,
			 dtype);
		return -EINVAL;
	}
	if (rcx__dtype_ok(dtype, op, use))
		return 0;
	if (use == RCX__DT_CAS)
		rcx__log(RCX__LOG_ERROR, area,
			 "%s: compare-and-swap on %s (integer types only)", fn,
			 rcx__dtype_name(dtype));
	else
		rcx__log(RCX__LOG_ERROR, area,
			 "%s: operation %s (%d) does not apply to %s%s", fn,
			 rcx__op_name(op), op, rcx__dtype_name(dtype),
			 use == RCX__DT_REDUCE ? " in a reduction" : "");
	return -EINVAL;
}

rcx__fold_fn *rcx__dtype_folder(int dtype, int op)
{
	const struct dtype *t = type(dtype);

	if (!t || op < 0 || op >= NOPS)
		return NULL;
	return t->fold[op];
}

bool rcx__dtype_aligned(int dtype, const void *p)
{
	const struct dtype *t = type(dtype);

	return t && !((uintptr_t)p % t->align);
}

/* elements bounced at a time when acc or in is not aligned for the type */
#define BOUNCE 512

void rcx__dtype_fold(int dtype, int op, void *acc, const void *in, size_t n)
{
	alignas(max_align_t) uint8_t x[BOUNCE], y[BOUNCE];
	const struct dtype *t = type(dtype);
	rcx__fold_fn *f;
	uint8_t *a = acc;
	const uint8_t *b = in;
	size_t per, k;

	if (!t || !n)
		return;
	if (op == RCX_REPLACE) {
		memcpy(acc, in, n * t->size);
		return;
	}
	f = rcx__dtype_folder(dtype, op); /* NULL: NO_OP */
	if (!f)
		return;
	if (!((uintptr_t)acc % t->align) && !((uintptr_t)in % t->align)) {
		f(acc, in, n);
		return;
	}
	per = BOUNCE / t->size;
	for (; n; n -= k, a += k * t->size, b += k * t->size) {
		k = n < per ? n : per;
		memcpy(x, a, k * t->size);
		memcpy(y, b, k * t->size);
		f(x, y, k);
		memcpy(a, x, k * t->size);
	}
}
