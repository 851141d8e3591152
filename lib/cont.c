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
#include "core.h"

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

enum link_state {
	L_WAIT, /* attached, its request has not completed this round */
	L_DONE, /* completed this round (req may be released already) */
	L_GONE, /* left: freed, released or moved; not part of rounds */
};

struct cont;
struct creq;

/* One request's attachment to a continuation (r->cont). */
struct rcx__cont {
	struct cont *c;
	struct rcx_req *req;  /* NULL once released, freed or moved */
	struct rcx_status st; /* its status in the current round */
	uint32_t idx;	      /* its entry in the statuses */
	uint8_t state;	      /* enum link_state */
};

struct cont {
	struct cont *next; /* ready FIFO, signal stacks, free list */
	struct cont *cr_prev, *cr_next; /* continuations of its request */
	struct creq *cr;
	rcx_continue_cb *cb;
	void *cb_data;
	struct rcx_status *statuses;
	int n;
	int nwait; /* attachments in L_WAIT */
	int ndone; /* attachments in L_DONE */
	uint8_t persistent;
	uint8_t counted; /* the open round is counted in cr->pending */
	uint8_t queued;	 /* an execution is queued or running */
	/*
	 * The dominant case, decided at registration: one non-persistent
	 * request, not yet complete, with a continuation request whose
	 * executions progress takes from its FIFO (cr->plain). Its only
	 * round closes when the request completes; completion and run take
	 * the short paths (fast_complete, fast_finish), every other path is
	 * the general one.
	 */
	uint8_t fast;
	uint8_t pooled; /* back to free1 when done, not freed */
	struct rcx__cont links[];
};

/* A continuation request's state (r->obj). */
struct creq {
	struct rcx_req *req;
	struct creq *prev, *next; /* the context's continuation requests */
	struct creq *rl_next;	  /* the context's ready list */
	/* registered continuations but the fast ones (teardown finds those
	 * through their requests, a queued one on the FIFO) */
	struct cont *conts;
	struct cont *head, **tailp; /* ready FIFO */
	int nready;		    /* queued executions not yet taken */
	int pending;
	size_t nrun; /* executions finished since it was started */
	long max_poll;
	bool on_rl;
	bool poll_only;
	bool any_thread;
	bool enqueue_complete;
	bool signal_safe;
	bool plain; /* neither poll-only nor signal-safe */
};

/* The context's continuation state (ctx->cont_state). */
struct cstate {
	struct creq *crs;
	struct creq *rl_head, *rl_tail;
	/* ready continuations of async-signal-safe requests, and the ones a
	 * signal handler has run and left for ordinary progress to finish */
	_Atomic(struct cont *) sig_ready;
	_Atomic(struct cont *) sig_done;
	struct cont *free1;
	int npooled;	   /* pooled continuations, free or in use */
	unsigned long gen; /* bumps when continuations become ready or run */
	int efd;	   /* wakes threads asleep in rcx__cont_block */
	int sleepers;
	bool rung; /* efd written, not drained */
	/* somebody sleeps or the exported fd exists: a ring has more to do
	 * than bump gen */
	bool notify;
	/*
	 * rcx_cont_event_fd (-1 until asked for). While it is signalled,
	 * ctx->cont_ready holds one extra count so that the next progress of
	 * an application thread drains it.
	 */
	int xfd;
	bool xrung;
	/* the exported fd or an async-signal-safe request exists: progress
	 * has more to look at than the ready queues */
	bool extra;
	bool closing;
	pthread_t pt;
	bool pt_running;
	bool pt_stop;
	/* whether the progress thread is bound, and where (a cpulist) */
	bool pt_pinned;
	char pt_cpus[RCX__CPULIST_LEN];
};

/*
 * Per thread: inside a callback (continuation execution is never
 * re-entered), whether this is a progress thread, whether a test running
 * on this thread set a continuation budget and the budget (-1: none),
 * whether the last test on a continuation request left ready ones behind
 * (the wait must not sleep), and how many executions its progress has run
 * or finished (what rcx__cont_block reports). The first three share a
 * word that is 0 in the common case: progress reads it once. Initial-exec:
 * the signal entry reads it without allocating.
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

CONT_HOT void cs_ring(struct rcx_ctx *ctx, struct cstate *cs, bool ready);
static int cs_get(struct rcx_ctx *ctx, struct cstate **out);

static struct creq *creq_of(const struct rcx_req *r)
{
	return r->obj;
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
	r->status.count = 0;
	cr->nrun = 0;
	if (r->cont)
		rcx__cont_start(r); /* re-arm a continuation attached to it */
}

CONT_HOT void creq_pending_dec(struct creq *cr)
{
	struct rcx_req *r = cr->req;

	if (--cr->pending)
		return;
	/* rcx__req_complete(r, 0) for this kind: no done hook, and never
	 * freed while active (it is persistent) */
	r->status.count = cr->nrun;
	r->status.error = 0;
	r->state = RCX__REQ_DONE;
	if (r->cont)
		rcx__cont_complete(r);
}

/* ---- continuation objects */

static struct cont *cont_alloc(struct cstate *cs, int n)
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
static void cont_count(struct cont *c)
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
	*cr->tailp = c;
	cr->tailp = &c->next;
	cr->nready++;
}

/* cr (not poll-only) has an execution progress may run: count it, and
 * put cr on the context's ready list. */
CONT_HOT void rl_ready(struct rcx_ctx *ctx, struct cstate *cs, struct creq *cr)
{
	ctx->cont_ready++;
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
		cr->nready++;
		stack_push(&cs->sig_ready, c);
		ctx->cont_ready++;
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
	cr->nrun++;
	if (!c->nwait && !c->ndone)
		cont_release(ctx, c); /* every link is gone: no request */
	else
		cont_check(ctx, c); /* a next round may be complete already */
	creq_pending_dec(cr);
	cs_ring(ctx, cs, false);
}

/*
 * A fast continuation has run (lock held): cont_finish knowing that its
 * request is gone and its round was its only one.
 */
CONT_HOT void fast_finish(struct rcx_ctx *ctx, struct cont *c)
{
	struct cstate *cs = ctx->cont_state;
	struct creq *cr = c->cr;

	cr->nrun++;
	cont_free(cs, c);
	creq_pending_dec(cr);
	cs_ring(ctx, cs, false);
}

/* cont_finish out of line: the fast path keeps fewer registers. */
static __attribute__((noinline)) void finish_general(struct rcx_ctx *ctx,
						     struct cont *c)
{
	cont_finish(ctx, c);
}

/*
 * Run a taken execution: the lock is released around the callback (it may
 * call rcx); the thread is marked as inside a callback.
 */
CONT_HOT void cont_run(struct rcx_ctx *ctx, struct cont *c)
{
	tl.g.in_cb++;
	rcx__unlock(ctx);
	c->cb(c->statuses, c->cb_data);
	rcx__lock(ctx);
	tl.g.in_cb--;
	if (RCX__LIKELY(c->fast))
		fast_finish(ctx, c);
	else
		finish_general(ctx, c);
}

/* ---- taking ready executions (lock held) */

CONT_HOT bool may_run(const struct creq *cr)
{
	return !tl.g.progress || cr->any_thread;
}

/* The first of cr's non-empty FIFO (the ready counts are the caller's). */
CONT_HOT struct cont *fifo_take(struct creq *cr)
{
	struct cont *c = cr->head;

	cr->head = c->next;
	if (!cr->head)
		cr->tailp = &cr->head;
	return c;
}

CONT_HOT struct cont *fifo_pop(struct rcx_ctx *ctx, struct creq *cr)
{
	if (!cr->head)
		return NULL;
	cr->nready--;
	if (!cr->poll_only)
		ctx->cont_ready--;
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
		got->cr->nready--;
		ctx->cont_ready--;
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
			cr->nready--;
			ctx->cont_ready--;
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
		c->cr->nready--;
		ctx->cont_ready--;
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

static void cs_notify(struct rcx_ctx *ctx, struct cstate *cs, bool ready)
{
	wake_sleepers(cs);
	if (ready && cs->xfd >= 0 && !cs->xrung) {
		efd_write(cs->xfd);
		cs->xrung = true;
		ctx->cont_ready++;
	}
}

/*
 * Something changed for waiters: bump gen (a thread about to sleep sees
 * it), wake the sleepers, and when a continuation became ready signal the
 * exported fd. No system call unless somebody sleeps or the fd was asked
 * for: a single-threaded context makes none.
 */
CONT_HOT void cs_ring(struct rcx_ctx *ctx, struct cstate *cs, bool ready)
{
	cs->gen++;
	if (RCX__UNLIKELY(cs->notify))
		cs_notify(ctx, cs, ready);
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
		ctx->cont_ready--;
	}
}

/* ---- core hooks */

/*
 * A fast continuation's request completed: cont_check's close and enqueue
 * for its one link, the request released (rcx owns it). From here on the
 * continuation is only on its FIFO, reached by no request and on no list:
 * nothing reads its round state (links, nwait, counted, queued) again,
 * so it is left as it was; fast_finish frees it.
 */
CONT_HOT void fast_complete(struct rcx_ctx *ctx, struct rcx_req *r,
			    struct cont *c)
{
	struct cstate *cs = ctx->cont_state;
	struct creq *cr = c->cr;

	if (c->statuses)
		*c->statuses = r->status;
	r->cont = NULL;
	fifo_push(cr, c);
	rl_ready(ctx, cs, cr);
	cs_ring(ctx, cs, true);
	rcx__req_release(r); /* last: fewer registers to keep over the call */
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
	cont_count(c);
	cont_check(r->ctx, c);
}

void rcx__cont_complete(struct rcx_req *r)
{
	struct cont *c = r->cont->c;

	if (RCX__LIKELY(c->fast)) {
		fast_complete(r->ctx, r, c);
		return;
	}
	complete_general(r);
	/* not a tail call: callgrind's --toggle-collect (perftest/compare)
	 * counts what runs inside this function */
	__asm__ volatile("" ::: "memory");
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
	cont_count(c);
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
		tl.ran += (unsigned int)k;
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
	n += k;
	tl.ran += (unsigned int)n;
	return n;
}

/* ctx->cont_ready > 0, so the state exists */
int rcx__cont_progress(struct rcx_ctx *ctx)
{
	struct cstate *cs = ctx->cont_state;
	struct cont *c;
	int n;

	if (RCX__LIKELY(!(tl.g.any | cs->extra) && ctx->cont_ready == 1)) {
		/* the common case: one ready, on an application thread that
		 * is not in a callback or a test with a budget */
		c = take_app(ctx, cs);
		if (RCX__UNLIKELY(!c))
			return 0;
		cont_run(ctx, c);
		tl.ran++;
		return 1;
	}
	n = progress_general(ctx, cs);
	/* not a tail call (see rcx__cont_complete) */
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
 */
int rcx__cont_block(struct rcx_ctx *ctx, int timeout_ms)
{
	struct cstate *cs = ctx->cont_state;
	unsigned int ran = tl.ran;
	struct pollfd pfd[2];
	unsigned long gen;
	int n, armed, cm;

	if (!cs && ctx->mt && cs_get(ctx, &cs))
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
	gen = cs->gen;
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
	cm = rcx__cm_progress(ctx);
	if (n > 0)
		wake_sleepers(cs);
	n += (int)(tl.ran - ran);
	if (n > 0 || cm > 0 || !armed || cs->gen != gen || timeout_ms == 0 ||
	    ctx->chan_deferred) /* as rcx__wait_events: channel senders
				 * waiting for credit get no event */
		return n;
	pfd[0].fd = ctx->ops->event_fd(ctx->dev);
	pfd[0].events = POLLIN;
	pfd[1].fd = cs->efd;
	pfd[1].events = POLLIN;
	if (ctx->mt && !tl.g.progress &&
	    (timeout_ms < 0 || timeout_ms > RCX__CONT_MT_SLEEP_MS))
		timeout_ms = RCX__CONT_MT_SLEEP_MS;
	cs->sleepers++;
	cs->notify = true;
	rcx__unlock(ctx);
	poll(pfd, 2, timeout_ms);
	rcx__lock(ctx);
	if (--cs->sleepers == 0) {
		/* the last one out (a signal handler writes without rung) */
		efd_drain(cs->efd);
		cs->rung = false;
		cs->notify = cs->xfd >= 0;
	}
	ctx->ops->ack(ctx->dev);
	rcx__cm_progress(ctx);
	n = rcx__progress(ctx);
	/*
	 * Sleepers share the completion channel: the one that acked the
	 * event may have completed what another waits for, and that one
	 * would sleep on. Whoever handled completions wakes the others.
	 */
	if (n > 0)
		wake_sleepers(cs);
	return n + (int)(tl.ran - ran);
}

/* ---- continuation requests */

static void set_budget(long budget)
{
	tl.budget = budget;
	tl.g.budgeted = budget >= 0;
}

/* Up to the budget of this thread's test: executions of cr. */
static void creq_run_own(struct rcx_ctx *ctx, struct creq *cr)
{
	int limit = cr->nready;
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
	if (cr->nready && r->state == RCX__REQ_ACTIVE)
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

static const struct rcx__req_ops creq_ops = {
	.release = creq_release,
	.poll = creq_poll,
};

static bool is_creq(const struct rcx_req *r)
{
	return r->ops == &creq_ops;
}

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

static int cs_get(struct rcx_ctx *ctx, struct cstate **out)
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
	cont_count(c);
	cont_check(ctx, c);
}

/* Teardown: run every queued execution here, whatever its request's
 * poll_only or thread. */
static bool drain_all(struct rcx_ctx *ctx, struct cstate *cs)
{
	struct creq *cr;
	struct cont *c;
	bool ran = false;

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
	ctx->cont_ready = 0;
}

/* ---- public calls */

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
	cr->tailp = &cr->head;
	ret = parse_info(info, cr);
	if (!ret && cr->any_thread && !ctx->mt)
		ret = -EINVAL; /* a progress thread needs THREAD_MULTIPLE */
	if (ret) {
		free(cr);
		return ret;
	}
	rcx__lock(ctx);
	ret = cs_get(ctx, &cs);
	if (!ret && cs->closing)
		ret = -ECANCELED;
	if (ret)
		goto err;
	r = rcx__req_get(ctx, RCX__REQ_INTERNAL, &creq_ops);
	if (!r) {
		ret = -ENOMEM;
		goto err;
	}
	if (cr->any_thread && !cs->pt_running) {
		ret = -pthread_create(&cs->pt, NULL, progress_main, ctx);
		if (ret) {
			r->ops = NULL;
			rcx__req_put(r);
			goto err;
		}
		cs->pt_running = true;
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
		if (is_creq(r) && makes_cycle(r, cont_req))
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
	    !rcx__req_live(cont_req) || !is_creq(cont_req))
		return -EINVAL;
	ctx = cont_req->ctx;
	cr = creq_of(cont_req);
	rcx__lock(ctx);
	cs = ctx->cont_state;
	ret = cs->closing ? -ECANCELED : check_reqs(ctx, n, reqs, cont_req);
	if (ret)
		goto out;
	c = cont_alloc(cs, n);
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
	cont_count(c);
	c->fast =
		n == 1 && c->nwait && !c->links[0].req->persistent && cr->plain;
	if (!c->fast) {
		c->cr_next = cr->conts;
		if (cr->conts)
			cr->conts->cr_prev = c;
		cr->conts = c;
	}
	/* every link is waiting or done here: none has left yet */
	if (!c->nwait) {
		cont_close(c);
		if ((flags & RCX_CONT_IMMEDIATE) && !cr->enqueue_complete &&
		    !cr->poll_only && !tl.g.in_cb)
			cont_run(ctx, c); /* inside the call */
		else
			cont_enqueue(ctx, c);
	}
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

RCX_API int rcx_cont_event_fd(struct rcx_ctx *ctx)
{
	struct cstate *cs;
	int ret;

	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	rcx__lock(ctx);
	ret = cs_get(ctx, &cs);
	if (!ret && cs->xfd < 0) {
		cs->xfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		cs->extra |= cs->xfd >= 0;
		cs->notify |= cs->xfd >= 0;
		if (cs->xfd < 0)
			ret = -errno;
		else if (ctx->cont_ready)
			cs_ring(ctx, cs, true); /* queued before: say so */
	}
	if (!ret)
		ret = cs->xfd;
	rcx__unlock(ctx);
	return ret;
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
