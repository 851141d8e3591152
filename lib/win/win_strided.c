/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Strided put, get and accumulate (MPI_Type_vector layouts at both
 * ends). The two layouts are walked together into contiguous pieces: a
 * piece ends where a block of either ends. To another process a put or
 * get posts one RDMA WRITE or READ per piece, a list of up to STR_WRS
 * WRs per operation slot, each list through rcx__win_post (which waits
 * for room in the send-queue budget and applies rcx_win_order to the
 * list's first WR; RC keeps the rest in order behind it). The provider
 * interface carries one segment per WR, so a piece is a WR, not an SGE.
 * To this process: copies. An accumulate is one rcx_accumulate per piece.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "lib/win/win_int.h"

/* WRs of one slot's list: well inside RCX__WIN_SQ_OPS, so lists of
 * other operations (and the kicks) find room between ours */
#define STR_WRS 32

/* one layout's position: block, units into it */
struct side {
	const struct rcx_strided *l;
	size_t blk, in;
};

/* a strided call, checked */
struct str {
	const char *fn;
	struct rcx_win *w;
	uint8_t *buf;
	struct side o, t;
	size_t unit;  /* bytes */
	size_t total; /* units of each layout */
	int target;
	uint64_t off;	    /* byte offset of t's first block */
	ptrdiff_t tlo, thi; /* t's extent, bytes from its first block */
};

static int bad(const char *fn, const char *fmt, long long a, long long b)
{
	char msg[160];

	snprintf(msg, sizeof(msg), fmt, a, b);
	rcx__log(RCX__LOG_ERROR, "win", "%s: %s", fn, msg);
	return -EINVAL;
}

/* l's extent in bytes from its first block, [*lo, *hi) */
static int extent(const char *fn, const char *which,
		  const struct rcx_strided *l, size_t unit, ptrdiff_t *lo,
		  ptrdiff_t *hi)
{
	ptrdiff_t last;

	*lo = *hi = 0;
	if (!l->count || !l->blocklen)
		return 0;
	if (l->count - 1 > PTRDIFF_MAX ||
	    __builtin_mul_overflow((ptrdiff_t)(l->count - 1), l->stride,
				   &last) ||
	    __builtin_mul_overflow(last, (ptrdiff_t)unit, &last) ||
	    l->blocklen > PTRDIFF_MAX / unit ||
	    __builtin_add_overflow(last > 0 ? last : 0,
				   (ptrdiff_t)(l->blocklen * unit), hi)) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "%s: %s layout's extent overflows (count %zu, "
			 "blocklen %zu, stride %td)",
			 fn, which, l->count, l->blocklen, l->stride);
		return -EINVAL;
	}
	*lo = last < 0 ? last : 0;
	return 0;
}

static size_t units(const struct rcx_strided *l)
{
	return l->count && l->blocklen <= SIZE_MAX / l->count
		       ? l->count * l->blocklen
		       : (l->count && l->blocklen ? SIZE_MAX : 0);
}

/* The layouts, buf and the target range; s->off set by the caller. */
static int layouts_ok(struct str *s)
{
	const struct rcx_strided *o = s->o.l, *t = s->t.l;
	uint64_t size = s->w->peer[s->target].size;
	ptrdiff_t olo, ohi;
	int ret;

	s->total = units(o);
	if (s->total != units(t) || s->total == SIZE_MAX)
		return bad(s->fn, "layouts hold %lld and %lld units",
			   (long long)units(o), (long long)units(t));
	ret = extent(s->fn, "origin", o, s->unit, &olo, &ohi);
	if (!ret)
		ret = extent(s->fn, "target", t, s->unit, &s->tlo, &s->thi);
	if (ret)
		return ret;
	if (s->total && !s->buf)
		return bad(s->fn, "buf NULL with %lld units (unit %lld bytes)",
			   (long long)s->total, (long long)s->unit);
	if ((s->tlo < 0 && (uint64_t)-s->tlo > s->off) ||
	    s->off + (uint64_t)s->thi > size) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "%s: target layout (count %zu, blocklen %zu, stride "
			 "%td) at byte %llu reaches [%lld, %lld) outside "
			 "rank %d's window of %llu bytes",
			 s->fn, t->count, t->blocklen, t->stride,
			 (unsigned long long)s->off,
			 (long long)s->off + (long long)s->tlo,
			 (long long)s->off + (long long)s->thi, s->target,
			 (unsigned long long)size);
		return -EINVAL;
	}
	return 0;
}

/* The next contiguous piece (byte positions from each first block,
 * bytes); false at the end. */
static bool walk(struct str *s, ptrdiff_t *o, ptrdiff_t *t, size_t *len)
{
	struct side *a = &s->o, *b = &s->t;
	size_t na, nb, n;

	if (!s->total || a->blk >= a->l->count || b->blk >= b->l->count)
		return false;
	na = a->l->blocklen - a->in;
	nb = b->l->blocklen - b->in;
	n = na < nb ? na : nb;
	*o = ((ptrdiff_t)a->blk * a->l->stride + (ptrdiff_t)a->in) *
	     (ptrdiff_t)s->unit;
	*t = ((ptrdiff_t)b->blk * b->l->stride + (ptrdiff_t)b->in) *
	     (ptrdiff_t)s->unit;
	*len = n * s->unit;
	a->in += n;
	b->in += n;
	if (a->in == a->l->blocklen) {
		a->blk++;
		a->in = 0;
	}
	if (b->in == b->l->blocklen) {
		b->blk++;
		b->in = 0;
	}
	return true;
}

/* to this process: copies, ordered as a CPU access */
static int rw_self(struct str *s, struct rcx__win_strm *st, bool put)
{
	struct rcx_win *w = s->w;
	ptrdiff_t o, t;
	size_t len;
	bool f;
	int ret;

	ret = rcx__order_prepare(
		w, st, s->target, put ? RCX__ACC_WR : RCX__ACC_RD, RCX__VIA_CPU,
		s->off + s->tlo, (uint64_t)(s->thi - s->tlo), &f);
	if (ret)
		return ret;
	while (walk(s, &o, &t, &len))
		if (put)
			memmove(w->base + s->off + t, s->buf + o, len);
		else
			memmove(s->buf + o, w->base + s->off + t, len);
	if (w->fence_open)
		w->fence_ops++;
	return 0;
}

/* A piece not yet posted: what is left of it. */
struct rest {
	ptrdiff_t o, t;
	size_t len;
};

/* One slot's list of WRs: up to STR_WRS pieces (long ones split). */
static int rw_list(struct str *s, struct rcx__win_strm *st, bool put,
		   struct rest *r)
{
	struct rcx_win *w = s->w;
	struct rcx_wr wr[STR_WRS];
	uint32_t max = rcx__win_rma_wr_max(w->ctx), lkey = 0;
	ptrdiff_t olo = PTRDIFF_MAX, ohi = PTRDIFF_MIN;
	ptrdiff_t tlo = PTRDIFF_MAX, thi = PTRDIFF_MIN;
	struct rcx__win_op *op;
	size_t n;
	int k = 0, i, ret;

	memset(wr, 0, sizeof(wr));
	while (k < STR_WRS && (r->len || walk(s, &r->o, &r->t, &r->len))) {
		n = r->len < max ? r->len : max;
		wr[k].op = put ? RCX_OP_WRITE : RCX_OP_READ;
		wr[k].length = (uint32_t)n;
		wr[k].addr = (uintptr_t)(s->buf + r->o);
		wr[k].remote_addr = w->peer[s->target].base + s->off + r->t;
		wr[k].rkey = w->peer[s->target].rkey;
		olo = r->o < olo ? r->o : olo;
		ohi = r->o + (ptrdiff_t)n > ohi ? r->o + (ptrdiff_t)n : ohi;
		tlo = r->t < tlo ? r->t : tlo;
		thi = r->t + (ptrdiff_t)n > thi ? r->t + (ptrdiff_t)n : thi;
		r->o += (ptrdiff_t)n;
		r->t += (ptrdiff_t)n;
		r->len -= n;
		k++;
	}
	if (!k)
		return 0;
	ret = rcx__win_op_get(w, s->target, &op);
	if (ret)
		return ret;
	op->strm = st;
	op->cls = put ? RCX__ACC_WR : RCX__ACC_RD;
	op->via = put ? RCX__VIA_WRITE : RCX__VIA_READ;
	op->off = s->off + tlo;
	op->len = (uint64_t)(thi - tlo);
	ret = rcx__win_lkey(w, op, s->buf + olo, (size_t)(ohi - olo), put,
			    &lkey);
	for (i = 0; i < k; i++)
		wr[i].lkey = lkey;
	if (!ret)
		ret = rcx__win_post(w, op, wr, k);
	if (ret) {
		rcx__win_op_put(w, op);
		return ret;
	}
	rcx__win_issued(w, op);
	return k;
}

static int rw_call(struct str *s, size_t disp, bool put)
{
	struct rcx_win *w = s->w;
	struct rcx__win_strm *st;
	struct rest r = { 0, 0, 0 };
	int ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	if (s->target == RCX_PROC_NULL)
		return 0;
	if (!s->o.l || !s->t.l)
		return bad(s->fn, "layout NULL (origin %lld, target %lld)",
			   !s->o.l, !s->t.l);
	rcx__lock(w->ctx);
	ret = rcx__win_rma_check(w, s->buf, 0, s->target, disp, false, &s->off);
	if (!ret)
		ret = layouts_ok(s);
	st = ret ? NULL : rcx__order_strm(w);
	if (!ret && !st)
		ret = -ENOMEM;
	if (!ret && s->total && s->target == w->rank)
		ret = rw_self(s, st, put);
	else if (!ret && s->total)
		do
			ret = rw_list(s, st, put, &r);
		while (ret > 0);
	if (!ret && put && s->total)
		rcx__win_span_add(w, s->target, s->off + s->tlo,
				  (uint64_t)(s->thi - s->tlo));
	rcx__unlock(w->ctx);
	return ret;
}

RCX_API int rcx_put_strided(struct rcx_win *win, const void *buf,
			    const struct rcx_strided *o, int target,
			    size_t disp, const struct rcx_strided *t)
{
	struct str s = { .fn = __func__,
			 .w = win,
			 .buf = (uint8_t *)buf,
			 .o.l = o,
			 .t.l = t,
			 .unit = 1,
			 .target = target };

	return rw_call(&s, disp, true);
}

RCX_API int rcx_get_strided(struct rcx_win *win, void *buf,
			    const struct rcx_strided *o, int target,
			    size_t disp, const struct rcx_strided *t)
{
	struct str s = { .fn = __func__,
			 .w = win,
			 .buf = buf,
			 .o.l = o,
			 .t.l = t,
			 .unit = 1,
			 .target = target };

	return rw_call(&s, disp, false);
}

RCX_API int rcx_accumulate_strided(struct rcx_win *win, const void *buf,
				   const struct rcx_strided *o, int dtype,
				   int target, size_t disp,
				   const struct rcx_strided *t, int op)
{
	struct str s = { .fn = __func__,
			 .w = win,
			 .buf = (uint8_t *)buf,
			 .o.l = o,
			 .t.l = t,
			 .unit = rcx__dtype_size(dtype),
			 .target = target };
	ptrdiff_t po, pt;
	size_t len;
	int ret;

	if (!rcx__win_live(win))
		return -EINVAL;
	if (!o || !t)
		return bad(__func__, "layout NULL (origin %lld, target %lld)",
			   !o, !t);
	rcx__lock(win->ctx);
	/* the type, op, target, epoch; then the layouts in its units */
	ret = target == RCX_PROC_NULL
		      ? rcx__dtype_check("win", __func__, dtype, op,
					 RCX__DT_ACC)
		      : rcx__win_acc_check(win, __func__, buf, dtype, op,
					   target, disp, &s.off);
	if (!ret && target != RCX_PROC_NULL) {
		if (op == RCX_NO_OP && !buf)
			s.buf = win->base; /* read nothing, check nothing */
		ret = layouts_ok(&s);
	}
	while (!ret && target != RCX_PROC_NULL && walk(&s, &po, &pt, &len))
		ret = rcx__win_acc_piece(win, s.buf + po, len / s.unit, dtype,
					 op, target, s.off + pt);
	rcx__unlock(win->ctx);
	return ret;
}
