/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound collectives, the started side: a start copies the input (when
 * not in place), starts every receiving channel (each hands its writer a
 * credit) and walks the steps; the channels' completion hooks carry the
 * walk on from progress. Nothing here allocates, matches or handshakes:
 * the channels post their prepared WRITE_IMMs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/bcoll/bcoll_int.h"
#include "lib/chan/chan.h"

/* the step's slot into its elements of the result, on this CPU */
static void reduce(struct bcoll *b, const struct bc_step *s)
{
	if (RCX__LIKELY(s->fold))
		s->fold(s->acc, bc_slot(b, s), s->cnt);
	else
		rcx__dtype_fold(b->d.dtype, b->d.op, s->acc, bc_slot(b, s),
				s->cnt);
}

/* n bytes of the data: a small one (a few elements) with no call */
static inline void bc_copy(void *d, const void *s, size_t n)
{
	if (n >= 8 && n <= 16) {
		/* two words, overlapping where n < 16 */
		memcpy(d, s, 8);
		memcpy((uint8_t *)d + n - 8, (const uint8_t *)s + n - 8, 8);
	} else {
		memcpy(d, s, n);
	}
}

/* ---- the walk through the steps */

static void ch_failed(struct bcoll *b, int err);

/*
 * Go through the steps whose conditions hold: post each step's send, and
 * go past it once its receive (and, when it waits for it, its send) is
 * complete, reducing what arrived. The start completes when the last
 * step is passed and every channel it waits for completed: not a lazy
 * send (bc_step.lazy), whose completion, the peer's acknowledgement on
 * verbs, only says that a slot of ours that turns may be written again;
 * it is collected before the step posts its send at the next start, so
 * by then the previous one's completion is in (the peer answered long
 * since). Channels complete from
 * progress, or (a receive whose message came a start early, slots that
 * turn) inside bc_start's start of the channel, after the start's state is
 * set; a hook that fires while the walk runs, or while bc_start starts
 * the receives, only records its flag: the loop sees it. A lazy send's
 * completion walks on only where the walk stopped at its step, waiting
 * to post the step's send: nothing else waits for it.
 */
/*
 * Before the start completes: a lazy send still waiting to be posted
 * (its credit not seen yet) would go out only at this process's next
 * call, and the peers' starts would wait for that. The start waits for
 * its completion instead (BC_HOLD). Any held?
 */
static bool hold_unposted(struct bcoll *b)
{
	uint64_t m = b->lazy_out;
	struct bc_step *s;

	/* only the lazy sends still out (not the others: no loop over
	 * every step) */
	while (m) {
		s = &b->steps[__builtin_ctzll(m)];
		m &= m - 1;
		if ((s->flags & (BC_POSTED | BC_HOLD)) == BC_POSTED &&
		    s->send->state == RCX__REQ_ACTIVE &&
		    rcx__chan_unposted(s->send)) {
			s->flags |= BC_HOLD;
			s->send->done = rcx__bcoll_ch_done; /* waited for */
			b->left++;
		}
	}
	return b->left != 0;
}

/*
 * A lazy send's channel has no completion hook (bind_plan): its
 * completion only makes it inactive again (done, not ACTIVE), at no cost
 * on the start's path. Before the step posts it again: still in flight,
 * the hook is set so its completion walks on (true: the walk stops
 * here); completed in error, the collective fails (the peer's failure
 * reaches it this way where no receive of ours is from that peer).
 */
static bool lazy_busy(struct bcoll *b, struct bc_step *s)
{
	struct rcx_req *c = s->send;

	if (c->state == RCX__REQ_ACTIVE) {
		c->done = rcx__bcoll_ch_done;
		return true;
	}
	if (RCX__UNLIKELY(c->status.error)) {
		ch_failed(b, c->status.error);
		return true;
	}
	return false;
}

static void advance(struct bcoll *b)
{
	struct bc_step *s;
	int cur, n = b->nsteps, ret;

	if (b->busy)
		return;
	b->busy = true;
	/* the hooks that fire meanwhile change flags, left and error */
	for (cur = b->cur; cur < n; cur++) {
		s = &b->steps[cur];
		if (s->send && !(s->flags & BC_POSTED)) {
			/* a lazy send of the last start not collected yet:
			 * its completion walks on (rcx__bcoll_ch_done) */
			if (s->lazy && RCX__UNLIKELY(lazy_busy(b, s)))
				break;
			s->flags |= BC_POSTED;
			if (s->stage)
				bc_copy(s->stage + bc_slot_idx(b) * s->stlen,
					s->sbuf, s->stlen);
			ret = s->send->ops->start(s->send);
			if (RCX__UNLIKELY(ret)) {
				b->cur = cur;
				b->busy = false;
				rcx__bcoll_fail(b, ret);
				return;
			}
			/* still out (one that completed at its post is
			 * neither unposted nor waited for) */
			if (s->lazy && s->send->state == RCX__REQ_ACTIVE)
				b->lazy_out |= 1ULL << cur;
			/* a start that completed at once may have failed */
			if (RCX__UNLIKELY(b->error))
				break;
		}
		if ((s->flags & s->need) != s->need)
			break;
		if (s->reduce)
			reduce(b, s);
	}
	b->cur = cur;
	b->busy = false;
	if (cur == n && !b->left && !b->error &&
	    b->req->state == RCX__REQ_ACTIVE &&
	    (b->nwait == b->nch || !hold_unposted(b))) {
		b->req->status.count = b->len;
		rcx__req_complete(b->req, 0);
	}
}

/* a barrier's slot carries the sender's start count: it must be ours */
static bool token_ok(const struct bcoll *b, const struct bc_step *s)
{
	uint64_t t;

	if (b->d.kind != BC_BARRIER)
		return true;
	memcpy(&t, bc_slot(b, s), sizeof(t));
	return t == b->starts;
}

/* a channel of b completed in error (err): a step's peer is gone
 * (flushed, or no answer any more) */
static __attribute__((noinline)) void ch_failed(struct bcoll *b, int err)
{
	if (err == RCX_ERR_FLUSHED || err == RCX_ERR_TRANSPORT)
		err = RCX_ERR_PROC_FAILED;
	rcx__bcoll_fail(b, err);
}

static __attribute__((noinline)) void token_bad(struct bcoll *b)
{
	RCX__LOG(RCX__LOG_ERROR, "bcoll",
		 "barrier start %llu received another start's token",
		 (unsigned long long)b->starts);
	rcx__bcoll_fail(b, RCX_ERR_PROTO);
}

/* step s's receive of this start is in: false when it is not this
 * start's (b failed) */
static inline bool recvd(struct bcoll *b, struct bc_step *s)
{
	b->left--;
	s->flags |= BC_RECVD;
	if (RCX__UNLIKELY(!token_ok(b, s))) {
		token_bad(b);
		return false;
	}
	return true;
}

void rcx__bcoll_ch_done(struct rcx_req *r)
{
	struct bc_step *s = r->done_arg;
	struct bcoll *b = s->b;
	int i = s->idx;

	/* the channel is ours: inactive again, ready for the next start */
	r->state = RCX__REQ_INACTIVE;
	if (RCX__UNLIKELY(b->error))
		return; /* failed: what still completes changes nothing */
	if (RCX__UNLIKELY(r->status.error)) {
		ch_failed(b, r->status.error);
		return;
	}
	if (r == s->send && s->lazy) {
		r->done = NULL; /* set for this completion alone */
		b->lazy_out &= ~(1ULL << i);
		if (RCX__UNLIKELY(s->flags & BC_HOLD)) {
			b->left--; /* held: this start waited for it */
			s->flags |= BC_SENT;
		} else if (b->cur != i || (s->flags & BC_POSTED) ||
			   b->req->state != RCX__REQ_ACTIVE) {
			/* collected: only a walk stopped at this step,
			 * waiting for it to post the step's next send, goes
			 * on (nothing else waits for a lazy send: not
			 * b->left, not the start's end) */
			return;
		}
	} else if (r == s->send) {
		b->left--;
		s->flags |= BC_SENT;
	} else {
		if (!recvd(b, s))
			return;
		/* arrived before the walk got to its step: the walk takes
		 * it when it gets there */
		if (i > b->cur)
			return;
	}
	advance(b);
}

void rcx__bcoll_fail(struct bcoll *b, int err)
{
	int i;

	if (b->error)
		return;
	RCX__LOG(RCX__LOG_DEBUG, "bcoll", "bound collective of %d ranks: %s",
		 b->g->size, rcx_strerror(err));
	b->error = err;
	/*
	 * Every channel's set fails too: the peers fail theirs on the same
	 * member failure, so nobody waits for anybody at the free.
	 */
	for (i = 0; i < b->nch; i++)
		rcx__chan_abort(b->ch[i], err);
	if (b->req->state == RCX__REQ_ACTIVE)
		rcx__req_complete(b->req, err);
}

/* alltoall: this rank's own block, and in place what the sends read */
static void alltoall_own(struct bcoll *b)
{
	size_t me = (size_t)b->g->rank * b->len;

	if (b->copy)
		memcpy(b->copy, b->d.buf, (size_t)b->g->size * b->len);
	else
		memcpy((uint8_t *)b->d.buf + me,
		       (const uint8_t *)b->d.sendbuf + me, b->len);
}

static int bc_start(struct rcx_req *r)
{
	struct bcoll *b = r->obj;
	int i, ret;

	if (RCX__UNLIKELY(b->error))
		return b->error;
	r->state = RCX__REQ_ACTIVE;
	r->status.error = 0;
	b->starts++;
	b->si = (size_t)((b->starts - 1) & (uint64_t)(b->nslots - 1));
	b->token[b->si] = b->starts; /* what this start's send reads */
	if ((b->d.kind == BC_ALLREDUCE || b->d.kind == BC_REDUCE) &&
	    b->d.sendbuf != RCX_IN_PLACE)
		bc_copy(b->d.buf, b->d.sendbuf, b->len);
	else if (b->d.kind == BC_ALLGATHER && b->d.sendbuf != RCX_IN_PLACE)
		memcpy((uint8_t *)b->d.buf + (size_t)b->g->rank * b->len,
		       b->d.sendbuf, b->len);
	else if (b->d.kind == BC_ALLTOALL)
		alltoall_own(b);
	b->cur = 0;
	b->left = b->nwait;
	b->lazy_out = 0;
	/*
	 * The receives first: their credits let the peers write. One that
	 * completes at its start (its message came a start early) only
	 * records its flag (busy): the walk starts once every step's flags
	 * are this start's.
	 */
	b->busy = true;
	for (i = 0; i < b->nsteps; i++) {
		struct bc_step *s = &b->steps[i];

		s->flags = 0;
		if (!s->recv)
			continue;
		/* one slot: each start writes its credit, the general
		 * start's work */
		ret = b->nslots > 1 ? rcx__chan_recv_bump(s->recv)
				    : s->recv->ops->start(s->recv);
		/* its message was there: taken, no hook (recv_bump) */
		if (ret > 0 && recvd(b, s))
			continue;
		if (RCX__UNLIKELY(ret)) {
			b->busy = false;
			if (ret < 0)
				rcx__bcoll_fail(b, ret);
			return 0; /* the start completed in error */
		}
	}
	b->busy = false;
	advance(b);
	return 0;
}

const struct rcx__req_ops rcx__bcoll_ops = {
	.start = bc_start,
	.bind_free = rcx__bcoll_bind_free,
};

/* ---- what the core drives */

static void bc_member_failed(struct rcx_group *g, int rank, int err)
{
	struct bcoll *b;

	(void)rank;
	for (b = g->ctx->bcolls; b; b = b->next)
		if (b->g == g)
			rcx__bcoll_fail(b, err);
}

/* Teardown: the channels and requests go with the context's. */
static void bc_fini(struct rcx_ctx *ctx)
{
	struct bcoll *b;

	while ((b = ctx->bcolls)) {
		ctx->bcolls = b->next;
		b->req->obj = NULL;
		free(b->live);
		free(b->copy);
		free(b->scratch);
		free(b->ch);
		free(b);
	}
}

const struct rcx__feat_ops rcx__bcoll_feat = {
	.name = "bcoll",
	.member_failed = bc_member_failed,
	.fini = bc_fini,
};
