/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels: free and rebind, blocking or not. A free is loosely
 * collective between the two ends: the last channel of a set freed, the
 * set RDMA-writes the peer's free word and waits for the peer's own
 * (or CH_FREE_TIMEOUT_US); a rebind frees the old binding, then binds
 * anew under the same handles (chan_bind.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/chan/chan_int.h"

#define CH_FREE_TIMEOUT_US 30000000LL

/* ---- free */

static int check_free(const char *fn, struct rcx_req **chans, int n)
{
	int i;

	if (n < 0 || (n && !chans))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!chans[i] || !is_chan(chans[i]))
			return -EINVAL;
		if (chans[i]->state == RCX__REQ_ACTIVE)
			return -EBUSY;
	}
	return rcx__reqs_unique(fn, n, chans);
}

/* Mark channels freed; sets with no live channel tell their peer. */
static void free_mark(struct rcx_req **chans, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct chan *c = to_chan(chans[i]);
		struct chset *s = c->set;

		if (c->freed)
			continue;
		c->freed = true;
		c->req = NULL; /* the handle may be reused (rebind) */
		if (--s->live)
			continue;
		/* its companion writes its own credits from now on */
		rcx__chan_unpair(s);
		/* the starts made get their late credits, as they would
		 * have before a free; a refused post fails the set, so the
		 * state is read again below */
		if (s->state == SET_UP)
			rcx__chan_credits_of(s, true);
		if (s->state == SET_UP) {
			s->state = SET_FREEING;
			if (s->ctx->ops->pwr_post(s->ep, &s->free_wr, 1))
				s->ctl->peer_free = 1;
			else
				rcx__chan_free_went(s);
		}
	}
}

static bool set_freeable(struct chset *s)
{
	/* our free write must have landed before the QP goes; a failed
	 * set's WRs are flushed and reaped by set_destroy */
	return s->live == 0 && s->state != SET_REMAKE &&
	       (s->state == SET_FAILED ||
		(s->inflight == 0 &&
		 (s->state != SET_FREEING || s->ctl->peer_free)));
}

/*
 * Every set of chans[0..n-1] left without a live channel may go: the
 * peers freed their ends too (a set keeping other channels of its bundle
 * stays, and is not waited for).
 */
static bool free_ready(struct rcx_req **chans, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct chset *s = to_chan(chans[i])->set;

		if (s->live == 0 && !set_freeable(s))
			return false;
	}
	return true;
}

/*
 * Release the sets that have no live channel left and detach the handles
 * from them; put the handles back to the pool unless keep (rebind: the
 * same handles are bound anew).
 */
static void free_release(struct rcx_req **chans, int n, bool keep)
{
	int i, j;

	for (i = 0; i < n; i++) {
		struct chset *s = to_chan(chans[i])->set;
		bool last = true;

		for (j = i + 1; j < n; j++)
			if (to_chan(chans[j])->set == s)
				last = false;
		chans[i]->obj = NULL;
		if (!keep)
			rcx__req_put(chans[i]);
		if (last && s->live == 0)
			rcx__chan_set_destroy(s);
	}
}

/* Wait for the peers, then release sets and handles. Lock held. */
static int free_finish(struct rcx_ctx *ctx, struct rcx_req **chans, int n,
		       bool keep)
{
	long long end = rcx__now_us() + CH_FREE_TIMEOUT_US;
	int ret = 0;

	while (!free_ready(chans, n)) {
		if (rcx__now_us() > end) {
			ret = -ETIMEDOUT;
			break;
		}
		if (!rcx__progress(ctx))
			rcx__wait_events(ctx, 1);
	}
	free_release(chans, n, keep);
	return ret;
}

/*
 * A nonblocking free or rebind, carried on by progress: first the old
 * binding's free (the peer's end freed too, or CH_FREE_TIMEOUT_US), then
 * for a rebind the new bind, whose ephemeral request completes ours.
 */
struct chop {
	struct chop *next;
	struct rcx_req *eph;  /* the caller's: completes when done */
	struct rcx_req *bind; /* rebind: the new bind's ephemeral request */
	bool rebind;
	long long end;
	struct bind_args a;
	int n;
	struct rcx_req *chans[]; /* n */
};

static int chop_new(struct rcx_ctx *ctx, struct rcx_req **chans, int n,
		    const struct bind_args *a, struct rcx_req **eph)
{
	struct chop *o = calloc(1, sizeof(*o) + (size_t)n * sizeof(*chans));

	if (!o)
		return -ENOMEM;
	o->eph = rcx__req_get(ctx, RCX__REQ_INTERNAL, NULL);
	if (!o->eph) {
		free(o);
		return -ENOMEM;
	}
	o->eph->state = RCX__REQ_ACTIVE;
	o->rebind = a != NULL;
	if (a) {
		o->a = *a;
		/* the old sets may be the last to hold the group */
		rcx__group_hold(a->g);
	}
	o->n = n;
	memcpy(o->chans, chans, (size_t)n * sizeof(*chans));
	o->end = rcx__now_us() + CH_FREE_TIMEOUT_US;
	o->next = ctx->chan_ops;
	ctx->chan_ops = o;
	rcx__chan_work(ctx);
	*eph = o->eph;
	return 0;
}

static void chop_free(struct chop *o)
{
	if (o->rebind)
		rcx__group_release(o->a.g);
	free(o);
}

/* One step of o; true when it is done (its request completed). */
static bool chop_step(struct rcx_ctx *ctx, struct chop *o)
{
	struct rcx_req *tmp[CH_MAX_BUNDLE];
	int ret;

	if (o->bind) {
		if (o->bind->state != RCX__REQ_DONE)
			return false;
		ret = o->bind->status.error;
		rcx__req_put(o->bind);
		rcx__req_complete(o->eph, ret);
		return true;
	}
	if (!free_ready(o->chans, o->n) && rcx__now_us() <= o->end)
		return false;
	ret = free_ready(o->chans, o->n) ? 0 : -ETIMEDOUT;
	free_release(o->chans, o->n, o->rebind);
	if (!o->rebind || ret) {
		rcx__req_complete(o->eph, ret);
		return true;
	}
	memcpy(tmp, o->chans, (size_t)o->n * sizeof(*tmp));
	ret = rcx__chan_bind_start(ctx, &o->a, o->n, tmp, tmp, &o->bind);
	if (ret) {
		rcx__req_complete(o->eph, ret);
		return true;
	}
	return chop_step(ctx, o);
}

int rcx__chan_ops_progress(struct rcx_ctx *ctx)
{
	struct chop **pp = (struct chop **)&ctx->chan_ops, *o;
	static __thread bool busy;
	int ended = 0;

	/* a step runs progress (a set's destroy reaps its QP): no nesting */
	if (busy)
		return 0;
	busy = true;
	while ((o = *pp)) {
		if (!chop_step(ctx, o)) {
			pp = &o->next;
			continue;
		}
		/* a step may have added to the list: unlink o where it is */
		for (pp = (struct chop **)&ctx->chan_ops; *pp != o;
		     pp = &(*pp)->next)
			;
		*pp = o->next;
		chop_free(o);
		ended++;
	}
	busy = false;
	rcx__chan_work(ctx);
	return ended;
}

bool rcx__chan_unposted(struct rcx_req *r)
{
	const struct chan *c;

	if (!is_chan(r))
		return false;
	c = to_chan(r);
	return c->deferred || c->held;
}

void rcx__chan_abort(struct rcx_req *r, int err)
{
	struct chset *s;

	if (!is_chan(r))
		return;
	s = to_chan(r)->set;
	rcx__chan_undefer(s);
	rcx__chan_set_fail(s, err);
}

RCX_API int rcx_bind_free(struct rcx_req **chans, int n)
{
	struct rcx_ctx *ctx;
	int i, ret;

	/* other bound objects (collectives) are freed by their kind */
	if (n > 0 && chans && rcx__req_live(chans[0]) && chans[0]->ops &&
	    chans[0]->ops->bind_free)
		return chans[0]->ops->bind_free(chans, n);
	ret = check_free(__func__, chans, n);
	if (ret || !n)
		return ret;
	ctx = chans[0]->ctx;
	rcx__lock(ctx);
	free_mark(chans, n);
	ret = free_finish(ctx, chans, n, false);
	for (i = 0; i < n; i++)
		chans[i] = NULL;
	rcx__unlock(ctx);
	return ret;
}

/*
 * Nonblocking free: the peers are told now; *eph completes once every
 * peer has freed its end too (or after CH_FREE_TIMEOUT_US with
 * -ETIMEDOUT), carried on by progress.
 */
RCX_API int rcx_ibind_free(struct rcx_req **chans, int n, struct rcx_req **eph)
{
	struct rcx_ctx *ctx;
	int i, ret = check_free(__func__, chans, n);

	if (ret || !eph)
		return ret ? ret : -EINVAL;
	if (!n) {
		*eph = NULL;
		return 0;
	}
	ctx = chans[0]->ctx;
	rcx__lock(ctx);
	ret = chop_new(ctx, chans, n, NULL, eph);
	if (!ret) {
		free_mark(chans, n);
		for (i = 0; i < n; i++)
			chans[i] = NULL;
		rcx__chan_ops_progress(ctx);
	}
	rcx__unlock(ctx);
	return ret;
}

/* ---- rebind */

/*
 * Start a rebind: the old binding's free now, the new bind when the old
 * peers have freed their ends (progress, chop_step). Lock not held.
 */
static int mrebind_start(int n, struct rcx_req **chans, void *buf, size_t len,
			 int peer, int tag, int protocol,
			 const struct rcx_info *info, struct rcx_req **eph)
{
	struct bind_args a;
	struct rcx_ctx *ctx;
	struct chan *c0;
	int i, ret;

	ret = check_free("rcx_mrebind", chans, n);
	if (ret)
		return ret;
	if (n < 1 || n > CH_MAX_BUNDLE || (!buf && len) ||
	    protocol < RCX_CHAN_AUTO || protocol > RCX_CHAN_WRITE_IMM)
		return -EINVAL;
	c0 = to_chan(chans[0]);
	ctx = chans[0]->ctx;
	rcx__lock(ctx);
	ret = -EINVAL;
	/* the sets hold the group: the user's handle must be live */
	if (!rcx__group_live(c0->g))
		goto out;
	memset(&a, 0, sizeof(a));
	a.g = c0->g;
	a.buf = buf;
	a.len = len;
	a.peer = peer;
	a.tag = tag;
	a.is_send = c0->set->is_send;
	a.proto = protocol;
	if ((peer != RCX_PROC_NULL &&
	     (peer < (a.is_send ? 0 : RCX_ANY_SOURCE) || peer >= a.g->size ||
	      peer == a.g->rank)) ||
	    tag < (a.is_send ? 0 : RCX_ANY_TAG) || tag > RCX_TAG_UB)
		goto out;
	for (i = 0; i < n; i++)
		if (to_chan(chans[i])->set->is_send != a.is_send ||
		    to_chan(chans[i])->g != a.g)
			goto out;
	ret = rcx__chan_parse_info(info, &a);
	if (!ret)
		ret = chop_new(ctx, chans, n, &a, eph);
	if (!ret) {
		/* the old binding goes first (loosely collective with the
		 * old peer) */
		free_mark(chans, n);
		rcx__chan_ops_progress(ctx);
	}
out:
	rcx__unlock(ctx);
	return ret;
}

RCX_API int rcx_mrebind(int n, struct rcx_req **chans, void *buf, size_t len,
			int peer, int tag, int protocol,
			const struct rcx_info *info)
{
	struct rcx_req *eph;
	struct rcx_ctx *ctx;
	int ret;

	ret = mrebind_start(n, chans, buf, len, peer, tag, protocol, info,
			    &eph);
	if (ret)
		return ret;
	ctx = chans[0]->ctx;
	rcx__lock(ctx);
	ret = rcx__chan_wait_eph(ctx, eph);
	rcx__unlock(ctx);
	return ret;
}

RCX_API int rcx_rebind(struct rcx_req *chan, void *buf, size_t len, int peer,
		       int tag, int protocol, const struct rcx_info *info)
{
	return rcx_mrebind(1, &chan, buf, len, peer, tag, protocol, info);
}

RCX_API int rcx_irebind(struct rcx_req *chan, void *buf, size_t len, int peer,
			int tag, int protocol, const struct rcx_info *info,
			struct rcx_req **eph)
{
	if (!eph)
		return -EINVAL;
	return mrebind_start(1, &chan, buf, len, peer, tag, protocol, info,
			     eph);
}

void rcx__chan_fini(struct rcx_ctx *ctx)
{
	struct chop *o;

	/* their requests are cancelled with the context's others */
	while ((o = ctx->chan_ops)) {
		ctx->chan_ops = o->next;
		chop_free(o);
	}
	while (ctx->chan_sets)
		rcx__chan_set_destroy(ctx->chan_sets);
	ctx->chan_deferred = NULL;
	ctx->chan_credits = NULL;
	rcx__chan_work(ctx);
}
