/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels as the bound collectives (lib/bcoll) drive them: the
 * start of a write_imm receiver that only moves the count on, where the
 * collective knows what a general start must check.
 */
#include "lib/chan/chan_int.h"

/*
 * A write_imm receiver's start that writes no credit this time (the
 * credit goes once in credit_every starts, ch_credit_every): the count
 * and the slot move on and the credit word is set for the next credit's
 * write, as chan.c's wrecv_start does. A message that came a start early
 * is taken at once, with no completion hook run: the start is over
 * (status set, inactive again) and the caller, whose channel it is,
 * knows from the return. Anything else (the credit due, a set not up,
 * another mode) takes the general start, and completes as that does.
 */
int rcx__chan_recv_bump(struct rcx_req *r)
{
	struct chan *c = r->obj;

	if (RCX__UNLIKELY(c->set->state != SET_UP || c->mode != CH_WRECV ||
			  c->credit_in <= 1))
		return r->ops->start(r);
	r->state = RCX__REQ_ACTIVE;
	r->status.error = 0;
	c->credit_in--;
	c->count++;
	if (c->multi) {
		c->cur_slot = c->next_slot;
		c->next_slot += c->slot_step;
		if (c->next_slot >= (int)c->slots)
			c->next_slot -= (int)c->slots;
		c->next_off = (uint64_t)c->next_slot * c->stride;
	}
	*c->credit_w = c->count;
	if (c->early) {
		/* taken here: the caller owns the completion */
		c->early--;
		r->status.slot = c->cur_slot;
		r->status.count = c->set->peer_len;
		r->state = RCX__REQ_INACTIVE;
		return 1;
	}
	return 0;
}
