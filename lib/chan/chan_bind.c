/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels: bind, free and rebind (the fast path is in chan.c). A
 * bind (or a bundle of n) gets its own RC queue pair, set up by a
 * handshake over the group: the sender's BIND request is matched by the
 * receiver exactly like the original send (cid BIND, the user's tag); the
 * receiver answers on cid BACK with its slot region and connects a new QP
 * to the sender, naming the sender's cookie.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/chan/chan_int.h"

#define CH_ACK_TAG_BASE 0x40000000

enum { PD_CHAN = 3 };

/* ---- set construction, connection */

static void set_link(struct chset *s)
{
	s->next = s->ctx->chan_sets;
	s->ctx->chan_sets = s;
}

static void set_unlink(struct chset *s)
{
	struct chset **pp;

	for (pp = (struct chset **)&s->ctx->chan_sets; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			return;
		}
}

/* a connect's error that says the peer is gone or refuses (provider.h) */
static bool refused(int status)
{
	return status == -ECONNREFUSED || status == -EHOSTDOWN ||
	       status == -ESRCH;
}

static void set_on_cm(struct rcx__epobj *o, const struct rcx_cm_event *ev)
{
	struct chset *s = (struct chset *)o;

	/* the broken queue pair of a remake (the peer's kept until its new
	 * one is up): its events say nothing of the set */
	if (s->state == SET_REMAKE) {
		if (!s->old_ep || ev->ep != s->ep)
			return;
		if (ev->type == RCX_CM_ESTABLISHED)
			rcx__chan_remake_up(s);
		else
			rcx__chan_remake_fail(s,
					      refused(ev->status)
						      ? RCX_ERR_PROC_FAILED
						      : RCX_ERR_TRANSPORT,
					      false);
		return;
	}
	if (s->ep && ev->ep && ev->ep != s->ep)
		return; /* one a remake replaced */
	switch (ev->type) {
	case RCX_CM_ESTABLISHED:
		s->established = true;
		if (s->state == SET_HANDSHAKE && (!s->is_send || s->answered)) {
			s->state = SET_UP;
			rcx__chan_eph_done(s, 0);
		}
		break;
	case RCX_CM_DISCONNECTED:
		/* deliver what arrived before the peer left (what its going
		 * flushed is its failure, not the transport's) */
		s->peer_gone = true;
		while (rcx__progress(s->ctx) > 0)
			;
		/* the peer's side is gone: it cannot free any more */
		s->ctl->peer_free = 1;
		if (s->state != SET_FREEING)
			rcx__chan_set_fail(s, RCX_ERR_PROC_FAILED);
		break;
	case RCX_CM_ERROR:
		/* the peer answered the bind, so it lived: nothing that
		 * takes the connection now is its death */
		rcx__chan_set_fail(s, refused(ev->status) ? RCX_ERR_PROC_FAILED
				      : ev->status	  ? ev->status
							  : -ECONNABORTED);
		break;
	}
}

/* The QP exists: prepare every WR of the set, post what must be posted. */
static int set_prepare(struct chset *s)
{
	const struct rcx_provider_ops *ops = s->ctx->ops;
	struct rcx_ep *ep = s->ep;
	struct rcx_wr w;
	uint32_t dlen = 0;
	bool early = false;
	int i, ret;
	/* write_imm, contiguous slots: consecutive channels go as one */
	bool fuse = s->is_send && s->proto == RCX_CHAN_WRITE_IMM && s->n > 1 &&
		    s->ch[0].slots > 1 && s->ch[0].len > 0 &&
		    s->ch[0].len == s->ch[0].stride;

	/* a credit that does not wake by itself goes with an immediate */
	s->credit_imm = s->proto == RCX_CHAN_WRITE_IMM &&
			!(rcx__obj_ops(ep)->caps & RCX_PROV_WRITE_WAKES);
	s->credit_wakes = s->credit_wakes || s->credit_imm;
	for (i = 0; i < s->n; i++) {
		struct chan *c = &s->ch[i];

		memset(&w, 0, sizeof(w));
		w.wr_id = (uintptr_t)&c->wrc;
		w.addr = (uintptr_t)c->buf;
		w.length = (uint32_t)c->len;
		w.lkey = s->reg->lkey;
		if (s->is_send) {
			w.flags = RCX_WR_SIGNALED;
			if (s->proto == RCX_CHAN_WRITE_IMM) {
				w.op = RCX_OP_WRITE_IMM;
				w.remote_addr = s->peer_data;
				w.rkey = s->peer_data_rkey;
			} else {
				w.op = RCX_OP_SEND;
			}
			if (c->len <= ops->ep_max_inline(ep) &&
			    c->len <= s->ctx->cfg.inline_size)
				w.flags |= RCX_WR_INLINE;
			ret = ops->pwr_create(ep, &w, 0, &c->pwr);
			/* inline: its start completes at the post, the WR
			 * goes unsignaled, a copy in the ring (chan.c); not
			 * where fused WRs, which the ring does not see, may
			 * go between */
			if (!ret && !fuse && (w.flags & RCX_WR_INLINE)) {
				w.flags &= (uint8_t)~RCX_WR_SIGNALED;
				w.wr_id = (uintptr_t)&s->uwrc;
				ret = ops->pwr_create(ep, &w, 0, &c->upwr);
				if (c->len > dlen)
					dlen = (uint32_t)c->len;
				early = true;
			}
		} else {
			ret = 0;
			if (s->proto == RCX_CHAN_SEND)
				ret = ops->pwr_create(ep, &w, 1, &c->pwr);
			memset(&w, 0, sizeof(w));
			w.wr_id = (uintptr_t)&s->credit_wrc;
			w.op = s->credit_imm ? RCX_OP_WRITE_IMM : RCX_OP_WRITE;
			w.imm = CH_IMM(i, 1, 0);
			w.addr = (uintptr_t)&credit_src(s)[i];
			w.lkey = s->ctl_reg->lkey;
			w.length = 8;
			w.remote_addr = s->peer_ctl +
					offsetof(struct chctl, words) +
					(uint64_t)i * 8;
			w.rkey = s->peer_ctl_rkey;
			if (8 * s->n <= (int)ops->ep_max_inline(ep))
				w.flags = RCX_WR_INLINE;
			if (!ret)
				ret = ops->pwr_create(ep, &w, 0, &c->credit);
			w.flags |= RCX_WR_SIGNALED;
			if (!ret)
				ret = ops->pwr_create(ep, &w, 0,
						      &c->credit_sig);
		}
		if (ret)
			return ret;
	}
	if ((!s->is_send && s->proto == RCX_CHAN_WRITE_IMM) || s->credit_imm) {
		memset(&w, 0, sizeof(w));
		w.wr_id = (uintptr_t)&s->zwrc;
		w.lkey = s->ctl_reg->lkey;
		w.addr = (uintptr_t)s->ctl;
		/* one list, whose post says how far it went */
		for (i = 0; i < CH_ZBATCH; i++) {
			ret = ops->pwr_create(ep, &w, 1, &s->zrecv[i]);
			if (ret)
				return ret;
		}
		/* one per message (sender: credit) that can be in flight */
		s->zmin = s->is_send ? 2 * s->n : s->n * s->window;
		while (s->zposted <= s->zmin) {
			ret = rcx__chan_zrecv_post(s);
			if (ret)
				return ret;
		}
	}
	/* contiguous slots: consecutive channels can go as one (chan.c) */
	if (fuse) {
		memset(&w, 0, sizeof(w));
		w.wr_id = (uintptr_t)&s->fuse_wrc;
		w.op = RCX_OP_WRITE_IMM;
		w.flags = RCX_WR_SIGNALED;
		w.addr = (uintptr_t)s->ch[0].buf;
		w.length = (uint32_t)s->ch[0].len;
		w.lkey = s->reg->lkey;
		w.remote_addr = s->peer_data;
		w.rkey = s->peer_data_rkey;
		/* inline when the whole bundle fits (at most 256 bytes) */
		if ((size_t)s->n * s->ch[0].len <= ops->ep_max_inline(ep) &&
		    (size_t)s->n * s->ch[0].len <= 256)
			w.flags |= RCX_WR_INLINE;
		ret = ops->pwr_create(ep, &w, 0, &s->fuse_pwr);
		if (ret)
			return ret;
	}
	if (s->is_send && (s->proto == RCX_CHAN_SEND || early)) {
		ret = rcx__chan_ring_make(s, dlen);
		if (ret)
			return ret;
	}
	memset(&w, 0, sizeof(w));
	w.wr_id = (uintptr_t)&s->free_wrc;
	w.op = RCX_OP_WRITE;
	w.flags = RCX_WR_SIGNALED;
	w.addr = (uintptr_t)&s->ctl->free_src;
	w.length = 8;
	w.lkey = s->ctl_reg->lkey;
	w.remote_addr = s->peer_ctl + offsetof(struct chctl, peer_free);
	w.rkey = s->peer_ctl_rkey;
	ret = ops->pwr_create(ep, &w, 0, &s->free_wr);
	if (!ret)
		rcx__chan_set_fast(s);
	return ret;
}

/*
 * A sender's WRs carry the receiver's slot and control addresses and keys,
 * from its answer; the answer comes over the group and the connection
 * through rdma_cm, in either order. So a sender prepares its WRs once both
 * are in: here or in on_answer.
 */
static int set_on_ready(struct rcx_ep *ep, void *arg)
{
	struct chset *s = arg;

	s->ep = ep;
	s->credit_wakes = rcx__obj_ops(ep)->caps & RCX_PROV_WRITE_WAKES;
	if (s->is_send && !s->answered)
		return 0;
	return set_prepare(s);
}

static struct rcx_ep_attr set_ep_attr(struct chset *s)
{
	const struct rcx__config *cfg = &s->ctx->cfg;
	struct rcx_ep_attr a = {
		.ep_ctx = &s->obj,
		.on_ready = set_on_ready,
		/* n in flight, unsignaled credit writes between signals, free */
		.max_send_wr = (uint32_t)(s->n + 2 * CH_CREDIT_SIGNAL + 4),
		.max_recv_wr =
			(uint32_t)(s->n * s->window + s->n + CH_ZBATCH + 4),
		/* messages up to RCX_INLINE; a bundle's credit words */
		.max_inline = cfg->inline_size > 8u * (unsigned)s->n
				      ? cfg->inline_size
				      : 8u * (unsigned)s->n,
		.timeout = cfg->qp_timeout,
		.retry_cnt = cfg->qp_retry,
		.rnr_retry = cfg->rnr_retry,
		.max_rd_atomic = 1,
		/* send protocol: a late receive costs 10 us, not 0.64 ms+ */
		.min_rnr_timer = 1,
	};
	return a;
}

void rcx__chan_set_unprepare(struct chset *s)
{
	const struct rcx_provider_ops *ops = s->ctx->ops;
	struct rcx_pwr **p[] = { &s->fuse_pwr, &s->free_wr };
	size_t k;
	int i;

	for (i = 0; i < s->n; i++) {
		struct rcx_pwr **c[] = { &s->ch[i].pwr, &s->ch[i].upwr,
					 &s->ch[i].credit,
					 &s->ch[i].credit_sig };

		for (k = 0; k < sizeof(c) / sizeof(c[0]); k++)
			if (*c[k]) {
				ops->pwr_destroy(*c[k]);
				*c[k] = NULL;
			}
	}
	for (k = 0; k < sizeof(p) / sizeof(p[0]); k++)
		if (*p[k]) {
			ops->pwr_destroy(*p[k]);
			*p[k] = NULL;
		}
	for (i = 0; i < CH_ZBATCH; i++)
		if (s->zrecv[i]) {
			ops->pwr_destroy(s->zrecv[i]);
			s->zrecv[i] = NULL;
		}
}

void rcx__chan_set_destroy(struct chset *s)
{
	struct rcx_ctx *ctx = s->ctx;
	const struct rcx_provider_ops *ops = ctx->ops;
	struct rcx_group *g = s->g;
	long long end;

	set_unlink(s);
	rcx__chan_unpair(s);
	rcx__chan_stats_add(s, &ctx->st);
	rcx__chan_undefer(s);
	if (s->conn_by_us)
		ctx->chan_conn_due--;
	if (s->state != SET_FAILED)
		s->state = SET_FAILED;
	if (s->eph) {
		s->eph->obj = NULL;
		rcx__chan_eph_done(s, -ECANCELED);
	}
	/*
	 * The handshake's receive points into the set: take it back. One
	 * already matched (a rendezvous READ into peer_msg, then the FIN)
	 * cannot be: let it end, its callback finds the set failed.
	 */
	if (s->hs_recv)
		rcx__p2p_cancel(s->hs_recv, -ECANCELED);
	end = rcx__now_us() + 2000000;
	while ((s->hs_sends > 0 || s->hs_recv) && rcx__now_us() < end)
		rcx__progress(ctx);
	if (s->ep) {
		/* flush and reap: completions point into this set; the
		 * unsignaled tail too (the mark, flushed after it) */
		ops->ep_set_error(s->ep);
		rcx__chan_mark(s);
		end = rcx__now_us() + 2000000;
		while ((s->zposted > 0 || s->inflight > 0) &&
		       rcx__now_us() < end)
			rcx__progress(ctx);
		ops->ep_destroy(s->ep);
	}
	if (s->old_ep)
		ops->ep_destroy(s->old_ep);
	free(s->rm);
	rcx__chan_set_unprepare(s);
	rcx__reg_put(ctx, s->reg);
	rcx__reg_put(ctx, s->ctl_reg);
	if (s->zposted > 0 || s->inflight > 0 || s->hs_sends > 0 ||
	    s->hs_recv) {
		/* never reaped: leak rather than free live memory */
		rcx__log(RCX__LOG_WARN, "chan",
			 "channel set of %d: %d receives, %d sends, %d "
			 "handshake sends%s not reaped in 2 s: its memory is "
			 "kept",
			 s->n, s->zposted, s->inflight, s->hs_sends,
			 s->hs_recv ? " and its handshake receive" : "");
	} else {
		rcx__mem_free(ctx, s->ctl);
		rcx__chan_ring_free(s);
		free(s);
	}
	/* last: the group's end may tear its connections down (progress);
	 * a set bound to RCX_PROC_NULL holds none */
	if (g)
		rcx__group_release(g);
}

/* The sender accepts the receiver's connection that names its cookie. */
static int chan_conn_req(struct rcx_ctx *ctx, struct rcx__pending_req *p)
{
	struct rcx_ep_attr a;
	struct chset *s;
	uint64_t cookie;
	int ret;

	if (p->len < 16 || memcmp(p->pdata, "RCX1", 4) ||
	    p->pdata[4] != PD_CHAN)
		return 0;
	memcpy(&cookie, p->pdata + 8, 8);
	/* a bind's connection, or a remake's once the broken queue pair
	 * is drained (chan_remake.c) */
	for (s = ctx->chan_sets; s; s = s->next)
		if (s->is_send && s->cookie == cookie && !s->ep &&
		    (s->state == SET_HANDSHAKE ||
		     (s->state == SET_REMAKE && s->old_ep)))
			break;
	if (!s) {
		ctx->ops->ep_reject(ctx->dev, p->req);
	} else {
		a = set_ep_attr(s);
		ret = ctx->ops->ep_accept(ctx->dev, p->req, &a, &s->ep);
		/* but for a local want, the receiver that just asked is
		 * gone: it died between its answer and its connection */
		if (ret) {
			s->ep = NULL;
			ctx->ops->ep_reject(ctx->dev, p->req);
			ret = ret == -ENOMEM || ret == -EINVAL
				      ? ret
				      : RCX_ERR_PROC_FAILED;
			if (s->state == SET_REMAKE)
				rcx__chan_remake_fail(s, ret, false);
			else
				rcx__chan_set_fail(s, ret);
		} else if (s->state == SET_REMAKE) {
			ctx->st.connects++; /* one made again */
		}
	}
	free(p);
	return 1;
}

/*
 * The receiver connects after it answered, so a sender's wait for the
 * connection has nothing else to end it: a receiver that died before it
 * connected, or whose connection failed (its bind fails; ours would wait
 * forever). A failure of the peer ends it at once; a connection that
 * does not come within RCX_CONNECT_TIMEOUT_MS, -ETIMEDOUT.
 */
static bool conn_waits(const struct chset *s)
{
	return s->state == SET_HANDSHAKE && !s->ep;
}

/*
 * The peer of every set with it failed (known here from any detector,
 * its notice included, not only from the set's own connection, which may
 * say nothing: a receiver that waits for writes sends nothing): the
 * active starts complete in error, a bind under way fails, and a free
 * waiting for the peer's ends at once.
 */
void rcx__chan_peer_failed(struct rcx_group *g, int peer, int err)
{
	struct chset *s;

	for (s = g->ctx->chan_sets; s; s = s->next) {
		if (s->state == SET_FAILED || s->ch[0].g != g ||
		    s->ch[0].peer != peer)
			continue;
		if (s->state == SET_REMAKE)
			rcx__chan_remake_fail(s, err, true);
		else
			rcx__chan_set_fail(s, err);
	}
}

void rcx__chan_conn_due(struct rcx_ctx *ctx, long long now)
{
	struct chset *s;

	for (s = ctx->chan_sets; s && ctx->chan_conn_due; s = s->next) {
		if (s->state == SET_REMAKE) {
			rcx__chan_remake_poll(s, now);
			continue;
		}
		if (!s->conn_by_us || (conn_waits(s) && now <= s->conn_by_us))
			continue;
		s->conn_by_us = 0;
		ctx->chan_conn_due--;
		if (conn_waits(s))
			rcx__chan_set_fail(s, -ETIMEDOUT);
	}
}

/*
 * A set's queue pair broke (its transport gave up): the end that saw it
 * tells the other over the group's connection, which mends itself, so
 * that a receiver waiting for a message, or a sender for its credit,
 * fails too (its own queue pair, idle or receiving, sees nothing).
 */
#define CH_KIND_BROKEN 3

struct broken_msg {
	uint32_t magic;	    /* CH_MAGIC */
	uint32_t kind;	    /* CH_KIND_BROKEN */
	int32_t status;	    /* the transport's error */
	uint32_t from_send; /* the teller is the set's sender */
	uint64_t cookie;    /* the set's (the sender's) */
};

/* The group connection to s's peer (the set holds the group). */
struct rcx__conn *rcx__chan_set_conn(const struct chset *s)
{
	struct rcx_group *g = s->g;
	int peer = s->ch[0].peer;

	if (peer < 0 || peer >= g->size)
		return NULL;
	if (g->root)
		return g->root->conns[g->root_rank[peer]];
	return g->conns[peer];
}

void rcx__chan_tell_broken(struct chset *s, int err)
{
	struct broken_msg m = { .magic = CH_MAGIC, .kind = CH_KIND_BROKEN };
	struct rcx__conn *c;
	int ret;

	/* the peer knows the cookie once the set has its queue pair (or
	 * had it: a remake that failed) */
	if (!rcx__err_transport(err) || s->peer_told || (!s->ep && !s->rm))
		return;
	c = rcx__chan_set_conn(s);
	if (!c)
		return;
	m.status = err;
	m.from_send = s->is_send;
	m.cookie = s->cookie;
	ret = rcx__am_send(c, RCX__CID_CHAN, 0, &m, sizeof(m));
	RCX__LOG(RCX__LOG_DEBUG, "chan",
		 "%s set of %d: queue pair broke (%s); rank %d told: %s",
		 s->is_send ? "sending" : "receiving", s->n, rcx_strerror(err),
		 s->ch[0].peer, ret ? rcx_strerror(ret) : "sent");
}

static void broken_am(struct rcx__conn *c, const struct rcx__hdr *h,
		      const uint8_t *payload)
{
	struct broken_msg m;
	struct chset *s;

	memset(&m, 0, sizeof(m));
	if (h->len >= 8)
		memcpy(&m, payload, 8);
	if (m.magic == CH_MAGIC && m.kind == CH_KIND_REMAKE) {
		rcx__chan_remake_am(c, h, payload);
		return;
	}
	if (h->len == sizeof(m))
		memcpy(&m, payload, sizeof(m));
	if (m.magic != CH_MAGIC || m.kind != CH_KIND_BROKEN ||
	    !rcx__err_transport(m.status) || m.from_send > 1) {
		rcx__log(RCX__LOG_WARN, "chan",
			 "channel notice from rank %d (%u bytes, kind %u, "
			 "status %d): malformed, dropped",
			 c->peer, h->len, m.kind, (int)m.status);
		return;
	}
	for (s = c->ctx->chan_sets; s; s = s->next)
		if (s->cookie == m.cookie && s->is_send != (bool)m.from_send &&
		    s->state != SET_FAILED && (s->ep || s->rm) &&
		    rcx__chan_set_conn(s) == c)
			break;
	if (!s)
		return; /* freed here already, or failed by itself */
	s->peer_told = true;
	if (s->state == SET_REMAKE)
		rcx__chan_remake_fail(s, m.status, true);
	else
		rcx__chan_set_fail(s, m.status);
}

/*
 * A receiver's bind from RCX_ANY_SOURCE waits for a request from any
 * member but itself (a bind to oneself is refused): once every other one
 * has failed or left (BYE), none can come. 0 while one may, else the
 * error the bind ends with.
 */
static int no_sender(const struct rcx_group *g)
{
	int i, err = -ECONNRESET;

	for (i = 0; i < g->size; i++) {
		const struct rcx__conn *c = g->conns[i];

		if (i == g->rank)
			continue;
		if (g->failed[i] || (c && c->state == RCX__CONN_FAILED))
			err = RCX_ERR_PROC_FAILED;
		else if (!c || c->state != RCX__CONN_CLOSED)
			return 0;
	}
	return err;
}

/* s's wildcard request receive, still posted, that nobody can answer */
static void wild_check(struct chset *s)
{
	int err;

	if (s->is_send || s->state != SET_HANDSHAKE || !s->hs_recv ||
	    s->ch[0].peer != RCX_ANY_SOURCE)
		return;
	err = no_sender(s->ch[0].g);
	/* its callback fails the bind with err (one matched already, a
	 * rendezvous under way, ends by itself) */
	if (err)
		rcx__p2p_cancel(s->hs_recv, err);
}

void rcx__chan_member_gone(struct rcx_group *g)
{
	struct chset *s;

	for (s = g->ctx->chan_sets; s; s = s->next)
		if (s->ch[0].g == g)
			wild_check(s);
}

int rcx__chan_parse_info(const struct rcx_info *info, struct bind_args *a)
{
	static const char *const protos[] = { "auto", "send", "write_imm",
					      NULL };
	unsigned long v = 0;
	int ret;

	ret = rcx__info_enum(info, RCX_CHAN_PROTOCOL, protos, a->proto,
			     &a->proto);
	if (!ret)
		ret = rcx__info_ulong(info, RCX_CHAN_SLOTS, 1, 1, 1 << 20,
				      &a->slots);
	if (!ret)
		ret = rcx__info_ulong(info, RCX_CHAN_STRIDE, a->len, 0,
				      (unsigned long)-1 >> 1, &a->stride);
	if (!ret)
		ret = rcx__info_ulong(info, RCX_CHAN_COMPANION, 0, 0,
				      UINT32_MAX, &v);
	if (ret)
		return ret;
	a->companion = (uint32_t)v;
	if (a->slots > 1 && a->stride < a->len)
		return -EINVAL;
	return 0;
}

static int alloc_set(struct rcx_ctx *ctx, const struct bind_args *a, int n,
		     struct chset **out)
{
	size_t region = (a->slots - 1) * a->stride + a->len;
	struct chset *s;
	int ret;

	s = calloc(1, sizeof(*s) + (size_t)n * sizeof(struct chan));
	if (!s)
		return -ENOMEM;
	s->obj.on_cm = set_on_cm;
	s->ctx = ctx;
	s->g = a->g;
	s->n = s->live = n;
	s->window = ch_window(a->slots, n);
	s->is_send = a->is_send;
	s->state = SET_HANDSHAKE;
	rcx__chan_set_wire(s);
	/* where the peer's credit writes are plain stores (shm) */
	if (rcx__mem_alloc(ctx, sizeof(struct chctl) + 16 * (size_t)n,
			   (void **)&s->ctl)) {
		free(s);
		return -ENOMEM;
	}
	s->ctl->free_src = 1;
	ret = rcx__reg_get(ctx, s->ctl, sizeof(struct chctl) + 16 * (size_t)n,
			   RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_WRITE,
			   &s->ctl_reg);
	if (!ret)
		ret = rcx__reg_get(ctx, a->buf, region,
				   a->is_send ? RCX_ACCESS_LOCAL_WRITE
					      : RCX_ACCESS_LOCAL_WRITE |
							RCX_ACCESS_REMOTE_WRITE,
				   &s->reg);
	if (ret) {
		rcx__reg_put(ctx, s->ctl_reg);
		rcx__mem_free(ctx, s->ctl);
		free(s);
		return ret;
	}
	rcx__group_hold(s->g);
	*out = s;
	return 0;
}

static void fill_msg(struct chset *s, const struct bind_args *a,
		     struct bind_msg *m, uint32_t kind, int status)
{
	memset(m, 0, sizeof(*m));
	m->magic = CH_MAGIC;
	m->kind = kind;
	m->status = status;
	m->n = (uint32_t)s->n;
	m->proto = (uint32_t)a->proto;
	m->slots = (uint32_t)a->slots;
	m->len = a->len;
	m->stride = a->stride;
	m->cookie = s->cookie;
	m->companion = s->companion;
	m->data_addr = (uintptr_t)a->buf;
	m->data_rkey = s->reg->rkey;
	m->ctl_addr = (uintptr_t)s->ctl;
	m->ctl_rkey = s->ctl_reg->rkey;
	snprintf(m->addr, sizeof(m->addr), "%s", s->ctx->addr);
}

static void on_sent(struct rcx_req *r)
{
	struct chset *s = r->done_arg;

	s->hs_sends--;
}

/* an error a peer may report: a negative errno or an rcx code */
static bool peer_error(int32_t e)
{
	return (e < 0 && e > -RCX_ERR_BASE) ||
	       (e <= RCX_ERR_PROC_FAILED && e > RCX_ERR_LAST);
}

/*
 * A handshake message (kind 1 request, 2 answer) came whole and is ours;
 * else the set fails. A request's address goes to the provider as a
 * string: it must end inside the message.
 */
static bool hs_msg_ok(struct chset *s, const struct rcx_req *r, uint32_t kind)
{
	const struct bind_msg *m = &s->peer_msg;

	if (!r->status.error && r->status.count == sizeof(*m) &&
	    m->magic == CH_MAGIC && m->kind == kind &&
	    (kind != 1 || memchr(m->addr, '\0', sizeof(m->addr))))
		return true;
	rcx__chan_set_fail(s,
			   r->status.error ? r->status.error : RCX_ERR_PROTO);
	return false;
}

/* sender: the receiver's answer */
static void on_answer(struct rcx_req *r)
{
	struct chset *s = r->done_arg;
	const struct bind_msg *m = &s->peer_msg;

	s->hs_recv = NULL;
	if (s->state != SET_HANDSHAKE)
		return;
	if (!hs_msg_ok(s, r, 2))
		return;
	/* the receiver's refusal, or the protocol it chose: one we run and,
	 * unless we said auto, the one we asked for */
	if (m->status) {
		rcx__chan_set_fail(s, peer_error(m->status) ? m->status
							    : RCX_ERR_PROTO);
		return;
	}
	if ((m->proto != RCX_CHAN_SEND && m->proto != RCX_CHAN_WRITE_IMM) ||
	    (s->proto != RCX_CHAN_AUTO && (int)m->proto != s->proto)) {
		rcx__chan_set_fail(s, RCX_ERR_PROTO);
		return;
	}
	s->proto = (int)m->proto;
	if (s->proto != RCX_CHAN_WRITE_IMM || m->companion != s->companion)
		s->companion = 0;
	s->peer_data = m->data_addr;
	s->peer_data_rkey = m->data_rkey;
	s->peer_ctl = m->ctl_addr;
	s->peer_ctl_rkey = m->ctl_rkey;
	s->answered = true;
	if (!s->ep && !s->conn_by_us) {
		s->conn_by_us =
			rcx__now_us() +
			(long long)s->ctx->cfg.connect_timeout_ms * 1000;
		s->ctx->chan_conn_due++;
	}
	/* the connection came first: its WRs wait for this (set_on_ready) */
	if (s->ep && !s->free_wr) {
		int ret = set_prepare(s);

		if (ret) {
			rcx__chan_set_fail(s, ret);
			return;
		}
	}
	if (s->established) {
		s->state = SET_UP;
		rcx__chan_eph_done(s, 0);
	}
}

/*
 * Both ends' parameters must fit; returns the protocol or an error: a
 * protocol that is none of ours makes the request malformed. Both ends
 * auto: write_imm for a bundle whose sender's slots are contiguous (len ==
 * stride), where channels started together go as one RDMA write (chan.c);
 * send otherwise, the lower latency for one message in flight.
 */
static int agree(const struct bind_msg *m, const struct bind_args *a, int n)
{
	int ps = (int)m->proto, pr = a->proto;

	if (m->proto > RCX_CHAN_WRITE_IMM)
		return RCX_ERR_PROTO;
	if ((int)m->n != n || m->slots != a->slots ||
	    (a->slots > 1 && m->stride != a->stride) || m->len > a->len)
		return -EINVAL;
	if (ps != RCX_CHAN_AUTO && pr != RCX_CHAN_AUTO && ps != pr)
		return -EINVAL;
	if (ps == RCX_CHAN_AUTO)
		ps = pr;
	if (ps != RCX_CHAN_AUTO)
		return ps;
	return n > 1 && m->slots > 1 && m->len > 0 && m->len == m->stride
		       ? RCX_CHAN_WRITE_IMM
		       : RCX_CHAN_SEND;
}

/* receiver: the sender's request matched our bind */
static void on_request(struct rcx_req *r)
{
	struct chset *s = r->done_arg;
	const struct bind_msg *m = &s->peer_msg;
	struct bind_args a = { 0 };
	int proto, i, ret;

	s->hs_recv = NULL;
	if (s->state != SET_HANDSHAKE)
		return;
	if (!hs_msg_ok(s, r, 1))
		return;
	/* the matched source and tag become the channel's, and its status */
	for (i = 0; i < s->n; i++) {
		s->ch[i].peer = r->status.source;
		s->ch[i].tag = r->status.tag;
		s->ch[i].req->status.source = r->status.source;
		s->ch[i].req->status.tag = r->status.tag;
	}
	a.len = s->ch[0].len;
	a.slots = s->ch[0].slots;
	a.stride = s->ch[0].stride;
	a.proto = s->proto;
	a.buf = s->ch[0].buf;
	proto = agree(m, &a, s->n);
	s->cookie = m->cookie;
	a.proto = proto < 0 ? 0 : proto;
	fill_msg(s, &a, &s->msg, 2, proto < 0 ? proto : 0);
	s->hs_sends++;
	ret = rcx__isend_cb(s->ch[0].g, &s->msg, sizeof(s->msg),
			    r->status.source, (int)m->ack_tag, RCX__CID_BACK,
			    on_sent, s, NULL);
	if (ret)
		s->hs_sends--;
	if (proto < 0 || ret) {
		rcx__chan_set_fail(s, proto < 0 ? proto : ret);
		return;
	}
	s->proto = proto;
	/* a companion both ends name (the answer said ours) */
	if (proto != RCX_CHAN_WRITE_IMM || m->companion != s->companion)
		s->companion = 0;
	s->peer_len = m->len;
	s->peer_ctl = m->ctl_addr;
	s->peer_ctl_rkey = m->ctl_rkey;
	ret = rcx__chan_connect(s);
	if (ret)
		rcx__chan_set_fail(s, ret);
}

int rcx__chan_connect(struct chset *s)
{
	struct rcx_ep_attr ea = set_ep_attr(s);
	uint8_t pdata[16] = "RCX1";
	int ret;

	pdata[4] = PD_CHAN;
	memcpy(pdata + 8, &s->cookie, 8);
	ret = s->ctx->ops->ep_connect(s->ctx->dev, s->peer_msg.addr, &ea, pdata,
				      sizeof(pdata), &s->ep);
	if (ret)
		s->ep = NULL;
	return ret;
}

static void eph_release(struct rcx_req *r)
{
	struct chset *s = r->obj;

	/* freed by the program before the bind finished */
	if (s && s->eph == r)
		s->eph = NULL;
}

static const struct rcx__req_ops eph_ops = { .release = eph_release };

/*
 * The channel requests of set s (or the handles in reuse[], rebind), of
 * kind ops. 0, or -ENOMEM with none taken.
 */
static int chans_fill(struct chset *s, const struct bind_args *a,
		      struct rcx_req **reuse, const struct rcx__req_ops *ops)
{
	int i;

	for (i = 0; i < s->n; i++) {
		struct chan *c = &s->ch[i];
		struct rcx_req *r =
			reuse ? reuse[i]
			      : rcx__req_get(s->ctx, RCX__REQ_CHAN, ops);

		if (!r) {
			while (i-- > 0)
				rcx__req_put(s->ch[i].req);
			return -ENOMEM;
		}
		r->ops = ops;	/* a rebind to or from RCX_PROC_NULL */
		r->peek = NULL; /* until the set is up (rcx__chan_set_fast) */
		c->req = r;
		c->set = s;
		c->idx = i;
		c->buf = a->buf;
		c->len = a->len;
		c->stride = a->stride;
		c->slots = a->slots;
		c->g = a->g;
		c->peer = a->peer;
		c->tag = a->tag;
		r->obj = c;
		r->persistent = 1;
		r->state = RCX__REQ_INACTIVE;
		r->status.slot = -1;
		/*
		 * Written once here, never on the fast path: a receive's
		 * source and tag (a wildcard's when it matches,
		 * on_request), a send's own rank and tag as a send reports.
		 */
		r->status.source = a->is_send ? a->g->rank : a->peer;
		r->status.tag = a->tag;
	}
	return 0;
}

/*
 * Channels bound to RCX_PROC_NULL: no peer, no queue pair. A start
 * completes at once and moves nothing, as a send or receive to
 * RCX_PROC_NULL does; the set is never up, so a free tells no peer and
 * waits for none.
 */
static int null_start_many(struct rcx_req **reqs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		rcx__p2p_null_start(reqs[i]);
	return 0;
}

static const struct rcx__req_ops null_chan_ops = {
	.start = rcx__p2p_null_start,
	.start_many = null_start_many,
};

static int null_bind(struct rcx_ctx *ctx, const struct bind_args *a, int n,
		     struct rcx_req **reuse, struct rcx_req **chans,
		     struct rcx_req **eph_out)
{
	struct chset *s =
		calloc(1, sizeof(*s) + (size_t)n * sizeof(struct chan));
	struct rcx_req *eph = rcx__req_get(ctx, RCX__REQ_INTERNAL, NULL);
	int i, ret = -ENOMEM;

	if (s && eph) {
		s->ctx = ctx;
		s->n = s->live = n;
		s->is_send = a->is_send;
		s->proto = a->proto;
		s->state = SET_FAILED;
		ret = chans_fill(s, a, reuse, &null_chan_ops);
	}
	if (ret) {
		if (eph)
			rcx__req_put(eph);
		free(s);
		return ret;
	}
	for (i = 0; i < n; i++)
		chans[i] = s->ch[i].req;
	eph->state = RCX__REQ_ACTIVE;
	rcx__req_complete(eph, 0); /* bound: there is no one to wait for */
	*eph_out = eph;
	return 0;
}

/*
 * rcx_chan_companion names one channel, to one peer, and one set of each
 * direction to it in the group: else -EINVAL, nothing made.
 */
static int companion_check(struct rcx_ctx *ctx, const struct bind_args *a,
			   int n)
{
	const struct chset *s;
	const char *why = NULL;

	if (n != 1)
		why = "a bundle of channels";
	else if (a->peer < 0)
		why = "no single peer";
	for (s = ctx->chan_sets; s && !why; s = s->next)
		if (s->companion == a->companion && s->g == a->g &&
		    s->is_send == a->is_send && s->ch[0].peer == a->peer &&
		    !s->mate_gone && s->state != SET_FAILED)
			why = "a live set of this direction has it";
	if (!why)
		return 0;
	rcx__log(RCX__LOG_WARN, "chan", "bind %s rank %d: %s %u refused: %s",
		 a->is_send ? "to" : "from", a->peer, RCX_CHAN_COMPANION,
		 a->companion, why);
	return -EINVAL;
}

/*
 * Make the set, its channel requests and the ephemeral request, and start
 * the handshake. Lock held. chans[i] get the channel handles (or reuse
 * the handles in reuse[] for rebind).
 */
int rcx__chan_bind_start(struct rcx_ctx *ctx, const struct bind_args *a, int n,
			 struct rcx_req **reuse, struct rcx_req **chans,
			 struct rcx_req **eph_out)
{
	struct chset *s;
	struct rcx_req *eph;
	int i, ret;

	if (a->peer == RCX_PROC_NULL)
		return null_bind(ctx, a, n, reuse, chans, eph_out);
	if (a->companion) {
		ret = companion_check(ctx, a, n);
		if (ret)
			return ret;
	}
	ret = alloc_set(ctx, a, n, &s);
	if (ret)
		return ret;
	s->proto = a->proto;
	s->companion = a->companion;
	eph = rcx__req_get(ctx, RCX__REQ_INTERNAL, &eph_ops);
	if (!eph) {
		rcx__chan_set_destroy(s);
		return -ENOMEM;
	}
	eph->obj = s;
	eph->state = RCX__REQ_ACTIVE;
	s->eph = eph;
	ret = chans_fill(s, a, reuse, &rcx__chan_ops);
	if (ret) {
		rcx__req_put(eph);
		rcx__chan_set_destroy(s);
		return ret;
	}
	set_link(s);
	ctx->conn_req_hook = chan_conn_req;
	ctx->am[RCX__CID_CHAN] = broken_am;
	if (a->is_send) {
		s->cookie = ((uint64_t)rcx__now_us() << 20) ^
			    (uint64_t)(uintptr_t)s ^ ++ctx->bind_seq;
		fill_msg(s, a, &s->msg, 1, 0);
		s->msg.ack_tag = CH_ACK_TAG_BASE + (ctx->bind_seq & 0xfffffff);
		ret = rcx__irecv_cb(a->g, &s->peer_msg, sizeof(s->peer_msg),
				    a->peer, (int)s->msg.ack_tag, RCX__CID_BACK,
				    on_answer, s, &s->hs_recv);
		if (!ret) {
			s->hs_sends++;
			ret = rcx__isend_cb(a->g, &s->msg, sizeof(s->msg),
					    a->peer, a->tag, RCX__CID_BIND,
					    on_sent, s, NULL);
			if (ret)
				s->hs_sends--;
		}
	} else {
		ret = rcx__irecv_cb(a->g, &s->peer_msg, sizeof(s->peer_msg),
				    a->peer, a->tag, RCX__CID_BIND, on_request,
				    s, &s->hs_recv);
		if (!ret)
			wild_check(s);
	}
	if (ret) {
		/* a posted receive may still point at the set: fail it, the
		 * set stays linked until its handles are freed */
		rcx__chan_set_fail(s, ret);
		for (i = 0; i < n; i++)
			chans[i] = s->ch[i].req;
		*eph_out = eph;
		return 0;
	}
	for (i = 0; i < n; i++)
		chans[i] = s->ch[i].req;
	*eph_out = eph;
	return 0;
}

static int args_of(struct rcx_req *init, const struct rcx_info *info,
		   struct bind_args *a)
{
	if (!rcx__req_live(init) || !init->persistent ||
	    (init->kind != RCX__REQ_SEND && init->kind != RCX__REQ_RECV))
		return -EINVAL;
	if (init->state == RCX__REQ_ACTIVE)
		return -EBUSY;
	if (!rcx__group_known(init->ctx, init->g))
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->g = init->g;
	a->buf = init->buf;
	a->len = init->len;
	a->peer = init->peer;
	a->tag = init->tag;
	a->is_send = init->kind == RCX__REQ_SEND;
	if (a->peer == init->g->rank)
		return -EINVAL; /* a channel to oneself has no queue pair */
	if (a->len > UINT32_MAX)
		return -EMSGSIZE;
	return rcx__chan_parse_info(info, a);
}

int rcx__chan_wait_eph(struct rcx_ctx *ctx, struct rcx_req *eph)
{
	struct rcx_req *r = eph;

	return rcx__waitall_locked(ctx, 1, &r);
}

RCX_API int rcx_imbind(struct rcx_req *init, int n, const struct rcx_info *info,
		       struct rcx_req **chans, struct rcx_req **eph)
{
	struct rcx_req *tmp[CH_MAX_BUNDLE];
	struct bind_args a;
	struct rcx_ctx *ctx;
	int ret, i;

	if (n < 1 || n > CH_MAX_BUNDLE || !chans || !eph)
		return -EINVAL;
	if (!rcx__req_live(init))
		return -EINVAL;
	ctx = init->ctx;
	rcx__lock(ctx);
	ret = args_of(init, info, &a);
	if (!ret)
		ret = rcx__chan_bind_start(ctx, &a, n, NULL, tmp, eph);
	if (!ret)
		for (i = 0; i < n; i++)
			chans[i] = tmp[i];
	rcx__unlock(ctx);
	return ret;
}

RCX_API int rcx_mbind(struct rcx_req *init, int n, const struct rcx_info *info,
		      struct rcx_req **chans)
{
	struct rcx_req *tmp[CH_MAX_BUNDLE], *eph;
	struct rcx_ctx *ctx;
	int ret, i;

	if (n < 1 || n > CH_MAX_BUNDLE || !chans)
		return -EINVAL;
	ret = rcx_imbind(init, n, info, tmp, &eph);
	if (ret)
		return ret;
	ctx = init->ctx;
	rcx__lock(ctx);
	ret = rcx__chan_wait_eph(ctx, eph);
	if (ret) {
		/* the bind failed at both ends: nothing to free remotely */
		struct chset *s = to_chan(tmp[0])->set;

		for (i = 0; i < n; i++)
			rcx__req_put(tmp[i]);
		rcx__chan_set_destroy(s);
	} else {
		for (i = 0; i < n; i++)
			chans[i] = tmp[i];
	}
	rcx__unlock(ctx);
	return ret;
}

RCX_API int rcx_ibind(struct rcx_req *init, const struct rcx_info *info,
		      struct rcx_req **chan, struct rcx_req **eph)
{
	return rcx_imbind(init, 1, info, chan, eph);
}

RCX_API int rcx_bind(struct rcx_req *init, const struct rcx_info *info,
		     struct rcx_req **chan)
{
	return rcx_mbind(init, 1, info, chan);
}

/* ---- what the core drives (lib/features.c) */

static int chan_feat_progress(struct rcx_ctx *ctx, int *ran)
{
	(void)ran;
	if (ctx->chan_deferred)
		rcx__chan_progress(ctx);
	/* after the senders: a credit follows what the program posted */
	if (ctx->chan_credits)
		rcx__chan_credits_post(ctx);
	/*
	 * A free or rebind done completes a request: work. Not from inside
	 * a connection event's handler, whose object a step may destroy (a
	 * set's DISCONNECTED drains the CQ through here).
	 */
	if (ctx->chan_ops && !ctx->in_cm)
		return rcx__chan_ops_progress(ctx);
	return 0;
}

static void chan_feat_cm_poll(struct rcx_ctx *ctx, long long now_us)
{
	if (ctx->chan_conn_due)
		rcx__chan_conn_due(ctx, now_us);
}

/* Does every sender waiting for credit get a wakeup when it comes? */
static bool deferred_wake(const struct rcx_ctx *ctx)
{
	const struct chan *c;

	for (c = ctx->chan_deferred; c; c = c->next_deferred)
		if (c->deferred && !c->set->credit_wakes)
			return false;
	return true;
}

static bool any_remake(const struct rcx_ctx *ctx)
{
	const struct chset *s;

	for (s = ctx->chan_sets; s; s = s->next)
		if (s->state == SET_REMAKE)
			return true;
	return false;
}

static int chan_feat_sleep_limit(struct rcx_ctx *ctx, int timeout_ms)
{
	/*
	 * A sender waiting for a credit word gets no completion event: the
	 * wait polls, unless the credit's WRITE wakes it (shm). Polling
	 * where the writer needs the CPU delays the credit by a scheduler
	 * slice (milliseconds on a loaded host, a timer tick for rxe).
	 */
	if (ctx->chan_deferred && !deferred_wake(ctx))
		return 0;
	/* a late credit is written by the next pass, not after a sleep */
	if (ctx->chan_credits)
		return 0;
	/* the peer's side of a channel free is a remote write */
	if (ctx->chan_ops && (timeout_ms < 0 || timeout_ms > 1))
		timeout_ms = 1;
	/* a bind's connection that never comes is found by the clock; a
	 * remake's steps come on the connection cadence */
	if (ctx->chan_conn_due && (timeout_ms < 0 || timeout_ms > 100))
		timeout_ms = any_remake(ctx) ? 1 : 100;
	return timeout_ms;
}

const struct rcx__feat_ops rcx__chan_feat = {
	.name = "chan",
	.progress = chan_feat_progress,
	.cm_poll = chan_feat_cm_poll,
	.sleep_limit = chan_feat_sleep_limit,
	.member_failed = rcx__chan_peer_failed,
	.member_gone = rcx__chan_member_gone,
	.fini = rcx__chan_fini,
	.stats = rcx__chan_stats,
};
