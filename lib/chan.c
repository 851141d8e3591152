/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels: the fast path (bind, free and rebind are in
 * chan_bind.c).
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
 *  - write_imm protocol: RDMA WRITE has no such guard, so the receiver's
 *    k-th start RDMA-WRITEs its start count into the sender's ready[] word
 *    (inline, mostly unsignaled) and the sender posts message k only when
 *    ready > k. On RC the credit write precedes later traffic of the same
 *    QP, so a receiver that starts its receive before replying never
 *    delays the peer.
 */
#include <errno.h>
#include <endian.h>
#include "chan_int.h"

/* ---- completion of the set's bind or free */
void rcx__chan_eph_done(struct chset *s, int err)
{
	struct rcx_req *e = s->eph;

	s->eph = NULL;
	if (e && e->state == RCX__REQ_ACTIVE) {
		e->obj = NULL;
		rcx__req_complete(e, err);
	}
}

void rcx__chan_set_fail(struct chset *s, int err)
{
	int i;

	if (s->state == SET_FAILED)
		return;
	s->state = SET_FAILED;
	s->error = err;
	for (i = 0; i < s->n; i++) {
		struct chan *c = &s->ch[i];

		if (c->req && c->req->state == RCX__REQ_ACTIVE) {
			c->deferred = false;
			rcx__req_complete(c->req, err);
		}
	}
	rcx__chan_eph_done(s, err);
}

/* ---- the fast path */

/* advance the circular slot: no division on the fast path */
static inline uint64_t next_slot(struct chan *c)
{
	uint64_t off = c->next_off;

	c->cur_slot = c->next_slot;
	if (++c->next_slot == (int)c->slots) {
		c->next_slot = 0;
		c->next_off = 0;
	} else {
		c->next_off += c->stride;
	}
	c->count++;
	return off;
}

static inline void post_send(struct chan *c)
{
	struct chset *s = c->set;
	uint64_t off;

	off = next_slot(c);
	*c->pwr->addr = (uintptr_t)c->buf + off;
	if (s->proto == RCX_CHAN_WRITE_IMM) {
		*c->pwr->remote_addr = s->peer_data + off;
		*c->pwr->imm_be = htobe32((uint32_t)c->idx << 24 |
					  (uint32_t)(c->count & 0xffffff));
	}
	s->inflight++;
}

static void defer(struct chan *c)
{
	struct rcx_ctx *ctx = c->set->ctx;

	c->deferred = true;
	c->next_deferred = ctx->chan_deferred;
	ctx->chan_deferred = c;
}

/* receiver: patch the receive (send protocol) and the credit */
static inline void prep_recv(struct chan *c)
{
	struct chset *s = c->set;
	uint64_t off = next_slot(c);

	if (s->proto == RCX_CHAN_SEND)
		*c->pwr->addr = (uintptr_t)c->buf + off;
	else
		credit_src(s)[c->idx] = c->count;
}

/* post the credit write(s) for channels [lo, hi) of a set as one WR */
static int post_credit(struct chset *s, int lo, int hi)
{
	/* unsignaled, except one in CH_CREDIT_SIGNAL to retire the queue */
	bool sig = ++s->credits_sent % CH_CREDIT_SIGNAL == 0;
	struct rcx_pwr *p = sig ? s->ch[lo].credit_sig : s->ch[lo].credit;
	int ret;

	*p->addr = (uintptr_t)&credit_src(s)[lo];
	*p->length = (uint32_t)(hi - lo) * 8;
	*p->remote_addr =
		s->peer_ctl + offsetof(struct chctl, words) + (uint64_t)lo * 8;
	ret = s->ctx->ops->pwr_post(s->ep, &p, 1);
	if (!ret && sig)
		s->inflight++;
	return ret;
}

/*
 * The fast path: one channel, one post. A sender posts at once (send
 * protocol) or when the receiver's credit is there (write_imm); a receiver
 * posts its receive (send) or writes its credit (write_imm).
 */
static int chan_start(struct rcx_req *r)
{
	struct chan *c = r->obj;
	struct chset *s = c->set;
	const struct rcx_provider_ops *ops = s->ctx->ops;
	int ret;

	if (RCX__UNLIKELY(s->state != SET_UP))
		return s->state == SET_FAILED ? s->error : -EAGAIN;
	r->state = RCX__REQ_ACTIVE;
	r->status.error = 0;
	if (s->is_send) {
		if (s->proto == RCX_CHAN_WRITE_IMM &&
		    ready(s)[c->idx] <= c->count) {
			defer(c);
			return 0;
		}
		post_send(c);
		ret = ops->pwr_post(s->ep, &c->pwr, 1);
	} else {
		prep_recv(c);
		if (s->proto == RCX_CHAN_SEND)
			ret = ops->pwr_post_recv(s->ep, &c->pwr, 1);
		else
			ret = post_credit(s, c->idx, c->idx + 1);
	}
	if (RCX__UNLIKELY(ret))
		rcx__chan_set_fail(s, ret);
	return ret;
}

/*
 * Start channels (reqs all of this kind): per set, one post list of the
 * senders that have credit and one of the receives plus one credit write.
 */
static int chan_start_many(struct rcx_req **reqs, int n)
{
	struct rcx_pwr *list[CH_MAX_BUNDLE + 1];
	int i, k, ret;

	for (i = 0; i < n; i++) {
		struct chan *c = to_chan(reqs[i]);

		if (c->set->state == SET_FAILED)
			return c->set->error;
		if (c->set->state != SET_UP)
			return -EAGAIN;
	}
	for (i = 0; i < n;) {
		struct chset *s = to_chan(reqs[i])->set;
		int j, lo = s->n, hi = -1;

		for (j = i; j < n && to_chan(reqs[j])->set == s; j++)
			;
		k = 0;
		for (; i < j; i++) {
			struct chan *c = to_chan(reqs[i]);

			c->req->state = RCX__REQ_ACTIVE;
			c->req->status.error = 0;
			if (s->is_send) {
				if (s->proto == RCX_CHAN_SEND ||
				    ready(s)[c->idx] > c->count) {
					post_send(c);
					list[k++] = c->pwr;
				} else {
					defer(c);
				}
				continue;
			}
			prep_recv(c);
			if (s->proto == RCX_CHAN_SEND)
				list[k++] = c->pwr;
			lo = c->idx < lo ? c->idx : lo;
			hi = c->idx + 1 > hi ? c->idx + 1 : hi;
		}
		ret = 0;
		if (k && s->is_send)
			ret = s->ctx->ops->pwr_post(s->ep, list, k);
		else if (k)
			ret = s->ctx->ops->pwr_post_recv(s->ep, list, k);
		if (!ret && !s->is_send && s->proto == RCX_CHAN_WRITE_IMM)
			ret = post_credit(s, lo, hi);
		if (ret) {
			rcx__chan_set_fail(s, ret);
			return ret;
		}
	}
	return 0;
}

/* Senders waiting for the receiver's credit: called from progress. */
void rcx__chan_progress(struct rcx_ctx *ctx)
{
	struct chan **pp = (struct chan **)&ctx->chan_deferred, *c;

	while ((c = *pp)) {
		if (!c->deferred) {
			*pp = c->next_deferred;
			continue;
		}
		if (ready(c->set)[c->idx] <= c->count) {
			pp = &c->next_deferred;
			continue;
		}
		*pp = c->next_deferred;
		c->deferred = false;
		post_send(c);
		if (ctx->ops->pwr_post(c->set->ep, &c->pwr, 1))
			rcx__chan_set_fail(c->set, RCX_ERR_PROC_FAILED);
	}
}

static void on_chan_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       const struct rcx_cqe *cqe)
{
	struct chan *c = (struct chan *)w;
	struct chset *s = c->set;

	if (s->is_send)
		s->inflight--;
	if (cqe->status) {
		rcx__chan_set_fail(s, cqe->status == RCX_ERR_FLUSHED
					      ? RCX_ERR_PROC_FAILED
					      : cqe->status);
		return;
	}
	c->req->status.slot = c->cur_slot;
	c->req->status.count = s->is_send ? c->len : cqe->byte_len;
	rcx__req_complete(c->req, 0);
}

/* write_imm receiver: an immediate names the channel */
static void on_imm(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		   const struct rcx_cqe *cqe)
{
	struct chset *s =
		(struct chset *)((char *)w - offsetof(struct chset, zwrc));
	unsigned int idx = cqe->imm >> 24;
	struct chan *c;

	s->zposted--;
	if (cqe->status) {
		rcx__chan_set_fail(s, cqe->status == RCX_ERR_FLUSHED
					      ? RCX_ERR_PROC_FAILED
					      : cqe->status);
		return;
	}
	if (s->state != SET_UP)
		return;
	if (!cqe->has_imm || idx >= (unsigned int)s->n ||
	    s->ch[idx].req->state != RCX__REQ_ACTIVE) {
		rcx__chan_set_fail(s, RCX_ERR_PROTO);
		return;
	}
	c = &s->ch[idx];
	if (ctx->ops->pwr_post_recv(s->ep, &s->zrecv, 1)) {
		rcx__chan_set_fail(s, RCX_ERR_PROC_FAILED);
		return;
	}
	s->zposted++;
	c->req->status.slot = c->cur_slot;
	c->req->status.count = s->peer_len;
	rcx__req_complete(c->req, 0);
}

static void on_ctl_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		      const struct rcx_cqe *cqe)
{
	struct chset *s = (struct chset *)((char *)w -
					   offsetof(struct chset, credit_wrc));

	s->inflight--;
	if (cqe->status && s->state != SET_FAILED)
		rcx__chan_set_fail(s, RCX_ERR_PROC_FAILED);
}

static void on_free_wc(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		       const struct rcx_cqe *cqe)
{
	struct chset *s =
		(struct chset *)((char *)w - offsetof(struct chset, free_wrc));

	s->inflight--;
	/* a peer that is gone has freed its end, in effect */
	if (cqe->status)
		s->ctl->peer_free = 1;
}

/* ---- the channel request kind */

static void chan_poll(struct rcx_req *r)
{
	struct rcx_ctx *ctx = r->ctx;

	if (ctx->chan_deferred)
		rcx__chan_progress(ctx);
	rcx__progress(ctx);
}

const struct rcx__req_ops rcx__chan_ops = {
	.start = chan_start,
	.start_many = chan_start_many,
	.poll = chan_poll,
};

void rcx__chan_set_wire(struct chset *s)
{
	int i;

	s->zwrc.cb = on_imm;
	s->credit_wrc.cb = on_ctl_wc;
	s->free_wrc.cb = on_free_wc;
	for (i = 0; i < s->n; i++)
		s->ch[i].wrc.cb = on_chan_wc;
}
