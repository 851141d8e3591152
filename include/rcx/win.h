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
 * rcx_win_unlock(_all), rcx_win_fence or rcx_win_complete (at the target:
 * once its rcx_win_wait returned), and their origin buffers (a get's
 * destination, a fetching operation's result) may be touched only after
 * rcx_win_flush_local or one of those. The request-based forms (rcx_rput,
 * rcx_rget, rcx_raccumulate, rcx_rget_accumulate) return a request that
 * completes when the origin buffers are usable (for rget and
 * rget_accumulate: when the data has arrived); they are allowed in
 * passive-target epochs only, as in MPI.
 *
 * RCX_PROC_NULL (<rcx/p2p.h>) is a valid target of every operation and
 * of rcx_win_lock, rcx_win_unlock, rcx_win_flush and
 * rcx_win_flush_local, as in MPI: the call does nothing and returns 0 in
 * any epoch state (in none too); buffers are not touched, the
 * displacement is not checked, a request-based form returns a request
 * already complete (status.source RCX_PROC_NULL, count 0), and a lock of
 * RCX_PROC_NULL opens no epoch. The datatype and operation of an
 * accumulate are still checked.
 *
 * Synchronisation: passive target (rcx_win_lock/unlock, lock_all/
 * unlock_all, flush*, sync) and active target (rcx_win_fence, and
 * rcx_win_post/start/complete/wait/test). An RMA
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

/*
 * Element types of the accumulates and of the reductions (coll.h,
 * bcoll.h). New types are appended: the values of the others never
 * change.
 */
enum rcx_datatype {
	RCX_INT32 = 1,
	RCX_INT64,
	RCX_UINT64,
	RCX_FLOAT,
	RCX_DOUBLE,
	RCX_INT8,	 /* int8_t */
	RCX_UINT8,	 /* uint8_t */
	RCX_INT16,	 /* int16_t */
	RCX_UINT16,	 /* uint16_t */
	RCX_UINT32,	 /* uint32_t */
	RCX_LONG_DOUBLE, /* long double: a floating type */
	/*
	 * Value-index pairs, for RCX_MAXLOC and RCX_MINLOC (MPI_FLOAT_INT,
	 * MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT,
	 * MPI_LONG_DOUBLE_INT): each element is the C struct
	 * { T value; int index; } with the compiler's layout and padding,
	 * as struct rcx_float_int and the others below.
	 */
	RCX_FLOAT_INT,
	RCX_DOUBLE_INT,
	RCX_LONG_INT,
	RCX_2INT,
	RCX_SHORT_INT,
	RCX_LONG_DOUBLE_INT,
};

/* The elements of the pair types. */
struct rcx_float_int {
	float value;
	int index;
};
struct rcx_double_int {
	double value;
	int index;
};
struct rcx_long_int {
	long value;
	int index;
};
struct rcx_2int {
	int value;
	int index;
};
struct rcx_short_int {
	short value;
	int index;
};
struct rcx_long_double_int {
	long double value;
	int index;
};

/*
 * Accumulate and reduction operations (new ones appended). SUM, PROD,
 * MIN and MAX take the integer and floating types; the bitwise ones
 * integer types only; MAXLOC and MINLOC the pair types only: the larger
 * (smaller) value with its index, and of equal values the lower index,
 * as MPI. REPLACE and NO_OP (accumulates only) take every type.
 */
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
	RCX_MAXLOC,
	RCX_MINLOC,
};

enum rcx_lock_type {
	RCX_LOCK_SHARED = 1,
	RCX_LOCK_EXCLUSIVE = 2,
};

/*
 * Assertions of the synchronisation calls, like MPI_MODE_*: an or of
 * these, each accepted only where MPI accepts it (rcx_win_fence:
 * NOPRECEDE, NOSUCCEED, NOSTORE, NOPUT; rcx_win_post: NOCHECK, NOSTORE,
 * NOPUT; rcx_win_start: NOCHECK); any other bit is -EINVAL.
 */
#define RCX_MODE_NOPRECEDE 1 /* no operation of this process precedes */
#define RCX_MODE_NOSUCCEED 2 /* no operation follows: the epoch ends */
/* the matching post was made before this start (post: and every start
 * that matches it says so): start does not wait for it */
#define RCX_MODE_NOCHECK 4
#define RCX_MODE_NOSTORE \
	8 /* the local window was not stored to since
			    * the last synchronisation (a hint) */
#define RCX_MODE_NOPUT \
	16 /* no put or accumulate will reach the local
			     * window until the next synchronisation (a
			     * hint) */

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
 * Dynamic windows (MPI_Win_create_dynamic): a window made with no memory,
 * to which each process attaches regions of its own memory and detaches
 * them again, locally, whenever it likes. The target displacement of
 * every operation on a dynamic window is an address at the target
 * (disp_unit 1, as MPI_BOTTOM plus MPI_Get_address): the target sends it
 * to the origins by its own means, e.g. (size_t)(uintptr_t)ptr in a
 * message or a put. An operation must fall inside one attached region.
 *
 * How an origin finds the region: each process keeps a table of its
 * regions (at most RCX_WIN_ATTACH_MAX) that peers read with an RDMA
 * READ, with no work by the target's CPU; an origin keeps a copy per
 * target. An address the copy does not cover reads the table again. The
 * first access to a target after each synchronisation call of the origin
 * on the window (lock, lock_all, flush*, unlock*, fence) first reads the
 * target's generation word (bumped by every attach and detach) and the
 * table again when it moved. What is guaranteed: an operation whose range
 * no region attached at the target covers, as the origin's copy says
 * after those checks, returns RCX_ERR_REMOTE_ACCESS and sends nothing —
 * in particular an access to a region detached before a synchronisation
 * that the origin has called since. Detach deregisters the region: an
 * origin that did not synchronise since the detach still holds the old
 * key, and its operation is refused at the target (the memory is never
 * written) and completes with an error; as on an RC queue pair, the
 * refusal may also break the connection to the target, which makes the
 * window invalid (as in MPI, accessing detached memory is erroneous). Memory must stay attached until every operation on it is
 * complete. rcx_win_validate does not register attached regions anew.
 */
#define RCX_WIN_ATTACH_MAX 64

/*
 * Create a dynamic window over g, with no memory attached yet; collective
 * and blocking, as rcx_win_create, with the same info keys. Each process
 * registers a small table of its regions for its peers to read; *out is
 * written on success only and the window is freed with rcx_win_free
 * (which leaves attached memory to its owner). Errors: as rcx_win_create.
 */
RCX_API int rcx_win_create_dynamic(struct rcx_group *g,
				   const struct rcx_info *info,
				   struct rcx_win **out);

/*
 * Attach size bytes at base to the dynamic window win: local, not
 * collective. The memory is registered for the peers' access; it stays
 * the caller's and must outlive the attachment. Errors: -EINVAL win not a
 * live window or not made by rcx_win_create_dynamic, base NULL, size 0,
 * or the range wraps around; -EEXIST the range overlaps a region already
 * attached; -ENOSPC RCX_WIN_ATTACH_MAX regions are attached; -EFAULT not
 * all of the range is mapped memory; RCX_ERR_WIN_INVALID the window was
 * invalidated by a failure; negative errno from the registration. Each
 * error is logged with the bad value and nothing is attached.
 */
RCX_API int rcx_win_attach(struct rcx_win *win, void *base, size_t size);

/*
 * Detach the region attached at base (the base given to rcx_win_attach):
 * local. Its registration goes; origins find out as the comment above
 * says. Errors: -EINVAL win not a live window or not dynamic; -ENOENT no
 * region is attached at base (logged); RCX_ERR_WIN_INVALID the window
 * was invalidated by a failure. Nothing changes on an error.
 */
RCX_API int rcx_win_detach(struct rcx_win *win, const void *base);

/*
 * Shared-memory windows (MPI_Win_allocate_shared). Every member of g
 * must run on one node (equal node keys: RCX_NODE, the launcher's node
 * name or the host, with the same kernel and /dev/shm). The parts of all
 * members are in one segment that each of them maps, so a process may
 * load and store to its peers' parts directly through the pointers
 * rcx_win_shared_query gives, under the window's synchronisation (e.g.
 * rcx_win_sync and a barrier, or fence). By default the parts follow each
 * other in rank order with no gap: rank r's part begins where rank r-1's
 * ends. Info key alloc_shared_noncontig "true" starts each part on a
 * page of its own instead ("false", the default). The segment does not
 * depend on the provider: shm, auto and verbs (all members on one host)
 * alike. RMA operations on a shared window are plain copies into the
 * target's part and its accumulates CPU atomics (elements must be
 * aligned to their size: -EINVAL otherwise), atomic with respect to the
 * same CPU atomics made through the pointers (e.g. __atomic_fetch_add on
 * a 64-bit word); epochs, locks and rcx_win_order work as on any window.
 */
#define RCX_ALLOC_SHARED_NONCONTIG "alloc_shared_noncontig"

/*
 * Allocate a shared window: size bytes (zeroed) at this process, disp_unit
 * as in rcx_win_create; collective and blocking. *base is this process's
 * part, written with *out on success only; the memory belongs to the
 * window and goes with rcx_win_free. Errors: as rcx_win_allocate; -EXDEV
 * the members are not all on one node (every rank fails, logged with the
 * two nodes); -EINVAL disp_unit 0 or above 2^32-1, or a malformed
 * alloc_shared_noncontig; -ENOMEM the parts add up to more than can be
 * mapped; negative errno from shm_open, ftruncate or mmap (logged).
 */
RCX_API int rcx_win_allocate_shared(struct rcx_group *g, size_t size,
				    size_t disp_unit,
				    const struct rcx_info *info, void **base,
				    struct rcx_win **out);

/*
 * The part of rank (its size in bytes, its disp_unit and where it is
 * mapped in this process) of a window made by rcx_win_allocate_shared.
 * rank RCX_PROC_NULL: the lowest rank whose part is not empty (size 0
 * and base NULL when all are). Local. Errors: -EINVAL win not a live
 * window or not a shared one (logged), rank out of range (logged), size,
 * disp_unit or base NULL.
 */
RCX_API int rcx_win_shared_query(struct rcx_win *win, int rank, size_t *size,
				 size_t *disp_unit, void **base);

/*
 * Free a window; collective. Completes this process's outstanding
 * operations, waits until every rank has done so, then releases the
 * memory registration; *win = NULL. On an invalid window (a member
 * failed) it frees at once, without the others and without error.
 * Errors: -EINVAL win NULL or not a live window; RCX_ERR_EPOCH a lock,
 * lock_all, post or start epoch is open (nothing is freed); RCX_ERR_PROC_FAILED (the
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
 * The group of the window, as one more handle of the caller's own: free
 * it with rcx_group_free (as MPI_Win_get_group returns a new group). It
 * is the group the window was made on (the same object as the handle
 * given to rcx_win_create), live even if the caller had freed that
 * handle. Local. *group is written on success only.
 * Errors: -EINVAL win not a live window or group NULL (logged).
 */
RCX_API int rcx_win_get_group(struct rcx_win *win, struct rcx_group **group);

/*
 * The info keys in force on the window, in a new info the caller frees
 * with rcx_info_free (as MPI_Win_get_info): rcx_order_scope ("thread" or
 * "process"), accumulate_ordering ("rar,raw,war,waw" when accumulates
 * are ordered, whatever non-empty list was given, or "none") and
 * rcx_accumulate_nic ("true" or "false"); the defaults where creation
 * had none. Local. *info is written on success only.
 * Errors: -EINVAL win not a live window or info NULL (logged); -ENOMEM
 * no memory for the info.
 */
RCX_API int rcx_win_get_info(struct rcx_win *win, struct rcx_info **info);

/* Longest window name with its NUL (MPI_MAX_OBJECT_NAME). */
#define RCX_MAX_OBJECT_NAME 64

/*
 * Name a window, for the user's own messages and tools (MPI_Win_set_name):
 * name is copied; a longer name than RCX_MAX_OBJECT_NAME - 1 bytes is
 * cut to that many bytes (byte-wise, as MPI; a multi-byte character may
 * be cut). Local: each process names its own handle. A window's name is
 * "" until set. rcx_win_get_name copies the name and its NUL into name,
 * which must hold RCX_MAX_OBJECT_NAME bytes, and its length into *len.
 * Errors: -EINVAL win not a live window, name NULL, len NULL (logged).
 */
RCX_API int rcx_win_set_name(struct rcx_win *win, const char *name);
RCX_API int rcx_win_get_name(struct rcx_win *win, char *name, int *len);

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
 * target makes progress. Every type and op of enum rcx_datatype and
 * enum rcx_acc_op where the op applies to the type (see there); only
 * 64-bit SUM and NO_OP go to the NIC, the other types and ops by the
 * software path. Errors: as rcx_put; -EINVAL unknown dtype or op, an op
 * the type does not take (a bitwise op on a floating type, MAXLOC or
 * MINLOC on a type that is not a pair, SUM on a pair; logged naming
 * both).
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
 * A strided layout, as MPI_Type_vector(count, blocklen, stride, type):
 * count blocks of blocklen units, the start of each stride units after
 * the start of the one before (stride may be negative or smaller than
 * blocklen; blocks of a put's or accumulate's target should not overlap,
 * or which write lands last is not defined). The unit is a byte for
 * rcx_put_strided and rcx_get_strided, an element of dtype for
 * rcx_accumulate_strided. count or blocklen 0: nothing.
 */
struct rcx_strided {
	size_t count;	  /* blocks */
	size_t blocklen;  /* units in a block */
	ptrdiff_t stride; /* units from one block's start to the next's */
};

/*
 * Strided put, get and accumulate: the data of the origin layout o at
 * buf (its first block at buf) moves, in order, to (from) the target
 * layout t whose first block is at disp of target's window (disp in the
 * target's disp_unit, as rcx_put; the units of t are the call's units,
 * not disp_unit). The layouts may differ in shape but must hold the
 * same number of units. Nonblocking, like rcx_put, rcx_get and
 * rcx_accumulate, with their epochs, ordering (rcx_win_order) and
 * completion: buf's blocks are in use until the operation is complete at
 * the origin. A put or get to another process is RDMA WRITEs or READs,
 * one WR per contiguous piece, posted as linked lists of up to 32 WRs,
 * each list waiting for room in the window's send-queue budget as
 * rcx_put does (so any number of blocks goes); to this process, copies. An accumulate is one
 * rcx_accumulate per contiguous piece (each element atomic, as there).
 * Gaps between blocks are not touched, at the origin or the target.
 * RCX_PROC_NULL as target: nothing, 0.
 * Errors: as rcx_put (rcx_accumulate for the accumulate); -EINVAL o or t
 * NULL, the layouts hold different numbers of units, a layout whose
 * extent overflows, buf NULL with units to move, or a block of t outside
 * the target's window (logged, naming the layout and the window's
 * size). Nothing is sent on an error found before the first piece; a
 * failure of the target or of memory on the way
 * (RCX_ERR_PROC_FAILED, -ENOMEM) can leave pieces sent, as for a long
 * rcx_put.
 */
RCX_API int rcx_put_strided(struct rcx_win *win, const void *buf,
			    const struct rcx_strided *o, int target,
			    size_t disp, const struct rcx_strided *t);
RCX_API int rcx_get_strided(struct rcx_win *win, void *buf,
			    const struct rcx_strided *o, int target,
			    size_t disp, const struct rcx_strided *t);
RCX_API int rcx_accumulate_strided(struct rcx_win *win, const void *buf,
				   const struct rcx_strided *o, int dtype,
				   int target, size_t disp,
				   const struct rcx_strided *t, int op);

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
 * RCX_LOCK_EXCLUSIVE (control words at the target: a byte per origin
 * for shared holders, a word taken by NIC compare-and-swap for the
 * exclusive one; the target needs not take part). Blocks until the lock is held,
 * retrying while another process holds it in a conflicting mode. Opens
 * an access epoch to target, ended by rcx_win_unlock. Errors: -EINVAL win not live, bad type
 * or target; RCX_ERR_EPOCH target already locked by this process, a
 * lock_all epoch is open, a fence epoch with operations is open, or a
 * post/start epoch is open;
 * RCX_ERR_PROC_FAILED target is known to have failed (the window is then
 * invalid).
 */
RCX_API int rcx_win_lock(struct rcx_win *win, int type, int target);

/*
 * rcx_win_lock and rcx_win_lock_all with MPI's assert argument (the
 * plain calls are these with 0). asserts is 0 or RCX_MODE_NOCHECK: the
 * caller guarantees that no other process holds or asks for a
 * conflicting lock on the target during the epoch (MPI_MODE_NOCHECK), so
 * the lock word is neither taken nor released: the epoch opens without a
 * round trip, and unlock only completes the operations. A conflicting
 * lock taken anyway is erroneous and goes unnoticed.
 * Errors: as rcx_win_lock and rcx_win_lock_all; -EINVAL asserts other
 * than 0 and RCX_MODE_NOCHECK (logged, naming the value).
 */
RCX_API int rcx_win_lock_assert(struct rcx_win *win, int type, int target,
				int asserts);
RCX_API int rcx_win_lock_all_assert(struct rcx_win *win, int asserts);

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
 * or lock_all is held, a fence epoch with operations or a post/start
 * epoch is open;
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
 * is known to have failed; the first error of an operation, among them
 * RCX_ERR_TRANSPORT for an atomic (fetch_and_op, compare_and_swap, a NIC
 * accumulate) in flight when the transport gave up on the connection to
 * the target: it may or may not have run there, and is not run again.
 * Puts and gets across such a break, and operations issued while the
 * connection is made again, complete normally (docs/config.md).
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
 * assert bits; RCX_ERR_EPOCH a lock, lock_all or post/start epoch is
 * open; RCX_ERR_PROC_FAILED a member is known to have failed (the window is
 * then invalid); the first error of an operation.
 */
RCX_API int rcx_win_fence(struct rcx_win *win, int asserts);

/*
 * General active target synchronisation (MPI_Win_post, MPI_Win_start,
 * MPI_Win_complete, MPI_Win_wait, MPI_Win_test). A target opens an
 * exposure epoch for a group of origins with rcx_win_post and ends it
 * with rcx_win_wait (or rcx_win_test); an origin opens an access epoch
 * to a group of targets with rcx_win_start and ends it with
 * rcx_win_complete. The groups are given as n distinct ranks of the
 * window's group in ranks[] (for an MPI program: the ranks that
 * MPI_Group_translate_ranks gives for the window's group; n = 0 is an
 * empty epoch). A process may be in an access and an exposure epoch at
 * once, but in neither while a lock, lock_all or a fence epoch with
 * operations is open, and the reverse: those calls return RCX_ERR_EPOCH.
 * The notices between the sides are RDMA writes of counters into the
 * peers' control words, so no side's CPU has to answer the other. Such
 * a write raises no event where it lands: a start or wait that has spent
 * its spin budget (RCX_SPIN_US) without seeing the notice sleeps a
 * millisecond at a time, where waits for completions sleep until an
 * event.
 */

/*
 * Open an exposure epoch of the local window to the n origins in
 * ranks[], and tell each that it may access the window. Nonblocking: the
 * notice to each origin (an RDMA write of a counter into its control
 * words) is started and the call returns; with RCX_MODE_NOCHECK in
 * asserts nothing is sent, and every matching rcx_win_start must assert
 * RCX_MODE_NOCHECK too. asserts is 0 or an or of RCX_MODE_NOCHECK,
 * RCX_MODE_NOSTORE and RCX_MODE_NOPUT. The epoch ends with rcx_win_wait
 * or a successful rcx_win_test.
 * Errors: -EINVAL win not live, n out of 0..size, ranks NULL with n > 0,
 * a rank out of range or given twice, an assert bit post does not take
 * (logged); RCX_ERR_EPOCH an exposure epoch is open already, or a lock,
 * lock_all or fence epoch with operations; RCX_ERR_WIN_INVALID the
 * window was invalidated; RCX_ERR_PROC_FAILED a rank of ranks[] is
 * known to have failed; -ENOMEM no memory for the epoch's state.
 */
RCX_API int rcx_win_post(struct rcx_win *win, int n, const int *ranks,
			 int asserts);

/*
 * Open an access epoch to the n targets in ranks[]: RMA operations to
 * them are allowed until rcx_win_complete, and to any other rank they
 * return RCX_ERR_EPOCH (request-based ones too, as in MPI). Blocks until
 * each target has called the matching rcx_win_post, unless asserts has
 * RCX_MODE_NOCHECK: the program knows the posts were made, and the call
 * does not wait. asserts is 0 or RCX_MODE_NOCHECK. rcx_win_order
 * works inside the epoch.
 * Errors: -EINVAL win not live, n out of 0..size, ranks NULL with n > 0,
 * a rank out of range or given twice, an assert bit start does not take
 * (logged); RCX_ERR_EPOCH an access epoch is open already, or a lock,
 * lock_all or fence epoch with operations; RCX_ERR_WIN_INVALID the
 * window was invalidated; RCX_ERR_PROC_FAILED a target is known to have
 * failed, or failed while the call waited for its post (the window is
 * then invalid and no epoch opened); -ENOMEM no memory for the epoch's
 * state.
 */
RCX_API int rcx_win_start(struct rcx_win *win, int n, const int *ranks,
			  int asserts);

/*
 * End the access epoch of rcx_win_start. Every operation of the epoch
 * is made complete at its target, then each target is told that this
 * origin is done: an RDMA write of a counter ordered behind the
 * operations by the rules of rcx_win_order (nothing where RC order
 * holds, the fence indicator behind reads and atomics, a wait for
 * software accumulates), so it costs no extra round trip. Blocks until
 * the origin buffers of the operations are usable again.
 * Errors: -EINVAL win not live; RCX_ERR_EPOCH no access epoch is open;
 * RCX_ERR_WIN_INVALID the window was invalidated before the call;
 * RCX_ERR_PROC_FAILED a member failed during the call (the window is
 * then invalid and the epoch ended); the first error of an operation of
 * the epoch.
 */
RCX_API int rcx_win_complete(struct rcx_win *win);

/*
 * End the exposure epoch of rcx_win_post. Blocks until every origin of
 * the post has called rcx_win_complete, making progress meanwhile (the
 * software accumulates of the origins run here); their operations are
 * then complete in the local window and visible to this process's
 * loads. A failed origin never hangs it: the window becomes invalid and
 * the call returns.
 * Errors: -EINVAL win not live; RCX_ERR_EPOCH no exposure epoch is open;
 * RCX_ERR_WIN_INVALID the window was invalidated before the call;
 * RCX_ERR_PROC_FAILED a member failed while the call waited (the window
 * is then invalid and the epoch ended).
 */
RCX_API int rcx_win_wait(struct rcx_win *win);

/*
 * The nonblocking form of rcx_win_wait. It makes progress once, then
 * sets *flag to 1 and ends the exposure epoch as rcx_win_wait does when
 * every origin of the post has completed, or sets *flag to 0 and leaves
 * the epoch open. *flag is written only on success.
 * Errors: -EINVAL win not live or flag NULL (logged); RCX_ERR_EPOCH no
 * exposure epoch is open; RCX_ERR_WIN_INVALID the window was invalidated
 * before the call; RCX_ERR_PROC_FAILED a member failed (the window is
 * then invalid and the epoch ended).
 */
RCX_API int rcx_win_test(struct rcx_win *win, int *flag);

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
