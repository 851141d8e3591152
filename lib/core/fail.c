/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Process failures as the core sees them: the locally known failed set of
 * each group, fed by the connections' own detectors (error completions
 * and rdma_cm events in conn.c), the launcher's reports and the lazy
 * connections whose answer never came, polled here on the connection
 * cadence. The features learn of a failure through their member_failed
 * hook (lib/win invalidates windows, lib/chan fails channels); lib/ft
 * adds the heartbeat detector and the agreement.
 *
 * Detection bound: a kill -9 closes the dead process's rdma_cm ids, whose
 * DREQ reaches every connected peer at once (DISCONNECTED); the launcher
 * (rcx-run) reaps the child and tells every rank; a peer that vanished
 * without either is found by the next send to it after the QP's
 * retries (RCX_QP_TIMEOUT, RCX_QP_RETRY; docs/config.md gives the bound).
 *
 * Retries that run out are no sign of death by themselves: ACKs held up
 * by a loaded host or a lossy link, or a stopped process, look the same.
 * Such a peer is suspect (rcx__group_suspect): what was under way on the
 * broken connection ends with RCX_ERR_TRANSPORT, and the peer becomes
 * failed when a sign of death comes (a DISCONNECTED, the launcher's
 * notice) or RCX_FT_TIMEOUT_MS after the transport gave up.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lib/boot/boot.h"
#include "lib/core/core.h"

/* Tell every member of g (a root group) connected here that rank failed. */
static void notice_send(struct rcx_group *g, int rank)
{
	struct rcx__conn *c;
	int i;

	for (i = 0; i < g->size; i++) {
		c = g->conns[i];
		/* one that fails to take it is failing itself */
		if (c && i != rank && c->state == RCX__CONN_UP)
			(void)rcx__am_send(c, RCX__CID_FAIL, rank, NULL, 0);
	}
}

void rcx__fail_tell(struct rcx__conn *c)
{
	struct rcx_group *g = c->g;
	int i;

	if (!g || g->root || !g->nfailed)
		return;
	for (i = 0; i < g->size; i++)
		if (g->failed[i] && i != c->peer)
			(void)rcx__am_send(c, RCX__CID_FAIL, i, NULL, 0);
}

void rcx__fail_am(struct rcx__conn *c, const struct rcx__hdr *h,
		  const uint8_t *payload)
{
	struct rcx_group *g = c->g;

	(void)payload;
	if (!g || g->root || h->tag < 0 || h->tag >= g->size) {
		rcx__log(RCX__LOG_WARN, "ft",
			 "failure notice from rank %d names rank %d: dropped",
			 c->peer, (int)h->tag);
		return;
	}
	if (h->tag == g->rank || g->failed[h->tag])
		return; /* we live on; or known already */
	RCX__LOG(RCX__LOG_DEBUG, "ft", "rank %d says rank %d failed", c->peer,
		 (int)h->tag);
	rcx__group_failed(g, h->tag, RCX_ERR_PROC_FAILED);
}

void rcx__group_failed(struct rcx_group *g, int rank, int err)
{
	struct rcx__conn *c;

	if (rank < 0 || rank >= g->size || rank == g->rank || g->failed[rank])
		return;
	RCX__LOG(RCX__LOG_DEBUG, "ft", "rank %d of a group of %d failed (%s)",
		 rank, g->size, rcx_strerror(err));
	g->failed[rank] = 1;
	g->ctx->wake_gen++;
	if (!g->nfailed++)
		g->failed_at_us = rcx__now_us();
	c = g->conns[rank];
	if (c)
		rcx__conn_unsuspect(c);
	/* cut off by the transport before: now the peer failed */
	if (c && c->state == RCX__CONN_FAILED && rcx__err_transport(c->error))
		c->error = RCX_ERR_PROC_FAILED;
	if (c)
		rcx__conn_fail(c, err ? err : RCX_ERR_PROC_FAILED);
	/* the members this one cannot tell learn it from those it can */
	if (!g->root)
		notice_send(g, rank);
	/* a collective may wait for a rank that waits for the dead one, or
	 * for the FIN of a live one that left the collective for it */
	rcx__p2p_cancel_cid(g, RCX__CID_COLL, RCX_ERR_PROC_FAILED);
	rcx__conn_cancel_sends(g, RCX__CID_COLL, RCX_ERR_PROC_FAILED);
	rcx__p2p_any_failed(g, RCX_ERR_PROC_FAILED);
	/* windows become invalid, channels to it fail (lib/win, lib/chan) */
	rcx__feats_member_failed(g, rank, RCX_ERR_PROC_FAILED);
	/* and in every sub-group of g it is a member of (group.c), and in
	 * the group whose connections g uses (a window's own endpoint saw
	 * it: the root tells the others) */
	rcx__group_subs_each(g, rank, rcx__group_failed, err);
	if (g->root)
		rcx__group_failed(g->root, g->root_rank[rank], err);
}

/*
 * g's rank is failed without a sign of its death (the transport gave up
 * on it, and RCX_FT_TIMEOUT_MS passed or is 0): tell the launcher, which
 * fails it for every rank of the job and kills it (rcx-run), so that it
 * cannot go on as a zombie the others no longer hear. Only for members of
 * the launcher's job (the world and its sub-groups).
 */
static void declare_failed(struct rcx_group *g, int rank)
{
	struct rcx_ctx *ctx = g->ctx;
	struct rcx_group *root = rcx__group_root(g);
	int rr = g->root ? g->root_rank[rank] : rank;
	int ret;

	/* in the group that owns the connection, and so in all of its
	 * sub-groups (a sub-group's conns[] are its root's) */
	rcx__group_failed(root, rr, RCX_ERR_PROC_FAILED);
	if (!ctx->world || root != ctx->world || !ctx->boot ||
	    !ctx->boot->ops->declare_failed)
		return;
	ret = ctx->boot->ops->declare_failed(ctx->boot, rr);
	rcx__log(ret ? RCX__LOG_WARN : RCX__LOG_INFO, "ft",
		 "rank %d of the job declared failed to the launcher (%s): %s",
		 rr, ctx->boot->ops->name,
		 ret ? rcx_strerror(ret) : "it fails it for every rank");
}

void rcx__group_suspect(struct rcx_group *g, int rank, int err)
{
	struct rcx__conn *c;

	if (rank < 0 || rank >= g->size || rank == g->rank || g->failed[rank])
		return;
	c = g->conns[rank];
	if (!c || !g->ctx->cfg.ft_timeout_ms) {
		/* nothing to hold the suspicion, or told not to wait */
		declare_failed(g, rank);
		return;
	}
	if (c->suspect_us)
		return;
	rcx__log(RCX__LOG_WARN, "ft",
		 "rank %d of a group of %d: transport failure (%s); failed if "
		 "no sign of life within RCX_FT_TIMEOUT_MS=%lu",
		 rank, g->size, rcx_strerror(err), g->ctx->cfg.ft_timeout_ms);
	c->suspect_us = rcx__now_us();
	g->ctx->nsuspect++;
	g->ctx->wake_gen++;
	/* a launcher that saw it die says so now, not a poll later */
	g->ctx->notice_next_us = 0;
}

bool rcx__group_suspect_since(struct rcx_group *g, int rank, long long since_us)
{
	struct rcx__conn *c =
		rank >= 0 && rank < g->size ? g->conns[rank] : NULL;

	if (!c || rank == g->rank || g->failed[rank] ||
	    (c->suspect_us && c->suspect_us <= since_us))
		return false;
	if (!c->suspect_us)
		g->ctx->nsuspect++;
	c->suspect_us = since_us;
	g->ctx->wake_gen++;
	return true;
}

int rcx__group_wc_error(struct rcx_group *g, int rank, int status)
{
	const struct rcx__conn *c = g->conns[rank];

	if (g->failed[rank])
		return RCX_ERR_PROC_FAILED;
	/* the flush of what followed a transport failure */
	if (status == RCX_ERR_FLUSHED && c && c->suspect_us)
		return RCX_ERR_TRANSPORT;
	if (rcx__err_transport(status)) {
		rcx__group_suspect(g, rank, status);
		return status;
	}
	rcx__group_failed(g, rank, RCX_ERR_PROC_FAILED);
	return status == RCX_ERR_FLUSHED ? RCX_ERR_PROC_FAILED : status;
}

void rcx__conn_unsuspect(struct rcx__conn *c)
{
	if (!c->suspect_us)
		return;
	c->suspect_us = 0;
	c->ctx->nsuspect--;
}

/* Suspects whose time is up: failed, as a death would make them. */
static void suspects_due(struct rcx_ctx *ctx, long long now)
{
	long long limit = (long long)ctx->cfg.ft_timeout_ms * 1000;
	struct rcx_group *g;
	struct rcx__conn *c;
	int i;

	for (g = ctx->groups; g && ctx->nsuspect; g = g->next)
		for (i = 0; i < g->size; i++) {
			c = g->conns[i];
			if (!c || !c->suspect_us || now - c->suspect_us < limit)
				continue;
			rcx__log(RCX__LOG_WARN, "ft",
				 "rank %d of a group of %d: unreachable for "
				 "RCX_FT_TIMEOUT_MS=%lu: failed",
				 i, g->size, ctx->cfg.ft_timeout_ms);
			/* where a reconnection stood, for the record */
			if (c->state == RCX__CONN_RECONN)
				rcx__log(RCX__LOG_WARN, "conn",
					 "peer %d: reconnection at step %d "
					 "(rx %d, tx %d, win %u, heartbeat %d, "
					 "mark %d, reads %d, ask %s, request "
					 "%s)",
					 i, c->re_phase, c->rx_posted,
					 c->tx_inflight, c->win_wr, c->hb_busy,
					 c->mark_busy, c->rd_inflight,
					 c->ask_ep ? "out" : "none",
					 c->re_req ? "held" : "none");
			declare_failed(g, i);
		}
}

/*
 * Launcher notices are polled at most this often from progress (a read
 * of the launcher's socket: not something to pay every millisecond of a
 * spin; a sleeping wait has the socket in its epoll set).
 */
#define NOTICE_POLL_US 100000

/*
 * A lower rank asked a higher one to connect (a lazy pair); the ask was
 * answered, but the connection never came: the peer died in between, or
 * was dead and the answer was the system's refusal. It fails. Until
 * then the ask is asked again now and then: a peer that was dying when
 * it was refused is dead by then, and nothing listens where it did.
 * So too a peer that disconnected a connection that was up, or refused
 * its reconnection, and did not remake it in time (conn.c, cm_ended;
 * conn_reconn.c).
 */
static void answers_due(struct rcx_ctx *ctx, long long now)
{
	struct rcx_group *g;
	struct rcx__conn *c;
	int i;

	for (g = ctx->groups; g && ctx->nanswer; g = g->next)
		for (i = 0; i < g->size; i++) {
			c = g->conns[i];
			if (!c || !c->answer_by_us)
				continue;
			if (now <= c->answer_by_us) {
				if (c->reask_us && now >= c->reask_us)
					rcx__conn_reask(c);
				continue;
			}
			if (c->gone) /* and no launcher said it died */
				rcx__conn_left(c);
			else
				rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
		}
}

/*
 * Receives from a peer of a lazy world whose connection was never made
 * start it: a dead peer's fails, a live one's brings the failures it
 * knows (rcx__fail_tell). Looked at this often.
 */
#define PROBE_US 500000

static void probe_group(struct rcx_group *g)
{
	struct rcx_group *root = rcx__group_root(g);
	struct rcx__conn *c;
	struct rcx_req *r;
	int cid, peer;

	for (cid = 0; cid < RCX__CID_MAX; cid++)
		for (r = g->posted[cid]; r; r = r->next) {
			if (r->peer < 0 || r->peer >= g->size ||
			    r->peer == g->rank)
				continue;
			peer = g->root ? g->root_rank[r->peer] : r->peer;
			c = root->conns[peer];
			if (c && c->state == RCX__CONN_IDLE &&
			    rcx__conn_start(c))
				rcx__conn_fail(c, -ECONNABORTED);
		}
}

static void probes_due(struct rcx_ctx *ctx, long long now)
{
	struct rcx_group *g;

	if (now < ctx->probe_next_us)
		return;
	ctx->probe_next_us = now + PROBE_US;
	for (g = ctx->groups; g; g = g->next)
		probe_group(g);
}

void rcx__fail_poll(struct rcx_ctx *ctx, long long now)
{
	int rank;

	/* the launcher's notices first: a gone peer it reports failed
	 * is a failure, not a departure (answers_due) */
	if (ctx->boot && ctx->boot->ops->poll_failed &&
	    now >= ctx->notice_next_us) {
		ctx->notice_next_us = now + NOTICE_POLL_US;
		while (ctx->boot->ops->poll_failed(ctx->boot, &rank) == 1)
			if (ctx->world)
				rcx__group_failed(ctx->world, rank,
						  RCX_ERR_PROC_FAILED);
	}
	if (ctx->nanswer)
		answers_due(ctx, now);
	if (ctx->nsuspect)
		suspects_due(ctx, now);
	if (ctx->nreconn)
		rcx__conn_reconn_poll(ctx);
	if (ctx->lazy)
		probes_due(ctx, now);
}

int rcx__fail_sleep_limit(const struct rcx_ctx *ctx, int timeout_ms)
{
	int ms = PROBE_US / 1000;

	return ctx->lazy && (timeout_ms < 0 || timeout_ms > ms) ? ms
								: timeout_ms;
}

bool rcx__deaths_told(const struct rcx_ctx *ctx)
{
	const struct rcx__boot *b = ctx->boot;

	/* env: its root's server sees a rank's socket close, and takes it
	 * for a departure unless a bootstrap round waited for the rank */
	return b && b->ops->poll_failed && strcmp(b->ops->name, "env") != 0;
}

RCX_API int rcx_group_get_failed(struct rcx_group *g, int *ranks, int max,
				 int *n)
{
	if (!rcx__group_live(g))
		return -EINVAL;
	return rcx__group_get_failed(g, ranks, max, n);
}

/* Also for a group the user freed while a window holds it. */
int rcx__group_get_failed(struct rcx_group *g, int *ranks, int max, int *n)
{
	int i, k = 0;

	if (!rcx__group_exists(g) || !n || max < 0 || (max && !ranks))
		return -EINVAL;
	rcx__lock(g->ctx);
	rcx__progress(g->ctx);
	rcx__cm_progress(g->ctx);
	for (i = 0; i < g->size; i++) {
		if (!g->failed[i])
			continue;
		if (k < max)
			ranks[k] = i;
		k++;
	}
	rcx__unlock(g->ctx);
	*n = k;
	return 0;
}
