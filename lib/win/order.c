/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rcx_win_order (the MPI_WIN_ORDER proposal, seeds/002) and the
 * same-location order of accumulates, on RC queue pairs.
 *
 * The facts it relies on (InfiniBand Architecture Specification vol. 1):
 *  - 9.5 (transaction ordering): the responder executes the requests of
 *    one RC QP in the order they were sent. A later RDMA WRITE, SEND or
 *    ATOMIC may however be executed at the responder before an earlier
 *    RDMA READ has produced all of its response data, and a READ whose
 *    response is lost is executed again when the requester retries it,
 *    after the requests that followed it; an ATOMIC is likewise not
 *    ordered before the requests that follow it. A retried READ is sent
 *    again together with every request after it (go-back-N), so a later
 *    READ is still executed after it.
 *  - 10.8.3.3 (fence indicator, IBV_SEND_FENCE): a WR with the fence set
 *    is not begun until every prior RDMA READ and ATOMIC WR on the same
 *    send queue has completed. It does not wait for SENDs or WRITEs.
 *  - Nothing orders two QPs, nor a QP and the target's CPU.
 *
 * Hence, per target, for an earlier operation E and a later one L that
 * must follow it:
 *  - E is an RDMA WRITE: nothing to do (9.5), whatever L is. WRITEs are
 *    therefore not tracked (but see two paths below).
 *  - E is an RDMA READ and L only reads: nothing (9.5, go-back-N).
 *  - E is an RDMA READ and L writes, or E is an ATOMIC: L's first WR
 *    carries RCX_WR_FENCE (10.8.3.3), unless a fenced WR already went out
 *    after E on that QP (the fence held everything behind it too).
 *  - E runs in software at the target (an active message): a later
 *    active message is executed after it (messages of one QP arrive and
 *    are handled in order), anything else must wait for E's reply.
 *  - L cannot carry a fence (an active message the core posts, or an
 *    access in place to this process's own memory while E is on the
 *    loopback QP): L waits until E completes.
 *  - the target is reached through two paths (auto with a device, a peer
 *    on this node: RDMA and NIC atomics through the window's own NIC
 *    endpoint, software accumulates as messages through shared memory):
 *    no rule holds across them. There WRITEs are tracked too, and a later
 *    operation on the other path than an earlier one it must follow waits
 *    until that one is complete (a flush of that path to the target,
 *    done only when such an operation comes). Operations on one path keep
 *    the rules above.
 * RCX_ORDER_DATA applies the rules only when E and L overlap and at least
 * one writes. Same-location accumulate order (accumulate_ordering) is the
 * DATA rule between accumulates, applied without an rcx_win_order call.
 * A device that executes an endpoint's WRs in order (shm,
 * dev_info.ordered) needs no RCX_WR_FENCE: there rcx_win_order maps to
 * C11 fences (cpu_order).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "lib/win/win_int.h"

/* NEED_PATH: a wait because the earlier operation took the other path */
enum { NEED_NONE, NEED_FENCE, NEED_WAIT, NEED_PATH };

/*
 * Does target have two paths: RDMA through the window's NIC endpoint,
 * software accumulates through the group's connection, which bypasses
 * the NIC (win.c, nep_open)?
 */
static bool two_paths(const struct rcx_win *w, int target)
{
	return w->nep && w->nep[target].ep;
}

static struct rcx__win_strm *strm_new(struct rcx_win *w)
{
	struct rcx__win_strm *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->t = calloc(w->size, sizeof(*s->t));
	if (!s->t) {
		free(s);
		return NULL;
	}
	s->tid = pthread_self();
	s->seq = 1;
	s->next = w->strms;
	w->strms = s;
	return s;
}

int rcx__order_init(struct rcx_win *w)
{
	/* process scope: one stream, made now; thread scope: on first use */
	if (w->scope_process && !strm_new(w))
		return -ENOMEM;
	w->last = w->strms;
	return 0;
}

void rcx__order_fini(struct rcx_win *w)
{
	struct rcx__win_strm *s;

	while ((s = w->strms)) {
		w->strms = s->next;
		free(s->t);
		free(s);
	}
	w->last = NULL;
}

struct rcx__win_strm *rcx__order_strm(struct rcx_win *w)
{
	pthread_t self = pthread_self();
	struct rcx__win_strm *s;

	if (w->scope_process)
		return w->strms;
	if (w->last && pthread_equal(w->last->tid, self))
		return w->last;
	for (s = w->strms; s; s = s->next)
		if (pthread_equal(s->tid, self))
			break;
	if (!s)
		s = strm_new(w);
	if (s)
		w->last = s;
	return s;
}

static bool overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return alen && blen && a < b + blen && b < a + alen;
}

struct later {
	unsigned int cls, via;
	uint64_t off, len;
	bool split;    /* the target has two paths */
	bool no_fence; /* wait where a fence would do (see prepare) */
};

/* What L needs because of one earlier outstanding E (rules above). */
static int need_one(const struct rcx_win *w, const struct rcx__win_st *st,
		    const struct rcx__win_op *e, const struct later *l)
{
	bool ov = overlap(e->off, e->len, l->off, l->len);
	bool need;

	need = (st->wr_bound > e->seq && (l->cls & RCX__ACC_WR)) ||
	       (st->rd_bound > e->seq && (l->cls & RCX__ACC_RD)) ||
	       (st->data_bound > e->seq && ov &&
		((e->cls | l->cls) & RCX__ACC_WR)) ||
	       (w->acc_order && ov && (e->cls & l->cls & RCX__ACC_ACC));
	if (!need)
		return NEED_NONE;
	if (e->via == RCX__VIA_SW)
		return l->via == RCX__VIA_SW ? NEED_NONE : NEED_WAIT;
	/* E went through the NIC, L goes through the other path */
	if (l->split && l->via == RCX__VIA_SW)
		return NEED_PATH;
	/* listed only where there are two paths; one QP keeps its order */
	if (e->via == RCX__VIA_WRITE)
		return NEED_NONE;
	/* E is a READ or an ATOMIC */
	if (e->via == RCX__VIA_READ && !(l->cls & RCX__ACC_WR))
		return NEED_NONE;
	if (l->via == RCX__VIA_CPU)
		return NEED_WAIT;
	if (e->seq < st->fence_seq)
		return NEED_NONE;
	return l->via == RCX__VIA_SW || l->no_fence ? NEED_WAIT : NEED_FENCE;
}

static int need_all(const struct rcx_win *w, const struct rcx__win_st *st,
		    const struct later *l)
{
	const struct rcx__win_op *e;
	int need = NEED_NONE, n;

	for (e = st->head; e && need < NEED_WAIT; e = e->next) {
		n = need_one(w, st, e, l);
		if (n > need)
			need = n;
	}
	return need;
}

struct wait_arg {
	struct rcx__win_st *st;
	const struct later *l;
};

static bool no_wait(struct rcx_win *w, void *arg)
{
	struct wait_arg *a = arg;

	return need_all(w, a->st, a->l) < NEED_WAIT;
}

int rcx__order_prepare(struct rcx_win *w, struct rcx__win_strm *s, int target,
		       unsigned int cls, unsigned int via, uint64_t off,
		       uint64_t len, bool *fence)
{
	struct rcx__win_st *st = &s->t[target];
	/*
	 * The window's own memory, through the loopback pair: wait rather
	 * than fence; so everywhere on a device whose fenced WRs may stall
	 * (ctx.c, RCX_ORDER_FENCE). There is no round trip for a fence to save, and rxe
	 * (Linux 6.1) has been seen to hold a fenced WR of a loopback pair
	 * for good, re-driven or not (win.c, kick()).
	 */
	struct later l = { cls,
			   via,
			   off,
			   len,
			   two_paths(w, target),
			   (target == w->rank && !w->ctx->info.ordered) ||
				   w->ctx->fence_wait };
	struct wait_arg a = { st, &l };
	int need;

	*fence = false;
	if (!st->head) /* the fast path: nothing outstanding to wait for */
		return 0;
	/* no order call since and no accumulate rule: no walk of the list
	 * (need_one finds nothing); it is long where WRITEs are listed */
	if (!st->rd_bound && !st->wr_bound && !st->data_bound &&
	    !(w->acc_order && (cls & RCX__ACC_ACC)))
		return 0;
	need = need_all(w, st, &l);
	RCX__LOG(RCX__LOG_DEBUG, "order", "window %u target %d: %s", w->id,
		 target,
		 need == NEED_NONE    ? "in order already"
		 : need == NEED_FENCE ? "fence on the next WR"
		 : need == NEED_PATH  ? "wait: the other path first"
				      : "wait for earlier operations");
	w->ctx->st.order_nothing += need == NEED_NONE;
	if (need >= NEED_WAIT) {
		w->stats.waits++;
		w->ctx->st.order_waited++;
		if (need == NEED_PATH)
			w->stats.flushes++;
		rcx__win_wait(w, no_wait, &a);
		need = need_all(w, st, &l);
	}
	/* a device that runs each endpoint's WRs in order, one complete
	 * before the next (shm), keeps what a fence would */
	*fence = need == NEED_FENCE && !w->ctx->info.ordered;
	w->ctx->st.order_fenced += *fence;
	return 0;
}

void rcx__order_posted(struct rcx_win *w, struct rcx__win_op *op, bool fenced)
{
	struct rcx__win_strm *s = op->strm;
	struct rcx__win_st *st = &s->t[op->target];

	op->seq = s->seq++;
	if (fenced) {
		st->fence_seq = op->seq;
		w->stats.fences++;
	}
	/* lock words and re-drives are no RMA operations: never waited for */
	if (op->internal)
		return;
	/* WRITEs need nothing from later ops on their QP (9.5), only from
	 * those on the other path of a target that has two */
	if (op->via == RCX__VIA_WRITE && !two_paths(w, op->target))
		return;
	op->listed = 1;
	op->next = NULL;
	op->prev = st->tail;
	if (st->tail)
		st->tail->next = op;
	else
		st->head = op;
	st->tail = op;
}

void rcx__order_done(struct rcx_win *w, struct rcx__win_op *op)
{
	struct rcx__win_st *st = &op->strm->t[op->target];

	if (op->prev)
		op->prev->next = op->next;
	else
		st->head = op->next;
	if (op->next)
		op->next->prev = op->prev;
	else
		st->tail = op->prev;
	op->listed = 0;
	op->next = op->prev = NULL;
	if (!st->head) /* everything ordered before a bound is done */
		st->rd_bound = st->wr_bound = st->data_bound = 0;
}

/*
 * On a device whose operations are this process's own loads and stores
 * (shm: the calling thread executes them, a peer only through a lock
 * handed over with seq_cst), the order is the CPU's, and the kinds map to
 * C11 fences between the operations before the call and those after:
 *  - WRITE: earlier accesses before later writes: a release fence (C11
 *    7.17.4: it orders every earlier access before every later store;
 *    on x86 only the compiler has to be held, TSO keeps store order);
 *  - READ: earlier reads before later accesses: an acquire fence;
 *  - DATA: accesses to one location keep their order on every coherent
 *    machine (C11 5.1.2.4 write-write, read-read, read-write and
 *    write-read coherence), so on x86 only the compiler is held, as the
 *    proposal says; elsewhere an acquire-release fence, to be safe
 *    with ranges that overlap only in part;
 *  - ALL: everything: a sequentially consistent fence (x86: mfence),
 *    the only one that orders an earlier write before a later read.
 */
static void cpu_order(int kind)
{
	switch (kind) {
	case RCX_ORDER_WRITE:
		atomic_thread_fence(memory_order_release);
		break;
	case RCX_ORDER_READ:
		atomic_thread_fence(memory_order_acquire);
		break;
	case RCX_ORDER_DATA:
#if defined(__x86_64__) || defined(__i386__)
		atomic_signal_fence(memory_order_seq_cst);
#else
		atomic_thread_fence(memory_order_acq_rel);
#endif
		break;
	default:
		atomic_thread_fence(memory_order_seq_cst);
		break;
	}
}

RCX_API int rcx_win_order(struct rcx_win *w, int kind)
{
	struct rcx__win_strm *s;
	struct rcx__win_st *st;
	int t, ret = 0;

	if (!rcx__win_live(w) || kind < RCX_ORDER_READ || kind > RCX_ORDER_ALL)
		return -EINVAL;
	rcx__lock(w->ctx);
	if (w->invalid) {
		ret = RCX_ERR_WIN_INVALID;
		goto out;
	}
	if (!w->fence_open && !w->lock_all && !w->nlocked &&
	    !rcx__win_pscw_access(w, -1)) {
		ret = RCX_ERR_EPOCH;
		goto out;
	}
	s = rcx__order_strm(w);
	if (!s) {
		ret = -ENOMEM;
		goto out;
	}
	w->stats.orders++;
	w->ctx->st.order_calls++;
	/* and wherever puts and gets are copies (win_direct.c,
	 * win_shared.c), whatever the device */
	if (w->ctx->info.ordered || w->ndirect || w->shr)
		cpu_order(kind);
	for (t = 0; t < w->size; t++) {
		st = &s->t[t];
		if (!st->head)
			continue; /* nothing outstanding that could be passed */
		/* every op issued so far has seq < s->seq */
		if (kind == RCX_ORDER_READ || kind == RCX_ORDER_ALL)
			st->rd_bound = s->seq;
		if (kind == RCX_ORDER_WRITE || kind == RCX_ORDER_ALL)
			st->wr_bound = s->seq;
		if (kind == RCX_ORDER_DATA)
			st->data_bound = s->seq;
	}
out:
	rcx__unlock(w->ctx);
	return ret;
}
