/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Point-to-point: MPI matching (source, tag, ANY_*), non-overtaking per
 * sender (one RC connection per peer delivers in order, and matching runs
 * in arrival order), eager copy for small messages, RDMA-READ rendezvous
 * for large ones: RTS(addr, rkey, size) -> receiver READs (in pieces of
 * at most the device's longest message) -> FIN.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"
#include "lib/core/conn_int.h"

static int send_start(struct rcx_req *r);
static int recv_start(struct rcx_req *r);

static void release(struct rcx_req *r)
{
	if (r->reg) {
		rcx__reg_put(r->ctx, r->reg);
		r->reg = NULL;
	}
}

/* a persistent request holds its group: it may be started after the
 * user freed the group (MPI_Comm_free's deferred deallocation) */
static void prelease(struct rcx_req *r)
{
	release(r);
	rcx__group_release(r->g);
}

static const struct rcx__req_ops once_ops = { .release = release };
/*
 * An eager send (isend_eager), or a receive that holds no registration
 * (irecv_posted: once_ops from its rendezvous on), has no ops: nothing to
 * start or release, and its report looks at one pointer (req.c).
 */
#define EAGER_OPS NULL
static const struct rcx__req_ops psend_ops = { .start = send_start,
					       .release = prelease };
static const struct rcx__req_ops precv_ops = { .start = recv_start,
					       .release = prelease };

/*
 * The longest READ of a rendezvous: the device's longest message (IBA
 * guarantees 2^31 where it tells nothing), or less (RCX_RNDV_READ_MAX),
 * and never more than a WR's 32-bit length.
 */
static size_t read_max(const struct rcx_ctx *ctx)
{
	uint64_t m = ctx->info.max_msg_sz ? ctx->info.max_msg_sz : 1ull << 31;

	if (ctx->cfg.rndv_read_max && ctx->cfg.rndv_read_max < m)
		m = ctx->cfg.rndv_read_max;
	return m < UINT32_MAX ? (size_t)m : UINT32_MAX;
}

/*
 * The connection is being remade (conn.c): r's READ starts again, whole,
 * on the new endpoint (READs are idempotent; the sender's buffer and key
 * stay until its FIN).
 */
static void reread_add(struct rcx__conn *c, struct rcx_req *r)
{
	r->rlen = r->status.count;
	r->next = c->rereads;
	c->rereads = r;
}

static void read_failed(struct rcx_req *r, int err);

/*
 * Post the next piece of a rendezvous READ: r->rlen bytes are left, the
 * last ones of the status.count the receive takes. One piece at a time,
 * so a receive holds one entry of the send queue however long it is.
 */
static int read_post(struct rcx_req *r)
{
	struct rcx_ctx *ctx = r->ctx;
	size_t off = r->status.count - r->rlen, max = read_max(ctx);
	size_t len = r->rlen < max ? r->rlen : max;
	struct rcx_wr w, *bad;
	int ret;

	memset(&w, 0, sizeof(w));
	w.wr_id = (uintptr_t)&r->wrc;
	w.op = RCX_OP_READ;
	w.flags = RCX_WR_SIGNALED;
	w.addr = (uintptr_t)r->buf + off;
	w.length = (uint32_t)len;
	w.lkey = r->reg->lkey;
	w.remote_addr = r->raddr + off;
	w.rkey = r->rkey;
	if (r->conn->state == RCX__CONN_RECONN) {
		reread_add(r->conn, r);
		return 0;
	}
	ret = ctx->ops->post_send(r->conn->ep, &w, &bad);
	ctx->st.wrs_posted += !ret;
	if (!ret) {
		r->rlen -= len;
		r->conn->rd_inflight++;
	}
	return ret;
}

void rcx__p2p_reread(struct rcx__conn *c)
{
	struct rcx_req *r;
	int ret;

	while ((r = c->rereads)) {
		c->rereads = r->next;
		r->next = NULL;
		ret = read_post(r);
		if (ret)
			read_failed(r, ret);
	}
}

void rcx__p2p_rereads_fail(struct rcx__conn *c, int err)
{
	struct rcx_req *r;

	while ((r = c->rereads)) {
		c->rereads = r->next;
		r->next = NULL;
		if (!r->keep_reg) {
			rcx__reg_put(c->ctx, r->reg);
			r->reg = NULL;
		}
		rcx__req_complete(r, err);
	}
}

/* A READ could not be posted: the connection fails, and the receive. */
static void read_failed(struct rcx_req *r, int err)
{
	rcx__conn_fail(r->conn, err);
	if (r->state == RCX__REQ_ACTIVE)
		rcx__req_complete(r, err);
}

static void on_read_done(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			 const struct rcx_cqe *cqe)
{
	struct rcx_req *r =
		(struct rcx_req *)((char *)w - offsetof(struct rcx_req, wrc));
	struct rcx__conn *c = r->conn;
	int ret = 0;

	c->rd_inflight--;
	if (!cqe->status && r->rlen) {
		ret = read_post(r);
		if (ret)
			read_failed(r, ret);
		return;
	}
	if (cqe->status) {
		rcx__stats_cqe(&ctx->st, cqe->status);
		ret = rcx__conn_wc_error(c, cqe->status);
		if (c->state == RCX__CONN_RECONN) {
			reread_add(c, r);
			return;
		}
	}
	if (!r->keep_reg) {
		rcx__reg_put(ctx, r->reg);
		r->reg = NULL;
	}
	if (cqe->status) {
		rcx__req_complete(r, ret);
		return;
	}
	/* every piece is in: tell the sender its buffer is free; the
	 * receive completes then */
	r->sendop = RCX__MSG_FIN;
	ret = rcx__conn_send(c, r);
	if (ret)
		rcx__req_complete(r, ret);
}

/* Start the READ of a matched rendezvous message. */
static void rndv_read(struct rcx_req *r, struct rcx__conn *c,
		      const struct rcx__hdr *h)
{
	struct rcx_ctx *ctx = r->ctx;
	size_t n = h->size < r->len ? h->size : r->len;
	int ret;

	r->conn = c;
	r->rndv_id = h->id;
	r->status.count = n;
	r->status.error = h->size > r->len ? RCX_ERR_TRUNCATE : 0;
	if (n == 0) {
		r->sendop = RCX__MSG_FIN;
		ret = rcx__conn_send(c, r);
		if (ret)
			rcx__req_complete(r, ret);
		return;
	}
	if (!r->reg) {
		ret = rcx__reg_get(ctx, r->buf, n, RCX_ACCESS_LOCAL_WRITE,
				   &r->reg);
		if (ret) {
			rcx__req_complete(r, ret);
			return;
		}
		if (r->ops == EAGER_OPS)
			r->ops = &once_ops;
	}
	r->wrc.cb = on_read_done;
	r->raddr = h->addr;
	r->rkey = h->rkey;
	r->rlen = n;
	ret = read_post(r);
	if (ret)
		read_failed(r, ret);
}

static void deliver(struct rcx_req *r, int peer, struct rcx__conn *c,
		    const struct rcx__hdr *h, const uint8_t *payload)
{
	size_t n;

	r->status.source = peer;
	r->status.tag = h->tag;
	if (h->type == RCX__MSG_RTS) {
		rndv_read(r, c, h);
		return;
	}
	n = h->len < r->len ? h->len : r->len;
	if (n)
		memcpy(r->buf, payload, n);
	r->status.count = n;
	rcx__req_complete(r, h->len > r->len ? RCX_ERR_TRUNCATE : 0);
}

void rcx__p2p_arrived(struct rcx_group *g, int peer, struct rcx__conn *c,
		      const struct rcx__hdr *h, const uint8_t *payload)
{
	struct rcx_req *r, *prev = NULL;
	struct rcx__unexp *u;
	size_t plen = h->type == RCX__MSG_EAGER ? h->len : 0;

	/* on a sub-group's shared connection: matched there, by its ranks */
	if (h->gid && !(g = rcx__group_sub(g, h->gid, &peer)))
		return;
	for (r = g->posted[h->cid]; r; prev = r, r = r->next) {
		if (!rcx__p2p_matches(r, peer, h->tag))
			continue;
		if (prev)
			prev->next = r->next;
		else
			g->posted[h->cid] = r->next;
		if (g->posted_tail[h->cid] == r)
			g->posted_tail[h->cid] = prev;
		r->next = NULL;
		deliver(r, peer, c, h, payload);
		return;
	}
	/* unexpected: keep a copy until a receive matches */
	u = malloc(sizeof(*u) + plen);
	if (!u) {
		if (c)
			rcx__conn_fail(c, -ENOMEM);
		return;
	}
	u->next = NULL;
	u->conn = c;
	u->peer = peer;
	u->hdr = *h;
	if (plen)
		memcpy(u->data, payload, plen);
	if (g->unexp_tail[h->cid])
		g->unexp_tail[h->cid]->next = u;
	else
		g->unexp[h->cid] = u;
	g->unexp_tail[h->cid] = u;
}

void rcx__p2p_fin(struct rcx__conn *c, uint32_t id)
{
	struct rcx_req *r, **pp;

	for (pp = &c->rndv; (r = *pp); pp = &r->next) {
		if (r->rndv_id != id)
			continue;
		*pp = r->next;
		r->next = NULL;
		if (!r->keep_reg) {
			rcx__reg_put(c->ctx, r->reg);
			r->reg = NULL;
		}
		r->status.count = r->len;
		rcx__req_complete(r, 0);
		return;
	}
	if (!rcx__conn_withdrawn_fin(c, id))
		rcx__conn_fail(c, RCX_ERR_PROTO);
}

/* Posted receives from peer (RCX_ANY_SOURCE: wildcard ones) complete. */
static void fail_posted(struct rcx_group *g, int peer, int err)
{
	struct rcx_req *r, *prev, *next;
	int cid;

	for (cid = 0; cid < RCX__CID_MAX; cid++) {
		prev = NULL;
		for (r = g->posted[cid]; r; r = next) {
			next = r->next;
			if (r->peer != peer) {
				prev = r;
				continue;
			}
			if (prev)
				prev->next = next;
			else
				g->posted[cid] = next;
			if (g->posted_tail[cid] == r)
				g->posted_tail[cid] = prev;
			r->next = NULL;
			rcx__req_complete(r, err);
		}
	}
}

static void peer_gone(struct rcx_group *g, int peer, int err)
{
	fail_posted(g, peer, err);
	rcx__feats_member_gone(g);
}

/* Receives that can only be satisfied by a failed peer complete in error. */
void rcx__p2p_peer_failed(struct rcx__conn *c, int err)
{
	if (c->g) {
		peer_gone(c->g, c->peer, err);
		rcx__group_subs_each(c->g, c->peer, peer_gone, err);
	}
}

/*
 * A member of g failed: a wildcard receive may have waited for it, and
 * nothing else would end it (ULFM reports such a receive as failed too).
 */
void rcx__p2p_any_failed(struct rcx_group *g, int err)
{
	fail_posted(g, RCX_ANY_SOURCE, err);
}

void rcx__p2p_cancel_cid(struct rcx_group *g, int cid, int err)
{
	struct rcx_req *r;

	while ((r = g->posted[cid])) {
		g->posted[cid] = r->next;
		r->next = NULL;
		rcx__req_complete(r, err);
	}
	g->posted_tail[cid] = NULL;
}

void rcx__p2p_cancel_group(struct rcx_group *g, int err)
{
	struct rcx__unexp *u;
	int cid;

	for (cid = 0; cid < RCX__CID_MAX; cid++) {
		rcx__p2p_cancel_cid(g, cid, err);
		while ((u = g->unexp[cid])) {
			g->unexp[cid] = u->next;
			free(u);
		}
		g->unexp_tail[cid] = NULL;
	}
}

int rcx__p2p_null_start(struct rcx_req *r)
{
	r->state = RCX__REQ_ACTIVE;
	r->status.source = RCX_PROC_NULL;
	r->status.tag = RCX_ANY_TAG;
	r->status.count = 0;
	rcx__req_complete(r, 0);
	return 0;
}

static int send_start(struct rcx_req *r)
{
	struct rcx_group *g = r->g;
	struct rcx__conn *c;
	int ret;

	if (r->peer == RCX_PROC_NULL)
		return rcx__p2p_null_start(r);

	r->status.source = g->rank;
	r->status.tag = r->tag;
	r->status.error = 0;
	r->status.count = 0;
	if (r->peer == g->rank) {
		/* to self: no wire; matched (or kept) here and now */
		struct rcx__hdr h = { .type = RCX__MSG_EAGER,
				      .cid = r->cid,
				      .tag = r->tag,
				      .len = (uint32_t)r->len };

		if (r->len > UINT32_MAX)
			return -EMSGSIZE;
		r->state = RCX__REQ_ACTIVE;
		rcx__p2p_arrived(g, g->rank, NULL, &h, r->buf);
		r->status.count = r->len;
		rcx__req_complete(r, 0);
		return 0;
	}
	c = g->conns[r->peer];
	if (c->state == RCX__CONN_FAILED)
		return c->error; /* the transport's, or the peer's failure */
	if (r->len <= r->ctx->cfg.eager_size) {
		r->sendop = RCX__MSG_EAGER;
	} else {
		if (!r->reg) {
			ret = rcx__reg_get(r->ctx, r->buf, r->len,
					   RCX_ACCESS_REMOTE_READ, &r->reg);
			if (ret)
				return ret;
		}
		r->sendop = RCX__MSG_RTS;
		r->rndv_id = c->next_rndv++;
	}
	r->state = RCX__REQ_ACTIVE;
	ret = rcx__conn_send(c, r);
	if (ret) {
		r->state = r->persistent ? RCX__REQ_INACTIVE : RCX__REQ_DONE;
		if (!r->keep_reg && r->reg) {
			rcx__reg_put(r->ctx, r->reg);
			r->reg = NULL;
		}
	}
	return ret;
}

/* r waits at the tail of the posted receives of cid */
static inline void post(struct rcx_group *g, uint8_t cid, struct rcx_req *r)
{
	r->next = NULL;
	if (g->posted_tail[cid])
		g->posted_tail[cid]->next = r;
	else
		g->posted[cid] = r;
	g->posted_tail[cid] = r;
}

static int recv_start(struct rcx_req *r)
{
	struct rcx_group *g = r->g;
	struct rcx__unexp *u, *prev = NULL;
	uint8_t cid = r->cid;

	if (r->peer == RCX_PROC_NULL)
		return rcx__p2p_null_start(r);
	if (r->peer >= 0 && r->peer != g->rank && g->conns[r->peer] &&
	    g->conns[r->peer]->state == RCX__CONN_FAILED)
		return g->conns[r->peer]->error;
	r->state = RCX__REQ_ACTIVE;
	r->status.error = 0;
	r->status.count = 0;
	for (u = g->unexp[cid]; u; prev = u, u = u->next) {
		if (!rcx__p2p_matches(r, u->peer, u->hdr.tag))
			continue;
		if (prev)
			prev->next = u->next;
		else
			g->unexp[cid] = u->next;
		if (g->unexp_tail[cid] == u)
			g->unexp_tail[cid] = prev;
		deliver(r, u->peer, u->conn, &u->hdr, u->data);
		free(u);
		return 0;
	}
	/* from a peer that said BYE nothing more comes: what it sent
	 * before is matched above, anything else fails now */
	if (r->peer >= 0 && r->peer != g->rank && g->conns[r->peer] &&
	    g->conns[r->peer]->state == RCX__CONN_CLOSED) {
		r->state = RCX__REQ_INACTIVE;
		return -ECONNRESET;
	}
	post(g, cid, r);
	return 0;
}

static int check_args(struct rcx_group *g, const void *buf, size_t len,
		      int rank, int tag, bool recv, struct rcx_req **out)
{
	if (!rcx__group_live(g) || !out || (!buf && len))
		return -EINVAL;
	if (rank != RCX_PROC_NULL &&
	    (rank < (recv ? RCX_ANY_SOURCE : 0) || rank >= g->size))
		return -EINVAL;
	if (tag < (recv ? RCX_ANY_TAG : 0) || tag > RCX_TAG_UB)
		return -EINVAL;
	return 0;
}

/* what a point-to-point request is about (its cid: 0 unless set) */
static inline void set_msg(struct rcx_req *r, struct rcx_group *g, void *buf,
			   size_t len, int peer, int tag)
{
	r->g = g;
	r->buf = buf;
	r->len = len;
	r->peer = peer;
	r->tag = tag;
}

static int make(struct rcx_group *g, void *buf, size_t len, int peer, int tag,
		uint8_t cid, int kind, const struct rcx__req_ops *ops,
		struct rcx_req **out)
{
	struct rcx_req *r = rcx__req_get(g->ctx, kind, ops);

	if (!r)
		return -ENOMEM;
	set_msg(r, g, buf, len, peer, tag);
	r->cid = cid;
	*out = r;
	return 0;
}

int rcx__isend(struct rcx_group *g, const void *buf, size_t len, int dest,
	       int tag, uint8_t cid, struct rcx_req **out)
{
	struct rcx_req *r;
	int ret = make(g, (void *)buf, len, dest, tag, cid, RCX__REQ_SEND,
		       &once_ops, &r);

	if (ret)
		return ret;
	ret = send_start(r);
	if (ret) {
		rcx__req_put(r);
		return ret;
	}
	*out = r;
	return 0;
}

int rcx__irecv(struct rcx_group *g, void *buf, size_t len, int src, int tag,
	       uint8_t cid, struct rcx_req **out)
{
	struct rcx_req *r;
	int ret =
		make(g, buf, len, src, tag, cid, RCX__REQ_RECV, &once_ops, &r);

	if (ret)
		return ret;
	ret = recv_start(r);
	if (ret) {
		rcx__req_put(r);
		return ret;
	}
	*out = r;
	return 0;
}

/*
 * rcx_isend and rcx_irecv: their fast paths are one call each, with its
 * one frame; the entry points check and jump.
 */
static __attribute__((noinline)) int isend_checked(struct rcx_group *g,
						   const void *buf, size_t len,
						   int dest, int tag,
						   struct rcx_req **req)
{
	int ret = check_args(g, buf, len, dest, tag, false, req);

	if (ret)
		return ret;
	rcx__lock(g->ctx);
	ret = rcx__isend(g, buf, len, dest, tag, RCX__CID_USER, req);
	rcx__unlock(g->ctx);
	return ret;
}

/*
 * An eager message to another rank, on one thread (checked): straight to
 * the connection's fast path (rcx__conn_send_imm), or send_start.
 */
static __attribute__((noinline)) int isend_eager(struct rcx_group *g,
						 const void *buf, size_t len,
						 int dest, int tag,
						 struct rcx_req **req)
{
	struct rcx_req *r = rcx__req_take(g->ctx, RCX__REQ_SEND, EAGER_OPS);
	int ret;

	if (RCX__UNLIKELY(!r))
		return isend_checked(g, buf, len, dest, tag, req);
	set_msg(r, g, (void *)buf, len, dest, tag);
	r->status.source = g->rank;
	r->status.tag = tag;
	r->sendop = RCX__MSG_EAGER;
	r->state = RCX__REQ_ACTIVE;
	ret = rcx__conn_send_imm(g->conns[dest], r);
	if (RCX__LIKELY(ret > 0)) {
		/* just taken, so no hook, continuation or free to run
		 * (rcx__req_complete): done, its error 0 */
		r->state = RCX__REQ_DONE;
		*req = r;
		return 0;
	}
	if (!ret)
		ret = send_start(r);
	if (ret < 0) {
		rcx__req_put(r);
		return ret;
	}
	*req = r;
	return 0;
}

RCX_API int rcx_isend(struct rcx_group *g, const void *buf, size_t len,
		      int dest, int tag, struct rcx_req **req)
{
	if (RCX__LIKELY(rcx__group_live(g) && req && buf && len && dest >= 0 &&
			dest < g->size && dest != g->rank && tag >= 0 &&
			tag <= RCX_TAG_UB && !g->ctx->mt &&
			len <= g->ctx->cfg.eager_size))
		return isend_eager(g, buf, len, dest, tag, req);
	return isend_checked(g, buf, len, dest, tag, req);
}

static __attribute__((noinline)) int irecv_checked(struct rcx_group *g,
						   void *buf, size_t len,
						   int source, int tag,
						   struct rcx_req **req)
{
	int ret = check_args(g, buf, len, source, tag, true, req);

	if (ret)
		return ret;
	rcx__lock(g->ctx);
	ret = rcx__irecv(g, buf, len, source, tag, RCX__CID_USER, req);
	rcx__unlock(g->ctx);
	return ret;
}

/*
 * A receive on one thread (checked) with no unexpected message to look
 * at: posted, as recv_start would, unless its peer failed or left. In
 * rcx_irecv's body: neither needs a frame, and the context is loaded once.
 */
static inline __attribute__((always_inline)) int irecv_posted(
	struct rcx_group *g, void *buf, size_t len, int source, int tag,
	struct rcx_req **req)
{
	struct rcx__conn *c = source >= 0 ? g->conns[source] : NULL;
	struct rcx_ctx *ctx = g->ctx;
	struct rcx_req *r;

	if (RCX__UNLIKELY(c && c->state != RCX__CONN_UP) ||
	    !(r = rcx__req_take(ctx, RCX__REQ_RECV, EAGER_OPS)))
		return irecv_checked(g, buf, len, source, tag, req);
	set_msg(r, g, buf, len, source, tag);
	/* its test polls the driver straight away, as a channel's does */
	r->peek = rcx__req_peek(ctx);
	r->state = RCX__REQ_ACTIVE;
	post(g, RCX__CID_USER, r);
	*req = r;
	return 0;
}

RCX_API int rcx_irecv(struct rcx_group *g, void *buf, size_t len, int source,
		      int tag, struct rcx_req **req)
{
	if (RCX__LIKELY(rcx__group_live(g) && req && (buf || !len) &&
			source >= RCX_ANY_SOURCE && source < g->size &&
			tag >= RCX_ANY_TAG && tag <= RCX_TAG_UB &&
			!g->ctx->mt && !g->unexp[RCX__CID_USER]))
		return irecv_posted(g, buf, len, source, tag, req);
	return irecv_checked(g, buf, len, source, tag, req);
}

RCX_API int rcx_send(struct rcx_group *g, const void *buf, size_t len, int dest,
		     int tag)
{
	struct rcx_req *r;
	int ret = rcx_isend(g, buf, len, dest, tag, &r);

	return ret ? ret : rcx_wait(&r, RCX_STATUS_IGNORE);
}

RCX_API int rcx_recv(struct rcx_group *g, void *buf, size_t len, int source,
		     int tag, struct rcx_status *status)
{
	struct rcx_req *r;
	struct rcx_status st;
	int ret = rcx_irecv(g, buf, len, source, tag, &r);

	if (ret)
		return ret;
	ret = rcx_wait(&r, &st);
	if (status)
		*status = st;
	return ret ? ret : st.error;
}

static int init_common(struct rcx_group *g, void *buf, size_t len, int peer,
		       int tag, bool recv, struct rcx_req **req)
{
	struct rcx_req *r;
	int ret = check_args(g, buf, len, peer, tag, recv, req);

	if (ret)
		return ret;
	rcx__lock(g->ctx);
	ret = make(g, buf, len, peer, tag, RCX__CID_USER,
		   recv ? RCX__REQ_RECV : RCX__REQ_SEND,
		   recv ? &precv_ops : &psend_ops, &r);
	if (!ret) {
		rcx__group_hold(g);
		r->persistent = 1;
		r->state = RCX__REQ_INACTIVE;
		/* register once for every start that goes by rendezvous */
		if (len > g->ctx->cfg.eager_size && peer != g->rank &&
		    peer >= 0) {
			ret = rcx__reg_get(g->ctx, buf, len,
					   recv ? RCX_ACCESS_LOCAL_WRITE
						: RCX_ACCESS_REMOTE_READ,
					   &r->reg);
			if (ret)
				rcx__req_put(r);
			else
				r->keep_reg = 1;
		}
	}
	rcx__unlock(g->ctx);
	if (!ret)
		*req = r;
	return ret;
}

RCX_API int rcx_send_init(struct rcx_group *g, const void *buf, size_t len,
			  int dest, int tag, struct rcx_req **req)
{
	return init_common(g, (void *)buf, len, dest, tag, false, req);
}

RCX_API int rcx_recv_init(struct rcx_group *g, void *buf, size_t len,
			  int source, int tag, struct rcx_req **req)
{
	return init_common(g, buf, len, source, tag, true, req);
}

static int start_cb(struct rcx_group *g, void *buf, size_t len, int peer,
		    int tag, uint8_t cid, bool recv,
		    void (*done)(struct rcx_req *), void *arg,
		    struct rcx_req **pending)
{
	struct rcx_req *r;
	int ret = make(g, buf, len, peer, tag, cid,
		       recv ? RCX__REQ_RECV : RCX__REQ_SEND, &once_ops, &r);

	if (ret)
		return ret;
	r->done = done;
	r->done_arg = arg;
	r->user_freed = 1;
	if (pending)
		*pending = r; /* the done hook clears it */
	ret = recv ? recv_start(r) : send_start(r);
	if (ret) {
		if (pending)
			*pending = NULL;
		rcx__req_put(r);
	}
	return ret;
}

/* Take back a posted, unmatched receive: it completes with err. */
bool rcx__p2p_cancel(struct rcx_req *r, int err)
{
	struct rcx_group *g = r->g;
	struct rcx_req *it, *prev = NULL;

	for (it = g->posted[r->cid]; it; prev = it, it = it->next) {
		if (it != r)
			continue;
		if (prev)
			prev->next = r->next;
		else
			g->posted[r->cid] = r->next;
		if (g->posted_tail[r->cid] == r)
			g->posted_tail[r->cid] = prev;
		r->next = NULL;
		rcx__req_complete(r, err);
		return true;
	}
	return false;
}

int rcx__isend_cb(struct rcx_group *g, const void *buf, size_t len, int dest,
		  int tag, uint8_t cid, void (*done)(struct rcx_req *),
		  void *arg, struct rcx_req **pending)
{
	return start_cb(g, (void *)buf, len, dest, tag, cid, false, done, arg,
			pending);
}

int rcx__irecv_cb(struct rcx_group *g, void *buf, size_t len, int src, int tag,
		  uint8_t cid, void (*done)(struct rcx_req *), void *arg,
		  struct rcx_req **pending)
{
	return start_cb(g, buf, len, src, tag, cid, true, done, arg, pending);
}
