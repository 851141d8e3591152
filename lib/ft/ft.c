/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fault tolerance beyond what the core detects by itself (lib/core/fail.c):
 * the heartbeat that finds a silent dead peer, and the fault-tolerant
 * agreement that window creation and rcx_win_validate use (lib/ft/ft.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"
#include "lib/ft/ft.h"

static void hb_done(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		    const struct rcx_cqe *cqe)
{
	struct rcx__conn *c =
		(struct rcx__conn *)((char *)w -
				     offsetof(struct rcx__conn, hb));

	c->hb_busy = 0;
	if (cqe->status)
		rcx__conn_wc_error(c, cqe->status);
}

/*
 * RC finds a dead peer only when it sends to it. With RCX_HEARTBEAT_MS
 * every idle connection gets a zero-length RDMA WRITE per period (no key
 * is checked for zero bytes, IBA C9-88; nothing changes at the peer, its
 * CPU takes no part): a peer that is gone makes it fail after the QP's
 * retries, so detection takes at most the period plus that.
 */
static void heartbeat(struct rcx_ctx *ctx, long long now)
{
	struct rcx_group *g;
	struct rcx__conn *c;
	struct rcx_wr wr, *bad;
	int i;

	if (!ctx->cfg.heartbeat_ms || now < ctx->hb_next_us)
		return;
	ctx->hb_next_us = now + (long long)ctx->cfg.heartbeat_ms * 1000;
	for (g = ctx->groups; g; g = g->next) {
		for (i = 0; i < g->size; i++) {
			c = g->conns[i];
			if (!c || c->state != RCX__CONN_UP || c->hb_busy)
				continue;
			memset(&wr, 0, sizeof(wr));
			c->hb.cb = hb_done;
			wr.wr_id = (uintptr_t)&c->hb;
			wr.op = RCX_OP_WRITE;
			wr.flags = RCX_WR_SIGNALED;
			if (!ctx->ops->post_send(c->ep, &wr, &bad))
				c->hb_busy = 1;
		}
	}
}

static void ft_cm_poll(struct rcx_ctx *ctx, long long now)
{
	heartbeat(ctx, now);
}

/* the liveness probes are sent from progress: wake for the next */
static int ft_sleep_limit(struct rcx_ctx *ctx, int timeout_ms)
{
	long long left;
	int ms;

	/* a suspect's time runs out while we sleep (fail.c) */
	if (ctx->nsuspect && (timeout_ms < 0 || timeout_ms > 100))
		timeout_ms = 100;
	if (!ctx->cfg.heartbeat_ms)
		return timeout_ms;
	left = ctx->hb_next_us - rcx__now_us();
	ms = left > 0 ? (int)(left / 1000) + 1 : 0;
	return timeout_ms < 0 || timeout_ms > ms ? ms : timeout_ms;
}

const struct rcx__feat_ops rcx__ft_feat = {
	.name = "ft",
	.cm_poll = ft_cm_poll,
	.sleep_limit = ft_sleep_limit,
};

/* ---- agreement */

void (*rcx__ft_hook)(struct rcx_group *g, int where);

enum { AG_PROPOSE = 0, AG_DECIDE = 1 };

/* Tags on RCX__CID_FT: agreement number, round (its coordinator), kind. */
static int ag_tag(uint32_t seq, int coord, int kind)
{
	return (int)(((seq & 0x3fffu) << 16) | ((uint32_t)coord << 1) |
		     (uint32_t)kind);
}

/*
 * Wait for n requests, each of which may end in error (a peer that died:
 * its receives and sends complete with RCX_ERR_PROC_FAILED; one cut off
 * by the transport: RCX_ERR_TRANSPORT); err[i] gets
 * each one's status, RCX_ERR_PROTO for a message that was not len bytes.
 * The requests are released.
 */
static void ag_wait(struct rcx_ctx *ctx, int n, struct rcx_req **r, int *err,
		    size_t len)
{
	int i;

	for (;;) {
		for (i = 0; i < n && (!r[i] || r[i]->state != RCX__REQ_ACTIVE);
		     i++)
			;
		if (i == n)
			break;
		if (!rcx__progress(ctx))
			rcx__wait_events(ctx, 10);
	}
	for (i = 0; i < n; i++) {
		err[i] = r[i] ? r[i]->status.error : RCX_ERR_PROC_FAILED;
		if (!err[i] && r[i]->status.count != len)
			err[i] = RCX_ERR_PROTO;
		if (r[i])
			rcx__req_put(r[i]);
		r[i] = NULL;
	}
}

/*
 * An estimate from the wire: the ok flag, then a failed flag per rank,
 * each 0 or 1. Anything else comes from a broken peer and is dropped like
 * a message that never came.
 */
static bool ag_valid(const uint8_t *in, int size)
{
	int k;

	for (k = 0; k <= size; k++)
		if (in[k] > 1)
			return false;
	return true;
}

/*
 * A rank the agreement does not wait for: failed, or gone on purpose (its
 * BYE closed the connection, so nothing more comes from it).
 */
static bool ag_gone(const struct rcx_group *g, int i)
{
	const struct rcx__conn *c = g->conns[i];

	return g->failed[i] || (c && c->state == RCX__CONN_CLOSED);
}

/*
 * A request to or from rank i ended with a transport failure: the rank is
 * suspect, and failed by RCX_FT_TIMEOUT_MS unless a sign of its death
 * comes sooner (fail.c). The decision must name it like every other
 * failure the leader knows, so wait until it is failed.
 */
static void ag_settle(struct rcx_group *g, int i, int err)
{
	while (rcx__err_transport(err) && !g->failed[i])
		if (!rcx__progress(g->ctx))
			rcx__wait_events(g->ctx, 100);
}

/* The peer cannot take part: dead, or cut off (then ag_settle). */
static bool ag_lost(int err)
{
	return err == RCX_ERR_PROC_FAILED || rcx__err_transport(err);
}

static void ag_merge(uint8_t *est, const uint8_t *in, int size)
{
	int k;

	est[0] &= in[0];
	for (k = 0; k < size; k++)
		est[1 + k] |= in[1 + k];
}

/* Add the failures known here to an estimate. */
static void ag_known(const struct rcx_group *g, uint8_t *est)
{
	int k;

	for (k = 0; k < g->size; k++)
		est[1 + k] |= g->failed[k];
}

/* Coordinator of a round: gather every live rank's estimate, merge, tell. */
static int ag_lead(struct rcx_group *g, uint32_t seq, uint8_t *est, uint8_t *in,
		   struct rcx_req **r, int *err)
{
	size_t len = 1 + (size_t)g->size;
	int i, ret;

	for (i = 0; i < g->size; i++) {
		r[i] = NULL;
		if (i == g->rank || ag_gone(g, i))
			continue;
		ret = rcx__irecv(g, in + i * len, len, i,
				 ag_tag(seq, g->rank, AG_PROPOSE), RCX__CID_FT,
				 &r[i]);
		if (ret && !ag_lost(ret))
			return ret;
	}
	ag_wait(g->ctx, g->size, r, err, len);
	for (i = 0; i < g->size; i++) {
		if (i == g->rank)
			continue;
		ag_settle(g, i, err[i]);
		if (!err[i] && ag_valid(in + i * len, g->size))
			ag_merge(est, in + i * len, g->size);
	}
	/* what failed until now is decided failed, a member whose estimate
	 * did not come because it died included */
	ag_known(g, est);
	if (rcx__ft_hook)
		rcx__ft_hook(g, RCX__FT_HOOK_GATHERED);
	for (i = 0; i < g->size; i++) {
		r[i] = NULL;
		if (i == g->rank || ag_gone(g, i))
			continue;
		ret = rcx__isend(g, est, len, i,
				 ag_tag(seq, g->rank, AG_DECIDE), RCX__CID_FT,
				 &r[i]);
		if (ret && !ag_lost(ret))
			return ret;
		if (rcx__ft_hook) {
			/* let it leave: a test may die half-way through */
			ag_wait(g->ctx, 1, &r[i], &err[i], len);
			rcx__ft_hook(g, RCX__FT_HOOK_TOLD_ONE);
		}
	}
	ag_wait(g->ctx, g->size, r, err, len);
	return 0;
}

/* Another rank's round: propose ours, adopt what it decides. */
static int ag_follow(struct rcx_group *g, uint32_t seq, int coord, uint8_t *est,
		     uint8_t *tmp)
{
	size_t len = 1 + (size_t)g->size;
	struct rcx_req *r[2] = { NULL, NULL };
	int err[2], ret;

	ret = rcx__irecv(g, tmp, len, coord, ag_tag(seq, coord, AG_DECIDE),
			 RCX__CID_FT, &r[0]);
	if (ret) {
		ag_settle(g, coord, ret);
		return ag_lost(ret) ? 0 : ret;
	}
	ag_known(g, est);
	ret = rcx__isend(g, est, len, coord, ag_tag(seq, coord, AG_PROPOSE),
			 RCX__CID_FT, &r[1]);
	if (ret && !ag_lost(ret)) {
		ag_wait(g->ctx, 1, r, err, len);
		return ret;
	}
	if (rcx__ft_hook) {
		/* a test may die once its estimate has left */
		ag_wait(g->ctx, 1, &r[1], &err[1], len);
		rcx__ft_hook(g, RCX__FT_HOOK_PROPOSED);
	}
	ag_wait(g->ctx, 2, r, err, len);
	ag_settle(g, coord, err[0]);
	if (!err[0] && ag_valid(tmp, g->size))
		memcpy(est, tmp, len);
	return 0;
}

/*
 * Consensus with a failure detector that eventually reports every dead
 * rank (rcx__group_failed): round c is led by rank c. The first round
 * whose leader lives makes every live rank hold the same estimate, and
 * later leaders only gather and re-send that same value (merging equal
 * estimates changes nothing), so after the last round all agree even if
 * leaders died half-way through telling.
 */
int rcx__ft_agree(struct rcx_group *g, bool *ok, uint8_t *failed)
{
	size_t len = 1 + (size_t)g->size;
	uint8_t *est, *in;
	struct rcx_req **r;
	uint32_t seq = g->agree_seq++;
	int *err, c, k, ret = 0;

	if (g->size > 32768)
		return -EOPNOTSUPP;
	est = malloc(len);
	in = malloc(len * (size_t)g->size);
	r = calloc(g->size, sizeof(*r));
	err = calloc(g->size, sizeof(*err));
	if (!est || !in || !r || !err) {
		ret = -ENOMEM;
		goto out;
	}
	est[0] = *ok;
	for (k = 0; k < g->size; k++)
		est[1 + k] = failed[k] | g->failed[k];
	if (rcx__ft_hook)
		rcx__ft_hook(g, RCX__FT_HOOK_START);
	for (c = 0; c < g->size && !ret; c++) {
		if (ag_gone(g, c))
			continue;
		if (c == g->rank)
			ret = ag_lead(g, seq, est, in, r, err);
		else
			ret = ag_follow(g, seq, c, est, in);
	}
	if (!ret) {
		*ok = est[0];
		memcpy(failed, est + 1, g->size);
		/* collectives that ended early left the ranks' counters
		 * apart: everyone who agreed starts again from here */
		g->coll_seq = g->agree_seq << 12;
	}
out:
	free(est);
	free(in);
	free(r);
	free(err);
	return ret;
}
