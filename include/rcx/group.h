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
 * The world group of this process: every process of the job, ranked as
 * the launcher ranked them. The bootstrap that tells rcx the job is
 * detected in this order: "pmix" when a PMIx server started the process
 * (mpirun, prterun, srun --mpi=pmix: PMIX_RANK and PMIX_NAMESPACE set;
 * needs rcx built with libpmix-dev), "local" when the rcx-run launcher
 * started it, "env" when RCX_RANK, RCX_SIZE and RCX_ROOT are set (rank 0
 * listens at RCX_ROOT, host:port), else "singleton", a job of one.
 * RCX_BOOTSTRAP=pmix|local|env|singleton (or the bootstrap of the
 * context's configuration) forces one.
 *
 * Collective over all processes of the job: it blocks until every rank has
 * called it and the ranks have exchanged their connection addresses. How
 * the connections are made follows the context's connection mode
 * (struct rcx_ctx_attr connect, or RCX_CONNECT): lazy, the default,
 * connects a pair on its first message (or when a window is created over
 * the group, which connects all of it), so a failure to connect is
 * reported by that operation; eager connects every pair before the call
 * returns. The same group is returned on each call (reference counted):
 * every call hands out one handle, each released with rcx_group_free.
 * *out is written on success only; on an error no group is made and the
 * call may be repeated.
 * Errors: -EINVAL ctx is NULL or not a live context, out is NULL, or
 * RCX_BOOTSTRAP names no bootstrap; -EPROTO the bootstrap is
 * misconfigured (RCX_RANK, RCX_SIZE or RCX_ROOT malformed or
 * inconsistent, a launcher message not understood, or srun started
 * several tasks without --mpi=pmix); -EOPNOTSUPP the pmix bootstrap is
 * needed but rcx was built without PMIx; -ETIMEDOUT the other ranks did
 * not all arrive within RCX_BOOT_TIMEOUT_MS (env and local bootstraps,
 * default 30 s) or the PMIx server's exchange timed out, or (eager mode)
 * the connections were not all up within RCX_CONNECT_TIMEOUT_MS;
 * -ECONNREFUSED the bootstrap's server could not be reached (forced
 * pmix without a PMIx server, env with nothing listening at RCX_ROOT),
 * or (eager) a peer refused the connection; -ECONNRESET the PMIx server
 * went away; -EHOSTUNREACH (eager) a peer's address cannot be reached;
 * -EIO another PMIx failure; -ENOMEM memory for the group or its
 * connections could not be allocated.
 */
RCX_API int rcx_group_world(struct rcx_ctx *ctx, struct rcx_group **out);

/*
 * A two-process group with a peer, perftest style, without a launcher:
 * the server calls rcx_group_accept and the client rcx_group_connect with
 * the address the server's rcx_ctx_address() gave (passed out of band,
 * e.g. on the command line). The accepting side is rank 0, the connecting
 * side rank 1; the connection is made before either call returns. Both
 * block for at most timeout_ms milliseconds (-1: no limit; the progress
 * of the context runs meanwhile). *out is written on success only and is
 * released with rcx_group_free. One rcx_group_accept takes one client;
 * call it again for the next.
 * Errors: -EINVAL ctx not a live context, out NULL, addr NULL, empty or
 * malformed, or timeout_ms below -1 (logged); -ETIMEDOUT no
 * peer arrived, or the connection was not up, within timeout_ms;
 * -ECONNREFUSED nothing listens at addr (or the server refused);
 * -EHOSTUNREACH addr cannot be reached from this device; -ENOMEM memory
 * for the group or its connection could not be allocated.
 */
RCX_API int rcx_group_connect(struct rcx_ctx *ctx, const char *addr,
			      int timeout_ms, struct rcx_group **out);
RCX_API int rcx_group_accept(struct rcx_ctx *ctx, int timeout_ms,
			     struct rcx_group **out);

/*
 * The rank of this process in g (0 to size - 1) and the number of
 * processes in g. Neither blocks nor communicates; they may be called on
 * a group whose members have failed (the failed keep their ranks).
 * Errors: -EINVAL g is NULL or not a live group (freed).
 */
RCX_API int rcx_group_rank(const struct rcx_group *g);
RCX_API int rcx_group_size(const struct rcx_group *g);

/*
 * Barrier: returns once every rank of g has called it. Collective and
 * blocking (a dissemination barrier of log2(size) rounds of empty
 * messages; with lazy connections the first one connects the pairs it
 * needs). It orders nothing but itself: messages and RMA operations in
 * flight are not completed by it.
 * After rcx_group_validate it runs among the survivors.
 * Errors: -EINVAL g is NULL or not a live group; RCX_ERR_PROC_FAILED a
 * member of g is known to have failed (before or during the call) and no
 * rcx_group_validate took it out, so the barrier cannot complete; RCX_ERR_TRANSPORT the connection to a member
 * broke (it may be alive: rcx_group_get_failed); -ENOMEM no memory for the rounds; otherwise an
 * error of the messages it sends (as rcx_send).
 */
RCX_API int rcx_group_barrier(struct rcx_group *g);

/*
 * Allgather: gather len bytes of every rank at every rank, in rank order.
 * Every rank contributes len bytes from in, and out receives
 * size * len bytes, rank i's contribution at out + i * len (this rank's
 * own included). len must be the same at every rank. Collective and
 * blocking; in and out are the caller's and may be reused on return.
 * After rcx_group_validate it runs among the survivors: a failed rank's
 * block of out is left as it was.
 * Errors: -EINVAL g is NULL or not a live group, or in or out NULL with
 * len > 0; RCX_ERR_PROC_FAILED a member of g is known to have failed and
 * no rcx_group_validate took it out, so out is incomplete; -ENOMEM no memory for the exchange; otherwise an
 * error of the messages it sends (as rcx_send).
 */
RCX_API int rcx_group_allgather(struct rcx_group *g, const void *in, size_t len,
				void *out);

/*
 * The ranks of g this process knows to have failed, ascending: the first
 * max of them in ranks, their number in *n. A failure is known once a
 * connection to the rank ended with a sign of its death (rdma_cm
 * disconnect, the provider's own notice), the launcher reported it, or
 * the transport gave up on it RCX_FT_TIMEOUT_MS ago (a slow rank is not
 * failed before; docs/config.md gives the detection bound).
 * After a failure, collectives on g return RCX_ERR_PROC_FAILED until
 * rcx_group_validate.
 * Errors: -EINVAL g not live, n NULL, max < 0, ranks NULL with max > 0.
 */
RCX_API int rcx_group_get_failed(struct rcx_group *g, int *ranks, int max,
				 int *n);

/*
 * Validate (MPI_Comm_validate of the MPI Forum's fault-tolerance notes):
 * collective over the live members of g. They agree on the set of failed
 * members (the agreement survives the death of any rank during it, the
 * one leading it included), every survivor marks them failed, and *nfailed
 * is their number, the same at every survivor. From then on the group's
 * collectives (barrier, allgather, the collectives of rcx/coll.h, window
 * creation, sub-groups, bound collectives bound anew: rcx/bcoll.h) run
 * over the survivors, each keeping its rank; a
 * failed rank's part of an output (allgather, gather) is left as it was,
 * and a collective rooted at a failed rank returns RCX_ERR_PROC_FAILED.
 * A member that left (freed its context) counts as failed. A failure not
 * in the agreed set makes the collectives return RCX_ERR_PROC_FAILED again
 * until the next validate. Without failures it is a barrier with *nfailed
 * 0. rcx_group_get_failed lists the agreed set and any later failure.
 * Errors: -EINVAL g not live or nfailed NULL (logged); -ENOMEM no memory
 * for the agreement (nothing is re-enabled); RCX_ERR_PROC_FAILED a rank
 * failed during the call and is not in the
 * agreed set, or the others agreed that this rank failed (nothing is
 * re-enabled: call it again).
 */
RCX_API int rcx_group_validate(struct rcx_group *g, int *nfailed);

/*
 * Shrink (ULFM's MPIX_Comm_shrink): rcx_group_validate, then a new group
 * of the survivors (as rcx_group_incl of them, in the order of their
 * ranks in g: renumbered 0 to size - nfailed - 1). Collective over the
 * live members of g. *out is to be freed with rcx_group_free.
 * Errors: -EINVAL g not live or out NULL (logged); those of
 * rcx_group_validate and rcx_group_incl (RCX_ERR_PROC_FAILED a rank failed
 * during the call: call it again); -ENOMEM no memory for the rank list
 * or the new group.
 */
RCX_API int rcx_group_shrink(struct rcx_group *g, struct rcx_group **out);

/*
 * What the connection to a peer got, as rcx_group_peer_info reports it.
 * Set version to RCX_PEER_INFO_VERSION before the call: a later rcx that
 * adds fields at the end fills only those the caller's version has.
 */
#define RCX_PEER_INFO_VERSION 1

struct rcx_peer_info {
	unsigned int version;	 /* in: RCX_PEER_INFO_VERSION */
	char provider[16];	 /* "verbs", "shm" (auto: the one it chose) */
	char device[64];	 /* "rxe0", "mlx5_0"; "shm" */
	unsigned int local_qpn;	 /* this end's queue pair; 0: none (shm) */
	unsigned int remote_qpn; /* the peer's queue pair; 0: none */
	unsigned int path_mtu;	 /* bytes; 0: no path MTU (shm) */
	unsigned int max_inline; /* largest send posted inline, as granted */
};

/*
 * Describe the connection of this process to rank of g: which provider
 * and device carry it and, on verbs, the queue pair numbers of both ends,
 * the path MTU and the inline size the device granted (which may be less
 * than RCX_INLINE asked for). What perftest prints in its header, read
 * from the connection itself. Local: it neither blocks nor communicates,
 * and does not make a lazy connection (send a message first). info is
 * written on success only; its version field is read.
 * Errors: -EINVAL g not a live group, info NULL, info->version not a
 * version this rcx knows, or rank out of range (logged with the group's
 * size); -ENOTCONN rank is this process, or its connection is not up
 * (lazy and not yet made, still connecting, or closed);
 * RCX_ERR_PROC_FAILED rank is known to have failed; -EOPNOTSUPP the
 * provider cannot describe its connections.
 */
RCX_API int rcx_group_peer_info(struct rcx_group *g, int rank,
				struct rcx_peer_info *info);

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
 * -ENOMEM no memory for the exchange or the new group.
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
