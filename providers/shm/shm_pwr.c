/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory provider: prepared WRs (ops->pwr_*).
 *
 * A prepared SEND, SEND_IMM or WRITE_IMM keeps the first line of its send
 * queue entry as it will be posted (struct shm_pwr_line): the core patches
 * its length and remote address in place, and a post of the WR alone, on
 * an endpoint with nothing in its way, copies that line into the next
 * entry with the payload and the immediate, and publishes it, as the
 * generic post's fast path would (shm_ep.c: send_fast, sq_put) but with
 * nothing of the WR looked at again. A prepared RDMA WRITE runs as the
 * generic post's rw_now would, on mapped memory. Anything else (a list,
 * a full or busy queue, a side dead, a payload too long to travel in the
 * entry, plain memory only cross-memory attach reaches) takes the
 * generic post, with the WR the line stands for.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "shm_sq.h"

/* the first line of an entry, up to its payload (seq: not copied) */
struct shm_pwr_line {
	uint32_t seq;
	uint8_t op, signaled, inl, notify;
	uint32_t len, imm;
	int32_t status;
	uint32_t rkey;
	uint64_t raddr;
};

#define SHM_LINE_OFF offsetof(struct shm_pwr_line, op)
#define SHM_LINE_LEN (sizeof(struct shm_pwr_line) - SHM_LINE_OFF)
#define SHM_LINE_AT(f)                                      \
	_Static_assert(offsetof(struct shm_pwr_line, f) ==  \
			       offsetof(struct shm_sqe, f), \
		       "the line of struct shm_sqe")
SHM_LINE_AT(op);
SHM_LINE_AT(signaled);
SHM_LINE_AT(inl);
SHM_LINE_AT(notify);
SHM_LINE_AT(len);
SHM_LINE_AT(imm);
SHM_LINE_AT(status);
SHM_LINE_AT(rkey);
SHM_LINE_AT(raddr);
_Static_assert(sizeof(struct shm_pwr_line) == offsetof(struct shm_sqe, data),
	       "the line ends where the payload starts");

enum shm_pwr_kind {
	SHM_PWR_SLOW,  /* the generic post only */
	SHM_PWR_ENTRY, /* a ring entry the receiver runs (rx_exec) */
	SHM_PWR_WRITE, /* an RDMA WRITE, run at post time (rw_now) */
};

struct shm_pwr {
	struct rcx_pwr pub;
	struct shm_pwr_line line; /* length and raddr patched in place */
	uint8_t kind;
	uint32_t imm_be;
	struct rcx_wr wr; /* the generic post's (line's fields copied) */
	uint64_t scratch64;
	uint32_t scratch32;
};

static inline struct shm_pwr *to_spwr(struct rcx_pwr *p)
{
	return (struct shm_pwr *)p;
}

int shm_pwr_create(struct rcx_ep *e, const struct rcx_wr *wr, int recv,
		   struct rcx_pwr **out)
{
	struct shm_pwr *p;

	(void)e;
	if (!recv && wr->op > RCX_OP_CSWAP)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pub.ops = &rcx__shm_ops;
	p->wr = *wr;
	p->wr.next = NULL;
	p->imm_be = htobe32(wr->imm);
	p->line.op = wr->op;
	p->line.signaled = !!(wr->flags & RCX_WR_SIGNALED);
	/* the entry carries the payload (checked again at each post) */
	p->line.inl = 1;
	/* a mark when it has run: where a completion is wanted (sq_put) */
	p->line.notify = p->line.signaled;
	p->line.len = wr->length;
	p->line.rkey = wr->rkey;
	p->line.raddr = wr->remote_addr;
	if (!recv && shm_recv_op(wr->op))
		p->kind = SHM_PWR_ENTRY;
	else if (!recv && wr->op == RCX_OP_WRITE)
		p->kind = SHM_PWR_WRITE;
	p->pub.addr = &p->wr.addr;
	/* a receive's length is its WR's: no line to copy it from */
	p->pub.length = recv ? &p->wr.length : &p->line.len;
	p->pub.remote_addr = &p->scratch64;
	p->pub.imm_be = &p->scratch32;
	p->pub.wr_id = &p->wr.wr_id;
	if (!recv && (wr->op == RCX_OP_WRITE || wr->op == RCX_OP_WRITE_IMM ||
		      wr->op == RCX_OP_READ))
		p->pub.remote_addr = &p->line.raddr;
	if (!recv && (wr->op == RCX_OP_SEND_IMM || wr->op == RCX_OP_WRITE_IMM))
		p->pub.imm_be = &p->imm_be;
	*out = &p->pub;
	return 0;
}

void shm_pwr_destroy(struct rcx_pwr *p)
{
	free(p);
}

/*
 * len bytes from s to d, len at most SHM_SQE_HEAD: the sizes a channel's
 * word or a reduction's element takes are a load and a store or two,
 * with no call.
 */
static inline void copy_head(uint8_t *d, const uint8_t *s, uint32_t len)
{
	uint64_t a, b;

	if (len >= 8 && len <= 16) {
		memcpy(&a, s, 8);
		memcpy(&b, s + len - 8, 8);
		memcpy(d, &a, 8);
		memcpy(d + len - 8, &b, 8);
	} else if (len == SHM_SQE_HEAD) {
		memcpy(d, s, SHM_SQE_HEAD);
	} else if (len) { /* no address to read for none */
		memcpy(d, s, len);
	}
}

/*
 * Entry q (index t, n not reaped before it) of a prepared WR, its payload
 * written: its line and immediate (head: the payload, whose first bytes
 * go into the line; or done: it is in the receive's buffer at dst, see
 * shm_sq_direct), published, and the peer woken.
 */
static inline __attribute__((always_inline)) void entry_publish(
	struct shm_ep *ep, struct shm_pwr *p, struct shm_sqe *q, uint32_t t,
	uint32_t n, const uint8_t *head, bool done, uint64_t dst)
{
	struct shm_dir *tx = ep->tx;
	uint32_t len = p->line.len;
	bool notify;

	memcpy((uint8_t *)q + SHM_LINE_OFF, (uint8_t *)&p->line + SHM_LINE_OFF,
	       SHM_LINE_LEN);
	q->imm = be32toh(p->imm_be);
	if (!done)
		copy_head(q->data, head,
			  len < SHM_SQE_HEAD ? len : SHM_SQE_HEAD);
	q->wr_id = p->wr.wr_id;
	notify = p->line.signaled;
	if (notify)
		ep->sq_note = t + 1;
	else if (shm_sq_many(ep, n + 1))
		q->notify = notify = true;
	if (done) {
		q->inl = SHM_INL_DONE;
		q->raddr = dst;
		atomic_store_explicit(&q->seq, t + 1, memory_order_release);
		atomic_store_explicit(&tx->sq_tail, t + 1,
				      memory_order_relaxed);
	} else {
		atomic_store_explicit(&q->seq, t + 1, memory_order_release);
		atomic_store_explicit(&tx->sq_tail, t + 1,
				      memory_order_relaxed);
		if (len > SHM_SQE_HEAD)
			shm_sq_lines_take(&tx->sq[(t + 1) % SHM_SQ], len);
	}
	/* the receiver may sleep: wake it; look here again only if the
	 * entry asked for a mark (as send_fast) */
	shm_post_wake(ep->dev, ep, true, true, notify);
}

/*
 * post_entry's SEND of SHM_DIRECT_MIN bytes or more into a receive the
 * peer posted in a segment we map (shm_sq_direct): out of the path of
 * the shorter ones. -EAGAIN, nothing done, where it is not that.
 */
static __attribute__((noinline)) int post_direct(struct shm_ep *ep,
						 struct shm_pwr *p, uint32_t t,
						 uint32_t n)
{
	struct shm_sqe *q = &ep->tx->sq[t % SHM_SQ];
	uint64_t dst;

	if (!shm_sq_direct(ep, t, p->line.op, p->wr.addr, p->line.len, &dst))
		return -EAGAIN;
	entry_publish(ep, p, q, t, n, NULL, true, dst);
	return 0;
}

/*
 * A prepared entry posted alone (SHM_PWR_ENTRY): under send_fast's
 * conditions (connected, nothing pending, room in the ring, no side dead,
 * and behind entries the receiver runs alone, unsignaled, or none not
 * run), its line, payload and immediate into the next entry, published.
 * -EAGAIN, with nothing done, for anything else.
 */
static inline __attribute__((always_inline)) int post_entry(struct shm_ep *ep,
							    struct shm_pwr *p)
{
	struct shm_dir *tx = ep->tx;
	const uint8_t *src = (const uint8_t *)(uintptr_t)p->wr.addr;
	uint32_t len = p->line.len, t, n;
	struct shm_sqe *q;

	if (ep->pend || ep->state != SHM_EP_CONNECTED || !ep->peer_seg ||
	    len > SHM_INLINE)
		return -EAGAIN;
	t = atomic_load_explicit(&tx->sq_tail, memory_order_relaxed);
	n = t - ep->sq_reaped;
	if (n >= ep->attr.max_send_wr || n >= SHM_SQ ||
	    atomic_load_explicit(&ep->cseg->dead[0], memory_order_relaxed) ||
	    atomic_load_explicit(&ep->cseg->dead[1], memory_order_relaxed))
		return -EAGAIN;
	/* sq_want but for the sides dead, just looked at */
	if (n && (ep->sq_note - 1 - ep->sq_reaped < n || shm_sq_many(ep, n)) &&
	    t != atomic_load_explicit(&tx->sq_exec, memory_order_relaxed))
		return -EAGAIN;
	if (len >= SHM_DIRECT_MIN && !post_direct(ep, p, t, n))
		return 0;
	q = &tx->sq[t % SHM_SQ];
	/* the payload past the first line first (see sq_put) */
	if (len > SHM_SQE_HEAD) {
		memcpy(q->data + SHM_SQE_HEAD, src + SHM_SQE_HEAD,
		       len - SHM_SQE_HEAD);
		shm_sq_lines_demote(q, len);
	}
	entry_publish(ep, p, q, t, n, src, false, 0);
	return 0;
}

/*
 * A prepared RDMA WRITE posted alone (SHM_PWR_WRITE), when a WR posted
 * now would run next (nothing of ours queued, unexecuted or not reaped,
 * no side dead: sq_idle) and the target is mapped here: the key checked
 * and the copy made, as rw_now does. -EAGAIN, with nothing done, for
 * anything else.
 */
static inline __attribute__((always_inline)) int post_write(struct shm_ep *ep,
							    struct shm_pwr *p)
{
	struct shm_dir *tx = ep->tx;
	uint32_t len = p->line.len, e;
	uint64_t raddr = p->line.raddr, v;
	struct shm_mem_ref ref;
	void *t;

	if (ep->pend || ep->state != SHM_EP_CONNECTED || !ep->peer_seg || !len)
		return -EAGAIN;
	e = atomic_load_explicit(&tx->sq_exec, memory_order_acquire);
	if (e != ep->sq_reaped ||
	    e != atomic_load_explicit(&tx->sq_tail, memory_order_relaxed) ||
	    atomic_load(&ep->cseg->dead[0]) || atomic_load(&ep->cseg->dead[1]))
		return -EAGAIN;
	if (!shm_mr_seen_ok(&ep->mr_seen[0], ep->peer_seg, p->line.rkey, raddr,
			    len, RCX_ACCESS_REMOTE_WRITE, &ref))
		return -EAGAIN;
	t = ep->peer_pid == ep->dev->pid ? (void *)(uintptr_t)raddr
					 : shm_mem_peer(ep, &ref, raddr);
	if (!t)
		return -EAGAIN;
	if (len == 8) { /* a word (a credit): one store */
		memcpy(&v, (const void *)(uintptr_t)p->wr.addr, 8);
		memcpy(t, &v, 8);
	} else {
		memmove(t, (const void *)(uintptr_t)p->wr.addr, len);
	}
	if (p->line.signaled)
		shm_cqe_push(ep, p->wr.wr_id, RCX_OP_WRITE, 0, len);
	/* a waiter of the peer's may sleep until a write lands */
	shm_post_wake(ep->dev, ep, true, false, false);
	return 0;
}

/* the generic post's WR: the line's fields, the immediate */
static inline void pwr_sync(struct shm_pwr *p)
{
	p->wr.imm = be32toh(p->imm_be);
	p->wr.length = p->line.len;
	p->wr.remote_addr = p->line.raddr;
}

/*
 * n prepared WRs as one list: queued, then executed and reaped once;
 * *posted those before the one refused (n: all went, or none named)
 */
static inline __attribute__((always_inline)) int pwr_post(struct rcx_ep *e,
							  struct rcx_pwr **pp,
							  int n, bool recv,
							  int *posted)
{
	struct rcx_wr *bad = NULL, *next = NULL;
	int i, ret;

	for (i = n - 1; i >= 0; i--) {
		struct shm_pwr *p = to_spwr(pp[i]);

		if (!recv)
			pwr_sync(p);
		p->wr.next = next;
		next = &p->wr;
	}
	ret = recv ? shm_post_recv(e, next, &bad)
		   : shm_post_send(e, next, &bad);
	for (i = 0; ret && i < n; i++)
		if (bad == &to_spwr(pp[i])->wr)
			break;
	*posted = ret ? i : n;
	return ret;
}

/* one prepared send WR alone, by its own path: -EAGAIN, nothing done,
 * where the generic post takes it */
static inline __attribute__((always_inline)) int post_fast(struct rcx_ep *e,
							   struct rcx_pwr *pub)
{
	struct shm_pwr *p = to_spwr(pub);

	if (p->kind == SHM_PWR_ENTRY)
		return post_entry(to_sep(e), p);
	if (p->kind == SHM_PWR_WRITE)
		return post_write(to_sep(e), p);
	return -EAGAIN;
}

static inline __attribute__((always_inline)) int post_one(struct rcx_ep *e,
							  struct rcx_pwr *pub)
{
	int k;

	if (!post_fast(e, pub))
		return 0;
	return pwr_post(e, &pub, 1, false, &k);
}

int shm_pwr_post(struct rcx_ep *e, struct rcx_pwr **p, int n)
{
	int k;

	if (n == 1)
		return post_one(e, p[0]);
	return pwr_post(e, p, n, false, &k);
}

int shm_pwr_post_recv(struct rcx_ep *e, struct rcx_pwr **p, int n)
{
	int k;

	return pwr_post(e, p, n, true, &k);
}

int shm_pwr_post_list(struct rcx_ep *e, struct rcx_pwr **p, int n, int recv,
		      int *posted)
{
	if (n == 1 && !recv && !post_fast(e, p[0])) {
		*posted = 1;
		return 0;
	}
	return pwr_post(e, p, n, recv, posted);
}

/*
 * ops.pwr_direct: the post of one prepared WR, in the shape of a
 * driver's (a positive errno). qp stands for the endpoint and the WR for
 * the prepared one: the caller passes them back, never reads them.
 */
static int direct_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad)
{
	int ret = post_one((struct rcx_ep *)(void *)qp,
			   (struct rcx_pwr *)(void *)wr);

	if (ret)
		*bad = wr;
	return -ret;
}

static int direct_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	struct shm_pwr *p = (struct shm_pwr *)(void *)wr;
	struct rcx_wr *b;
	int ret;

	p->wr.next = NULL; /* a list post's link */
	ret = shm_post_recv((struct rcx_ep *)(void *)qp, &p->wr, &b);
	if (ret)
		*bad = wr;
	return -ret;
}

int shm_pwr_direct(struct rcx_ep *e, struct rcx_pwr *p, int recv,
		   struct rcx_pwr_direct *d)
{
	if (p->ops != &rcx__shm_ops)
		return -EOPNOTSUPP;
	memset(d, 0, sizeof(*d));
	d->qp = (struct ibv_qp *)(void *)e;
	if (recv) {
		d->recv = direct_recv;
		d->rwr = (struct ibv_recv_wr *)(void *)p;
	} else {
		d->send = direct_send;
		d->swr = (struct ibv_send_wr *)(void *)p;
	}
	return 0;
}
