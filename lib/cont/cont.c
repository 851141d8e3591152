/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Continuations: the MPI Continuations proposal (MPI_Continue,
 * MPI_Continueall, MPI_Continue_init) with the persistent continuations of
 * its later comment (MPI_CONT_IMMEDIATE, MPI_CONT_PERSISTENT).
 *
 * A continuation (struct cont) has one attachment (struct rcx__cont, the
 * r->cont of its request) per operation request. Its requests go through
 * rounds: each attachment waits (L_WAIT) until its request completes
 * (L_DONE) or leaves (L_GONE: freed, released, or moved to another
 * continuation). When none waits and at least one completed, the round
 * closes: the statuses are copied out, the attachments are reset for the
 * next round (persistent) or detached (non-persistent), and one execution
 * is queued. A continuation is on at most one queue and runs at most once
 * per closed round: that is the "exactly once" guard, held under the
 * context lock; callbacks run with the lock released.
 *
 * A continuation request counts what it waits for in pending: one per
 * continuation with an open round (registered, or re-armed by a start or
 * completion of one of its requests) plus one per queued execution. It is
 * active while pending > 0 and completes when pending drops to 0.
 *
 * Ready continuations wait on the FIFO of their continuation request;
 * continuation requests that progress may serve (not poll-only) are on the
 * context's ready list, and ctx->cont_ready counts what progress could
 * run. Continuations of async-signal-safe requests go to a lock-free stack
 * instead, which rcx_cont_progress_signal can take from a signal handler.
 *
 * The dominant case (c->fast, decided at registration: a continuation
 * that is not persistent on one request still to complete, a
 * continuation request neither poll-only nor signal-safe, a pooled
 * object) has one round that closes when its request completes. Its
 * completion (fast_complete) copies the status out and releases the
 * request (a persistent one: inactive again) without the round
 * machinery; it is on no
 * list of its continuation request (teardown finds a waiting one through
 * the request pool). On an application thread outside a callback and a
 * test with a budget, with no signal-safe request and no exported fd
 * (the proposal's default: any application thread in a call of the
 * library may run it), it is not queued: it waits in ctx->cont_now, and
 * the progress pass whose dispatch completed the request runs it as
 * soon as the dispatch returns (run_now; a callback may poll, and a
 * provider's batch of completions would not survive a poll from inside
 * its dispatch); a test's direct poll leaves it to the rest of a later
 * pass. Otherwise it is queued, and progress that finds it alone and
 * first runs it without the general loop. fast_finish puts it back in
 * the pool. An execution of the general paths for a continuation
 * request that is neither poll-only nor signal-safe waits in
 * ctx->cont_now the same way (cont_enqueue) when it can. Everything else about it (tests on its continuation request,
 * max_poll, the progress thread, teardown) takes the general paths, which
 * handle it as any other.
 *
 * Rings (cs_ring: a continuation became ready, an execution finished)
 * matter only to a thread waiting in rcx__cont_block and to the exported
 * fd; while neither exists a ring is one test. A continuation request's
 * status.count counts its finished executions as they finish.
 *
 * cont_api.c creates continuation requests and registrations; the rest
 * is here.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "lib/cont/cont_int.h"

#define RCX__CONT_FREE_MAX 256 /* one-request continuations kept for reuse */
/*
 * The steps of a dispatch (completion to queue, queue to callback and
 * back) are small functions called from a few places each: inlined, the
 * calls and their register saves would cost more than the steps.
 */
#define CONT_HOT static inline __attribute__((always_inline))
/*
 * Longest sleep of an application thread in rcx__cont_block on a
 * RCX_THREAD_MULTIPLE context: a thread that polls without sleeping
 * (rcx_test, rcx_progress) may take the completion event and handle what
 * the sleeper waits for without waking it (only sleepers here wake each
 * other).
 */
#define RCX__CONT_MT_SLEEP_MS 100

/*
 * Per thread: inside a callback (continuation execution is never
 * re-entered), whether this is a progress thread, whether a test running
 * on this thread set a continuation budget and the budget (-1: none),
 * whether the last test on a continuation request left ready ones behind
 * (the wait must not sleep), and how many executions it has finished
 * while it watched in rcx__cont_block (what that reports; counted by the
 * ring, which a watcher turns on). The first three share a word that is 0
 * in the common case: progress reads it once. Initial-exec: the signal
 * entry reads it without allocating.
 */
static __thread struct {
	union {
		struct {
			uint16_t in_cb;
			bool progress;
			bool budgeted; /* budget >= 0 */
		};
		uint32_t any;
	} g;
	long budget;
	unsigned int ran;
	bool leftover;
} tl __attribute__((tls_model("initial-exec"))) = { .budget = -1 };

static void cs_notify(struct rcx_ctx *ctx, struct cstate *cs, bool ready);

/*
 * Something changed for waiters: a continuation became ready (ready) or
 * an execution finished on this thread. Only a thread in rcx__cont_block
 * or the exported fd listens (cs->notify); otherwise this is one test and
 * no system call.
 */
CONT_HOT void cs_ring(struct rcx_ctx *ctx, struct cstate *cs, bool ready)
{
	if (RCX__UNLIKELY(cs->notify))
		cs_notify(ctx, cs, ready);
}

/* ---- lock-free stacks: push one, take all (no ABA: nothing pops one) */

static void stack_push(_Atomic(struct cont *) *top, struct cont *c)
{
	struct cont *old = atomic_load_explicit(top, memory_order_relaxed);

	do {
		c->next = old;
	} while (!atomic_compare_exchange_weak_explicit(
		top, &old, c, memory_order_release, memory_order_relaxed));
}

static struct cont *stack_take(_Atomic(struct cont *) *top)
{
	return atomic_exchange_explicit(top, NULL, memory_order_acquire);
}

/* ---- continuation requests: pending count, implicit start, completion */

static void creq_pending_inc(struct creq *cr)
{
	struct rcx_req *r = cr->req;

	if (cr->pending++)
		return;
	/* started implicitly by the first registration (proposal) */
	r->state = RCX__REQ_ACTIVE;
	r->status.source = RCX_ANY_SOURCE;
	r->status.tag = RCX_ANY_TAG;
	r->status.error = 0;
	r->status.slot = -1;
	r->status.count = 0; /* executions finished, counted as they finish */
	if (r->cont)
		rcx__cont_start(r); /* re-arm a continuation attached to it */
}

CONT_HOT void creq_pending_dec(struct creq *cr)
{
	struct rcx_req *r = cr->req;

	if (--cr->pending)
		return;
	/* rcx__req_complete(r, 0) for this kind: no done hook, never freed
	 * while active (it is persistent), and its status is complete (only
	 * creq_pending_inc and the count of finished executions write it) */
	r->state = RCX__REQ_DONE;
	if (r->cont)
		rcx__cont_complete(r);
}

/* ---- continuation objects */

struct cont *rcx__cont_alloc(struct cstate *cs, int n)
{
	struct cont *c;

	if (n <= 1 && cs->free1) {
		c = cs->free1;
		cs->free1 = c->next;
		memset(c, 0, sizeof(*c) + sizeof(c->links[0]));
		c->pooled = 1;
		return c;
	}
	c = calloc(1,
		   sizeof(*c) + (size_t)(n > 1 ? n : 1) * sizeof(c->links[0]));
	if (c && n <= 1 && cs->npooled < RCX__CONT_FREE_MAX) {
		/* one-request ones are kept for reuse, up to a bound */
		c->pooled = 1;
		cs->npooled++;
	}
	return c;
}

CONT_HOT void cont_free(struct cstate *cs, struct cont *c)
{
	if (RCX__LIKELY(c->pooled)) {
		c->next = cs->free1;
		cs->free1 = c;
	} else {
		free(c);
	}
}

/* It leaves its request's list and is freed (no request holds it). */
CONT_HOT void cont_release(struct rcx_ctx *ctx, struct cont *c)
{
	struct creq *cr = c->cr;
	bool counted = c->counted;

	if (!c->fast) {
		if (c->cr_prev)
			c->cr_prev->cr_next = c->cr_next;
		else
			cr->conts = c->cr_next;
		if (c->cr_next)
			c->cr_next->cr_prev = c->cr_prev;
	}
	cont_free(ctx->cont_state, c);
	if (counted)
		creq_pending_dec(cr);
}

/* Its requests let go of it, it leaves its request's list, and is freed. */
static void cont_dispose(struct rcx_ctx *ctx, struct cont *c)
{
	int i;

	for (i = 0; i < c->n; i++) {
		struct rcx__cont *l = &c->links[i];

		if (l->req) {
			l->req->cont = NULL;
			l->req = NULL;
		}
	}
	cont_release(ctx, c);
}

/* An open round starts: the continuation request waits for it. */
void rcx__cont_count(struct cont *c)
{
	if (!c->counted) {
		c->counted = 1;
		creq_pending_inc(c->cr);
	}
}

/* A done link at the close of its round: whether it waits in the next. */
CONT_HOT bool link_close(struct cont *c, struct rcx__cont *l)
{
	if (c->statuses)
		c->statuses[l->idx] = l->st;
	if (l->req && !c->persistent) {
		l->req->cont = NULL;
		l->req = NULL;
	}
	l->state = l->req ? L_WAIT : L_GONE;
	return l->req != NULL;
}

/*
 * Close the round: statuses out (before the callback runs, as the proposal
 * requires), attachments reset for the next round, or detached when the
 * continuation is not persistent so that the callback may attach a new
 * one. The round's count in cr->pending passes to the queued execution.
 */
CONT_HOT void cont_close(struct cont *c)
{
	int i;

	if (c->n == 1) {
		/* one request (the common case): closing, its link is done */
		c->nwait = link_close(c, c->links);
	} else {
		c->nwait = 0;
		for (i = 0; i < c->n; i++)
			if (c->links[i].state == L_DONE)
				c->nwait += link_close(c, &c->links[i]);
	}
	c->ndone = 0;
	c->counted = 0;
	c->queued = 1;
}

/* Onto cr's ready FIFO. */
CONT_HOT void fifo_push(struct creq *cr, struct cont *c)
{
	c->next = NULL;
	if (RCX__UNLIKELY(cr->head != NULL)) /* progress keeps it short */
		cr->tail->next = c;
	else
		cr->head = c;
	cr->tail = c;
}

/* cr (not poll-only) has an execution progress may run: count it, and
 * put cr on the context's ready list. */
CONT_HOT void rl_ready(struct rcx_ctx *ctx, struct cstate *cs, struct creq *cr)
{
	rcx__cont_ready_inc(ctx);
	if (!cr->on_rl) {
		cr->on_rl = true;
		cr->rl_next = NULL;
		if (cs->rl_tail)
			cs->rl_tail->rl_next = cr;
		else
			cs->rl_head = cr;
		cs->rl_tail = cr;
	}
}

/* Queue a closed round's execution. */
CONT_HOT void cont_enqueue(struct rcx_ctx *ctx, struct cont *c)
{
	struct cstate *cs = ctx->cont_state;
	struct creq *cr = c->cr;

	if (cr->signal_safe && !cr->poll_only) {
		cr->nsig++;
		stack_push(&cs->sig_ready, c);
		rcx__cont_ready_inc(ctx);
	} else if (cr->plain && !(tl.g.any | cs->extra) && !ctx->cont_now) {
		/* as fast_complete's: runs when the dispatch returns */
		ctx->cont_now = c;
	} else {
		fifo_push(cr, c);
		if (!cr->poll_only)
			rl_ready(ctx, cs, cr);
	}
	cs_ring(ctx, cs, true);
}

/* After any change of a continuation's round: queue it or let it go. */
CONT_HOT void cont_check(struct rcx_ctx *ctx, struct cont *c)
{
	if (c->queued || c->nwait)
		return;
	if (!c->ndone) {
		/* every request freed or moved: it disappears unrun */
		cont_dispose(ctx, c);
		return;
	}
	cont_close(c);
	cont_enqueue(ctx, c);
}

/* An execution has run (lock held). */
CONT_HOT void cont_finish(struct rcx_ctx *ctx, struct cont *c)
{
	struct cstate *cs = ctx->cont_state;
	struct creq *cr = c->cr;

	c->queued = 0;
	cr->req->status.count++;
	if (!c->nwait && !c->ndone)
		cont_release(ctx, c); /* every link is gone: no request */
	else
		cont_check(ctx, c); /* a next round may be complete already */
	creq_pending_dec(cr);
	cs_ring(ctx, cs, false);
}

/*
 * A fast continuation has run (lock held): cont_finish knowing that its
 * request is gone, its round was its only one and it is pooled.
 */
CONT_HOT void fast_finish(struct rcx_ctx *ctx, struct cont *c)
{
	struct cstate *cs = ctx->cont_state;
	struct creq *cr = c->cr;

	cr->req->status.count++;
	c->next = cs->free1;
	cs->free1 = c;
	creq_pending_dec(cr);
	cs_ring(ctx, cs, false);
}

/* cont_finish out of line: the fast path keeps fewer registers. */
static __attribute__((noinline)) void finish_general(struct rcx_ctx *ctx,
						     struct cont *c)
{
	cont_finish(ctx, c);
}

/* cont_call's callback on a RCX_THREAD_MULTIPLE context: out of line, so
 * that the single-threaded case keeps fewer registers. */
static __attribute__((noinline)) void call_unlocked(struct rcx_ctx *ctx,
						    struct cont *c)
{
	pthread_mutex_unlock(&ctx->lock);
	c->cb(c->statuses, c->cb_data);
	pthread_mutex_lock(&ctx->lock);
}

/*
 * Call a taken execution's callback: the lock is released around it (it
 * may call rcx); the thread is marked as inside a callback. ctx->mt is
 * tested once (rcx__lock and rcx__unlock would test it each). pt: this
 * is the progress thread (a constant where the caller knows it).
 */
CONT_HOT void cont_call_as(struct rcx_ctx *ctx, struct cont *c, bool pt)
{
	tl.g.in_cb++;
	rcx__stats_cont(&ctx->st, pt);
	if (RCX__LIKELY(!ctx->mt))
		c->cb(c->statuses, c->cb_data);
	else
		call_unlocked(ctx, c);
	tl.g.in_cb--;
}

CONT_HOT void cont_call(struct rcx_ctx *ctx, struct cont *c)
{
	cont_call_as(ctx, c, tl.g.progress);
}

/* Run a taken execution and finish it. */
CONT_HOT void cont_run_as(struct rcx_ctx *ctx, struct cont *c, bool pt)
{
	cont_call_as(ctx, c, pt);
	if (RCX__LIKELY(c->fast))
		fast_finish(ctx, c);
	else
		finish_general(ctx, c);
}

CONT_HOT void cont_run(struct rcx_ctx *ctx, struct cont *c)
{
	cont_run_as(ctx, c, tl.g.progress);
}

/* ---- taking ready executions (lock held) */

CONT_HOT bool may_run(const struct creq *cr)
{
	return !tl.g.progress || cr->any_thread;
}

/* The first of cr's non-empty FIFO (ctx->cont_ready is the caller's). */
CONT_HOT struct cont *fifo_take(struct creq *cr)
{
	struct cont *c = cr->head;

	cr->head = c->next; /* tail is left stale when it empties */
	return c;
}

CONT_HOT struct cont *fifo_pop(struct rcx_ctx *ctx, struct creq *cr)
{
	if (!cr->head)
		return NULL;
	if (!cr->poll_only)
		rcx__cont_ready_dec(ctx);
	return fifo_take(cr);
}

/* From the signal stack: the first that want(c, cr) accepts. */
static struct cont *sig_pick(struct rcx_ctx *ctx, const struct creq *only)
{
	struct cstate *cs = ctx->cont_state;
	struct cont *list = stack_take(&cs->sig_ready), *c, *next, *got = NULL;

	for (c = list; c; c = next) {
		next = c->next;
		if (!got && (only ? c->cr == only : may_run(c->cr))) {
			got = c;
			continue;
		}
		stack_push(&cs->sig_ready, c);
	}
	if (got) {
		got->cr->nsig--;
		rcx__cont_ready_dec(ctx);
	}
	return got;
}

/* For progress: any execution this thread may run. */
CONT_HOT struct cont *take_any(struct rcx_ctx *ctx, struct cstate *cs)
{
	struct creq *cr, *prev = NULL, *next;
	struct cont *c;

	for (cr = cs->rl_head; cr; cr = next) {
		next = cr->rl_next;
		if (!cr->head) {
			/* emptied by a test: off the list */
			if (prev)
				prev->rl_next = next;
			else
				cs->rl_head = next;
			if (cs->rl_tail == cr)
				cs->rl_tail = prev;
			cr->on_rl = false;
			continue;
		}
		if (may_run(cr))
			return fifo_pop(ctx, cr);
		prev = cr;
	}
	c = atomic_load_explicit(&cs->sig_ready, memory_order_relaxed);
	return c ? sig_pick(ctx, NULL) : NULL;
}

/*
 * take_any for an application thread while no continuation request is
 * signal-safe: the first ready one.
 */
CONT_HOT struct cont *take_app(struct rcx_ctx *ctx, struct cstate *cs)
{
	struct creq *cr;

	while ((cr = cs->rl_head)) {
		if (RCX__LIKELY(cr->head != NULL)) {
			rcx__cont_ready_dec(ctx);
			return fifo_take(cr);
		}
		/* emptied by a test: off the list */
		cs->rl_head = cr->rl_next;
		if (!cs->rl_head)
			cs->rl_tail = NULL;
		cr->on_rl = false;
	}
	return NULL;
}

/* Executions a signal handler ran: finish them. Returns how many. */
static int finish_signalled(struct rcx_ctx *ctx, struct cstate *cs)
{
	struct cont *c, *next;
	int n = 0;

	if (!atomic_load_explicit(&cs->sig_done, memory_order_relaxed))
		return 0;
	for (c = stack_take(&cs->sig_done); c; c = next) {
		next = c->next;
		c->cr->nsig--;
		rcx__cont_ready_dec(ctx);
		cont_finish(ctx, c);
		n++;
	}
	return n;
}

/* ---- wakeups */

static void efd_write(int fd)
{
	uint64_t one = 1;
	ssize_t r = write(fd, &one, sizeof(one));

	(void)r; /* EAGAIN: the counter is full, so readable anyway */
}

static void efd_drain(int fd)
{
	uint64_t v;
	ssize_t r = read(fd, &v, sizeof(v));

	(void)r;
}

/* Wake the threads asleep in rcx__cont_block (one write until drained). */
static void wake_sleepers(struct cstate *cs)
{
	if (cs->sleepers && !cs->rung) {
		efd_write(cs->efd);
		cs->rung = true;
	}
}

/*
 * cs_ring when somebody listens: bump gen (a watcher about to sleep sees
 * it), count a finish for this thread's watch, wake the sleepers, and
 * when a continuation became ready signal the exported fd. Out of line:
 * the rings on the fast paths stay one test.
 */
static __attribute__((noinline)) void cs_notify(struct rcx_ctx *ctx,
						struct cstate *cs, bool ready)
{
	cs->gen++;
	if (!ready)
		tl.ran++;
	wake_sleepers(cs);
	if (ready && cs->xfd >= 0 && !cs->xrung) {
		efd_write(cs->xfd);
		cs->xrung = true;
		rcx__cont_ready_inc(ctx);
	}
}

/* This thread enters rcx__cont_block: rings bump gen and count its
 * finishes until it leaves (lock held). */
static void watch_begin(struct cstate *cs)
{
	cs->watchers++;
	cs->notify = true;
}

static void watch_end(struct cstate *cs)
{
	if (--cs->watchers == 0)
		cs->notify = cs->xfd >= 0;
}

/*
 * The exported fd is drained by an application thread's progress only: a
 * progress thread draining it could leave an epoll loop asleep with
 * continuations only application threads may run.
 */
static void xfd_drain(struct rcx_ctx *ctx, struct cstate *cs, bool signalled)
{
	if (cs->xfd < 0 || tl.g.progress || (!cs->xrung && !signalled))
		return;
	efd_drain(cs->xfd);
	if (cs->xrung) {
		cs->xrung = false;
		rcx__cont_ready_dec(ctx);
	}
}

/* ---- core hooks */

/* rcx__req_release of a request whose ops release something */
static __attribute__((noinline)) void release_ops(struct rcx_req *r)
{
	rcx__req_release(r);
}

/*
 * The request of a fast continuation, its status taken: released (rcx
 * owns it) or, persistent, inactive again (the user's). A call here is
 * the last step: the callers keep no frame.
 */
CONT_HOT void fast_req_done(struct rcx_req *r)
{
	const struct rcx__req_ops *ops = r->ops;

	if (RCX__UNLIKELY(r->persistent))
		/* the continuation takes the completion: inactive, restartable
		 * (its link's req is stale from here: nothing reads it) */
		r->state = RCX__REQ_INACTIVE;
	else if (RCX__UNLIKELY(ops && ops->release))
		release_ops(r);
	else
		rcx__req_free_ops(r, NULL);
}

/*
 * fast_complete when the continuation cannot wait in ctx->cont_now
 * (another one waits there, this thread may not run it, a signal-safe
 * request or the exported fd exists) or somebody listens for rings:
 * queued, or in ctx->cont_now, and rung.
 */
static __attribute__((noinline)) void fast_queue(struct rcx_ctx *ctx,
						 struct rcx_req *r,
						 struct cont *c)
{
	struct cstate *cs = ctx->cont_state;

	if (!(tl.g.any | cs->extra) && !ctx->cont_now) {
		ctx->cont_now = c;
	} else {
		fifo_push(c->cr, c);
		rl_ready(ctx, cs, c->cr);
	}
	cs_ring(ctx, cs, true);
	fast_req_done(r);
}

/*
 * A fast continuation's request completed: cont_check's close and enqueue
 * for its one link, then its request done with (fast_req_done). From
 * here on the continuation is only in ctx->cont_now or on its FIFO,
 * reached by no request and on no list: nothing reads its round state
 * (links, nwait, counted, queued) again, so it is left as it was;
 * fast_finish frees it.
 */
CONT_HOT void fast_complete(struct rcx_ctx *ctx, struct rcx_req *r,
			    struct cont *c)
{
	struct cstate *cs = ctx->cont_state;

	*c->dst = r->status;
	r->cont = NULL;
	if (RCX__UNLIKELY((tl.g.any | cs->extra | cs->notify) ||
			  ctx->cont_now)) {
		fast_queue(ctx, r, c);
		return;
	}
	/* runs when the dispatch returns (run_now) */
	ctx->cont_now = c;
	fast_req_done(r);
}

/*
 * The continuation in ctx->cont_now (lock held): a completion (of the
 * pass's dispatch, mostly) made it ready on an application thread
 * outside a callback and a budgeted test, and nothing ran it since. It runs now
 * unless this thread may not run it any more (inside a callback or a
 * test with a budget, a connection event's handler, a signal-safe
 * request or the exported fd since): then it is queued as any other.
 */
static int run_now(struct rcx_ctx *ctx)
{
	struct cstate *cs = ctx->cont_state;
	struct cont *c = ctx->cont_now;

	ctx->cont_now = NULL;
	if (RCX__UNLIKELY(tl.g.any | cs->extra | ctx->in_cm)) {
		fifo_push(c->cr, c);
		rl_ready(ctx, cs, c->cr);
		cs_ring(ctx, cs, true); /* the exported fd may be new */
		return 0;
	}
	cont_run_as(ctx, c, false); /* tl.g.progress is 0 here */
	return 1;
}

static __attribute__((noinline)) void complete_general(struct rcx_req *r)
{
	struct rcx__cont *l = r->cont;
	struct cont *c = l->c;

	l->st = r->status;
	if (l->state == L_WAIT) {
		l->state = L_DONE;
		c->nwait--;
		c->ndone++;
	}
	if (r->persistent) {
		/* the continuation takes the completion: inactive, restartable */
		r->state = RCX__REQ_INACTIVE;
	} else {
		/* rcx owns it since registration: release it now */
		r->cont = NULL;
		l->req = NULL;
		rcx__req_put(r);
	}
	rcx__cont_count(c);
	cont_check(r->ctx, c);
}

void rcx__cont_complete(struct rcx_req *r)
{
	struct cont *c = r->cont->c;

	if (RCX__LIKELY(c->fast))
		fast_complete(r->ctx, r, c);
	else
		complete_general(r);
}

void rcx__cont_start(struct rcx_req *r)
{
	struct rcx__cont *l = r->cont;
	struct cont *c = l->c;

	if (l->state == L_DONE) {
		/* restarted before its continuation ran: wait for this start */
		l->state = L_WAIT;
		c->ndone--;
		c->nwait++;
	}
	rcx__cont_count(c);
}

void rcx__cont_detach(struct rcx_req *r)
{
	struct rcx__cont *l = r->cont;
	struct cont *c = l->c;

	r->cont = NULL;
	l->req = NULL;
	if (l->state == L_WAIT) {
		l->state = L_GONE;
		c->nwait--;
	}
	cont_check(r->ctx, c);
}

/*
 * rcx__cont_progress with work beyond the FIFOs (signal-safe requests, the
 * exported fd), inside a test with a budget, or on the progress thread.
 */
static __attribute__((noinline)) int progress_general(struct rcx_ctx *ctx,
						      struct cstate *cs)
{
	struct cont *c;
	long budget;
	int limit, k, n = 0;

	if (tl.g.in_cb)
		return 0;
	if (!(tl.g.any | cs->extra)) {
		/* application thread, no budget: more than one ready */
		limit = ctx->cont_ready;
		for (k = 0; k < limit && (c = take_app(ctx, cs)); k++)
			cont_run(ctx, c);
		return k;
	}
	if (RCX__UNLIKELY(cs->extra)) {
		n = finish_signalled(ctx, cs);
		xfd_drain(ctx, cs, n > 0);
	}
	/* those ready now: a callback that keeps re-registering cannot
	 * hold this thread here forever */
	limit = ctx->cont_ready;
	/* callbacks run no continuations: nothing else spends the budget
	 * of this thread meanwhile */
	budget = tl.budget;
	if (RCX__UNLIKELY(budget >= 0 && limit > budget))
		limit = (int)budget;
	for (k = 0; k < limit && (c = take_any(ctx, cs)); k++)
		cont_run(ctx, c);
	if (RCX__UNLIKELY(budget >= 0))
		tl.budget = budget - k;
	return n + k;
}

/* ctx->cont_ready > 0, so the state exists */
int rcx__cont_progress(struct rcx_ctx *ctx)
{
	struct cstate *cs = ctx->cont_state;
	struct creq *cr;
	struct cont *c;
	int k = 0, n;

	/* a completion's, queued (run_now) or made by a callback above */
	if (ctx->cont_now)
		k = run_now(ctx);
	cr = cs->rl_head;
	/*
	 * The common case: one ready, a fast one at the head of the first
	 * ready FIFO, on an application thread that is not in a callback or
	 * a test with a budget (take_app and cont_run for it).
	 */
	if (RCX__LIKELY(!(tl.g.any | cs->extra) && ctx->cont_ready == 1 && cr &&
			(c = cr->head) && c->fast)) {
		rcx__cont_ready_none(ctx);
		fifo_take(cr);
		cont_call(ctx, c);
		fast_finish(ctx, c);
		return k + 1;
	}
	n = k + progress_general(ctx, cs);
	/* not a tail call: callgrind's --toggle-collect counts what runs
	 * inside this function */
	__asm__ volatile("" ::: "memory");
	return n;
}

/*
 * rcx__wait_events, but also woken by the continuation eventfd: a
 * continuation made ready by another thread (or a signal handler) raises
 * no completion event, and a continuation run by the progress below may
 * complete what the caller waits for. Returns the completions handled
 * plus the executions this thread ran or finished meanwhile (rcx_ctx_wait
 * reports both). Lock held; dropped while asleep.
 *
 * Threads of a RCX_THREAD_MULTIPLE context always sleep here, with or
 * without continuations: a thread that takes the completion event may
 * handle what another one sleeps for, and the eventfd is how it wakes
 * that one (the state is made by the first such sleep).
 *
 * block_watched is the part that runs while the thread watches: rings
 * then bump gen and count its finishes in tl.ran.
 */
static int block_watched(struct rcx_ctx *ctx, struct cstate *cs, int timeout_ms)
{
	unsigned int ran = tl.ran, wake = ctx->wake_gen;
	unsigned long gen = cs->gen;
	struct pollfd pfd[2];
	int n, armed, cm;

	/*
	 * What rcx__wait_events does before it sleeps: acknowledge, arm,
	 * progress once more (a completion before the arm raises no event)
	 * and take the connection events. One of those may complete what
	 * the caller waits for (a bind is up once its connection is): then
	 * the caller must look before anybody sleeps.
	 */
	ctx->ops->ack(ctx->dev);
	armed = ctx->ops->arm(ctx->dev) == 0;
	n = rcx__progress(ctx);
	/* the connections when due (what they take comes through fds of
	 * the set otherwise, and wakes the sleep) */
	cm = n <= 0 && rcx__wait_cm_before(ctx, wake);
	if (n > 0)
		wake_sleepers(cs);
	n += (int)(tl.ran - ran);
	/* as rcx__wait_events: what raises no event limits the sleep (0:
	 * none, e.g. channel senders waiting for credit) */
	if (timeout_ms != 0)
		timeout_ms = rcx__sleep_limit(ctx, timeout_ms);
	if (n > 0 || cm > 0 || !armed || cs->gen != gen || timeout_ms == 0 ||
	    ctx->wake_gen != wake)
		return n;
	pfd[0].fd = ctx->ops->event_fd(ctx->dev);
	pfd[0].events = POLLIN;
	pfd[1].fd = cs->efd;
	pfd[1].events = POLLIN;
	if (ctx->mt && !tl.g.progress &&
	    (timeout_ms < 0 || timeout_ms > RCX__CONT_MT_SLEEP_MS))
		timeout_ms = RCX__CONT_MT_SLEEP_MS;
	cs->sleepers++;
	rcx__unlock(ctx);
	poll(pfd, 2, timeout_ms);
	rcx__lock(ctx);
	if (--cs->sleepers == 0) {
		/* the last one out (a signal handler writes without rung) */
		efd_drain(cs->efd);
		cs->rung = false;
	}
	ctx->ops->ack(ctx->dev);
	n = rcx__wait_woken(ctx, rcx__progress(ctx));
	/*
	 * Sleepers share the completion channel: the one that acked the
	 * event may have completed what another waits for, and that one
	 * would sleep on. Whoever handled completions wakes the others.
	 */
	if (n > 0)
		wake_sleepers(cs);
	return n + (int)(tl.ran - ran);
}

int rcx__cont_block(struct rcx_ctx *ctx, int timeout_ms)
{
	struct cstate *cs = ctx->cont_state;
	int n;

	if (!cs && ctx->mt && rcx__cont_state(ctx, &cs))
		cs = NULL;
	if (!cs)
		return rcx__wait_events(
			ctx, ctx->mt && (timeout_ms < 0 ||
					 timeout_ms > RCX__CONT_MT_SLEEP_MS)
				     ? RCX__CONT_MT_SLEEP_MS
				     : timeout_ms);
	if (tl.leftover) {
		/* the last test on a continuation request stopped at its
		 * max_poll: test again rather than sleep */
		tl.leftover = false;
		return 0;
	}
	watch_begin(cs);
	n = block_watched(ctx, cs, timeout_ms);
	watch_end(cs);
	return n;
}

/* ---- continuation requests */

static void set_budget(long budget)
{
	tl.budget = budget;
	tl.g.budgeted = budget >= 0;
}

/* Executions queued on cr that are not taken yet. */
static int creq_queued(const struct creq *cr)
{
	const struct cont *c;
	int n = 0;

	if (cr->signal_safe && !cr->poll_only)
		return cr->nsig;
	for (c = cr->head; c; c = c->next)
		n++;
	return n;
}

/* Up to the budget of this thread's test: executions of cr (those queued
 * now: a callback that keeps re-registering cannot hold it here). */
static void creq_run_own(struct rcx_ctx *ctx, struct creq *cr)
{
	int limit = creq_queued(cr);
	struct cont *c;

	while (limit-- > 0 && tl.budget != 0 &&
	       cr->req->state == RCX__REQ_ACTIVE) {
		if (cr->signal_safe && !cr->poll_only)
			c = sig_pick(ctx, cr);
		else
			c = fifo_pop(ctx, cr);
		if (!c)
			break;
		if (tl.budget > 0)
			tl.budget--;
		cont_run(ctx, c);
	}
}

/*
 * Test/wait on a continuation request: run its ready continuations and
 * progress the context, at most max_poll executions in all (a progress
 * call below uses what is left of the budget).
 */
static void creq_poll(struct rcx_req *r)
{
	struct rcx_ctx *ctx = r->ctx;
	struct creq *cr = creq_of(r);
	long saved = tl.budget;

	if (tl.g.in_cb) {
		rcx__progress(ctx); /* runs nothing here */
		return;
	}
	if (cr->max_poll >= 0)
		set_budget(cr->max_poll);
	xfd_drain(ctx, ctx->cont_state,
		  finish_signalled(ctx, ctx->cont_state) > 0);
	creq_run_own(ctx, cr);
	rcx__progress(ctx);
	creq_run_own(ctx, cr);
	set_budget(saved);
	if ((cr->head || cr->nsig) && r->state == RCX__REQ_ACTIVE)
		tl.leftover = true;
}

/* rcx_req_free of an inactive one (lock held): idle persistent
 * continuations registered with it disappear. */
static void creq_release(struct rcx_req *r)
{
	struct cstate *cs = r->ctx->cont_state;
	struct creq *cr = creq_of(r);

	while (cr->conts)
		cont_dispose(r->ctx, cr->conts);
	if (cr->on_rl) {
		struct creq **pp = &cs->rl_head, *prev = NULL;

		while (*pp != cr) {
			prev = *pp;
			pp = &(*pp)->rl_next;
		}
		*pp = cr->rl_next;
		if (cs->rl_tail == cr)
			cs->rl_tail = prev;
	}
	if (cr->prev)
		cr->prev->next = cr->next;
	else
		cs->crs = cr->next;
	if (cr->next)
		cr->next->prev = cr->prev;
	free(cr);
	r->obj = NULL;
}

const struct rcx__req_ops rcx__creq_ops = {
	.release = creq_release,
	.poll = creq_poll,
};

/* ---- the progress thread (mpi_continue_thread = "any") */

static void *progress_main(void *arg)
{
	struct rcx_ctx *ctx = arg;
	struct cstate *cs = ctx->cont_state;
	char cpus[RCX__CPULIST_LEN];
	sigset_t all;
	bool pinned;

	/* signal handlers never run here: rcx_cont_progress_signal is then
	 * always on an application thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	tl.g.progress = true;
	/*
	 * Near the device (its NUMA node's cpus), or RCX_PROGRESS_CPUS; left
	 * unbound when the device has no locality (rxe) or binding fails.
	 */
	pinned = !rcx__topo_bind_near(ctx->info.name, ctx->cfg.progress_cpus,
				      cpus, sizeof(cpus)) &&
		 cpus[0];
	rcx__lock(ctx);
	cs->pt_pinned = pinned;
	memcpy(cs->pt_cpus, cpus, sizeof(cpus));
	while (!cs->pt_stop) {
		if (rcx__progress(ctx) > 0)
			wake_sleepers(cs); /* see rcx__cont_block */
		else if (!cs->pt_stop)
			rcx__cont_block(ctx, -1);
		/* let application threads in between rounds */
		rcx__unlock(ctx);
		rcx__lock(ctx);
	}
	rcx__unlock(ctx);
	return NULL;
}

int rcx__cont_thread_start(struct rcx_ctx *ctx, struct cstate *cs)
{
	int ret;

	if (cs->pt_running)
		return 0;
	ret = -pthread_create(&cs->pt, NULL, progress_main, ctx);
	if (!ret)
		cs->pt_running = true;
	return ret;
}

static void progress_stop(struct rcx_ctx *ctx, struct cstate *cs)
{
	if (!cs->pt_running)
		return;
	rcx__lock(ctx);
	cs->pt_stop = true;
	efd_write(cs->efd);
	cs->rung = true;
	rcx__unlock(ctx);
	pthread_join(cs->pt, NULL);
	cs->pt_running = false;
}

/* ---- context state */

int rcx__cont_state(struct rcx_ctx *ctx, struct cstate **out)
{
	struct cstate *cs = ctx->cont_state;

	if (!cs) {
		cs = calloc(1, sizeof(*cs));
		if (!cs)
			return -ENOMEM;
		cs->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (cs->efd < 0) {
			int ret = -errno;

			free(cs);
			return ret;
		}
		cs->xfd = -1;
		atomic_init(&cs->sig_ready, NULL);
		atomic_init(&cs->sig_done, NULL);
		ctx->cont_state = cs;
	}
	*out = cs;
	return 0;
}

static void cancel_status(struct rcx_status *st)
{
	st->source = RCX_ANY_SOURCE;
	st->tag = RCX_ANY_TAG;
	st->error = -ECANCELED;
	st->slot = -1;
	st->count = 0;
}

/*
 * Teardown: an open round completes now, its waiting requests with
 * -ECANCELED; the continuation leaves all its requests (so it cannot be
 * re-armed) and runs once.
 */
static void cont_cancel(struct rcx_ctx *ctx, struct cont *c)
{
	int i;

	for (i = 0; i < c->n; i++) {
		struct rcx__cont *l = &c->links[i];

		if (l->state == L_WAIT) {
			cancel_status(&l->st);
			l->state = L_DONE;
			c->nwait--;
			c->ndone++;
		}
		if (l->req) {
			/* an active one rcx owns is freed when it completes */
			if (!l->req->persistent)
				l->req->user_freed = 1;
			l->req->cont = NULL;
			l->req = NULL;
		}
	}
	c->persistent = 0;
	rcx__cont_count(c);
	cont_check(ctx, c);
}

/* Teardown: run every queued execution here, whatever its request's
 * poll_only or thread. */
static bool drain_all(struct rcx_ctx *ctx, struct cstate *cs)
{
	struct creq *cr;
	struct cont *c;
	bool ran = false;

	if (ctx->cont_now && run_now(ctx))
		ran = true;
	finish_signalled(ctx, cs);
	for (cr = cs->crs; cr; cr = cr->next) {
		while ((c = fifo_pop(ctx, cr))) {
			cont_run(ctx, c);
			ran = true;
		}
	}
	while ((c = sig_pick(ctx, NULL))) {
		cont_run(ctx, c);
		ran = true;
	}
	return ran;
}

/* Teardown: a fast continuation still waiting for its request. */
static void cancel_fast(struct rcx_req *r, void *arg)
{
	bool *again = arg;

	if (r->cont && r->cont->c->fast) {
		cont_cancel(r->ctx, r->cont->c);
		*again = true;
	}
}

void rcx__cont_fini(struct rcx_ctx *ctx)
{
	struct cstate *cs = ctx->cont_state;
	struct creq *cr, *crnext;
	struct cont *c, *cnext;
	bool again;

	if (!cs)
		return;
	progress_stop(ctx, cs);
	rcx__lock(ctx);
	cs->closing = true;
	do {
		again = false;
		for (cr = cs->crs; cr; cr = cr->next) {
			for (c = cr->conts; c; c = cnext) {
				cnext = c->cr_next;
				if (c->queued) {
					again = true;
				} else if (c->counted || c->ndone) {
					cont_cancel(ctx, c);
					again = true;
				} else {
					cont_dispose(ctx, c);
				}
			}
		}
		rcx__req_each(ctx, cancel_fast, &again);
		/* a cancel may complete a continuation request and queue the
		 * continuation attached to it: go round until none is left */
		if (drain_all(ctx, cs))
			again = true;
	} while (again);
	rcx__unlock(ctx);
	for (cr = cs->crs; cr; cr = crnext) {
		crnext = cr->next;
		cr->req->obj = NULL;
		free(cr);
	}
	while ((c = cs->free1)) {
		cs->free1 = c->next;
		free(c);
	}
	close(cs->efd);
	if (cs->xfd >= 0)
		close(cs->xfd);
	free(cs);
	ctx->cont_state = NULL;
	rcx__cont_ready_none(ctx);
}

RCX_API int rcx_cont_event_fd(struct rcx_ctx *ctx)
{
	struct cstate *cs;
	int ret;

	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	rcx__lock(ctx);
	ret = rcx__cont_state(ctx, &cs);
	if (!ret && cs->xfd < 0) {
		cs->xfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		cs->extra |= cs->xfd >= 0;
		cs->notify |= cs->xfd >= 0;
		if (cs->xfd < 0)
			ret = -errno;
		else if (ctx->cont_ready || ctx->cont_now)
			cs_ring(ctx, cs, true); /* queued before: say so */
	}
	if (!ret)
		ret = cs->xfd;
	rcx__unlock(ctx);
	return ret;
}

/*
 * A registration whose requests have all completed: close its round, then
 * run it inside the call (RCX_CONT_IMMEDIATE, unless the continuation
 * request says to queue it or this thread is inside a callback) or queue
 * it.
 */
void rcx__cont_closed(struct rcx_ctx *ctx, struct cont *c, bool immediate)
{
	struct creq *cr = c->cr;

	cont_close(c);
	if (immediate && !cr->enqueue_complete && !cr->poll_only && !tl.g.in_cb)
		cont_run(ctx, c);
	else
		cont_enqueue(ctx, c);
}

/*
 * Async-signal-safe: atomics, the eventfd write and the callbacks only.
 * What it takes from the stack it owns; it hands each back on sig_done.
 */
RCX_API int rcx_cont_progress_signal(struct rcx_ctx *ctx)
{
	struct cstate *cs;
	struct cont *c, *next;
	int n = 0;

	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	cs = ctx->cont_state;
	if (!cs || tl.g.in_cb || tl.g.progress)
		return 0;
	for (c = stack_take(&cs->sig_ready); c; c = next) {
		next = c->next;
		tl.g.in_cb++;
		c->cb(c->statuses, c->cb_data);
		tl.g.in_cb--;
		stack_push(&cs->sig_done, c);
		n++;
	}
	if (n) {
		/* wake a waiter or an epoll loop to finish them */
		efd_write(cs->efd);
		if (cs->xfd >= 0)
			efd_write(cs->xfd);
	}
	return n;
}

/* ---- what the core drives (lib/features.c) */

/* not inside a connection event's handler: a callback may block, and
 * connection events are off until the handler returns */
static int cont_feat_progress(struct rcx_ctx *ctx, int *ran)
{
	int k;

	if (ctx->cont_ready && !ctx->in_cm) {
		k = rcx__cont_progress(ctx);
		if (ran)
			*ran += k;
	}
	return 0;
}

const struct rcx__feat_ops rcx__cont_feat = {
	.name = "cont",
	.progress = cont_feat_progress,
	.block = rcx__cont_block,
	.fini = rcx__cont_fini,
};

const struct rcx__req_hooks rcx__cont_req_hooks = {
	.complete = rcx__cont_complete,
	.start = rcx__cont_start,
	.detach = rcx__cont_detach,
	.run_now = run_now,
};
