/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The receive side of connections (conn.c): each connection's ring of
 * pre-posted receive buffers, what a message in one says (its header,
 * or for an eager point-to-point message the immediate), its delivery,
 * and the buffer's way back: reposted in batches, whose credits go back
 * to the peer piggybacked on our messages or in a CREDIT message.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"
#include "lib/core/conn_int.h"

static void rx_msg(struct rcx_ctx *ctx, struct rcx__rxbuf *b, uint32_t byte_len,
		   uint32_t imm, int has_imm);
static inline __attribute__((always_inline)) void rx_imm(struct rcx_ctx *ctx,
							 struct rcx__conn *c,
							 struct rcx__rxbuf *b,
							 uint32_t byte_len,
							 uint32_t imm);

int rcx__conn_post_rx(struct rcx__conn *c, struct rcx__rxbuf *b)
{
	int ret = c->ctx->ops->pwr_post_recv(c->ep, &b->pwr, 1);

	if (!ret)
		c->rx_posted++;
	return ret;
}

/*
 * The buffer of a message that spent a credit: held until rx_batch are,
 * then all posted in one call (one provider call, one doorbell) and
 * their credits owed to the peer. The others' go back at once: they
 * spent no credit, and the reserve for them must stay posted. A list
 * refused part-way counts what went (its completions come, flushed at
 * the latest) and keeps the rest held for the next endpoint (on_ready).
 */
static int repost_rx(struct rcx__conn *c, struct rcx__rxbuf *b, bool credit)
{
	int ret, n, k;

	if (!credit || c->rx_batch == 1) {
		ret = rcx__conn_post_rx(c, b);
		if (!ret && credit)
			c->owed++;
		return ret;
	}
	c->rx_hold[c->nhold++] = b->pwr;
	if (c->nhold < c->rx_batch)
		return 0;
	n = c->nhold;
	ret = c->ctx->ops->pwr_post_list(c->ep, c->rx_hold, n, 1, &k);
	c->rx_posted += k;
	c->owed += k;
	c->nhold = (uint8_t)(n - k);
	if (RCX__UNLIKELY(ret) && k)
		memmove(c->rx_hold, c->rx_hold + k,
			(size_t)c->nhold * sizeof(c->rx_hold[0]));
	return ret;
}

bool rcx__hdr_ok(const struct rcx__hdr *h, uint32_t byte_len, size_t eager_size)
{
	if (byte_len < sizeof(*h))
		return false;
	if (h->type == RCX__MSG_EAGER &&
	    (h->len > eager_size || byte_len < sizeof(*h) + h->len))
		return false;
	return h->cid < RCX__CID_MAX && h->type && h->type <= RCX__MSG_BYE;
}

void rcx__conn_on_rx(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		     const struct rcx_cqe *cqe)
{
	struct rcx__rxbuf *b = (struct rcx__rxbuf *)w;
	struct rcx__conn *c = b->conn;

	c->rx_posted--;
	/* the first message on a reconnection's new endpoint: it is up */
	if (!cqe->status && c->state == RCX__CONN_RECONN &&
	    c->re_phase == RE_NEW)
		rcx__conn_reconn_up(c);
	/*
	 * The peer's first message can complete before our ESTABLISHED
	 * event is polled; it only sends once connected, so we are too.
	 * (Dropping it here lost the message and its receive buffer.)
	 */
	if (!cqe->status && c->state == RCX__CONN_CONNECTING) {
		c->state = RCX__CONN_UP;
		rcx__fail_tell(c);
	}
	/* a message that arrived on a broken endpoint is taken all the same
	 * (its sender saw it complete: it will not send it again) */
	if (cqe->status ||
	    (c->state != RCX__CONN_UP && c->state != RCX__CONN_RECONN)) {
		/* flushed or broken: the peer is gone (or we are closing) */
		rcx__stats_cqe(&ctx->st, cqe->status);
		if (cqe->status)
			rcx__conn_wc_error(c, cqe->status);
		return;
	}
	if (cqe->has_imm && c->state == RCX__CONN_UP)
		rx_imm(ctx, c, b, cqe->byte_len, cqe->imm);
	else
		rx_msg(ctx, b, cqe->byte_len, cqe->imm, cqe->has_imm);
}

/* the header an eager message carried in its immediate (imm_fits) */
static void imm_hdr(const struct rcx__conn *c, uint32_t imm, uint32_t byte_len,
		    struct rcx__hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->type = RCX__MSG_EAGER;
	h->cid = (uint8_t)(imm >> IMM_CID_SHIFT & 7);
	h->credits = (uint16_t)(imm >> 26);
	h->tag = (int32_t)(imm & IMM_TAG_MAX);
	h->len = byte_len;
	h->seq = c->rx_seq;
}

/* What h says to do, once its number and credits are taken. */
static void rx_deliver(struct rcx_ctx *ctx, struct rcx__conn *c,
		       const struct rcx__hdr *h, const uint8_t *payload)
{
	switch (h->type) {
	case RCX__MSG_EAGER:
		if (ctx->am[h->cid]) {
			ctx->am[h->cid](c, h, payload);
			break;
		}
		/* fall through */
	case RCX__MSG_RTS:
		rcx__p2p_arrived(c->g, c->peer, c, h, payload);
		break;
	case RCX__MSG_FIN:
		rcx__p2p_fin(c, h->id);
		break;
	case RCX__MSG_BYE:
		/* it left on purpose: its disconnect is no failure. What it
		 * sent came before this (one RC connection delivers in
		 * order): receives still posted for it can never match. */
		rcx__conn_left(c);
		break;
	}
}

/*
 * A delivered message's buffer may be held for the next batch's repost
 * (else rx_tail now): room in the batch, no backlog of sends on c, and
 * no CREDIT due (rcx__conn_credit_due).
 */
static inline bool rx_may_hold(const struct rcx__conn *c)
{
	return c->nhold + 1 < c->rx_batch && !c->backlog &&
	       c->owed < c->credit_at;
}

/* b's message is taken, c still up: b goes back, credits go out. */
static __attribute__((noinline)) void rx_tail(struct rcx_ctx *ctx,
					      struct rcx__conn *c,
					      struct rcx__rxbuf *b, bool credit)
{
	/* a CREDIT or BYE spent no credit: it earns none back (returning
	 * one would let the peer send past our receives into RNR NAKs) */
	int ret = repost_rx(c, b, credit);

	/* the device refused it: no sign of the peer's death, a break */
	if (RCX__UNLIKELY(ret)) {
		rcx__log(RCX__LOG_WARN, "conn",
			 "peer %d: receive buffers refused by the device (%s)",
			 c->peer, rcx_strerror(ret));
		(void)rcx__conn_wc_error(c, RCX_ERR_TRANSPORT);
		return;
	}
	if (c->backlog)
		rcx__conn_pending_add(c);
	/*
	 * Nothing of ours to piggyback on: return credits explicitly, or as
	 * soon as a send slot is free (the peer may have no credit left to
	 * send what would make us answer: waiting for it deadlocks both).
	 */
	if (rcx__conn_credit_due(c)) {
		if (ctx->tx_free)
			rcx__conn_credit_send(c);
		else
			rcx__conn_pending_add(c);
	}
}

/* an eager message in the immediate that the posted head did not take */
static __attribute__((noinline)) void rx_imm_slow(struct rcx_ctx *ctx,
						  struct rcx__conn *c,
						  struct rcx__rxbuf *b,
						  uint32_t byte_len,
						  uint32_t imm)
{
	struct rcx__hdr ih;

	imm_hdr(c, imm, byte_len, &ih);
	ih.seq--; /* its number was taken already */
	rx_deliver(ctx, c, &ih, b->data);
}

static __attribute__((noinline)) void rx_imm_bad(struct rcx__conn *c,
						 uint32_t byte_len)
{
	rcx__log(RCX__LOG_ERROR, "conn", "peer %d: eager message of %u bytes",
		 c->peer, byte_len);
	rcx__conn_fail(c, RCX_ERR_PROTO);
}

/*
 * An eager message whose header was the immediate, on a connection that
 * is up: its number is the next one and its group the connection's own
 * (imm_fits), so it is taken without a header; the head of the posted
 * receives takes it when it matches (rcx__p2p_eager_first), anything
 * else is matched as every message is. Its buffer is held for the next
 * batch in line (rx_tail's common case: no batch to post, nothing
 * waiting to be sent, no credit due); the rest in rx_tail.
 */
static inline __attribute__((always_inline)) void rx_imm(struct rcx_ctx *ctx,
							 struct rcx__conn *c,
							 struct rcx__rxbuf *b,
							 uint32_t byte_len,
							 uint32_t imm)
{
	uint8_t cid = (uint8_t)(imm >> IMM_CID_SHIFT & 7);

	if (RCX__UNLIKELY(!byte_len || byte_len > ctx->cfg.eager_size)) {
		rx_imm_bad(c, byte_len);
		return;
	}
	c->rx_seq++;
	c->credits += (int)(imm >> 26);
	ctx->st.eager_rx_msgs++;
	ctx->st.eager_rx_bytes += byte_len;
	if (RCX__UNLIKELY(ctx->am[cid]) ||
	    !rcx__p2p_eager_first(c->g, c->peer, cid,
				  (int32_t)(imm & IMM_TAG_MAX), b->data,
				  byte_len))
		rx_imm_slow(ctx, c, b, byte_len, imm);
	if (RCX__UNLIKELY(c->state != RCX__CONN_UP))
		return;
	if (RCX__LIKELY(rx_may_hold(c))) {
		c->rx_hold[c->nhold++] = b->pwr;
		return;
	}
	rx_tail(ctx, c, b, true);
}

/* rx_imm out of line: rcx__conn_on_rx_ok keeps no frame */
static __attribute__((noinline)) void rx_imm_any(struct rcx_ctx *ctx,
						 struct rcx__conn *c,
						 struct rcx__rxbuf *b,
						 uint32_t byte_len,
						 uint32_t imm)
{
	rx_imm(ctx, c, b, byte_len, imm);
}

/* rcx__conn_on_rx_ok's delivery with a hook to run (a continuation, a
 * done hook, a release), its buffer held: the data, then the hooks
 * (rcx__req_complete's) */
static __attribute__((noinline)) void rx_imm_hooks(struct rcx_req *r,
						   const uint8_t *data,
						   size_t n)
{
	memcpy(r->buf, data, n);
	rcx__req_run_hooks(r);
}

/*
 * rcx__conn_on_rx_ok's delivery past its common case: nothing to copy
 * (a receive of 0 bytes), a hook to run (a continuation, a done hook, a
 * release) or the buffer not to hold (a batch to post, something waiting
 * to be sent, credits due). The data first, then the hooks
 * (rcx__req_complete's), then the buffer as rx_imm's tail does.
 */
static __attribute__((noinline)) void rx_imm_rest(struct rcx_ctx *ctx,
						  struct rcx__conn *c,
						  struct rcx__rxbuf *b,
						  struct rcx_req *r, size_t n)
{
	if (n)
		memcpy(r->buf, b->data, n);
	if (r->done || r->cont || r->user_freed)
		rcx__req_run_hooks(r);
	if (RCX__UNLIKELY(c->state != RCX__CONN_UP))
		return;
	if (rx_may_hold(c)) {
		c->rx_hold[c->nhold++] = b->pwr;
		return;
	}
	rx_tail(ctx, c, b, true);
}

/*
 * rcx__conn_on_rx of a message received while c is up, straight from the
 * poll. An eager message in the immediate that the head of the posted
 * receives takes (rx_imm and rcx__p2p_eager_first, decided before
 * anything changes) is delivered here; in the common case (its buffer
 * held for the next batch: nothing here can change c, and the buffer
 * goes back to the device only with its batch, after the copy) the copy
 * is the last step, or the hooks after it, and the handler keeps no
 * frame. Everything else is rx_imm or rx_msg.
 */
void rcx__conn_on_rx_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			uint32_t byte_len, uint32_t imm, int has_imm)
{
	struct rcx__rxbuf *b = (struct rcx__rxbuf *)w;
	struct rcx__conn *c = b->conn;
	struct rcx_req **head, *r;
	unsigned int cid;
	int32_t tag;
	size_t n;

	if (RCX__UNLIKELY(c->state != RCX__CONN_UP)) {
		rcx__wc_ok_slow(ctx, w, byte_len, imm, has_imm);
		return;
	}
	c->rx_posted--;
	if (RCX__UNLIKELY(!has_imm)) {
		rx_msg(ctx, b, byte_len, imm, has_imm);
		return;
	}
	cid = imm >> IMM_CID_SHIFT & 7;
	head = &c->g->posted[cid];
	tag = (int32_t)(imm & IMM_TAG_MAX);
	/* 0 < byte_len <= eager_size in one test */
	if (RCX__UNLIKELY((size_t)byte_len - 1 >= ctx->cfg.eager_size ||
			  ctx->am[cid] || !(r = *head) ||
			  !rcx__p2p_matches(r, c->peer, tag))) {
		rx_imm_any(ctx, c, b, byte_len, imm);
		return;
	}
	c->rx_seq++;
	c->credits += (int)(imm >> 26);
	ctx->st.eager_rx_msgs++;
	ctx->st.eager_rx_bytes += byte_len;
	r->status.source = c->peer;
	r->status.tag = tag;
	*head = r->next;
	if (!r->next)
		c->g->posted_tail[cid] = NULL;
	r->next = NULL;
	n = byte_len < r->len ? byte_len : r->len;
	r->status.count = n;
	r->status.error = byte_len > r->len ? RCX_ERR_TRUNCATE : 0;
	r->state = RCX__REQ_DONE;
	if (RCX__UNLIKELY(!n || !rx_may_hold(c))) {
		rx_imm_rest(ctx, c, b, r, n);
		return;
	}
	/* held before a hook runs: one that breaks the connection leaves it
	 * to the next endpoint, which takes every buffer (on_ready) */
	c->rx_hold[c->nhold++] = b->pwr;
	if (RCX__UNLIKELY(r->done || r->cont || r->user_freed)) {
		rx_imm_hooks(r, b->data, n);
		return;
	}
	memcpy(r->buf, b->data, n);
}

/* A message in b (byte_len bytes) on a connection that is up. */
static void rx_msg(struct rcx_ctx *ctx, struct rcx__rxbuf *b, uint32_t byte_len,
		   uint32_t imm, int has_imm)
{
	struct rcx__conn *c = b->conn;
	const struct rcx__hdr *h = (const void *)b->data;
	const uint8_t *payload = (const uint8_t *)(h + 1);
	struct rcx__hdr ih;
	bool dup = false;
	int ret;

	if (has_imm) {
		imm_hdr(c, imm, byte_len, &ih);
		h = &ih;
		payload = b->data;
	}
	if (has_imm ? !byte_len || byte_len > ctx->cfg.eager_size
		    : !rcx__hdr_ok(h, byte_len, ctx->cfg.eager_size)) {
		rcx__conn_fail(c, RCX_ERR_PROTO);
		return;
	}
	if (rcx__needs_credit(h->type)) {
		ret = (int32_t)(h->seq - c->rx_seq);
		/* a number past the next one: a message was lost */
		if (ret > 0) {
			rcx__log(RCX__LOG_ERROR, "conn",
				 "peer %d: message %u where %u was due",
				 c->peer, h->seq, c->rx_seq);
			rcx__conn_fail(c, RCX_ERR_PROTO);
			return;
		}
		dup = ret < 0; /* sent again after a reconnection: had it */
		if (dup)
			RCX__LOG(RCX__LOG_DEBUG, "conn",
				 "peer %d: message %u again: dropped", c->peer,
				 h->seq);
		c->rx_seq += !dup;
	}
	c->credits += h->credits;
	if (!dup) {
		rcx__stats_rx(&ctx->st, h);
		rx_deliver(ctx, c, h, payload);
	}
	if (c->state == RCX__CONN_UP)
		rx_tail(ctx, c, b, rcx__needs_credit(h->type));
}
