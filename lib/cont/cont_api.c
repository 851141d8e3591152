/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Continuations, the public calls that make things: continuation requests
 * (rcx_continue_init) and registrations (rcx_continue, rcx_continueall)
 * with their checks. What happens to a registration after that is in
 * cont.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/cont/cont_int.h"

static int parse_info(const struct rcx_info *info, struct creq *cr)
{
	static const char *const threads[] = { "application", "any", NULL };
	const char *v = rcx__info_lookup(info, RCX_CONT_INFO_MAX_POLL);
	unsigned long mp;
	bool b;
	int k, ret;

	ret = rcx__info_bool(info, RCX_CONT_INFO_POLL_ONLY, false, &b);
	if (ret)
		return ret;
	cr->poll_only = b;
	ret = rcx__info_enum(info, RCX_CONT_INFO_THREAD, threads, 0, &k);
	if (ret)
		return ret;
	cr->any_thread = k == 1;
	ret = rcx__info_bool(info, RCX_CONT_INFO_ENQUEUE_COMPLETE, false, &b);
	if (ret)
		return ret;
	cr->enqueue_complete = b;
	ret = rcx__info_bool(info, RCX_CONT_INFO_ASYNC_SIGNAL_SAFE, false, &b);
	if (ret)
		return ret;
	cr->signal_safe = b;
	cr->plain = !cr->poll_only && !cr->signal_safe;
	cr->max_poll = -1;
	if (v && strcmp(v, "-1")) {
		ret = rcx__info_ulong(info, RCX_CONT_INFO_MAX_POLL, 0, 1,
				      INT32_MAX, &mp);
		if (ret)
			return ret;
		cr->max_poll = (long)mp;
	}
	return 0;
}

RCX_API int rcx_continue_init(struct rcx_ctx *ctx, const struct rcx_info *info,
			      struct rcx_req **cont_req)
{
	struct cstate *cs;
	struct creq *cr;
	struct rcx_req *r;
	int ret;

	if (!rcx__ctx_live(ctx) || !cont_req)
		return -EINVAL;
	cr = calloc(1, sizeof(*cr));
	if (!cr)
		return -ENOMEM;
	ret = parse_info(info, cr);
	if (!ret && cr->any_thread && !ctx->mt)
		ret = -EINVAL; /* a progress thread needs THREAD_MULTIPLE */
	if (ret) {
		free(cr);
		return ret;
	}
	rcx__lock(ctx);
	ret = rcx__cont_state(ctx, &cs);
	if (!ret && cs->closing)
		ret = -ECANCELED;
	if (ret)
		goto err;
	r = rcx__req_get(ctx, RCX__REQ_INTERNAL, &rcx__creq_ops);
	if (!r) {
		ret = -ENOMEM;
		goto err;
	}
	if (cr->any_thread) {
		ret = rcx__cont_thread_start(ctx, cs);
		if (ret) {
			r->ops = NULL;
			rcx__req_put(r);
			goto err;
		}
	}
	r->persistent = 1;
	r->state = RCX__REQ_INACTIVE;
	r->obj = cr;
	cr->req = r;
	cs->extra |= cr->signal_safe;
	cr->next = cs->crs;
	if (cs->crs)
		cs->crs->prev = cr;
	cs->crs = cr;
	rcx__unlock(ctx);
	*cont_req = r;
	return 0;
err:
	rcx__unlock(ctx);
	free(cr);
	return ret;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a;
	uintptr_t y = (uintptr_t) * (void *const *)b;

	return x < y ? -1 : x > y;
}

/* A request given twice (NULL handles may repeat). */
static int check_dups(int n, struct rcx_req **reqs)
{
	struct rcx_req **s;
	int i, j, ret = 0;

	if (n <= 64) {
		for (i = 0; i < n; i++)
			for (j = 0; reqs[i] && j < i; j++)
				if (reqs[j] == reqs[i])
					return -EINVAL;
		return 0;
	}
	s = malloc((size_t)n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(s, reqs, (size_t)n * sizeof(*s));
	qsort(s, (size_t)n, sizeof(*s), cmp_ptr);
	for (i = 1; i < n && !ret; i++)
		if (s[i] && s[i] == s[i - 1])
			ret = -EINVAL;
	free(s);
	return ret;
}

/*
 * x (a continuation request) would get a continuation registered with t:
 * t would then wait for x. A cycle if x already waits for t, i.e. t is x
 * or x is down the chain of requests t's continuation is registered with.
 */
static bool makes_cycle(const struct rcx_req *x, const struct rcx_req *t)
{
	for (;;) {
		if (t == x)
			return true;
		if (!t->cont)
			return false;
		t = t->cont->c->cr->req;
	}
}

/* Lock held: every request acceptable (nothing changed on an error). */
static int check_reqs(struct rcx_ctx *ctx, int n, struct rcx_req **reqs,
		      struct rcx_req *cont_req)
{
	int i;

	for (i = 0; i < n; i++) {
		struct rcx_req *r = reqs[i];

		if (!r)
			continue;
		if (!rcx__req_live(r) || r->ctx != ctx)
			return -EINVAL;
		if (rcx__is_creq(r) && makes_cycle(r, cont_req))
			return -EINVAL;
		if (r->cont &&
		    (!r->cont->c->persistent || r->state == RCX__REQ_ACTIVE))
			return RCX_ERR_CONT_ATTACHED;
	}
	return check_dups(n, reqs);
}

static int cont_register(int n, struct rcx_req **reqs, rcx_continue_cb *cb,
			 void *cb_data, int flags, struct rcx_status *statuses,
			 struct rcx_req *cont_req)
{
	struct rcx_ctx *ctx;
	struct cstate *cs;
	struct creq *cr;
	struct cont *c;
	int i, ret;

	if (n < 0 || (n && !reqs) || !cb ||
	    (flags & ~(RCX_CONT_IMMEDIATE | RCX_CONT_PERSISTENT)) ||
	    !rcx__req_live(cont_req) || !rcx__is_creq(cont_req))
		return -EINVAL;
	ctx = cont_req->ctx;
	cr = creq_of(cont_req);
	rcx__lock(ctx);
	cs = ctx->cont_state;
	ret = cs->closing ? -ECANCELED : check_reqs(ctx, n, reqs, cont_req);
	if (ret)
		goto out;
	c = rcx__cont_alloc(cs, n);
	if (!c) {
		ret = -ENOMEM;
		goto out;
	}
	c->cr = cr;
	c->cb = cb;
	c->cb_data = cb_data;
	c->statuses = statuses;
	c->n = n;
	c->persistent = !!(flags & RCX_CONT_PERSISTENT);
	for (i = 0; i < n; i++) {
		struct rcx__cont *l = &c->links[i];
		struct rcx_req *r = reqs[i];

		l->c = c;
		l->idx = (uint32_t)i;
		if (!r) {
			/* a NULL handle: complete, empty status */
			l->st.source = RCX_ANY_SOURCE;
			l->st.tag = RCX_ANY_TAG;
			l->st.slot = -1;
			l->state = L_DONE;
			c->ndone++;
			continue;
		}
		if (r->cont)
			rcx__cont_detach(r); /* moved from an idle persistent
					      * continuation */
		r->cont = l;
		l->req = r;
		if (!r->persistent)
			reqs[i] = NULL; /* ownership passes to rcx */
		if (r->state == RCX__REQ_DONE) {
			/* completed, not yet reported: the continuation takes it */
			l->st = r->status;
			l->state = L_DONE;
			c->ndone++;
			if (r->persistent) {
				r->state = RCX__REQ_INACTIVE;
			} else {
				r->cont = NULL;
				l->req = NULL;
				rcx__req_put(r);
			}
		} else {
			/* active, or inactive until its next start */
			l->state = L_WAIT;
			c->nwait++;
		}
	}
	rcx__cont_count(c);
	c->fast =
		n == 1 && c->nwait && !c->persistent && cr->plain && c->pooled;
	if (c->fast) {
		c->dst = statuses ? statuses : &c->links[0].st;
	} else {
		c->cr_next = cr->conts;
		if (cr->conts)
			cr->conts->cr_prev = c;
		cr->conts = c;
	}
	/* every link is waiting or done here: none has left yet */
	if (!c->nwait)
		rcx__cont_closed(ctx, c, flags & RCX_CONT_IMMEDIATE);
	ret = 0;
out:
	rcx__unlock(ctx);
	return ret;
}

RCX_API int rcx_continue(struct rcx_req **op_req, rcx_continue_cb *cb,
			 void *cb_data, int flags, struct rcx_status *status,
			 struct rcx_req *cont_req)
{
	if (!op_req)
		return -EINVAL;
	return cont_register(1, op_req, cb, cb_data, flags, status, cont_req);
}

RCX_API int rcx_continueall(int n, struct rcx_req **op_reqs,
			    rcx_continue_cb *cb, void *cb_data, int flags,
			    struct rcx_status *statuses,
			    struct rcx_req *cont_req)
{
	return cont_register(n, op_reqs, cb, cb_data, flags, statuses,
			     cont_req);
}
