/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections: one reliable endpoint per peer, per-connection rings of
 * pre-posted receive buffers, send bounce slots shared by the context,
 * and credit-based flow control (a sender spends one credit per message;
 * the receiver reposts the buffers of such messages in batches, and
 * returns their credits piggybacked on its own messages, or in a CREDIT
 * message once half the ring was reposted). RNR retry stays on as a
 * backstop for the control messages that need no credit.
 *
 * Reconnection: when the transport gives up on a world connection (its
 * retries ran out) the peer may be alive, so the connection is remade
 * rather than failed. Every message that spends a credit carries the
 * connection's number (hdr.seq). The broken endpoint goes to error and
 * drains: a message whose send completed was delivered (RC: the peer's
 * receive completed, and the peer takes every successful receive, also
 * from a broken endpoint); one whose send failed may or may not have
 * been, and its bounce slot is kept, in number order. The rank that made
 * the connection connects again (the other asks it to, as a lazy pair
 * does), the new endpoint starts with fresh credits, the kept slots go
 * out first, then what waited; the receiver drops a number it has taken
 * already. Rendezvous READs start over on the new endpoint (p2p.c). RMA
 * in flight at the break is posted again on the new endpoint in order,
 * and RMA while it is remade waits for it, but an atomic in flight, its
 * outcome unknown, reports RCX_ERR_TRANSPORT (lib/win/win_replay.c). The
 * peer stays suspect (fail.c) until the new endpoint is up: if that takes
 * RCX_FT_TIMEOUT_MS, or the launcher reports its death, it fails.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"
#include "lib/core/conn_int.h"

/* An eager message of a point-to-point send goes with its header in the
 * immediate when it fits (conn_int.h). */
static bool imm_fits(const struct rcx__conn *c, const struct rcx__hdr *h)
{
	return h->type == RCX__MSG_EAGER && h->len && !h->gid &&
	       (uint32_t)h->tag <= IMM_TAG_MAX &&
	       (unsigned int)c->owed <= IMM_CREDITS_MAX;
}

static void pwr_drop(struct rcx_ctx *ctx, struct rcx_pwr **p)
{
	if (*p)
		ctx->ops->pwr_destroy(*p);
	*p = NULL;
}

/* A prepared WR from w for ep, unless *p is one of ep's maker already. */
static int pwr_make(struct rcx_ctx *ctx, struct rcx_ep *ep,
		    const struct rcx_wr *w, int recv, struct rcx_pwr **p)
{
	if (*p && rcx__obj_ops(*p) == rcx__obj_ops(ep))
		return 0;
	pwr_drop(ctx, p);
	return ctx->ops->pwr_create(ep, w, recv, p);
}

static void conn_pwrs_free(struct rcx__conn *c)
{
	size_t i;

	for (i = 0; c->rx && i < c->ctx->cfg.rx_depth; i++)
		pwr_drop(c->ctx, &c->rx[i].pwr);
	for (i = 0; i < 6; i++)
		pwr_drop(c->ctx, &c->tx_pwr[i]);
}

/*
 * The connection's prepared WRs, made for ep's maker: a receive per ring
 * buffer, and the bounce-slot sends, plain and inline, with the header
 * in the message or in the immediate (a message patches the slot's
 * address, its length, the wr_id and the immediate: no conversion per
 * message).
 */
static int conn_pwrs(struct rcx__conn *c, struct rcx_ep *ep)
{
	struct rcx_ctx *ctx = c->ctx;
	struct rcx_wr w = {
		.op = RCX_OP_RECV,
		.length = rcx__slot_size(ctx),
		.lkey = c->rx_reg->lkey,
	};
	unsigned long i;
	int ret = 0;

	for (i = 0; i < ctx->cfg.rx_depth && !ret; i++) {
		w.wr_id = (uintptr_t)&c->rx[i].wrc;
		w.addr = (uintptr_t)c->rx[i].data;
		ret = pwr_make(ctx, ep, &w, 1, &c->rx[i].pwr);
	}
	w.lkey = ctx->tx_reg->lkey;
	w.wr_id = 0;
	w.addr = 0;
	w.length = 0;
	for (i = 0; i < 6 && !ret; i++) {
		w.op = i & 6 ? RCX_OP_SEND_IMM : RCX_OP_SEND;
		w.flags = (i < 4 ? RCX_WR_SIGNALED : 0) |
			  (i & 1 ? RCX_WR_INLINE : 0);
		ret = pwr_make(ctx, ep, &w, 0, &c->tx_pwr[i]);
	}
	c->tx_inline = (uint32_t)ctx->cfg.inline_size;
	if (ctx->ops->ep_max_inline(ep) < c->tx_inline)
		c->tx_inline = ctx->ops->ep_max_inline(ep);
	return ret;
}

/* Called by the provider as soon as the endpoint takes receives. */
static int on_ready(struct rcx_ep *ep, void *arg)
{
	struct rcx__conn *c = arg;
	unsigned long i;
	int ret;

	ret = conn_pwrs(c, ep);
	if (ret)
		return ret;
	c->ep = ep;
	c->nhold = 0; /* held buffers too: every one goes to the new ep */
	for (i = 0; i < c->ctx->cfg.rx_depth; i++) {
		ret = rcx__conn_post_rx(c, &c->rx[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static void ask_on_cm(struct rcx__epobj *o, const struct rcx_cm_event *ev);
static int post_msg(struct rcx__conn *c, struct rcx_req *r, uint8_t type);

void rcx__conn_answer_due(struct rcx__conn *c, long long ms)
{
	long long by = rcx__now_us() + ms * 1000;

	if (!c->answer_by_us)
		c->ctx->nanswer++;
	if (!c->answer_by_us || c->answer_by_us > by)
		c->answer_by_us = by;
}

/*
 * Nothing listens where the peer did: its context is gone. A launcher
 * tells of a death within the grace; if none does, it left (ft.c).
 * Where no launcher tells of deaths (rcx__deaths_told), a departure
 * cannot be told from a death: it is failed, so that the group hears of
 * it (fail.c's notices) instead of waiting for it.
 */
void rcx__conn_gone(struct rcx__conn *c)
{
	if (!rcx__deaths_told(c->ctx)) {
		rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
		return;
	}
	c->gone = 1;
	rcx__conn_answer_due(c, RCX__GONE_GRACE_MS);
	/* the next poll of launcher notices is not held back */
	c->ctx->notice_next_us = 0;
}

/*
 * The connection manager ended c, which was up (or is closed or failed
 * already); ev's status says how (it is logged).
 *  - -ESRCH (shm: the peer's process died), -EHOSTDOWN (nothing listens
 *    where it did: its context is gone): the peer failed.
 *  - -ECONNRESET: the peer ended it (its disconnect, or its endpoint
 *    destroyed): by its death (its kernel ends what the process left),
 *    by leaving without a BYE that came, on purpose, or as a live peer
 *    that gave up an endpoint of a reconnection. A break, made again,
 *    but the peer must show it is alive within RCX__GONE_GRACE_MS (its
 *    reconnection request, its answer to our ask, or the new endpoint
 *    up: conn_reconn.c, ask_on_cm), or it failed; a dead peer's
 *    listener refuses the new connection sooner.
 *  - anything else (the connection manager giving up on a handshake
 *    that c took for done when the peer's first message came, on_rx; a
 *    disconnect of ours unanswered): its messages were lost or late on
 *    the link, and the peer is alive. A break, handled as an error
 *    completion's (a reconnection, the peer suspect meanwhile), never a
 *    process failure by itself.
 */
static void cm_ended(struct rcx__conn *c, const struct rcx_cm_event *ev)
{
	bool up = c->state == RCX__CONN_UP;
	bool dead = ev->status == -ESRCH || ev->status == -EHOSTDOWN;
	bool reset =
		ev->type == RCX_CM_DISCONNECTED && ev->status == -ECONNRESET;

	if (up)
		rcx__log(RCX__LOG_INFO, "conn",
			 "peer %d: the connection manager ended the connection "
			 "(%s, %s): %s",
			 c->peer,
			 ev->type == RCX_CM_ERROR ? "error" : "disconnected",
			 rcx_strerror(ev->status),
			 dead	 ? "failed"
			 : reset ? "broken, the peer to show it lives"
				 : "broken, not failed");
	if (!up || dead)
		rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
	else if (!reset)
		(void)rcx__conn_wc_error(c, RCX_ERR_TRANSPORT);
	else if (rcx__conn_reconnect(c, RCX_ERR_TRANSPORT))
		rcx__conn_answer_due(c, RCX__GONE_GRACE_MS);
	else
		rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
}

static void conn_on_cm(struct rcx__epobj *o, const struct rcx_cm_event *ev)
{
	struct rcx__conn *c = (struct rcx__conn *)o;

	/* an endpoint a reconnection replaced (the peer dropping its own
	 * old one disconnects it): nothing to do with the connection now */
	if (ev->ep && c->ep && ev->ep != c->ep)
		return;
	if (c->state == RCX__CONN_RECONN) {
		rcx__conn_reconn_on_cm(c, ev);
		return;
	}
	switch (ev->type) {
	case RCX_CM_ESTABLISHED:
		rcx__conn_answer_done(c);
		RCX__LOG(RCX__LOG_DEBUG, "conn", "peer %d: connected", c->peer);
		if (c->state == RCX__CONN_CONNECTING) {
			c->state = RCX__CONN_UP;
			rcx__fail_tell(c);
			if (c->backlog)
				rcx__conn_pending_add(c);
		}
		break;
	case RCX_CM_DISCONNECTED:
		/* what the peer sent before it left is in the CQ already:
		 * deliver it before the connection is declared failed */
		while (rcx__progress(c->ctx) > 0)
			;
		/* fall through */
	case RCX_CM_ERROR:
		if (c->state != RCX__CONN_CONNECTING) {
			cm_ended(c, ev);
			break;
		}
		/* a member of the job that is no longer there left (or
		 * died: rcx__conn_gone); elsewhere nothing listens: refused */
		if (ev->status == -EHOSTDOWN && c->g && c->g == c->ctx->world)
			rcx__conn_gone(c);
		else if ((ev->status == -ECONNREFUSED ||
			  ev->status == -ESRCH) &&
			 c->g && c->g == c->ctx->world)
			/* a member listened there: it is there and refuses,
			 * or its process died (shm sees it), it died */
			rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
		else
			rcx__conn_fail(c, ev->status == -EHOSTDOWN ||
							  ev->status == -ESRCH
						  ? -ECONNREFUSED
						  : ev->status);
		break;
	}
}

int rcx__conn_new(struct rcx_ctx *ctx, struct rcx_group *g, int peer,
		  struct rcx__conn **out)
{
	struct rcx__conn *c;

	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->obj.on_cm = conn_on_cm;
	c->ask.on_cm = ask_on_cm;
	c->ctx = ctx;
	c->g = g;
	c->peer = peer;
	c->state = RCX__CONN_CONNECTING;
	c->txq_end = &c->txq;
	c->credits = (int)ctx->cfg.rx_depth - RCX__CREDIT_RESERVE;
	/*
	 * At most half the peer's credits held back: it keeps credits to
	 * send with while we hold buffers, and the messages it sends fill
	 * the batch (the held ones' credits are still out, never returned
	 * before they are posted again).
	 */
	c->rx_batch = (uint8_t)(c->credits / 2 < RCX__RX_BATCH ? c->credits / 2
							       : RCX__RX_BATCH);
	if (c->rx_batch < 1)
		c->rx_batch = 1;
	c->credit_at = (int)ctx->cfg.rx_depth / 2 / c->rx_batch * c->rx_batch;
	*out = c;
	return 0;
}

/*
 * The receive ring, made when the connection starts (a lazy connection
 * that is never used costs no ring and no registration).
 */
static int conn_ring(struct rcx__conn *c)
{
	struct rcx_ctx *ctx = c->ctx;
	size_t ss = rcx__slot_size(ctx), n = ctx->cfg.rx_depth, i;
	int ret;

	if (c->rx)
		return 0;
	c->rx = calloc(n, sizeof(*c->rx));
	if (!c->rx || posix_memalign((void **)&c->rx_mem, 64, n * ss)) {
		ret = -ENOMEM;
		goto err;
	}
	ret = rcx__reg_get(ctx, c->rx_mem, n * ss, RCX_ACCESS_LOCAL_WRITE,
			   &c->rx_reg);
	if (ret)
		goto err;
	for (i = 0; i < n; i++) {
		c->rx[i].wrc.cb = rcx__conn_on_rx;
		c->rx[i].wrc.ok = rcx__conn_on_rx_ok;
		c->rx[i].conn = c;
		c->rx[i].data = c->rx_mem + i * ss;
	}
	return 0;
err:
	free(c->rx_mem);
	free(c->rx);
	c->rx_mem = NULL;
	c->rx = NULL;
	return ret;
}

/*
 * A connection's send queue: bounce-slot sends plus one READ per credit
 * the peer has, plus the windows' share (RCX__WIN_SQ_DEPTH), plus the
 * probe (ft.c) and the mark of the unsignaled sends (conn_tx.c).
 */
#define RCX__CONN_SQ_EXTRA (RCX__WIN_SQ_DEPTH + 2)

static unsigned long conn_sq_depth(const struct rcx__config *cfg)
{
	return cfg->tx_depth + cfg->rx_depth + RCX__CONN_SQ_EXTRA;
}

int rcx__conn_depth_check(const struct rcx_ctx *ctx)
{
	const struct rcx__config *cfg = &ctx->cfg;
	unsigned long sq = conn_sq_depth(cfg), cqe = sq + cfg->rx_depth;
	bool sq_over = sq > ctx->info.max_qp_wr;

	if (!sq_over && cqe <= ctx->info.max_cqe)
		return 0;
	rcx__log(RCX__LOG_ERROR, "conn",
		 "RCX_TX_DEPTH=%lu with RCX_RX_DEPTH=%lu needs %s of %lu "
		 "(RCX_TX_DEPTH + %sRCX_RX_DEPTH + %d); device %s takes at "
		 "most %u (%s)",
		 cfg->tx_depth, cfg->rx_depth,
		 sq_over ? "send queues" : "completion entries per connection",
		 sq_over ? sq : cqe, sq_over ? "" : "2 * ", RCX__CONN_SQ_EXTRA,
		 ctx->info.name,
		 sq_over ? ctx->info.max_qp_wr : ctx->info.max_cqe,
		 sq_over ? "max_qp_wr" : "max_cqe");
	return -EINVAL;
}

struct rcx_ep_attr rcx__conn_ep_attr(struct rcx__conn *c)
{
	const struct rcx__config *cfg = &c->ctx->cfg;
	struct rcx_ep_attr a = {
		.ep_ctx = c,
		.on_ready = on_ready,
		.max_send_wr = conn_sq_depth(cfg),
		.max_recv_wr = cfg->rx_depth,
		.max_inline = cfg->inline_size,
		.timeout = cfg->qp_timeout,
		.retry_cnt = cfg->qp_retry,
		.rnr_retry = cfg->rnr_retry,
	};
	return a;
}

int rcx__conn_connect(struct rcx__conn *c, const char *addr, const void *pdata,
		      size_t plen)
{
	struct rcx_ep_attr a = rcx__conn_ep_attr(c);
	struct rcx_ep *ep;
	int ret;

	ret = conn_ring(c);
	if (ret)
		return ret;
	ret = c->ctx->ops->ep_connect(c->ctx->dev, addr, &a, pdata, plen, &ep);
	if (!ret) {
		c->ep = ep;
		c->state = RCX__CONN_CONNECTING;
		c->ctx->st.connects++;
	}
	return ret;
}

int rcx__conn_accept(struct rcx__conn *c, struct rcx_conn_req *req)
{
	struct rcx_ep_attr a = rcx__conn_ep_attr(c);
	struct rcx_ep *ep;
	int ret;

	ret = conn_ring(c);
	if (ret)
		return ret;
	ret = c->ctx->ops->ep_accept(c->ctx->dev, req, &a, &ep);
	if (!ret) {
		c->ep = ep;
		c->state = RCX__CONN_CONNECTING;
		c->ctx->st.connects++;
	} else {
		/* on_ready may have taken the endpoint the provider has
		 * freed since (the peer went in between): no receive of it
		 * will complete */
		c->ep = NULL;
		c->rx_posted = 0;
	}
	return ret;
}

int rcx__conn_set_peer(struct rcx__conn *c, const char *addr, bool connects)
{
	char *a = strdup(addr);

	if (!a)
		return -ENOMEM;
	free(c->lazy_addr);
	c->lazy_addr = a;
	c->lazy_connect = connects;
	return 0;
}

int rcx__conn_set_lazy(struct rcx__conn *c, const char *addr, bool connects,
		       const void *pdata, const void *ask, size_t plen)
{
	int ret;

	if (plen > sizeof(c->lazy_pd))
		return -EINVAL;
	ret = rcx__conn_set_peer(c, addr, connects);
	if (ret)
		return ret;
	memcpy(c->lazy_pd, pdata, plen);
	memcpy(c->lazy_ask, ask, plen);
	c->lazy_len = (uint8_t)plen;
	c->state = RCX__CONN_IDLE;
	return 0;
}

/*
 * The ask endpoint's answer: the peer rejects it (and connects to us, or
 * already has), or it fails (the peer is gone: the launcher or a failed
 * connection tells the group). Either way it is done.
 */
static void ask_on_cm(struct rcx__epobj *o, const struct rcx_cm_event *ev)
{
	struct rcx__conn *c =
		(struct rcx__conn *)((char *)o -
				     offsetof(struct rcx__conn, ask));

	if (ev->ep == c->ask_ep && ev->type != RCX_CM_CONNECT_REQUEST) {
		c->ctx->ops->ep_destroy(c->ask_ep);
		c->ask_ep = NULL;
		if (ev->status == -EHOSTDOWN &&
		    c->state == RCX__CONN_CONNECTING) {
			rcx__conn_gone(c);
			return;
		}
		/* refused by its death, not by its answer (shm tells them
		 * apart): nobody will connect */
		if (ev->status == -ESRCH && c->state == RCX__CONN_CONNECTING) {
			rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
			return;
		}
		/* a reconnection's ask that only the system answers: the
		 * peer's context is gone, or it died (conn_reconn.c) */
		if ((ev->status == -EHOSTDOWN || ev->status == -ESRCH) &&
		    c->state == RCX__CONN_RECONN) {
			rcx__conn_reconn_refused(c, ev->status);
			return;
		}
		/* one the peer's own rcx refused, as it refuses every ask:
		 * it lives (it connects once its side has drained) */
		if (ev->status == -ECONNREFUSED &&
		    c->state == RCX__CONN_RECONN && !c->gone)
			rcx__conn_answer_done(c);
		/* a live peer connects now; a dead one never (ft.c) */
		if (c->state != RCX__CONN_CONNECTING)
			return;
		if (!c->answer_by_us) {
			c->answer_by_us =
				rcx__now_us() +
				(long long)c->ctx->cfg.connect_timeout_ms *
					1000;
			c->ctx->nanswer++;
		}
		c->reask_ms =
			c->reask_ms ? 2 * c->reask_ms : RCX__GONE_GRACE_MS;
		c->reask_us = rcx__now_us() + c->reask_ms * 1000LL;
	}
}

/* The peer's connection came, or the connection ended. */
void rcx__conn_answer_done(struct rcx__conn *c)
{
	c->reask_us = 0;
	if (c->answer_by_us) {
		c->answer_by_us = 0;
		c->ctx->nanswer--;
	}
}

/* Ask the higher rank to connect (the answer: ask_on_cm). */
static int conn_ask(struct rcx__conn *c)
{
	struct rcx_ep_attr a = {
		.ep_ctx = &c->ask,
		.max_send_wr = 1,
		.max_recv_wr = 1,
		.timeout = c->ctx->cfg.qp_timeout,
		.retry_cnt = c->ctx->cfg.qp_retry,
	};

	return c->ctx->ops->ep_connect(c->ctx->dev, c->lazy_addr, &a,
				       c->lazy_ask, c->lazy_len, &c->ask_ep);
}

int rcx__conn_start(struct rcx__conn *c)
{
	int ret;

	if (c->state != RCX__CONN_IDLE)
		return 0;
	if (c->lazy_connect)
		return rcx__conn_connect(c, c->lazy_addr, c->lazy_pd,
					 c->lazy_len);
	/* the answer is the peer's request, accepted in group.c */
	ret = conn_ask(c);
	if (!ret)
		c->state = RCX__CONN_CONNECTING;
	return ret;
}

void rcx__conn_reask(struct rcx__conn *c)
{
	c->reask_us = 0;
	/* its connection under way, or an ask still out: nothing to ask */
	if (c->state != RCX__CONN_CONNECTING || c->ep || c->ask_ep)
		return;
	RCX__LOG(RCX__LOG_DEBUG, "conn", "peer %d: asked again", c->peer);
	/* one that cannot be made leaves the peer to answer_by_us */
	(void)conn_ask(c);
}

void rcx__conn_pending_add(struct rcx__conn *c)
{
	struct rcx__conn *it;

	for (it = c->ctx->pending; it; it = it->next_pending)
		if (it == c)
			return;
	c->next_pending = c->ctx->pending;
	c->ctx->pending = c;
	rcx__progress_due(c->ctx);
}

static void pending_del(struct rcx__conn *c)
{
	struct rcx__conn **pp;

	for (pp = &c->ctx->pending; *pp; pp = &(*pp)->next_pending)
		if (*pp == c) {
			*pp = c->next_pending;
			return;
		}
}

static void withdrawn_drop(struct rcx__conn *c);

/* Complete everything queued on the connection with err. */
static void drain_reqs(struct rcx__conn *c, int err)
{
	struct rcx_req *r;

	while ((r = c->backlog)) {
		c->backlog = r->next;
		r->next = NULL;
		rcx__req_complete(r, err);
	}
	c->backlog_tail = NULL;
	while ((r = c->rndv)) {
		c->rndv = r->next;
		r->next = NULL;
		rcx__reg_put(c->ctx, r->reg);
		r->reg = NULL;
		rcx__req_complete(r, err);
	}
	withdrawn_drop(c);
	rcx__conn_replay_drop(c);
	rcx__p2p_rereads_fail(c, err);
	pending_del(c);
}

/* Take the requests of g on cid out of the list at *pp. */
static struct rcx_req *take_sends(struct rcx_req **pp, struct rcx_group *g,
				  int cid, struct rcx_req **tail)
{
	struct rcx_req *r, *out = NULL, *last = NULL;

	while ((r = *pp)) {
		if (r->g != g || r->cid != cid) {
			last = r;
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		r->next = out;
		out = r;
	}
	if (tail)
		*tail = last;
	return out;
}

/*
 * r waited for its FIN: the peer may be reading its memory now. Its
 * registration goes when the FIN comes, or with the connection.
 */
static void withdraw(struct rcx__conn *c, struct rcx_req *r)
{
	struct rcx__withdrawn *w;

	if (r->keep_reg || !r->reg)
		return;
	w = malloc(sizeof(*w));
	if (!w) {
		rcx__reg_put(c->ctx, r->reg);
	} else {
		w->reg = r->reg;
		w->id = r->rndv_id;
		w->next = c->withdrawn;
		c->withdrawn = w;
	}
	r->reg = NULL;
}

bool rcx__conn_withdrawn_fin(struct rcx__conn *c, uint32_t id)
{
	struct rcx__withdrawn *w, **pp;

	for (pp = &c->withdrawn; (w = *pp); pp = &w->next) {
		if (w->id != id)
			continue;
		*pp = w->next;
		rcx__reg_put(c->ctx, w->reg);
		free(w);
		return true;
	}
	return false;
}

static void withdrawn_drop(struct rcx__conn *c)
{
	struct rcx__withdrawn *w;

	while ((w = c->withdrawn)) {
		c->withdrawn = w->next;
		rcx__reg_put(c->ctx, w->reg);
		free(w);
	}
}

void rcx__conn_cancel_sends(struct rcx_group *g, int cid, int err)
{
	struct rcx_group *root = rcx__group_root(g);
	struct rcx_req *r, *next;
	struct rcx__conn *c;
	int i;

	for (i = 0; i < root->size; i++) {
		c = root->conns[i];
		if (!c)
			continue;
		r = take_sends(&c->backlog, g, cid, &c->backlog_tail);
		for (; r; r = next) {
			next = r->next;
			r->next = NULL;
			rcx__req_complete(r, err);
		}
		r = take_sends(&c->rndv, g, cid, NULL);
		for (; r; r = next) {
			next = r->next;
			r->next = NULL;
			withdraw(c, r);
			rcx__req_complete(r, err);
		}
	}
}

void rcx__conn_fail(struct rcx__conn *c, int err)
{
	/* a sign of death after the transport gave up: now it failed */
	if (c->state == RCX__CONN_FAILED && c->suspect_us &&
	    !rcx__err_transport(err) && c->g)
		rcx__group_failed(c->g, c->peer, RCX_ERR_PROC_FAILED);
	if (c->state == RCX__CONN_FAILED || c->state == RCX__CONN_CLOSED)
		return;
	RCX__LOG(RCX__LOG_DEBUG, "conn", "peer %d: connection failed (%s)",
		 c->peer, rcx_strerror(err));
	rcx__conn_reconn_stop(c);
	c->state = RCX__CONN_FAILED;
	c->error = err;
	c->ctx->wake_gen++;
	rcx__conn_answer_done(c);
	/* whatever is still queued on it flushes now, not after retries */
	if (c->ep)
		c->ctx->ops->ep_set_error(c->ep);
	rcx__conn_tx_mark(c);
	drain_reqs(c, err);
	rcx__p2p_peer_failed(c, err);
	/* the peer is gone for everything on the group (fail.c); if only
	 * the transport gave up, it may be alive: suspect until known */
	if (c->g && rcx__err_transport(err))
		rcx__group_suspect(c->g, c->peer, err);
	else if (c->g)
		rcx__group_failed(c->g, c->peer, err);
}

/*
 * An error completion of a WR on c's endpoint (its own sends and
 * receives, a rendezvous READ, a window's RMA, the heartbeat): c fails
 * with what the status says, a transport failure staying one. A flush
 * only says the endpoint went to error first: when c had not failed yet,
 * the provider tore it down because the peer's side is gone (shm: the
 * peer exited or disconnected); verbs reports a cause on the WR that
 * failed. Returns the error the WR's operation reports.
 */
int rcx__conn_wc_error(struct rcx__conn *c, int status)
{
	/* the broken endpoint's WRs (a window's RMA among them): their
	 * outcome is unknown, the connection is being remade */
	if (c->state == RCX__CONN_RECONN)
		return RCX_ERR_TRANSPORT;
	if (rcx__err_transport(status) && rcx__conn_reconnect(c, status))
		return status;
	if (c->state != RCX__CONN_FAILED && c->state != RCX__CONN_CLOSED)
		rcx__conn_fail(c, status == RCX_ERR_FLUSHED
					  ? RCX_ERR_PROC_FAILED
					  : status);
	if (c->state == RCX__CONN_FAILED)
		return c->error;
	return c->state == RCX__CONN_CLOSED ? -ECONNRESET : status;
}

void rcx__conn_left(struct rcx__conn *c)
{
	if (c->state == RCX__CONN_FAILED || c->state == RCX__CONN_CLOSED)
		return;
	RCX__LOG(RCX__LOG_DEBUG, "conn", "peer %d: left", c->peer);
	rcx__conn_unsuspect(c);
	rcx__conn_reconn_stop(c);
	c->state = RCX__CONN_CLOSED;
	c->ctx->wake_gen++;
	rcx__conn_answer_done(c);
	drain_reqs(c, -ECONNRESET);
	rcx__p2p_peer_failed(c, -ECONNRESET);
}

/*
 * Completions still queued for the endpoint point into this connection:
 * flush the endpoint (error state) and reap them before freeing anything.
 */
void rcx__conn_destroy(struct rcx__conn *c)
{
	struct rcx_ctx *ctx;
	long long end;
	bool was_up, bye;

	if (!c)
		return;
	ctx = c->ctx;
	/*
	 * Sends already taken wait for the connection (lazy), for credits
	 * or for a reconnection: a clean exit delivers them and the BYE,
	 * within a bound, instead of dropping them; the peer would take the
	 * lost message and the missing BYE for a failure.
	 */
	bye = rcx__conn_settle(c);
	/*
	 * Out of the group first: the progress below runs the heartbeat
	 * (ft.c) over the group's connections, this one and those already
	 * freed before it included.
	 */
	if (c->g && c->peer >= 0 && c->peer < c->g->size &&
	    c->g->conns[c->peer] == c)
		c->g->conns[c->peer] = NULL;
	rcx__conn_reconn_stop(c);
	drain_reqs(c, -ECANCELED);
	rcx__conn_answer_done(c);
	rcx__conn_unsuspect(c);
	/* CLOSED already: the peer said BYE, so it was up (or it left
	 * before it ever was: gone) */
	was_up = c->state == RCX__CONN_UP ||
		 (c->state == RCX__CONN_CLOSED && !c->gone);
	if (c->state != RCX__CONN_FAILED)
		c->state = RCX__CONN_CLOSED;
	if (c->ep) {
		/* a peer that sees us go without this takes it for a
		 * failure (ft.c); it needs no credit, like CREDIT. Never
		 * on a connection that was not up: its endpoint may not
		 * take sends yet, and there is no peer to tell. */
		if (was_up && !bye && ctx->tx_free)
			post_msg(c, NULL, RCX__MSG_BYE);
		rcx__conn_tx_mark(c);
		/* let our last sends be acknowledged first: flushing them
		 * would take a message the peer may still wait for */
		end = rcx__now_us() + 1000000;
		while (c->tx_inflight > 0 && c->state == RCX__CONN_CLOSED &&
		       rcx__now_us() < end)
			rcx__progress(ctx);
		ctx->ops->ep_set_error(c->ep);
		rcx__conn_tx_mark(c);
		end = rcx__now_us() + 2000000;
		while ((c->rx_posted > 0 || c->tx_inflight > 0 || c->hb_busy ||
			c->mark_busy) &&
		       rcx__now_us() < end)
			rcx__progress(ctx);
		ctx->ops->ep_destroy(c->ep);
	}
	if (c->ask_ep)
		ctx->ops->ep_destroy(c->ask_ep);
	if (c->old_ep)
		ctx->ops->ep_destroy(c->old_ep);
	free(c->lazy_addr);
	rcx__reg_put(ctx, c->rx_reg);
	if (c->rx_posted > 0 || c->tx_inflight > 0 || c->hb_busy ||
	    c->mark_busy)
		return; /* never reaped: leak rather than free live memory */
	conn_pwrs_free(c);
	free(c->rx_mem);
	free(c->rx);
	free(c);
}

/*
 * Post the message in bounce slot s (a new one, or one sent again after
 * a reconnection): it carries the credits owed now; with its header in
 * the immediate if may_imm and it fits.
 */
static int slot_post(struct rcx__conn *c, struct rcx__txslot *s, bool may_imm)
{
	struct rcx_ctx *ctx = c->ctx;
	struct rcx__hdr *h = (struct rcx__hdr *)s->data;
	bool imm = may_imm && imm_fits(c, h);
	struct rcx_pwr *p;
	uint32_t len;
	int ret;

	h->credits = (uint16_t)c->owed;
	len = (uint32_t)(h->type == RCX__MSG_EAGER ? h->len : 0);
	if (!imm)
		len += sizeof(*h);
	p = c->tx_pwr[(imm ? 2 : 0) + (len <= c->tx_inline)];
	*p->wr_id = (uintptr_t)&s->wrc;
	*p->addr = (uintptr_t)(imm ? (uint8_t *)(h + 1) : s->data);
	*p->length = len;
	if (imm)
		*p->imm_be = htobe32((uint32_t)c->owed << 26 |
				     (uint32_t)h->cid << IMM_CID_SHIFT |
				     (uint32_t)h->tag);
	ret = ctx->ops->pwr_post(c->ep, &p, 1);
	if (ret) {
		/* a free slot's conn is stale (conn_tx.c): reported refused
		 * all the same, it must name none */
		s->conn = NULL;
		return ret;
	}
	s->conn = c;
	rcx__txq_add(c, s);
	rcx__txq_covered(c);
	c->owed = 0;
	if (rcx__needs_credit(h->type))
		c->credits--;
	return 0;
}

int rcx__conn_post_slot(struct rcx__conn *c, struct rcx__txslot *s)
{
	return slot_post(c, s, false);
}

/* Post one message from a bounce slot. */
static int post_msg(struct rcx__conn *c, struct rcx_req *r, uint8_t type)
{
	struct rcx_ctx *ctx = c->ctx;
	struct rcx__txslot *s = ctx->tx_free;
	struct rcx__hdr *h = (struct rcx__hdr *)s->data;
	size_t payload = 0;
	int ret;

	memset(h, 0, sizeof(*h));
	s->imm_len = 0;
	h->type = type;
	h->seq = c->tx_seq;
	if (r) {
		h->cid = r->cid;
		h->tag = r->tag;
		h->id = r->rndv_id;
		h->gid = r->g ? r->g->gid : 0;
		if (type == RCX__MSG_EAGER) {
			payload = r->len;
			h->len = (uint32_t)payload;
			if (payload)
				memcpy(h + 1, r->buf, payload);
		} else if (type == RCX__MSG_RTS) {
			h->addr = (uintptr_t)r->buf;
			h->size = r->len;
			h->rkey = r->reg->rkey;
		}
	}
	/* a point-to-point send: matched by (cid, tag) alone */
	ctx->tx_free = s->next;
	ret = slot_post(c, s, r && r->kind == RCX__REQ_SEND);
	if (ret) {
		s->next = ctx->tx_free;
		ctx->tx_free = s;
		return ret;
	}
	c->tx_seq += rcx__needs_credit(type);
	rcx__stats_tx(&ctx->st, type, r);
	return 0;
}

int rcx__conn_credit_send(struct rcx__conn *c)
{
	return post_msg(c, NULL, RCX__MSG_CREDIT);
}

int rcx__conn_bye(struct rcx__conn *c)
{
	return c->ctx->tx_free ? post_msg(c, NULL, RCX__MSG_BYE) : -EAGAIN;
}

/* The message a request waits to send has gone out. */
static void sent(struct rcx__conn *c, struct rcx_req *r)
{
	switch (r->sendop) {
	case RCX__MSG_EAGER:
		r->status.count = r->len;
		rcx__req_complete(r, 0);
		break;
	case RCX__MSG_RTS: /* now wait for FIN */
		r->next = c->rndv;
		c->rndv = r;
		break;
	case RCX__MSG_FIN: /* the receive is done */
		rcx__req_complete(r, r->status.error);
		break;
	}
}

static bool can_send(const struct rcx__conn *c)
{
	return c->credits > 0 && c->ctx->tx_free;
}

int rcx__conn_send(struct rcx__conn *c, struct rcx_req *r)
{
	int ret;

	if (c->state == RCX__CONN_FAILED)
		return c->error;
	/* the peer said BYE: nothing it will ever receive again */
	if (c->state == RCX__CONN_CLOSED)
		return -ECONNRESET;
	if (c->state == RCX__CONN_IDLE) {
		ret = rcx__conn_start(c);
		if (ret)
			return ret;
	}
	if (c->state != RCX__CONN_UP || c->backlog || c->replay ||
	    !can_send(c)) {
		r->next = NULL;
		if (c->backlog_tail)
			c->backlog_tail->next = r;
		else
			c->backlog = r;
		c->backlog_tail = r;
		rcx__conn_pending_add(c);
		return 0;
	}
	ret = post_msg(c, r, r->sendop);
	if (!ret)
		sent(c, r);
	return ret;
}

/* Send what waits for credits or slots; called from progress. */
void rcx__conn_drain(struct rcx_ctx *ctx)
{
	struct rcx__conn *c = ctx->pending, *next;
	struct rcx_req *r;
	int ret;

	for (; c; c = next) {
		next = c->next_pending;
		if (c->state != RCX__CONN_UP)
			continue;
		rcx__conn_replay_post(c);
		while (c->state == RCX__CONN_UP && !c->replay &&
		       (r = c->backlog) && can_send(c)) {
			ret = post_msg(c, r, r->sendop);
			if (ret) {
				rcx__conn_fail(c, ret);
				break;
			}
			c->backlog = r->next;
			if (!c->backlog)
				c->backlog_tail = NULL;
			r->next = NULL;
			sent(c, r);
		}
		if (c->state == RCX__CONN_UP && rcx__conn_credit_due(c) &&
		    ctx->tx_free)
			post_msg(c, NULL, RCX__MSG_CREDIT);
		if (!c->backlog && !c->replay && !rcx__conn_credit_due(c))
			pending_del(c);
	}
}

/* Connection events: establish, fail, and queue incoming requests. */
int rcx__cm_progress(struct rcx_ctx *ctx)
{
	struct rcx_cm_event ev;
	struct rcx__pending_req *p, **pp;
	struct rcx__epobj *o;
	long long now;
	int n = 0, ret;

	if (ctx->in_cm)
		return 0; /* an event handler drains the CQ: no nesting */
	ctx->in_cm = 1;
	now = rcx__now_us();
	rcx__cm_polled(ctx, now);
	rcx__fail_poll(ctx, now);
	rcx__feats_cm_poll(ctx, now);
	while ((ret = ctx->ops->cm_poll(ctx->dev, &ev)) > 0) {
		n++;
		if (ev.type != RCX_CM_CONNECT_REQUEST) {
			o = ev.ep_ctx;
			if (o)
				o->on_cm(o, &ev);
			continue;
		}
		p = calloc(1, sizeof(*p));
		if (!p) {
			ctx->ops->ep_reject(ctx->dev, ev.req);
			continue;
		}
		p->req = ev.req;
		p->len = ev.pdata_len;
		memcpy(p->pdata, ev.pdata, ev.pdata_len);
		if (rcx__group_reconn_req(ctx, p) ||
		    rcx__group_conn_req(ctx, p))
			continue;
		if (ctx->conn_req_hook && ctx->conn_req_hook(ctx, p))
			continue;
		for (pp = &ctx->conn_reqs; *pp; pp = &(*pp)->next)
			;
		*pp = p;
	}
	ctx->in_cm = 0;
	return ret < 0 ? ret : n;
}

static void am_release(struct rcx_req *r)
{
	free(r->buf);
	r->buf = NULL;
}

static const struct rcx__req_ops am_ops = { .release = am_release };

/*
 * Send an active message: the payload is copied (it may wait for credits),
 * and the request frees itself once the message is out.
 */
int rcx__am_send(struct rcx__conn *c, uint8_t cid, int32_t tag, const void *buf,
		 size_t len)
{
	struct rcx_req *r;
	int ret;

	if (len > c->ctx->cfg.eager_size)
		return -EMSGSIZE;
	r = rcx__req_get(c->ctx, RCX__REQ_INTERNAL, &am_ops);
	if (!r)
		return -ENOMEM;
	r->buf = malloc(len ? len : 1);
	if (!r->buf) {
		rcx__req_put(r);
		return -ENOMEM;
	}
	if (len)
		memcpy(r->buf, buf, len);
	r->len = len;
	r->cid = cid;
	r->tag = tag;
	r->sendop = RCX__MSG_EAGER;
	r->user_freed = 1;
	r->state = RCX__REQ_ACTIVE;
	ret = rcx__conn_send(c, r);
	if (ret)
		rcx__req_put(r);
	return ret;
}
