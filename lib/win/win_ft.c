/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fault-tolerant windows: invalidation when a member fails, validate
 * (agreement on the failed set, then the window rebuilt under the same
 * handle with new keys), and the window's own barrier over the members
 * validate kept.
 *
 * Invalidation is local: it happens when this process learns of the
 * failure (ft.c) and ends every epoch; operations still outstanding
 * complete in error (request-based ones report RCX_ERR_PROC_FAILED to
 * their test/wait); new operations and epoch calls return
 * RCX_ERR_WIN_INVALID; rcx_win_free needs nobody else.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/win/win_int.h"

void rcx__win_invalidate(struct rcx_win *w, int err)
{
	struct rcx__win_op *op;
	int i;

	if (w->invalid)
		return;
	w->invalid = true;
	w->invalid_at_us = rcx__now_us();
	/* every epoch ends, in error */
	w->fence_open = false;
	w->lock_all = false;
	w->lock_all_nocheck = false;
	w->nlocked = 0;
	for (i = 0; i < w->size; i++) {
		w->tgt[i].lock = 0;
		w->tgt[i].nocheck = 0;
	}
	rcx__win_pscw_reset(w);
	/* validate gives the members new keys: the mappings made under the
	 * old ones go, the next put maps again under the new key */
	rcx__win_direct_close(w);
	/*
	 * Operations on their way complete in error when their completion
	 * arrives: the dead peer's queue pair was put in the error state
	 * (flushed at once), the others answer within a round trip.
	 */
	for (i = 0; i < RCX__WIN_OPS; i++) {
		op = &w->ops[i];
		if (op->busy && !op->error)
			op->error = err;
	}
	/* those waiting for a connection to be remade get no completion */
	rcx__win_replay_fail(w, err);
	rcx__win_fail_sw(w);
}

static bool quiet(struct rcx_win *w, void *arg)
{
	int i;

	for (i = 0; i < RCX__WIN_OPS; i++)
		if (w->ops[i].busy)
			return false;
	/* kick READs complete into the targets' records */
	for (i = 0; i < w->size; i++)
		if (w->tgt[i].kick.out)
			return false;
	return true;
}

void rcx__win_quiesce(struct rcx_win *w)
{
	rcx__win_fail_sw(w);
	rcx__win_wait(w, quiet, NULL);
}

int rcx__win_barrier(struct rcx_win *w)
{
	int ret = rcx__group_barrier_locked(w->g, w->excl);

	return ret == RCX_ERR_PROC_FAILED || w->invalid ? RCX_ERR_PROC_FAILED
							: ret;
}

/* ---- undefined ranges */

/*
 * Not next to the last span (rcx__win_span_add): join one it touches,
 * else take a free slot, else widen the span nearest to it.
 */
void rcx__win_span_merge(struct rcx__win_tgt *t, uint64_t lo, uint64_t hi)
{
	struct rcx__win_span *s;
	uint64_t gap, best = UINT64_MAX;
	int i, k = 0;

	for (i = 0; i < t->nspan; i++) {
		s = &t->span[i];
		if (lo <= s->hi && hi >= s->lo)
			gap = 0;
		else
			gap = hi < s->lo ? s->lo - hi : lo - s->hi;
		if (gap < best) {
			best = gap;
			k = i;
		}
	}
	if (best && t->nspan < RCX__WIN_SPANS) {
		k = t->nspan++;
		t->span[k].lo = lo;
		t->span[k].hi = hi;
		return;
	}
	s = &t->span[k];
	if (lo < s->lo)
		s->lo = lo;
	if (hi > s->hi)
		s->hi = hi;
}

int rcx__win_spans_read(const void *msg, size_t len, uint64_t win_len,
			int origin, struct rcx_win_range *out)
{
	struct rcx__win_span_wire m;
	int k, n = 0;

	if (len != sizeof(m))
		return 0;
	memcpy(&m, msg, sizeof(m));
	for (k = 0; k < (int)m.n && k < RCX__WIN_SPANS; k++) {
		struct rcx__win_span *s = &m.s[k];

		/* what a peer says is clipped to this window */
		if (s->lo >= win_len || s->hi <= s->lo)
			continue;
		out[n].origin = origin;
		out[n].offset = (size_t)s->lo;
		out[n++].len =
			(size_t)((s->hi < win_len ? s->hi : win_len) - s->lo);
	}
	return n;
}

static int range_cmp(const void *a, const void *b)
{
	const struct rcx_win_range *x = a, *y = b;

	if (x->origin != y->origin)
		return x->origin < y->origin ? -1 : 1;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/*
 * Lock held, inside rebuild: each survivor sends every other its spans
 * there; the list is what the survivors wrote here plus the whole window
 * for each rank this validate found failed (lost). Spans start anew.
 */
static int gather_undefined(struct rcx_win *w, const uint8_t *lost)
{
	struct rcx__win_span_wire *in, *out;
	struct rcx_win_range *list;
	int i, n = 0, ret;

	in = calloc(w->size, sizeof(*in));
	out = calloc(w->size, sizeof(*out));
	list = calloc((size_t)w->size * RCX__WIN_SPANS, sizeof(*list));
	if (!in || !out || !list) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < w->size; i++) {
		in[i].n = w->tgt[i].nspan;
		memcpy(in[i].s, w->tgt[i].span, sizeof(in[i].s));
	}
	ret = rcx__group_exchange_locked(w->g, in, sizeof(*in), sizeof(*in),
					 out, w->excl);
	if (ret)
		goto out;
	for (i = 0; i < w->size; i++) {
		if (lost[i]) {
			list[n].origin = i;
			list[n].offset = 0;
			list[n++].len = w->len;
			continue;
		}
		if (!w->excl[i])
			n += rcx__win_spans_read(&out[i], sizeof(out[i]),
						 w->len, i, list + n);
	}
	qsort(list, (size_t)n, sizeof(*list), range_cmp);
	free(w->undef);
	w->undef = list;
	w->nundef = n;
	list = NULL;
	for (i = 0; i < w->size; i++)
		w->tgt[i].nspan = 0;
out:
	free(list);
	free(in);
	free(out);
	return ret;
}

RCX_API int rcx_win_get_undefined(struct rcx_win *w,
				  struct rcx_win_range *ranges, int max, int *n)
{
	int i;

	if (!rcx__win_live(w) || !n || max < 0 || (max && !ranges))
		return -EINVAL;
	rcx__lock(w->ctx);
	for (i = 0; i < w->nundef && i < max; i++)
		ranges[i] = w->undef[i];
	*n = w->nundef;
	rcx__unlock(w->ctx);
	return 0;
}

/* ---- validate */

struct wire {
	uint64_t base;
	uint64_t ctrl;
	uint32_t rkey;
	uint32_t ctrl_rkey;
	uint32_t id;
	uint32_t pad;
};

/*
 * New registrations of the window memory and the lock word, taken before
 * the old ones go (so the keys differ), lock word cleared: locks the
 * dead held are gone, and a late write with an old key is refused by
 * the NIC.
 */
static int rekey(struct rcx_win *w)
{
	struct rcx_ctx *ctx = w->ctx;
	const unsigned int all =
		RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_READ |
		RCX_ACCESS_REMOTE_WRITE | RCX_ACCESS_REMOTE_ATOMIC;
	struct rcx__reg *reg = NULL, *ctrl = NULL;
	int ret = 0;

	if (w->len)
		ret = rcx__reg_get_private(ctx, w->base, w->len, all, &reg);
	if (!ret)
		ret = rcx__reg_get_private(
			ctx, w->ctrl, rcx__win_ctrl_len(w->size), all, &ctrl);
	if (ret) {
		rcx__reg_put(ctx, reg);
		return ret;
	}
	rcx__reg_put(ctx, w->reg);
	rcx__reg_put(ctx, w->ctrl_reg);
	w->reg = reg;
	w->ctrl_reg = ctrl;
	memset(w->ctrl, 0, rcx__win_ctrl_len(w->size));
	return 0;
}

/* Lock held; the survivors agreed that the ranks in fl failed. */
static int rebuild(struct rcx_win *w, const uint8_t *fl)
{
	struct wire me, *all;
	int i, ret;

	/* nothing of the old window may still be on its way */
	rcx__win_quiesce(w);
	ret = rekey(w);
	if (ret)
		return ret;
	rcx__win_renumber(w);
	for (i = 0; i < w->size; i++) {
		/* failed since the last rebuild: its writes are unknown */
		if (fl[i] && !w->excl[i])
			w->lost[i] = 1;
		w->excl[i] |= fl[i];
	}
	/* valid again unless another member fails from here on */
	w->invalid = false;
	all = calloc(w->size, sizeof(*all));
	if (!all)
		return -ENOMEM;
	memset(&me, 0, sizeof(me));
	me.base = (uintptr_t)w->base;
	me.ctrl = (uintptr_t)w->ctrl;
	me.rkey = w->reg ? w->reg->rkey : 0;
	me.ctrl_rkey = w->ctrl_reg->rkey;
	me.id = w->id;
	ret = rcx__group_allgather_locked(w->g, &me, sizeof(me), all, w->excl);
	if (!ret) {
		for (i = 0; i < w->size; i++) {
			if (w->excl[i])
				continue;
			w->peer[i].base = all[i].base;
			w->peer[i].ctrl = all[i].ctrl;
			w->peer[i].rkey = all[i].rkey;
			w->peer[i].ctrl_rkey = all[i].ctrl_rkey;
			w->peer[i].id = all[i].id;
		}
		ret = gather_undefined(w, w->lost);
		/* a failure during the exchange leaves the window invalid */
		if (!ret)
			ret = rcx__win_barrier(w);
		if (!ret)
			memset(w->lost, 0, w->size);
	}
	if (ret)
		rcx__win_invalidate(w, RCX_ERR_PROC_FAILED);
	free(all);
	return ret;
}

RCX_API int rcx_win_validate(struct rcx_win *w)
{
	uint8_t *fl;
	bool ok = true, any = false;
	int i, ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	fl = calloc(w->size, 1);
	rcx__lock(w->ctx);
	if (!fl || (!w->excl && !(w->excl = calloc(w->size, 1))) ||
	    (!w->lost && !(w->lost = calloc(w->size, 1)))) {
		ret = -ENOMEM;
		goto out;
	}
	/* learn what there is to learn before proposing */
	rcx__progress(w->ctx);
	rcx__cm_progress(w->ctx);
	/* the agreement is also the barrier of a valid window: every
	 * live rank's proposal reaches every round's leader */
	ret = rcx__ft_agree(w->g, &ok, fl);
	if (ret)
		goto out;
	for (i = 0; i < w->size; i++)
		if (fl[i] && !w->excl[i])
			any = true;
	if (!any && !w->invalid)
		goto out; /* nothing failed: it was a barrier */
	/* everyone agreed: a failure only one side had seen counts too */
	for (i = 0; i < w->size; i++)
		if (fl[i])
			rcx__group_failed(w->g, i, RCX_ERR_PROC_FAILED);
	rcx__win_invalidate(w, RCX_ERR_PROC_FAILED);
	ret = rebuild(w, fl);
	if (!ret && !w->invalid) {
		for (i = 0; i < w->size; i++) {
			w->tgt[i].error = 0;
			w->tgt[i].lock = 0;
			w->tgt[i].nocheck = 0;
		}
		w->fence_open = false;
		w->fence_ops = 0;
	} else if (!ret) {
		ret = RCX_ERR_PROC_FAILED;
	}
out:
	rcx__unlock(w->ctx);
	free(fl);
	return ret;
}

RCX_API int rcx_win_get_failed(struct rcx_win *w, int *ranks, int max, int *n)
{
	if (!rcx__win_live(w))
		return -EINVAL;
	return rcx__group_get_failed(w->g, ranks, max, n);
}
