/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_BCOLL_H
#define RCX_BCOLL_H

#include <stddef.h>
#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcx_req;
struct rcx_info;
struct rcx_group;

/*
 * Bound collectives: persistent collectives (MPI-4's MPI_Barrier_init,
 * MPI_Bcast_init, MPI_Allreduce_init, MPI_Reduce_init,
 * MPI_Allgather_init, MPI_Alltoall_init) whose whole schedule is bound into
 * pre-posted RDMA work requests, the channels proposal's "extensions to
 * collective".
 *
 * An init call describes the collective on a group and returns a
 * persistent request that cannot be started itself (rcx_start: -EOPNOTSUPP;
 * free it with rcx_req_free). rcx_bind_coll binds it, collectively over
 * the group (every member calls it, in the same order for the bound
 * collectives of a group): for every step of the schedule the pair of
 * ranks binds a write_imm channel (rcx_chan_protocol "write_imm", one
 * slot), so the buffers are registered once, every step's remote slot
 * address and key are exchanged once and the work requests are prepared.
 * Schedules: dissemination for the barrier, a binomial tree for the
 * broadcast, a ring for the allgather, a binomial tree for the reduce,
 * shifted pairs for the alltoall (step s: to rank + s, from rank - s);
 * the allreduce has three: recursive doubling (a group that is not a
 * power of two first folds its extra ranks into their neighbours), a
 * ring (reduce-scatter then allgather over n segments: what each rank
 * moves does not grow with n) and a tree (a binomial reduce to rank 0,
 * then its broadcast). Without RCX_BCOLL_SCHEDULE an allreduce takes the
 * ring from 64 KiB on groups of more than 2 ranks (count at least the
 * group's size), else recursive doubling.
 *
 * The bound collective is a persistent request: rcx_start / rcx_startall
 * / rcx_test / rcx_wait and continuations as on any request; one
 * collective in flight (starting an active one returns -EBUSY). A start
 * posts prepared RDMA WRITEs with immediate into the peers' slots and
 * allocates, matches and handshakes nothing; the reduction runs on the
 * receiving CPU as each step's data arrives. A rank never writes a slot
 * its peer has not given back: each receiving slot hands a credit to its
 * writer when the collective is started on its rank, and the immediate
 * carries the start count, so a fast rank's next start waits for the
 * slow rank's start instead of overwriting it.
 *
 * Buffers belong to rcx while the collective is active. The binding uses
 * the channel bind handshake with tags from RCX_BCOLL_TAG_BASE up; the
 * program should not bind channels of its own with such tags on the group
 * while it binds collectives.
 *
 * A member failure (the group's failure detection: RCX_ERR_PROC_FAILED)
 * completes a started bound collective at every survivor with
 * RCX_ERR_PROC_FAILED, and every later start returns it, also after
 * rcx_group_validate: its steps were bound with the failed member.
 * rcx_bind_free then frees it without waiting for the failed member.
 * Binding on a group with a failure that no rcx_group_validate took out
 * returns RCX_ERR_PROC_FAILED. After rcx_group_validate, a collective
 * bound anew (rcx_bind_coll of a new or the same init request) runs over
 * the survivors with their ranks kept: the schedule is the one of a
 * group of the survivors, an allgather's or alltoall's block of a failed
 * rank is left as it was, and one rooted at a failed rank returns
 * RCX_ERR_PROC_FAILED at its bind.
 */
#define RCX_BCOLL_TAG_BASE 0x3fff0000

/*
 * Info key of rcx_bind_coll: the schedule, "auto" (the default: by size
 * and group, see above), "recursive_doubling" (the barrier's
 * dissemination; an allreduce), "tree" (broadcast, reduce, allreduce) or
 * "ring" (allgather, alltoall, allreduce of count >= the group's size on
 * at most 33 ranks). Every rank of the group must give the same value.
 */
#define RCX_BCOLL_SCHEDULE "rcx_bcoll_schedule"

/* sendbuf of a reduction, allgather or alltoall: the data is in recvbuf
 * already */
#define RCX_IN_PLACE ((const void *)1)

/*
 * Describe a barrier, a broadcast from root or an allreduce on g, as an
 * init request to hand to rcx_bind_coll; nothing is sent and nothing is
 * registered yet. Local: each rank describes the same collective with the
 * same arguments (count, datatype, op, root). Datatypes and operations are
 * those of the accumulates (enum rcx_datatype, enum rcx_acc_op of
 * <rcx/win.h>; the bitwise operations take integer types only,
 * RCX_MAXLOC and RCX_MINLOC the value-index pair types only;
 * RCX_REPLACE and RCX_NO_OP are not reductions). RCX_IN_PLACE as sendbuf:
 * the data is taken from and the result left in recvbuf. The buffers must
 * stay valid until the bound collective is freed. *req is written on
 * success only; free it with rcx_req_free once bound.
 * Errors: -EINVAL g not a live group, root out of range, count 0 or too
 * large, a NULL buffer, an unknown datatype or an operation it does not
 * take, sendbuf equal to recvbuf (use RCX_IN_PLACE); -ENOMEM no memory
 * for the request.
 */
RCX_API int rcx_barrier_init(struct rcx_group *g, const struct rcx_info *info,
			     struct rcx_req **req);
RCX_API int rcx_bcast_init(void *buf, size_t count, int datatype, int root,
			   struct rcx_group *g, const struct rcx_info *info,
			   struct rcx_req **req);
RCX_API int rcx_allreduce_init(const void *sendbuf, void *recvbuf, size_t count,
			       int datatype, int op, struct rcx_group *g,
			       const struct rcx_info *info,
			       struct rcx_req **req);

/*
 * Reduce to root: the result in the root's recvbuf. Every rank passes a
 * recvbuf of count elements: on the others it holds the partial result
 * of their subtree. Schedule: a binomial tree. Errors: as
 * rcx_allreduce_init; -EINVAL root out of range.
 */
RCX_API int rcx_reduce_init(const void *sendbuf, void *recvbuf, size_t count,
			    int datatype, int op, int root, struct rcx_group *g,
			    const struct rcx_info *info, struct rcx_req **req);

/*
 * Allgather: count elements from every rank, rank i's at recvbuf + i *
 * count elements (RCX_IN_PLACE: this rank's block is already there).
 * Schedule: a ring, each step writing straight into the right neighbour's
 * recvbuf. Errors: as above; -EINVAL the group's blocks together exceed
 * 4 GiB.
 */
RCX_API int rcx_allgather_init(const void *sendbuf, void *recvbuf, size_t count,
			       int datatype, struct rcx_group *g,
			       const struct rcx_info *info,
			       struct rcx_req **req);

/*
 * Alltoall: rank i's sendbuf block j (count elements at sendbuf + j *
 * count) lands in rank j's recvbuf block i. RCX_IN_PLACE: every block is
 * taken from recvbuf (rcx copies it at each start). Schedule: shifted
 * pairs, every block written straight into its recvbuf, every write
 * posted at the start. Errors: -EINVAL g not a live group, a NULL buffer,
 * count 0, an unknown datatype, sendbuf equal to recvbuf (use
 * RCX_IN_PLACE), the group's blocks together exceed 4 GiB, or the group
 * has more than 33 ranks; -ENOMEM no memory for the request.
 */
RCX_API int rcx_alltoall_init(const void *sendbuf, void *recvbuf, size_t count,
			      int datatype, struct rcx_group *g,
			      const struct rcx_info *info,
			      struct rcx_req **req);

/*
 * Bind the collective init_req describes (collective over its group).
 * *coll is written on success only; init_req is not changed and may be
 * freed or bound again. Free the result with rcx_bind_free.
 * info: RCX_BCOLL_SCHEDULE (NULL: the defaults).
 * Errors: -EINVAL init_req is not a collective's init request, or its
 * group was freed, an allgather's group has more than 65 ranks, info
 * names an unknown schedule or one the collective does not have (for
 * its size and group); -ENOMEM no memory for the steps' channels;
 * RCX_ERR_PROC_FAILED a member failed (and no rcx_group_validate took
 * it out), or the root is a failed rank (both logged, nothing bound);
 * errors of rcx_bind (the binds of the steps).
 */
RCX_API int rcx_bind_coll(struct rcx_req *init_req, const struct rcx_info *info,
			  struct rcx_req **coll);

#ifdef __cplusplus
}
#endif

#endif
