/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_SHM_SQ_H
#define RCX_SHM_SQ_H

/*
 * The pieces of a post that the generic one (shm_ep.c) and the prepared
 * WRs' (shm_pwr.c) share: a completion queued, how many entries may go
 * unreaped, the hints for an inline payload's lines, the wakeups.
 */
#include "shm.h"

/* an op the receiver's queue takes: a ring entry */
static inline bool shm_recv_op(uint8_t op)
{
	return op == RCX_OP_SEND || op == RCX_OP_SEND_IMM ||
	       op == RCX_OP_WRITE_IMM;
}

/* shm_ep.c: the sender's copy of a SEND into the peer's receive */
bool shm_sq_direct(struct shm_ep *ep, uint32_t t, uint8_t op, uint64_t src,
		   uint32_t len, uint64_t *dst);

/* A completion of ours, in the device's queue (dropped: it is full). */
static inline void shm_cqe_push(struct shm_ep *ep, uint64_t wr_id, uint8_t op,
				int status, uint32_t len)
{
	struct rcx_cqe *c = shm_cq_next(ep->dev, ep);

	if (c)
		*c = (struct rcx_cqe){
			.wr_id = wr_id,
			.ep_ctx = ep->attr.ep_ctx,
			.status = status,
			/* as verbs: op undefined */
			.op = status ? RCX_OP_RECV : op,
			.byte_len = len,
		};
}

/* so many entries not reaped that the sender looks (see sq_want) */
static inline bool shm_sq_many(const struct shm_ep *ep, uint32_t n)
{
	return n >= SHM_SQ_LAZY || 2 * n >= ep->attr.max_send_wr;
}

/*
 * An inline payload past the entry's first line, just written to q (len
 * bytes in all): the receiver copies it out next, from another CPU. Each
 * line is handed down to the cache the CPUs share (CLDEMOTE), so that
 * the receiver's reads find it there rather than each one taking it from
 * this CPU's own cache. A hint: a CPU without it does nothing.
 */
static inline void shm_sq_lines_demote(struct shm_sqe *q, uint32_t len)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t o;

	for (o = SHM_SQE_HEAD; o < len; o += 64)
		__asm__ volatile("cldemote %0" : : "m"(q->data[o]));
#else
	(void)q;
	(void)len;
#endif
}

/*
 * After q was published with such a payload: the same lines of the next
 * entry, which the peer read SHM_SQ messages ago, are taken for writing
 * now (PREFETCHW), while the peer works, and not by the stores of the
 * next post, which that entry's seq would wait behind. At 1 KiB, a
 * ping-pong of copies out of such entries took 0.46-0.51 us on a 2-CPU
 * host with both hints, 0.62-0.66 us without.
 */
static inline void shm_sq_lines_take(struct shm_sqe *next, uint32_t len)
{
	uint32_t o;

	for (o = SHM_SQE_HEAD; o < len; o += 64) {
#if defined(__x86_64__) || defined(__i386__)
		__asm__ volatile("prefetchw %0" : : "m"(next->data[o]));
#else
		__builtin_prefetch(&next->data[o], 1, 3);
#endif
	}
}

/*
 * The wakeups a post owes: the peer's (a fence), with its endpoint's work
 * bit when an entry was published (work), a thread of ours (none); and
 * the next pass of ours looks at ep when the post left it something to
 * look for (again).
 */
static inline void shm_post_wake(struct shm_dev *dev, struct shm_ep *ep,
				 bool wake, bool work, bool again)
{
	if (dev->work_on && again)
		dev->again |= ep->wmask;
	if (wake) {
		atomic_thread_fence(memory_order_seq_cst);
		if (work)
			shm_work_mark(ep, false);
		/* the call only where the peer sleeps (it looks again) */
		if (atomic_load_explicit(&ep->peer_seg->armed,
					 memory_order_relaxed))
			shm_kick_fenced(dev, ep->peer_seg, &ep->peer_kaddr,
					ep->peer_kaddr_len);
	}
	shm_cq_kick(dev);
}

#endif
