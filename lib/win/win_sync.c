/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Window synchronisation: epoch checks, passive target (a lock word per
 * rank taken with NIC atomics, so the target's CPU takes no part),
 * flushes, sync, and active target (fence; post/start/complete/wait are
 * in win_pscw.c).
 *
 * Locks (the control words, win_int.h): an exclusive word holding 0 or
 * the holder's rank + 1, and one shared byte per origin rank that only
 * that origin writes. Every step but one is an RDMA WRITE or READ, which
 * the window sends again after a reconnection (win_replay.c), so a lock
 * survives a transport break on a live peer with its state exact:
 *  - shared: WRITE my byte 1, then READ the exclusive word (one list, in
 *    order on one endpoint). Taken if it is 0; else WRITE my byte 0 and
 *    try again later. Release: WRITE my byte 0.
 *  - exclusive: compare-and-swap the word 0 -> me + 1, then READ every
 *    shared byte. Taken if the swap found 0 and no byte is set; else
 *    swap it back and try again later. Release: compare-and-swap
 *    me + 1 -> 0 (the word is only ever changed by NIC atomics). A swap
 *    whose outcome the transport could not report (RCX_ERR_TRANSPORT) is
 *    settled by reading the word: me + 1 there is this rank's and nobody
 *    else's.
 * Both sides write their mark before they read the other's, at the
 * target's memory, so at most one of two racing requests finds the
 * other's mark missing (and both may back off: the next try is later).
 * Lock words of this process's own window go through its loopback
 * endpoints like every NIC atomic on its memory (win_acc.c says why).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include "lib/win/win_int.h"

/* ---- flush */

struct idle_arg {
	int target; /* -1: all */
	bool local;
};

/* The targets a flush of target (-1: all) looks at: [*lo, return) */
static int flush_range(const struct rcx_win *w, int target, int *lo)
{
	*lo = target >= 0 ? target : 0;
	return target >= 0 ? target + 1 : w->size;
}

static bool idle(struct rcx_win *w, void *arg)
{
	struct idle_arg *a = arg;
	int t, hi = flush_range(w, a->target, &t);

	if (w->invalid)
		return true;
	for (; t < hi; t++)
		if (a->local ? w->tgt[t].local : w->tgt[t].inflight)
			return false;
	return true;
}

int rcx__win_flush_locked(struct rcx_win *w, int target, bool local)
{
	struct idle_arg a = { target, local };
	struct rcx__win_tgt *tg;
	int t, hi, err = 0;

	/* one target with nothing outstanding and no error (puts that
	 * were copies, win_direct.c): complete there already */
	if (target >= 0 && !w->dyn && !w->invalid) {
		tg = &w->tgt[target];
		if (!tg->inflight && !tg->local && !tg->error) {
			if (!local)
				tg->nspan = 0;
			return 0;
		}
	}
	/* a dynamic window's peers may have detached since: look again */
	rcx__win_dyn_sync(w);
	if (!idle(w, &a))
		rcx__win_wait(w, idle, &a);
	for (hi = flush_range(w, target, &t); t < hi; t++) {
		if (w->tgt[t].error && !err)
			err = w->tgt[t].error;
		w->tgt[t].error = 0;
		/* complete at the target: defined there, whatever happens */
		if (!local && !w->invalid && !w->tgt[t].inflight)
			w->tgt[t].nspan = 0;
	}
	/* the window failed while we waited: what is left fails with it */
	if (w->invalid && !err)
		err = RCX_ERR_PROC_FAILED;
	return err;
}

static int flush_call(struct rcx_win *w, int target, bool local)
{
	int ret;

	if (!rcx__win_live(w) || target >= w->size ||
	    (target < -1 && target != RCX_PROC_NULL))
		return -EINVAL;
	if (target == RCX_PROC_NULL)
		return 0; /* MPI: PROC_NULL is a valid target of every call */
	rcx__lock(w->ctx);
	ret = rcx__win_epoch_passive(w, target);
	w->ctx->st.flushes += !ret;
	if (!ret)
		ret = rcx__win_flush_locked(w, target, local);
	rcx__unlock(w->ctx);
	return ret;
}

RCX_API int rcx_win_flush(struct rcx_win *win, int target)
{
	if (target < 0 && target != RCX_PROC_NULL)
		return -EINVAL;
	return flush_call(win, target, false);
}

RCX_API int rcx_win_flush_all(struct rcx_win *win)
{
	return flush_call(win, -1, false);
}

RCX_API int rcx_win_flush_local(struct rcx_win *win, int target)
{
	if (target < 0 && target != RCX_PROC_NULL)
		return -EINVAL;
	return flush_call(win, target, true);
}

RCX_API int rcx_win_flush_local_all(struct rcx_win *win)
{
	return flush_call(win, -1, true);
}

RCX_API int rcx_win_sync(struct rcx_win *win)
{
	if (!rcx__win_live(win))
		return -EINVAL;
	if (win->invalid)
		return RCX_ERR_WIN_INVALID;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

/* ---- lock words */

static bool op_finished(struct rcx_win *w, void *arg)
{
	return ((struct rcx__win_op *)arg)->nwr == 0;
}

/*
 * Post the list wr[0..n) to target from one operation slot and wait for
 * it. With off, each WR's addr is an offset into the slot's bounce
 * memory (its registered buffer); without, an addr of 0 means its start.
 * in (inlen bytes) is copied to bounce offset LOCK_SRC first; the first
 * outlen bytes of the bounce memory are copied to out after.
 */
#define LOCK_SRC 8  /* a lock WRITE's source byte */
#define LOCK_RD	 16 /* shared bytes read by an exclusive request */

static int waited_list(struct rcx_win *w, int target, struct rcx_wr *wr, int n,
		       bool off, uint8_t in, void *out, size_t outlen)
{
	struct rcx__win_op *op;
	int i, ret;

	ret = rcx__win_op_get(w, target, &op);
	if (ret)
		return ret;
	op->internal = RCX__OP_WAITED;
	op->strm = rcx__order_strm(w);
	memset(op->bounce + LOCK_SRC, 0, 8);
	op->bounce[LOCK_SRC] = in;
	for (i = 0; i < n; i++) {
		if (off || !wr[i].addr) {
			wr[i].addr += (uintptr_t)op->bounce;
			wr[i].lkey = w->bounce_reg->lkey;
		}
	}
	/* not an RMA operation: never listed, so order checks pass it by */
	op->via = RCX__VIA_WRITE;
	ret = op->strm ? rcx__win_post(w, op, wr, n) : -ENOMEM;
	if (!ret) {
		rcx__win_wait(w, op_finished, op);
		ret = op->error;
		if (out)
			memcpy(out, op->bounce, outlen);
	}
	rcx__win_op_put(w, op);
	return ret;
}

int rcx__win_waited(struct rcx_win *w, int target, struct rcx_wr *wr, void *out,
		    size_t n)
{
	return waited_list(w, target, wr, 1, false, 0, out, n);
}

/* A WR on target's control words at off, with bounce offset at. */
static void ctrl_wr(struct rcx_win *w, struct rcx_wr *wr, int target,
		    uint8_t op, size_t off, uint32_t len, uintptr_t at)
{
	memset(wr, 0, sizeof(*wr));
	wr->op = op;
	wr->length = len;
	wr->addr = at;
	wr->remote_addr = w->peer[target].ctrl + off;
	wr->rkey = w->peer[target].ctrl_rkey;
}

/* This rank's shared byte at target := v; with excl, READ the
 * exclusive word into *excl behind it (in order on one endpoint). */
static int shared_mark(struct rcx_win *w, int target, uint8_t v, uint64_t *excl)
{
	struct rcx_wr wr[2];

	if (w->size == 1) { /* nobody else can reach the words */
		((uint8_t *)w->ctrl)[rcx__win_ctrl_shared(1)] = v;
		if (excl)
			*excl = *w->ctrl;
		return 0;
	}
	ctrl_wr(w, &wr[0], target, RCX_OP_WRITE,
		rcx__win_ctrl_shared(w->size) + (size_t)w->rank, 1, LOCK_SRC);
	ctrl_wr(w, &wr[1], target, RCX_OP_READ, 0, 8, 0);
	return waited_list(w, target, wr, excl ? 2 : 1, true, v, excl,
			   excl ? 8 : 0);
}

/*
 * The exclusive word at target: me + 1 -> 0 (its holder lets it go), by
 * compare-and-swap as every other change to it, so no NIC's atomic can
 * interleave with a plain WRITE there. A swap the transport could not
 * report on is settled by reading the word.
 */
static int excl_clear(struct rcx_win *w, int target)
{
	uint64_t me = (uint64_t)w->rank + 1, old;
	struct rcx_wr wr;
	int ret;

	if (w->size == 1) {
		*w->ctrl = 0;
		return 0;
	}
	for (;;) {
		ctrl_wr(w, &wr, target, RCX_OP_CSWAP, 0, 8, 0);
		wr.compare_add = me;
		wr.swap = 0;
		ret = waited_list(w, target, &wr, 1, true, 0, NULL, 0);
		if (ret != RCX_ERR_TRANSPORT)
			return ret;
		ctrl_wr(w, &wr, target, RCX_OP_READ, 0, 8, 0);
		ret = waited_list(w, target, &wr, 1, true, 0, &old, 8);
		if (ret || old != me)
			return ret;
	}
}

/* Shared bytes [from, from + n) of target set by anyone but this rank? */
static bool shared_set(const struct rcx_win *w, int from, const uint8_t *b,
		       int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (b[i] && from + i != w->rank)
			return true;
	return false;
}

/*
 * Compare-and-swap target's exclusive word 0 -> rank + 1, and READ the
 * first shared bytes behind it: 1 if taken, 0 if someone holds it or
 * a shared mark was seen (the word put back), < 0 an error.
 */
static int excl_try(struct rcx_win *w, int target)
{
	uint8_t b[RCX__WIN_BOUNCE], *sh = b + LOCK_RD;
	uint64_t me = (uint64_t)w->rank + 1, old;
	size_t base = rcx__win_ctrl_shared(w->size);
	int from, n, chunk = RCX__WIN_BOUNCE - LOCK_RD, ret;
	struct rcx_wr wr[2];

	if (w->size == 1) {
		if (*w->ctrl)
			return 0;
		*w->ctrl = me;
		return 1;
	}
	n = w->size < chunk ? w->size : chunk;
	ctrl_wr(w, &wr[0], target, RCX_OP_CSWAP, 0, 8, 0);
	wr[0].compare_add = 0;
	wr[0].swap = me;
	ctrl_wr(w, &wr[1], target, RCX_OP_READ, base, (uint32_t)n, LOCK_RD);
	ret = waited_list(w, target, wr, 2, true, 0, b, LOCK_RD + (size_t)n);
	if (ret == RCX_ERR_TRANSPORT) {
		/* the swap may or may not have run: the word says */
		ctrl_wr(w, &wr[0], target, RCX_OP_READ, 0, 8, 0);
		ctrl_wr(w, &wr[1], target, RCX_OP_READ, base, (uint32_t)n,
			LOCK_RD);
		ret = waited_list(w, target, wr, 2, true, 0, b,
				  LOCK_RD + (size_t)n);
		memcpy(&old, b, 8);
		if (!ret && old == me)
			memset(b, 0, 8); /* it ran: as if the swap found 0 */
	}
	if (ret)
		return ret;
	memcpy(&old, b, 8);
	if (old)
		return 0;
	for (from = 0; !shared_set(w, from, sh, n);) {
		from += n;
		if (from >= w->size)
			return 1;
		n = w->size - from < chunk ? w->size - from : chunk;
		ctrl_wr(w, &wr[0], target, RCX_OP_READ, base + (size_t)from,
			(uint32_t)n, LOCK_RD);
		ret = waited_list(w, target, wr, 1, true, 0, b,
				  LOCK_RD + (size_t)n);
		if (ret) {
			excl_clear(w, target);
			return ret;
		}
	}
	ret = excl_clear(w, target);
	return ret ? ret : 0;
}

/* Let the holder go: progress for a while, longer each time. */
static void backoff(struct rcx_win *w, unsigned int *us)
{
	long long end = rcx__now_us() + *us;

	while (rcx__now_us() < end)
		if (!rcx__progress(w->ctx))
			sched_yield();
	if (*us < 4096)
		*us *= 2;
}

static int acquire(struct rcx_win *w, int target, int type)
{
	unsigned int us = 8;
	uint64_t excl;
	int ret;

	rcx__win_dyn_sync(w); /* an epoch begins: tables looked at again */
	for (;;) {
		if (type == RCX_LOCK_SHARED) {
			ret = shared_mark(w, target, 1, &excl);
			if (ret)
				return ret;
			if (!excl)
				return 0;
			ret = shared_mark(w, target, 0, NULL);
			if (ret)
				return ret;
		} else {
			ret = excl_try(w, target);
			if (ret)
				return ret < 0 ? ret : 0;
		}
		backoff(w, &us);
		/* the holder may be dead: the window is then invalid */
		if (w->invalid)
			return RCX_ERR_PROC_FAILED;
	}
}

static int release(struct rcx_win *w, int target, int type)
{
	return type == RCX_LOCK_SHARED ? shared_mark(w, target, 0, NULL)
				       : excl_clear(w, target);
}

/* asserts of lock and lock_all: 0 or RCX_MODE_NOCHECK (logged if not) */
static bool lock_asserts_ok(const char *fn, int asserts)
{
	if (!(asserts & ~RCX_MODE_NOCHECK))
		return true;
	rcx__log(RCX__LOG_ERROR, "win",
		 "%s: asserts 0x%x: only RCX_MODE_NOCHECK (0x%x) applies to a "
		 "lock",
		 fn, (unsigned int)asserts, (unsigned int)RCX_MODE_NOCHECK);
	return false;
}

RCX_API int rcx_win_lock_assert(struct rcx_win *w, int type, int target,
				int asserts)
{
	bool nocheck = asserts & RCX_MODE_NOCHECK;
	int ret;

	if (!rcx__win_live(w) || target >= w->size ||
	    (target < 0 && target != RCX_PROC_NULL) ||
	    (type != RCX_LOCK_SHARED && type != RCX_LOCK_EXCLUSIVE) ||
	    !lock_asserts_ok("rcx_win_lock_assert", asserts))
		return -EINVAL;
	if (target == RCX_PROC_NULL)
		return 0; /* no epoch to open: MPI allows it */
	rcx__lock(w->ctx);
	if (w->invalid) {
		ret = RCX_ERR_WIN_INVALID;
		goto out;
	}
	if (w->tgt[target].lock || w->lock_all || rcx__win_fence_busy(w) ||
	    rcx__win_pscw_open(w)) {
		ret = RCX_ERR_EPOCH;
		goto out;
	}
	/* NOCHECK: the caller knows no conflicting lock is held or asked
	 * for, so the lock word is left alone (no round trip) */
	if (rcx__win_excluded(w, target)) {
		ret = RCX_ERR_PROC_FAILED;
	} else if (nocheck) {
		rcx__win_dyn_sync(w); /* as acquire does */
		ret = 0;
	} else {
		ret = acquire(w, target, type);
	}
	if (!ret && w->invalid) {
		if (!nocheck)
			release(w, target, type);
		ret = RCX_ERR_PROC_FAILED;
	}
	if (!ret) {
		w->fence_open = false;
		w->tgt[target].lock = (uint8_t)type;
		w->tgt[target].nocheck = nocheck;
		w->nlocked++;
	}
out:
	rcx__unlock(w->ctx);
	return ret;
}

RCX_API int rcx_win_lock(struct rcx_win *w, int type, int target)
{
	return rcx_win_lock_assert(w, type, target, 0);
}

RCX_API int rcx_win_unlock(struct rcx_win *w, int target)
{
	int ret, ret2 = 0;

	if (!rcx__win_live(w) || target >= w->size ||
	    (target < 0 && target != RCX_PROC_NULL))
		return -EINVAL;
	if (target == RCX_PROC_NULL)
		return 0;
	rcx__lock(w->ctx);
	if (w->invalid || !w->tgt[target].lock) {
		rcx__unlock(w->ctx);
		return w->invalid ? RCX_ERR_WIN_INVALID : RCX_ERR_EPOCH;
	}
	/* everything to target complete there before the lock goes */
	ret = rcx__win_flush_locked(w, target, false);
	if (!w->tgt[target].nocheck)
		ret2 = release(w, target, w->tgt[target].lock);
	w->tgt[target].lock = 0;
	w->tgt[target].nocheck = 0;
	w->nlocked--;
	rcx__unlock(w->ctx);
	return ret ? ret : ret2;
}

RCX_API int rcx_win_lock_all_assert(struct rcx_win *w, int asserts)
{
	bool nocheck = asserts & RCX_MODE_NOCHECK;
	int t, ret = 0;

	if (!rcx__win_live(w) ||
	    !lock_asserts_ok("rcx_win_lock_all_assert", asserts))
		return -EINVAL;
	rcx__lock(w->ctx);
	if (w->invalid) {
		ret = RCX_ERR_WIN_INVALID;
		goto out;
	}
	if (w->lock_all || w->nlocked || rcx__win_fence_busy(w) ||
	    rcx__win_pscw_open(w)) {
		ret = RCX_ERR_EPOCH;
		goto out;
	}
	if (nocheck)
		rcx__win_dyn_sync(w);
	for (t = 0; t < w->size && !ret && !nocheck; t++)
		if (!rcx__win_excluded(w, t))
			ret = acquire(w, t, RCX_LOCK_SHARED);
	/* t - 1 failed, or all were taken and the window failed since */
	if (!ret && w->invalid) {
		ret = RCX_ERR_PROC_FAILED;
		t++;
	}
	if (ret) {
		while (!nocheck && --t > 0)
			if (!rcx__win_excluded(w, t - 1))
				release(w, t - 1, RCX_LOCK_SHARED);
		goto out;
	}
	w->fence_open = false;
	w->lock_all = true;
	w->lock_all_nocheck = nocheck;
out:
	rcx__unlock(w->ctx);
	return ret;
}

RCX_API int rcx_win_lock_all(struct rcx_win *w)
{
	return rcx_win_lock_all_assert(w, 0);
}

RCX_API int rcx_win_unlock_all(struct rcx_win *w)
{
	int t, ret, ret2 = 0, r;

	if (!rcx__win_live(w))
		return -EINVAL;
	rcx__lock(w->ctx);
	if (w->invalid || !w->lock_all) {
		rcx__unlock(w->ctx);
		return w->invalid ? RCX_ERR_WIN_INVALID : RCX_ERR_EPOCH;
	}
	ret = rcx__win_flush_locked(w, -1, false);
	for (t = 0; t < w->size && !w->lock_all_nocheck; t++) {
		if (rcx__win_excluded(w, t))
			continue;
		r = release(w, t, RCX_LOCK_SHARED);
		if (r && !ret2)
			ret2 = r;
	}
	w->lock_all = false;
	w->lock_all_nocheck = false;
	rcx__unlock(w->ctx);
	return ret ? ret : ret2;
}

/* ---- active target */

RCX_API int rcx_win_fence(struct rcx_win *w, int asserts)
{
	int ret, ret2;

	if (!rcx__win_live(w))
		return -EINVAL;
	if (asserts & ~(RCX_MODE_NOPRECEDE | RCX_MODE_NOSUCCEED |
			RCX_MODE_NOSTORE | RCX_MODE_NOPUT)) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_fence: asserts 0x%x: not one it takes",
			 (unsigned int)asserts);
		return -EINVAL;
	}
	rcx__lock(w->ctx);
	if (w->invalid || w->nlocked || w->lock_all || rcx__win_pscw_open(w)) {
		rcx__unlock(w->ctx);
		return w->invalid ? RCX_ERR_WIN_INVALID : RCX_ERR_EPOCH;
	}
	/* our operations complete at their targets before anyone passes */
	ret = rcx__win_flush_locked(w, -1, false);
	ret2 = ret ? 0 : rcx__win_barrier(w);
	rcx__unlock(w->ctx);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	rcx__lock(w->ctx);
	if (w->invalid && !ret && !ret2)
		ret = RCX_ERR_PROC_FAILED;
	w->fence_open = !(asserts & RCX_MODE_NOSUCCEED) && !w->invalid;
	w->fence_ops = 0;
	rcx__unlock(w->ctx);
	return ret ? ret : ret2;
}
