/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA across a reconnection. When the transport gives up on a world
 * connection whose peer may be alive, the core remakes it (scheme at the
 * top of lib/core/conn.c); the window keeps its operations going:
 *
 *  - A put or a get is idempotent within an epoch: writing the same
 *    bytes again, or reading them again into the origin buffer, changes
 *    nothing the epoch's rules let anyone see. So the WRs of an op that
 *    are all RDMA WRITE or READ are kept (a copy made as they are posted;
 *    a put's small data is in the slot's bounce memory, not in the
 *    caller's buffer). When their completion fails because the
 *    connection broke (the transport's error, or the flush of the
 *    endpoint being drained), the op is not completed but queued.
 *  - An op issued while the connection is remade never goes out on the
 *    broken endpoint: it is queued too, behind those already queued
 *    (later ops to the target never overtake queued ones).
 *  - Once the new endpoint is up, the queue is posted in post order (pno)
 *    with each WR's own flags. A WR that carried RCX_WR_FENCE carries it
 *    again, and the READs and atomics it was fenced behind either
 *    completed (a fence lets nothing start before them) or are ahead of
 *    it in the queue: rcx_win_order's decisions hold on the new endpoint.
 *    Queued ops stay counted in tgt.inflight, so flush, unlock, fence and
 *    complete wait for them as for any other.
 *  - An atomic (fetch_op, compare-swap, a NIC accumulate, a lock word's)
 *    whose completion failed may or may not have run at the target: it is
 *    never sent again and completes with RCX_ERR_TRANSPORT. One issued
 *    while the connection is remade never went out: it is queued and runs
 *    once. Software accumulates go as messages, which the connection
 *    delivers exactly once (hdr.seq).
 *  - The connection fails instead (RCX_FT_TIMEOUT_MS, the peer's death):
 *    the queue ends with its error; the window becomes invalid: with that.
 *
 * Registrations do not change: the new endpoint is made on the same
 * device (protection domain), so the keys exchanged at creation hold.
 *
 * The same holds for the window's own NIC endpoint to a peer that the
 * group reaches without the NIC (win_nep.c): the window remakes it, and
 * its ops queue here as for the group's connection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/win/win_int.h"

/* Only RDMA WRITEs and READs may run twice. */
static bool idempotent(const struct rcx_wr *wr, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (wr[i].op != RCX_OP_WRITE && wr[i].op != RCX_OP_READ)
			return false;
	return true;
}

int rcx__win_replay_save_list(struct rcx__win_op *op, const struct rcx_wr *wr,
			      int n, bool always)
{
	struct rcx_wr *c = &op->wr1;

	op->redo = idempotent(wr, n);
	if (!always && !op->redo)
		return 0;
	if (n > 1) {
		c = malloc((size_t)n * sizeof(*c));
		if (!c)
			return -ENOMEM;
	}
	memcpy(c, wr, (size_t)n * sizeof(*c));
	op->saved = c;
	op->nsaved = n;
	return 0;
}

void rcx__win_replay_forget(struct rcx__win_op *op)
{
	if (op->saved && op->saved != &op->wr1)
		free(op->saved);
	op->saved = NULL;
	op->nsaved = 0;
}

void rcx__win_replay_add(struct rcx_win *w, struct rcx__win_op *op)
{
	struct rcx__win_tgt *t = &w->tgt[op->target];
	struct rcx__win_op **pp = &t->rq;

	/* the broken ones come in post order, new ones after them */
	if (t->rq_tail && t->rq_tail->pno < op->pno)
		pp = &t->rq_tail->rnext;
	while (*pp && (*pp)->pno < op->pno)
		pp = &(*pp)->rnext;
	op->rnext = *pp;
	*pp = op;
	if (!op->rnext)
		t->rq_tail = op;
	op->broken = 0;
	/* not complete: a waiter for the op (nwr 0) keeps waiting */
	op->nwr = (uint32_t)op->nsaved;
	if (!w->nqueued++)
		rcx__feat_work(w->ctx, RCX__FEAT_WIN, true);
}

static struct rcx__win_op *rq_pop(struct rcx_win *w, struct rcx__win_tgt *t)
{
	struct rcx__win_op *op = t->rq;

	t->rq = op->rnext;
	if (!t->rq)
		t->rq_tail = NULL;
	op->rnext = NULL;
	w->nqueued--;
	return op;
}

/* A queued op ends without being posted (again). */
static void rq_end(struct rcx_win *w, struct rcx__win_op *op, int err)
{
	if (op->internal) {
		/* a lock word's or a table's WR: its poster waits for nwr 0 */
		if (!op->error)
			op->error = err;
		op->nwr = 0;
		return;
	}
	rcx__win_op_done(w, op, op->error ? op->error : err);
}

/* Post op's kept WRs on ep. */
static void rq_post(struct rcx_win *w, struct rcx_ep *ep,
		    struct rcx__win_op *op)
{
	struct rcx_wr *bad = NULL, *wr = op->saved;
	int i, n = op->nsaved, posted, ret;

	for (i = 0; i < n; i++)
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	ret = w->ctx->ops->post_send(ep, wr, &bad);
	posted = ret ? (int)(bad - wr) : n;
	if (ret && (posted <= 0 || posted > n)) {
		rq_end(w, op, ret);
		return;
	}
	if (ret)
		op->error = ret; /* a prefix went: it completes with it */
	*op->sq += (uint32_t)posted;
	op->nwr = (uint32_t)posted;
	rcx__stats_wrs(&w->ctx->st, wr, posted);
	w->stats.replays++;
}

/*
 * The path of target's RMA: the window's NIC endpoint to it (win_nep.c)
 * or the group's connection. Its state, its endpoint, and the error of
 * a path that failed or closed.
 */
static int path(struct rcx_win *w, int target, struct rcx_ep **ep, int *err)
{
	struct rcx__win_lep *l;
	struct rcx__conn *c;

	if (w->nep && w->nep[target].ep) {
		l = &w->nep[target];
		*ep = l->ep;
		*err = l->error ? l->error : RCX_ERR_PROC_FAILED;
		return l->state;
	}
	c = rcx__win_conn(w, target);
	*ep = c->ep;
	*err = c->state == RCX__CONN_CLOSED ? -ECONNRESET
	       : c->error		    ? c->error
					    : RCX_ERR_PROC_FAILED;
	return c->state;
}

int rcx__win_replay_pump(struct rcx_win *w)
{
	struct rcx__win_tgt *t;
	struct rcx_ep *ep;
	int i, st, err, moved = 0;

	for (i = 0; i < w->size && w->nqueued; i++) {
		t = &w->tgt[i];
		if (!t->rq)
			continue;
		st = path(w, i, &ep, &err);
		while (t->rq && st != RCX__CONN_RECONN) {
			if (st == RCX__CONN_UP &&
			    *t->rq->sq + (uint32_t)t->rq->nsaved >
				    RCX__WIN_SQ_OPS)
				break; /* again as the queue moves */
			if (st == RCX__CONN_UP)
				rq_post(w, ep, rq_pop(w, t));
			else
				rq_end(w, rq_pop(w, t), err);
			moved++;
		}
	}
	return moved;
}

void rcx__win_replay_fail(struct rcx_win *w, int err)
{
	int i;

	for (i = 0; i < w->size && w->nqueued; i++)
		while (w->tgt[i].rq)
			rq_end(w, rq_pop(w, &w->tgt[i]), err);
}
