/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_COLL_H
#define RCX_COLL_H

#include <stddef.h>
#include <rcx/version.h>
#include <rcx/win.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcx_group;
struct rcx_req;

/*
 * Group collectives, like MPI_Bcast, MPI_Reduce, MPI_Allreduce and
 * MPI_Gather, over point-to-point on the group (any group: the world, a
 * client/server pair, a sub-group; any size). Every rank of g calls the
 * same collectives in the same order, with the same root, count, dtype
 * and op; their traffic never matches anything else on g. Reductions
 * take the element types and operations of accumulates (rcx/win.h):
 * RCX_SUM, RCX_PROD, RCX_MIN, RCX_MAX on every type, RCX_BAND, RCX_BOR,
 * RCX_BXOR on the integer ones; integers wrap around. Floating-point
 * results are the same on every rank of an allreduce.
 *
 * Each has a nonblocking form (rcx_group_i...): *req is an ordinary
 * request, completed when this rank's part is done (its buffers may be
 * used again), to rcx_test/rcx_wait or follow with a continuation
 * (rcx_continue); a failure is in its status.error. The blocking forms
 * return that error. The group may be freed while one runs.
 */

/*
 * Broadcast: root's len bytes of buf go to buf at every rank (binomial
 * tree). Wrong arguments on one rank only are not detected by the
 * others, which may then wait for it (as in MPI).
 * Errors of all calls below: -EINVAL g not live, req NULL, root out of
 * range, an unknown dtype or op, a bitwise op on a floating type,
 * RCX_MAXLOC/RCX_MINLOC on a type that is not a value-index pair (or
 * another op on a pair type), RCX_REPLACE or RCX_NO_OP, a buffer NULL where bytes are due
 * (logged, naming the value); RCX_ERR_PROC_FAILED a rank of g failed
 * (before: nothing is started; during: the request completes with it)
 * that no rcx_group_validate took out, or root is one of those it took
 * out (after a validate the others run without them, ranks kept; a
 * failed rank's block of a gather is left as it was);
 * RCX_ERR_TRUNCATE (status) ranks gave different sizes; -ENOMEM no
 * memory for the request or its rounds' messages.
 */
RCX_API int rcx_group_bcast(struct rcx_group *g, void *buf, size_t len,
			    int root);
RCX_API int rcx_group_ibcast(struct rcx_group *g, void *buf, size_t len,
			     int root, struct rcx_req **req);

/*
 * out[i] at root = in[i] of rank 0 op ... op in[i] of the last rank, for
 * count elements of dtype (binomial tree); out is used at root only
 * (NULL elsewhere is fine) and may be in.
 */
RCX_API int rcx_group_reduce(struct rcx_group *g, const void *in, void *out,
			     size_t count, int dtype, int op, int root);
RCX_API int rcx_group_ireduce(struct rcx_group *g, const void *in, void *out,
			      size_t count, int dtype, int op, int root,
			      struct rcx_req **req);

/*
 * Allreduce: out[i] = in[i] of rank 0 op ... op in[i] of the last rank,
 * for count elements of dtype, at every rank (recursive doubling, the
 * ranks past a power of two folded in first, so every rank gets the same
 * bits). out may be in. Collective over g; the blocking form returns when
 * this rank's out is complete.
 */
RCX_API int rcx_group_allreduce(struct rcx_group *g, const void *in, void *out,
				size_t count, int dtype, int op);
RCX_API int rcx_group_iallreduce(struct rcx_group *g, const void *in, void *out,
				 size_t count, int dtype, int op,
				 struct rcx_req **req);

/*
 * Gather: every rank's len bytes of in land at root's out + rank * len
 * (size * len bytes, in rank order), each sent straight to root. out is
 * used at root only (NULL elsewhere is fine) and must not overlap in.
 * Collective over g; a non-root rank's call returns once its block is
 * sent.
 */
RCX_API int rcx_group_gather(struct rcx_group *g, const void *in, size_t len,
			     void *out, int root);
RCX_API int rcx_group_igather(struct rcx_group *g, const void *in, size_t len,
			      void *out, int root, struct rcx_req **req);

#ifdef __cplusplus
}
#endif

#endif
