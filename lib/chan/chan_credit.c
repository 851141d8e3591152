/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels, write_imm: the receiver's credit. A receiver's start
 * gives its slot back by RDMA-writing its start count into the sender's
 * ready[] word (the WRs prepared at bind, chan_bind.c set_prepare), at
 * the start or, late, at the next progress pass (credit_later).
 *
 * Companion pairs: two write_imm sets of one channel each, bound with the
 * same rcx_chan_companion value at both ends, one each way between the
 * same two ranks of a group (a ping-pong). Each rank pairs its two sets
 * (mate): the credit of its receiving set rides in the immediate of the
 * next message of its sending set (CH_IMM_RIDE and the credit's 15 low
 * bits), instead of a WRITE of its own; the peer's receiving set hands
 * it to the peer's sending set (ride_ready, which the sender's credit
 * check takes with ready[]). A credit is a start count merged by max, so
 * one that comes twice (carried, and written too) does nothing more.
 *
 * A paired receiver's credit is always late: if no companion message
 * carried it by the CH_CREDIT_PASSES-th progress pass after the start,
 * that pass writes it (a one-way stream, or a reply not sent yet); the
 * passes before leave it (credit_grace), as a program may test its
 * receive a few times before it replies (rcx_chan_lat --count tests it
 * twice), and no wait sleeps while one is left: a one-way stream's wait
 * spins through them (a few empty polls). A sending set that leaves the pair
 * (it fails or is freed) may have carried credits in messages that never
 * arrive: its mate writes its credit once more; a remake sends again
 * what did not arrive, with the credit of then. The decoding end needs no
 * pairing of its own: a credit that comes goes to the live sending set
 * with the same value to that peer, if there is one.
 */
#include <endian.h>
#include "lib/chan/chan_int.h"

int rcx__chan_credit_post_sig(struct chan *c)
{
	struct chset *s = c->set;
	int ret = c->post(s->ep, &c->credit_sig, 1);

	if (!ret)
		s->inflight++;
	return ret;
}

int rcx__chan_credit_range(struct chset *s, int lo, int hi)
{
	bool sig = ++s->credits_sent % CH_CREDIT_SIGNAL == 0;
	struct rcx_pwr *p = sig ? s->ch[lo].credit_sig : s->ch[lo].credit;
	int ret;

	*p->length = (uint32_t)(hi - lo) * 8;
	/* credit_imm: the immediate names them (else scratch) */
	*p->imm_be = htobe32(CH_IMM(lo, hi - lo, 0));
	ret = s->ch[lo].post(s->ep, &p, 1);
	/* posted: the WR was copied; one channel's again */
	*p->length = 8;
	*p->imm_be = htobe32(CH_IMM(lo, 1, 0));
	if (!ret && sig)
		s->inflight++;
	return ret;
}

/*
 * write_imm receiver whose credit goes as a WRITE with immediate (verbs)
 * and comes window - credit_every messages before the sender needs it,
 * or one paired with a companion: the start's credit is written by the
 * next progress pass (the test or wait of any request, a blocking wait's
 * pass before it sleeps), not by the start. Where the posting call does
 * the packet's whole work (rxe: requester, responder and acknowledgement
 * in the call), a credit the start posted would hold back what the
 * program posts next, a ping-pong's reply, by a whole post; written by
 * the next pass it goes after that, and the peer needs it only later
 * (paired: the reply carries it, and the pass writes nothing). The WR
 * reads the credit word when it is posted: starts made before the pass
 * share one write, which carries the latest count. A start whose message
 * is there already completes at once, and its test runs no pass: it
 * writes the credit.
 */
void rcx__chan_credit_later(struct chan *c)
{
	struct rcx_ctx *ctx = c->set->ctx;

	c->credit_grace = c->set->mate ? CH_CREDIT_PASSES - 1 : 0;
	if (c->credit_late)
		return;
	c->credit_late = true;
	c->next_credit = ctx->chan_credits;
	ctx->chan_credits = c;
	rcx__chan_work(ctx);
}

/*
 * the late credit of c, taken off the list: written (post) or dropped;
 * not written when a companion message carried it already
 */
static void credit_late_end(struct chan *c, bool post)
{
	struct chset *s = c->set;

	c->credit_late = false;
	if (!post || s->state != SET_UP || *c->credit_w == c->rode)
		return;
	/* a post that fails here is no process failure */
	if (ch_credit_post(c))
		rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
}

void rcx__chan_credits_post(struct rcx_ctx *ctx)
{
	struct chan **pp, *c;

again:
	for (pp = (struct chan **)&ctx->chan_credits; (c = *pp);
	     pp = &c->next_credit) {
		if (c->credit_grace)
			continue;
		*pp = c->next_credit;
		credit_late_end(c, true);
		/* a failure may take others off the list: from its head */
		goto again;
	}
	/* the others: one pass less to go (no wait sleeps before:
	 * chan_bind.c chan_feat_sleep_limit) */
	for (c = ctx->chan_credits; c; c = c->next_credit)
		c->credit_grace--;
	rcx__chan_work(ctx);
}

/*
 * A companion message carried c's late credit (ch_imm): off the list now,
 * so the passes until its grace ends stay quick; a later start of c
 * lists it again.
 */
void rcx__chan_credit_rode(struct chan *c)
{
	struct rcx_ctx *ctx = c->set->ctx;
	struct chan **pp;

	for (pp = (struct chan **)&ctx->chan_credits; *pp;
	     pp = &(*pp)->next_credit)
		if (*pp == c) {
			*pp = c->next_credit;
			break;
		}
	c->credit_late = false;
	rcx__chan_work(ctx);
}

void rcx__chan_credits_of(struct chset *s, bool post)
{
	struct chan **pp = (struct chan **)&s->ctx->chan_credits, *c;

	while ((c = *pp)) {
		if (c->set != s) {
			pp = &c->next_credit;
			continue;
		}
		*pp = c->next_credit;
		credit_late_end(c, post);
		/* a failure's remake drops the rest of s's */
		pp = (struct chan **)&s->ctx->chan_credits;
	}
	rcx__chan_work(s->ctx);
}

/* ---- companion pairs */

/* could t be the companion of s (the other direction, same peer)? */
static bool companion_of(const struct chset *s, const struct chset *t)
{
	return t != s && t->companion == s->companion &&
	       t->is_send != s->is_send && t->g == s->g && t->n == 1 &&
	       t->ch[0].peer == s->ch[0].peer && !t->mate_gone &&
	       t->state != SET_FAILED;
}

static void link_pair(struct chset *a, struct chset *b)
{
	struct chset *snd = a->is_send ? a : b, *rcv = a->is_send ? b : a;

	a->mate = b;
	b->mate = a;
	snd->ch[0].ride = &rcv->ch[0];
	RCX__LOG(RCX__LOG_DEBUG, "chan",
		 "write_imm sets to and from rank %d paired (companion %u): "
		 "credits ride on messages",
		 a->ch[0].peer, a->companion);
}

void rcx__chan_pair(struct chset *s)
{
	struct chset *t;

	if (s->mate || s->mate_gone || !s->companion)
		return;
	for (t = s->ctx->chan_sets; t; t = t->next)
		if (companion_of(s, t) && !t->mate && t->state == SET_UP) {
			link_pair(s, t);
			return;
		}
}

void rcx__chan_unpair(struct chset *s)
{
	struct chset *t = s->mate;
	struct chan *rc;

	s->mate_gone = true;
	if (!t)
		return;
	s->mate = NULL;
	t->mate = NULL;
	(s->is_send ? s : t)->ch[0].ride = NULL;
	if (s->is_send) {
		/* its messages may not all arrive: the mate's own credit
		 * goes at the next pass */
		rc = &t->ch[0];
		rc->rode = 0;
		if (t->state == SET_UP && rc->count)
			rcx__chan_credit_later(rc);
		rc->credit_grace = 0;
	}
}

/*
 * receiver s: a credit came for its companion, which it is not paired
 * with (its own end came up first, or left): the sending set with the
 * same value to that peer
 */
static __attribute__((noinline)) struct chset *ride_find(struct chset *s)
{
	struct chset *t;

	if (!s->companion)
		return NULL;
	for (t = s->ctx->chan_sets; t; t = t->next)
		if (companion_of(s, t)) {
			if (!s->mate_gone && !t->mate && t->state == SET_UP &&
			    s->state == SET_UP)
				link_pair(s, t);
			return t;
		}
	return NULL;
}

void rcx__chan_ride_in(struct chset *s, uint32_t imm)
{
	struct chset *t = s->mate ? s->mate : ride_find(s);
	struct chan *c;
	uint64_t r;
	uint32_t d;

	if (!t)
		return; /* its sender is gone: nothing waits for it */
	c = &t->ch[0];
	r = ready(t)[0] > c->ride_ready ? ready(t)[0] : c->ride_ready;
	/* the credit's 15 low bits: ahead of what is there (an older one,
	 * behind, is dropped), never past the message after the last sent
	 * (a receiver starts once per message it has) */
	d = ((uint32_t)imm - (uint32_t)r) & CH_IMM_COUNT;
	if (d && d < CH_IMM_COUNT / 2 && r + d <= c->count + 1)
		c->ride_ready = r + d;
}
