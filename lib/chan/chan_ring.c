/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels, send protocol sender: the set's ring of messages in
 * flight, made and freed, and the mark that retires its unsignaled sends
 * when no signaled one follows them (chan.c pushes, retires and replays).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/chan/chan_int.h"

int rcx__chan_ring_make(struct chset *s, uint32_t dlen)
{
	uint32_t n = 1;
	struct chring *q;

	if (s->ring)
		return 0;
	while (n < (uint32_t)(CH_UNACK + s->n))
		n <<= 1;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->e = calloc(n, sizeof(*q->e));
	/* never NULL: a zero-length copy is made all the same */
	q->data = malloc((size_t)n * (dlen ? dlen : 1));
	if (!q->e || !q->data) {
		free(q->data);
		free(q->e);
		free(q);
		return -ENOMEM;
	}
	q->mask = n - 1;
	q->dlen = dlen;
	s->ring = q;
	return 0;
}

void rcx__chan_ring_free(struct chset *s)
{
	if (!s->ring)
		return;
	free(s->ring->data);
	free(s->ring->e);
	free(s->ring);
	s->ring = NULL;
}

void rcx__chan_mark(struct chset *s)
{
	struct rcx_wr wr, *bad;
	int ret;

	if (!s->ring || !s->ring->unsig || s->mark_busy || !s->ep)
		return;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uintptr_t)&s->mark_wrc;
	wr.op = RCX_OP_WRITE;
	wr.flags = RCX_WR_SIGNALED;
	/* zero bytes into the peer's control words: no receive taken */
	wr.remote_addr = s->peer_ctl;
	wr.rkey = s->peer_ctl_rkey;
	ret = s->ctx->ops->post_send(s->ep, &wr, &bad);
	if (ret) {
		rcx__log(RCX__LOG_ERROR, "chan",
			 "sending set of %d to rank %d: %u unsignaled sends "
			 "not returned: %s",
			 s->n, s->ch[0].peer, s->ring->unsig,
			 rcx_strerror(ret));
		return;
	}
	s->mark_busy = true;
	s->mark_upto = s->ring->tail;
	s->ring->unsig = 0;
	s->inflight++;
}
