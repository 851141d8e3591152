/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Put and get through a mapping of the target's memory. Where the
 * provider can map a peer's window memory into this process (shm: a
 * window of rcx_win_allocate lies in a segment of mem_alloc that peers
 * map; ops->ep_mem_map), the first put or get to that peer maps the
 * target's part once, and from then on a put or get to it is a copy
 * (win_rma.c, rma_direct): no work request, no completion, no call into
 * the provider. The mapping is the window's, until the window goes.
 *
 * What it keeps:
 *  - order: a copy runs only while nothing of the window's is
 *    outstanding to the target (tgt.inflight 0), so there is nothing
 *    earlier for it to be ordered after; otherwise the operation goes to
 *    the provider as before, behind what is outstanding. rcx_win_order
 *    then maps to C11 fences between the copies (order.c, cpu_order);
 *  - NIC and CPU atomics: a target the window reaches through its own
 *    NIC endpoint (auto with a device, win.c nep_open) is never mapped,
 *    so its puts, gets and atomics keep to one path;
 *  - failure: the checks of every put and get (win_rma.c) come first: a
 *    failed target, an invalid window, a range past the target's part
 *    are refused before anything is copied. The memory of a peer that
 *    died stays mapped until the window becomes invalid: a copy made
 *    before the failure is seen lands there and nobody reads it, as a
 *    NIC's WRITE to a node that went down. Each copy counts as a
 *    progress pass (win_rma.c, now_pass), where the failure is seen.
 *    An invalid window drops every mapping (win_ft.c): validate gives
 *    the members new keys, and the first put after it maps again under
 *    the new key, which the provider checks; a mapping serves only the
 *    key it was made under (an old key is refused);
 *  - the counters: a copy is a put or get run at once (stats.now, and
 *    stats.direct), and in the context's counters one posted WR of its
 *    kind and length, as ep_rma_now's were.
 */
#include <errno.h>
#include <string.h>
#include "lib/win/win_int.h"

static void direct_unmap(struct rcx_win *w, struct rcx__win_tgt *t)
{
	w->ctx->ops->mem_unmap(w->ctx->dev, t->dptr, t->dlen);
	t->dptr = NULL;
	t->dstate = RCX__DIRECT_UNTRIED;
	w->ndirect--;
}

void rcx__win_direct_close(struct rcx_win *w)
{
	int i;

	for (i = 0; w->ndirect && w->tgt && i < w->size; i++)
		if (w->tgt[i].dptr)
			direct_unmap(w, &w->tgt[i]);
}

void rcx__win_direct_open(struct rcx_win *w, int target)
{
	struct rcx__win_tgt *t = &w->tgt[target];
	const struct rcx__win_peer *p = &w->peer[target];
	struct rcx_ctx *ctx = w->ctx;
	struct rcx__conn *c;
	void *ptr = NULL;
	int ret;

	if (t->dptr)
		direct_unmap(w, t); /* mapped under a key that changed */
	if (target == w->rank || w->dyn || w->shr || !p->size ||
	    !ctx->ops->ep_mem_map || (w->nep && w->nep[target].ep)) {
		t->dstate = RCX__DIRECT_NO;
		return;
	}
	c = rcx__win_conn(w, target);
	if (c->state != RCX__CONN_UP || !c->ep)
		return; /* perhaps once it is up again */
	ret = ctx->ops->ep_mem_map(
		c->ep, p->base, p->size, p->rkey,
		RCX_ACCESS_REMOTE_READ | RCX_ACCESS_REMOTE_WRITE, &ptr);
	if (ret == -ENOTCONN)
		return;
	RCX__LOG(RCX__LOG_DEBUG, "win", "window %u target %d: %llu bytes %s%s",
		 w->id, target, (unsigned long long)p->size,
		 ret ? "not mapped here, through the provider: "
		     : "mapped here",
		 ret ? strerror(-ret) : "");
	if (ret) {
		t->dstate = RCX__DIRECT_NO;
		return;
	}
	t->dptr = ptr;
	t->dlen = p->size;
	t->dkey = p->rkey;
	t->dstate = RCX__DIRECT_MAPPED;
	w->ndirect++;
}
