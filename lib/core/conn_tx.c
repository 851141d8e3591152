/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Send bounce slots: the context's pool, and each connection's account of
 * the slots it has in flight (rcx__conn.txq, in the order posted).
 *
 * Eager sends of the fast path go unsignaled but one in
 * RCX__TX_SIGNAL_EVERY (rcx__conn_send_imm): no completion per message to
 * poll and dispatch. A send queue's WRs complete in order, and one that
 * fails is reported signaled or not (IBA 10.8.6): so a completion, of any
 * status, returns its slot and, as sent, every slot posted before it that
 * is still in the txq. The tail posted unsignaled since the last signaled
 * send has no completion of its own to come unless it fails: where
 * something waits for every slot (a failure, a reconnection's drain, a
 * clean exit) a zero-length signaled WRITE (the mark: no receive of the
 * peer's taken) follows it and returns it. The pool's last slot goes
 * signaled, and when it is taken every tail is marked (rcx__tx_starved):
 * idle connections' tails never starve the others.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"
#include "lib/core/conn_int.h"

/* the header of a message rcx__conn_send_imm sent: it may go again */
static void slot_hdr(struct rcx__txslot *s)
{
	struct rcx__hdr *h = (struct rcx__hdr *)s->data;

	memset(h, 0, sizeof(*h));
	h->type = RCX__MSG_EAGER;
	h->cid = (uint8_t)(s->imm_ctag >> IMM_CID_SHIFT);
	h->tag = (int32_t)(s->imm_ctag & IMM_TAG_MAX);
	h->len = s->imm_len;
	h->seq = s->imm_seq;
	s->imm_len = 0;
}

/* the head of c's txq is off it, and c's no more */
static inline struct rcx__txslot *txq_pop(struct rcx__conn *c)
{
	struct rcx__txslot *u = c->txq;

	c->txq = u->next;
	if (!c->txq)
		c->txq_end = &c->txq;
	if (u == c->mark_upto)
		c->mark_upto = NULL;
	u->conn = NULL;
	c->tx_inflight--;
	return u;
}

/* the head of c's txq went out: back to the pool */
static inline struct rcx__txslot *txq_head_done(struct rcx_ctx *ctx,
						struct rcx__conn *c)
{
	struct rcx__txslot *u = txq_pop(c);

	u->next = ctx->tx_free;
	ctx->tx_free = u;
	return u;
}

/*
 * The head of c's txq up to s went out, no mark among them: back to the
 * pool in one splice, in the order they were posted, counted by their
 * places in the posting order (ord) with no walk. s is in the txq: a
 * slot in flight is on its connection's txq until a completion takes it
 * off. The slots keep their conn: one is read only from a completion of
 * the slot's own, and a slot is posted again before any (a post that
 * fails clears it: the provider may report a refused WR all the same).
 */
static inline void txq_done_upto(struct rcx_ctx *ctx, struct rcx__conn *c,
				 struct rcx__txslot *s)
{
	struct rcx__txslot *head = c->txq;

	if (RCX__UNLIKELY(!head))
		return;
	c->txq = s->next;
	if (!c->txq)
		c->txq_end = &c->txq;
	c->tx_inflight -= (int)(s->ord - head->ord) + 1;
	s->next = ctx->tx_free;
	ctx->tx_free = head;
}

/* on_tx of a send that went out: its slot is free again, and those
 * posted before it */
static void on_tx_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		     uint32_t byte_len, uint32_t imm, int has_imm)
{
	struct rcx__txslot *s = (struct rcx__txslot *)w;
	struct rcx__conn *c = s->conn;

	(void)byte_len;
	(void)imm;
	(void)has_imm;
	/* a send the provider refused but reports anyway: the slot was
	 * never taken (it is on the free list) and no connection owns it */
	if (RCX__UNLIKELY(!c))
		return;
	/* a mark in the txq: slot by slot, as mark_done does */
	if (RCX__UNLIKELY(c->mark_upto != NULL)) {
		while (c->txq && txq_head_done(ctx, c) != s)
			;
		return;
	}
	txq_done_upto(ctx, c, s);
}

static void on_tx(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		  const struct rcx_cqe *cqe)
{
	struct rcx__txslot *s = (struct rcx__txslot *)w;
	struct rcx__conn *c = s->conn;

	if (!cqe->status || !c) {
		on_tx_ok(ctx, w, cqe->byte_len, cqe->imm, cqe->has_imm);
		return;
	}
	/* those posted before it went out: one that failed came first */
	while (c->txq && c->txq != s)
		txq_head_done(ctx, c);
	if (c->txq == s)
		txq_pop(c);
	s->next = NULL;
	if (s->imm_len)
		slot_hdr(s);
	rcx__stats_cqe(&ctx->st, cqe->status);
	rcx__conn_wc_error(c, cqe->status);
	/* not known to have arrived: sent again once reconnected */
	if (c->state == RCX__CONN_RECONN &&
	    rcx__needs_credit(((struct rcx__hdr *)s->data)->type)) {
		rcx__conn_replay_add(c, s);
		return;
	}
	s->next = ctx->tx_free;
	ctx->tx_free = s;
}

/* the mark completed (its status is the endpoint's, reported by the
 * sends themselves): what was posted before it is done */
static void mark_done(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		      const struct rcx_cqe *cqe)
{
	struct rcx__conn *c =
		(struct rcx__conn *)((char *)w -
				     offsetof(struct rcx__conn, mark));

	c->mark_busy = 0;
	while (c->txq && c->mark_upto)
		txq_head_done(ctx, c);
	if (cqe->status)
		rcx__conn_wc_error(c, cqe->status);
	/* a tail posted after it (c still up): marked where needed again */
}

/*
 * c's unsignaled tail is wanted back (a failure, a drain, an exit): a
 * signaled zero-length WRITE after it returns it when it completes, with
 * success or flushed (an endpoint in error flushes what is posted to it).
 */
void rcx__conn_tx_mark(struct rcx__conn *c)
{
	struct rcx_ctx *ctx = c->ctx;
	struct rcx_wr wr, *bad;
	int ret;

	if (!c->tx_unsig || c->mark_busy || !c->ep)
		return;
	if (!c->txq) { /* the tail failed, each reported: none left */
		rcx__txq_covered(c);
		return;
	}
	memset(&wr, 0, sizeof(wr));
	c->mark.cb = mark_done;
	c->mark.ok = NULL;
	wr.wr_id = (uintptr_t)&c->mark;
	wr.op = RCX_OP_WRITE;
	wr.flags = RCX_WR_SIGNALED;
	ret = ctx->ops->post_send(c->ep, &wr, &bad);
	if (ret) {
		rcx__log(RCX__LOG_ERROR, "conn",
			 "peer %d: %u unsignaled sends not returned: %s",
			 c->peer, c->tx_unsig, rcx_strerror(ret));
		return;
	}
	c->mark_busy = 1;
	c->mark_upto =
		(struct rcx__txslot *)(void *)((char *)c->txq_end -
					       offsetof(struct rcx__txslot,
							next));
	rcx__txq_covered(c);
}

/*
 * The pool ran empty (its last slot went, signaled): every connection's
 * unsignaled tail is wanted back, or one held by an idle connection would
 * keep its slots from those waiting for one.
 */
void rcx__tx_starved(struct rcx_ctx *ctx)
{
	struct rcx_group *g;
	struct rcx__conn *c;
	int i;

	/* the world's connections and the pairs' (sub-groups have none) */
	for (g = ctx->groups; g; g = g->next)
		for (i = 0; !g->root && i < g->size; i++) {
			c = g->conns[i];
			/* one that is not up marks its own (fail, reconn) */
			if (c && c->state == RCX__CONN_UP && c->tx_unsig &&
			    !c->mark_busy)
				rcx__conn_tx_mark(c);
		}
}

int rcx__tx_init(struct rcx_ctx *ctx)
{
	size_t ss = rcx__slot_size(ctx), n = ctx->cfg.tx_depth, i;
	struct rcx__txslot *slots;
	int ret;

	slots = calloc(n, sizeof(*slots));
	if (!slots || posix_memalign((void **)&ctx->tx_mem, 64, n * ss)) {
		free(slots);
		return -ENOMEM;
	}
	ret = rcx__reg_get(ctx, ctx->tx_mem, n * ss, RCX_ACCESS_LOCAL_WRITE,
			   &ctx->tx_reg);
	if (ret) {
		free(slots);
		free(ctx->tx_mem);
		ctx->tx_mem = NULL;
		return ret;
	}
	ctx->tx_slots = slots;
	for (i = 0; i < n; i++) {
		slots[i].wrc.cb = on_tx;
		slots[i].wrc.ok = on_tx_ok;
		slots[i].data = ctx->tx_mem + i * ss;
		slots[i].next = ctx->tx_free;
		ctx->tx_free = &slots[i];
	}
	return 0;
}

void rcx__tx_fini(struct rcx_ctx *ctx)
{
	if (ctx->tx_reg)
		rcx__reg_put(ctx, ctx->tx_reg);
	free(ctx->tx_mem);
	free(ctx->tx_slots);
	ctx->tx_reg = NULL;
	ctx->tx_mem = NULL;
	ctx->tx_slots = NULL;
	ctx->tx_free = NULL;
}
