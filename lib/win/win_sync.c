/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Window synchronisation: epoch checks, passive target (a lock word per
 * rank taken with NIC atomics, so the target's CPU takes no part),
 * flushes, sync, and active target (fence; post/start/complete/wait are
 * in win_pscw.c).
 *
 * Lock word: the low 32 bits count shared holders, RCX__LOCK_EXCL marks
 * the exclusive holder. Shared: fetch-add 1; if the exclusive bit was
 * set, fetch-add -1 and try again. Exclusive: compare-and-swap 0 ->
 * EXCL. Release: fetch-add -1 or -EXCL. Lock words of this process's own
 * window go through its loopback endpoints like every NIC atomic on its
 * memory (win_acc.c says why).
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

int rcx__win_waited(struct rcx_win *w, int target, struct rcx_wr *wr, void *out,
		    size_t n)
{
	struct rcx__win_op *op;
	int ret;

	ret = rcx__win_op_get(w, target, &op);
	if (ret)
		return ret;
	op->internal = RCX__OP_WAITED;
	op->strm = rcx__order_strm(w);
	if (!wr->addr) {
		wr->addr = (uintptr_t)op->bounce;
		wr->lkey = w->bounce_reg->lkey;
	}
	/* not an RMA operation: never listed, so order checks pass it by */
	op->via = RCX__VIA_WRITE;
	ret = op->strm ? rcx__win_post(w, op, wr, 1) : -ENOMEM;
	if (!ret) {
		rcx__win_wait(w, op_finished, op);
		ret = op->error;
		if (out)
			memcpy(out, op->bounce, n);
	}
	rcx__win_op_put(w, op);
	return ret;
}

/* One atomic on target's lock word, waited for; *old = the prior value. */
static int lock_atomic(struct rcx_win *w, int target, uint8_t opcode,
		       uint64_t cmp_add, uint64_t swap, uint64_t *old)
{
	struct rcx_wr wr;

	if (w->size == 1) { /* nobody else can reach the word */
		*old = *w->ctrl;
		if (opcode == RCX_OP_FADD)
			*w->ctrl += cmp_add;
		else if (*old == cmp_add)
			*w->ctrl = swap;
		return 0;
	}
	memset(&wr, 0, sizeof(wr));
	wr.op = opcode;
	wr.length = 8;
	wr.remote_addr = w->peer[target].ctrl;
	wr.rkey = w->peer[target].ctrl_rkey;
	wr.compare_add = cmp_add;
	wr.swap = swap;
	return rcx__win_waited(w, target, &wr, old, 8);
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
	uint64_t old;
	int ret;

	rcx__win_dyn_sync(w); /* an epoch begins: tables looked at again */
	for (;;) {
		if (type == RCX_LOCK_SHARED)
			ret = lock_atomic(w, target, RCX_OP_FADD, 1, 0, &old);
		else
			ret = lock_atomic(w, target, RCX_OP_CSWAP, 0,
					  RCX__LOCK_EXCL, &old);
		if (ret)
			return ret;
		if (type == RCX_LOCK_SHARED && !(old & RCX__LOCK_EXCL))
			return 0;
		if (type == RCX_LOCK_EXCLUSIVE && old == 0)
			return 0;
		if (type == RCX_LOCK_SHARED) {
			ret = lock_atomic(w, target, RCX_OP_FADD, (uint64_t)-1,
					  0, &old);
			if (ret)
				return ret;
		}
		backoff(w, &us);
		/* the holder may be dead: the window is then invalid */
		if (w->invalid)
			return RCX_ERR_PROC_FAILED;
	}
}

static int release(struct rcx_win *w, int target, int type)
{
	uint64_t old;

	return lock_atomic(w, target, RCX_OP_FADD,
			   type == RCX_LOCK_SHARED
				   ? (uint64_t)-1
				   : (uint64_t)0 - RCX__LOCK_EXCL,
			   0, &old);
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
