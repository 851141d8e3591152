/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA windows: collective creation (memory registered once; base, key,
 * size and displacement unit of every rank exchanged with one
 * allgather), the pool of operation slots with their registered bounce
 * memory, posting with rcx_win_order's checks and the send-queue budget,
 * completion, the loopback endpoints for NIC atomics on the window's own
 * memory. Put and get are in win_rma.c, their replay after a
 * reconnection in win_replay.c, the NIC endpoints to peers the group
 * reaches without the NIC in win_nep.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "lib/win/win_nep.h"

static pthread_mutex_t wins_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcx_win *wins;
static uint32_t wins_next_id = 1;

struct rcx_win *rcx__win_find(struct rcx_ctx *ctx, uint32_t id)
{
	struct rcx_win *w;

	pthread_mutex_lock(&wins_lock);
	for (w = wins; w; w = w->next)
		if (w->id == id && w->ctx == ctx)
			break;
	pthread_mutex_unlock(&wins_lock);
	return w;
}

static void wins_add(struct rcx_win *w)
{
	pthread_mutex_lock(&wins_lock);
	w->id = wins_next_id++;
	if (!w->id) /* 0 is never a window */
		w->id = wins_next_id++;
	w->next = wins;
	wins = w;
	pthread_mutex_unlock(&wins_lock);
}

/* ft.c: a member of g failed; every window of g becomes invalid. */
void rcx__win_group_failed(struct rcx_group *g, int err)
{
	struct rcx_win *w;

	pthread_mutex_lock(&wins_lock);
	for (w = wins; w; w = w->next)
		if (w->g == g) {
			rcx__win_nep_failed(w);
			rcx__win_invalidate(w, err);
		}
	pthread_mutex_unlock(&wins_lock);
}

/* validate (win_ft.c): a new id, so messages meant for the old go astray */
void rcx__win_renumber(struct rcx_win *w)
{
	pthread_mutex_lock(&wins_lock);
	w->id = wins_next_id++;
	if (!w->id)
		w->id = wins_next_id++;
	pthread_mutex_unlock(&wins_lock);
}

static void wins_del(struct rcx_win *w)
{
	struct rcx_win **pp;

	pthread_mutex_lock(&wins_lock);
	for (pp = &wins; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	pthread_mutex_unlock(&wins_lock);
}

/* ---- operation slots */

static bool has_free(struct rcx_win *w, void *arg)
{
	return w->op_free != NULL || w->invalid;
}

int rcx__win_op_get(struct rcx_win *w, int target, struct rcx__win_op **out)
{
	struct rcx__win_op *op;
	uint8_t *bounce;
	uint32_t gen;
	int ret;

	if (!w->op_free) {
		ret = rcx__win_wait(w, has_free, NULL);
		if (ret)
			return ret;
		if (!w->op_free)
			return RCX_ERR_PROC_FAILED; /* invalid meanwhile */
	}
	op = w->op_free;
	w->op_free = op->next;
	bounce = op->bounce;
	gen = op->gen + 1;
	/* wr1 is written before it is read (win_replay.c) */
	memset(op, 0, offsetof(struct rcx__win_op, wr1));
	op->win = w;
	op->bounce = bounce;
	op->gen = gen;
	op->target = target;
	op->busy = 1;
	*out = op;
	return 0;
}

void rcx__win_op_put(struct rcx_win *w, struct rcx__win_op *op)
{
	rcx__win_replay_forget(op);
	if (op->reg) {
		rcx__reg_put(w->ctx, op->reg);
		op->reg = NULL;
	}
	op->busy = 0;
	op->next = w->op_free;
	w->op_free = op;
}

static void op_wr_done(struct rcx_ctx *ctx, struct rcx__wrctx *wc,
		       const struct rcx_cqe *cqe)
{
	struct rcx__win_op *op = (struct rcx__win_op *)wc;
	struct rcx_win *w = op->win;
	struct rcx__conn *c;
	int err;

	(*op->sq)--;
	rcx__stats_cqe(&ctx->st, cqe->status);
	/*
	 * What failed, the transport or the peer (fail.c): through the
	 * group's connection to it, or the window's own endpoint (nep).
	 */
	err = cqe->status;
	if (err && w->nep && op->sq == &w->nep[op->target].wr) {
		err = rcx__win_nep_wc_error(w, op->target, err);
		/* the endpoint is remade (win_nep.c): as below */
		if (op->redo && err == RCX_ERR_TRANSPORT &&
		    w->nep[op->target].state == RCX__CONN_RECONN) {
			op->broken = 1;
			err = 0;
		}
	} else if (rcx__err_transport(err) || err == RCX_ERR_FLUSHED) {
		c = rcx__win_conn(w, op->target);
		err = rcx__conn_wc_error(c, err);
		/* the connection is being remade: a put or get goes again
		 * (win_replay.c); an atomic's outcome is unknown */
		if (op->redo && c->state == RCX__CONN_RECONN) {
			op->broken = 1;
			err = 0;
		}
	}
	if (err && !op->error)
		op->error = err;
	if (--op->nwr)
		return;
	if (op->broken && !op->error) {
		rcx__win_replay_add(w, op);
		return;
	}
	if (!op->internal)
		rcx__win_op_done(w, op, op->error);
	/* room on the loopback queue for a bulk accumulate held back */
	if (w->jobs && w->loop && op->sq == &w->loop[0].wr)
		rcx__win_jobs_pump(w);
}

void rcx__win_op_done(struct rcx_win *w, struct rcx__win_op *op, int err)
{
	struct rcx__win_tgt *t = &w->tgt[op->target];

	if (op->listed)
		rcx__order_done(w, op);
	t->inflight--;
	if (op->local)
		t->local--;
	if (op->fenced) {
		t->fenced--;
		w->ctx->win_fenced--;
	}
	t->done++;
	if (err && !t->error)
		t->error = err;
	/* READs into the bounce and NIC atomics: results are in the slot */
	if (!err && op->result && op->via != RCX__VIA_SW)
		memcpy(op->result, op->bounce, op->rsize);
	if (op->req)
		rcx__win_req_drop(op->req, err);
	rcx__win_op_put(w, op);
}

void rcx__win_issued(struct rcx_win *w, struct rcx__win_op *op)
{
	struct rcx__win_tgt *t = &w->tgt[op->target];

	t->inflight++;
	if (op->local)
		t->local++;
	if (op->req)
		rcx__win_req_hold(op->req);
	if (w->fence_open)
		w->fence_ops++;
}

static void kick(struct rcx_win *w, int target);

int rcx__win_wait_ms(struct rcx_win *w, bool (*done)(struct rcx_win *, void *),
		     void *arg, int sleep_ms)
{
	struct rcx_ctx *ctx = w->ctx;
	struct rcx__spin sp = { 0 };
	long long now, moved = 0; /* 0: progress made, clock not read since */
	unsigned int idle = 0;
	int t;

	while (!done(w, arg)) {
		if (rcx__progress(ctx) > 0) {
			moved = 0;
			continue;
		}
		/* a software op to a failed peer gets no reply: end it */
		rcx__win_fail_sw(w);
		if (done(w, arg))
			break;
		/* the clock, like the spin's, once in a while (rcx__spin) */
		if (sp.over || ++idle % RCX__SPIN_POLLS == 0) {
			now = rcx__now_us();
			if (!moved) {
				moved = now;
			} else if (now - moved > RCX__WIN_KICK_US) {
				for (t = 0; t < w->size; t++)
					if (w->tgt[t].fenced)
						kick(w, t);
				moved = now;
			}
		}
		if (rcx__spin_over(ctx, &sp))
			rcx__wait_events(ctx, sleep_ms);
	}
	return 0;
}

/* ---- loopback endpoints: NIC atomics on this process's own memory */

/*
 * CPU atomics and NIC atomics on the same word are not atomic with
 * respect to each other (rxe and most HCAs report IBV_ATOMIC_HCA): a
 * process that targets its own window with a fetch-add while others do
 * the same through their NICs must use its NIC too. So the window keeps
 * a connected pair of its own endpoints, made on first use.
 */
void rcx__win_lep_on_cm(struct rcx__epobj *o, const struct rcx_cm_event *ev)
{
	struct rcx__win_lep *l = (struct rcx__win_lep *)o;

	switch (ev->type) {
	case RCX_CM_ESTABLISHED:
		if (l->state == RCX__CONN_CONNECTING)
			l->state = RCX__CONN_UP;
		break;
	case RCX_CM_DISCONNECTED:
	case RCX_CM_ERROR:
		l->state = RCX__CONN_FAILED;
		l->error = ev->status ? ev->status : RCX_ERR_PROC_FAILED;
		break;
	}
}

struct loop_pdata {
	char magic[4]; /* "RCXW" */
	uint32_t pid;
	uint64_t cookie; /* the endpoint pair's address */
};

static struct rcx__pending_req *loop_take(struct rcx_ctx *ctx,
					  const struct loop_pdata *want)
{
	struct rcx__pending_req *p, **pp;

	for (pp = &ctx->conn_reqs; (p = *pp); pp = &p->next)
		if (p->len >= sizeof(*want) &&
		    !memcmp(p->pdata, want, sizeof(*want))) {
			*pp = p->next;
			return p;
		}
	return NULL;
}

static void loop_close(struct rcx_ctx *ctx, struct rcx__win_lep *l)
{
	int i;

	if (!l)
		return;
	for (i = 0; i < 2; i++)
		if (l[i].ep)
			ctx->ops->ep_destroy(l[i].ep);
	free(l);
}

/*
 * The window's own endpoints: RDMA and atomics only, through the NIC
 * where the context has one besides another path (the nic hint).
 */
struct rcx_ep_attr rcx__win_lep_attr(struct rcx_ctx *ctx)
{
	struct rcx_ep_attr a = {
		.max_send_wr = RCX__WIN_SQ_DEPTH,
		.max_recv_wr = 1,
		.timeout = ctx->cfg.qp_timeout,
		.retry_cnt = ctx->cfg.qp_retry,
		.rnr_retry = ctx->cfg.rnr_retry,
		.nic = 1,
	};

	return a;
}

static int loop_open(struct rcx_win *w, struct rcx__win_lep **out)
{
	struct rcx_ctx *ctx = w->ctx;
	struct rcx__win_lep *l = calloc(2, sizeof(*l));
	struct rcx_ep_attr a = rcx__win_lep_attr(ctx);
	struct loop_pdata pd = { .magic = "RCXW" };
	struct rcx__pending_req *p;
	long long end = rcx__now_us() + ctx->cfg.connect_timeout_ms * 1000LL;
	int i, ret;

	if (!l)
		return -ENOMEM;
	for (i = 0; i < 2; i++) {
		l[i].obj.on_cm = rcx__win_lep_on_cm;
		l[i].state = RCX__CONN_CONNECTING;
	}
	pd.pid = (uint32_t)getpid();
	pd.cookie = (uintptr_t)l;
	a.ep_ctx = &l[0];
	ret = ctx->ops->ep_connect(ctx->dev, ctx->addr, &a, &pd, sizeof(pd),
				   &l[0].ep);
	while (!ret) {
		ret = rcx__cm_progress(ctx);
		if (ret < 0)
			break;
		ret = 0;
		if (!l[1].ep && (p = loop_take(ctx, &pd))) {
			a.ep_ctx = &l[1];
			ret = ctx->ops->ep_accept(ctx->dev, p->req, &a,
						  &l[1].ep);
			if (ret)
				ctx->ops->ep_reject(ctx->dev, p->req);
			free(p);
			if (ret)
				break;
		}
		if (l[0].state == RCX__CONN_UP && l[1].state == RCX__CONN_UP) {
			*out = l;
			return 0;
		}
		for (i = 0; i < 2; i++)
			if (l[i].state == RCX__CONN_FAILED)
				ret = l[i].error;
		if (!ret && rcx__now_us() > end)
			ret = -ETIMEDOUT;
		if (!ret)
			rcx__wait_events(ctx, 10);
	}
	loop_close(ctx, l);
	return ret;
}

int rcx__win_ep(struct rcx_win *w, int target, struct rcx_ep **ep,
		uint32_t **sq)
{
	struct rcx__conn *c;
	struct rcx__win_lep *l;
	int ret;

	if (target != w->rank && w->nep && w->nep[target].ep) {
		l = &w->nep[target];
		/* being remade (win_nep.c): ops wait for the new one */
		if (l->state == RCX__CONN_RECONN) {
			*ep = NULL;
			*sq = &l->wr;
			return 0;
		}
		if (l->state != RCX__CONN_UP) {
			/* the peer ended it (its death, as on a group
			 * connection): failed for the group too, so the
			 * window is invalid before the caller hears of it */
			if (l->state == RCX__CONN_FAILED &&
			    l->error == RCX_ERR_PROC_FAILED)
				rcx__group_failed(w->g, target,
						  RCX_ERR_PROC_FAILED);
			return RCX_ERR_PROC_FAILED;
		}
		*ep = l->ep;
		*sq = &l->wr;
		return 0;
	}
	if (target != w->rank) {
		c = rcx__win_conn(w, target);
		if (c->state == RCX__CONN_FAILED)
			return RCX_ERR_PROC_FAILED;
		/* being remade (conn.c): no endpoint to post on yet, ops
		 * wait for the new one (win_replay.c) */
		*ep = c->state == RCX__CONN_RECONN ? NULL : c->ep;
		*sq = &c->win_wr;
		return 0;
	}
	if (!w->loop) {
		/* the wait inside may let another thread in: one opener */
		while (w->loop_opening)
			rcx__wait_events(w->ctx, 10);
	}
	if (!w->loop) {
		w->loop_opening = true;
		ret = loop_open(w, &l);
		w->loop_opening = false;
		if (ret)
			return ret;
		w->loop = l;
	}
	if (w->loop[0].state != RCX__CONN_UP)
		return RCX_ERR_PROC_FAILED;
	*ep = w->loop[0].ep;
	*sq = &w->loop[0].wr;
	return 0;
}

/* ---- posting */

/*
 * Re-drive a send queue whose fenced WR may be stuck. rxe (seen on Linux
 * 6.1) can lose the wakeup of a fenced WR: its requester finds an earlier
 * READ/ATOMIC incomplete and marks itself waiting, while the completer,
 * finishing that READ at the same moment, has already looked for the
 * mark; the WR then waits until something else is posted on the QP.
 * Posting an 8-byte READ of the target's lock word behind it makes the
 * requester look again. It changes nothing at the target and is ordered
 * after everything on the queue, so it is harmless on any device.
 * It completes only after the fenced WR: at most RCX__WIN_KICKS_MAX are
 * outstanding per target (win_int.h says why), each one interval without
 * a completion after the one before. The last RCX__WIN_KICKS_MAX entries
 * of the budget are theirs: ops that found it full wait for the queue to
 * move, which may take a kick.
 */
/* A kick READ completed (or was flushed): it only had to be posted. */
static void kick_done(struct rcx_ctx *ctx, struct rcx__wrctx *wc,
		      const struct rcx_cqe *cqe)
{
	struct rcx__win_kick *k = (struct rcx__win_kick *)wc;

	(void)ctx;
	(void)cqe;
	(*k->sq)--;
	k->out--;
}

static void kick(struct rcx_win *w, int target)
{
	struct rcx__win_kick *k = &w->tgt[target].kick;
	struct rcx_wr wr, *bad;
	struct rcx_ep *ep;
	uint32_t *sq;

	if (k->out >= RCX__WIN_KICKS_MAX || rcx__win_ep(w, target, &ep, &sq) ||
	    !ep || *sq >= RCX__WIN_SQ_DEPTH)
		return;
	/* every kick to a target goes on the queue of the ops before it */
	if (k->out && k->sq != sq)
		return;
	k->wrc.cb = kick_done;
	k->win = w;
	k->target = target;
	k->sq = sq;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&k->wrc;
	wr.op = RCX_OP_READ;
	wr.flags = RCX_WR_SIGNALED;
	/* into the bounce memory past the slots': nobody reads it */
	wr.addr =
		(uintptr_t)(w->bounce + (size_t)RCX__WIN_OPS * RCX__WIN_BOUNCE);
	wr.length = 8;
	wr.lkey = w->bounce_reg->lkey;
	wr.remote_addr = w->peer[target].ctrl;
	wr.rkey = w->peer[target].ctrl_rkey;
	if (w->ctx->ops->post_send(ep, &wr, &bad))
		return;
	(*sq)++;
	k->out++;
	w->stats.kicks++;
}

/*
 * The same re-drive whatever the program makes progress with (rcx_test,
 * rcx_progress, an event loop), not only window waits: every
 * RCX__WIN_KICK_US at most, a target with fenced WRs outstanding and no
 * completion since the last look gets a kick.
 */
void rcx__win_idle(struct rcx_ctx *ctx)
{
	long long now = rcx__now_us();
	struct rcx__win_tgt *t;
	struct rcx_win *w;
	int i;

	if (now - ctx->kick_at_us < RCX__WIN_KICK_US)
		return;
	ctx->kick_at_us = now;
	pthread_mutex_lock(&wins_lock);
	for (w = wins; w; w = w->next) {
		if (w->ctx != ctx || w->invalid)
			continue;
		for (i = 0; i < w->size; i++) {
			t = &w->tgt[i];
			if (t->fenced && t->done == t->done_seen)
				kick(w, i);
			t->done_seen = t->done;
		}
	}
	pthread_mutex_unlock(&wins_lock);
}

struct sq_room {
	uint32_t *sq;
	uint32_t n;
};

static bool sq_has_room(struct rcx_win *w, void *arg)
{
	struct sq_room *r = arg;

	return *r->sq + r->n <= RCX__WIN_SQ_OPS || w->invalid;
}

int rcx__win_post(struct rcx_win *w, struct rcx__win_op *op, struct rcx_wr *wr,
		  int n)
{
	struct rcx_ctx *ctx = w->ctx;
	struct rcx_wr *bad = NULL;
	struct sq_room room;
	struct rcx_ep *ep, *ep2;
	bool fence = false, queue;
	uint64_t waits;
	int i, ret, posted;

	room.n = n;
	for (;;) {
		/* the target may fail while we wait */
		ret = rcx__win_ep(w, op->target, &ep, &room.sq);
		if (ret)
			return ret;
		/* no endpoint while the connection is remade: the op waits
		 * for the new one, behind those already waiting */
		queue = !ep || rcx__win_replay_waiting(w, op->target);
		if (!queue && !sq_has_room(w, &room)) {
			rcx__win_wait(w, sq_has_room, &room);
			if (w->invalid)
				return RCX_ERR_PROC_FAILED;
			continue;
		}
		/* last before posting: nothing may complete between this
		 * check and the post, so the fence decision stands */
		waits = w->stats.waits;
		ret = rcx__order_prepare(w, op->strm, op->target, op->cls,
					 op->via, op->off, op->len, &fence);
		if (ret)
			return ret;
		if (waits == w->stats.waits)
			break; /* it did not wait: nothing moved */
		/* a wait in there may have let another thread use the room,
		 * or seen the connection break or come back */
		ret = rcx__win_ep(w, op->target, &ep2, &room.sq);
		if (ret)
			return ret;
		queue = !ep2 || rcx__win_replay_waiting(w, op->target);
		if (ep2 == ep && (queue || sq_has_room(w, &room)))
			break;
	}
	for (i = 0; i < n; i++) {
		wr[i].wr_id = (uintptr_t)&op->wrc;
		wr[i].flags |= RCX_WR_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	if (fence)
		wr[0].flags |= RCX_WR_FENCE;
	op->wrc.cb = op_wr_done;
	op->sq = room.sq;
	op->pno = ++w->pno;
	/* what may have to go again after a reconnection (win_replay.c) */
	ret = rcx__win_replay_save(op, wr, n, queue);
	if (ret)
		return ret;
	if (queue) {
		rcx__win_replay_add(w, op);
	} else {
		ret = ctx->ops->post_send(ep, wr, &bad);
		posted = ret ? (int)(bad - wr) : n;
		if (ret && (posted <= 0 || posted > n))
			return ret; /* nothing went out */
		/* all, or a prefix that completes and carries the error */
		if (ret)
			op->error = ret;
		*room.sq += posted;
		op->nwr = posted;
		rcx__stats_wrs(&ctx->st, wr, posted);
	}
	if (fence) {
		op->fenced = 1;
		w->tgt[op->target].fenced++;
		ctx->win_fenced++;
	}
	rcx__order_posted(w, op, fence);
	return 0;
}

/* ---- requests */

static const struct rcx__req_ops win_req_ops = { 0 };

/*
 * A window request counts its ops in rlen, plus one held by the issuing
 * call until every op is out; it completes when the count reaches zero.
 */
struct rcx_req *rcx__win_req_new(struct rcx_win *w)
{
	struct rcx_req *r =
		rcx__req_get(w->ctx, RCX__REQ_INTERNAL, &win_req_ops);

	if (!r)
		return NULL;
	r->obj = w;
	r->rlen = 1;
	r->state = RCX__REQ_ACTIVE;
	r->status.source = w->rank;
	return r;
}

void rcx__win_req_hold(struct rcx_req *r)
{
	r->rlen++;
}

void rcx__win_req_drop(struct rcx_req *r, int err)
{
	if (err && !r->status.error)
		r->status.error = err;
	if (--r->rlen == 0)
		rcx__req_complete(r, r->status.error);
}

/*
 * End the issuing call's hold on a request. On an error with nothing
 * issued the request is discarded; with ops issued it frees itself when
 * they complete.
 */
int rcx__win_req_finish(struct rcx_req *r, int ret, struct rcx_req **out)
{
	if (!r)
		return ret;
	if (ret) {
		if (r->rlen == 1) {
			rcx__req_put(r);
		} else {
			r->user_freed = 1;
			rcx__win_req_drop(r, ret);
		}
		return ret;
	}
	rcx__win_req_drop(r, 0);
	*out = r;
	return 0;
}

/* ---- creation and destruction */

static const char *const scope_names[] = { "thread", "process", NULL };

/* accumulate_ordering: "none", or a comma list of rar, raw, war, waw */
static int parse_acc_ordering(const struct rcx_info *info, bool *out)
{
	const char *v = rcx__info_lookup(info, RCX_ACC_ORDERING), *p;
	static const char *const toks[] = { "rar", "raw", "war", "waw" };
	size_t i, n;

	if (!v) {
		*out = true;
		return 0;
	}
	if (!strcmp(v, "none")) {
		*out = false;
		return 0;
	}
	for (p = v;;) {
		n = strcspn(p, ",");
		for (i = 0; i < 4; i++)
			if (n == 3 && !strncmp(p, toks[i], 3))
				break;
		if (i == 4)
			return -EINVAL;
		if (!p[n])
			break;
		p += n + 1;
	}
	*out = true;
	return 0;
}

static int parse_info(struct rcx_win *w, const struct rcx_info *info)
{
	int scope, ret;

	ret = rcx__info_enum(info, RCX_ORDER_SCOPE, scope_names, 0, &scope);
	if (!ret)
		ret = parse_acc_ordering(info, &w->acc_order);
	if (!ret)
		ret = rcx__info_bool(info, RCX_ACCUMULATE_NIC, true,
				     &w->nic_acc);
	w->scope_process = scope == 1;
	return ret;
}

static void win_destroy(struct rcx_win *w)
{
	struct rcx_ctx *ctx = w->ctx;
	struct rcx_group *g = w->g;
	int i;

	wins_del(w);
	rcx__win_jobs_free(w);
	rcx__win_dyn_free(w);
	rcx__win_shared_free(w);
	rcx__win_direct_close(w);
	loop_close(ctx, w->loop);
	rcx__win_nep_close(w);
	rcx__order_fini(w);
	rcx__reg_put(ctx, w->reg);
	rcx__reg_put(ctx, w->ctrl_reg);
	rcx__reg_put(ctx, w->bounce_reg);
	if (w->allocated)
		rcx__mem_free(ctx, w->base);
	free(w->ctrl);
	free(w->pscw);
	free(w->bounce);
	free(w->ops);
	free(w->scratch);
	free(w->peer);
	for (i = 0; w->tgt && i < w->size; i++)
		ctx->win_fenced -= w->tgt[i].fenced;
	free(w->tgt);
	free(w->excl);
	free(w->lost);
	free(w->undef);
	w->magic = 0;
	free(w);
	/* the last holder of a group the user freed takes it down */
	rcx__group_release(g);
}

/* Everything local: registrations, slots, streams. Lock held. */
static int win_setup(struct rcx_win *w)
{
	struct rcx_ctx *ctx = w->ctx;
	const unsigned int all =
		RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_READ |
		RCX_ACCESS_REMOTE_WRITE | RCX_ACCESS_REMOTE_ATOMIC;
	/* the slots' bounce memory, then 8 bytes the kicks read into */
	const size_t bounce_len = (size_t)RCX__WIN_OPS * RCX__WIN_BOUNCE + 64;
	int i, ret;

	w->peer = calloc(w->size, sizeof(*w->peer));
	w->tgt = calloc(w->size, sizeof(*w->tgt));
	w->ops = calloc(RCX__WIN_OPS, sizeof(*w->ops));
	w->scratch = malloc(2 * (ctx->cfg.eager_size + 64));
	if (!w->peer || !w->tgt || !w->ops || !w->scratch ||
	    posix_memalign((void **)&w->ctrl, 64, rcx__win_ctrl_len(w->size)) ||
	    posix_memalign((void **)&w->bounce, 64, bounce_len))
		return -ENOMEM;
	memset(w->ctrl, 0, rcx__win_ctrl_len(w->size));
	/* keys of its own: validate must be able to revoke them */
	if (w->len) {
		ret = rcx__reg_get_private(ctx, w->base, w->len, all, &w->reg);
		if (ret)
			return ret;
	}
	ret = rcx__reg_get_private(ctx, w->ctrl, rcx__win_ctrl_len(w->size),
				   all, &w->ctrl_reg);
	if (!ret)
		ret = rcx__reg_get(ctx, w->bounce, bounce_len,
				   RCX_ACCESS_LOCAL_WRITE, &w->bounce_reg);
	if (ret)
		return ret;
	for (i = RCX__WIN_OPS - 1; i >= 0; i--) {
		w->ops[i].bounce = w->bounce + (size_t)i * RCX__WIN_BOUNCE;
		w->ops[i].win = w;
		w->ops[i].next = w->op_free;
		w->op_free = &w->ops[i];
	}
	return rcx__order_init(w);
}

/*
 * Is [base, base + size) mapped memory? Registration does not look on
 * every device (shm registers address ranges), and the peers would write
 * into whatever is there. mincore fails with ENOMEM on an unmapped page;
 * it is asked in chunks, so its vector stays small.
 */
static bool range_mapped(const void *base, size_t size)
{
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE), chunk = 4096;
	uintptr_t a = (uintptr_t)base & ~(pg - 1), end;
	unsigned char vec[4096];
	size_t n;

	if (!size)
		return true;
	if ((uintptr_t)base > UINTPTR_MAX - size)
		return false;
	end = (uintptr_t)base + size;
	for (; a < end; a += n * pg) {
		n = (end - a + pg - 1) / pg;
		if (n > chunk)
			n = chunk;
		if (mincore((void *)a, n * pg, vec))
			return false;
	}
	return true;
}

/* Memory the caller made for a window: base and size are usable. */
int rcx__win_mem_check(const char *call, const void *base, size_t size)
{
	if (!base || range_mapped(base, size))
		return 0;
	rcx__log(RCX__LOG_ERROR, "win",
		 "%s: base %p size %zu: not all of it is mapped memory", call,
		 base, size);
	return -EFAULT;
}

/*
 * Memory rcx_win_allocate can give: no more than the device registers in
 * one piece, nor than this machine has (it is zeroed at once).
 */
static int alloc_size_check(const struct rcx_ctx *ctx, size_t size)
{
	long pages = sysconf(_SC_PHYS_PAGES), pg = sysconf(_SC_PAGESIZE);

	if (ctx->info.max_mr_size && size > ctx->info.max_mr_size) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_allocate: size %zu is more than the "
			 "device registers (%llu)",
			 size, (unsigned long long)ctx->info.max_mr_size);
		return -EINVAL;
	}
	if (pages > 0 && pg > 0 && size / (size_t)pg >= (size_t)pages) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_allocate: size %zu is more than the "
			 "memory of this machine",
			 size);
		return -ENOMEM;
	}
	return 0;
}

/*
 * rcx_accumulate_nic must be the same at every rank: a location that one
 * rank's CPU updates in software and another's NIC with an atomic would
 * see lost updates. Checked by every rank on the same data, so all fail.
 */
static int nic_acc_agreed(const struct rcx_win *w,
			  const struct rcx__win_wire *all)
{
	int i;

	for (i = 0; i < w->size; i++)
		if (!w->g->acked[i] && all[i].nic_acc != all[w->rank].nic_acc) {
			rcx__log(RCX__LOG_ERROR, "win",
				 "rcx_win_create: info %s is %s at rank %d "
				 "and %s at rank %d: it must be the same at "
				 "every rank",
				 RCX_ACCUMULATE_NIC,
				 all[w->rank].nic_acc ? "true" : "false",
				 w->rank, all[i].nic_acc ? "true" : "false", i);
			return -EINVAL;
		}
	return 0;
}

int rcx__win_create(struct rcx_group *g, void *base, size_t size,
		    size_t disp_unit, const struct rcx_info *info,
		    bool allocated, int err, struct rcx_win **out)
{
	struct rcx_ctx *ctx = g->ctx;
	struct rcx__win_wire me, *all;
	struct rcx_win *w;
	uint8_t *fl;
	bool ok;
	int i, local = 0, ret;

	w = calloc(1, sizeof(*w));
	all = calloc(g->size, sizeof(*all));
	fl = calloc(g->size, 1);
	if (!w || !all || !fl) {
		free(w);
		free(all);
		free(fl);
		return -ENOMEM;
	}
	w->magic = RCX__WIN_MAGIC;
	w->ctx = ctx;
	w->g = g;
	w->rank = g->rank;
	w->size = g->size;
	w->base = base;
	w->len = size;
	w->disp_unit = disp_unit;
	w->allocated = allocated;
	local = err;
	if (!local && ((!base && size) || !disp_unit || disp_unit > UINT32_MAX))
		local = -EINVAL;
	if (!local && !allocated)
		local = rcx__win_mem_check("rcx_win_create", base, size);
	if (!local)
		local = parse_info(w, info);
	if (!local && g->size > 1 && !ctx->info.atomics)
		local = -EOPNOTSUPP;
	rcx__lock(ctx);
	/* the window keeps its group: the user may free it first */
	rcx__group_hold(g);
	/* lazy connections: a window reaches every member at once */
	if (!local && ctx->lazy)
		local = rcx__group_connect_all(g);
	if (!local)
		local = win_setup(w);
	memset(&me, 0, sizeof(me));
	me.status = local;
	if (!local) {
		wins_add(w);
		ctx->am[RCX__CID_WIN] = rcx__win_am;
		me.disp_unit = (uint32_t)disp_unit;
		me.base = (uintptr_t)base;
		me.size = size;
		me.ctrl = (uintptr_t)w->ctrl;
		me.rkey = w->reg ? w->reg->rkey : 0;
		me.ctrl_rkey = w->ctrl_reg->rkey;
		me.id = w->id;
		me.nic_split = ctx->info.nic_split;
		me.nic_acc = w->nic_acc;
		snprintf(me.addr, sizeof(me.addr), "%s", ctx->addr);
	}
	rcx__unlock(ctx);
	/* every rank takes part, so a local failure fails all of them */
	ret = rcx_group_allgather(g, &me, sizeof(me), all);
	for (i = 0; !ret && i < g->size; i++)
		if (all[i].status)
			ret = local ? local : RCX_ERR_REMOTE_OP;
	if (!ret)
		ret = nic_acc_agreed(w, all);
	rcx__lock(ctx);
	if (!ret)
		ret = rcx__win_nep_open(w, all);
	/* a peer's bulk accumulates arrive as messages: applied here with
	 * NIC atomics through the loopback pair (win_acc.c) */
	if (!ret && w->nic_acc && w->size > 1)
		ret = loop_open(w, &w->loop);
	/*
	 * All or nothing even when a rank dies in the middle: the ranks
	 * that got everything may not be all of them, so they agree.
	 */
	ok = !ret;
	i = rcx__ft_agree(g, &ok, fl);
	if (!ret && i)
		ret = i;
	/* the failed a validation took out (rcx_group_validate) are no
	 * members of the window; any other failure is */
	for (i = 0; !ret && i < g->size; i++)
		if (fl[i] && !g->acked[i])
			ret = RCX_ERR_PROC_FAILED;
	if (!ret && !ok)
		ret = RCX_ERR_REMOTE_OP;
	if (!ret) {
		for (i = 0; i < g->size; i++) {
			w->peer[i].base = all[i].base;
			w->peer[i].size = all[i].size;
			w->peer[i].ctrl = all[i].ctrl;
			w->peer[i].rkey = all[i].rkey;
			w->peer[i].ctrl_rkey = all[i].ctrl_rkey;
			w->peer[i].disp_unit = all[i].disp_unit;
			w->peer[i].id = all[i].id;
		}
		*out = w;
	} else {
		w->allocated = false; /* the caller frees base */
		win_destroy(w);
	}
	rcx__unlock(ctx);
	free(all);
	free(fl);
	return ret;
}

RCX_API int rcx_win_create(struct rcx_group *g, void *base, size_t size,
			   size_t disp_unit, const struct rcx_info *info,
			   struct rcx_win **out)
{
	if (!rcx__group_live(g) || !out)
		return -EINVAL;
	return rcx__win_create(g, base, size, disp_unit, info, false, 0, out);
}

RCX_API int rcx_win_allocate(struct rcx_group *g, size_t size, size_t disp_unit,
			     const struct rcx_info *info, void **base,
			     struct rcx_win **out)
{
	void *mem = NULL;
	int err, ret;

	if (!rcx__group_live(g) || !out || !base)
		return -EINVAL;
	/* a refused size or a failed allocation still takes part */
	err = alloc_size_check(g->ctx, size);
	/* shm: in a segment peers map, their RMA plain loads and stores */
	if (!err && rcx__mem_alloc(g->ctx, size, &mem))
		err = -ENOMEM;
	ret = rcx__win_create(g, mem, size, disp_unit, info, true, err, out);
	if (ret) {
		rcx__mem_free(g->ctx, mem);
		return ret;
	}
	*base = mem;
	return 0;
}

RCX_API int rcx_win_free(struct rcx_win **wp)
{
	struct rcx_win *w;
	struct rcx_ctx *ctx;
	int ret, ret2;

	if (!wp || !rcx__win_live(*wp))
		return -EINVAL;
	w = *wp;
	ctx = w->ctx;
	rcx__lock(ctx);
	if (!w->invalid &&
	    (w->nlocked || w->lock_all || rcx__win_pscw_open(w))) {
		rcx__unlock(ctx);
		return RCX_ERR_EPOCH;
	}
	ret = w->invalid ? 0 : rcx__win_flush_locked(w, -1, false);
	/* nobody may still write into us when the memory goes; after a
	 * failure there is nobody to wait for: free without cleanup */
	ret2 = w->invalid ? 0 : rcx__win_barrier(w);
	/* completions still to come point into the slots */
	rcx__win_quiesce(w);
	win_destroy(w);
	rcx__unlock(ctx);
	*wp = NULL;
	return ret ? ret : ret2;
}

int rcx__win_stats(struct rcx_win *w, struct rcx__win_stats *out)
{
	if (!rcx__win_live(w) || !out)
		return -EINVAL;
	rcx__lock(w->ctx);
	*out = w->stats;
	rcx__unlock(w->ctx);
	return 0;
}

/* ---- what the core drives (lib/features.c) */

/*
 * Ops waiting for a connection to be remade (win_replay.c): posted once
 * it is up, ended once it failed. The windows are the context's, which
 * cannot go while its lock is held; ending ops runs no window call.
 */
static int win_feat_progress(struct rcx_ctx *ctx, int *ran)
{
	struct rcx_win *w;
	bool more = false;
	int moved = 0;

	(void)ran;
	pthread_mutex_lock(&wins_lock);
	for (w = wins; w; w = w->next) {
		if (w->ctx != ctx || !w->nqueued)
			continue;
		moved += rcx__win_replay_pump(w);
		more |= w->nqueued != 0;
	}
	pthread_mutex_unlock(&wins_lock);
	if (!more)
		rcx__feat_work(ctx, RCX__FEAT_WIN, false);
	return moved;
}

/* NIC endpoints being remade, and the peers' requests to remake ours */
static void win_feat_cm_poll(struct rcx_ctx *ctx, long long now_us)
{
	struct rcx_win *w;

	if (ctx->conn_reqs)
		rcx__win_nep_reqs(ctx);
	if (!atomic_load_explicit(&rcx__win_nep_remaking, memory_order_relaxed))
		return;
	pthread_mutex_lock(&wins_lock);
	for (w = wins; w; w = w->next)
		if (w->ctx == ctx && w->nep)
			rcx__win_nep_step(w, now_us);
	pthread_mutex_unlock(&wins_lock);
}

static void win_feat_idle(struct rcx_ctx *ctx)
{
	if (ctx->win_fenced)
		rcx__win_idle(ctx);
}

/* a NIC endpoint being remade; a fenced WR that the device left waiting */
static int win_feat_sleep_limit(struct rcx_ctx *ctx, int timeout_ms)
{
	timeout_ms = rcx__win_nep_sleep_limit(timeout_ms);
	if (!ctx->win_fenced)
		return timeout_ms;
	rcx__win_idle(ctx);
	if (timeout_ms < 0 || timeout_ms > RCX__KICK_SLEEP_MS)
		timeout_ms = RCX__KICK_SLEEP_MS;
	return timeout_ms;
}

static void win_feat_member_failed(struct rcx_group *g, int rank, int err)
{
	(void)rank;
	rcx__win_group_failed(g, err);
}

const struct rcx__feat_ops rcx__win_feat = {
	.name = "win",
	.progress = win_feat_progress,
	.cm_poll = win_feat_cm_poll,
	.idle = win_feat_idle,
	.sleep_limit = win_feat_sleep_limit,
	.member_failed = win_feat_member_failed,
};
