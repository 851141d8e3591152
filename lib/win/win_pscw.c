/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * General active target synchronisation (MPI_Win_post, start, complete,
 * wait, test) over the window's control words (win_int.h): each rank
 * has, per rank of the group, a post word and a complete word that the
 * others write with RDMA, so neither side's CPU has to answer.
 *
 * Counters, never flags: the target T counts its posts to origin O
 * (posted[O]) and writes the count into O's post word for T; O counts
 * its access epochs to T (started[O's T]) and a start waits until T's
 * post word there has passed that count. complete writes started[T]
 * into T's complete word for O; T's wait ends when that word reaches
 * posted[O]. A post made with RCX_MODE_NOCHECK writes nothing (every
 * matching start asserts it too and does not look); the next post that
 * writes carries the count, so the words never fall behind for good.
 * A write lost to a failure is covered by the window becoming invalid:
 * every epoch ends, the counters restart from 0 here and the words from
 * 0 when validate rebuilds the window (win_ft.c).
 *
 * Order of complete's word behind the epoch's operations: the word is an
 * RDMA WRITE on the queue pair of the operations (rcx__win_post), issued
 * as the first operation after an RCX_ORDER_WRITE of the caller's
 * stream, so order.c decides exactly as for rcx_win_order: nothing after
 * WRITEs (IBA 9.5: one RC QP executes in order at the responder), the
 * fence indicator after READs and ATOMICs (10.8.3.3), a wait for the
 * reply of software accumulates and across two paths. The origin then
 * waits only for its completions (local completion, which MPI asks of
 * complete), not for a flush before the word: one round trip, not two.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/win/win_int.h"

/*
 * A notice is an RDMA write: it raises no event here, so a wait for one
 * that has spent its spin budget (RCX_SPIN_US) looks again this often.
 */
#define NOTICE_SLEEP_MS 1

/* Byte offsets of rank from's post and complete words (win_int.h). */
static uint64_t post_word(int from)
{
	return RCX__WIN_CTRL_HDR + (uint64_t)from * 8;
}

static uint64_t done_word(const struct rcx_win *w, int from)
{
	return RCX__WIN_CTRL_HDR + ((uint64_t)w->size + from) * 8;
}

/* A word of this process's control words, written by the peers' NICs. */
static uint64_t *word(struct rcx_win *w, uint64_t off)
{
	return (uint64_t *)((uint8_t *)w->ctrl + off);
}

static uint64_t word_load(struct rcx_win *w, uint64_t off)
{
	/* acquire: what the writer placed before the word is seen after */
	return __atomic_load_n(word(w, off), __ATOMIC_ACQUIRE);
}

static int state_get(struct rcx_win *w, struct rcx__win_pscw **out)
{
	size_t n = (size_t)w->size;
	struct rcx__win_pscw *p = w->pscw;

	if (!p) {
		/* one block: counters first (8-byte aligned), then marks */
		p = calloc(1, sizeof(*p) + n * 2 * sizeof(uint64_t) + n * 2);
		if (!p)
			return -ENOMEM;
		p->posted = (uint64_t *)(p + 1);
		p->started = p->posted + n;
		p->in_access = (uint8_t *)(p->started + n);
		p->in_expose = p->in_access + n;
		w->pscw = p;
	}
	*out = p;
	return 0;
}

void rcx__win_pscw_reset(struct rcx_win *w)
{
	struct rcx__win_pscw *p = w->pscw;
	size_t n = (size_t)w->size;

	if (!p)
		return;
	p->access = p->expose = false;
	memset(p->posted, 0, n * 2 * sizeof(uint64_t) + n * 2);
}

/*
 * Can an epoch of this kind open, with the ranks given? The ranks are
 * marked in mark[] ([size], cleared again on an error). Lock held.
 */
static int open_check(struct rcx_win *w, const char *call, bool expose, int n,
		      const int *ranks, uint8_t *mark)
{
	struct rcx__win_pscw *p = w->pscw;
	int i, r, ret = 0;

	if (w->invalid)
		return RCX_ERR_WIN_INVALID;
	if (w->nlocked || w->lock_all || rcx__win_fence_busy(w) ||
	    (expose ? p->expose : p->access))
		return RCX_ERR_EPOCH;
	if (n < 0 || n > w->size || (!ranks && n)) {
		rcx__log(RCX__LOG_ERROR, "win", "%s: %d ranks%s (group of %d)",
			 call, n, ranks ? "" : " and no list", w->size);
		return -EINVAL;
	}
	memset(mark, 0, (size_t)w->size);
	for (i = 0; i < n && !ret; i++) {
		r = ranks[i];
		if (r < 0 || r >= w->size || mark[r]) {
			rcx__log(RCX__LOG_ERROR, "win", "%s: rank %d %s", call,
				 r,
				 r < 0 || r >= w->size ? "out of range"
						       : "given twice");
			ret = -EINVAL;
		} else if (rcx__win_excluded(w, r) ||
			   (r != w->rank &&
			    rcx__win_conn(w, r)->state == RCX__CONN_FAILED)) {
			ret = RCX_ERR_PROC_FAILED;
		}
		if (!ret)
			mark[r] = 1;
	}
	if (ret)
		memset(mark, 0, (size_t)w->size);
	return ret;
}

/* An 8-byte RDMA WRITE of v at off of target's control words. */
static int word_send(struct rcx_win *w, int target, uint64_t off, uint64_t v,
		     unsigned int cls)
{
	struct rcx__win_op *op;
	struct rcx_wr wr;
	int ret;

	ret = rcx__win_op_get(w, target, &op);
	if (ret)
		return ret;
	op->strm = rcx__order_strm(w);
	/* cls RCX__ACC_WR: ordered like a put (complete); 0: by nothing */
	op->cls = (uint8_t)cls;
	op->via = RCX__VIA_WRITE;
	memcpy(op->bounce, &v, sizeof(v));
	memset(&wr, 0, sizeof(wr));
	wr.op = RCX_OP_WRITE;
	wr.addr = (uintptr_t)op->bounce;
	wr.length = sizeof(v);
	wr.lkey = w->bounce_reg->lkey;
	wr.remote_addr = w->peer[target].ctrl + off;
	wr.rkey = w->peer[target].ctrl_rkey;
	ret = op->strm ? rcx__win_post(w, op, &wr, 1) : -ENOMEM;
	if (ret) {
		rcx__win_op_put(w, op);
		return ret;
	}
	/* counted like an operation: flushes and complete wait for it */
	rcx__win_issued(w, op);
	return 0;
}

/* This process's own word: a store, after everything before it. */
static void word_store(struct rcx_win *w, uint64_t off, uint64_t v)
{
	__atomic_store_n(word(w, off), v, __ATOMIC_RELEASE);
}

static int asserts_check(const char *call, int asserts, int allowed)
{
	if (!(asserts & ~allowed))
		return 0;
	rcx__log(RCX__LOG_ERROR, "win", "%s: asserts 0x%x: not one it takes",
		 call, (unsigned int)asserts);
	return -EINVAL;
}

RCX_API int rcx_win_post(struct rcx_win *w, int n, const int *ranks,
			 int asserts)
{
	struct rcx__win_pscw *p;
	int o, r, ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	ret = asserts_check("rcx_win_post", asserts,
			    RCX_MODE_NOCHECK | RCX_MODE_NOSTORE |
				    RCX_MODE_NOPUT);
	if (ret)
		return ret;
	rcx__lock(w->ctx);
	ret = state_get(w, &p);
	if (!ret)
		ret = open_check(w, "rcx_win_post", true, n, ranks,
				 p->in_expose);
	if (ret)
		goto out;
	/* local stores to the window come before any origin's access */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (o = 0; o < w->size; o++) {
		if (!p->in_expose[o])
			continue;
		p->posted[o]++;
		if (asserts & RCX_MODE_NOCHECK)
			continue;
		if (o == w->rank) {
			word_store(w, post_word(o), p->posted[o]);
			continue;
		}
		r = word_send(w, o, post_word(w->rank), p->posted[o], 0);
		if (r && !ret)
			ret = r;
	}
	/* an origin told may already access: the epoch is open even if
	 * another's notice failed (the window is then invalid, or will be:
	 * a notice fails when its queue pair lost the peer) */
	p->expose = !w->invalid;
	w->fence_open = false;
out:
	rcx__unlock(w->ctx);
	return ret;
}

static bool posts_arrived(struct rcx_win *w, void *arg)
{
	struct rcx__win_pscw *p = w->pscw;
	int t;

	(void)arg;
	if (w->invalid)
		return true;
	for (t = 0; t < w->size; t++)
		if (p->in_access[t] &&
		    word_load(w, post_word(t)) <= p->started[t])
			return false;
	return true;
}

RCX_API int rcx_win_start(struct rcx_win *w, int n, const int *ranks,
			  int asserts)
{
	struct rcx__win_pscw *p;
	int t, ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	ret = asserts_check("rcx_win_start", asserts, RCX_MODE_NOCHECK);
	if (ret)
		return ret;
	rcx__lock(w->ctx);
	ret = state_get(w, &p);
	if (!ret)
		ret = open_check(w, "rcx_win_start", false, n, ranks,
				 p->in_access);
	if (ret)
		goto out;
	if (!(asserts & RCX_MODE_NOCHECK))
		rcx__win_wait_ms(w, posts_arrived, NULL, NOTICE_SLEEP_MS);
	if (w->invalid) { /* a target failed while we waited */
		memset(p->in_access, 0, (size_t)w->size);
		ret = RCX_ERR_PROC_FAILED;
		goto out;
	}
	for (t = 0; t < w->size; t++)
		p->started[t] += p->in_access[t];
	p->access = true;
	w->fence_open = false;
out:
	rcx__unlock(w->ctx);
	return ret;
}

struct drained_arg {
	struct rcx__win_strm *mine;
	int target;
};

/* Other threads' streams have nothing to target that a WRITE could pass. */
static bool drained(struct rcx_win *w, void *arg)
{
	struct drained_arg *a = arg;
	struct rcx__win_strm *s;

	if (w->invalid)
		return true;
	for (s = w->strms; s; s = s->next)
		if (s != a->mine && s->t[a->target].head)
			return false;
	return true;
}

/* The complete word to target, behind every operation of the epoch. */
static int done_send(struct rcx_win *w, int target)
{
	struct drained_arg a = { rcx__order_strm(w), target };
	struct rcx__win_st *st;

	if (!a.mine)
		return -ENOMEM;
	/* what rcx_win_order(RCX_ORDER_WRITE) does for the caller's
	 * stream; the word is its next WRITE, so rcx__win_post fences or
	 * waits as order.c decides */
	st = &a.mine->t[target];
	if (st->head)
		st->wr_bound = a.mine->seq;
	rcx__win_wait(w, drained, &a);
	if (w->invalid)
		return RCX_ERR_PROC_FAILED;
	return word_send(w, target, done_word(w, w->rank),
			 w->pscw->started[target], RCX__ACC_WR);
}

RCX_API int rcx_win_complete(struct rcx_win *w)
{
	struct rcx__win_pscw *p;
	int t, r, ret = 0, ret2;

	if (!rcx__win_live(w))
		return -EINVAL;
	rcx__lock(w->ctx);
	p = w->pscw;
	if (w->invalid || !p || !p->access) {
		rcx__unlock(w->ctx);
		return w->invalid ? RCX_ERR_WIN_INVALID : RCX_ERR_EPOCH;
	}
	/* every target is told, whatever failed for another */
	for (t = 0; t < w->size; t++) {
		r = p->in_access[t] && t != w->rank ? done_send(w, t) : 0;
		if (r && !ret)
			ret = r;
	}
	/* every operation (and word) complete here: buffers usable, errors
	 * known; the words went out before, so this is one wait for all */
	ret2 = rcx__win_flush_locked(w, -1, false);
	/* operations on this process's own memory are complete now */
	if (!ret && !ret2 && p->in_access[w->rank])
		word_store(w, done_word(w, w->rank), p->started[w->rank]);
	p->access = false;
	memset(p->in_access, 0, (size_t)w->size);
	rcx__unlock(w->ctx);
	return ret ? ret : ret2;
}

/* Has every origin of the exposure epoch completed? */
static bool completes_arrived(struct rcx_win *w, void *arg)
{
	struct rcx__win_pscw *p = w->pscw;
	int o;

	(void)arg;
	if (w->invalid)
		return true;
	for (o = 0; o < w->size; o++)
		if (p->in_expose[o] &&
		    word_load(w, done_word(w, o)) < p->posted[o])
			return false;
	return true;
}

/* End the exposure epoch (lock held, all completes arrived). */
static int expose_end(struct rcx_win *w)
{
	struct rcx__win_pscw *p = w->pscw;

	/* the epoch ended with the window if a member failed */
	if (w->invalid)
		return RCX_ERR_PROC_FAILED;
	p->expose = false;
	memset(p->in_expose, 0, (size_t)w->size);
	/* the origins' data before the local loads that follow */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return 0;
}

static int expose_check(struct rcx_win *w)
{
	if (w->invalid)
		return RCX_ERR_WIN_INVALID;
	return w->pscw && w->pscw->expose ? 0 : RCX_ERR_EPOCH;
}

RCX_API int rcx_win_wait(struct rcx_win *w)
{
	int ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	rcx__lock(w->ctx);
	ret = expose_check(w);
	if (!ret) {
		/* progress: software accumulates run here while we wait */
		rcx__win_wait_ms(w, completes_arrived, NULL, NOTICE_SLEEP_MS);
		ret = expose_end(w);
	}
	rcx__unlock(w->ctx);
	return ret;
}

RCX_API int rcx_win_test(struct rcx_win *w, int *flag)
{
	int ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	if (!flag) {
		rcx__log(RCX__LOG_ERROR, "win", "rcx_win_test: flag NULL");
		return -EINVAL;
	}
	rcx__lock(w->ctx);
	ret = expose_check(w);
	if (!ret) {
		rcx__progress(w->ctx);
		if (!completes_arrived(w, NULL)) {
			*flag = 0;
		} else {
			ret = expose_end(w);
			if (!ret)
				*flag = 1;
		}
	}
	rcx__unlock(w->ctx);
	return ret;
}
