/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The window's NIC endpoints to the peers the group reaches without the
 * NIC, and their remake after a transport failure.
 *
 * A context with two paths (dev_info.nic_split: auto with a verbs
 * device) reaches the peers of its node through shared memory, whose
 * atomics a CPU runs: they and the NIC atomics other nodes' ranks send to
 * the same window word do not exclude each other (nor do those on lock
 * words, win_sync.c). So a window sends everything to such a peer through
 * endpoints of its own, made with the nic hint when the window is
 * created: the lower rank of each pair connects, the higher accepts.
 *
 * Remake: when the transport gives up on such an endpoint (its retries
 * ran out) the peer may be alive, so the endpoint is made again, as the
 * group's connections are (lib/core/conn.c):
 *  - the broken endpoint goes to error and drains; a put or get that
 *    broke with it is queued and posted again on the new one, an atomic
 *    reports RCX_ERR_TRANSPORT, and what is issued meanwhile waits
 *    behind them (win_replay.c: the same queue as for the group's
 *    connection, in post order with each WR's fence);
 *  - the rank that saw the break connects again, naming the window and
 *    itself (nep_pdata.flags NEP_REMAKE); the peer takes the request on
 *    the connection cadence, puts its own endpoint in error (its ops
 *    drain and queue the same way) and accepts. Two attempts that cross:
 *    the lower rank's stands, the higher rank drops its own;
 *  - once the new endpoint is up and the broken one drained, the broken
 *    one goes and the queue is posted. Registrations and keys do not
 *    change (the same device);
 *  - the peer is suspect meanwhile (fail.c): failed if a sign of its
 *    death comes, never for the break alone. The remake has a bound of
 *    its own, RCX_FT_TIMEOUT_MS from the break: the peer's group
 *    connection, made again meanwhile, ends its suspicion, and a remake
 *    that never ends would then hold what waits for it forever. Past the
 *    bound the peer is suspect since the break again, which fails it
 *    (declared to the launcher, as any suspect whose time ran out).
 *    With RCX_FT_TIMEOUT_MS=0 nothing is remade: the break fails the
 *    peer at once.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lib/win/win_nep.h"

/* between two attempts to connect again */
#define NEP_RETRY_US 200000
/* the longest sleep while a remake is under way (its steps, its bound) */
#define NEP_SLEEP_MS 100

enum { NEP_REMAKE = 1 };

struct nep_pdata {
	char magic[4];	/* "RCXN" */
	uint32_t win;	/* the acceptor's window id */
	uint32_t rank;	/* the connector's rank in the group */
	uint32_t flags; /* 0 at creation, or NEP_REMAKE */
};

atomic_int rcx__win_nep_remaking;

/* An endpoint to peer t is wanted: both have two paths, t's bypasses. */
static bool nep_wanted(struct rcx_win *w, int t, const char *addr,
		       uint8_t split)
{
	struct rcx_ctx *ctx = w->ctx;

	return t != w->rank && ctx->info.nic_split && split &&
	       ctx->ops->peer_split(ctx->dev, addr) == 1;
}

/* l's remake ends (up again, or failed). */
static void remake_end(struct rcx__win_lep *l, int state)
{
	if (l->state == RCX__CONN_RECONN)
		atomic_fetch_sub(&rcx__win_nep_remaking, 1);
	l->state = state;
}

void rcx__win_nep_close(struct rcx_win *w)
{
	struct rcx__win_lep *l;
	int i;

	if (!w->nep)
		return;
	for (i = 0; i < w->size; i++) {
		l = &w->nep[i];
		remake_end(l, RCX__CONN_CLOSED);
		if (l->next_ep)
			w->ctx->ops->ep_destroy(l->next_ep);
		if (l->ep)
			w->ctx->ops->ep_destroy(l->ep);
		free(l->addr);
	}
	free(w->nep);
	w->nep = NULL;
}

void rcx__win_nep_failed(struct rcx_win *w)
{
	struct rcx__win_lep *l;
	int i;

	for (i = 0; w->nep && w->g->failed && i < w->size; i++) {
		l = &w->nep[i];
		if (!w->g->failed[i] || !l->ep || l->state == RCX__CONN_FAILED)
			continue;
		if (l->state != RCX__CONN_RECONN)
			w->ctx->ops->ep_set_error(l->ep);
		if (l->next_ep)
			w->ctx->ops->ep_set_error(l->next_ep);
		remake_end(l, RCX__CONN_FAILED);
		l->error = RCX_ERR_PROC_FAILED;
	}
}

/*
 * Connection events of a NIC endpoint: those of a remake's new endpoint
 * say whether it came up; the broken one's end is no news (the peer
 * drops its own once its new one is up).
 */
static void nep_on_cm(struct rcx__epobj *o, const struct rcx_cm_event *ev)
{
	struct rcx__win_lep *l = (struct rcx__win_lep *)o;

	if (ev->ep && l->next_ep && ev->ep == l->next_ep) {
		if (ev->type == RCX_CM_ESTABLISHED)
			l->next_up = 1;
		else if (ev->type == RCX_CM_DISCONNECTED ||
			 ev->type == RCX_CM_ERROR)
			l->next_failed = 1;
		return;
	}
	if ((ev->ep && ev->ep != l->ep) || l->state == RCX__CONN_RECONN)
		return;
	rcx__win_lep_on_cm(o, ev);
}

/* Is every wanted endpoint up? 1 yes, 0 not yet, or the first error. */
static int nep_state(struct rcx_win *w, const bool *want)
{
	int i, up = 1;

	for (i = 0; i < w->size; i++) {
		if (!want[i])
			continue;
		if (w->g->failed && w->g->failed[i])
			return RCX_ERR_PROC_FAILED;
		if (w->nep[i].state == RCX__CONN_FAILED)
			return w->nep[i].error;
		if (!w->nep[i].ep || w->nep[i].state != RCX__CONN_UP)
			up = 0;
	}
	return up;
}

/* Take the requests of lower ranks meant for this window. */
static int nep_accept(struct rcx_win *w, const bool *want,
		      struct rcx_ep_attr *a)
{
	struct rcx_ctx *ctx = w->ctx;
	struct nep_pdata pd = { .magic = "RCXN", .win = w->id };
	struct rcx__pending_req *p, **pp;
	int ret;

	for (pp = &ctx->conn_reqs; (p = *pp);) {
		memcpy(&pd.rank, p->pdata + offsetof(struct nep_pdata, rank),
		       sizeof(pd.rank));
		if (p->len < sizeof(pd) || memcmp(p->pdata, &pd, sizeof(pd)) ||
		    pd.rank >= (uint32_t)w->rank || !want[pd.rank] ||
		    w->nep[pd.rank].ep) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		a->ep_ctx = &w->nep[pd.rank];
		ret = ctx->ops->ep_accept(ctx->dev, p->req, a,
					  &w->nep[pd.rank].ep);
		if (ret)
			ctx->ops->ep_reject(ctx->dev, p->req);
		free(p);
		if (ret)
			return ret;
	}
	return 0;
}

int rcx__win_nep_open(struct rcx_win *w, const struct rcx__win_wire *all)
{
	struct rcx_ctx *ctx = w->ctx;
	struct rcx_ep_attr a = rcx__win_lep_attr(ctx);
	long long end = rcx__now_us() + ctx->cfg.connect_timeout_ms * 1000LL;
	bool *want = calloc(w->size, sizeof(*want));
	int i, n = 0, ret = 0;

	for (i = 0; want && i < w->size; i++)
		n += want[i] = nep_wanted(w, i, all[i].addr, all[i].nic_split);
	if (!want || !n) {
		free(want);
		return want ? 0 : -ENOMEM;
	}
	w->nep = calloc(w->size, sizeof(*w->nep));
	if (!w->nep) {
		free(want);
		return -ENOMEM;
	}
	for (i = 0; i < w->size; i++) {
		struct nep_pdata pd = { .magic = "RCXN", .win = all[i].id };

		w->nep[i].obj.on_cm = nep_on_cm;
		w->nep[i].state = RCX__CONN_CONNECTING;
		w->nep[i].peer = i;
		if (!want[i] || ret)
			continue;
		/* where to connect again should the endpoint break */
		w->nep[i].addr = strdup(all[i].addr);
		if (!w->nep[i].addr)
			ret = -ENOMEM;
		if (i < w->rank || ret)
			continue;
		pd.rank = (uint32_t)w->rank;
		a.ep_ctx = &w->nep[i];
		ret = ctx->ops->ep_connect(ctx->dev, all[i].addr, &a, &pd,
					   sizeof(pd), &w->nep[i].ep);
	}
	while (!ret) {
		ret = rcx__cm_progress(ctx);
		if (ret >= 0)
			ret = nep_accept(w, want, &a);
		if (!ret)
			ret = nep_state(w, want);
		if (ret == 1) {
			free(want);
			return 0;
		}
		if (!ret && rcx__now_us() > end)
			ret = -ETIMEDOUT;
		if (!ret)
			rcx__wait_events(ctx, 10);
	}
	free(want);
	rcx__win_nep_close(w);
	return ret;
}

/*
 * The endpoint to t broke (err) on a peer that may be alive: remake it,
 * unless RCX_FT_TIMEOUT_MS is 0 or the peer failed. True: it is remade.
 */
static bool nep_break(struct rcx_win *w, int t, int err)
{
	struct rcx__win_lep *l = &w->nep[t];
	struct rcx_ctx *ctx = w->ctx;

	if (l->state == RCX__CONN_RECONN)
		return true;
	if (l->state != RCX__CONN_UP || !l->addr || !ctx->cfg.ft_timeout_ms ||
	    w->g->failed[t])
		return false;
	rcx__log(RCX__LOG_INFO, "win",
		 "window %u: NIC endpoint to rank %d broken (%s): made again",
		 w->id, t, rcx_strerror(err));
	l->state = RCX__CONN_RECONN;
	l->next_up = 0;
	l->next_failed = 0;
	l->next_us = 0;
	l->broke_us = rcx__now_us();
	atomic_fetch_add(&rcx__win_nep_remaking, 1);
	ctx->wake_gen++;
	/* everything on it completes now, with its status or flushed */
	ctx->ops->ep_set_error(l->ep);
	/* failed if the new endpoint does not come in time (fail.c) */
	rcx__group_suspect(w->g, t, err);
	return l->state == RCX__CONN_RECONN;
}

int rcx__win_nep_wc_error(struct rcx_win *w, int target, int status)
{
	struct rcx__win_lep *l = &w->nep[target];

	if (w->g->failed[target])
		return RCX_ERR_PROC_FAILED;
	/* the break itself, or the flush of what was behind it */
	if (l->state == RCX__CONN_RECONN)
		return rcx__err_transport(status) || status == RCX_ERR_FLUSHED
			       ? RCX_ERR_TRANSPORT
			       : status;
	if (rcx__err_transport(status) && nep_break(w, target, status))
		return RCX_ERR_TRANSPORT;
	return rcx__group_wc_error(w->g, target, status);
}

/* Drop l's attempt (it failed, or the peer's stands instead). */
static void attempt_drop(struct rcx_ctx *ctx, struct rcx__win_lep *l)
{
	if (l->next_ep)
		ctx->ops->ep_destroy(l->next_ep);
	l->next_ep = NULL;
	l->next_up = 0;
	l->next_failed = 0;
	l->next_us = rcx__now_us() + NEP_RETRY_US;
}

/* The peer (rank) of w asks to remake its endpoint to us: req. */
static void remake_req(struct rcx_ctx *ctx, struct rcx_win *w, uint32_t rank,
		       struct rcx_conn_req *req)
{
	struct rcx_ep_attr a = rcx__win_lep_attr(ctx);
	struct rcx__win_lep *l;

	if (!w || !w->nep || w->invalid || rank >= (uint32_t)w->size ||
	    (int)rank == w->rank || !w->nep[rank].ep) {
		ctx->ops->ep_reject(ctx->dev, req);
		return;
	}
	l = &w->nep[rank];
	/* it found the endpoint broken: so it is, here too */
	if (l->state == RCX__CONN_UP &&
	    !nep_break(w, (int)rank, RCX_ERR_TRANSPORT)) {
		ctx->ops->ep_reject(ctx->dev, req);
		return;
	}
	if (l->state != RCX__CONN_RECONN ||
	    (l->next_ep && w->rank < (int)rank)) {
		/* ours stands: the peer takes it instead */
		ctx->ops->ep_reject(ctx->dev, req);
		return;
	}
	attempt_drop(ctx, l);
	a.ep_ctx = l;
	if (ctx->ops->ep_accept(ctx->dev, req, &a, &l->next_ep)) {
		l->next_ep = NULL;
		ctx->ops->ep_reject(ctx->dev, req);
		return;
	}
	ctx->st.connects++;
}

void rcx__win_nep_reqs(struct rcx_ctx *ctx)
{
	struct rcx__pending_req *p, **pp;
	struct nep_pdata pd;

	for (pp = &ctx->conn_reqs; (p = *pp);) {
		if (p->len >= sizeof(pd))
			memcpy(&pd, p->pdata, sizeof(pd));
		if (p->len < sizeof(pd) || memcmp(pd.magic, "RCXN", 4) ||
		    pd.flags != NEP_REMAKE) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		remake_req(ctx, rcx__win_find(ctx, pd.win), pd.rank, p->req);
		free(p);
	}
}

/* Connect again to the peer of l. */
static void attempt(struct rcx_win *w, struct rcx__win_lep *l)
{
	struct rcx_ctx *ctx = w->ctx;
	struct rcx_ep_attr a = rcx__win_lep_attr(ctx);
	struct nep_pdata pd = { .magic = "RCXN",
				.win = w->peer[l->peer].id,
				.rank = (uint32_t)w->rank,
				.flags = NEP_REMAKE };

	l->next_us = rcx__now_us() + NEP_RETRY_US;
	a.ep_ctx = l;
	if (ctx->ops->ep_connect(ctx->dev, l->addr, &a, &pd, sizeof(pd),
				 &l->next_ep)) {
		l->next_ep = NULL;
		return;
	}
	ctx->st.connects++;
}

/* The new endpoint is up and the broken one drained: it takes over. */
static void remade(struct rcx_win *w, struct rcx__win_lep *l)
{
	struct rcx_ctx *ctx = w->ctx;
	struct rcx__conn *c = rcx__win_conn(w, l->peer);

	ctx->ops->ep_destroy(l->ep);
	l->ep = l->next_ep;
	l->next_ep = NULL;
	l->next_up = 0;
	remake_end(l, RCX__CONN_UP);
	/* no longer suspect, unless its group connection is remade too */
	if (c && c->state == RCX__CONN_UP)
		rcx__conn_unsuspect(c);
	ctx->wake_gen++;
	if (w->nqueued)
		rcx__feat_work(ctx, RCX__FEAT_WIN, true);
	rcx__log(RCX__LOG_INFO, "win",
		 "window %u: NIC endpoint to rank %d made again", w->id,
		 l->peer);
}

/*
 * l's remake ran past its bound: its peer is suspect since the break,
 * which fails it on the next poll (fail.c; the failure ends the remake,
 * rcx__win_nep_failed). Not failed here: the wins lock is held, which
 * the failure's member_failed takes. Again at each step until then: the
 * peer's group connection, made again in between, may end the
 * suspicion once more.
 */
static void remake_overdue(struct rcx_win *w, struct rcx__win_lep *l)
{
	if (rcx__group_suspect_since(w->g, l->peer, l->broke_us))
		rcx__log(RCX__LOG_WARN, "win",
			 "window %u: NIC endpoint to rank %d not made again "
			 "within RCX_FT_TIMEOUT_MS=%lu: the rank fails",
			 w->id, l->peer, w->ctx->cfg.ft_timeout_ms);
}

void rcx__win_nep_step(struct rcx_win *w, long long now)
{
	long long bound = (long long)w->ctx->cfg.ft_timeout_ms * 1000;
	struct rcx__win_lep *l;
	int i;

	for (i = 0; w->nep && i < w->size; i++) {
		l = &w->nep[i];
		if (l->state != RCX__CONN_RECONN)
			continue;
		if (now - l->broke_us >= bound) {
			remake_overdue(w, l);
			continue;
		}
		if (l->next_failed)
			attempt_drop(w->ctx, l);
		if (!l->next_ep && now >= l->next_us)
			attempt(w, l);
		if (l->next_ep && l->next_up && !l->wr)
			remade(w, l);
	}
}

int rcx__win_nep_sleep_limit(int timeout_ms)
{
	if (!atomic_load_explicit(&rcx__win_nep_remaking, memory_order_relaxed))
		return timeout_ms;
	return timeout_ms < 0 || timeout_ms > NEP_SLEEP_MS ? NEP_SLEEP_MS
							   : timeout_ms;
}
