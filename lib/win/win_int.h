/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_WIN_INT_H
#define RCX_WIN_INT_H

/*
 * Window internals shared by win.c (windows, operation slots, put/get),
 * win_acc.c (accumulates: NIC atomics and the software path), win_sync.c
 * (epochs, locks, flush, fence) and order.c (rcx_win_order).
 */
#include <pthread.h>
#include <rcx/win.h>
#include "lib/core/core.h"
#include "lib/core/dtype.h"
#include "lib/ft/ft.h"
#include "lib/win/win.h"

#define RCX__WIN_MAGIC 0x52435857u
#define RCX__WIN_OPS   256 /* operation slots per window */
/* registered bytes per slot: small puts and gets, atomic results */
#define RCX__WIN_BOUNCE 512
/* NIC atomics one slot carries (one 8-byte result each) */
#define RCX__WIN_NIC_MAX (RCX__WIN_BOUNCE / 8)

/* internal ops: lock word atomics, which the poster waits for, and the
 * NIC atomics that apply another rank's bulk accumulate (win_acc.c) */
enum { RCX__OP_WAITED = 1, RCX__OP_JOB = 2 };
/*
 * A 64-bit accumulate on the NIC path of more elements than this goes to
 * a peer as one message, whose elements the target applies with NIC
 * atomics through its own loopback endpoints (win_acc.c).
 */
#define RCX__WIN_BULK 8

/*
 * A wait that sees no completion for this long while a fenced WR is
 * outstanding posts a small READ behind it (win.c, kick()).
 */
#define RCX__WIN_KICK_US 50000
/*
 * Kicks outstanding per target at most. A kick completes only after the
 * fenced WR it is behind, so each holds a send-queue slot until the WR
 * moves: without a bound a WR stuck for good would collect one every
 * RCX__WIN_KICK_US until they fill the budget (RCX__WIN_SQ_DEPTH), and
 * then nothing could be posted to that target again. More than one,
 * because rxe can lose the wakeup again after a kick.
 *
 * The kicks must never wait for what they are to unblock: the
 * operations keep this much of the budget free for them (RCX__WIN_SQ_OPS),
 * and a kick takes no operation slot (a full pool of slots held by ops
 * queued behind the stuck WR would otherwise leave none for it).
 */
#define RCX__WIN_KICKS_MAX 4
/* the share of the send-queue budget operations may fill */
#define RCX__WIN_SQ_OPS (RCX__WIN_SQ_DEPTH - RCX__WIN_KICKS_MAX)

/*
 * Control words of a rank's window, registered for the peers: the
 * exclusive lock word (and padding), then per rank of the group the post
 * counter that rank wrote here, then per rank its complete counter
 * (win_pscw.c), then per rank one byte: that rank holds (or asks for) a
 * shared lock here (win_sync.c).
 */
#define RCX__WIN_CTRL_HDR 64
static inline size_t rcx__win_ctrl_shared(int size)
{
	return RCX__WIN_CTRL_HDR + (size_t)size * 16;
}

static inline size_t rcx__win_ctrl_len(int size)
{
	return rcx__win_ctrl_shared(size) + (((size_t)size + 7) & ~(size_t)7);
}

struct rcx_win;

/* The kicks to one target: their completions come back here. */
struct rcx__win_kick {
	struct rcx__wrctx wrc; /* first: completion dispatch */
	struct rcx_win *win;
	uint32_t *sq; /* budget they count against */
	int target;
	uint32_t out; /* posted, not complete */
};

/* What an operation does to target memory. */
enum {
	RCX__ACC_RD = 1 << 0,  /* reads it */
	RCX__ACC_WR = 1 << 1,  /* writes it */
	RCX__ACC_ACC = 1 << 2, /* an accumulate: same-location ordering */
};

/* How an operation reaches the target. */
enum rcx__via {
	RCX__VIA_WRITE = 1, /* RDMA WRITE */
	RCX__VIA_READ,	    /* RDMA READ */
	RCX__VIA_ATOMIC,    /* NIC fetch-add / compare-swap */
	RCX__VIA_SW,	    /* active message, run by the target's CPU */
	RCX__VIA_CPU,	    /* the target is this process: done in place */
};

struct rcx_win;
struct rcx__win_strm;
struct rcx__win_job;

/* One operation in flight: a slot of the window's pool. */
struct rcx__win_op {
	struct rcx__wrctx wrc; /* first: completion dispatch */
	struct rcx_win *win;
	/* order list of (stream, target) while listed; else free list */
	struct rcx__win_op *next, *prev;
	struct rcx__win_strm *strm;
	struct rcx_req *req;	  /* request-based operation, or NULL */
	struct rcx__reg *reg;	  /* user buffer registered for this op */
	struct rcx__win_job *job; /* RCX__OP_JOB: what it applies */
	uint32_t *sq;		  /* send-queue budget the WRs count against */
	uint8_t *bounce;	  /* RCX__WIN_BOUNCE registered bytes */
	void *result;		  /* fetched data goes here, rsize bytes */
	size_t rsize;
	uint64_t seq;	   /* order: position in its stream */
	uint64_t off, len; /* target byte range */
	uint32_t gen;	   /* slot generation: stale replies dropped */
	int target;
	int error;
	uint32_t nwr; /* completions still expected */
	uint8_t cls;  /* RCX__ACC_* */
	uint8_t via;  /* enum rcx__via */
	uint8_t listed;
	uint8_t fenced;	  /* its first WR carries RCX_WR_FENCE */
	uint8_t internal; /* 0, or RCX__OP_WAITED or RCX__OP_JOB */
	uint8_t local;	  /* holds origin buffers until complete */
	uint8_t busy;
	/* across a reconnection (win_replay.c): its WRs may be posted
	 * again (RDMA WRITE and READ only); one failed with the break */
	uint8_t redo;
	uint8_t broken;
	int nsaved;		   /* WRs kept in saved, 0: none */
	struct rcx_wr *saved;	   /* &wr1, or allocated for a list */
	uint64_t pno;		   /* post order within the window */
	struct rcx__win_op *rnext; /* a target's queue (win_replay.c) */
	/* last: a slot is cleared up to here only (rcx__win_op_get) */
	struct rcx_wr wr1; /* a single WR's copy */
};

/* Order state of one stream towards one target. */
struct rcx__win_st {
	/* outstanding READ, ATOMIC and software ops, in issue order */
	struct rcx__win_op *head, *tail;
	/* rcx_win_order: ops with seq below a bound come first (0: none) */
	uint64_t rd_bound, wr_bound, data_bound;
	/* ops with seq below this are held back by a fenced WR already */
	uint64_t fence_seq;
};

/*
 * A stream: the operations rcx_win_order relates. One per thread by
 * default; one for the whole process with rcx_order_scope=process.
 */
struct rcx__win_strm {
	struct rcx__win_strm *next;
	pthread_t tid;
	uint64_t seq;	       /* next sequence number, from 1 */
	struct rcx__win_st *t; /* [group size] */
};

/* What this process knows of each rank's part of the window. */
struct rcx__win_peer {
	uint64_t base;
	uint64_t size;
	uint64_t ctrl; /* address of the lock word */
	uint32_t rkey;
	uint32_t ctrl_rkey;
	uint32_t disp_unit;
	uint32_t id; /* window id there, for active messages */
};

/* Origin-side state per target. */
/*
 * Byte ranges [lo, hi) of a target's window that this process's writing
 * operations (put, accumulates other than NO_OP, atomics) reached since
 * a flush last completed them there: what a failure would leave
 * undefined (rcx_win_get_undefined). At most RCX__WIN_SPANS per target;
 * beyond that the nearest spans merge, so a span may cover more.
 */
#define RCX__WIN_SPANS 4
struct rcx__win_span {
	uint64_t lo, hi;
};

/* What an origin tells a target in validate: its spans there. */
struct rcx__win_span_wire {
	uint32_t n;
	uint32_t pad;
	struct rcx__win_span s[RCX__WIN_SPANS];
};

struct rcx__win_tgt {
	uint32_t inflight; /* ops not complete at the target */
	uint32_t local;	   /* ops still holding origin buffers */
	uint32_t fenced;   /* ops posted with a fence, not complete */
	uint32_t done;	   /* ops completed, and as last seen by kicks */
	uint32_t done_seen;
	int error;	 /* first op error since the last flush */
	uint8_t lock;	 /* RCX_LOCK_* taken by rcx_win_lock, or 0 */
	uint8_t nocheck; /* ... with RCX_MODE_NOCHECK: no lock word taken */
	uint8_t nspan;
	/* its endpoint's provider runs no put or get at once (win_rma.c) */
	uint8_t no_now;
	/* win_direct.c: mapped (dptr), not mappable, or not tried yet */
	uint8_t dstate;
	/* where its window memory is mapped here, dlen bytes: puts and
	 * gets are copies (win_direct.c); NULL: they go to the provider */
	uint8_t *dptr;
	uint64_t dlen;
	uint32_t dkey; /* the key it was mapped under (peer.rkey then) */
	struct rcx__win_kick kick; /* win.c, kick() */
	struct rcx__win_span span[RCX__WIN_SPANS];
	/* ops waiting for the connection to be remade, in post order
	 * (win_replay.c); they count in inflight */
	struct rcx__win_op *rq, *rq_tail;
};

/* Counters the tests read (rcx__win_stats). */
struct rcx__win_stats {
	uint64_t orders;  /* rcx_win_order calls */
	uint64_t fences;  /* WRs posted with RCX_WR_FENCE for order */
	uint64_t waits;	  /* ops that waited for earlier ones instead */
	uint64_t flushes; /* of those, waits for the target's other path */
	uint64_t nic;	  /* NIC atomics posted for accumulates */
	uint64_t sw;	  /* software accumulates sent */
	uint64_t bulk;	  /* of those, for NIC atomics at the target */
	uint64_t kicks;	  /* stalled fenced WRs re-driven (win.c) */
	uint64_t replays; /* ops posted from the queue of a reconnection */
	uint64_t now;	  /* puts and gets the provider ran at once */
	uint64_t direct;  /* of those, copied through a mapping of ours */
};

/* An endpoint the window owns: the loopback pair for NIC atomics on its
 * own memory (win.c), or one to a peer whose group connection bypasses
 * the NIC (win_nep.c). Its ep_ctx; connection events arrive in on_cm. */
struct rcx__win_lep {
	struct rcx__epobj obj; /* first */
	struct rcx_ep *ep;
	int state; /* enum rcx__conn_state */
	int error;
	uint32_t wr; /* window WRs in flight */
	/* a NIC endpoint to a peer, remade after a transport failure
	 * (win_nep.c): its peer, where the peer listens, the new
	 * endpoint (established, or its attempt failed), when to try
	 * again, when it broke (the remake's bound runs from then) */
	int peer;
	char *addr;
	struct rcx_ep *next_ep;
	uint8_t next_up, next_failed;
	long long next_us, broke_us;
};

struct rcx_win {
	uint32_t magic;
	uint32_t id;
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	int rank;
	int size;
	uint8_t *base;
	size_t len;
	size_t disp_unit;
	bool allocated;
	bool scope_process;
	bool acc_order;
	bool nic_acc;
	struct rcx__reg *reg;
	uint64_t *ctrl; /* lock word (and padding), 64 bytes */
	struct rcx__reg *ctrl_reg;
	struct rcx__win_peer *peer; /* [size] */
	struct rcx__win_tgt *tgt;   /* [size] */
	/* epochs */
	bool fence_open;
	bool lock_all;
	bool lock_all_nocheck; /* RCX_MODE_NOCHECK: no lock word taken */
	int nlocked;
	struct rcx__win_pscw *pscw; /* post/start epochs, or NULL */
	uint32_t fence_ops; /* ops since the fence that opened the epoch */
	/* operation slots */
	struct rcx__win_op *ops, *op_free;
	uint8_t *bounce;
	struct rcx__reg *bounce_reg;
	/* message staging: requests, then replies; RCX_EAGER_SIZE each */
	uint8_t *scratch;
	/* rcx_win_order streams */
	struct rcx__win_strm *strms, *last;
	/* loopback endpoints [0] initiator, [1] responder, or NULL */
	struct rcx__win_lep *loop;
	/* software messages from other ranks held back behind a bulk
	 * accumulate (win_acc.c), in arrival order */
	struct rcx__win_job *jobs, *jobs_tail;
	/* [size]: NIC endpoints to peers reached without the NIC (an ep
	 * where one is made), or NULL when the context has one path */
	struct rcx__win_lep *nep;
	bool loop_opening;
	struct rcx__win_stats stats;
	/* win_replay.c: ops posted (their pno), ops queued in the targets' rq */
	uint64_t pno;
	uint32_t nqueued;
	/* fault tolerance (win_ft.c) */
	bool invalid;		 /* a member failed: see rcx_win_validate */
	long long invalid_at_us; /* when this process found out */
	uint8_t *excl;		 /* [size]: ranks left out by validate */
	/* the last validate's undefined ranges (rcx_win_get_undefined) */
	struct rcx_win_range *undef;
	int nundef;
	uint8_t *lost; /* [size]: failed since the last rebuild */
	/* a dynamic window's regions and peers' tables (win_dyn.c) */
	struct rcx__win_dyn *dyn;
	/* a shared window's segment and every rank's part (win_shared.c) */
	struct rcx__win_shr *shr;
	/* targets whose memory is mapped here (win_direct.c) */
	int ndirect;
	struct rcx_win *next;		/* all windows of the process */
	char name[RCX_MAX_OBJECT_NAME]; /* rcx_win_set_name, "" at first */
};

/*
 * A shared window (rcx_win_allocate_shared): one segment every member
 * maps; part[t] is where rank t's memory is in this process. Operations
 * on it are plain copies and CPU atomics (win_shared.c).
 */
struct rcx__win_shr {
	uint8_t *seg;
	size_t seg_len;
	uint8_t **part; /* [size] */
};

static inline bool rcx__win_live(const struct rcx_win *w)
{
	return w && w->magic == RCX__WIN_MAGIC;
}

/* ---- win_direct.c: put and get through a mapping of the target */
enum { RCX__DIRECT_UNTRIED, RCX__DIRECT_MAPPED, RCX__DIRECT_NO };
/*
 * Map target's window memory here where the provider can (shm: a window
 * of rcx_win_allocate) under the key the window has for it now:
 * tgt[target].dptr, or dstate RCX__DIRECT_NO for good. Left untried
 * while its connection is not up. A mapping made under another key goes
 * first. Lock held.
 */
void rcx__win_direct_open(struct rcx_win *w, int target);
/*
 * Unmap every target's memory (win_destroy; the window became invalid,
 * and validate renews the keys: the next put maps again).
 */
void rcx__win_direct_close(struct rcx_win *w);

/* ---- win_dyn.c: dynamic windows (displacement = target address) */
/*
 * Check target and [addr, addr + len) against the regions target has
 * attached (its table, read and cached here); *off = addr. Lock held.
 * Errors: -EINVAL target out of range; RCX_ERR_REMOTE_ACCESS no region
 * attached there covers the range; errors of the table's READ.
 */
int rcx__win_dyn_range(struct rcx_win *w, int target, size_t addr, size_t len,
		       uint64_t *off);
/* The key of target's region holding addr as last looked up (0: none). */
uint32_t rcx__win_dyn_rkey(const struct rcx_win *w, int target, uint64_t addr);
/* Is [addr, addr + len) inside a region this process attached? */
bool rcx__win_dyn_local(const struct rcx_win *w, uint64_t addr, uint64_t len);
/* Tables read so far, for the tests (0: not a dynamic window). */
uint64_t rcx__win_dyn_reads(struct rcx_win *w);
/* A synchronisation call: cached tables are checked before next use. */
void rcx__win_dyn_sync(struct rcx_win *w);
/* Release what the window's dynamic part holds (win_destroy). */
void rcx__win_dyn_free(struct rcx_win *w);

/* ---- win_shared.c */
void rcx__win_shared_free(struct rcx_win *w);
/*
 * count elements at t op= o as CPU atomics (other processes map t too);
 * old values to old. Errors: -EINVAL t not aligned to the element size.
 */
int rcx__win_shared_apply(int op, int dtype, uint8_t *t, const uint8_t *o,
			  const uint8_t *cmp, uint8_t *old, size_t count);

/*
 * Where byte off of target's window memory is in this process: the part
 * of a shared window, this process's own memory, or for a dynamic
 * window (base NULL) the address off itself.
 */
static inline uint8_t *rcx__win_tptr(const struct rcx_win *w, int target,
				     uint64_t off)
{
	uintptr_t b =
		w->shr ? (uintptr_t)w->shr->part[target] : (uintptr_t)w->base;

	return (uint8_t *)(b + (uintptr_t)off);
}

/* The remote key of target's window memory at off. */
static inline uint32_t rcx__win_rkey(const struct rcx_win *w, int target,
				     uint64_t off)
{
	return w->dyn ? rcx__win_dyn_rkey(w, target, off)
		      : w->peer[target].rkey;
}

/* Is [off, off + len) this process's window memory? (the target side) */
static inline bool rcx__win_local(const struct rcx_win *w, uint64_t off,
				  uint64_t len)
{
	if (w->dyn)
		return rcx__win_dyn_local(w, off, len);
	return off <= w->len && len <= w->len - off;
}

/* ---- win.c */
/* The window's conn to target, or NULL for this process. */
static inline struct rcx__conn *rcx__win_conn(struct rcx_win *w, int t)
{
	return w->g->conns[t];
}
/* Validate target and byte range [off, off + len) of disp; *off out. */
int rcx__win_range(struct rcx_win *w, int target, size_t disp, size_t len,
		   uint64_t *off);
/*
 * Collective creation (win_create): err is a local error found by the
 * caller, the rank takes part all the same; allocated: rcx frees base.
 */
int rcx__win_create(struct rcx_group *g, void *base, size_t size,
		    size_t disp_unit, const struct rcx_info *info,
		    bool allocated, int err, struct rcx_win **out);
/* -EFAULT (logged, naming call) unless [base, base + size) is mapped. */
int rcx__win_mem_check(const char *call, const void *base, size_t size);
/* The longest RDMA READ or WRITE of one WR (win.c, rma_wr_max). */
uint32_t rcx__win_rma_wr_max(const struct rcx_ctx *ctx);
/*
 * rcx_put/rcx_get's checks but for buf: target, the range [disp, len),
 * the epoch (passive only when req), the target alive; *off out.
 */
int rcx__win_rma_check(struct rcx_win *w, const void *buf, size_t len,
		       int target, size_t disp, bool req, uint64_t *off);
/*
 * The local key of n bytes at buf for op's WRs (lock held): the window's
 * registration when buf lies in the window, else one op holds until it
 * completes. op then holds origin memory (op->local).
 */
int rcx__win_lkey(struct rcx_win *w, struct rcx__win_op *op, const void *buf,
		  size_t n, bool put, uint32_t *lkey);
/* A free slot; progresses until one is free. */
int rcx__win_op_get(struct rcx_win *w, int target, struct rcx__win_op **out);
void rcx__win_op_put(struct rcx_win *w, struct rcx__win_op *op);
/*
 * Post n WRs of op (lock held): order, send-queue budget, then one post
 * list. The WRs' wr_id and SIGNALED flag are set here. On an error
 * nothing was posted and op is still the caller's.
 */
int rcx__win_post(struct rcx_win *w, struct rcx__win_op *op, struct rcx_wr *wr,
		  int n);
/* Account an op as issued (epoch, counters, request). */
void rcx__win_issued(struct rcx_win *w, struct rcx__win_op *op);
/* An op is complete (WRs done or reply arrived): results, release. */
void rcx__win_op_done(struct rcx_win *w, struct rcx__win_op *op, int err);
/*
 * Progress (lock held) until done(w, arg); 0 or RCX_ERR_PROC_FAILED.
 * Past the spin budget it sleeps on the context's events, sleep_ms at
 * most at a time: waits for completions may sleep long (50 ms), a wait
 * for a word that a peer writes into memory (which raises no event
 * here) sleeps little.
 */
int rcx__win_wait_ms(struct rcx_win *w, bool (*done)(struct rcx_win *, void *),
		     void *arg, int sleep_ms);
static inline int rcx__win_wait(struct rcx_win *w,
				bool (*done)(struct rcx_win *, void *),
				void *arg)
{
	return rcx__win_wait_ms(w, done, arg, 50);
}
/* The endpoint for NIC operations on target (loopback for self). */
int rcx__win_ep(struct rcx_win *w, int target, struct rcx_ep **ep,
		uint32_t **sq);
/* Request-based ops: a request that completes when its ops have. */
struct rcx_req *rcx__win_req_new(struct rcx_win *w);
void rcx__win_req_hold(struct rcx_req *r);
void rcx__win_req_drop(struct rcx_req *r, int err);
/*
 * An operation to RCX_PROC_NULL: nothing to do; with req, *req is a
 * request already complete (status.source RCX_PROC_NULL). Lock held.
 */
int rcx__win_null(struct rcx_win *w, struct rcx_req **req);
/* End of an issuing call: *out = r, or discard r / let it run out. */
int rcx__win_req_finish(struct rcx_req *r, int ret, struct rcx_req **out);
/* A new id for w (validate). */
void rcx__win_renumber(struct rcx_win *w);
/* Windows by id (active messages). */
struct rcx_win *rcx__win_find(struct rcx_ctx *ctx, uint32_t id);
/* Counters for the tests. Errors: -EINVAL. */
int rcx__win_stats(struct rcx_win *w, struct rcx__win_stats *out);

/* ---- win_sync.c */
/* Complete every op to target (-1: all), remotely or locally only. */
int rcx__win_flush_locked(struct rcx_win *w, int target, bool local);
/*
 * Post one WR to target outside the RMA operations (never ordered) and
 * wait for it, lock held. wr->addr 0: into the slot's bounce memory,
 * whose first n bytes then go to out.
 */
int rcx__win_waited(struct rcx_win *w, int target, struct rcx_wr *wr, void *out,
		    size_t n);

/* ---- win_pscw.c */
/*
 * Post/start/complete/wait state: which ranks are in the open epochs and
 * the counters of posts and completes exchanged with each rank.
 */
struct rcx__win_pscw {
	bool access, expose; /* a start, a post epoch is open */
	uint8_t *in_access;  /* [size]: in the start group */
	uint8_t *in_expose;  /* [size]: in the post group */
	uint64_t *posted;    /* [size]: posts made to that origin */
	uint64_t *started;   /* [size]: access epochs opened to that target */
};
static inline bool rcx__win_pscw_open(const struct rcx_win *w)
{
	return w->pscw && (w->pscw->access || w->pscw->expose);
}
/* Is a start epoch to target (< 0: to any rank) open? */
static inline bool rcx__win_pscw_access(const struct rcx_win *w, int target)
{
	return w->pscw && w->pscw->access &&
	       (target < 0 || w->pscw->in_access[target]);
}
/* A member failed or validate rebuilt the window: epochs end, the
 * counters start again from 0 (as the control words do). */
void rcx__win_pscw_reset(struct rcx_win *w);

/* RCX_ERR_EPOCH unless an access epoch to target is open. */
static inline int rcx__win_epoch_access(const struct rcx_win *w, int target)
{
	if (w->invalid)
		return RCX_ERR_WIN_INVALID;
	if (w->fence_open || w->lock_all || w->tgt[target].lock ||
	    rcx__win_pscw_access(w, target))
		return 0;
	return RCX_ERR_EPOCH;
}

/* RCX_ERR_EPOCH unless a passive-target epoch to target is open. */
static inline int rcx__win_epoch_passive(const struct rcx_win *w, int target)
{
	if (w->invalid)
		return RCX_ERR_WIN_INVALID;
	if (w->lock_all || (target >= 0 && w->tgt[target].lock) ||
	    (target < 0 && w->nlocked))
		return 0;
	return RCX_ERR_EPOCH;
}

/* A fence epoch without operations may give way to another epoch. */
static inline bool rcx__win_fence_busy(const struct rcx_win *w)
{
	return w->fence_open && w->fence_ops;
}

/* ---- win_acc.c */
void rcx__win_am(struct rcx__conn *c, const struct rcx__hdr *h,
		 const uint8_t *payload);
/*
 * Strided accumulates (win_strided.c): rcx_accumulate's checks for an
 * accumulate of dtype and op whose first element is at disp (*off: its
 * byte offset); then each contiguous piece of count elements at byte
 * offset off, issued as rcx_accumulate issues one. Lock held.
 */
int rcx__win_acc_check(struct rcx_win *w, const char *fn, const void *buf,
		       int dtype, int op, int target, size_t disp,
		       uint64_t *off);
int rcx__win_acc_piece(struct rcx_win *w, const void *buf, size_t count,
		       int dtype, int op, int target, uint64_t off);
/* Complete software ops to failed peers with error. */
void rcx__win_fail_sw(struct rcx_win *w);
/* Go on with the held-back messages (room on the loopback queue). */
void rcx__win_jobs_pump(struct rcx_win *w);
/* Drop what is held back (window destroyed). */
void rcx__win_jobs_free(struct rcx_win *w);
/* target[i] op= o[i] for n elements, in place (no other writer). */
void rcx__win_apply(int op, int dtype, uint8_t *t, const uint8_t *o,
		    const uint8_t *cmp, uint8_t *old, size_t n);

/* ---- win_replay.c: RMA across a reconnection of the connection */
/*
 * Keep a copy of op's n WRs, flags final, when they may be posted again
 * (all RDMA WRITE or READ: op->redo) or always (the op is queued).
 * Errors: -ENOMEM (nothing kept).
 */
int rcx__win_replay_save_list(struct rcx__win_op *op, const struct rcx_wr *wr,
			      int n, bool always);
static inline int rcx__win_replay_save(struct rcx__win_op *op,
				       const struct rcx_wr *wr, int n,
				       bool always)
{
	/* the common case, one put or get: a copy in the slot */
	if (n == 1 && (wr->op == RCX_OP_WRITE || wr->op == RCX_OP_READ)) {
		op->wr1 = *wr;
		op->saved = &op->wr1;
		op->nsaved = 1;
		op->redo = 1;
		return 0;
	}
	return rcx__win_replay_save_list(op, wr, n, always);
}
/* Free what rcx__win_replay_save kept (the slot goes back). */
void rcx__win_replay_forget(struct rcx__win_op *op);
/* Queue op (WRs kept) until its connection is up again, in post order. */
void rcx__win_replay_add(struct rcx_win *w, struct rcx__win_op *op);
/* Ops to target wait for the connection: later ones go behind them. */
static inline bool rcx__win_replay_waiting(const struct rcx_win *w, int target)
{
	return w->tgt[target].rq != NULL;
}
/*
 * Post the queued ops of targets whose connection is up again (as the
 * send-queue budget allows), or end them with the error of a connection
 * that failed. Lock held. How many moved.
 */
int rcx__win_replay_pump(struct rcx_win *w);
/* End every queued op with err (the window became invalid). */
void rcx__win_replay_fail(struct rcx_win *w, int err);

/* ---- win_ft.c */
void rcx__win_span_merge(struct rcx__win_tgt *t, uint64_t lo, uint64_t hi);
/*
 * An origin's span message (len bytes from the wire) for a window of
 * win_len bytes: at most RCX__WIN_SPANS ranges, each clipped to the
 * window, written to out; how many (0 for a message of the wrong size).
 */
int rcx__win_spans_read(const void *msg, size_t len, uint64_t win_len,
			int origin, struct rcx_win_range *out);

/* A writing operation reaches [off, off + len) of target's window. */
static inline void rcx__win_span_add(struct rcx_win *w, int target,
				     uint64_t off, uint64_t len)
{
	struct rcx__win_tgt *t = &w->tgt[target];
	struct rcx__win_span *s;

	if (!len)
		return;
	if (!t->nspan) { /* the first since a flush */
		t->span[0].lo = off;
		t->span[0].hi = off + len;
		t->nspan = 1;
		return;
	}
	/* the common case: next to the last one */
	s = &t->span[t->nspan - 1];
	if (off <= s->hi && off + len >= s->lo) {
		if (off < s->lo)
			s->lo = off;
		if (off + len > s->hi)
			s->hi = off + len;
		return;
	}
	rcx__win_span_merge(t, off, off + len);
}

/* A member of the window failed: end epochs, fail what is outstanding. */
void rcx__win_invalidate(struct rcx_win *w, int err);
/* Was target left out of the window when it was last validated? */
static inline bool rcx__win_excluded(const struct rcx_win *w, int target)
{
	return w->excl && w->excl[target];
}
/* Barrier among the window's members (those validate kept). Lock held. */
int rcx__win_barrier(struct rcx_win *w);
/* Wait until no slot is in use (every completion reaped). Lock held. */
void rcx__win_quiesce(struct rcx_win *w);

/* ---- order.c */
int rcx__order_init(struct rcx_win *w);
void rcx__order_fini(struct rcx_win *w);
/* Stream of the calling thread (made on first use); NULL: -ENOMEM. */
struct rcx__win_strm *rcx__order_strm(struct rcx_win *w);
/*
 * Before an op of class cls going via via to target [off, off + len):
 * waits where a fence cannot order it, then *fence = the first WR must
 * carry RCX_WR_FENCE. Lock held. 0 or RCX_ERR_PROC_FAILED.
 */
int rcx__order_prepare(struct rcx_win *w, struct rcx__win_strm *s, int target,
		       unsigned int cls, unsigned int via, uint64_t off,
		       uint64_t len, bool *fence);
/* The op went out (fenced or not): list it if later ops may wait for it. */
void rcx__order_posted(struct rcx_win *w, struct rcx__win_op *op, bool fenced);
/* A listed op completed. */
void rcx__order_done(struct rcx_win *w, struct rcx__win_op *op);

/* ---- what the core drives (win.c: rcx__win_feat) */
/*
 * Windows whose fenced WRs saw no completion for a while get them
 * re-driven (win.c); from progress and from waits that found nothing.
 */
void rcx__win_idle(struct rcx_ctx *ctx);
/* longest sleep of a wait while fenced window WRs are outstanding */
#define RCX__KICK_SLEEP_MS 50
/* a member of g failed: its windows become invalid */
void rcx__win_group_failed(struct rcx_group *g, int error);

#endif
