/* SPDX-License-Identifier: BSD-2-Clause */
/* Connections' internals shared by conn.c and conn_reconn.c, and the
 * eager send's fast path (p2p.c). */
#ifndef RCX_CORE_CONN_INT_H
#define RCX_CORE_CONN_INT_H

#include <endian.h>
#include "lib/core/core.h"

static inline size_t rcx__slot_size(const struct rcx_ctx *ctx)
{
	return sizeof(struct rcx__hdr) + ctx->cfg.eager_size;
}

/* a message that spends a credit (and takes a number) */
static inline bool rcx__needs_credit(uint8_t type)
{
	return type != RCX__MSG_CREDIT && type != RCX__MSG_BYE;
}

/*
 * Eager sends of the fast path go unsignaled but one in this many: the
 * signaled one's completion returns the slots of those before it (a
 * send queue's WRs complete in order; one that fails is reported,
 * signaled or not). conn_tx.c keeps the account.
 */
#define RCX__TX_SIGNAL_EVERY 16

/* c's unsignaled tail is covered (a signaled WR follows it) */
static inline void rcx__txq_covered(struct rcx__conn *c)
{
	c->tx_unsig = 0;
}

/* s was posted on c: it joins c's txq (its conn set already) */
static inline void rcx__txq_add(struct rcx__conn *c, struct rcx__txslot *s)
{
	s->next = NULL;
	s->ord = c->tx_ord++;
	*c->txq_end = s;
	c->txq_end = &s->next;
	c->tx_inflight++;
}

/* credits kept back so CREDIT messages always find a receive posted */
#define RCX__CREDIT_RESERVE 2

/* a reconnection's steps (rcx__conn.re_phase) */
enum {
	RE_DRAIN = 1, /* the broken endpoint's completions are reaped */
	RE_READY,     /* drained: connect, ask, or accept the peer's */
	RE_NEW,	      /* a new endpoint is on its way */
	/* the peer refused it (it closed, its context is gone): no attempt
	 * more unless it asks or connects itself (rcx__conn_reconn_req) */
	RE_REFUSED,
};

/* a reconnection's attempt (connect or ask) is repeated this often */
#define RE_RETRY_US 200000
/*
 * A reconnection's ask still unanswered after this long is asked again:
 * the answer (a refusal) or the ask itself may be lost on the link, and
 * the connection manager's own retries take seconds each.
 */
#define RE_ASK_US 1000000

/*
 * A clean exit waits this long at most for a connection's last sends and
 * its BYE to complete (longer while a reconnection is under way, up to
 * RCX_FT_TIMEOUT_MS from the break: rcx__conn_settle).
 */
#define RCX__SETTLE_MS 2000

/*
 * An eager message of a point-to-point send goes with its header in the
 * immediate when it fits: [31:26] credits, [25:23] cid, [22:0] tag. The
 * payload is all the message carries (at 64 bytes it goes inline, at
 * 1 KiB it is one packet at a path MTU of 1024); its length is the
 * completion's, its number the next one (one RC connection delivers in
 * order; a message sent again after a reconnection goes with its full
 * header), its group the connection's own (gid 0).
 */
#define IMM_CREDITS_MAX 63u
#define IMM_CID_SHIFT	23
#define IMM_TAG_MAX	0x7fffffu

/*
 * The eager send's fast path: r (active, 0 < len <= RCX_EAGER_SIZE)
 * goes at once with its header in the immediate, its count set, for the
 * caller to complete: 1. 0:
 * not on this path (the connection is not up, something waits before
 * it, no credit or slot, or the header does not fit), nothing changed;
 * else the provider's error. Inline: rcx_isend's one frame.
 */
static inline int rcx__conn_send_imm(struct rcx__conn *c, struct rcx_req *r)
{
	struct rcx_ctx *ctx = c->ctx;
	struct rcx__txslot *s = ctx->tx_free;
	uint32_t len = (uint32_t)r->len, ctag;
	uint8_t *payload;
	struct rcx_pwr *p;
	unsigned int unsig;
	int ret;

	if (c->state != RCX__CONN_UP || c->backlog || c->replay ||
	    c->credits <= 0 || !s || (unsigned int)c->owed > IMM_CREDITS_MAX ||
	    (uint32_t)r->tag > IMM_TAG_MAX || r->g->gid)
		return 0;
	payload = s->data + sizeof(struct rcx__hdr);
	memcpy(payload, r->buf, len);
	ctag = (uint32_t)r->cid << IMM_CID_SHIFT | (uint32_t)r->tag;
	/* the pool's last slot goes signaled: it comes back by itself */
	unsig = c->tx_unsig < RCX__TX_SIGNAL_EVERY - 1 && s->next;
	p = c->tx_pwr[2 + 2 * unsig + (len <= c->tx_inline)];
	*p->wr_id = (uintptr_t)&s->wrc;
	*p->addr = (uintptr_t)payload;
	*p->length = len;
	*p->imm_be = htobe32((uint32_t)c->owed << 26 | ctag);
	/* the slot's own fields before the call: nothing kept across it */
	s->imm_len = len;
	s->imm_ctag = ctag;
	s->imm_seq = c->tx_seq;
	s->conn = c;
	ctx->tx_free = s->next;
	ret = ctx->ops->pwr_post(c->ep, &p, 1);
	if (RCX__UNLIKELY(ret)) {
		s->conn = NULL;
		ctx->tx_free = s;
		return ret;
	}
	rcx__txq_add(c, s);
	if (unsig) {
		c->tx_unsig++;
	} else {
		rcx__txq_covered(c);
		if (!ctx->tx_free)
			rcx__tx_starved(ctx);
	}
	c->tx_seq++;
	c->owed = 0;
	c->credits--;
	ctx->st.wrs_posted++;
	ctx->st.eager_tx_msgs++;
	ctx->st.eager_tx_bytes += len;
	r->status.count = len;
	return 1;
}

int rcx__conn_post_slot(struct rcx__conn *c, struct rcx__txslot *s);
/* Post c's BYE (no credit needed): 0, -EAGAIN with no send slot free,
 * or the provider's error. */
int rcx__conn_bye(struct rcx__conn *c);
struct rcx_ep_attr rcx__conn_ep_attr(struct rcx__conn *c);
/* c's peer is to show it lives (its connection, or a reconnection's
 * request) within ms, else it failed, or left if c->gone (fail.c) */
void rcx__conn_answer_due(struct rcx__conn *c, long long ms);
/* it did, or c ended: nothing due */
void rcx__conn_answer_done(struct rcx__conn *c);
/* The peer's context is gone (it left, or died), or it refused a
 * reconnection: left unless a launcher tells of its death within
 * RCX__GONE_GRACE_MS; failed at once where none tells of deaths. */
void rcx__conn_gone(struct rcx__conn *c);
void rcx__conn_pending_add(struct rcx__conn *c);

/* conn_tx.c */
void rcx__conn_tx_mark(struct rcx__conn *c);

/* conn_reconn.c */
void rcx__conn_replay_add(struct rcx__conn *c, struct rcx__txslot *s);
void rcx__conn_replay_post(struct rcx__conn *c);
void rcx__conn_replay_drop(struct rcx__conn *c);
void rcx__conn_reconn_stop(struct rcx__conn *c);
void rcx__conn_reconn_up(struct rcx__conn *c);
void rcx__conn_reconn_on_cm(struct rcx__conn *c, const struct rcx_cm_event *ev);
/* The peer refused c's reconnection with status (-ECONNREFUSED: its
 * answer to our connect; -EHOSTDOWN, -ESRCH: the system's). */
void rcx__conn_reconn_refused(struct rcx__conn *c, int status);
bool rcx__conn_settle(struct rcx__conn *c);

/*
 * Receive credits owed to the peer that no message of ours will carry
 * soon: half the ring was reposted (credit_at: rounded down to whole
 * batches, so the batch that reaches it returns its credits at once
 * while the peer still holds the rest), and we have nothing to send or
 * no credit to send it with. Returned in a CREDIT message.
 */
static inline bool rcx__conn_credit_due(const struct rcx__conn *c)
{
	return c->owed >= c->credit_at && (!c->backlog || c->credits == 0);
}

/* the receive side (conn_rx.c): a receive buffer posted; a completion of
 * one (wrc.cb), and a successful one straight from the poll (wrc.ok) */
int rcx__conn_post_rx(struct rcx__conn *c, struct rcx__rxbuf *b);
void rcx__conn_on_rx(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		     const struct rcx_cqe *cqe);
void rcx__conn_on_rx_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			uint32_t byte_len, uint32_t imm, int has_imm);
/* the credits owed to the peer, in a CREDIT message */
int rcx__conn_credit_send(struct rcx__conn *c);

#endif
