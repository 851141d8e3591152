/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_WIN_H
#define RCX_WIN_H

#include <stddef.h>
#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcx_group;
struct rcx_info;
struct rcx_req;

/*
 * RMA windows (MPI-3 one-sided communication) with rcx_win_order, the
 * MPI_WIN_ORDER proposal: ordering of RMA operations without waiting for
 * their remote completion.
 *
 * A window is a memory region exposed by every process of a group, made
 * collectively. Target memory is addressed by rank and displacement:
 * byte offset = disp * disp_unit of the target. Every access is checked
 * against the target's window size at the origin; an access out of range
 * returns -EINVAL and nothing is sent.
 *
 * Operations are nonblocking: rcx_put, rcx_get and the accumulates return
 * once started; they are complete at the target after rcx_win_flush,
 * rcx_win_unlock(_all) or rcx_win_fence, and their origin buffers (a get's
 * destination, a fetching operation's result) may be touched only after
 * rcx_win_flush_local or one of those. The request-based forms (rcx_rput,
 * rcx_rget, rcx_raccumulate, rcx_rget_accumulate) return a request that
 * completes when the origin buffers are usable (for rget and
 * rget_accumulate: when the data has arrived); they are allowed in
 * passive-target epochs only, as in MPI.
 *
 * Synchronisation: passive target (rcx_win_lock/unlock, lock_all/
 * unlock_all, flush*, sync) and active target (rcx_win_fence). An RMA
 * operation outside an access epoch to its target, or a synchronisation
 * call that does not fit the window's state, returns RCX_ERR_EPOCH and
 * changes nothing.
 *
 * Accumulates are element-wise atomic with respect to other accumulates
 * with the same datatype, as MPI's default accumulate_ops=same_op_no_op:
 * concurrent accumulates to one location must use the same operation or
 * RCX_NO_OP (compare-and-swap counts as its own operation). 64-bit
 * fetch-add (RCX_SUM, and RCX_NO_OP as an atomic read, on RCX_INT64 and
 * RCX_UINT64 at 8-byte aligned addresses) and 64-bit compare-and-swap
 * use the NIC's atomics; every other accumulate runs in software at the
 * target, which must make progress (any rcx call that waits) for it to
 * complete. A NIC accumulate of more than a few elements (8) to another
 * process goes there as one message, and the target applies its elements
 * with its own NIC's atomics (so they stay atomic with respect to single
 * NIC atomics from others); it too needs the target's progress.
 * Accumulates from one process to overlapping locations of one target are
 * executed in program order (accumulate_ordering=rar,raw,war,waw),
 * whichever of the paths they take.
 *
 * Info keys of rcx_win_create / rcx_win_allocate (unknown keys are
 * ignored; malformed values give -EINVAL):
 *   rcx_order_scope      "thread" (default): rcx_win_order orders the
 *                        calling thread's operations; "process": those of
 *                        every thread of the process.
 *   accumulate_ordering  "rar,raw,war,waw" (default, any non-empty list of
 *                        these) or "none": accumulates to one location are
 *                        then not ordered (MPI's info key).
 *   rcx_accumulate_nic   "true" (default) or "false": run every
 *                        accumulate in software at the target, NIC
 *                        atomics only for the window locks. It must be
 *                        the same at every rank (a word updated by one
 *                        rank's NIC and another's CPU would lose updates):
 *                        a difference fails the creation at every rank
 *                        with -EINVAL (logged).
 * A rank that finds a problem with its own arguments still takes part in
 * the collective; then every rank fails.
 */
struct rcx_win;

#define RCX_ORDER_SCOPE	   "rcx_order_scope"
#define RCX_ACC_ORDERING   "accumulate_ordering"
#define RCX_ACCUMULATE_NIC "rcx_accumulate_nic"

/* Element types of the accumulate operations. */
enum rcx_datatype {
	RCX_INT32 = 1,
	RCX_INT64,
	RCX_UINT64,
	RCX_FLOAT,
	RCX_DOUBLE,
};

/* Accumulate operations; the bitwise ones take integer types only. */
enum rcx_acc_op {
	RCX_SUM = 1,
	RCX_PROD,
	RCX_MIN,
	RCX_MAX,
	RCX_BAND,
	RCX_BOR,
	RCX_BXOR,
	RCX_REPLACE,
	RCX_NO_OP,
};

enum rcx_lock_type {
	RCX_LOCK_SHARED = 1,
	RCX_LOCK_EXCLUSIVE = 2,
};

/* Fence assertions (rcx_win_fence), like MPI_MODE_*. */
#define RCX_MODE_NOPRECEDE 1 /* no operation of this process precedes */
#define RCX_MODE_NOSUCCEED 2 /* no operation follows: the epoch ends */

/*
 * Kinds of rcx_win_order (discrete values, not flags): which operations
 * issued after the call wait for every operation issued before it.
 */
enum rcx_order_kind {
	RCX_ORDER_READ = 1,  /* later reads (get, fetching accumulates) */
	RCX_ORDER_WRITE = 2, /* later writes (put, accumulates) */
	RCX_ORDER_DATA = 3,  /* later accesses that conflict with an earlier
			      * one: overlapping range, at least one writes */
	RCX_ORDER_ALL = 4,   /* every later operation */
};

/*
 * Create a window over size bytes at base (base may be NULL when size is
 * 0). Collective over g. The memory is registered once; addresses, keys,
 * sizes and displacement units are exchanged with every rank.
 * Errors: -EINVAL g or out NULL or not live (returned at once, without
 * taking part), base NULL with size > 0, disp_unit 0, malformed info,
 * rcx_accumulate_nic not the same at every rank (every rank fails);
 * -EFAULT [base, base + size) is not all mapped memory (logged);
 * -EOPNOTSUPP the device has no atomics (needed for locks) and the group
 * has more than one process; -ENOMEM; negative errno from registration;
 * RCX_ERR_REMOTE_OP another rank failed to create its part (every rank
 * fails then); RCX_ERR_PROC_FAILED a member failed (one that
 * rcx_group_validate took out before does not count: the window is made
 * among the survivors, ranks kept, and an operation to a failed rank
 * returns RCX_ERR_PROC_FAILED).
 */
RCX_API int rcx_win_create(struct rcx_group *g, void *base, size_t size,
			   size_t disp_unit, const struct rcx_info *info,
			   struct rcx_win **out);

/*
 * Like rcx_win_create, with the memory (size bytes, 64-byte aligned,
 * zeroed) allocated by rcx and freed by rcx_win_free. Collective over g
 * and blocking, as rcx_win_create; size and disp_unit may differ from
 * rank to rank. *base (this process's memory, to be read and written
 * directly under the window's synchronisation rules) and *out are
 * written on success only; the memory belongs to the window and must not
 * be freed by the caller. Errors: as rcx_win_create; -EINVAL base NULL, or
 * size more than the device registers in one piece (logged); -ENOMEM
 * size more than this machine's memory (logged), or the allocation
 * failed.
 */
RCX_API int rcx_win_allocate(struct rcx_group *g, size_t size, size_t disp_unit,
			     const struct rcx_info *info, void **base,
			     struct rcx_win **out);

/*
 * Free a window; collective. Completes this process's outstanding
 * operations, waits until every rank has done so, then releases the
 * memory registration; *win = NULL. On an invalid window (a member
 * failed) it frees at once, without the others and without error.
 * Errors: -EINVAL win NULL or not a live window; RCX_ERR_EPOCH a lock or
 * lock_all epoch is open (nothing is freed); RCX_ERR_PROC_FAILED (the
 * window is freed all the same).
 */
RCX_API int rcx_win_free(struct rcx_win **win);

/*
 * Fault tolerance. Creation is all or nothing: when a rank fails during
 * rcx_win_create/allocate, every rank gets an error and no window.
 * When this process learns that a member of the window's group failed,
 * the window becomes invalid: every open epoch ends in error, every
 * outstanding operation completes in error (a request-based one still
 * must be tested or waited and reports RCX_ERR_PROC_FAILED, or
 * RCX_ERR_REMOTE_ACCESS when the dying target's memory went before its
 * queue pairs; one that reports success did its work), blocked epoch calls return
 * RCX_ERR_PROC_FAILED, and new operations and epoch calls return
 * RCX_ERR_WIN_INVALID. Memory that the failed epoch targeted is
 * undefined; the rest keeps its contents.
 *
 * rcx_win_validate: make an invalid window usable again with the
 * survivors; collective over the live members. On a valid window
 * it is a barrier. On an invalid one the survivors agree on the failed
 * set (the agreement survives the death of any rank during it, the one
 * leading it included), the window memory is registered again (new keys:
 * a late write with an old key is refused) and the window is rebuilt
 * under the same handle with the survivors, keeping their ranks;
 * operations to a failed rank return RCX_ERR_PROC_FAILED. A failure
 * during validate makes it return RCX_ERR_PROC_FAILED with the window
 * still invalid; call it again.
 * Errors: -EINVAL win not live; -ENOMEM no memory for the agreement or
 * the new registration; RCX_ERR_PROC_FAILED a rank failed during the
 * call (the window stays invalid: call it again).
 */
RCX_API int rcx_win_validate(struct rcx_win *win);

/*
 * The failed ranks of the window's group known here, ascending, as
 * rcx_group_get_failed: the first max of them in ranks, their number in
 * *n (it may exceed max). Local: it neither blocks nor communicates, and
 * works on an invalid window too, to decide whether to validate it.
 * Errors: -EINVAL win not a live window, n NULL, max < 0, or ranks NULL
 * with max > 0.
 */
RCX_API int rcx_win_get_failed(struct rcx_win *win, int *ranks, int max,
			       int *n);

/* A range of this process's window memory (rcx_win_get_undefined). */
struct rcx_win_range {
	int origin;    /* the rank whose operations may have written it */
	size_t offset; /* bytes from the window's base */
	size_t len;    /* bytes */
};

/*
 * The memory of this process's window that the failure left undefined,
 * as found by the last rcx_win_validate that rebuilt the window. For each
 * surviving origin (this process included): the ranges its writing
 * operations (puts, accumulates other than RCX_NO_OP, fetch-and-op,
 * compare-and-swap) reached here since a flush, unlock or fence last
 * completed them, gathered from the origins during validate; an origin
 * keeps a few ranges per target and merges the nearest beyond that, so a
 * range may cover more than was written, never less. For each rank that
 * failed: the whole window, since an RDMA write leaves no trace at its
 * target and what a dead origin wrote cannot be known here. Ranges are
 * sorted by origin, then offset; up to max are written to ranges and *n
 * is their number (it may exceed max); 0 when no validate rebuilt the
 * window. Errors: -EINVAL win not live, n NULL, max < 0, ranges NULL
 * with max > 0.
 */
RCX_API int rcx_win_get_undefined(struct rcx_win *win,
				  struct rcx_win_range *ranges, int max,
				  int *n);

/*
 * Put len bytes from buf at byte offset disp * disp_unit of target's
 * window (disp_unit being the target's); get len bytes from there into
 * buf. Nonblocking: one RDMA WRITE or READ is posted (a long one in
 * pieces) and the call returns; the target takes no part. buf stays in
 * use by rcx until the operation is complete at the origin
 * (rcx_win_flush_local or stronger); a get's data is in buf only then.
 * The target may be this process.
 * Errors (all operations below): -EINVAL win not live, target out of
 * range, buf NULL with len > 0, the range does not fit the target's
 * window; RCX_ERR_EPOCH no access epoch to target is open;
 * RCX_ERR_PROC_FAILED the target is known to have failed; -ENOMEM no
 * memory to track the operation;
 * -EMSGSIZE a software accumulate cannot fit one element into a message
 * (RCX_EAGER_SIZE too small). Nothing is sent on an error.
 */
RCX_API int rcx_put(struct rcx_win *win, const void *buf, size_t len,
		    int target, size_t disp);
RCX_API int rcx_get(struct rcx_win *win, void *buf, size_t len, int target,
		    size_t disp);

/*
 * target[i] = target[i] op buf[i] for count elements of type dtype
 * (RCX_REPLACE stores buf[i]; RCX_NO_OP changes nothing and buf may be
 * NULL), at disp of target's window. Each element is updated atomically
 * with respect to other accumulates (see the ordering rules above).
 * Nonblocking, like rcx_put: buf is in use until the operation is
 * complete at the origin; a software accumulate completes only when the
 * target makes progress. Errors: as rcx_put; -EINVAL unknown dtype or op, a bitwise op on
 * a floating type.
 */
RCX_API int rcx_accumulate(struct rcx_win *win, const void *buf, size_t count,
			   int dtype, int target, size_t disp, int op);

/*
 * As rcx_accumulate, and result[i] receives the value target[i] had
 * before, each element read and updated in one atomic step. Nonblocking:
 * result is valid, and buf reusable, only after a flush_local or stronger
 * synchronisation (or the completion of rcx_rget_accumulate's request).
 * With RCX_NO_OP it is an atomic read.
 * Errors: as rcx_accumulate; -EINVAL result NULL with count > 0.
 */
RCX_API int rcx_get_accumulate(struct rcx_win *win, const void *buf,
			       void *result, size_t count, int dtype,
			       int target, size_t disp, int op);

/*
 * One element of rcx_get_accumulate: *result receives the value at disp
 * of target's window, which becomes value op *buf, in one atomic step.
 * RCX_SUM and RCX_NO_OP on 64-bit integers use the NIC's fetch-and-add.
 * Nonblocking: *result is valid after a flush_local or stronger
 * synchronisation. Errors: as rcx_get_accumulate.
 */
RCX_API int rcx_fetch_and_op(struct rcx_win *win, const void *buf, void *result,
			     int dtype, int target, size_t disp, int op);

/*
 * If target == *compare then target = *buf; *result receives the old
 * value, in one atomic step at disp of target's window. Integer types
 * only; 64-bit ones at 8-byte aligned addresses use the NIC's
 * compare-and-swap. Nonblocking: *result is valid after a flush_local or
 * stronger synchronisation. Errors: as rcx_get_accumulate; -EINVAL
 * compare NULL or a floating dtype.
 */
RCX_API int rcx_compare_and_swap(struct rcx_win *win, const void *buf,
				 const void *compare, void *result, int dtype,
				 int target, size_t disp);

/*
 * Request-based RMA: rcx_put, rcx_get, rcx_accumulate and
 * rcx_get_accumulate with a request. Same arguments and the same
 * nonblocking start. *req is written on success; it completes when the origin
 * buffers may be used (for rget and rget_accumulate: when the data has
 * arrived), which is not completion at the target: a flush or unlock
 * still gives that. Test or wait on it; it is freed by the completing
 * call, and a continuation may be attached to it. Errors: as the plain forms, and RCX_ERR_EPOCH outside a lock or
 * lock_all epoch; -EINVAL req NULL.
 */
RCX_API int rcx_rput(struct rcx_win *win, const void *buf, size_t len,
		     int target, size_t disp, struct rcx_req **req);
RCX_API int rcx_rget(struct rcx_win *win, void *buf, size_t len, int target,
		     size_t disp, struct rcx_req **req);
RCX_API int rcx_raccumulate(struct rcx_win *win, const void *buf, size_t count,
			    int dtype, int target, size_t disp, int op,
			    struct rcx_req **req);
RCX_API int rcx_rget_accumulate(struct rcx_win *win, const void *buf,
				void *result, size_t count, int dtype,
				int target, size_t disp, int op,
				struct rcx_req **req);

/*
 * Passive target: lock target's window, type RCX_LOCK_SHARED or
 * RCX_LOCK_EXCLUSIVE (a lock word at the target, taken with NIC atomics;
 * the target needs not take part). Blocks until the lock is held,
 * retrying while another process holds it in a conflicting mode. Opens
 * an access epoch to target, ended by rcx_win_unlock. Errors: -EINVAL win not live, bad type
 * or target; RCX_ERR_EPOCH target already locked by this process, a
 * lock_all epoch is open, or a fence epoch with operations is open;
 * RCX_ERR_PROC_FAILED target is known to have failed (the window is then
 * invalid).
 */
RCX_API int rcx_win_lock(struct rcx_win *win, int type, int target);

/*
 * End the access epoch rcx_win_lock opened: complete every operation of
 * this process to target at the target, then release the lock. Blocks
 * until both are done; the origin buffers of those operations are the
 * caller's again.
 * Errors: -EINVAL win not a live window or target out of range;
 * RCX_ERR_EPOCH target is not locked by rcx_win_lock;
 * RCX_ERR_PROC_FAILED target failed before its operations completed
 * (the window is then invalid); the first error of an operation.
 */
RCX_API int rcx_win_unlock(struct rcx_win *win, int target);

/*
 * Lock every rank's window, shared, and unlock them all.
 * rcx_win_lock_all takes a shared lock on the window of every rank of
 * the group, blocking until all are held, and opens an access epoch to
 * all of them. rcx_win_unlock_all completes every operation of this
 * process at its target and releases the locks, blocking until done.
 * Errors: -EINVAL win not a live window; RCX_ERR_EPOCH (lock_all: a lock
 * or lock_all is held or a fence epoch with operations is open;
 * unlock_all: no lock_all epoch); RCX_ERR_PROC_FAILED a member is known
 * to have failed (the window is then invalid); the first error of an
 * operation.
 */
RCX_API int rcx_win_lock_all(struct rcx_win *win);
RCX_API int rcx_win_unlock_all(struct rcx_win *win);

/*
 * flush: every operation to target (flush_all: to every rank) is
 * complete at the target. flush_local(_all): complete at the origin, its
 * buffers usable. All four block until that holds and leave the epoch
 * open (the locks stay held).
 * Errors: -EINVAL win not a live window or target out of range;
 * RCX_ERR_EPOCH no passive epoch to target (to any rank, for the _all
 * forms); RCX_ERR_PROC_FAILED the target (a member, for the _all forms)
 * is known to have failed; the first error of an operation.
 */
RCX_API int rcx_win_flush(struct rcx_win *win, int target);
RCX_API int rcx_win_flush_all(struct rcx_win *win);
RCX_API int rcx_win_flush_local(struct rcx_win *win, int target);
RCX_API int rcx_win_flush_local_all(struct rcx_win *win);

/*
 * Synchronise the public and private copies of the local window: a full
 * memory barrier (MPI_Win_sync), so that this process's loads and stores
 * to its own window memory are ordered with RMA accesses that other
 * processes synchronise with it. Local and nonblocking; allowed in any
 * epoch state.
 * Errors: -EINVAL win is NULL or not a live window; RCX_ERR_WIN_INVALID
 * the window was invalidated by a failure (rcx_win_validate rebuilds it).
 */
RCX_API int rcx_win_sync(struct rcx_win *win);

/*
 * Active target synchronisation (MPI_Win_fence): collective. Completes every operation of the epoch at
 * every target, then synchronises the group; a new access and exposure
 * epoch starts unless RCX_MODE_NOSUCCEED. asserts is 0 or an or of
 * RCX_MODE_* values. Errors: -EINVAL win not a live window or unknown
 * assert bits; RCX_ERR_EPOCH a lock or lock_all epoch is open;
 * RCX_ERR_PROC_FAILED a member is known to have failed (the window is
 * then invalid); the first error of an operation.
 */
RCX_API int rcx_win_fence(struct rcx_win *win, int asserts);

/*
 * Order: every operation this thread (rcx_order_scope=process: this
 * process) issued on the window before the call is complete at its
 * target before any operation of the given kind issued after the call to
 * the same target begins there. Does not wait for remote completion:
 * per target it marks the next operation that needs it with a fence (a
 * READ or ATOMIC is outstanding), does nothing where RC ordering holds
 * (write before anything), and waits only where the target's side runs
 * in software or the target is reached through more than one queue pair.
 * Errors: -EINVAL win not live or kind unknown; RCX_ERR_EPOCH no access
 * epoch is open; -ENOMEM (the first call of a thread keeps state for it).
 */
RCX_API int rcx_win_order(struct rcx_win *win, int kind);

#ifdef __cplusplus
}
#endif

#endif
