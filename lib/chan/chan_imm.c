/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels, write_imm: the zero-length receives a set keeps posted
 * and what their immediates say. A receiver's names the channel (and how
 * many, fused by the sender) whose message landed in its slot; a
 * sender's (credit_imm, chan.c on_credit_ok) brings the receiver's
 * credit. A receiver's may carry its companion sender's credit too
 * (CH_IMM_RIDE, chan_credit.c). The fast path of the receiver is
 * rcx__chan_on_imm_ok, called straight from the poll.
 */
#include <stddef.h>
#include "lib/chan/chan_int.h"

int rcx__chan_zrecv_post(struct chset *s)
{
	int k, ret = s->ctx->ops->pwr_post_list(s->ep, s->zrecv, CH_ZBATCH, 1,
						&k);

	/*
	 * Those that went are counted, exactly (a list refused part-way
	 * says how far it went): a set waits for the flush of every
	 * receive it counts before it goes or is remade.
	 */
	s->zposted += k;
	return ret;
}

/* write_imm receiver: channel c received its message */
static inline void imm_done(struct chset *s, struct chan *c)
{
	struct rcx_req *r = c->req;

	r->status.slot = c->cur_slot;
	r->status.count = s->peer_len;
	rcx__req_complete(r, 0);
}

/*
 * write_imm receiver: does channel c's start wait for its message? One
 * held while the set is remade (chan_remake.c) is not made yet: a
 * message that arrives meanwhile came before it.
 */
static inline bool imm_waits(const struct chan *c)
{
	return c->req && c->req->state == RCX__REQ_ACTIVE && !c->held;
}

/*
 * write_imm receiver: one immediate for m channels from c (fused by the
 * sender), or one for a channel not started yet: its sender may be up to
 * lag messages ahead, more breaks the protocol (then nothing completes
 * but in error). Off the fast path's frame.
 */
static __attribute__((noinline)) void imm_slow(struct chset *s, struct chan *c,
					       int m)
{
	int t;

	for (t = 0; t < m; t++)
		if (c[t].req && !imm_waits(&c[t]) && c[t].early >= c[t].lag) {
			rcx__chan_set_fail(s, RCX_ERR_PROTO);
			return;
		}
	for (t = 0; t < m; t++) {
		if (!c[t].req)
			continue; /* freed, its bundle still up: dropped */
		if (imm_waits(&c[t]))
			imm_done(s, &c[t]);
		else
			c[t].early++;
	}
	/* after: the messages came, and a remake counts them as received */
	if (s->zposted <= s->zmin && rcx__chan_zrecv_post(s))
		rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
}

/*
 * write_imm receiver: an immediate of a set that is not up, or one that
 * names no channel. Being remade, what arrived on the broken queue pair
 * counts; a start held meanwhile is not made yet (imm_slow).
 */
static __attribute__((noinline)) void imm_odd(struct chset *s, uint32_t imm,
					      int has_imm)
{
	unsigned int idx = imm >> 24, m = ((imm >> 16) & 0xff) + 1;

	if (s->state != SET_UP && s->state != SET_REMAKE)
		return;
	if (!has_imm || idx + m > (unsigned int)s->n)
		rcx__chan_set_fail(s, RCX_ERR_PROTO);
	else
		imm_slow(s, &s->ch[idx], (int)m);
}

/*
 * write_imm receiver: an immediate names the channel (and how many); a
 * successful completion of one of the set's zero-length receives
 */
void rcx__chan_on_imm_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			 uint32_t byte_len, uint32_t imm, int has_imm)
{
	struct chset *s = zwrc_set(w);
	unsigned int idx = imm >> 24, m = ((imm >> 16) & 0xff) + 1;
	struct chan *c;

	s->zposted--;
	/* a companion's credit: taken whatever the set's state (a set
	 * failing or freed does not hold its companion's back) */
	if ((imm & CH_IMM_RIDE) && has_imm)
		rcx__chan_ride_in(s, imm);
	if (RCX__UNLIKELY(s->state != SET_UP || !has_imm ||
			  idx + m > (unsigned int)s->n)) {
		imm_odd(s, imm, has_imm);
		return;
	}
	c = &s->ch[idx];
	if (RCX__UNLIKELY(m > 1 || !c->req ||
			  c->req->state != RCX__REQ_ACTIVE ||
			  s->zposted <= s->zmin))
		imm_slow(s, c, (int)m);
	else
		imm_done(s, c);
}

/* ... and any completion of a set's zero-length receive */
void rcx__chan_on_imm(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		      const struct rcx_cqe *cqe)
{
	struct chset *s = zwrc_set(w);

	if (RCX__LIKELY(!cqe->status)) {
		w->ok(ctx, w, cqe->byte_len, cqe->imm, cqe->has_imm);
		return;
	}
	s->zposted--;
	rcx__stats_cqe(&ctx->st, cqe->status);
	rcx__chan_set_fail(s, wc_err(s, cqe->status));
}
