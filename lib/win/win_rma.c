/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Put and get: their checks (target, range, epoch), the longest WR, the
 * origin buffer's key, and the WRs (pieces of at most the device's
 * longest message; small ones through the slot's bounce memory).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "lib/win/win_int.h"

/* inline here: a put's checks are most of its cost where it is a copy */
static inline int range(struct rcx_win *w, int target, size_t disp, size_t len,
			uint64_t *off)
{
	uint64_t unit, o, size;

	if (target < 0 || target >= w->size) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "window %u: target %d: the window has %d members",
			 w->id, target, w->size);
		return -EINVAL;
	}
	/* failed: a window made after rcx_group_validate has no part of
	 * it (an invalid window reports that first, rma_check) */
	if (w->g->failed[target] && !w->invalid)
		return RCX_ERR_PROC_FAILED;
	if (w->dyn)
		return rcx__win_dyn_range(w, target, disp, len, off);
	unit = w->peer[target].disp_unit;
	size = w->peer[target].size;
	if (__builtin_mul_overflow((uint64_t)disp, unit, &o))
		o = UINT64_MAX;
	if (o > size || len > size - o) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "window %u: %zu bytes at displacement %zu (unit %llu) "
			 "of target %d: past its %llu bytes",
			 w->id, len, disp, (unsigned long long)unit, target,
			 (unsigned long long)size);
		return -EINVAL;
	}
	*off = o;
	return 0;
}

int rcx__win_range(struct rcx_win *w, int target, size_t disp, size_t len,
		   uint64_t *off)
{
	return range(w, target, disp, len, off);
}

static inline int rma_check(struct rcx_win *w, const void *buf, size_t len,
			    int target, size_t disp, bool req, uint64_t *off)
{
	int ret;

	if (!buf && len)
		return -EINVAL;
	ret = range(w, target, disp, len, off);
	if (ret)
		return ret;
	ret = req ? rcx__win_epoch_passive(w, target)
		  : rcx__win_epoch_access(w, target);
	if (ret)
		return ret;
	if (target != w->rank &&
	    rcx__win_conn(w, target)->state == RCX__CONN_FAILED)
		return RCX_ERR_PROC_FAILED;
	return 0;
}

int rcx__win_rma_check(struct rcx_win *w, const void *buf, size_t len,
		       int target, size_t disp, bool req, uint64_t *off)
{
	return rma_check(w, buf, len, target, disp, req, off);
}

/*
 * The longest RDMA READ or WRITE of a put or get: the device's longest
 * message (its port's max_msg_sz; IBA guarantees 2^31 where it tells
 * nothing), or less (RCX_RMA_WR_MAX), and never more than a WR's 32-bit
 * length. Longer transfers go out in pieces, one WR each, on the same
 * queue (RC executes them in order, so rcx_win_order's decisions hold).
 */
uint32_t rcx__win_rma_wr_max(const struct rcx_ctx *ctx)
{
	uint64_t m = ctx->info.max_msg_sz ? ctx->info.max_msg_sz : 1ull << 31;

	if (ctx->cfg.rma_wr_max && ctx->cfg.rma_wr_max < m)
		m = ctx->cfg.rma_wr_max;
	return m < UINT32_MAX ? (uint32_t)m : UINT32_MAX;
}

int rcx__win_lkey(struct rcx_win *w, struct rcx__win_op *op, const void *buf,
		  size_t n, bool put, uint32_t *lkey)
{
	int ret;

	/* a get's buffer, a put's unless copied: held until done */
	op->local = 1;
	if (w->reg && (const uint8_t *)buf >= w->base &&
	    (const uint8_t *)buf - w->base <= (ptrdiff_t)(w->len - n)) {
		/*
		 * The window's own memory: its registration (kept apart from
		 * the shared ones, validate revokes its keys) outlives every
		 * op, which quiesce waits for
		 */
		*lkey = w->reg->lkey;
		return 0;
	}
	ret = rcx__reg_get(w->ctx, buf, n, put ? 0 : RCX_ACCESS_LOCAL_WRITE,
			   &op->reg);
	if (!ret)
		*lkey = op->reg->lkey;
	return ret;
}

/*
 * A put or get the provider runs at once (shm: target memory this process
 * maps), in order after everything posted to the target before: complete
 * when this returns, so it takes no slot, no completion, and nothing of
 * it is kept for a reconnection (win_replay.c). -EAGAIN: post it.
 */
static int rma_now(struct rcx_win *w, struct rcx__win_strm *s,
		   struct rcx_ep *ep, bool put, void *buf, uint32_t len,
		   int target, uint64_t off)
{
	struct rcx_wr wr = {
		.op = put ? RCX_OP_WRITE : RCX_OP_READ,
		.addr = (uintptr_t)buf,
		.length = len,
		.remote_addr = w->peer[target].base + off,
		.rkey = rcx__win_rkey(w, target, off),
	};
	uint64_t waits = w->stats.waits;
	bool fence = false;
	int ret = 0;

	/* nothing of this stream's outstanding to the target: no order to
	 * keep (rcx__order_prepare's own first test, without the call) */
	if (s->t[target].head)
		ret = rcx__order_prepare(
			w, s, target, put ? RCX__ACC_WR : RCX__ACC_RD,
			put ? RCX__VIA_WRITE : RCX__VIA_READ, off, len, &fence);
	/* a fence is the queue's to keep; a wait may have seen the
	 * endpoint go: the post decides again */
	if (ret || fence || waits != w->stats.waits)
		return ret ? ret : -EAGAIN;
	ret = w->ctx->ops->ep_rma_now(ep, &wr);
	if (ret) {
		if (ret == -EOPNOTSUPP)
			w->tgt[target].no_now = 1;
		return -EAGAIN;
	}
	rcx__stats_wrs(&w->ctx->st, &wr, 1);
	w->stats.now++;
	if (w->fence_open)
		w->fence_ops++;
	return 0;
}

/*
 * A put or get run at once passes through no progress, where the
 * transport learns that a peer died: it counts as a progress pass (the
 * context's count of quick passes, ctx.c), and when the whole pass is due
 * (connections, features, the connection poll's cadence) it makes one. So
 * a loop of puts and flushes sees a failure as it would on a NIC, and
 * every put of it still runs at once.
 */
static void now_pass(struct rcx_ctx *ctx)
{
	if (RCX__LIKELY(ctx->quick > 0))
		ctx->quick--;
	else
		rcx__progress(ctx);
}

/*
 * A put or get as a copy through the window's mapping of the target's
 * memory (win_direct.c), while nothing of the window's is outstanding to
 * the target: there is nothing earlier to keep an order with
 * (rcx__order_prepare would find no listed op, every listed op being
 * outstanding), no WR, no completion. Counted as ep_rma_now's were.
 */
static void rma_direct(struct rcx_win *w, const struct rcx__win_tgt *t,
		       bool put, void *buf, size_t len, uint64_t off)
{
	struct rcx_stats *st = &w->ctx->st;

	if (put) {
		memmove(t->dptr + off, buf, len);
		/* the copy before what this process stores next for the
		 * target to see (a notice, an unlock): free on x86 (TSO) */
		atomic_thread_fence(memory_order_release);
		st->rma_put_ops++;
		st->rma_put_bytes += len;
	} else {
		memmove(buf, t->dptr + off, len);
		st->rma_get_ops++;
		st->rma_get_bytes += len;
	}
	st->wrs_posted++;
	w->stats.now++;
	w->stats.direct++;
	if (w->fence_open)
		w->fence_ops++;
	now_pass(w->ctx);
}

/* Lock held, arguments checked. */
static int rma(struct rcx_win *w, bool put, void *buf, size_t len, int target,
	       uint64_t off, struct rcx_req *req)
{
	struct rcx__win_tgt *t = &w->tgt[target];
	unsigned int cls = put ? RCX__ACC_WR : RCX__ACC_RD;
	struct rcx__win_strm *s;
	struct rcx__win_op *op;
	struct rcx_wr wr;
	struct rcx_ep *ep;
	uint32_t *sq, n, inl, max;
	bool f;
	int ret;

	if (RCX__UNLIKELY(t->dstate == RCX__DIRECT_UNTRIED ||
			  (t->dptr && t->dkey != w->peer[target].rkey)))
		rcx__win_direct_open(w, target);
	if (RCX__LIKELY(t->dptr != NULL) && !t->inflight) {
		rma_direct(w, t, put, buf, len, off);
		return 0;
	}
	s = rcx__order_strm(w);
	if (!s)
		return -ENOMEM;
	max = rcx__win_rma_wr_max(w->ctx);
	/* this process's memory, or a shared window's: a plain copy */
	if (target == w->rank || w->shr) {
		ret = rcx__order_prepare(w, s, target, cls, RCX__VIA_CPU, off,
					 len, &f);
		if (ret)
			return ret;
		if (len && put)
			memmove(rcx__win_tptr(w, target, off), buf, len);
		else if (len)
			memmove(buf, rcx__win_tptr(w, target, off), len);
		if (w->fence_open)
			w->fence_ops++;
		return 0;
	}
	ret = rcx__win_ep(w, target, &ep, &sq);
	if (ret)
		return ret;
	if (ep && len <= max && !w->tgt[target].no_now &&
	    !rcx__win_replay_waiting(w, target)) {
		ret = rma_now(w, s, ep, put, buf, (uint32_t)len, target, off);
		if (!ret)
			now_pass(w->ctx);
		if (ret != -EAGAIN)
			return ret;
	}
	/* no endpoint while the connection is remade: none inline */
	inl = ep ? w->ctx->ops->ep_max_inline(ep) : 0;
	if (inl > w->ctx->cfg.inline_size)
		inl = (uint32_t)w->ctx->cfg.inline_size;
	while (len) {
		n = len > max ? max : (uint32_t)len;
		ret = rcx__win_op_get(w, target, &op);
		if (ret)
			return ret;
		op->strm = s;
		op->req = req;
		op->cls = cls;
		op->via = put ? RCX__VIA_WRITE : RCX__VIA_READ;
		op->off = off;
		op->len = n;
		memset(&wr, 0, sizeof(wr));
		wr.op = put ? RCX_OP_WRITE : RCX_OP_READ;
		wr.length = n;
		wr.remote_addr = w->peer[target].base + off;
		wr.rkey = rcx__win_rkey(w, target, off);
		if (n <= RCX__WIN_BOUNCE) {
			/* a put's data in the slot, inline or not: the
			 * caller may reuse buf before a reconnection posts
			 * it again (win_replay.c) */
			if (put) {
				memcpy(op->bounce, buf, n);
				if (n <= inl)
					wr.flags = RCX_WR_INLINE;
			} else {
				op->result = buf;
				op->rsize = n;
				op->local = 1;
			}
			wr.addr = (uintptr_t)op->bounce;
			wr.lkey = w->bounce_reg->lkey;
		} else {
			ret = rcx__win_lkey(w, op, buf, n, put, &wr.lkey);
			if (ret) {
				rcx__win_op_put(w, op);
				return ret;
			}
			wr.addr = (uintptr_t)buf;
		}
		ret = rcx__win_post(w, op, &wr, 1);
		if (ret) {
			rcx__win_op_put(w, op);
			return ret;
		}
		rcx__win_issued(w, op);
		buf = (uint8_t *)buf + n;
		off += n;
		len -= n;
	}
	return 0;
}

static int rma_call(struct rcx_win *w, bool put, void *buf, size_t len,
		    int target, size_t disp, struct rcx_req **req)
{
	struct rcx_req *r = NULL;
	uint64_t off;
	int ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	rcx__lock(w->ctx);
	if (target == RCX_PROC_NULL) {
		ret = rcx__win_null(w, req);
		rcx__unlock(w->ctx);
		return ret;
	}
	ret = rma_check(w, buf, len, target, disp, req != NULL, &off);
	if (!ret && req) {
		r = rcx__win_req_new(w);
		if (!r)
			ret = -ENOMEM;
		else
			r->status.count = len;
	}
	if (!ret)
		ret = rma(w, put, buf, len, target, off, r);
	if (!ret && put)
		rcx__win_span_add(w, target, off, len);
	ret = req ? rcx__win_req_finish(r, ret, req) : ret;
	rcx__unlock(w->ctx);
	return ret;
}

RCX_API int rcx_put(struct rcx_win *win, const void *buf, size_t len,
		    int target, size_t disp)
{
	return rma_call(win, true, (void *)buf, len, target, disp, NULL);
}

RCX_API int rcx_get(struct rcx_win *win, void *buf, size_t len, int target,
		    size_t disp)
{
	return rma_call(win, false, buf, len, target, disp, NULL);
}

RCX_API int rcx_rput(struct rcx_win *win, const void *buf, size_t len,
		     int target, size_t disp, struct rcx_req **req)
{
	if (!req)
		return -EINVAL;
	return rma_call(win, true, (void *)buf, len, target, disp, req);
}

RCX_API int rcx_rget(struct rcx_win *win, void *buf, size_t len, int target,
		     size_t disp, struct rcx_req **req)
{
	if (!req)
		return -EINVAL;
	return rma_call(win, false, buf, len, target, disp, req);
}
