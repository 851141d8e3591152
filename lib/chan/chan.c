/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels: the fast path (bind, free and rebind are in
 * chan_bind.c; a write_imm receiver's immediates in chan_imm.c).
 *
 * Decided at bind time: memory registered once, a prepared WR per
 * channel; rcx_start patches an address (and the immediate) and posts
 * once. Completions come back through the context CQ with wr_id pointing
 * at the channel: no lookup.
 *
 * One message in flight and slot ownership: a receiving channel's slot
 * belongs to the program until it starts the next receive.
 *  - send protocol: the k-th start posts the receive for slot k; a message
 *    that arrives earlier is refused with an RNR NAK and retried by the
 *    sender's HCA (rnr_retry 7, min RNR timer 10 us): no data lands early.
 *    A message that goes inline completes its start at the post (the
 *    buffer is the program's again once the post returns), unsignaled but
 *    one in CH_SIG_EVERY; the set's ring keeps a copy of each until a
 *    signaled completion retires it (IBA 10.8.6: it follows every WR
 *    posted before it), for a remake to send again. CH_UNACK bounds the
 *    copies, and so how far the sender runs ahead of the receiver's
 *    receives (the RNR retries hold the rest back). A write_imm sender's
 *    inline message does the same once its credit is there.
 *  - write_imm protocol: RDMA WRITE has no such guard, so the receiver's
 *    starts RDMA-WRITE its start count into the sender's ready[] word
 *    (inline, mostly unsignaled; W > 1 when the channel has slots of its
 *    own to spare) and the sender posts message k only when
 *    ready > k - (W - 1): into a slot given back. The receiver writes
 *    its credit once in W starts, once in W / 2 from W = 8 on: then each
 *    credit comes W / 2 messages before it is needed, and on verbs the
 *    next progress pass writes it, after what the program posts
 *    meanwhile (credit_later). docs/design.md has the arithmetic.
 */
#include <errno.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include "lib/chan/chan_int.h"

/* ---- completion of the set's bind or free */
void rcx__chan_eph_done(struct chset *s, int err)
{
	struct rcx_req *e = s->eph;

	RCX__LOG(RCX__LOG_DEBUG, "chan", "bind of %d %s channel(s), %s: %s",
		 s->n, s->is_send ? "sending" : "receiving",
		 s->proto == RCX_CHAN_WRITE_IMM ? "write_imm" : "send",
		 err ? rcx_strerror(err) : "up");
	s->eph = NULL;
	/* up: paired with its companion, if it has one up already */
	if (!err && s->companion && s->state == SET_UP)
		rcx__chan_pair(s);
	if (e && e->state == RCX__REQ_ACTIVE) {
		e->obj = NULL;
		rcx__req_complete(e, err);
	}
}

bool rcx__chan_peer_dead(const struct chset *s)
{
	const struct rcx__conn *c;
	int peer = s->ch[0].peer;

	if (s->peer_gone)
		return true;
	if (!s->g || peer < 0 || peer >= s->g->size)
		return false;
	if (s->g->failed[peer])
		return true;
	c = rcx__chan_set_conn(s);
	return c && c->state == RCX__CONN_FAILED &&
	       !rcx__err_transport(c->error);
}

void rcx__chan_set_fail(struct chset *s, int err)
{
	int i;

	if (s->state == SET_FAILED)
		return;
	if (rcx__err_transport(err) && rcx__chan_peer_dead(s))
		err = RCX_ERR_PROC_FAILED;
	if (rcx__chan_remake(s, err))
		return;
	s->state = SET_FAILED;
	s->error = err;
	rcx__chan_unpair(s);
	for (i = 0; i < s->n; i++) {
		struct chan *c = &s->ch[i];

		if (c->req && c->req->state == RCX__REQ_ACTIVE) {
			c->deferred = false;
			/* its WR flushes later: the set waits for it */
			if (c->mode == CH_RECV && s->ep && !c->flushing) {
				c->flushing = true;
				s->inflight++;
			}
			rcx__req_complete(c->req, err);
		}
	}
	rcx__chan_eph_done(s, err);
	rcx__chan_tell_broken(s, err);
}

/* ---- the fast path: a start patches and posts, a completion reports */

/*
 * A channel with more than one slot: advance the circular slot without a
 * division (by n slots for channel i of a bundle of n, so the bundle
 * takes the slots round robin: channel i's k-th start uses slot
 * (i + k * n) mod slots); the offset of the slot this start uses.
 */
static inline uint64_t next_slot(struct chan *c)
{
	uint64_t off = c->next_off;

	c->cur_slot = c->next_slot;
	c->next_slot += c->slot_step;
	c->next_off += c->step_off;
	if (c->next_slot >= (int)c->slots) {
		c->next_slot -= (int)c->slots;
		c->next_off -= c->wrap_off;
	}
	return off;
}

/*
 * send protocol sender: the message c->count goes into the set's ring
 * (signaled: a completion comes for it; early: its start completed)
 */
static inline void ring_push(struct chset *s, struct chan *c, bool sig,
			     bool early)
{
	struct chring *q = s->ring;
	struct chtx *e = &q->e[q->tail++ & q->mask];

	e->c = c;
	e->count = c->count;
	e->slot = c->cur_slot;
	e->prev = (uint16_t)q->unsig;
	e->sig = sig;
	e->early = early;
	q->early += early;
	q->unsig = sig ? 0 : q->unsig + 1;
}

/* ... the last one pushed did not go: off the ring */
static void ring_undo(struct chset *s)
{
	struct chring *q = s->ring;
	struct chtx *e = &q->e[--q->tail & q->mask];

	q->unsig = e->prev;
	q->early -= e->early;
	if (e->sig)
		s->inflight--;
}

/* the start whose message e is waited for it: it arrived */
static void ring_done(const struct chtx *e)
{
	struct chan *c = e->c;
	struct rcx_req *r = c->req;

	if (!r || r->state != RCX__REQ_ACTIVE || c->held)
		return;
	r->status.slot = e->slot;
	r->status.count = c->len;
	rcx__req_complete(r, 0);
}

/* the ring's head is retired: it arrived */
static inline bool ring_pop(struct chring *q)
{
	const struct chtx *e = &q->e[q->head++ & q->mask];

	if (e->early)
		q->early--;
	else
		ring_done(e);
	return e->sig;
}

void rcx__chan_ring_retire(struct chset *s, uint32_t upto)
{
	struct chring *q = s->ring;

	while (q && q->head != upto && q->head != q->tail)
		ring_pop(q);
}

/*
 * After a remake: the messages the receiver did not complete (cnt[i]:
 * channel i's completed) go again in the order first posted, signaled,
 * from their copies or (a start under way) the program's slot; those it
 * completed are retired.
 */
int rcx__chan_ring_replay(struct chset *s, const uint64_t *cnt)
{
	struct chring *q = s->ring;
	uint32_t i, j;
	int ret = 0;

	if (!q)
		return 0;
	q->early = 0;
	q->unsig = 0;
	for (i = j = q->head; i != q->tail; i++) {
		struct chtx e = q->e[i & q->mask];

		if (cnt[e.c->idx] >= e.count) {
			if (!e.early)
				ring_done(&e);
			continue;
		}
		if (e.early && i != j)
			memmove(q->data + (size_t)(j & q->mask) * q->dlen,
				q->data + (size_t)(i & q->mask) * q->dlen,
				q->dlen);
		e.sig = 1;
		q->early += e.early;
		q->e[j++ & q->mask] = e;
	}
	q->tail = j;
	for (i = q->head; i != q->tail && !ret; i++) {
		struct chtx *e = &q->e[i & q->mask];
		struct chan *c = e->c;
		uint64_t src =
			(uintptr_t)c->buf + (uint64_t)e->slot * c->stride;

		if (e->early)
			src = (uintptr_t)(q->data +
					  (size_t)(i & q->mask) * q->dlen);
		/* inline: the copy needs no registration */
		*c->wr_addr = src;
		if (c->mode == CH_WSEND) {
			*c->wr_raddr =
				s->peer_data + (uint64_t)e->slot * c->stride;
			*c->wr_imm = ch_imm(c, e->count);
		}
		s->inflight++;
		ret = s->ctx->ops->pwr_post(s->ep, &c->pwr, 1);
		if (ret)
			s->inflight--;
		if (!c->multi)
			*c->wr_addr = (uintptr_t)c->buf;
	}
	return ret;
}

/* sender: patch the WR for the next message (one slot: nothing to patch) */
static inline void send_prep(struct chan *c)
{
	uint64_t off;

	c->count++;
	if (c->multi) {
		off = next_slot(c);
		*c->wr_addr = (uintptr_t)c->buf + off;
		if (c->mode == CH_WSEND)
			*c->wr_raddr = c->set->peer_data + off;
	}
	if (c->mode == CH_WSEND)
		*c->wr_imm = ch_imm(c, c->count);
	c->set->inflight++;
	if (c->set->ring)
		ring_push(c->set, c, true, false);
}

/* receiver: patch the receive (send protocol) or set the credit */
static inline void recv_prep(struct chan *c)
{
	uint64_t off;

	c->count++;
	if (c->multi) {
		off = next_slot(c);
		if (c->mode == CH_RECV)
			*c->wr_addr = (uintptr_t)c->buf + off;
	}
	if (c->mode == CH_WRECV)
		*c->credit_w = c->count;
}

/* the channel's prepared WR alone: the driver's own post where it has one */
static inline int post_send1(struct chan *c)
{
	if (RCX__LIKELY(c->d.send != NULL))
		return -c->d.send(c->d.qp, c->d.swr, &c->bad.send);
	return c->post(c->set->ep, &c->pwr, 1);
}

/* ... its unsignaled twin (send protocol, inline) */
static inline int post_usend1(struct chan *c)
{
	if (RCX__LIKELY(c->ud.send != NULL))
		return -c->ud.send(c->ud.qp, c->ud.swr, &c->bad.send);
	return c->post(c->set->ep, &c->upwr, 1);
}

static inline int post_recv1(struct chan *c)
{
	if (RCX__LIKELY(c->d.recv != NULL))
		return -c->d.recv(c->d.qp, c->d.rwr, &c->bad.recv);
	return c->post(c->set->ep, &c->pwr, 1);
}

static void defer(struct chan *c)
{
	struct rcx_ctx *ctx = c->set->ctx;

	c->deferred = true;
	c->next_deferred = ctx->chan_deferred;
	ctx->chan_deferred = c;
	rcx__chan_work(ctx);
}

/*
 * write_imm sender: may the next message go? The receiver has started at
 * least once, and its starts are at most lag messages behind: the slot
 * the message goes to is one the receiver has given back. Its credit is
 * its word's, or the one companion messages brought, if larger.
 */
static inline bool has_credit(const struct chan *c)
{
	uint64_t r = *c->ready;

	if (RCX__UNLIKELY(c->ride_ready > r))
		r = c->ride_ready;
	return r + c->lag > c->count && r;
}

/*
 * write_imm receiver: a message that arrived before its start completes
 * the start at once. Off the fast path's frame.
 */
static __attribute__((noinline)) void early_done(struct chan *c)
{
	struct rcx_req *r = c->req;

	c->early--;
	r->status.slot = c->cur_slot;
	r->status.count = c->set->peer_len;
	rcx__req_complete(r, 0);
}

/* write_imm receiver: does this start write the credit? (ch_credit_every) */
static inline bool credit_due(struct chan *c)
{
	if (--c->credit_in)
		return false;
	c->credit_in = (uint32_t)c->set->credit_every;
	return true;
}

/* the receiver has started each of the m channels from c0 */
static bool fuse_ready(const struct chan *c0, int m)
{
	int t;

	for (t = 0; t < m; t++)
		if (!has_credit(&c0[t]))
			return false;
	return true;
}

/* ... or none of them */
static bool fuse_none(const struct chan *c0, int m)
{
	int t;

	for (t = 0; t < m; t++)
		if (has_credit(&c0[t]))
			return false;
	return true;
}

/*
 * write_imm sender, bundle on contiguous slots (stride == len): channels
 * started together that are consecutive in the bundle, at the same start
 * count, take consecutive slots at both ends, so one WRITE_IMM carries
 * them all; its immediate names the first channel and how many. The
 * receiver completes each as if it had come alone. Only when the
 * receiver has started all of them or none: it may wait for the ones it
 * started before it starts the others, so those cannot wait for these.
 */
static bool fusable(struct chset *s, struct rcx_req **reqs, int m)
{
	struct chan *c0 = to_chan(reqs[0]);
	int t;

	if (!s->fuse_pwr || s->fuse_busy || m < 2 || m > s->n - c0->idx ||
	    (size_t)m * c0->len > CH_FUSE_MAX ||
	    c0->next_slot + m > (int)c0->slots)
		return false;
	for (t = 1; t < m; t++) {
		struct chan *c = to_chan(reqs[t]);

		if (c != c0 + t || c->count != c0->count)
			return false;
	}
	return fuse_ready(c0, m) || fuse_none(c0, m);
}

/* post channels c0 .. c0 + m - 1 as one WRITE_IMM */
static int fuse_post(struct chset *s, struct chan *c0, int m)
{
	struct rcx_pwr *p = s->fuse_pwr;
	uint64_t off = c0->next_off;
	int t, ret;

	for (t = 0; t < m; t++) {
		c0[t].count++;
		next_slot(&c0[t]);
	}
	*p->addr = (uintptr_t)c0->buf + off;
	*p->remote_addr = s->peer_data + off;
	*p->length = (uint32_t)((size_t)m * c0->len);
	*p->imm_be = htobe32(CH_IMM(c0->idx, m, c0->count));
	s->fuse_lo = c0->idx;
	s->fuse_m = m;
	s->inflight++;
	ret = s->ctx->ops->pwr_post(s->ep, &p, 1);
	if (ret) { /* nothing will complete: the set fails */
		s->inflight--;
		s->fuse_busy = false;
	}
	return ret;
}

/* start m fusable channels: post them, or wait for the credits as one */
static int fuse_start(struct chset *s, struct rcx_req **reqs, int m)
{
	struct chan *c0 = to_chan(reqs[0]);
	int t;

	for (t = 0; t < m; t++) {
		reqs[t]->state = RCX__REQ_ACTIVE;
		reqs[t]->status.error = 0;
	}
	s->fuse_busy = true;
	if (fuse_ready(c0, m))
		return fuse_post(s, c0, m);
	c0->fuse_m = (uint8_t)m;
	defer(c0);
	return 0;
}

static void on_fuse_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       const struct rcx_cqe *cqe)
{
	struct chset *s =
		(struct chset *)((char *)w - offsetof(struct chset, fuse_wrc));
	int lo = s->fuse_lo, m = s->fuse_m, t;

	s->inflight--;
	s->fuse_busy = false;
	if (RCX__UNLIKELY(cqe->status)) {
		rcx__stats_cqe(&ctx->st, cqe->status);
		rcx__chan_set_fail(s, wc_err(s, cqe->status));
		return;
	}
	for (t = lo; t < lo + m; t++) {
		struct rcx_req *r = s->ch[t].req;

		if (!r || r->state != RCX__REQ_ACTIVE)
			continue; /* failed or freed meanwhile (on_chan_wc) */
		r->status.slot = s->ch[t].cur_slot;
		r->status.count = s->ch[t].len;
		rcx__req_complete(r, 0);
	}
}

/* Channel c's start, whose post did not go, undone: inactive again. */
static void start_undo(struct chan *c)
{
	struct chset *s = c->set;

	c->count--;
	if (c->is_send && s->ring) {
		ring_undo(s);
	} else if (c->is_send) {
		s->inflight--;
	} else if (c->mode == CH_WRECV) {
		/* only a credit's post fails: the next start writes it */
		*c->credit_w = c->count;
		c->credit_in = 1;
		s->credits_sent--;
	}
	c->req->state = RCX__REQ_INACTIVE;
}

/*
 * Starts whose post the device refused (a full queue, a queue pair in
 * error: nothing of them went), the m channels cs[] of set s, are undone,
 * and the set's transport is taken for broken (err is the provider's,
 * never the peer's doing). A remake takes them as starts made meanwhile:
 * held, and made once the set is up (0). Else the set fails at both ends
 * (the peer is told, so it does not wait for these messages or credits)
 * and the start returns the set's error, RCX_ERR_TRANSPORT, the requests
 * inactive. Starts of the set whose posts went are in flight: their
 * completions (or flushes) come, as any other's when a set breaks.
 */
static __attribute__((noinline)) int starts_refused(struct chset *s,
						    struct chan **cs, int m,
						    int err)
{
	int t;

	for (t = 0; t < m; t++)
		start_undo(cs[t]);
	rcx__log(RCX__LOG_WARN, "chan",
		 "%s set of %d to rank %d: post of channel %d (%d of a list) "
		 "refused: %s",
		 s->is_send ? "sending" : "receiving", s->n, cs[0]->peer,
		 cs[0]->idx, m, rcx_strerror(err));
	rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
	if (s->state != SET_REMAKE)
		return s->state == SET_FAILED ? s->error : RCX_ERR_TRANSPORT;
	for (t = 0; t < m; t++)
		rcx__chan_hold(cs[t]->req);
	return 0;
}

static __attribute__((noinline)) int start_failed(struct rcx_req *r, int err)
{
	struct chan *c = r->obj;

	return starts_refused(c->set, &c, 1, err);
}

/*
 * A message that goes inline (send protocol; write_imm with its credit):
 * its entry and copy in the ring, the post (unsignaled but one in
 * CH_SIG_EVERY: the entry's unsig is then 0), and the start is complete.
 * A call of its own, so the other starts keep a small frame; only the
 * channel is kept across the calls.
 */
static __attribute__((noinline)) int send_early(struct chan *c)
{
	struct chring *q = c->set->ring;
	uint32_t t = q->tail;
	uint64_t off = 0;
	struct rcx_req *r;
	bool sig = q->unsig >= CH_SIG_EVERY - 1;
	int ret;

	c->count++;
	if (c->multi) {
		off = next_slot(c);
		*(sig ? c->wr_addr : c->uwr_addr) = (uintptr_t)c->buf + off;
	}
	if (c->mode == CH_WSEND) {
		if (c->multi)
			*(sig ? c->wr_raddr : c->uwr_raddr) =
				c->set->peer_data + off;
		*(sig ? c->wr_imm : c->uwr_imm) = ch_imm(c, c->count);
	}
	ring_push(c->set, c, sig, true);
	memcpy(q->data + (size_t)(t & q->mask) * q->dlen, c->buf + off, c->len);
	if (RCX__UNLIKELY(sig)) {
		c->set->inflight++;
		ret = post_send1(c);
	} else {
		ret = post_usend1(c);
	}
	r = c->req;
	if (RCX__UNLIKELY(ret))
		return start_failed(r, ret);
	r->status.slot = c->cur_slot;
	r->status.count = c->len;
	rcx__req_complete(r, 0);
	return 0;
}

/* a start of a set that is not up: held (remade), or its error */
static __attribute__((noinline)) int start_not_up(struct rcx_req *r,
						  const struct chset *s)
{
	if (s->state == SET_REMAKE)
		return rcx__chan_hold(r);
	return s->state == SET_FAILED ? s->error : -EAGAIN;
}

/*
 * write_imm receiver: the credit (one in window starts), and a message
 * that came before the start completes it
 */
static __attribute__((noinline)) int wrecv_start(struct chan *c)
{
	int ret = 0;

	c->count++;
	if (c->multi)
		next_slot(c);
	*c->credit_w = c->count;
	if (credit_due(c)) {
		/* a message there already: no reply comes before its test;
		 * else the next pass writes it, or a companion message
		 * carries it before that */
		if ((c->set->credit_later || c->set->mate) && !c->early)
			rcx__chan_credit_later(c);
		else
			ret = ch_credit_post(c);
	}
	if (RCX__UNLIKELY(ret))
		return start_failed(c->req, ret);
	if (RCX__UNLIKELY(c->early))
		early_done(c);
	return 0;
}

/*
 * The fast path: one channel, one post. A sender posts at once (send
 * protocol) or when the receiver's credit is there (write_imm); a receiver
 * posts its receive (send) or writes its credit (write_imm). What was
 * checked at bind is not checked again. Only the channel is kept across
 * the post (a refused one is undone from it).
 */
static int chan_start(struct rcx_req *r)
{
	struct chan *c = r->obj;
	struct chset *s = c->set;
	int ret;

	if (RCX__UNLIKELY(s->state != SET_UP))
		return start_not_up(r, s);
	r->state = RCX__REQ_ACTIVE;
	r->status.error = 0;
	if (c->mode == CH_SEND) {
		if (RCX__LIKELY(c->upwr != NULL) && s->ring->early < CH_UNACK)
			return send_early(c);
		send_prep(c);
		ret = post_send1(c);
	} else if (c->mode == CH_RECV) {
		recv_prep(c);
		ret = post_recv1(c);
	} else if (c->mode == CH_WSEND) {
		if (!has_credit(c)) {
			defer(c); /* no credit yet: posted by progress */
			return 0;
		}
		if (c->upwr != NULL && s->ring->early < CH_UNACK)
			return send_early(c);
		send_prep(c);
		ret = post_send1(c);
	} else {
		return wrecv_start(c);
	}
	if (RCX__UNLIKELY(ret))
		return start_failed(c->req, ret);
	return 0;
}

/*
 * chan_start of a send protocol receiver with one slot and the driver's
 * own post (the kind's start for these, rcx__chan_set_fast), the set
 * up: the receive's post and nothing else; a set not up: chan_start.
 * While the set is up its status's error is 0 (a start that failed
 * completed with the set's failure, for good; chan_kind).
 */
static int chan_recv_start(struct rcx_req *r)
{
	struct chan *c = r->obj;
	int ret;

	if (RCX__UNLIKELY(c->set->state != SET_UP))
		return chan_start(r);
	r->state = RCX__REQ_ACTIVE;
	c->count++;
	ret = c->d.recv(c->d.qp, c->d.rwr, &c->bad.recv);
	if (RCX__UNLIKELY(ret))
		return start_failed(c->req, -ret);
	return ret;
}

/* chan_send_start's post that the device refused: undone as any start's */
static __attribute__((noinline)) int send1_refused(struct chan *c, int err)
{
	struct rcx_req *r = c->req;

	r->state = RCX__REQ_ACTIVE;
	r->status.error = 0;
	return start_failed(r, err);
}

/* ... its post when it goes signaled, one in CH_SIG_EVERY */
static __attribute__((noinline)) int send1_sig(struct chan *c)
{
	c->set->inflight++;
	return c->d.send(c->d.qp, c->d.swr, &c->bad.send);
}

/*
 * send_early of a send protocol sender with one slot, whose messages go
 * inline, posted by the driver's own post (the kind's start for these,
 * rcx__chan_set_fast), the set up and the ring with room: the ring's
 * entry (ring_push's, its slot 0) and copy, the post (unsignaled but one
 * in CH_SIG_EVERY), and the start is complete, never active. The
 * status's slot and count were set with the kind (one slot, one length).
 * Only the channel is kept across the calls. Anything else: chan_start.
 */
static int chan_send_start(struct rcx_req *r)
{
	struct chan *c = r->obj;
	struct chset *s = c->set;
	struct chring *q = s->ring;
	uint32_t t = q->tail, i = t & q->mask, unsig = q->unsig;
	struct chtx *e = &q->e[i];
	bool sig = unsig >= CH_SIG_EVERY - 1;
	int ret;

	if (RCX__UNLIKELY(s->state != SET_UP || q->early >= CH_UNACK))
		return chan_start(r);
	e->c = c;
	e->count = ++c->count;
	e->slot = 0;
	e->prev = (uint16_t)unsig;
	e->sig = sig;
	e->early = 1;
	q->tail = t + 1;
	q->early++;
	q->unsig = sig ? 0 : unsig + 1;
	memcpy(q->data + (size_t)i * q->dlen, c->buf, c->len);
	if (RCX__UNLIKELY(sig))
		ret = send1_sig(c);
	else
		ret = c->ud.send(c->ud.qp, c->ud.swr, &c->bad.send);
	if (RCX__UNLIKELY(ret))
		return send1_refused(c, -ret);
	r = c->req;
	r->state = RCX__REQ_DONE;
	/* nothing attached (user_freed: never, a channel's is persistent) */
	if (RCX__UNLIKELY((uintptr_t)r->done | (uintptr_t)r->cont))
		rcx__req_run_hooks(r);
	return 0;
}

/*
 * Start channels (reqs all of this kind): per set, one post list of the
 * senders that have credit or of the receives, or one credit write. A
 * list refused part-way: the channels whose WRs went are in flight, the
 * others undone as a refused start is (starts_refused).
 */
static int chan_start_many(struct rcx_req **reqs, int n)
{
	struct rcx_pwr *list[CH_MAX_BUNDLE + 1];
	struct chan *lc[CH_MAX_BUNDLE + 1]; /* whose list[] entry it is */
	int i, k, went, ret;

	for (i = 0; i < n; i++) {
		struct chan *c = to_chan(reqs[i]);

		if (c->set->state == SET_FAILED)
			return c->set->error;
		if (c->set->state == SET_REMAKE)
			return rcx__chan_hold_many(reqs, n);
		if (c->set->state != SET_UP)
			return -EAGAIN;
	}
	for (i = 0; i < n;) {
		struct chset *s = to_chan(reqs[i])->set;
		int j, lo = s->n, hi = -1;

		for (j = i; j < n && to_chan(reqs[j])->set == s; j++)
			;
		if (s->is_send && fusable(s, reqs + i, j - i)) {
			ret = fuse_start(s, reqs + i, j - i);
			i = j;
			if (ret) {
				rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
				if (s->state != SET_REMAKE)
					return s->error;
			}
			continue;
		}
		k = 0;
		for (; i < j; i++) {
			struct chan *c = to_chan(reqs[i]);

			c->req->state = RCX__REQ_ACTIVE;
			c->req->status.error = 0;
			if (c->mode == CH_WSEND && !has_credit(c)) {
				defer(c);
				continue;
			}
			if (c->is_send) {
				send_prep(c);
				lc[k] = c;
				list[k++] = c->pwr;
				continue;
			}
			recv_prep(c);
			if (c->mode == CH_RECV) {
				lc[k] = c;
				list[k++] = c->pwr;
				continue;
			}
			if (credit_due(c)) {
				lo = c->idx < lo ? c->idx : lo;
				hi = c->idx + 1 > hi ? c->idx + 1 : hi;
			}
			if (c->early)
				early_done(c);
		}
		ret = 0;
		if (k)
			ret = s->ctx->ops->pwr_post_list(s->ep, list, k,
							 !s->is_send, &went);
		if (RCX__UNLIKELY(ret)) {
			ret = starts_refused(s, lc + went, k - went, ret);
			if (ret)
				return ret;
			continue;
		}
		if (hi > lo)
			ret = rcx__chan_credit_range(s, lo, hi);
		if (ret) {
			rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
			if (s->state != SET_REMAKE)
				return s->error;
		}
	}
	return 0;
}

/* Take s's channels off the context's deferred list (s is going). */
void rcx__chan_undefer(struct chset *s)
{
	struct chan **pp = (struct chan **)&s->ctx->chan_deferred, *c;

	while ((c = *pp)) {
		if (c->set == s) {
			*pp = c->next_deferred;
			c->deferred = false;
			c->fuse_m = 0;
		} else {
			pp = &c->next_deferred;
		}
	}
	rcx__chan_credits_of(s, false);
}

/*
 * A fused start waiting for its credits got some but not all: the
 * receiver started only those, and may wait for them before it starts
 * the rest. Each channel waits alone now, the others right after c0 on
 * the list (this pass looks at them too).
 */
static void fuse_split(struct chan *c0, int m)
{
	int t;

	c0->set->fuse_busy = false;
	c0->fuse_m = 0;
	for (t = m - 1; t > 0; t--) {
		c0[t].deferred = true;
		c0[t].next_deferred = c0->next_deferred;
		c0->next_deferred = &c0[t];
	}
}

/* Senders waiting for the receiver's credit: called from progress. */
void rcx__chan_progress(struct rcx_ctx *ctx)
{
	struct chan **pp = (struct chan **)&ctx->chan_deferred, *c;

	while ((c = *pp)) {
		int m = c->fuse_m, ret;

		if (!c->deferred) {
			*pp = c->next_deferred;
			c->fuse_m = 0;
			continue;
		}
		if (m && !fuse_ready(c, m) && !fuse_none(c, m)) {
			fuse_split(c, m);
			m = 0;
		}
		if (m ? !fuse_ready(c, m) : !has_credit(c)) {
			pp = &c->next_deferred;
			continue;
		}
		*pp = c->next_deferred;
		c->deferred = false;
		c->fuse_m = 0;
		if (m) {
			ret = fuse_post(c->set, c, m);
		} else {
			send_prep(c);
			ret = post_send1(c);
			if (ret)
				c->set->inflight--;
		}
		/* a post that fails here is no process failure */
		if (ret)
			rcx__chan_set_fail(c->set, RCX_ERR_TRANSPORT);
	}
	rcx__chan_work(ctx);
}

static void on_ring_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       uint32_t byte_len, uint32_t imm, int has_imm);

static void on_chan_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       const struct rcx_cqe *cqe)
{
	struct chan *c = (struct chan *)w;
	struct rcx_req *r = c->req;

	if (c->is_send && c->set->ring && !cqe->status) {
		on_ring_ok(ctx, w, cqe->byte_len, cqe->imm, cqe->has_imm);
		return;
	}
	if (c->is_send)
		c->set->inflight--;
	/*
	 * A receive of the send protocol that an RDMA write with immediate
	 * took: its data went where the peer wrote it, byte_len says nothing
	 * about this slot. Not the protocol the ends agreed on. (A sender's
	 * own WRITE_IMM may complete with the immediate flag: rxe sets it.)
	 */
	if (RCX__UNLIKELY(cqe->status || (cqe->has_imm && !c->is_send))) {
		rcx__stats_cqe(&ctx->st, cqe->status);
		if (c->flushing) {
			c->flushing = false;
			c->set->inflight--;
		}
		/* this WR is reaped now: the failing set must not count it
		 * as one still to flush (it would wait, then leak the set) */
		c->flushing = true;
		rcx__chan_set_fail(c->set,
				   !cqe->status ? RCX_ERR_PROTO
						: wc_err(c->set, cqe->status));
		c->flushing = false;
		return;
	}
	/*
	 * A WR of a failed set, whose start the failure completed already:
	 * its completion, polled late, reports nothing, and the channel may
	 * have been freed meanwhile (c->req NULL: set_destroy reaps it).
	 */
	if (RCX__UNLIKELY(!r || r->state != RCX__REQ_ACTIVE)) {
		if (c->flushing) { /* counted as one to flush: reaped */
			c->flushing = false;
			c->set->inflight--;
		}
		return;
	}
	r->status.slot = c->cur_slot;
	r->status.count = c->is_send ? c->len : cqe->byte_len;
	rcx__req_complete(r, 0);
}

/*
 * The fast path's completions, straight from the poll, one handler per
 * end (rcx__chan_set_wire): a channel whose start is still active gets
 * its message. Anything else (an immediate where the send protocol takes
 * none, a set that failed) goes through on_chan_wc.
 */
static void on_send_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       uint32_t byte_len, uint32_t imm, int has_imm)
{
	struct chan *c = (struct chan *)w;
	struct rcx_req *r = c->req;

	/* a sender's WRITE_IMM may complete with the immediate flag (rxe) */
	if (RCX__UNLIKELY(!r || r->state != RCX__REQ_ACTIVE)) {
		rcx__wc_ok_slow(ctx, w, byte_len, imm, has_imm);
		return;
	}
	c->set->inflight--;
	r->status.slot = c->cur_slot;
	r->status.count = c->len;
	rcx__req_complete(r, 0);
}

/*
 * send protocol sender: the oldest signaled send of the set completed
 * (a send queue completes in order): it and every message posted before
 * it arrived. A start that waited for one of them is complete.
 */
static void on_ring_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       uint32_t byte_len, uint32_t imm, int has_imm)
{
	struct chset *s = ((struct chan *)w)->set;
	struct chring *q = s->ring;

	uint32_t n = q->tail - q->head;
	const struct chtx *e = &q->e[(q->tail - 1) & q->mask];

	(void)ctx;
	(void)byte_len;
	(void)imm;
	(void)has_imm;
	s->inflight--;
	/*
	 * Every entry an early start's copy, the last one signaled and the
	 * n - 1 before it not (its prev counts them): this is the last's
	 * completion, and all go at once with no start to complete.
	 */
	if (RCX__LIKELY(n && q->early == n && e->sig && e->prev == n - 1)) {
		q->head = q->tail;
		q->early = 0;
		return;
	}
	while (q->head != q->tail && !ring_pop(q))
		;
}

/* ... a completion of an unsignaled one: it failed (or a provider
 * reports it anyway: nothing to do) */
static void on_usend_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			const struct rcx_cqe *cqe)
{
	struct chset *s =
		(struct chset *)((char *)w - offsetof(struct chset, uwrc));

	if (!cqe->status)
		return;
	rcx__stats_cqe(&ctx->st, cqe->status);
	rcx__chan_set_fail(s, wc_err(s, cqe->status));
}

/* ... the mark: what was posted before it is retired (when it went) */
static void on_mark_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       const struct rcx_cqe *cqe)
{
	struct chset *s =
		(struct chset *)((char *)w - offsetof(struct chset, mark_wrc));

	s->inflight--;
	s->mark_busy = false;
	if (!cqe->status) {
		rcx__chan_ring_retire(s, s->mark_upto);
		return;
	}
	rcx__stats_cqe(&ctx->st, cqe->status);
	if (s->state != SET_FAILED)
		rcx__chan_set_fail(s, wc_err(s, cqe->status));
}

static void on_recv_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       uint32_t byte_len, uint32_t imm, int has_imm)
{
	struct chan *c = (struct chan *)w;
	struct rcx_req *r = c->req;

	if (RCX__UNLIKELY(has_imm || !r || r->state != RCX__REQ_ACTIVE)) {
		rcx__wc_ok_slow(ctx, w, byte_len, imm, has_imm);
		return;
	}
	r->status.slot = c->cur_slot;
	r->status.count = byte_len;
	rcx__req_complete(r, 0);
}

/*
 * ... found by the direct poll of an rcx_test (rcx_wct.ok_test): the
 * start under that test is reported here, with no return through the
 * provider and the core. Anything else as on_recv_ok, then the report.
 */
static __attribute__((noinline)) int recv_test_other(struct rcx_ctx *ctx,
						     struct rcx__wrctx *w,
						     size_t byte_len)
{
	on_recv_ok(ctx, w, (uint32_t)byte_len, 0, 0);
	return rcx__peek_report(ctx, 1);
}

/*
 * The request under the test is active (rcx_test polled for it, and a
 * found_test hands an ok_test a completion only while it is,
 * rcx__peek_active): one that is it needs no look at its state. A
 * channel with one slot has slot 0 in its status for good (chan_kind).
 */
static inline __attribute__((always_inline)) int recv_test(struct rcx_ctx *ctx,
							   struct rcx__wrctx *w,
							   size_t byte_len)
{
	struct rcx_req *r = ((struct chan *)w)->req;

	/* nothing attached: done and cont tested as one */
	if (RCX__UNLIKELY(r != *ctx->peek_rp ||
			  ((uintptr_t)r->done | (uintptr_t)r->cont)))
		return recv_test_other(ctx, w, byte_len);
	r->status.count = byte_len;
	return rcx__peek_finish(ctx, r);
}

static int on_recv_test(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			size_t byte_len)
{
	return recv_test(ctx, w, byte_len);
}

/* ... of a channel with slots */
static int on_recv_test_slot(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			     size_t byte_len)
{
	struct chan *c = (struct chan *)w;

	c->req->status.slot = c->cur_slot;
	return recv_test(ctx, w, byte_len);
}

/*
 * write_imm sender with credit_imm: the receives its credits take are
 * given back in batches while the set lives (a credit that found none
 * would wait in RNR retries, and the free write behind it too). A post
 * that fails is the transport's failure here, not the peer's.
 */
static __attribute__((noinline)) bool credit_repost(struct chset *s)
{
	if (s->state == SET_FAILED || !rcx__chan_zrecv_post(s))
		return false;
	rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
	return true;
}

/*
 * write_imm sender with credit_imm: the receiver's credit for channels
 * [idx, idx + m) came as a WRITE with immediate, its words are in
 * ready[] already, and its completion woke a sleeping wait. The channel
 * the credit names that waits for it at the head of the deferred list
 * (the common case: one waits) goes at once; any other is posted by
 * progress after this poll (rcx__chan_progress).
 */
static void on_credit_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			 uint32_t byte_len, uint32_t imm, int has_imm)
{
	struct chset *s = zwrc_set(w);
	unsigned int idx = imm >> 24, m = ((imm >> 16) & 0xff) + 1;
	struct chan *c = ctx->chan_deferred;

	(void)byte_len;
	if (RCX__UNLIKELY(--s->zposted <= s->zmin) && credit_repost(s))
		return;
	if (RCX__UNLIKELY(s->state != SET_UP))
		return;
	if (RCX__UNLIKELY(!has_imm || idx + m > (unsigned int)s->n)) {
		rcx__chan_set_fail(s, RCX_ERR_PROTO);
		return;
	}
	if (!c || c->set != s || (unsigned int)c->idx - idx >= m ||
	    !c->deferred || c->fuse_m || !has_credit(c))
		return;
	ctx->chan_deferred = c->next_deferred;
	c->deferred = false;
	send_prep(c);
	if (post_send1(c)) {
		s->inflight--;
		rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
	}
	rcx__chan_work(ctx);
}

static void on_ctl_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		      const struct rcx_cqe *cqe)
{
	struct chset *s = (struct chset *)((char *)w -
					   offsetof(struct chset, credit_wrc));

	s->inflight--;
	rcx__stats_cqe(&ctx->st, cqe->status);
	if (cqe->status && s->state != SET_FAILED)
		rcx__chan_set_fail(s, wc_err(s, cqe->status));
}

static void on_free_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       const struct rcx_cqe *cqe)
{
	struct chset *s =
		(struct chset *)((char *)w - offsetof(struct chset, free_wrc));

	s->inflight--;
	/* a peer that is gone has freed its end, in effect */
	rcx__stats_cqe(&ctx->st, cqe->status);
	if (cqe->status)
		s->ctl->peer_free = 1;
}

/*
 * ---- the channel request kind: a test is a progress pass (no poll of
 * its own). Senders waiting for credit make the pass whole (their work
 * bit), which posts them after the completion queue's poll.
 */
const struct rcx__req_ops rcx__chan_ops = {
	.start = chan_start,
	.start_many = chan_start_many,
};

/* ... a send protocol receiver's, once its set is up */
static const struct rcx__req_ops chan_recv_ops = {
	.start = chan_recv_start,
	.start_many = chan_start_many,
};

/* ... a send protocol sender's whose messages go inline (chan_send_start) */
static const struct rcx__req_ops chan_send_ops = {
	.start = chan_send_start,
	.start_many = chan_start_many,
};

/*
 * The kind of c's request once its set is up, and what it fixes: the
 * status's error is 0 until the set fails (the error stays with it; a
 * remade set completed nothing with one), which the starts of the kinds
 * below rely on.
 */
static const struct rcx__req_ops *chan_kind(struct chan *c)
{
	struct rcx_req *r = c->req;

	r->status.error = 0;
	if (c->multi)
		return &rcx__chan_ops;
	/* one slot: slot 0 for good (on_recv_test writes the count alone) */
	r->status.slot = 0;
	if (c->mode == CH_RECV && c->d.recv)
		return &chan_recv_ops;
	if (c->mode == CH_SEND && c->upwr && c->ud.send && c->d.send) {
		r->status.count = c->len;
		return &chan_send_ops;
	}
	return &rcx__chan_ops;
}

void rcx__chan_set_wire(struct chset *s)
{
	int i;

	s->zwrc.cb = rcx__chan_on_imm;
	s->zwrc.ok = s->is_send ? on_credit_ok : rcx__chan_on_imm_ok;
	s->fuse_wrc.cb = on_fuse_wc;
	s->credit_wrc.cb = on_ctl_wc;
	s->free_wrc.cb = on_free_wc;
	s->uwrc.cb = on_usend_wc;
	s->mark_wrc.cb = on_mark_wc;
	for (i = 0; i < s->n; i++) {
		s->ch[i].wrc.cb = on_chan_wc;
		/* a send protocol sender's: on_ring_ok (set_fast) */
		s->ch[i].wrc.ok = s->is_send ? on_send_ok : on_recv_ok;
	}
}

void rcx__chan_set_fast(struct chset *s)
{
	const struct rcx_provider_ops *ops = s->ctx->ops;
	bool imm = s->proto == RCX_CHAN_WRITE_IMM;
	int i;

	s->credit_every = ch_credit_every(s->window, imm && s->credit_imm);
	s->credit_later = imm && !s->is_send && s->credit_imm &&
			  s->credit_every < s->window;
	for (i = 0; i < s->n; i++) {
		struct chan *c = &s->ch[i];

		c->is_send = s->is_send;
		c->multi = c->slots > 1;
		c->lag = imm ? (uint32_t)s->window - 1 : 0;
		c->credit_in = 1; /* the first start gives the credit */
		if (c->multi) {
			/* channel i starts at slot i, steps by n (mod slots) */
			c->next_slot = (int)((unsigned long)i % c->slots);
			c->next_off = (uint64_t)c->next_slot * c->stride;
			c->slot_step = (int)((unsigned long)s->n % c->slots);
			c->step_off = (uint64_t)c->slot_step * c->stride;
			c->wrap_off = (uint64_t)c->slots * c->stride;
		}
		c->post = ops->pwr_post;
		/* a test of the channel is the provider's direct poll */
		if (c->req)
			c->req->peek = rcx__req_peek(s->ctx);
		/* a send protocol receiver's test reports from its handler */
		c->wrc.ok_test = s->is_send || imm ? NULL
				 : c->multi	   ? on_recv_test_slot
						   : on_recv_test;
		if (s->is_send) {
			c->mode = imm ? CH_WSEND : CH_SEND;
			c->wrc.ok = s->ring ? on_ring_ok : on_send_ok;
			c->ready = &ready(s)[i];
			c->imm_hi = CH_IMM(i, 1, 0);
		} else {
			c->mode = imm ? CH_WRECV : CH_RECV;
			c->credit_w = &credit_src(s)[i];
			if (!imm)
				c->post = ops->pwr_post_recv;
		}
		memset(&c->d, 0, sizeof(c->d));
		if (c->pwr && c->mode != CH_WRECV &&
		    ops->pwr_direct(s->ep, c->pwr, c->mode == CH_RECV, &c->d))
			memset(&c->d, 0, sizeof(c->d));
		memset(&c->ud, 0, sizeof(c->ud));
		if (c->upwr && ops->pwr_direct(s->ep, c->upwr, 0, &c->ud))
			memset(&c->ud, 0, sizeof(c->ud));
		if (c->upwr) {
			c->uwr_addr = c->upwr->addr;
			c->uwr_raddr = c->upwr->remote_addr;
			c->uwr_imm = c->upwr->imm_be;
		}
		if (c->pwr) {
			c->wr_addr = c->pwr->addr;
			c->wr_raddr = c->pwr->remote_addr;
			c->wr_imm = c->pwr->imm_be;
		}
		if (c->req)
			c->req->ops = chan_kind(c);
	}
}
