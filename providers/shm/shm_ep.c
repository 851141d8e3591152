/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory provider: posting, execution and completions of an
 * endpoint (the RC rules it keeps are in shm.h).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "shm_sq.h"

/* ---- the executor's lock: the pid of its holder */

static bool lock_try(struct shm_dir *d, int32_t me)
{
	int32_t z = 0;

	return atomic_compare_exchange_strong(&d->lock, &z, me);
}

/* Wait for the lock; a holder that died leaves it to us. */
static void lock_hard(struct shm_dir *d, int32_t me)
{
	int32_t h;

	while (!lock_try(d, me)) {
		h = atomic_load(&d->lock);
		if (h && h != me && kill(h, 0) && errno == ESRCH &&
		    atomic_compare_exchange_strong(&d->lock, &h, me))
			return;
		sched_yield();
	}
}

/*
 * seq_cst, and so is the failed lock_try of the other side: either it
 * sees the lock free, or we see the work it published before trying
 * (runnable, after the unlock). With a release store, x86 may let our
 * later loads pass it and both would miss the work.
 */
static void unlock(struct shm_dir *d)
{
	atomic_store(&d->lock, 0);
}

/*
 * The most one process_vm_readv/writev moves (the kernel's MAX_RW_COUNT,
 * INT_MAX rounded down to a page): larger copies take several calls.
 */
#define SHM_COPY_MAX 0x7ffff000u

/*
 * Copy len bytes; each side is in this process ("mine") or the peer's.
 * The executor is always one of the two, so at most one is the peer's.
 */
static int copy(struct shm_ep *ep, uint64_t dst, bool dst_mine, uint64_t src,
		bool src_mine, size_t len)
{
	struct iovec l, r;
	ssize_t n = 0;

	if (!len)
		return 0;
	if ((dst_mine && src_mine) || ep->peer_pid == ep->dev->pid) {
		memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, len);
		return 0;
	}
	while (len) {
		/* a short count is no error: the next call says what stopped
		 * it (EFAULT at a page we may not touch) */
		l.iov_len = r.iov_len = len < SHM_COPY_MAX ? len : SHM_COPY_MAX;
		if (dst_mine) {
			l.iov_base = (void *)(uintptr_t)dst;
			r.iov_base = (void *)(uintptr_t)src;
			n = process_vm_readv(ep->peer_pid, &l, 1, &r, 1, 0);
		} else {
			l.iov_base = (void *)(uintptr_t)src;
			r.iov_base = (void *)(uintptr_t)dst;
			n = process_vm_writev(ep->peer_pid, &l, 1, &r, 1, 0);
		}
		if (n <= 0)
			break;
		dst += (size_t)n;
		src += (size_t)n;
		len -= (size_t)n;
	}
	if (!len)
		return 0;
	if (n == 0 || errno == EFAULT)
		return RCX_ERR_REMOTE_ACCESS;
	/* ESRCH: it is gone, a sign of death and no transport's guess */
	if (errno == ESRCH)
		return RCX_ERR_PROC_FAILED;
	/* EPERM: ptrace access refused */
	return RCX_ERR_TRANSPORT;
}

static unsigned int need_access(uint8_t op)
{
	switch (op) {
	case RCX_OP_READ:
		return RCX_ACCESS_REMOTE_READ;
	case RCX_OP_FADD:
	case RCX_OP_CSWAP:
		return RCX_ACCESS_REMOTE_ATOMIC;
	default:
		return RCX_ACCESS_REMOTE_WRITE;
	}
}

/*
 * The emulated atomics run whole under the target's lock for their
 * address, so they are atomic with respect to each other, as an HCA's
 * atomics are with respect to its own (IBA 10.7.2.2: not with respect
 * to the CPU).
 */
static int atomic_op(struct shm_ep *ep, const struct shm_sqe *q, bool snd,
		     struct shm_dev_seg *rseg)
{
	_Atomic int32_t *lk =
		(_Atomic int32_t *)&rseg->lock[(q->raddr >> 3) % SHM_LOCKS];
	uint64_t old, val;
	int32_t z;
	int ret;

	for (z = 0; !atomic_compare_exchange_weak_explicit(
		     lk, &z, 1, memory_order_acquire, memory_order_relaxed);
	     z = 0)
		sched_yield();
	ret = copy(ep, (uintptr_t)&old, true, q->raddr, !snd, 8);
	if (!ret) {
		if (q->op == RCX_OP_FADD)
			val = old + q->compare_add;
		else
			val = old == q->compare_add ? q->swap : old;
		if (val != old)
			ret = copy(ep, q->raddr, !snd, (uintptr_t)&val, true,
				   8);
	}
	atomic_store_explicit(lk, 0, memory_order_release);
	if (!ret)
		ret = copy(ep, q->addr, snd, (uintptr_t)&old, true, 8);
	return ret;
}

/*
 * An atomic on memory of a segment (mem_alloc): every process that
 * reaches it maps it, so a CPU atomic serves, and is atomic with respect
 * to every other atomic on it (all take this path).
 */
static int atomic_cpu(struct shm_ep *ep, const struct shm_sqe *q, bool snd,
		      uint64_t *t)
{
	uint64_t old;

	if (q->op == RCX_OP_FADD) {
		old = __atomic_fetch_add(t, q->compare_add, __ATOMIC_SEQ_CST);
	} else {
		old = q->compare_add;
		__atomic_compare_exchange_n(t, &old, q->swap, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	}
	return copy(ep, q->addr, snd, (uintptr_t)&old, true, 8);
}

/*
 * The target memory of q mapped here: ours, or the peer's segment of
 * mem_alloc; NULL where only cross-memory attach reaches it.
 */
static void *target_ptr(struct shm_ep *ep, const struct shm_sqe *q, bool snd,
			const struct shm_mem_ref *ref)
{
	if (!snd || ep->peer_pid == ep->dev->pid)
		return (void *)(uintptr_t)q->raddr;
	return shm_mem_peer(ep, ref, q->raddr);
}

/* Where a WR's payload is: its entry, or the sender's memory. */
static uint64_t payload(const struct shm_sqe *q)
{
	return q->inl ? (uint64_t)(uintptr_t)q->data : q->addr;
}

/*
 * Executed by the receiver (see struct shm_dir): a SEND or WRITE_IMM
 * whose payload is in its entry. The sender's executor stops there.
 */
static bool rx_exec(const struct shm_sqe *q)
{
	return q->inl && shm_recv_op(q->op);
}

/* Is entry e of d published (its seq written, see struct shm_sqe)? */
static bool published(struct shm_dir *d, uint32_t e)
{
	return atomic_load_explicit(&d->sq[e % SHM_SQ].seq,
				    memory_order_acquire) == e + 1;
}

/* direct(): asked for mapped memory only: not that, nothing done */
#define SHM_SLOW 3

/*
 * A SEND or WRITE_IMM into receive r: the status for the sender. An
 * inline one runs in the receiver only (rx_exec): a memcpy from its
 * entry; a larger one is a cross-memory copy by either side.
 */
static int deliver(struct shm_ep *ep, struct shm_sqe *q, struct shm_rqe *r,
		   bool snd)
{
	struct shm_mem_ref ref;
	void *t = NULL;
	int st;

	/* IBA 9.4.4: a zero-length write checks no key; a refused one is
	 * NAKed before it takes a receive */
	if (q->op == RCX_OP_WRITE_IMM && q->len && !snd) {
		/* ours, run here (rx_exec): our memory at raddr */
		if (!shm_own_key_ok(&ep->mr_seen[1], ep->dev, q->rkey, q->raddr,
				    q->len, RCX_ACCESS_REMOTE_WRITE))
			return RCX_ERR_REMOTE_ACCESS;
		t = (void *)(uintptr_t)q->raddr;
	} else if (q->op == RCX_OP_WRITE_IMM && q->len) {
		if (!shm_mr_seen_ok(&ep->mr_seen[0], ep->peer_seg, q->rkey,
				    q->raddr, q->len, RCX_ACCESS_REMOTE_WRITE,
				    &ref))
			return RCX_ERR_REMOTE_ACCESS;
		t = target_ptr(ep, q, snd, &ref);
	}
	r->op = q->op == RCX_OP_WRITE_IMM ? RCX_OP_RECV_IMM : RCX_OP_RECV;
	r->has_imm = q->op != RCX_OP_SEND;
	r->imm = q->imm;
	r->byte_len = q->len;
	r->status = 0;
	if (q->op == RCX_OP_WRITE_IMM) {
		if (q->len && t && (q->inl || snd)) {
			memmove(t, (void *)(uintptr_t)payload(q), q->len);
			return 0;
		}
		st = copy(ep, q->raddr, !snd, payload(q), q->inl || snd,
			  q->len);
		r->status = st ? RCX_ERR_REMOTE_OP : 0;
		return st;
	}
	if (q->len > r->len) {
		/* IBA 9.9.3.1.2: too long for the receive: an invalid
		 * request for the sender, a length error here */
		r->status = RCX_ERR_LOCAL;
		return RCX_ERR_REMOTE_OP;
	}
	if (q->inl == SHM_INL_DONE) {
		/* the sender's copy into this receive (shm_sq_direct),
		 * which only this one can be: it took no other */
		if (q->raddr == r->addr)
			return 0;
		r->status = RCX_ERR_LOCAL;
		return RCX_ERR_REMOTE_OP;
	}
	if (q->inl && !snd) {
		/* the receiver's: from its entry into its own buffer */
		memcpy((void *)(uintptr_t)r->addr, q->data, q->len);
		return 0;
	}
	st = copy(ep, r->addr, !snd, payload(q), q->inl || snd, q->len);
	r->status = st ? RCX_ERR_LOCAL : 0;
	return st;
}

/*
 * A WRITE, READ or atomic: the status of its completion. The sender runs
 * it (the target need not make progress: passive target); on a segment
 * of mem_alloc it is a memcpy or a CPU atomic, elsewhere cross-memory
 * attach (one system call).
 */
static int direct(struct shm_ep *ep, struct shm_sqe *q, bool snd,
		  bool mapped_only)
{
	struct shm_dev_seg *rseg = snd ? ep->peer_seg : ep->dev->seg;
	struct shm_mem_ref ref = { 0 };
	void *t = NULL;

	if (q->len &&
	    !shm_mr_seen_ok(&ep->mr_seen[!snd], rseg, q->rkey, q->raddr, q->len,
			    need_access(q->op), &ref))
		return mapped_only ? SHM_SLOW : RCX_ERR_REMOTE_ACCESS;
	if (q->len && ref.id)
		t = target_ptr(ep, q, snd, &ref);
	if (mapped_only && !t)
		return SHM_SLOW;
	switch (q->op) {
	case RCX_OP_WRITE:
		if (t && (q->inl || snd)) {
			memmove(t, (void *)(uintptr_t)payload(q), q->len);
			return 0;
		}
		return copy(ep, q->raddr, !snd, payload(q), q->inl || snd,
			    q->len);
	case RCX_OP_READ:
		if (t && snd) {
			memmove((void *)(uintptr_t)q->addr, t, q->len);
			return 0;
		}
		return copy(ep, q->addr, snd, q->raddr, !snd, q->len);
	default:
		/* every process maps a segment: CPU atomics all round; a
		 * segment we cannot map is gone (its key with it) */
		if (ref.id)
			return t ? atomic_cpu(ep, q, snd, t)
				 : RCX_ERR_REMOTE_ACCESS;
		return atomic_op(ep, q, snd, rseg);
	}
}

/*
 * The sender leaves an rx_exec entry to the receiver, unless a WR it
 * would run itself (a WRITE, READ or atomic) waits behind it: those must
 * not wait for the target's progress (passive target), so the sender
 * then delivers it (a cross-memory copy into plain memory).
 */
static bool sender_takes(const struct shm_ep *ep, uint32_t e)
{
	uint32_t t =
		atomic_load_explicit(&ep->tx->sq_tail, memory_order_relaxed);

	/* ours at sq_own - 1, in (e, t): a distance in 1 .. t - e - 1 */
	return ep->sq_own - 1 - e - 1 < t - e - 1;
}

/*
 * Must the sender look at how far its queue ran (sq_exec, t its tail)?
 * The receiver writes that word for each entry it runs: a sender that
 * loaded it on every poll held its line, and each of those writes then
 * waited for the line to come back, on the receiver's way to its reply.
 * So the sender looks when something needs it only: a completion wanted
 * (a signaled entry), an entry the receiver does not run alone (a WR of
 * the sender's, a payload out of its entry), SHM_SQ_LAZY entries or half
 * the queue not reaped, or a side dead (an entry of ours failed: its
 * completion). Unsignaled rx_exec entries are reaped with the next.
 */
static inline bool sq_want(const struct shm_ep *ep, uint32_t t)
{
	uint32_t n = t - ep->sq_reaped;

	return n &&
	       (ep->sq_note - 1 - ep->sq_reaped < n || shm_sq_many(ep, n) ||
		atomic_load_explicit(&ep->cseg->dead[0],
				     memory_order_relaxed) ||
		atomic_load_explicit(&ep->cseg->dead[1], memory_order_relaxed));
}

/* sq_want but for a side dead (which is marked: see SHM_WATCH) */
static inline bool sq_want_own(const struct shm_ep *ep)
{
	uint32_t n =
		atomic_load_explicit(&ep->tx->sq_tail, memory_order_relaxed) -
		ep->sq_reaped;

	return n && (ep->sq_note - 1 - ep->sq_reaped < n || shm_sq_many(ep, n));
}

/* sq_want at the send queue's tail */
static inline bool sq_wanted(const struct shm_ep *ep)
{
	return sq_want(ep, atomic_load_explicit(&ep->tx->sq_tail,
						memory_order_relaxed));
}

/*
 * Could d's next WR run here now: there, no side dead, its receive
 * posted, and ours to run (see sender_takes)?
 */
static inline __attribute__((always_inline)) bool runnable(
	const struct shm_ep *ep, struct shm_dir *d)
{
	uint32_t e = atomic_load_explicit(&d->sq_exec, memory_order_acquire);
	const struct shm_sqe *q;

	if (!published(d, e))
		return false;
	if (atomic_load(&ep->cseg->dead[0]) || atomic_load(&ep->cseg->dead[1]))
		return true; /* runs to fail it (or stops at once) */
	q = &d->sq[e % SHM_SQ];
	if (d == ep->tx && rx_exec(q) && !sender_takes(ep, e))
		return false;
	return !shm_recv_op(q->op) ||
	       atomic_load_explicit(&d->rq_done, memory_order_acquire) !=
		       atomic_load_explicit(&d->rq_tail, memory_order_acquire);
}

/*
 * The peer has work here (after a seq_cst fence): its bit (all: even
 * where it watches the endpoint, see shm_work_mark), a wakeup.
 */
static void peer_work_fenced(struct shm_ep *ep, bool all)
{
	shm_work_mark(ep, all);
	shm_kick_fenced(ep->dev, ep->peer_seg, &ep->peer_kaddr,
			ep->peer_kaddr_len);
}

/* receive i's completion, r filled in by its executor: r's status */
static inline int rq_cqe(struct shm_ep *ep, const struct shm_rqe *r, uint32_t i)
{
	struct rcx_cqe *c = shm_cq_next(ep->dev, ep);

	if (c)
		*c = (struct rcx_cqe){
			.wr_id = ep->rq_wr_id[i % SHM_RQ],
			.ep_ctx = ep->attr.ep_ctx,
			.status = r->status,
			.op = r->status ? RCX_OP_RECV : r->op,
			.has_imm = r->has_imm,
			.imm = r->has_imm ? r->imm : 0,
			.byte_len = r->byte_len,
		};
	return r->status;
}

/*
 * Execute direction d's send queue (runnable, see exec_dir) as far as it
 * goes: in order (IBA
 * 9.5), a SEND waiting for a receive holding up everything behind it
 * (receiver not ready, retried for ever, as rnr_retry 7). Either process
 * may run this: the one that posts, or the one that posts the receive
 * it waited for. Returns how many WRs ran.
 */
static int exec_run(struct shm_ep *ep, struct shm_dir *d)
{
	struct shm_conn_seg *cs = ep->cseg;
	bool snd = d == ep->tx;
	int sside = snd ? ep->side : !ep->side, n = 0, st;
	uint32_t e, rd;
	struct shm_sqe *q;
	bool st_stop = false, left = false, looked = true, tell = false;
	bool all = false;

again:
	/* the caller has just seen it runnable (exec_dir) */
	if ((!looked && !runnable(ep, d)) || !lock_try(d, ep->dev->pid))
		return n;
	looked = false;
	e = atomic_load_explicit(&d->sq_exec, memory_order_relaxed);
	while (published(d, e)) {
		q = &d->sq[e % SHM_SQ];
		if (atomic_load(&cs->dead[sside])) {
			st_stop = true;
			break; /* its sender flushes what is left */
		}
		if (atomic_load(&cs->dead[!sside])) {
			/* the responder is gone: the retries run out */
			st = RCX_ERR_TRANSPORT;
		} else if (snd && rx_exec(q) && !sender_takes(ep, e)) {
			left = true; /* the receiver's: wake it if it sleeps */
			break;
		} else if (shm_recv_op(q->op)) {
			rd = atomic_load_explicit(&d->rq_done,
						  memory_order_relaxed);
			if (rd == atomic_load_explicit(&d->rq_tail,
						       memory_order_acquire))
				break;
			st = deliver(ep, q, &d->rq[rd % SHM_RQ], snd);
			atomic_store_explicit(&d->rq_done, rd + 1,
					      memory_order_release);
			/* a receive of ours delivered, none before it left
			 * to reap: its completion now, not by reap_rq (a
			 * failed one is reap_rq's: it fails the endpoint) */
			if (!snd && !st && ep->rq_reaped == rd) {
				rq_cqe(ep, &d->rq[rd % SHM_RQ], rd);
				ep->rq_reaped = rd + 1;
			}
		} else {
			st = direct(ep, q, snd, false);
		}
		/* the entry's line is the sender's: written on error only */
		if (st)
			q->status = st;
		atomic_store_explicit(&d->sq_exec, ++e, memory_order_release);
		n++;
		/* the receiver's completions, or the sender's that it asked
		 * for (sq_want): the other process has work to take; a look
		 * at a watched endpoint finds the latter only (SHM_WATCH) */
		tell |= q->notify;
		all |= snd || st;
		if (st) {
			/* an error completion puts the sender in error */
			atomic_store(&cs->dead[sside], 1);
			st_stop = true;
			break;
		}
	}
	/*
	 * A release store and one fence for two orders: our later loads
	 * (runnable, after again) do not pass the unlock (see unlock), and
	 * the peer's armed word is read after our work (shm_kick).
	 */
	atomic_store_explicit(&d->lock, 0, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (tell || left || all)
		peer_work_fenced(ep, all);
	/*
	 * A WR or a receive that came while we held the lock found it taken
	 * and left the work to us: look again now that it is free.
	 */
	if (!st_stop && !left)
		goto again;
	return n;
}

/*
 * exec_run when d's next WR could run here: the look costs loads only
 * (no frame of exec_run's), and most calls find nothing (a sender
 * whose entries its receiver runs, a poll before the next message).
 */
static inline int exec_dir(struct shm_ep *ep, struct shm_dir *d)
{
	return runnable(ep, d) ? exec_run(ep, d) : 0;
}

/* The sender's completions, in order. */
static void reap_sq(struct shm_ep *ep)
{
	uint32_t x =
		atomic_load_explicit(&ep->tx->sq_exec, memory_order_acquire);
	struct shm_sqe *q;
	bool err = false;

	for (; ep->sq_reaped != x; ep->sq_reaped++) {
		q = &ep->tx->sq[ep->sq_reaped % SHM_SQ];
		if (q->signaled || q->status)
			shm_cqe_push(ep, q->wr_id, q->op, q->status, q->len);
		err |= q->status != 0;
	}
	if (err)
		shm_ep_fail(ep);
}

/* The receiver's completions, in order. */
static void reap_rq(struct shm_ep *ep)
{
	struct shm_dir *d = ep->rx;
	uint32_t x = atomic_load_explicit(&d->rq_done, memory_order_acquire);
	bool err = false;

	for (; ep->rq_reaped != x; ep->rq_reaped++)
		err |= rq_cqe(ep, &d->rq[ep->rq_reaped % SHM_RQ],
			      ep->rq_reaped) != 0;
	if (err)
		shm_ep_fail(ep);
}

/*
 * Both queues' completions, the receives first: what the peer's SENDs
 * delivered came before any send of ours that failed since (nothing is
 * delivered after a failure), as a NIC reports a message when it
 * arrives. So the last messages of a peer that left, its BYE included,
 * come before the error of a WR posted to it after it had gone.
 */
static inline void reap(struct shm_ep *ep)
{
	/* a queue with nothing new costs a load, no call */
	if (atomic_load_explicit(&ep->rx->rq_done, memory_order_relaxed) !=
	    ep->rq_reaped)
		reap_rq(ep);
	if (ep->state != SHM_EP_ERROR && sq_wanted(ep) &&
	    atomic_load_explicit(&ep->tx->sq_exec, memory_order_relaxed) !=
		    ep->sq_reaped)
		reap_sq(ep);
}

/*
 * A SEND or SEND_IMM of len bytes from src, to be posted at tail t: when
 * every entry of ours before it has run (sq_exec is t), it takes the
 * peer's receive at rq_done. If that one is posted, long enough, and in
 * a segment of the peer's mem_alloc that we map (shm_mem_peer), the
 * payload goes into its buffer now, and *dst learns the buffer's
 * address: the entry then carries no payload (SHM_INL_DONE), and the
 * receiver, which runs it as it would any rx_exec entry, copies nothing.
 * The entry is published after the copy (release): a sender that dies
 * before leaves the receive to be flushed, never half-written and
 * complete. False, nothing done, for anything else (the payload in the
 * entry, or a cross-memory copy: a receive too short fails there).
 */
__attribute__((noinline)) bool shm_sq_direct(struct shm_ep *ep, uint32_t t,
					     uint8_t op, uint64_t src,
					     uint32_t len, uint64_t *dst)
{
	struct shm_dir *tx = ep->tx;
	const struct shm_rqe *r;
	struct shm_mem_ref ref;
	uint32_t rd;
	void *p;

	if ((op != RCX_OP_SEND && op != RCX_OP_SEND_IMM) ||
	    t != atomic_load_explicit(&tx->sq_exec, memory_order_acquire))
		return false;
	/* rq_done now (each entry that ran took one: all but the others),
	 * which stays: only an executor of an entry of ours moves it; its
	 * posted word says whether it is there, one line read, not the
	 * queue's tail too */
	rd = t - ep->sq_others;
	r = &tx->rq[rd % SHM_RQ];
	if (atomic_load_explicit(&r->posted, memory_order_acquire) != rd + 1 ||
	    len > r->len || !r->mem)
		return false;
	if (ep->peer_pid == ep->dev->pid) {
		p = (void *)(uintptr_t)r->addr;
	} else {
		ref = (struct shm_mem_ref){ r->mem, r->mem_base, r->mem_len };
		p = shm_mem_peer(ep, &ref, r->addr);
		if (!p)
			return false;
	}
	memcpy(p, (const void *)(uintptr_t)src, len);
	*dst = r->addr;
	ep->sent_direct++;
	return true;
}

/* Put wr in the send queue: 0, or -EAGAIN when it is full. */
/*
 * wr into entry t, published; done: its payload is in the receive's
 * buffer at raddr already (shm_sq_direct), the entry a note.
 */
static inline __attribute__((always_inline)) void sq_fill(
	struct shm_ep *ep, const struct rcx_wr *wr, uint32_t t, bool done,
	uint64_t raddr)
{
	struct shm_sqe *q = &ep->tx->sq[t % SHM_SQ];
	bool inl;

	/* inline: the buffer is the caller's again when the post returns */
	inl = done || (wr->length <= SHM_INLINE && wr->op != RCX_OP_READ &&
		       wr->op != RCX_OP_FADD && wr->op != RCX_OP_CSWAP &&
		       ((wr->flags & RCX_WR_INLINE) || shm_recv_op(wr->op)));
	/*
	 * The payload past the first line first: the first line, which the
	 * receiver polls, is written in one burst after it (written before
	 * a long copy, it went to the polling receiver and back for seq).
	 */
	if (inl && !done && wr->length > SHM_SQE_HEAD) {
		memcpy(q->data + SHM_SQE_HEAD,
		       (const uint8_t *)(uintptr_t)wr->addr + SHM_SQE_HEAD,
		       wr->length - SHM_SQE_HEAD);
		shm_sq_lines_demote(q, wr->length);
	}
	q->op = wr->op;
	q->signaled = !!(wr->flags & RCX_WR_SIGNALED);
	q->len = wr->length;
	q->imm = wr->imm;
	q->status = 0;
	q->wr_id = wr->wr_id;
	q->raddr = raddr;
	q->rkey = wr->rkey;
	q->inl = done ? SHM_INL_DONE : inl;
	/* the payload's address, and the operands of an atomic, only where
	 * they are read (see payload): no store to the entry's last line
	 * but wr_id's for an inline one */
	if (done) {
		/* in the receive's buffer already */
	} else if (inl && wr->length) {
		memcpy(q->data, (void *)(uintptr_t)wr->addr,
		       wr->length < SHM_SQE_HEAD ? wr->length : SHM_SQE_HEAD);
	} else if (!inl) {
		q->addr = wr->addr;
		q->compare_add = wr->compare_add;
		q->swap = wr->swap;
	}
	if (!shm_recv_op(wr->op)) {
		ep->sq_own = t + 1;
		ep->sq_others++;
	}
	/* what sq_want looks for: a mark when it has run (exec_run) */
	q->notify = q->signaled || !inl || !shm_recv_op(wr->op);
	if (q->notify)
		ep->sq_note = t + 1;
	else
		q->notify = shm_sq_many(ep, t + 1 - ep->sq_reaped);
	atomic_store_explicit(&q->seq, t + 1, memory_order_release);
	atomic_store_explicit(&ep->tx->sq_tail, t + 1, memory_order_relaxed);
	if (inl && !done && wr->length > SHM_SQE_HEAD)
		shm_sq_lines_take(&ep->tx->sq[(t + 1) % SHM_SQ], wr->length);
}

/* sq_put's SEND delivered into the receive (shm_sq_direct): out of line */
static __attribute__((noinline)) bool sq_put_direct(struct shm_ep *ep,
						    const struct rcx_wr *wr,
						    uint32_t t)
{
	uint64_t dst;

	if (!shm_sq_direct(ep, t, wr->op, wr->addr, wr->length, &dst))
		return false;
	sq_fill(ep, wr, t, true, dst);
	return true;
}

static int sq_put(struct shm_ep *ep, const struct rcx_wr *wr)
{
	uint32_t t =
		atomic_load_explicit(&ep->tx->sq_tail, memory_order_relaxed);

	if (t - ep->sq_reaped == SHM_SQ) {
		reap_sq(ep);
		if (t - ep->sq_reaped == SHM_SQ)
			return -EAGAIN;
	}
	if (wr->length < SHM_DIRECT_MIN || !sq_put_direct(ep, wr, t))
		sq_fill(ep, wr, t, false, wr->remote_addr);
	return 0;
}

/* Move what found the send queue full into it, in order. */
static void run_pending(struct shm_ep *ep)
{
	struct shm_pend *p;

	while ((p = ep->pend) && ep->state != SHM_EP_ERROR) {
		if (sq_put(ep, &p->wr))
			return;
		ep->pend = p->next;
		if (!ep->pend)
			ep->pend_tail = NULL;
		ep->npend--;
		free(p);
	}
}

static int pend_add(struct shm_ep *ep, const struct rcx_wr *wr)
{
	bool inl = (wr->flags & RCX_WR_INLINE) && wr->length <= SHM_INLINE;
	struct shm_pend *p = malloc(sizeof(*p) + (inl ? wr->length : 0));

	if (!p)
		return -ENOMEM;
	p->next = NULL;
	p->wr = *wr;
	p->wr.next = NULL;
	if (inl) { /* the caller may reuse its buffer: keep a copy */
		memcpy(p + 1, (void *)(uintptr_t)wr->addr, wr->length);
		p->wr.addr = (uint64_t)(uintptr_t)(p + 1);
	}
	if (ep->pend_tail)
		ep->pend_tail->next = p;
	else
		ep->pend = p;
	ep->pend_tail = p;
	ep->npend++;
	return 0;
}

/*
 * Nothing of ours queued, unexecuted or not reaped, no side dead: a WR
 * posted now would run next.
 */
static bool sq_idle(struct shm_ep *ep)
{
	struct shm_dir *tx = ep->tx;
	uint32_t e;

	if (ep->pend || ep->state != SHM_EP_CONNECTED || !ep->peer_seg)
		return false;
	e = atomic_load_explicit(&tx->sq_exec, memory_order_acquire);
	if (e != atomic_load_explicit(&tx->sq_tail, memory_order_relaxed))
		return false;
	if (e != ep->sq_reaped) {
		/* run, not reaped yet (sq_want): reaped now */
		reap_sq(ep);
		shm_cq_kick(ep->dev);
		if (ep->state != SHM_EP_CONNECTED)
			return false;
	}
	return !atomic_load(&ep->cseg->dead[0]) &&
	       !atomic_load(&ep->cseg->dead[1]);
}

/*
 * An atomic on memory of a segment of mem_alloc that the peer's
 * registration allows, posted when nothing of ours is queued, unexecuted
 * or not reaped: it runs now, as the executor would run it next (in
 * order: everything before it has run), with no ring entry, lock or reap.
 * False, with nothing done, for anything else.
 */
static bool run_direct(struct shm_ep *ep, const struct rcx_wr *wr)
{
	struct shm_sqe q;

	if ((wr->op != RCX_OP_FADD && wr->op != RCX_OP_CSWAP) || !sq_idle(ep))
		return false;
	q.op = wr->op;
	q.inl = 0; /* the payload is read from wr->addr, ours */
	q.len = wr->length;
	q.addr = wr->addr;
	q.raddr = wr->remote_addr;
	q.rkey = wr->rkey;
	q.compare_add = wr->compare_add;
	q.swap = wr->swap;
	/* not 0: SHM_SLOW, the ring takes it */
	return direct(ep, &q, true, true) == 0;
}

/*
 * A WRITE or READ that the peer's registration allows, when a WR posted
 * now would run next (sq_idle): the key checked in the peer's table, and
 * the copy the executor would make next, with no entry built. On a
 * segment of mem_alloc, mapped here, a memcpy; on plain memory, where
 * cma allows it, the one process_vm_writev / readv the ring's executor
 * would make at post time (a rendezvous READ: no entry, no lock, no
 * mark for the peer, no reap, no line of the connection segment
 * written). -EAGAIN, with nothing done, for anything else, and for a
 * cross-memory copy that failed: the ring runs it again and completes it
 * with its error (a failed copy's bytes are undefined either way).
 */
/* rw_now's cross-memory copy (plain memory): out of its mapped path */
static __attribute__((noinline)) int rw_cma(struct shm_ep *ep,
					    const struct rcx_wr *wr, bool put)
{
	int st = put ? copy(ep, wr->remote_addr, false, wr->addr, true,
			    wr->length)
		     : copy(ep, wr->addr, true, wr->remote_addr, false,
			    wr->length);

	return st ? -EAGAIN : 0;
}

static int rw_now(struct shm_ep *ep, const struct rcx_wr *wr, bool cma)
{
	bool put = wr->op == RCX_OP_WRITE;
	struct shm_mem_ref ref;
	void *t;

	if ((!put && wr->op != RCX_OP_READ) || !wr->length || !sq_idle(ep) ||
	    !shm_mr_seen_ok(&ep->mr_seen[0], ep->peer_seg, wr->rkey,
			    wr->remote_addr, wr->length,
			    put ? RCX_ACCESS_REMOTE_WRITE
				: RCX_ACCESS_REMOTE_READ,
			    &ref))
		return -EAGAIN;
	t = ep->peer_pid == ep->dev->pid
		    ? (void *)(uintptr_t)wr->remote_addr
		    : shm_mem_peer(ep, &ref, wr->remote_addr);
	if (__builtin_expect(!t, 0))
		return cma ? rw_cma(ep, wr, put) : -EAGAIN;
	if (put)
		memmove(t, (const void *)(uintptr_t)wr->addr, wr->length);
	else
		memmove((void *)(uintptr_t)wr->addr, t, wr->length);
	return 0;
}

/* rw_now or run_direct from post_send: a completion, as the ring's
 * would be */
static bool run_now(struct shm_ep *ep, const struct rcx_wr *wr)
{
	if (wr->op == RCX_OP_WRITE || wr->op == RCX_OP_READ) {
		if (rw_now(ep, wr, true))
			return false;
	} else if (shm_recv_op(wr->op) || !run_direct(ep, wr)) {
		return false;
	}
	if (wr->flags & RCX_WR_SIGNALED)
		shm_cqe_push(ep, wr->wr_id, wr->op, 0, wr->length);
	/* a waiter of the peer's may sleep until a write lands: the post
	 * wakes it before it returns */
	ep->ran_now++;
	return true;
}

/* rw_now for a caller that takes no completion (ops->ep_rma_now), on
 * mapped memory only: no system call */
int shm_ep_rma_now(struct rcx_ep *e, const struct rcx_wr *wr)
{
	struct shm_ep *ep = to_sep(e);
	int ret = rw_now(ep, wr, false);

	if (ret || wr->op != RCX_OP_WRITE)
		return ret;
	/* a waiter of the peer's may sleep until a write lands */
	atomic_thread_fence(memory_order_seq_cst);
	shm_kick_fenced(ep->dev, ep->peer_seg, &ep->peer_kaddr,
			ep->peer_kaddr_len);
	return 0;
}

static int post_one(struct shm_ep *ep, const struct rcx_wr *wr)
{
	uint32_t busy;

	if (wr->op > RCX_OP_CSWAP)
		return -EINVAL;
	if ((wr->op == RCX_OP_FADD || wr->op == RCX_OP_CSWAP) &&
	    ((wr->remote_addr & 7) || wr->length != 8))
		return -EINVAL; /* IBA 9.4.5 */
	if (ep->state == SHM_EP_ERROR) {
		shm_cqe_push(ep, wr->wr_id, wr->op, RCX_ERR_FLUSHED, 0);
		return 0;
	}
	busy = atomic_load_explicit(&ep->tx->sq_tail, memory_order_relaxed) -
	       ep->sq_reaped + ep->npend;
	if (busy >= ep->attr.max_send_wr) {
		reap_sq(ep);
		busy = atomic_load_explicit(&ep->tx->sq_tail,
					    memory_order_relaxed) -
		       ep->sq_reaped + ep->npend;
		if (busy >= ep->attr.max_send_wr)
			return -ENOMEM; /* the send queue is full */
	}
	if (run_now(ep, wr))
		return 0;
	if (ep->pend || sq_put(ep, wr))
		return pend_add(ep, wr);
	return 0;
}

/*
 * A lone SEND, SEND_IMM or WRITE_IMM whose payload travels in its entry,
 * posted when every entry of ours before it has run, nothing is pending
 * and no side is dead: the receiver runs it (rx_exec), so the post writes
 * the entry and nothing else (no look at the queue to execute, no reap:
 * the next poll reaps). False, with nothing done, for anything else.
 */
static bool send_fast(struct shm_ep *ep, const struct rcx_wr *wr)
{
	struct shm_dir *tx = ep->tx;
	uint32_t t;

	if (wr->next || !shm_recv_op(wr->op) || wr->length > SHM_INLINE ||
	    ep->pend || ep->state != SHM_EP_CONNECTED || !ep->peer_seg)
		return false;
	t = atomic_load_explicit(&tx->sq_tail, memory_order_relaxed);
	/* behind entries the receiver runs alone, unsignaled: no look at
	 * how far they ran (sq_want) */
	return (!sq_want(ep, t) ||
		t == atomic_load_explicit(&tx->sq_exec,
					  memory_order_relaxed)) &&
	       t - ep->sq_reaped < ep->attr.max_send_wr &&
	       t - ep->sq_reaped < SHM_SQ &&
	       !atomic_load_explicit(&ep->cseg->dead[0],
				     memory_order_relaxed) &&
	       !atomic_load_explicit(&ep->cseg->dead[1],
				     memory_order_relaxed) &&
	       !sq_put(ep, wr);
}

int shm_post_send(struct rcx_ep *e, struct rcx_wr *wr, struct rcx_wr **bad)
{
	struct shm_ep *ep = to_sep(e);
	struct shm_dev *dev = ep->dev;
	uint32_t t0, now0 = ep->ran_now;
	bool wake = false, work = false;
	int ret = 0;

	/* a lone WRITE or READ that runs at once (a channel's credit, a
	 * put): no entry, no slot, nothing to execute or reap */
	if ((wr->op == RCX_OP_WRITE || wr->op == RCX_OP_READ) && !wr->next &&
	    !rw_now(ep, wr, true)) {
		if (wr->flags & RCX_WR_SIGNALED)
			shm_cqe_push(ep, wr->wr_id, wr->op, 0, wr->length);
		/* a waiter of the peer's may sleep until a write lands */
		/* nothing left here: no entry, its completion queued */
		shm_post_wake(dev, ep, wr->op == RCX_OP_WRITE, false, false);
		return 0;
	}
	if (send_fast(ep, wr)) {
		/* the receiver may sleep: wake it */
		/* nothing to look for here unless the entry asked for a
		 * mark (sq_want: the peer leaves none where we watch the
		 * endpoint, which is then looked at until it is reaped) */
		t0 = atomic_load_explicit(&ep->tx->sq_tail,
					  memory_order_relaxed) -
		     1;
		shm_post_wake(dev, ep, true, true,
			      ep->tx->sq[t0 % SHM_SQ].notify);
		return 0;
	}
	t0 = ep->cseg ? atomic_load_explicit(&ep->tx->sq_tail,
					     memory_order_relaxed)
		      : 0;
	for (; wr; wr = wr->next) {
		ret = post_one(ep, wr);
		if (ret) {
			*bad = wr;
			break;
		}
	}
	if (ep->state != SHM_EP_ERROR && ep->cseg) {
		/* a WR that ran now left nothing to execute or reap */
		wake = ep->ran_now != now0;
		work = t0 != atomic_load_explicit(&ep->tx->sq_tail,
						  memory_order_relaxed);
		if (work || ep->pend) {
			/* the peer runs what it can before we do: wake it
			 * if it sleeps (exec_dir does when it ran some) */
			wake |= !exec_dir(ep, ep->tx);
			reap(ep);
		}
		wake &= ep->peer_seg != NULL;
	}
	shm_post_wake(dev, ep, wake, work, true);
	return ret;
}

/*
 * The segment of ours that holds receive r's buffer, for a sender that
 * maps it (shm_sq_direct): one look at the segment found last, a walk of
 * the device's few only where that is not it.
 */
static inline void rq_note_mem(struct shm_dev *dev, struct shm_rqe *r)
{
	const void *a = (const void *)(uintptr_t)r->addr;
	const struct shm_mem *s = dev->mem_hit;

	if ((!s || !shm_mem_holds(s, a, r->len)) &&
	    (!dev->mems || !(s = shm_mem_find(dev, a, r->len)))) {
		r->mem = 0;
		return;
	}
	r->mem = s->id;
	r->mem_base = (uint64_t)(uintptr_t)s->base;
	r->mem_len = s->len;
}

int shm_post_recv(struct rcx_ep *e, struct rcx_wr *wr, struct rcx_wr **bad)
{
	struct shm_ep *ep = to_sep(e);
	struct shm_dir *d = ep->rx;
	struct shm_rqe *r;
	uint32_t t;
	int ret = 0;

	for (; wr; wr = wr->next) {
		if (ep->state == SHM_EP_ERROR) {
			shm_cqe_push(ep, wr->wr_id, RCX_OP_RECV,
				     RCX_ERR_FLUSHED, 0);
			continue;
		}
		t = atomic_load_explicit(&d->rq_tail, memory_order_relaxed);
		if (t - ep->rq_reaped >= ep->attr.max_recv_wr) {
			*bad = wr;
			ret = -ENOMEM;
			break;
		}
		r = &d->rq[t % SHM_RQ];
		r->addr = wr->addr;
		r->len = wr->length;
		/* one too short for a direct SEND keeps a stale mem: the
		 * sender looks at its length first */
		if (r->len >= SHM_DIRECT_MIN)
			rq_note_mem(ep->dev, r);
		atomic_store_explicit(&r->posted, t + 1, memory_order_release);
		ep->rq_wr_id[t % SHM_RQ] = wr->wr_id;
		atomic_store_explicit(&d->rq_tail, t + 1, memory_order_release);
	}
	/* a send of the peer's may have waited for this receive (what ran
	 * nothing leaves no completion: the next poll reaps any other) */
	if (ep->state != SHM_EP_ERROR && ep->cseg && ep->peer_seg &&
	    exec_dir(ep, d))
		reap_rq(ep);
	if (ep->dev->work_on)
		ep->dev->again |= ep->wmask;
	shm_cq_kick(ep->dev);
	return ret;
}

/*
 * Nothing for progress to do on ep: every completion taken, nothing
 * pending, no WR of the peer's published for us to run and none of ours
 * but those the peer runs (rx_exec). Loads only: of our own words and
 * lines, of the word the peer writes when it has run a WR of ours, and
 * of the seq of the peer's next entry, a line it writes once a message
 * (the payload's). What it misses (a WR published after the loads) the
 * next poll finds.
 */
static inline __attribute__((always_inline)) bool quiet(struct shm_ep *ep)
{
	struct shm_dir *rx = ep->rx, *tx = ep->tx;
	uint32_t tt = atomic_load_explicit(&tx->sq_tail, memory_order_relaxed);
	uint32_t te;

	if (ep->pend ||
	    atomic_load_explicit(&rx->rq_done, memory_order_relaxed) !=
		    ep->rq_reaped)
		return false;
	/* ours, the peer's to run alone, unsignaled: no look (sq_want) */
	if (sq_want(ep, tt)) {
		te = atomic_load_explicit(&tx->sq_exec, memory_order_relaxed);
		if (te != ep->sq_reaped)
			return false;
		/* ours, waiting for the peer to run them: nothing to do
		 * here, unless a side is dead (they fail then) */
		if (te != tt &&
		    (!rx_exec(&tx->sq[te % SHM_SQ]) || sender_takes(ep, te) ||
		     atomic_load_explicit(&ep->cseg->dead[0],
					  memory_order_relaxed) ||
		     atomic_load_explicit(&ep->cseg->dead[1],
					  memory_order_relaxed)))
			return false;
	}
	return !published(
		rx, atomic_load_explicit(&rx->sq_exec, memory_order_relaxed));
}

/* ep_progress past its checks: a call only where there is work */
static __attribute__((noinline)) void ep_work(struct shm_ep *ep)
{
	uint32_t t;

	exec_dir(ep, ep->rx);
	if (ep->pend) {
		t = atomic_load_explicit(&ep->tx->sq_tail,
					 memory_order_relaxed);
		run_pending(ep);
		/* entries the pending queue published: the peer's to take
		 * when they are its (exec_run wakes it only when it stops
		 * at one) */
		if (t != atomic_load_explicit(&ep->tx->sq_tail,
					      memory_order_relaxed)) {
			atomic_thread_fence(memory_order_seq_cst);
			peer_work_fenced(ep, false);
		}
	}
	if (sq_wanted(ep))
		exec_dir(ep, ep->tx);
	reap(ep);
}

/*
 * inlined into the poll's loop: an endpoint with nothing to do costs
 * its loads, no call. True when it had work: the next pass looks again.
 */
static inline __attribute__((always_inline)) bool ep_progress(struct shm_ep *ep)
{
	if (ep->state == SHM_EP_ERROR || !ep->cseg || !ep->peer_seg ||
	    quiet(ep))
		return false;
	ep_work(ep);
	return true;
}

void shm_ep_kill(struct shm_ep *ep)
{
	struct shm_conn_seg *cs = ep->cseg;
	int32_t me = ep->dev->pid;

	/* no executor is half-way through a WR of ours after this */
	lock_hard(&cs->dir[0], me);
	lock_hard(&cs->dir[1], me);
	atomic_store(&cs->dead[ep->side], 1);
	unlock(&cs->dir[1]);
	unlock(&cs->dir[0]);
	if (ep->peer_seg) {
		atomic_thread_fence(memory_order_seq_cst);
		peer_work_fenced(ep, true);
	}
}

static void ep_flush(struct shm_ep *ep);

/* Error state: what ran completes with its status, the rest flushes. */
void shm_ep_fail(struct shm_ep *ep)
{
	ep_flush(ep);
	shm_cq_kick(ep->dev);
}

static void ep_flush(struct shm_ep *ep)
{
	struct shm_pend *p;
	struct shm_sqe *q;
	uint32_t t;

	if (ep->state == SHM_EP_ERROR)
		return;
	ep->state = SHM_EP_ERROR;
	if (ep->cseg) {
		shm_ep_kill(ep);
		/* what arrived first, as in reap() */
		reap_rq(ep);
		reap_sq(ep);
		t = atomic_load_explicit(&ep->tx->sq_tail,
					 memory_order_relaxed);
		for (; ep->sq_reaped != t; ep->sq_reaped++) {
			q = &ep->tx->sq[ep->sq_reaped % SHM_SQ];
			shm_cqe_push(ep, q->wr_id, q->op, RCX_ERR_FLUSHED, 0);
		}
	}
	while ((p = ep->pend)) {
		ep->pend = p->next;
		shm_cqe_push(ep, p->wr.wr_id, p->wr.op, RCX_ERR_FLUSHED, 0);
		free(p);
	}
	ep->pend_tail = NULL;
	ep->npend = 0;
	if (ep->cseg) {
		t = atomic_load_explicit(&ep->rx->rq_tail,
					 memory_order_relaxed);
		for (; ep->rq_reaped != t; ep->rq_reaped++)
			shm_cqe_push(ep, ep->rq_wr_id[ep->rq_reaped % SHM_RQ],
				     RCX_OP_RECV, RCX_ERR_FLUSHED, 0);
	}
}

int shm_ep_set_error(struct rcx_ep *e)
{
	shm_ep_fail(to_sep(e));
	return 0;
}

uint32_t shm_ep_max_inline(const struct rcx_ep *e)
{
	(void)e;
	return SHM_INLINE;
}

/* No queue pair and no path MTU: the device and the inline size only. */
int shm_ep_query(const struct rcx_ep *e, struct rcx_ep_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->device, sizeof(info->device), "shm");
	info->max_inline = shm_ep_max_inline(e);
	return 0;
}

/*
 * A full look at ep in a pass by the map: true when the next pass looks
 * again (it had work; or it is watched and waits for a completion the
 * peer leaves no mark for, see SHM_WATCH).
 */
static inline __attribute__((always_inline)) bool look(struct shm_dev *dev,
						       struct shm_ep *ep)
{
	bool work;

	dev->looks++;
	work = ep_progress(ep);
	if (work)
		shm_watch(dev, ep);
	if (!ep->watched)
		return work;
	if (work)
		ep->watch_pass = dev->wpass;
	shm_watch_note(dev, ep);
	return work || sq_want_own(ep);
}

/* The endpoints of the bits (bit 0: all of them), in full. */
static __attribute__((noinline)) void progress_bits(struct shm_dev *dev,
						    uint64_t bits)
{
	struct shm_ep *ep;
	uint32_t b;

	dev->again = 0;
	if (bits & 1) {
		for (ep = dev->eps; ep; ep = ep->next)
			if (look(dev, ep))
				dev->again |= ep->wmask;
	} else {
		do {
			b = (uint32_t)__builtin_ctzll(bits);
			bits &= bits - 1;
			for (ep = dev->by_bit[b]; ep; ep = ep->bit_next)
				if (look(dev, ep))
					shm_work_again(dev, b);
		} while (bits);
	}
	/* the watch's clock: a pass with work (see shm_idle for others) */
	if (!(++dev->wpass & (SHM_WATCH_CHECK - 1)))
		shm_watch_expire(dev);
}

/*
 * What the next pass looks at in full: the endpoints the work map and
 * dev->again name, and the watched ones whose peer published their next
 * entry (one load each, see SHM_WATCH). Loads only.
 */
static inline __attribute__((always_inline)) uint64_t work_bits(
	struct shm_dev *dev)
{
	_Atomic uint64_t *w = &dev->seg->work;
	uint64_t bits = dev->again;
	uint32_t i;

	/* the exchange's acquire: the peer's change before its mark */
	if (atomic_load_explicit(w, memory_order_relaxed))
		bits |= atomic_exchange_explicit(w, 0, memory_order_acq_rel);
	if (shm_watch_hit(dev))
		for (i = 0; i < dev->nwatch; i++)
			if (atomic_load_explicit(dev->wseq[i],
						 memory_order_relaxed) ==
			    dev->wwant[i])
				bits |= dev->watch[i].wmask;
	return bits;
}

/* Every endpoint's queues (fewer than SHM_WORK_MIN: no map) */
static __attribute__((noinline)) void progress_each(struct shm_dev *dev)
{
	struct shm_ep *ep;

	for (ep = dev->eps; ep; ep = ep->next)
		ep_progress(ep);
}

/* Run the endpoints' queues: the completions land in dev->cq. */
static inline __attribute__((always_inline)) void progress_all(
	struct shm_dev *dev)
{
	uint64_t bits;

	/*
	 * A pass that finds nothing: loads only, no call, nor a wakeup owed
	 * (every call that queues a completion ends with shm_cq_kick).
	 */
	if (dev->work_on) {
		bits = work_bits(dev);
		if (!bits)
			return;
		progress_bits(dev, bits);
	} else {
		progress_each(dev);
	}
	shm_cq_kick(dev);
}

/* A poll found got completions: count the empty ones in a row. */
static inline void poll_done(struct shm_dev *dev, int got)
{
	if (!got) {
		if (__builtin_expect(shm_idle_due(++dev->idle), 0))
			shm_idle(dev);
	} else if (dev->idle) {
		shm_busy(dev);
	}
}

int shm_cq_poll(struct rcx_dev *d, struct rcx_cqe *cqe, int n)
{
	struct shm_dev *dev = to_sdev(d);
	int got = 0;

	progress_all(dev);
	while (got < n && dev->cq_head != dev->cq_tail)
		cqe[got++] = dev->cq[dev->cq_head++ & (dev->cq_cap - 1)].c;
	poll_done(dev, got);
	return got;
}

/* A failed completion (or a target without ok): the whole entry to cb. */
static __attribute__((noinline)) void dispatch_cb(struct rcx_ctx *ctx,
						  struct rcx_wct *t,
						  struct rcx_cqe c)
{
	t->cb(ctx, t, &c);
}

/*
 * The completions queued when the poll has run the endpoints
 * (SHM_DISPATCH at most), each handed to the struct rcx_wct its wr_id
 * points at, a success to its ok, with no copy into an array of the
 * caller's. An entry leaves the queue before its target runs: a target
 * may post (and queue completions, or grow the queue) or destroy an
 * endpoint.
 */
static int cq_hand(struct shm_dev *dev, struct rcx_ctx *ctx)
{
	uint32_t n, i;

	n = dev->cq_tail - dev->cq_head;
	if (n > SHM_DISPATCH)
		n = SHM_DISPATCH;
	for (i = 0; i < n; i++) {
		const struct rcx_cqe *c =
			&dev->cq[dev->cq_head++ & (dev->cq_cap - 1)].c;
		struct rcx_wct *t = (struct rcx_wct *)(uintptr_t)c->wr_id;

		if (__builtin_expect(c->status || !t->ok, 0))
			dispatch_cb(ctx, t, *c);
		else
			t->ok(ctx, t, c->byte_len, c->imm, c->has_imm);
	}
	poll_done(dev, (int)n);
	return (int)n;
}

/* ops.cq_dispatch: run the endpoints, hand over what they completed */
int shm_cq_dispatch(struct rcx_dev *d, struct rcx_ctx *ctx)
{
	struct shm_dev *dev = to_sdev(d);

	progress_all(dev);
	return cq_hand(dev, ctx);
}

/*
 * rcx_cq_peek's poll: shm_cq_dispatch's pass, with the hand-over left to
 * found (peek_found) when there is something to hand over. The core's
 * test calls it directly: one call where nothing is found. cq names the
 * device; no buffer (the completions stay in the device's queue).
 */
static int peek_poll(struct ibv_cq *cq, int n, struct ibv_wc *buf)
{
	struct shm_dev *dev = (struct shm_dev *)(void *)cq;

	(void)n;
	(void)buf;
	progress_all(dev);
	if (dev->cq_head != dev->cq_tail)
		return 1;
	poll_done(dev, 0);
	return 0;
}

static int peek_found(struct rcx_dev *d, struct rcx_ctx *ctx, int got)
{
	(void)got;
	return cq_hand(to_sdev(d), ctx);
}

int shm_cq_peek(struct rcx_dev *d, struct rcx_cq_peek *pk)
{
	pk->poll = peek_poll;
	pk->cq = (struct ibv_cq *)(void *)to_sdev(d);
	pk->buf = NULL;
	pk->n = SHM_DISPATCH;
	pk->found = peek_found;
	return 0;
}
