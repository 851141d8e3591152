/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_DTYPE_H
#define RCX_DTYPE_H

/*
 * Element types (enum rcx_datatype) and their operations (enum
 * rcx_acc_op): sizes, which operation applies to which type, and the
 * element-wise fold. One place for the group collectives (coll.c), the
 * bound collectives (lib/bcoll) and the accumulates (lib/win).
 */
#include <stdbool.h>
#include <stddef.h>

/* What a caller does with (dtype, op): rcx__dtype_check's use. */
enum rcx__dtype_use {
	RCX__DT_REDUCE = 1, /* a reduction: SUM..BXOR, MAXLOC, MINLOC */
	RCX__DT_ACC,	    /* an accumulate: those, REPLACE and NO_OP */
	RCX__DT_CAS,	    /* compare-and-swap: integer types */
};

/* Bytes of one element; 0 when dtype is not a type. */
size_t rcx__dtype_size(int dtype);
/* Does op apply to dtype for use? */
bool rcx__dtype_ok(int dtype, int op, enum rcx__dtype_use use);
/*
 * rcx__dtype_ok, or -EINVAL with a log line of area naming fn, the type
 * and the operation.
 */
int rcx__dtype_check(const char *area, const char *fn, int dtype, int op,
		     enum rcx__dtype_use use);
/* "RCX_INT32", ..., or "unknown" */
const char *rcx__dtype_name(int dtype);
const char *rcx__op_name(int op);
/*
 * acc[i] = acc[i] op in[i] for n elements (op as rcx__dtype_ok allows;
 * RCX_REPLACE stores in[i], RCX_NO_OP changes nothing). Any alignment.
 * Integers wrap; every reduction is commutative, and IEEE sum, product,
 * min and max give the same bits for a op b and b op a: the two ends of
 * an exchange agree.
 */
void rcx__dtype_fold(int dtype, int op, void *acc, const void *in, size_t n);

/*
 * The fold of one type and reduction, for a caller that runs the same
 * one again and again (a bound collective's steps): chosen once, it
 * skips the look-up of the type, the operation's switch and the
 * alignment test. acc and in must be aligned for the type
 * (rcx__dtype_aligned).
 */
typedef void rcx__fold_fn(void *acc, const void *in, size_t n);
/* the fold of op on dtype; NULL when op is no reduction on dtype
 * (rcx__dtype_ok's RCX__DT_REDUCE) */
rcx__fold_fn *rcx__dtype_folder(int dtype, int op);
/* Is p aligned for dtype's elements? false when dtype is not a type */
bool rcx__dtype_aligned(int dtype, const void *p);

#endif
