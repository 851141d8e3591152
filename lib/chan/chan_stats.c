/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters of bound channels (rcx_ctx_stats): derived from the starts
 * each channel counts anyway (struct chan: count), so the fast path pays
 * nothing for them. A set adds its counts to the context's when it goes;
 * the live sets are summed when asked.
 */
#include "lib/chan/chan_int.h"

/* the starts of set s, added to st */
void rcx__chan_stats_add(const struct chset *s, struct rcx_stats *st)
{
	uint64_t msgs = 0, bytes = 0;
	int i;

	for (i = 0; i < s->n; i++) {
		msgs += s->ch[i].count;
		bytes += s->ch[i].count *
			 (s->is_send ? s->ch[i].len : s->peer_len);
	}
	if (s->proto == RCX_CHAN_WRITE_IMM && s->is_send) {
		st->chan_wimm_tx_msgs += msgs;
		st->chan_wimm_tx_bytes += bytes;
	} else if (s->proto == RCX_CHAN_WRITE_IMM) {
		st->chan_wimm_rx_msgs += msgs;
		st->chan_wimm_rx_bytes += bytes;
	} else if (s->is_send) {
		st->chan_send_tx_msgs += msgs;
		st->chan_send_tx_bytes += bytes;
	} else {
		st->chan_send_rx_msgs += msgs;
		st->chan_send_rx_bytes += bytes;
	}
	/* a sender posts a send-queue WR a start, a write_imm receiver
	 * one per credit it writes (a credit a companion's message
	 * carried is none; receives are not counted) */
	if (s->is_send)
		st->wrs_posted += msgs;
	else if (s->proto == RCX_CHAN_WRITE_IMM)
		st->wrs_posted += s->credits_sent;
}

/* the feature's stats hook: every live set of ctx */
void rcx__chan_stats(struct rcx_ctx *ctx, struct rcx_stats *st)
{
	const struct chset *s;

	for (s = ctx->chan_sets; s; s = s->next)
		rcx__chan_stats_add(s, st);
}
