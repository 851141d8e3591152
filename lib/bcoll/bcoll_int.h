/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_BCOLL_INT_H
#define RCX_BCOLL_INT_H

/*
 * Bound-collective internals shared by bcoll_bind.c (the init calls, the
 * schedules, binding and free) and bcoll.c (start, the steps as their
 * channels complete, the reductions, failure).
 */
#include <stdbool.h>
#include <stdint.h>
#include <rcx/rcx.h>
#include "lib/core/core.h"
#include "lib/core/dtype.h"
#include "lib/bcoll/bcoll.h"

enum bc_kind {
	BC_BARRIER = 1,
	BC_BCAST,
	BC_ALLREDUCE,
	BC_ALLGATHER,
	BC_REDUCE,
	BC_ALLTOALL,
};

/* schedules (RCX_BCOLL_SCHEDULE) */
enum bc_sched {
	BC_SCHED_AUTO,
	BC_SCHED_TREE,	    /* binomial trees */
	BC_SCHED_RDOUBLING, /* recursive doubling, dissemination */
	BC_SCHED_RING,	    /* neighbours (alltoall: shifted pairs) */
};

/* slots of a channel where they turn (nslots_of): a power of two; where
 * the provider's write wakes its reader (a credit is a store: shm) */
#define BC_NSLOTS	4
#define BC_NSLOTS_WAKES 16

/* most steps of a schedule: log2 of the largest group plus the fold, or
 * a ring's 2 (n - 1) */
#define BC_MAX_STEPS 64

/* What an init call describes (the obj of its request). */
struct bc_desc {
	int kind;
	const void *sendbuf; /* allreduce, allgather; RCX_IN_PLACE */
	void *buf;	     /* bcast: the buffer; others: recvbuf */
	size_t count;	     /* allgather: elements of each rank */
	int dtype, op, root;
	struct rcx_group *g; /* held */
};

/* a step of a schedule: whom to write and whom to wait for */
struct bc_plan {
	int to, from;	   /* ranks, -1: none */
	int tag;	   /* of both binds */
	void *sbuf;	   /* what the send writes */
	void *rbuf;	   /* the receiving slot; NULL: the next scratch slot */
	size_t slen, rlen; /* bytes sent, received; 0: the collective's */
	size_t off, cnt;   /* reduce: into these elements; cnt 0: all */
	bool reduce, wait_send;
};

/* a step's progress within one start */
enum bc_flag {
	BC_POSTED = 1 << 0,
	BC_SENT = 1 << 1,
	BC_RECVD = 1 << 2,
	/* a lazy send not posted when the rest was done: this start waits
	 * for its completion as for any send's */
	BC_HOLD = 1 << 3,
};

struct bcoll;

/*
 * One step: post the send (if any), then wait for the receive (if any)
 * and, when it waits for it, for the send's completion; then reduce the
 * received slot into the result (when reduce) and go on.
 */
struct bc_step {
	struct bcoll *b;
	int idx;	      /* of b->steps */
	struct rcx_req *send; /* a bound channel, or NULL */
	struct rcx_req *recv; /* a bound channel, started with the collective */
	const void *slot;     /* where the receive lands: its first slot */
	size_t slen;	      /* bytes from one slot to the next */
	/* slots that turn (nslots): what the send writes is copied into its
	 * slot of stage first, from sbuf (the result buffer is the user's) */
	const void *sbuf;
	uint8_t *stage;
	size_t stlen;
	uint8_t *acc; /* the elements of the result it reduces (cnt) */
	size_t cnt;
	/* the fold of the type and operation, chosen at bind where acc and
	 * every slot are aligned for the type; NULL: rcx__dtype_fold (it
	 * bounces) */
	rcx__fold_fn *fold;
	bool reduce; /* reduce the slot into the result */
	/* the flags the step waits for: BC_RECVD, and BC_SENT where it
	 * waits for its send (bc_plan.wait_send) */
	uint8_t need;
	/* the send reads a slot of the collective's own that turns (a
	 * stage, the barrier's token): a start does not wait for its
	 * completion; the next start's post of the step does */
	bool lazy;
	uint8_t flags; /* enum bc_flag */
};

struct bcoll {
	struct rcx_req *req; /* the user's handle */
	struct rcx_ctx *ctx;
	struct rcx_group *g; /* held */
	struct bcoll *next;  /* ctx->bcolls */
	struct bc_desc d;
	size_t len; /* bytes of the data (allgather: a rank's block) */
	/* barrier: what its steps send, the start count, in each slot */
	uint64_t token[BC_NSLOTS_WAKES];
	/* slots of each step's channels, used in turn (bcoll_bind.c) */
	int nslots;
	uint8_t *scratch; /* receiving slots of the steps that reduce, and
			     the stages of the sends */
	uint8_t *copy;	  /* alltoall in place: what the sends read */
	int sched;	  /* enum bc_sched, chosen */
	/*
	 * The ranks the schedule runs over: the group's, or after
	 * rcx_group_validate its survivors, renumbered 0..n-1 (live[v]:
	 * the group rank of v, NULL when none failed); root among them
	 */
	int n, r, root;
	int *live;
	int nsteps, cur;
	int nch;   /* channels (every step's send and receive) */
	int nwait; /* of them, those a start waits for (not lazy) */
	int left;  /* channel completions this start still waits for */
	/* the steps whose lazy send this start made and that was still
	 * out after its start (bit i: step i; BC_MAX_STEPS bits), less
	 * those whose completion was seen */
	uint64_t lazy_out;
	int error; /* failed: every later start returns it */
	bool busy; /* inside advance */
	uint64_t starts;
	size_t si;	     /* this start's slot (bc_slot_idx) */
	struct rcx_req **ch; /* [nch] */
	struct bc_step steps[];
};

/* this start's slot (nslots 1 or a power of two): start k takes slot
 * k - 1 mod nslots, as its channels do (start k of a channel uses slot
 * k - 1 mod slots at both ends); set by the start (b->si) */
static inline size_t bc_slot_idx(const struct bcoll *b)
{
	return b->si;
}

/* where this start's receive of step s landed */
static inline const uint8_t *bc_slot(const struct bcoll *b,
				     const struct bc_step *s)
{
	return (const uint8_t *)s->slot + bc_slot_idx(b) * s->slen;
}

extern const struct rcx__req_ops rcx__bcoll_ops;
extern const struct rcx__req_ops rcx__bcoll_init_ops;

/* bcoll.c */
/* complete b's start (if active) with err; later starts return it */
void rcx__bcoll_fail(struct bcoll *b, int err);
/* the completion hook of every channel of b (its done_arg: the step) */
void rcx__bcoll_ch_done(struct rcx_req *r);

/* bcoll_plan.c: the ranks b runs over (b->n, b->r, b->root, b->live):
 * RCX_ERR_PROC_FAILED (logged) when a failure of its group is not
 * validated yet or its root failed; -ENOMEM */
int rcx__bcoll_view(struct bcoll *b);
/* the steps of b's schedule b->sched (chosen by rcx__bcoll_sched) into
 * p[BC_MAX_STEPS], their peers group ranks; how many */
int rcx__bcoll_plan(struct bcoll *b, struct bc_plan *p);
/* the schedule of b: forced (not AUTO) if b's kind has it, else by size
 * and group; -EINVAL (logged) forced one it does not have */
int rcx__bcoll_sched(struct bcoll *b, int forced);

/* bcoll_bind.c: rcx_bind_free of bound collectives (rcx__bcoll_ops) */
int rcx__bcoll_bind_free(struct rcx_req **reqs, int n);

#endif
