/* SPDX-License-Identifier: BSD-2-Clause */
/* Requests: the per-context pool, start, test/wait families, free. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"

#define RCX__REQ_CHUNK 64

static int pool_grow(struct rcx_ctx *ctx)
{
	struct rcx_req *chunk;
	void **chunks;
	int i;

	chunks = realloc(ctx->req_chunks, (ctx->nchunks + 1) * sizeof(void *));
	if (!chunks)
		return -ENOMEM;
	ctx->req_chunks = chunks;
	chunk = calloc(RCX__REQ_CHUNK, sizeof(*chunk));
	if (!chunk)
		return -ENOMEM;
	ctx->req_chunks[ctx->nchunks++] = chunk;
	for (i = 0; i < RCX__REQ_CHUNK; i++) {
		chunk[i].magic = RCX__REQ_DEAD;
		chunk[i].next = ctx->req_free;
		ctx->req_free = &chunk[i];
	}
	return 0;
}

/* From the pool; allocates only when the pool is empty (a new chunk). */
struct rcx_req *rcx__req_get(struct rcx_ctx *ctx, int kind,
			     const struct rcx__req_ops *ops)
{
	if (RCX__UNLIKELY(!ctx->req_free) && pool_grow(ctx))
		return NULL;
	return rcx__req_take(ctx, kind, ops);
}

void rcx__req_put(struct rcx_req *r)
{
	/* continuations: a persistent continuation lets go of a freed one */
	if (r->cont)
		rcx__req_hooks->detach(r);
	rcx__req_release(r);
}

void rcx__req_each(struct rcx_ctx *ctx,
		   void (*fn)(struct rcx_req *r, void *arg), void *arg)
{
	size_t i;
	int j;

	for (i = 0; i < ctx->nchunks; i++) {
		struct rcx_req *chunk = ctx->req_chunks[i];

		for (j = 0; j < RCX__REQ_CHUNK; j++)
			if (chunk[j].magic == RCX__REQ_MAGIC)
				fn(&chunk[j], arg);
	}
}

void rcx__req_complete_hooks(struct rcx_req *r)
{
	if (r->done)
		r->done(r);
	if (r->cont) {
		rcx__req_hooks->complete(r);
		return; /* the continuation owns what happens next */
	}
	if (r->user_freed && !r->persistent)
		rcx__req_put(r);
}

static int given_twice(const char *fn, int n, struct rcx_req *const *reqs,
		       int i)
{
	int j;

	for (j = 0; reqs[j] != reqs[i]; j++)
		;
	rcx__log(RCX__LOG_ERROR, "req",
		 "%s: request %p is given twice (entries %d and %d)", fn,
		 (void *)reqs[i], j, i);
	return -EINVAL;
}

/*
 * MPI calls the same request twice in one array erroneous; finishing it
 * twice would put it back into the pool twice. Up to 4 are compared pair
 * by pair; more (a bundle's startall and waitall are on the fast path:
 * n compares of a mark cost less than n * (n - 1) / 2 of pairs) are
 * marked, and the marks taken off before the call goes on.
 */
int rcx__reqs_unique(const char *fn, int n, struct rcx_req *const *reqs)
{
	int i, j, dup = -1;

	if (n <= 4) {
		for (i = 1; i < n; i++)
			for (j = 0; reqs[i] && j < i; j++)
				if (reqs[j] == reqs[i])
					return given_twice(fn, n, reqs, i);
		return 0;
	}
	for (i = 0; i < n; i++) {
		struct rcx_req *r = reqs[i];

		if (!r)
			continue;
		if (r->mark) {
			dup = i;
			break;
		}
		r->mark = 1;
	}
	for (j = 0; j < i; j++)
		if (reqs[j])
			reqs[j]->mark = 0;
	return dup < 0 ? 0 : given_twice(fn, n, reqs, dup);
}

static void empty_status(struct rcx_status *st)
{
	if (st) {
		st->source = RCX_ANY_SOURCE;
		st->tag = RCX_ANY_TAG;
		st->error = 0;
		st->slot = -1;
		st->count = 0;
	}
}

/* Report a DONE request: status out, then inactive or freed. */
static inline __attribute__((always_inline)) int finish(struct rcx_req **rp,
							struct rcx_status *st)
{
	struct rcx_req *r = *rp;
	int err = r->status.error;

	if (st)
		*st = r->status;
	if (r->persistent) {
		r->state = RCX__REQ_INACTIVE;
	} else {
		/* rcx__req_put, its release inline where nothing is attached */
		if (RCX__LIKELY(!r->cont))
			rcx__req_release(r);
		else
			rcx__req_put(r);
		*rp = NULL;
	}
	return err;
}

static int check(struct rcx_req **rp)
{
	if (!rp)
		return -EINVAL;
	if (*rp && !rcx__req_live(*rp))
		return -EINVAL;
	return 0;
}

/* rcx_start under the lock, then the continuation re-armed */
static __attribute__((noinline)) int start_locked(struct rcx_req *r)
{
	struct rcx_ctx *ctx = r->ctx;
	int ret;

	rcx__lock(ctx);
	if (r->state != RCX__REQ_INACTIVE)
		ret = -EBUSY;
	else
		ret = r->ops->start(r);
	/* continuations: a start re-arms the one attached (unless the start
	 * completed at once and it took the completion already) */
	if (!ret && r->cont && r->state == RCX__REQ_ACTIVE)
		rcx__req_hooks->start(r);
	rcx__unlock(ctx);
	return ret;
}

/* rcx_start off its fast path: the checks in full, the lock */
static __attribute__((noinline)) int start_checked(struct rcx_req *r)
{
	if (!rcx__req_live(r))
		return -EINVAL;
	if (!r->persistent || !r->ops || !r->ops->start)
		return -EOPNOTSUPP;
	/*
	 * The fast path (a bound channel's start is this and one post): no
	 * lock to take, no continuation to re-arm, so the start is the last
	 * call. Without RCX_THREAD_MULTIPLE no other thread attaches one.
	 */
	if (RCX__UNLIKELY(r->ctx->mt || r->cont))
		return start_locked(r);
	if (r->state != RCX__REQ_INACTIVE)
		return -EBUSY;
	return r->ops->start(r);
}

/*
 * A request with a peek is live, of a context on one thread, and one that
 * is persistent has a start (rcx__req_peek): its checks are its state and
 * its continuation, and the start is a jump.
 */
/* persistent and inactive: the two adjacent bytes read as one */
static inline bool idle_persistent(const struct rcx_req *r)
{
	static const uint8_t want[2] = { RCX__REQ_INACTIVE, 1 };
	uint16_t have, w;

	_Static_assert(offsetof(struct rcx_req, persistent) ==
			       offsetof(struct rcx_req, state) + 1,
		       "state and persistent adjacent");
	memcpy(&have, &r->state, sizeof(have));
	memcpy(&w, want, sizeof(w));
	return have == w;
}

RCX_API int rcx_start(struct rcx_req *r)
{
	if (RCX__LIKELY(r && r->peek && idle_persistent(r) && !r->cont))
		return r->ops->start(r);
	return start_checked(r);
}

RCX_API int rcx_startall(int n, struct rcx_req **reqs)
{
	const struct rcx__req_ops *ops;
	struct rcx_ctx *ctx;
	int i, j, ret = 0;

	if (n < 0 || (n && !reqs))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!rcx__req_live(reqs[i]))
			return -EINVAL;
		if (!reqs[i]->persistent || !reqs[i]->ops->start)
			return -EOPNOTSUPP;
		if (reqs[i]->state != RCX__REQ_INACTIVE)
			return -EBUSY;
	}
	if (!n)
		return 0;
	if (rcx__reqs_unique(__func__, n, reqs))
		return -EINVAL;
	ctx = reqs[0]->ctx;
	rcx__lock(ctx);
	/* a run of one kind that can go as one post list goes together */
	for (i = 0; i < n && !ret; i = j) {
		ops = reqs[i]->ops;
		for (j = i + 1; j < n && reqs[j]->ops == ops && ops->start_many;
		     j++)
			;
		ret = ops->start_many ? ops->start_many(reqs + i, j - i)
				      : ops->start(reqs[i]);
	}
	/* continuations: all were inactive, so an active one was started */
	for (i = 0; i < n; i++)
		if (reqs[i]->cont && reqs[i]->state == RCX__REQ_ACTIVE)
			rcx__req_hooks->start(reqs[i]);
	rcx__unlock(ctx);
	return ret;
}

/* an active request polls once: its kind's poll, or progress */
static inline __attribute__((always_inline)) void poll_req(struct rcx_req *r)
{
	if (r->ops && r->ops->poll)
		r->ops->poll(r);
	else
		rcx__progress_inl(r->ctx);
}

/* ... and is it done now? */
static __attribute__((noinline)) bool poll_once(struct rcx_req *r)
{
	poll_req(r);
	return r->state != RCX__REQ_ACTIVE;
}

/* *rp is not active (any more): report it */
static inline __attribute__((always_inline)) int test_report(
	struct rcx_req **rp, int *flag, struct rcx_status *st)
{
	*flag = 1;
	if (RCX__UNLIKELY((*rp)->state == RCX__REQ_INACTIVE)) {
		/* never started, or its continuation took the completion */
		empty_status(st);
		return 0;
	}
	return finish(rp, st);
}

/*
 * lock held; *rp live and not NULL. A request looks at its own state
 * first: one that an earlier progress completed is reported without a
 * poll; an active one polls once.
 */
static inline __attribute__((always_inline)) int test_locked(
	struct rcx_req **rp, int *flag, struct rcx_status *st)
{
	if ((*rp)->state == RCX__REQ_ACTIVE && !poll_once(*rp)) {
		*flag = 0;
		return 0;
	}
	return test_report(rp, flag, st);
}

/* rcx_test but for the fast path: checks, NULL, the lock */
static __attribute__((noinline)) int test_slow(struct rcx_req **rp, int *flag,
					       struct rcx_status *st)
{
	struct rcx_ctx *ctx;
	int ret = check(rp);

	if (ret)
		return ret;
	if (!*rp) {
		empty_status(st);
		*flag = 1;
		return 0;
	}
	ctx = (*rp)->ctx;
	rcx__lock(ctx);
	ret = test_locked(rp, flag, st);
	rcx__unlock(ctx);
	return st ? 0 : ret;
}

/* the fast path: a live request, one thread, no lock (rcx_start's too) */
static inline bool fast_req(struct rcx_req *r)
{
	return RCX__LIKELY(r && rcx__req_live(r) && !r->ctx->mt);
}

/*
 * rcx_test's fast path on an active request: poll once and report. A
 * call of its own, which rcx_test reaches by a jump: rcx_test itself
 * then needs no frame.
 */
static __attribute__((noinline)) int test_active(struct rcx_req **rp, int *flag,
						 struct rcx_status *st)
{
	int ret;

	poll_req(*rp);
	if ((*rp)->state == RCX__REQ_ACTIVE) {
		*flag = 0;
		return 0;
	}
	ret = test_report(rp, flag, st);
	return st ? 0 : ret;
}

/* rcx_test of a request that is not active, on the fast path */
static __attribute__((noinline)) int test_inactive_any(struct rcx_req **rp,
						       int *flag,
						       struct rcx_status *st)
{
	int ret = test_report(rp, flag, st);

	return st ? 0 : ret;
}

/*
 * ... where a done request with nothing attached and nothing to release
 * (an eager send) is reported and back in the pool with no call, so no
 * frame; a persistent one (a channel's inline send, done at its start)
 * is inactive again
 */
static inline __attribute__((always_inline)) int inactive_report(
	struct rcx_req **rp, int *flag, struct rcx_status *st)
{
	struct rcx_req *r = *rp;
	int err;

	if (RCX__UNLIKELY(r->state != RCX__REQ_DONE || r->cont))
		return test_inactive_any(rp, flag, st);
	err = r->status.error;
	if (r->persistent) {
		*flag = 1;
		if (st)
			*st = r->status;
		r->state = RCX__REQ_INACTIVE;
		return st ? 0 : err;
	}
	if (RCX__UNLIKELY(r->ops && r->ops->release))
		return test_inactive_any(rp, flag, st);
	*flag = 1;
	if (st)
		*st = r->status;
	rcx__req_free_ops(r, NULL);
	*rp = NULL;
	return st ? 0 : err;
}

static __attribute__((noinline)) int test_inactive(struct rcx_req **rp,
						   int *flag,
						   struct rcx_status *st)
{
	return inactive_report(rp, flag, st);
}

static inline struct rcx_ctx *peek_ctx(const struct rcx_cq_peek *pk)
{
	return (struct rcx_ctx *)(void *)((char *)pk -
					  offsetof(struct rcx_ctx, peek));
}

/*
 * The report of the rcx_test whose direct poll found got (or failed), its
 * completions handed over. Only the context is kept across the hand-over
 * (what the report needs waits in it); reported as test_inactive does,
 * inline: a done request is looked at once.
 */
int rcx__peek_report(struct rcx_ctx *ctx, int got)
{
	if (got > 0)
		ctx->polls_found++;
	if ((*ctx->peek_rp)->state == RCX__REQ_ACTIVE)
		return 0;
	return inactive_report(ctx->peek_rp, ctx->peek_flag, ctx->peek_st);
}

bool rcx__peek_active(const struct rcx_ctx *ctx)
{
	return (*ctx->peek_rp)->state == RCX__REQ_ACTIVE;
}

/* the direct poll found got (or failed), a provider with no found_test
 * (rcx__req_peek): its dispatch, then the report */
int rcx__peek_found(struct rcx_ctx *ctx, struct rcx_dev *dev, int got)
{
	got = ctx->peek.found(dev, ctx, got);
	return rcx__peek_report(ctx, got);
}

/* the rest of the progress pass is due: a whole pass, then a report */
static __attribute__((noinline)) int test_due(struct rcx_req **rp, int *flag,
					      struct rcx_status *st)
{
	struct rcx_ctx *ctx = (*rp)->ctx;
	int ret;

	rcx__progress_rest(ctx, ctx->cq_dispatch(ctx->dev, ctx), NULL);
	if ((*rp)->state == RCX__REQ_ACTIVE)
		return 0;
	ret = test_report(rp, flag, st);
	return st ? 0 : ret;
}

/* persistent and done: the two adjacent bytes read as one */
static inline bool done_persistent(const struct rcx_req *r)
{
	static const uint8_t want[2] = { RCX__REQ_DONE, 1 };
	uint16_t have, w;

	memcpy(&have, &r->state, sizeof(have));
	memcpy(&w, want, sizeof(w));
	return have == w;
}

/* rcx_test off the direct poll: checks, NULL, the lock; not active; or
 * active with no peek */
static inline __attribute__((always_inline)) int test_other(
	struct rcx_req **rp, int *flag, struct rcx_status *st)
{
	if (!fast_req(*rp))
		return test_slow(rp, flag, st);
	if ((*rp)->state == RCX__REQ_ACTIVE)
		return test_active(rp, flag, st);
	return test_inactive(rp, flag, st);
}

/*
 * rcx_test of a request that is not active: one with a peek (live, one
 * thread), persistent, done and with nothing attached (a channel's
 * inline send, done at its start) is reported with no call; another with
 * a peek by test_inactive; anything else as test_other does.
 */
static __attribute__((noinline)) int test_done(struct rcx_req **rp, int *flag,
					       struct rcx_status *st)
{
	struct rcx_req *r = *rp;

	if (RCX__UNLIKELY(!r->peek))
		return test_other(rp, flag, st);
	if (RCX__UNLIKELY(!done_persistent(r) || r->cont))
		return test_inactive(rp, flag, st);
	*flag = 1;
	r->state = RCX__REQ_INACTIVE;
	if (st) {
		*st = r->status;
		return 0;
	}
	return r->status.error;
}

/*
 * The fast path: an active request with a peek (a channel, a point-to-point
 * request; rcx__req_peek) polls the driver straight from here. A test that
 * finds nothing pays the checks, the count of passes towards the rest of
 * the progress pass, and the call: it counts no empty poll (the passes
 * less those that found something are the empty ones, ctx.c). What a poll
 * that finds something needs is left in the context, not in saved
 * registers.
 */
RCX_API int rcx_test(struct rcx_req **rp, int *flag, struct rcx_status *st)
{
	const struct rcx_cq_peek *pk;
	struct rcx_ctx *ctx;
	struct rcx_req *r;
	int got;

	if (RCX__UNLIKELY(!rp || !flag))
		return -EINVAL;
	r = *rp;
	/* a peek is set only where the request is live, on one thread */
	if (RCX__UNLIKELY(!r))
		return test_other(rp, flag, st);
	if (RCX__UNLIKELY(r->state != RCX__REQ_ACTIVE))
		return test_done(rp, flag, st);
	if (RCX__UNLIKELY(!(pk = r->peek)))
		return test_other(rp, flag, st);
	ctx = peek_ctx(pk);
	*flag = 0;
	if (RCX__UNLIKELY(--ctx->quick < 0))
		return test_due(rp, flag, st);
	ctx->peek_rp = rp;
	ctx->peek_flag = flag;
	ctx->peek_st = st;
	got = pk->poll(pk->cq, pk->n, pk->buf);
	if (RCX__LIKELY(!got))
		return 0;
	/* the hand-over and the report: where the provider can, one tail
	 * call to the completion's own target, which reports */
	return pk->found_test(ctx, ctx->dev, got);
}

RCX_API int rcx_wait(struct rcx_req **rp, struct rcx_status *st)
{
	struct rcx__spin sp = { 0 };
	struct rcx_ctx *ctx;
	int ret = check(rp), flag = 0;

	if (ret)
		return ret;
	if (!*rp) {
		empty_status(st);
		return 0;
	}
	ctx = (*rp)->ctx;
	rcx__lock(ctx);
	for (;;) {
		/* a request with a peek (one thread, no lock) spins on the
		 * direct poll, as rcx_test does */
		if ((*rp)->peek && (*rp)->state == RCX__REQ_ACTIVE)
			ret = rcx_test(rp, &flag, st);
		else
			ret = test_locked(rp, &flag, st);
		if (flag)
			break;
		if (rcx__spin_over(ctx, &sp))
			rcx__block_req(ctx, *rp);
	}
	rcx__unlock(ctx);
	return st ? 0 : ret;
}

static int check_n(const char *fn, int n, struct rcx_req **reqs)
{
	int i;

	if (n < 0 || (n && !reqs))
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (reqs[i] && !rcx__req_live(reqs[i]))
			return -EINVAL;
	return rcx__reqs_unique(fn, n, reqs);
}

static struct rcx_ctx *ctx_of(int n, struct rcx_req **reqs)
{
	int i;

	for (i = 0; i < n; i++)
		if (reqs[i])
			return reqs[i]->ctx;
	return NULL;
}

/* A kind with a poll op (continuation requests) is polled by the -all and
 * -any forms too, not only by rcx_test/rcx_wait. */
static void poll_kind(struct rcx_req *r)
{
	if (r && r->state == RCX__REQ_ACTIVE && r->ops && r->ops->poll)
		r->ops->poll(r);
}

static bool is_done(struct rcx_req *r)
{
	poll_kind(r);
	return !r || r->state != RCX__REQ_ACTIVE;
}

static int finish_all(int n, struct rcx_req **reqs, struct rcx_status *sts)
{
	int i, first = 0, f, e;

	for (i = 0; i < n; i++) {
		if (!reqs[i]) {
			empty_status(sts ? &sts[i] : NULL);
			continue;
		}
		e = test_locked(&reqs[i], &f, sts ? &sts[i] : NULL);
		if (e && !first)
			first = e;
	}
	return sts ? 0 : first;
}

RCX_API int rcx_testall(int n, struct rcx_req **reqs, int *flag,
			struct rcx_status *sts)
{
	struct rcx_ctx *ctx;
	int i, ret = check_n(__func__, n, reqs);

	if (ret || !flag)
		return ret ? ret : -EINVAL;
	ctx = ctx_of(n, reqs);
	if (!ctx) {
		*flag = 1;
		return finish_all(n, reqs, sts);
	}
	rcx__lock(ctx);
	rcx__progress(ctx);
	for (i = 0; i < n && is_done(reqs[i]); i++)
		;
	*flag = i == n;
	ret = *flag ? finish_all(n, reqs, sts) : 0;
	rcx__unlock(ctx);
	return ret;
}

static void wait_done(struct rcx_ctx *ctx, int n, struct rcx_req **reqs)
{
	struct rcx__spin sp = { 0 };
	int i;

	for (;;) {
		for (i = 0; i < n && is_done(reqs[i]); i++)
			;
		if (i == n)
			return;
		if (!rcx__progress(ctx) && rcx__spin_over(ctx, &sp))
			rcx__block(ctx, -1);
	}
}

int rcx__waitall_locked(struct rcx_ctx *ctx, int n, struct rcx_req **reqs)
{
	wait_done(ctx, n, reqs);
	return finish_all(n, reqs, NULL);
}

RCX_API int rcx_waitall(int n, struct rcx_req **reqs, struct rcx_status *sts)
{
	struct rcx_ctx *ctx;
	int ret = check_n(__func__, n, reqs);

	if (ret)
		return ret;
	ctx = ctx_of(n, reqs);
	if (!ctx)
		return finish_all(n, reqs, sts);
	rcx__lock(ctx);
	wait_done(ctx, n, reqs);
	ret = finish_all(n, reqs, sts);
	rcx__unlock(ctx);
	return ret;
}

/* lock held: index of a completed active request, or -1 */
static int find_any(int n, struct rcx_req **reqs, int *all_null)
{
	int i;

	*all_null = 1;
	for (i = 0; i < n; i++) {
		poll_kind(reqs[i]);
		if (!reqs[i] || reqs[i]->state == RCX__REQ_INACTIVE)
			continue;
		*all_null = 0;
		if (reqs[i]->state == RCX__REQ_DONE)
			return i;
	}
	return -1;
}

static int any_common(const char *fn, int n, struct rcx_req **reqs, int *index,
		      int *flag, struct rcx_status *st, bool block)
{
	struct rcx__spin sp = { 0 };
	struct rcx_ctx *ctx;
	int i, all_null, f, ret = check_n(fn, n, reqs);

	if (ret || !index)
		return ret ? ret : -EINVAL;
	ctx = ctx_of(n, reqs);
	if (!ctx) {
		*index = RCX_UNDEFINED;
		empty_status(st);
		if (flag)
			*flag = 1;
		return 0;
	}
	rcx__lock(ctx);
	for (;;) {
		i = find_any(n, reqs, &all_null);
		if (i >= 0 || all_null)
			break;
		if (!rcx__progress(ctx)) {
			i = find_any(n, reqs, &all_null);
			if (i >= 0 || all_null || !block)
				break;
			if (rcx__spin_over(ctx, &sp))
				rcx__block(ctx, -1);
		}
	}
	if (i >= 0) {
		*index = i;
		ret = test_locked(&reqs[i], &f, st);
		if (flag)
			*flag = 1;
	} else if (all_null) {
		*index = RCX_UNDEFINED;
		empty_status(st);
		if (flag)
			*flag = 1;
	} else {
		*index = RCX_UNDEFINED;
		if (flag)
			*flag = 0;
	}
	rcx__unlock(ctx);
	return st ? 0 : ret;
}

RCX_API int rcx_testany(int n, struct rcx_req **reqs, int *index, int *flag,
			struct rcx_status *st)
{
	if (!flag)
		return -EINVAL;
	return any_common(__func__, n, reqs, index, flag, st, false);
}

RCX_API int rcx_waitany(int n, struct rcx_req **reqs, int *index,
			struct rcx_status *st)
{
	return any_common(__func__, n, reqs, index, NULL, st, true);
}

RCX_API int rcx_req_free(struct rcx_req **rp)
{
	struct rcx_req *r;
	struct rcx_ctx *ctx;
	int ret = 0;

	if (!rp || !rcx__req_live(*rp))
		return -EINVAL;
	r = *rp;
	if (r->kind == RCX__REQ_CHAN || r->kind == RCX__REQ_BCOLL)
		return -EINVAL; /* bound objects end with rcx_bind_free */
	ctx = r->ctx;
	rcx__lock(ctx);
	if (r->state == RCX__REQ_ACTIVE) {
		if (r->persistent)
			ret = -EBUSY;
		else
			r->user_freed = 1;
	} else {
		rcx__req_put(r);
	}
	rcx__unlock(ctx);
	if (!ret)
		*rp = NULL;
	return ret;
}
