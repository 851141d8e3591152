/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_CONT_INT_H
#define RCX_CONT_INT_H

/*
 * Continuation internals shared by cont.c (rounds, queues, dispatch,
 * waits, the progress thread, teardown; its head comment describes them)
 * and cont_api.c (continuation requests' creation, registration).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <rcx/cont.h>
#include "lib/core/core.h"
#include "lib/cont/cont.h"

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
	 * executions progress takes from its FIFO (cr->plain), in a pooled
	 * object (the pool is bounded: past it, the general path). Its only
	 * round closes when the request completes; completion and run take
	 * the short paths (fast_complete, fast_finish), every other path is
	 * the general one.
	 */
	uint8_t fast;
	uint8_t pooled; /* back to free1 when done, not freed */
	/* fast: where the status goes (statuses, or the unused links[0].st
	 * when ignored: the copy is unconditional) */
	struct rcx_status *dst;
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
	struct cont *head, *tail; /* ready FIFO (tail stale when empty) */
	/* signal-safe (not poll-only): executions on the signal stacks,
	 * queued or run by a handler, not yet finished */
	int nsig;
	int pending;
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
	int npooled; /* pooled continuations, free or in use */
	/* bumps when continuations become ready or run while a thread is in
	 * rcx__cont_block (a watcher): the only reader */
	unsigned long gen;
	int efd;      /* wakes threads asleep in rcx__cont_block */
	int watchers; /* threads in rcx__cont_block */
	int sleepers; /* of those, asleep in poll */
	bool rung;    /* efd written, not drained */
	/* a watcher or the exported fd exists: a ring has something to do
	 * (otherwise it costs one test) */
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

extern const struct rcx__req_ops rcx__creq_ops;

static inline bool rcx__is_creq(const struct rcx_req *r)
{
	return r->ops == &rcx__creq_ops;
}

static inline struct creq *creq_of(const struct rcx_req *r)
{
	return r->obj;
}

/* The context's state, made on first use (lock held). */
int rcx__cont_state(struct rcx_ctx *ctx, struct cstate **out);
/* The progress thread, unless it runs already (lock held). */
int rcx__cont_thread_start(struct rcx_ctx *ctx, struct cstate *cs);
/* A zeroed continuation of n links (pooled when n <= 1), or NULL. */
struct cont *rcx__cont_alloc(struct cstate *cs, int n);
/* An open round starts: the continuation request waits for it. */
void rcx__cont_count(struct cont *c);
void rcx__cont_closed(struct rcx_ctx *ctx, struct cont *c, bool immediate);

/* what lib/features.c hooks to the core (cont.c: rcx__cont_feat) */
/* r completed and r->cont is set */
void rcx__cont_complete(struct rcx_req *r);
/* r has r->cont set and was started, now active: re-arm (rcx_start[all]) */
void rcx__cont_start(struct rcx_req *r);
/* r has r->cont set and goes back to the pool: detach (rcx__req_put) */
void rcx__cont_detach(struct rcx_req *r);
/*
 * rcx__wait_events for req.c's waits: also woken when continuations become
 * ready or run without a completion event (another thread, a handler)
 */
int rcx__cont_block(struct rcx_ctx *ctx, int timeout_ms);
/* run ready continuations; called by progress when ctx->cont_ready */
int rcx__cont_progress(struct rcx_ctx *ctx);
/* context teardown: pending continuations run with -ECANCELED */
void rcx__cont_fini(struct rcx_ctx *ctx);

/* ready continuations: progress calls them while there are any */
static inline void rcx__cont_ready_inc(struct rcx_ctx *ctx)
{
	ctx->cont_ready++;
	rcx__feat_work(ctx, RCX__FEAT_CONT, true);
}

static inline void rcx__cont_ready_dec(struct rcx_ctx *ctx)
{
	if (--ctx->cont_ready == 0)
		ctx->feat_work &= ~(1u << RCX__FEAT_CONT);
}

static inline void rcx__cont_ready_none(struct rcx_ctx *ctx)
{
	ctx->cont_ready = 0;
	ctx->feat_work &= ~(1u << RCX__FEAT_CONT);
}

#endif
