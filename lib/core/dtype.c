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

struct dtype {
	const char *name;
	uint8_t size;
	uint8_t align;
	uint8_t kind;
	rcx__fold_fn *fold;
};

/* one loop per operation, so the compiler vectorises each */
#define LOOP(expr)                                         \
	do {                                               \
		for (i = 0; i < n; i++) {                  \
			__typeof__(*a) x = a[i], y = b[i]; \
			a[i] = (expr);                     \
		}                                          \
	} while (0)

/* SUM, PROD, MIN, MAX on T (U: the type the arithmetic wraps in) */
#define ARITH(T, U)                     \
	case RCX_SUM:                   \
		LOOP((T)((U)x + (U)y)); \
		break;                  \
	case RCX_PROD:                  \
		LOOP((T)((U)x * (U)y)); \
		break;                  \
	case RCX_MIN:                   \
		LOOP(y < x ? y : x);    \
		break;                  \
	case RCX_MAX:                   \
		LOOP(y > x ? y : x);    \
		break;

#define BITS(T)                   \
	case RCX_BAND:            \
		LOOP((T)(x & y)); \
		break;            \
	case RCX_BOR:             \
		LOOP((T)(x | y)); \
		break;            \
	case RCX_BXOR:            \
		LOOP((T)(x ^ y)); \
		break;

#define FOLD(name, T, cases)                                                  \
	static void name(int op, void *acc, const void *in, size_t n)         \
	{                                                                     \
		T *a = acc;                                                   \
		const T *b = in;                                              \
		size_t i;                                                     \
		switch (op) {                                                 \
			cases case RCX_REPLACE : memcpy(a, b, n * sizeof(T)); \
			break;                                                \
		}                                                             \
	}

/*
 * MAXLOC, MINLOC on value-index pairs: the larger (smaller) value and
 * its index; of equal values the lower index (MPI 5.9.4).
 */
#define LOC(T)                                                                 \
	case RCX_MAXLOC:                                                       \
		LOOP(y.value > x.value ||                                      \
				     (y.value == x.value && y.index < x.index) \
			     ? y                                               \
			     : x);                                             \
		break;                                                         \
	case RCX_MINLOC:                                                       \
		LOOP(y.value < x.value ||                                      \
				     (y.value == x.value && y.index < x.index) \
			     ? y                                               \
			     : x);                                             \
		break;

/* the integers: arithmetic wraps (in unsigned int below 32 bits, so
 * that no promotion to int overflows) */
FOLD(fold_i8, int8_t, ARITH(int8_t, unsigned int) BITS(int8_t))
FOLD(fold_u8, uint8_t, ARITH(uint8_t, unsigned int) BITS(uint8_t))
FOLD(fold_i16, int16_t, ARITH(int16_t, unsigned int) BITS(int16_t))
FOLD(fold_u16, uint16_t, ARITH(uint16_t, unsigned int) BITS(uint16_t))
FOLD(fold_i32, int32_t, ARITH(int32_t, uint32_t) BITS(int32_t))
FOLD(fold_u32, uint32_t, ARITH(uint32_t, uint32_t) BITS(uint32_t))
FOLD(fold_i64, int64_t, ARITH(int64_t, uint64_t) BITS(int64_t))
FOLD(fold_u64, uint64_t, ARITH(uint64_t, uint64_t) BITS(uint64_t))
FOLD(fold_f32, float, ARITH(float, float))
FOLD(fold_f64, double, ARITH(double, double))
FOLD(fold_ld, long double, ARITH(long double, long double))
FOLD(fold_fi, struct rcx_float_int, LOC(struct rcx_float_int))
FOLD(fold_di, struct rcx_double_int, LOC(struct rcx_double_int))
FOLD(fold_li, struct rcx_long_int, LOC(struct rcx_long_int))
FOLD(fold_2i, struct rcx_2int, LOC(struct rcx_2int))
FOLD(fold_si, struct rcx_short_int, LOC(struct rcx_short_int))
FOLD(fold_ldi, struct rcx_long_double_int, LOC(struct rcx_long_double_int))

#define DT(e, T, k, f)                           \
	[e] = {                                  \
		#e, sizeof(T), alignof(T), k, f, \
	}

static const struct dtype types[] = {
	DT(RCX_INT32, int32_t, K_INT, fold_i32),
	DT(RCX_INT64, int64_t, K_INT, fold_i64),
	DT(RCX_UINT64, uint64_t, K_INT, fold_u64),
	DT(RCX_FLOAT, float, K_FLOAT, fold_f32),
	DT(RCX_DOUBLE, double, K_FLOAT, fold_f64),
	DT(RCX_INT8, int8_t, K_INT, fold_i8),
	DT(RCX_UINT8, uint8_t, K_INT, fold_u8),
	DT(RCX_INT16, int16_t, K_INT, fold_i16),
	DT(RCX_UINT16, uint16_t, K_INT, fold_u16),
	DT(RCX_UINT32, uint32_t, K_INT, fold_u32),
	DT(RCX_LONG_DOUBLE, long double, K_FLOAT, fold_ld),
	DT(RCX_FLOAT_INT, struct rcx_float_int, K_PAIR, fold_fi),
	DT(RCX_DOUBLE_INT, struct rcx_double_int, K_PAIR, fold_di),
	DT(RCX_LONG_INT, struct rcx_long_int, K_PAIR, fold_li),
	DT(RCX_2INT, struct rcx_2int, K_PAIR, fold_2i),
	DT(RCX_SHORT_INT, struct rcx_short_int, K_PAIR, fold_si),
	DT(RCX_LONG_DOUBLE_INT, struct rcx_long_double_int, K_PAIR, fold_ldi),
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

rcx__fold_fn *rcx__dtype_folder(int dtype)
{
	const struct dtype *t = type(dtype);

	return t ? t->fold : NULL;
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
	uint8_t *a = acc;
	const uint8_t *b = in;
	size_t per, k;

	if (!t || op == RCX_NO_OP || !n)
		return;
	if (!((uintptr_t)acc % t->align) && !((uintptr_t)in % t->align)) {
		t->fold(op, acc, in, n);
		return;
	}
	per = BOUNCE / t->size;
	for (; n; n -= k, a += k * t->size, b += k * t->size) {
		k = n < per ? n : per;
		memcpy(x, a, k * t->size);
		memcpy(y, b, k * t->size);
		t->fold(op, x, y, k);
		memcpy(a, x, k * t->size);
	}
}
