/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_GROUP_H
#define RCX_GROUP_H

#include <stddef.h>
#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcx_ctx;

/*
 * A group: a ranked set of processes with a reliable connection to each
 * peer (an RC queue pair on verbs), like an MPI communicator.
 */
struct rcx_group;

/*
 * The world group of this process, from the bootstrap: the rcx-run
 * launcher ("local"), RCX_RANK/RCX_SIZE/RCX_ROOT ("env"), or a singleton;
 * RCX_BOOTSTRAP=local|env|singleton forces one. Collective over all
 * processes of the job. Connections are made eagerly to every peer.
 * The same group is returned on each call (reference counted).
 * Errors: -EINVAL; -EPROTO bootstrap misconfigured (RCX_* variables
 * malformed, or srun started several tasks without --mpi=pmix);
 * -ETIMEDOUT peers did not arrive (RCX_CONNECT_TIMEOUT_MS);
 * -ECONNREFUSED/-EHOSTUNREACH connection failures; -ENOMEM.
 */
RCX_API int rcx_group_world(struct rcx_ctx *ctx, struct rcx_group **out);

/*
 * A two-process group with a peer, perftest style: the server calls
 * rcx_group_accept and the client rcx_group_connect with the server's
 * rcx_ctx_address(). The accepting side is rank 0. Wait at most
 * timeout_ms (-1: no limit).
 * Errors: -EINVAL bad address or argument (timeout_ms below -1 too);
 * -ETIMEDOUT; -ECONNREFUSED;
 * -EHOSTUNREACH; -ENOMEM.
 */
RCX_API int rcx_group_connect(struct rcx_ctx *ctx, const char *addr,
			      int timeout_ms, struct rcx_group **out);
RCX_API int rcx_group_accept(struct rcx_ctx *ctx, int timeout_ms,
			     struct rcx_group **out);

/* Rank and size; -EINVAL for a NULL or dead group. */
RCX_API int rcx_group_rank(const struct rcx_group *g);
RCX_API int rcx_group_size(const struct rcx_group *g);

/*
 * Synchronising barrier over the group. Errors: -EINVAL;
 * RCX_ERR_PROC_FAILED a member failed.
 */
RCX_API int rcx_group_barrier(struct rcx_group *g);

/*
 * Every rank contributes len bytes of in; out receives size * len bytes,
 * rank order. Errors: -EINVAL (NULL buffers with len > 0);
 * RCX_ERR_PROC_FAILED.
 */
RCX_API int rcx_group_allgather(struct rcx_group *g, const void *in, size_t len,
				void *out);

/*
 * The ranks of g this process knows to have failed, ascending: the first
 * max of them in ranks, their number in *n. A failure is known once a
 * connection to the rank broke (error completion, rdma_cm disconnect) or
 * the launcher reported it (docs/config.md gives the detection bound).
 * After a failure, collectives on g return RCX_ERR_PROC_FAILED.
 * Errors: -EINVAL g not live, n NULL, max < 0, ranks NULL with max > 0.
 */
RCX_API int rcx_group_get_failed(struct rcx_group *g, int *ranks, int max,
				 int *n);

/*
 * Sub-groups, like MPI_Comm_split and MPI_Comm_create from
 * MPI_Group_incl/excl. Collective over every rank of parent, each giving
 * its own color and key (split) or the same rank list (incl, excl). The
 * new group uses parent's connections (no new ones), holds them while it
 * lives, and may outlive the parent's handle (rcx_group_free the parent
 * first is allowed). Its traffic is its own: messages, collectives and
 * channel binds on it never match those on the parent or on another
 * sub-group with the same tag. Windows, channels, continuations and
 * failures (rcx_group_get_failed: the ranks of the sub-group known to
 * have failed) work on it as on the world; free it with rcx_group_free.
 *
 * split: the ranks that gave the same color form a group, ranked by key
 * and then by rank in parent; color RCX_UNDEFINED (rcx/req.h) takes part
 * and gets *out = NULL. incl: the n ranks of parent in ranks[], in that
 * order; excl: all ranks of parent but those n, in parent's order. A
 * rank not in the new group gets *out = NULL (n = 0 for incl: all do).
 * A rank whose own arguments are wrong still takes part; then every
 * rank fails with -EINVAL.
 * Errors: -EINVAL parent not live, out NULL, color < 0 but not
 * RCX_UNDEFINED, n out of 0..size, ranks NULL with n > 0, a rank out of
 * range or given twice, the ranks of parent not making the same call
 * with the same list; RCX_ERR_PROC_FAILED a rank of parent failed;
 * -ENOMEM.
 */
RCX_API int rcx_group_split(struct rcx_group *parent, int color, int key,
			    struct rcx_group **out);
RCX_API int rcx_group_incl(struct rcx_group *parent, int n, const int *ranks,
			   struct rcx_group **out);
RCX_API int rcx_group_excl(struct rcx_group *parent, int n, const int *ranks,
			   struct rcx_group **out);

/*
 * Release the caller's handle to the group (rcx_group_world hands out
 * one per call); *g = NULL, and the handle is refused (-EINVAL) by every
 * call after. What was made from the group keeps it: channels bound over
 * it, persistent requests (rcx_send_init/rcx_recv_init, startable and
 * bound as before) and windows (epochs, validate and free as before), as
 * MPI_Comm_free defers the deallocation. When the last of them is freed
 * too, the group goes: its connections close (the peers see it leave)
 * and receives still posted on it complete with -ECANCELED.
 * Errors: -EINVAL g NULL or not a live group.
 */
RCX_API int rcx_group_free(struct rcx_group **g);

#ifdef __cplusplus
}
#endif

#endif
