/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Reconnection of a world's or a pair's connection the transport gave
 * up on (the scheme is described at the top of conn.c; a pair's
 * connector remakes it, its acceptor waits, group.c): slots kept for
 * sending again, the new endpoint's attempts, and its coming up.
 */
#include <errno.h>
#include "lib/core/core.h"
#include "lib/core/conn_int.h"

/* Keep s for sending again, in number order. */
void rcx__conn_replay_add(struct rcx__conn *c, struct rcx__txslot *s)
{
	uint32_t seq = ((struct rcx__hdr *)s->data)->seq;
	struct rcx__txslot **pp = &c->replay;

	while (*pp &&
	       (int32_t)(((struct rcx__hdr *)(*pp)->data)->seq - seq) < 0)
		pp = &(*pp)->next;
	s->conn = NULL;
	s->next = *pp;
	*pp = s;
}

/* Send the kept slots again, as credits allow (UP only). */
void rcx__conn_replay_post(struct rcx__conn *c)
{
	struct rcx__txslot *s;
	int ret;

	while ((s = c->replay) && c->credits > 0) {
		c->replay = s->next;
		ret = rcx__conn_post_slot(c, s);
		if (ret) {
			s->next = c->replay;
			c->replay = s;
			rcx__conn_fail(c, ret);
			return;
		}
		c->ctx->st.wrs_posted++;
	}
}

/* The connection failed or went: the kept slots go back to the pool. */
void rcx__conn_replay_drop(struct rcx__conn *c)
{
	struct rcx__txslot *s;

	while ((s = c->replay)) {
		c->replay = s->next;
		s->next = c->ctx->tx_free;
		c->ctx->tx_free = s;
	}
}

bool rcx__conn_reconnect(struct rcx__conn *c, int err)
{
	struct rcx_ctx *ctx = c->ctx;

	if (c->state == RCX__CONN_RECONN)
		return true;
	/* a world's (whose ranks know each other's addresses) or a pair's */
	if (c->state != RCX__CONN_UP || !c->ep || !c->g ||
	    (!c->pair_token && (!c->lazy_addr || c->g != ctx->world)) ||
	    !ctx->cfg.ft_timeout_ms || c->g->failed[c->peer])
		return false;
	rcx__log(RCX__LOG_INFO, "conn",
		 "peer %d: connection broken (%s): reconnecting", c->peer,
		 rcx_strerror(err));
	c->state = RCX__CONN_RECONN;
	/* an ask of an earlier reconnection, its answer lost: this one
	 * asks anew */
	if (c->ask_ep) {
		ctx->ops->ep_destroy(c->ask_ep);
		c->ask_ep = NULL;
	}
	c->re_phase = RE_DRAIN;
	c->re_next_us = 0;
	ctx->nreconn++;
	ctx->wake_gen++;
	/* everything on it completes now, with its status or flushed */
	ctx->ops->ep_set_error(c->ep);
	rcx__conn_tx_mark(c);
	/* failed if the new connection does not come in time (fail.c) */
	rcx__group_suspect(c->g, c->peer, err);
	return c->state == RCX__CONN_RECONN;
}

void rcx__conn_reconn_stop(struct rcx__conn *c)
{
	if (c->state != RCX__CONN_RECONN)
		return;
	c->ctx->nreconn--;
	c->re_phase = 0;
	if (c->re_req) {
		c->ctx->ops->ep_reject(c->ctx->dev, c->re_req);
		c->re_req = NULL;
	}
}

/* The new endpoint is up: fresh credits, then what was kept goes first. */
void rcx__conn_reconn_up(struct rcx__conn *c)
{
	struct rcx_ctx *ctx = c->ctx;

	rcx__conn_reconn_stop(c);
	c->state = RCX__CONN_UP;
	/* it lives: nothing due from it (a disconnect's grace, a refusal) */
	rcx__conn_answer_done(c);
	c->gone = 0;
	if (c->old_ep) {
		ctx->ops->ep_destroy(c->old_ep);
		c->old_ep = NULL;
	}
	c->credits = (int)ctx->cfg.rx_depth - RCX__CREDIT_RESERVE;
	c->owed = 0;
	rcx__conn_unsuspect(c);
	ctx->wake_gen++;
	rcx__log(RCX__LOG_INFO, "conn",
		 "peer %d: reconnected; messages %u on sent again", c->peer,
		 c->replay ? ((struct rcx__hdr *)c->replay->data)->seq
			   : c->tx_seq);
	rcx__p2p_reread(c);
	if (c->replay || c->backlog)
		rcx__conn_pending_add(c);
}

/* The attempt's endpoint failed: it drains, and the next attempt comes. */
static void reconn_retry(struct rcx__conn *c)
{
	if (c->ep)
		c->ctx->ops->ep_set_error(c->ep);
	c->re_phase = RE_DRAIN;
	c->re_next_us = rcx__now_us() + RE_RETRY_US;
}

void rcx__conn_reconn_on_cm(struct rcx__conn *c, const struct rcx_cm_event *ev)
{
	/*
	 * The broken endpoint itself disconnected: the peer (or its
	 * kernel, for a process that died) ended it, where a peer that
	 * reconnects keeps its own until the new one is up. As on a
	 * connection that is up (conn.c, cm_ended): its process or context
	 * gone, it failed; ended by the peer, it is to show it lives.
	 */
	if (ev->type == RCX_CM_DISCONNECTED && !c->old_ep && ev->ep == c->ep) {
		while (rcx__progress(c->ctx) > 0)
			;
		if (c->state != RCX__CONN_RECONN) /* its BYE came */
			return;
		rcx__log(RCX__LOG_INFO, "conn",
			 "peer %d: the broken connection disconnected (%s)",
			 c->peer, rcx_strerror(ev->status));
		if (ev->status == -ESRCH || ev->status == -EHOSTDOWN)
			rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
		else if (ev->status == -ECONNRESET)
			rcx__conn_answer_due(c, RCX__GONE_GRACE_MS);
		return;
	}
	if (c->re_phase != RE_NEW || ev->ep != c->ep)
		return;
	if (ev->type == RCX_CM_ESTABLISHED)
		rcx__conn_reconn_up(c);
	else if (ev->type == RCX_CM_ERROR && c->lazy_connect &&
		 (ev->status == -ECONNREFUSED || ev->status == -EHOSTDOWN ||
		  ev->status == -ESRCH))
		rcx__conn_reconn_refused(c, ev->status);
	else
		reconn_retry(c);
}

/*
 * The peer refused c's reconnection: its answer to our connect (it
 * closed the connection, our BYE taken, or left; a peer that remakes it
 * never refuses a connect), or the system's, nothing listening where it
 * did (its context is gone) or its process dead (shm). No attempt is
 * made any more, and a clean exit waiting for the connection stops at
 * once (rcx__conn_settle). Otherwise it failed: it never said BYE on
 * the connection it had (a BYE closes it, and a peer that closes sends
 * it before it goes), so it did not leave, and a live rcx never refuses
 * a reconnection; a process that died leaves its kernel to end its
 * connections, and its listener with them.
 */
void rcx__conn_reconn_refused(struct rcx__conn *c, int status)
{
	if (c->state != RCX__CONN_RECONN)
		return;
	rcx__log(RCX__LOG_INFO, "conn", "peer %d: reconnection refused (%s)",
		 c->peer, rcx_strerror(status));
	if (status == -ESRCH || !c->settling) {
		rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
		return;
	}
	if (c->ep && c->re_phase == RE_NEW)
		c->ctx->ops->ep_set_error(c->ep);
	c->re_phase = RE_REFUSED;
	rcx__conn_gone(c);
}

/*
 * A new endpoint in place of the broken one: the broken one stays (in
 * error) until the new one is up; one of an attempt that failed goes.
 */
static void reconn_swap_ep(struct rcx__conn *c)
{
	if (!c->old_ep)
		c->old_ep = c->ep;
	else if (c->ep)
		c->ctx->ops->ep_destroy(c->ep);
	c->ep = NULL;
}

/* Make the new endpoint: connect, accept the peer's, or ask it to. */
static void reconn_attempt(struct rcx__conn *c, long long now)
{
	struct rcx_ctx *ctx = c->ctx;
	struct rcx_ep_attr a = rcx__conn_ep_attr(c);
	struct rcx_conn_req *req = c->re_req;
	struct rcx_ep *ep = NULL;
	uint8_t pd[56];
	size_t n;
	int ret;

	if (!req && now < c->re_next_us)
		return;
	c->re_next_us = now + RE_RETRY_US;
	if (!req && !c->lazy_connect) {
		/* the peer connects: ask it to (it may not know yet); a
		 * pair's acceptor has no address to ask: it waits */
		if (!c->lazy_addr)
			return;
		if (c->ask_ep && now - c->ask_us < RE_ASK_US)
			return;
		if (c->ask_ep) /* unanswered: asked again */
			ctx->ops->ep_destroy(c->ask_ep);
		c->ask_ep = NULL;
		c->ask_us = now;
		a = (struct rcx_ep_attr){ .ep_ctx = &c->ask,
					  .max_send_wr = 1,
					  .max_recv_wr = 1,
					  .timeout = ctx->cfg.qp_timeout,
					  .retry_cnt = ctx->cfg.qp_retry };
		n = rcx__group_reconn_pdata(c, true, pd);
		(void)ctx->ops->ep_connect(ctx->dev, c->lazy_addr, &a, pd, n,
					   &c->ask_ep);
		return;
	}
	reconn_swap_ep(c);
	c->rx_posted = 0;
	if (req) {
		c->re_req = NULL;
		ret = ctx->ops->ep_accept(ctx->dev, req, &a, &ep);
	} else {
		n = rcx__group_reconn_pdata(c, false, pd);
		ret = ctx->ops->ep_connect(ctx->dev, c->lazy_addr, &a, pd, n,
					   &ep);
	}
	if (ret) {
		/* no receive of a freed endpoint completes (as in accept) */
		c->ep = NULL;
		c->rx_posted = 0;
		return;
	}
	c->ep = ep;
	c->re_phase = RE_NEW;
	ctx->st.connects++;
}

/* the next step of c's reconnection, if one is due */
static void reconn_step(struct rcx__conn *c, long long now)
{
	if (c->re_phase == RE_DRAIN)
		rcx__conn_tx_mark(c);
	if (c->re_phase == RE_DRAIN && !c->rx_posted && !c->tx_inflight &&
	    !c->win_wr && !c->hb_busy && !c->mark_busy && !c->rd_inflight)
		c->re_phase = RE_READY;
	if (c->re_phase == RE_READY)
		reconn_attempt(c, now);
}

void rcx__conn_reconn_poll(struct rcx_ctx *ctx)
{
	long long now = rcx__now_us();
	struct rcx_group *g;
	struct rcx__conn *c;
	int i;

	/* the world's connections and the pairs' (sub-groups have none) */
	for (g = ctx->groups; g && ctx->nreconn; g = g->next)
		for (i = 0; !g->root && i < g->size && ctx->nreconn; i++) {
			c = g->conns[i];
			if (c && c->state == RCX__CONN_RECONN)
				reconn_step(c, now);
		}
}

void rcx__conn_reconn_req(struct rcx__conn *c, struct rcx_conn_req *req,
			  bool ask)
{
	struct rcx_ctx *ctx = c->ctx;

	/* the peer found the connection broken: so it is */
	if (c->state == RCX__CONN_UP)
		rcx__conn_reconnect(c, RCX_ERR_TRANSPORT);
	/* it lives and remakes it: nothing due from it, a refusal undone
	 * (the endpoint of the refused attempt drains first) */
	if (c->state == RCX__CONN_RECONN) {
		rcx__conn_answer_done(c);
		c->gone = 0;
		if (c->re_phase == RE_REFUSED) {
			c->re_phase = RE_DRAIN;
			c->re_next_us = 0;
		}
	}
	if (ask || c->state != RCX__CONN_RECONN) {
		ctx->ops->ep_reject(ctx->dev, req);
		return;
	}
	/* the peer gave up on an attempt of ours: its new one replaces it */
	if (c->re_phase == RE_NEW)
		reconn_retry(c);
	if (c->re_req)
		ctx->ops->ep_reject(ctx->dev, c->re_req);
	c->re_req = req;
}

/* c owes the peer messages, or a BYE over a connection being remade */
static bool conn_owes(const struct rcx__conn *c)
{
	if (c->state == RCX__CONN_RECONN)
		return true;
	return (c->state == RCX__CONN_CONNECTING || c->state == RCX__CONN_UP) &&
	       (c->backlog || c->replay || c->tx_inflight);
}

/*
 * Before a clean exit tears c down: what it owes goes out first (sends
 * waiting for the connection or for credits, kept for sending again, in
 * flight), then the BYE, and the exit waits for the BYE's completion: a
 * peer that never gets it takes the exit for a death. Over a connection
 * made again if the transport gives up on it meanwhile, the BYE again
 * (the broken endpoint's may not have arrived; the peer drops a second
 * one). Within RCX__SETTLE_MS, or as long as a reconnection may take
 * (RCX_FT_TIMEOUT_MS from the break; a peer that dies meanwhile ends it
 * sooner); past it the exit goes on without. True: the BYE went on the
 * endpoint c has now (nothing to send again at the teardown).
 */
bool rcx__conn_settle(struct rcx__conn *c)
{
	struct rcx_ctx *ctx = c->ctx;
	long long now = rcx__now_us(), re_end;
	long long end = now + RCX__SETTLE_MS * 1000LL;
	/* the connections made when the BYE went: one made since is a
	 * new endpoint, which the BYE has not gone on */
	uint64_t bye_at = 0;
	bool bye = false;

	/* the sends in flight are waited for: the unsignaled tail too */
	if (c->state == RCX__CONN_UP)
		rcx__conn_tx_mark(c);
	c->settling = 1;
	for (;;) {
		/* the peer refused the new connection: it has closed, or
		 * its context is gone; nothing will take the BYE again */
		if (c->state == RCX__CONN_RECONN && c->re_phase == RE_REFUSED)
			break;
		if (c->state == RCX__CONN_UP && !conn_owes(c)) {
			if (bye && ctx->st.connects == bye_at)
				break; /* it went, and its completion came */
			bye = !rcx__conn_bye(c);
			bye_at = ctx->st.connects;
		} else if (!conn_owes(c)) {
			break; /* failed, closed, or never connected */
		}
		if (ctx->in_cm || now >= end)
			break;
		rcx__progress(ctx);
		rcx__cm_progress(ctx);
		now = rcx__now_us();
		re_end = c->suspect_us +
			 (long long)ctx->cfg.ft_timeout_ms * 1000;
		if (c->state == RCX__CONN_RECONN && c->suspect_us &&
		    re_end > end)
			end = re_end;
	}
	c->settling = 0;
	return bye && c->state == RCX__CONN_UP && ctx->st.connects == bye_at;
}
