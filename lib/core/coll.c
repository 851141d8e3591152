/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Group collectives beyond barrier and allgather (group.c): bcast and
 * reduce by binomial tree, allreduce by recursive doubling (MPICH's
 * scheme for a size that is not a power of two: the first 2 * rem ranks
 * fold in pairs first and unfold after), gather straight to the root.
 * All are nonblocking underneath: a collective is a series of rounds of
 * point-to-point on the group's collective tag space; the completion
 * hook of its last part posts the next round, and the last round
 * completes the user's request. The blocking forms wait for it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"
#include "lib/core/dtype.h"

/* allreduce's rounds: the fold, the exchanges (1 + log2), the unfold */
enum { ROUND_FOLD = 0, ROUND_XCHG = 1, ROUND_UNFOLD = 62 };

struct coll;
/* post the next round: < 0 error, 0 more to come, 1 this was the last */
typedef int coll_step(struct coll *c);

struct coll {
	struct rcx_req *req; /* the user's */
	struct rcx_group *g;
	coll_step *step;
	int n, rank, root, vr; /* vr: rank counted from root */
	int dtype, op;
	size_t count, len; /* len: bytes of a block */
	const void *in;
	void *out;
	uint8_t *acc, *tmp; /* reductions: partial result, what came */
	uint32_t seq;
	int mask;      /* the tree's or the exchange's distance */
	int newrank;   /* allreduce: rank among the power of two, -1: none */
	bool combine;  /* tmp is to be folded into acc before the next round */
	bool last;     /* the round in flight is the last */
	bool rootless; /* allreduce: root is no rank of the schedule */
	int pending;   /* parts in flight (+1 while a round is posted) */
	int err;
	/* after a validation (rcx_group_validate) the schedule runs over
	 * the survivors: rank, root and peers above count among them, and
	 * map[i] is the group rank of the i-th; NULL: all of the group */
	int *map;
};

static int coll_tag(const struct coll *c, int round)
{
	return (int)((c->seq & 0xffffff) << 6) | round;
}

/* the group rank of the i-th rank of the schedule */
static int grank(const struct coll *c, int i)
{
	return c->map ? c->map[i] : i;
}

/* the rank counted v from root */
static int real(const struct coll *c, int v)
{
	return (v + c->root) % c->n;
}

static void advance(struct coll *c);

static void part_done(struct rcx_req *r)
{
	struct coll *c = r->done_arg;

	if (r->status.error && !c->err)
		c->err = r->status.error;
	if (--c->pending == 0)
		advance(c);
}

/* One part of a round: a send or a receive of len bytes with peer. */
static int post(struct coll *c, bool recv, void *buf, size_t len, int peer,
		int round)
{
	int ret;

	c->pending++;
	peer = grank(c, peer);
	if (recv)
		ret = rcx__irecv_cb(c->g, buf, len, peer, coll_tag(c, round),
				    RCX__CID_COLL, part_done, c, NULL);
	else
		ret = rcx__isend_cb(c->g, buf, len, peer, coll_tag(c, round),
				    RCX__CID_COLL, part_done, c, NULL);
	if (ret)
		c->pending--;
	return ret;
}

static void finish(struct coll *c)
{
	struct rcx_req *r = c->req;

	/* a part that ended otherwise while a member is known failed */
	if (c->err && rcx__group_broken(c->g))
		c->err = RCX_ERR_PROC_FAILED;
	if (!c->err && c->out && c->acc)
		memcpy(c->out, c->acc, c->len);
	r->status.count = c->err ? 0 : c->len;
	rcx__req_complete(r, c->err);
}

/*
 * Post rounds until one is in flight (its last part's hook comes back
 * here) or the last is done. A part that completes while its round is
 * posted (a message already there) cannot re-enter: the round holds one
 * count of pending until it is all posted.
 */
static void advance(struct coll *c)
{
	int ret;

	while (!c->err && !c->last) {
		if (c->combine) {
			rcx__dtype_fold(c->dtype, c->op, c->acc, c->tmp,
					c->count);
			c->combine = false;
		}
		c->pending = 1;
		ret = c->step(c);
		if (ret < 0)
			c->err = ret;
		c->last = ret == 1;
		if (--c->pending > 0)
			return;
	}
	finish(c);
}

/* ---- bcast: binomial tree from root */
static int lowbit(int v)
{
	return v & -v;
}

/* the largest power of two not above n (n >= 1) */
static int pow2_floor(int n)
{
	int p = 1;

	while (p <= n / 2)
		p <<= 1;
	return p;
}

static int bcast_step(struct coll *c)
{
	int m, ret;

	if (c->vr && c->mask == 0) {
		/* from the parent first: vr less its lowest bit */
		c->mask = lowbit(c->vr);
		ret = post(c, true, c->out, c->len, real(c, c->vr - c->mask),
			   0);
		return ret < 0 ? ret : 0;
	}
	/* then to the children: vr + m for each bit m below that one */
	m = c->vr ? lowbit(c->vr) : 2 * pow2_floor(c->n);
	for (m >>= 1; m > 0; m >>= 1) {
		if (c->vr + m >= c->n)
			continue;
		ret = post(c, false, c->out, c->len, real(c, c->vr + m), 0);
		if (ret)
			return ret;
	}
	return 1;
}

/* ---- reduce: binomial tree to root */
static int reduce_step(struct coll *c)
{
	int ret;

	for (; c->mask < c->n; c->mask <<= 1) {
		if (c->vr & c->mask) {
			/* the subtree's result up to the parent: done */
			ret = post(c, false, c->acc, c->len,
				   real(c, c->vr - c->mask), 0);
			return ret < 0 ? ret : 1;
		}
		if (c->vr + c->mask < c->n) {
			ret = post(c, true, c->tmp, c->len,
				   real(c, c->vr + c->mask), 0);
			c->mask <<= 1;
			c->combine = !ret;
			return ret < 0 ? ret : 0;
		}
	}
	return 1;
}

/* ---- allreduce: recursive doubling, folded to a power of two */
static int xchg_peer(const struct coll *c, int nr, int rem)
{
	return nr < rem ? 2 * nr + 1 : nr + rem;
}

static int allreduce_step(struct coll *c)
{
	int p2 = pow2_floor(c->n), rem = c->n - p2, ret, peer, round;

	if (c->mask == 0) {
		/* the fold: of each pair below 2 * rem, the even one gives
		 * its part to the odd one, which goes on for both */
		c->mask = 1;
		c->newrank = c->rank >= 2 * rem ? c->rank - rem
			     : c->rank % 2	? c->rank / 2
						: -1;
		if (c->rank >= 2 * rem)
			return 0;
		if (c->newrank < 0)
			ret = post(c, false, c->acc, c->len, c->rank + 1,
				   ROUND_FOLD);
		else
			ret = post(c, true, c->tmp, c->len, c->rank - 1,
				   ROUND_FOLD);
		c->combine = !ret && c->newrank >= 0;
		return ret < 0 ? ret : 0;
	}
	if (c->newrank >= 0 && c->mask < p2) {
		peer = xchg_peer(c, c->newrank ^ c->mask, rem);
		round = ROUND_XCHG + __builtin_ctz((unsigned int)c->mask);
		c->mask <<= 1;
		ret = post(c, true, c->tmp, c->len, peer, round);
		if (!ret)
			ret = post(c, false, c->acc, c->len, peer, round);
		c->combine = !ret;
		return ret < 0 ? ret : 0;
	}
	/* the unfold: the odd one gives the even one the result */
	if (c->rank < 2 * rem)
		ret = post(c, c->newrank < 0, c->acc, c->len,
			   c->newrank < 0 ? c->rank + 1 : c->rank - 1,
			   ROUND_UNFOLD);
	else
		ret = 0;
	return ret < 0 ? ret : 1;
}

/* ---- gather: each straight to root */
static int gather_step(struct coll *c)
{
	int i, ret;

	if (c->rank != c->root) {
		ret = post(c, false, (void *)c->in, c->len, c->root, 0);
		return ret < 0 ? ret : 1;
	}
	/* the blocks land by group rank: a failed rank's stays as it was */
	if (c->len)
		memcpy((uint8_t *)c->out + (size_t)grank(c, c->rank) * c->len,
		       c->in, c->len);
	for (i = 0; i < c->n; i++) {
		if (i == c->root)
			continue;
		ret = post(c, true,
			   (uint8_t *)c->out + (size_t)grank(c, i) * c->len,
			   c->len, i, 0);
		if (ret)
			return ret;
	}
	return 1;
}

static void coll_release(struct rcx_req *r)
{
	struct coll *c = r->obj;

	if (!c)
		return;
	r->obj = NULL;
	rcx__group_release(c->g);
	free(c->acc);
	free(c->map);
	free(c);
}

static const struct rcx__req_ops coll_ops = { .release = coll_release };

static bool bad(const char *fn, const char *what, long long v)
{
	rcx__log(RCX__LOG_ERROR, "coll", "%s: %s %lld", fn, what, v);
	return true;
}

/* The arguments every collective has; false (logged) when wrong. */
static bool args_ok(const char *fn, struct rcx_group *g, int root,
		    struct rcx_req **req)
{
	if (!rcx__group_live(g) || !req)
		return false;
	if (root < 0 || root >= g->size)
		return !bad(fn, "root", root);
	return true;
}

/* A reduction's type, op and size; *len its bytes. */
static bool red_ok(const char *fn, size_t count, int dtype, int op, size_t *len)
{
	size_t es = rcx__dtype_size(dtype);

	if (rcx__dtype_check("coll", fn, dtype, op, RCX__DT_REDUCE))
		return false;
	if (count > SIZE_MAX / 2 / es)
		return !bad(fn, "count", (long long)count);
	*len = count * es;
	return true;
}

/*
 * Start the collective c (filled in but for req, seq, n, rank and vr);
 * on success *out is its request. Lock held. The group is held until
 * the request goes.
 */
/*
 * The ranks the schedule runs over: all of g, or after a validation its
 * survivors (c->map); c->n, c->rank and c->root among them.
 * RCX_ERR_PROC_FAILED when a failure is not validated yet or the root is
 * one of the failed.
 */
static int survivors(struct rcx_group *g, struct coll *c)
{
	int root;

	if (rcx__group_broken(g))
		return RCX_ERR_PROC_FAILED;
	c->n = g->size;
	c->rank = g->rank;
	if (!g->nacked)
		return 0;
	if (g->acked[c->root] && !c->rootless) {
		rcx__log(RCX__LOG_ERROR, "coll", "root %d: failed", c->root);
		return RCX_ERR_PROC_FAILED;
	}
	c->map = malloc(sizeof(int) * (size_t)g->size);
	if (!c->map)
		return -ENOMEM;
	c->n = rcx__group_survivors(g, c->root, c->map, &c->rank, &root);
	c->root = root < 0 ? 0 : root; /* rootless: any will do */
	return 0;
}

static int coll_start(struct rcx_group *g, struct coll *c, bool reduction,
		      struct rcx_req **out)
{
	struct rcx_req *r;
	int ret = survivors(g, c);

	if (!ret && reduction && c->len) {
		c->acc = malloc(2 * c->len);
		if (!c->acc)
			ret = -ENOMEM;
	}
	r = ret ? NULL : rcx__req_get(g->ctx, RCX__REQ_INTERNAL, &coll_ops);
	if (!r) {
		free(c->acc);
		free(c->map);
		free(c);
		return ret ? ret : -ENOMEM;
	}
	if (c->acc) {
		c->tmp = c->acc + c->len;
		memcpy(c->acc, c->in, c->len);
	}
	r->state = RCX__REQ_ACTIVE;
	r->status.source = RCX_ANY_SOURCE;
	r->status.tag = RCX_ANY_TAG;
	r->obj = c;
	c->req = r;
	c->g = g;
	rcx__group_hold(g);
	c->vr = (c->rank - c->root + c->n) % c->n;
	c->seq = ++g->coll_seq;
	*out = r;
	advance(c); /* may complete at once */
	return 0;
}

static struct coll *coll_new(coll_step *step, const void *in, void *out,
			     size_t len, int root)
{
	struct coll *c = calloc(1, sizeof(*c));

	if (c) {
		c->step = step;
		c->in = in;
		c->out = out;
		c->len = len;
		c->root = root;
	}
	return c;
}

static int coll_run(struct rcx_group *g, struct coll *c, bool reduction,
		    struct rcx_req **req)
{
	int ret;

	if (!c)
		return -ENOMEM;
	rcx__lock(g->ctx);
	ret = coll_start(g, c, reduction, req);
	rcx__unlock(g->ctx);
	return ret;
}

RCX_API int rcx_group_ibcast(struct rcx_group *g, void *buf, size_t len,
			     int root, struct rcx_req **req)
{
	if (!args_ok(__func__, g, root, req) || (len && !buf))
		return -EINVAL;
	return coll_run(g, coll_new(bcast_step, buf, buf, len, root), false,
			req);
}

static int reduce_common(const char *fn, struct rcx_group *g, const void *in,
			 void *out, size_t count, int dtype, int op, int root,
			 bool all, struct rcx_req **req)
{
	struct coll *c;
	size_t len = 0;

	if (!args_ok(fn, g, root, req) || !red_ok(fn, count, dtype, op, &len) ||
	    (len && !in) || (len && !out && (all || g->rank == root)))
		return -EINVAL;
	c = coll_new(all ? allreduce_step : reduce_step, in,
		     all || g->rank == root ? out : NULL, len, root);
	if (c) {
		c->dtype = dtype;
		c->op = op;
		c->count = count;
		/* the reduce's send goes from acc: it needs one too */
		c->mask = all ? 0 : 1;
		c->rootless = all;
	}
	return coll_run(g, c, true, req);
}

RCX_API int rcx_group_ireduce(struct rcx_group *g, const void *in, void *out,
			      size_t count, int dtype, int op, int root,
			      struct rcx_req **req)
{
	return reduce_common(__func__, g, in, out, count, dtype, op, root,
			     false, req);
}

RCX_API int rcx_group_iallreduce(struct rcx_group *g, const void *in, void *out,
				 size_t count, int dtype, int op,
				 struct rcx_req **req)
{
	return reduce_common(__func__, g, in, out, count, dtype, op, 0, true,
			     req);
}

RCX_API int rcx_group_igather(struct rcx_group *g, const void *in, size_t len,
			      void *out, int root, struct rcx_req **req)
{
	if (!args_ok(__func__, g, root, req) || (len && !in) ||
	    (len && !out && g->rank == root) ||
	    (g->size && len > SIZE_MAX / (size_t)g->size))
		return -EINVAL;
	return coll_run(g, coll_new(gather_step, in, out, len, root), false,
			req);
}

/* The blocking form: start, then wait (its status' error is the result) */
static int wait_of(int ret, struct rcx_req **r)
{
	struct rcx_status st;

	if (ret)
		return ret;
	ret = rcx_wait(r, &st);
	return ret ? ret : st.error;
}

RCX_API int rcx_group_bcast(struct rcx_group *g, void *buf, size_t len,
			    int root)
{
	struct rcx_req *r = NULL;

	return wait_of(rcx_group_ibcast(g, buf, len, root, &r), &r);
}

RCX_API int rcx_group_reduce(struct rcx_group *g, const void *in, void *out,
			     size_t count, int dtype, int op, int root)
{
	struct rcx_req *r = NULL;

	return wait_of(
		rcx_group_ireduce(g, in, out, count, dtype, op, root, &r), &r);
}

RCX_API int rcx_group_allreduce(struct rcx_group *g, const void *in, void *out,
				size_t count, int dtype, int op)
{
	struct rcx_req *r = NULL;

	return wait_of(rcx_group_iallreduce(g, in, out, count, dtype, op, &r),
		       &r);
}

RCX_API int rcx_group_gather(struct rcx_group *g, const void *in, size_t len,
			     void *out, int root)
{
	struct rcx_req *r = NULL;

	return wait_of(rcx_group_igather(g, in, len, out, root, &r), &r);
}
