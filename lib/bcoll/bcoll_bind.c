/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound collectives, the binding side: the init calls, the schedules
 * (dissemination, binomial tree, recursive doubling with the fold of a
 * group that is not a power of two), the binding of every step's
 * channels, and the collective free.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/bcoll/bcoll_int.h"
#include "lib/chan/chan.h"

/* most steps of a schedule: log2 of the largest group, plus the fold */
#define BC_MAX_STEPS 64
/* the tags of the steps' binds: step s, the fold and its result */
#define BC_TAG_FOLD   (RCX_BCOLL_TAG_BASE / 2 + 62)
#define BC_TAG_RESULT (RCX_BCOLL_TAG_BASE / 2 + 63)
/* a barrier's message: the start count */
#define BC_TOKEN_LEN sizeof(uint64_t)

/* ---- init requests */

static void desc_release(struct rcx_req *r)
{
	struct bc_desc *d = r->obj;

	if (!d)
		return;
	rcx__group_release(d->g);
	free(d);
	r->obj = NULL;
}

const struct rcx__req_ops rcx__bcoll_init_ops = { .release = desc_release };

static int desc_new(const struct bc_desc *d, struct rcx_req **out)
{
	struct rcx_ctx *ctx = d->g->ctx;
	struct bc_desc *c = malloc(sizeof(*c));
	struct rcx_req *r;

	if (!c)
		return -ENOMEM;
	*c = *d;
	rcx__lock(ctx);
	r = rcx__req_get(ctx, RCX__REQ_INTERNAL, &rcx__bcoll_init_ops);
	if (r) {
		r->persistent = 1;
		r->obj = c;
		rcx__group_hold(c->g);
	}
	rcx__unlock(ctx);
	if (!r) {
		free(c);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

static int bad(const char *fn, const char *what, long long v)
{
	rcx__log(RCX__LOG_ERROR, "bcoll", "%s: %s %lld", fn, what, v);
	return -EINVAL;
}

/* the checks common to the init calls */
static int check_init(const char *fn, struct rcx_group *g, struct rcx_req **req)
{
	if (!rcx__group_live(g))
		return bad(fn, "not a live group:", 0);
	if (!req)
		return bad(fn, "request pointer NULL:", 0);
	return 0;
}

/* ... and those of a collective with data */
static int check_data(const char *fn, const void *buf, size_t count, int dtype)
{
	size_t es = rcx__dtype_size(dtype);

	if (!es)
		return bad(fn, "unknown datatype", dtype);
	if (!count || count > UINT32_MAX / es)
		return bad(fn, "count out of range:", (long long)count);
	if (!buf)
		return bad(fn, "buffer NULL:", 0);
	return 0;
}

/* ... and those of a reduction */
static int check_reduce(const char *fn, const struct bc_desc *d)
{
	int ret =
		rcx__dtype_check("bcoll", fn, d->dtype, d->op, RCX__DT_REDUCE);

	if (ret)
		return ret;
	if (d->sendbuf == d->buf)
		return bad(fn, "sendbuf is recvbuf (use RCX_IN_PLACE):", 0);
	return 0;
}

/* the collective described by d: checked, then its request */
static int init(const char *fn, const struct bc_desc *d, struct rcx_req **req)
{
	int ret = check_init(fn, d->g, req);

	if (!ret && d->kind != BC_BARRIER)
		ret = check_data(fn, d->buf, d->count, d->dtype);
	if (!ret && (d->kind == BC_BCAST || d->kind == BC_REDUCE) &&
	    (d->root < 0 || d->root >= d->g->size))
		ret = bad(fn, "root out of range:", d->root);
	if (!ret && d->kind == BC_ALLGATHER &&
	    d->count >
		    UINT32_MAX / rcx__dtype_size(d->dtype) / (size_t)d->g->size)
		ret = bad(fn, "count too large for the group:",
			  (long long)d->count);
	if (!ret && (d->kind == BC_REDUCE || d->kind == BC_ALLREDUCE))
		ret = check_reduce(fn, d);
	if (!ret && d->kind != BC_BARRIER && d->kind != BC_BCAST && !d->sendbuf)
		ret = bad(fn, "sendbuf NULL:", 0);
	return ret ? ret : desc_new(d, req);
}

/* a collective's description, checked, then its request */
static int describe(const char *fn, enum bc_kind kind, const void *sendbuf,
		    void *buf, size_t count, int dtype, int op, int root,
		    struct rcx_group *g, struct rcx_req **req)
{
	struct bc_desc d = { .kind = kind,
			     .sendbuf = sendbuf,
			     .buf = buf,
			     .count = count,
			     .dtype = dtype,
			     .op = op,
			     .root = root,
			     .g = g };

	return init(fn, &d, req);
}

RCX_API int rcx_barrier_init(struct rcx_group *g, const struct rcx_info *info,
			     struct rcx_req **req)
{
	(void)info;
	return describe(__func__, BC_BARRIER, NULL, NULL, 0, 0, 0, 0, g, req);
}

RCX_API int rcx_bcast_init(void *buf, size_t count, int datatype, int root,
			   struct rcx_group *g, const struct rcx_info *info,
			   struct rcx_req **req)
{
	(void)info;
	return describe(__func__, BC_BCAST, NULL, buf, count, datatype, 0, root,
			g, req);
}

RCX_API int rcx_allreduce_init(const void *sendbuf, void *recvbuf, size_t count,
			       int datatype, int op, struct rcx_group *g,
			       const struct rcx_info *info,
			       struct rcx_req **req)
{
	(void)info;
	return describe(__func__, BC_ALLREDUCE, sendbuf, recvbuf, count,
			datatype, op, 0, g, req);
}

RCX_API int rcx_reduce_init(const void *sendbuf, void *recvbuf, size_t count,
			    int datatype, int op, int root, struct rcx_group *g,
			    const struct rcx_info *info, struct rcx_req **req)
{
	(void)info;
	return describe(__func__, BC_REDUCE, sendbuf, recvbuf, count, datatype,
			op, root, g, req);
}

RCX_API int rcx_allgather_init(const void *sendbuf, void *recvbuf, size_t count,
			       int datatype, struct rcx_group *g,
			       const struct rcx_info *info,
			       struct rcx_req **req)
{
	(void)info;
	return describe(__func__, BC_ALLGATHER, sendbuf, recvbuf, count,
			datatype, 0, 0, g, req);
}

/* ---- schedules: for each step, whom to write and whom to wait for */

struct bc_plan {
	int to, from; /* ranks, -1: none */
	int tag;      /* of both binds */
	void *sbuf;   /* what the send writes */
	void *rbuf;   /* the receiving slot; NULL: the next scratch slot */
	bool reduce, wait_send;
};

/* dissemination: step k sends to r + 2^k and waits for r - 2^k */
static int plan_barrier(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->g->size, r = b->g->rank, k = 0, d;

	for (d = 1; d < n; d <<= 1, k++)
		p[k] = (struct bc_plan){ .to = (r + d) % n,
					 .from = (r - d + n) % n,
					 .tag = RCX_BCOLL_TAG_BASE / 2 + k,
					 .sbuf = (void *)&b->token };
	return k;
}

/* binomial tree from the root: the parent's data lands in buf */
static int plan_bcast(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->g->size, root = b->d.root, k = 0, mask = 1;
	int vr = (b->g->rank - root + n) % n;

	while (mask < n) {
		if (vr & mask) {
			p[k++] = (struct bc_plan){
				.to = -1,
				.from = (vr - mask + root) % n,
				.tag = RCX_BCOLL_TAG_BASE / 2,
				.rbuf = b->d.buf,
			};
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < n)
			p[k++] = (struct bc_plan){
				.to = (vr + mask + root) % n,
				.from = -1,
				.tag = RCX_BCOLL_TAG_BASE / 2,
				.sbuf = b->d.buf,
			};
	return k;
}

/*
 * Recursive doubling over the largest power of two p <= n ranks; the
 * first 2 (n - p) ranks fold in pairs first (the even one hands its data
 * to the odd one and gets the result back at the end).
 */
static int plan_allreduce(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->g->size, r = b->g->rank, k = 0, pw = 1, rem, nr, mask, j;
	void *buf = b->d.buf;

	while (pw * 2 <= n)
		pw *= 2;
	rem = n - pw;
	if (r < 2 * rem && r % 2 == 0) {
		p[k++] = (struct bc_plan){ .to = r + 1,
					   .from = -1,
					   .tag = BC_TAG_FOLD,
					   .sbuf = buf,
					   .wait_send = true };
		p[k++] = (struct bc_plan){ .to = -1,
					   .from = r + 1,
					   .tag = BC_TAG_RESULT,
					   .rbuf = buf };
		return k;
	}
	if (r < 2 * rem) {
		p[k++] = (struct bc_plan){ .to = -1,
					   .from = r - 1,
					   .tag = BC_TAG_FOLD,
					   .reduce = true };
		nr = r / 2;
	} else {
		nr = r - rem;
	}
	for (mask = 1, j = 0; mask < pw; mask <<= 1, j++) {
		int pn = nr ^ mask, peer = pn < rem ? pn * 2 + 1 : pn + rem;

		p[k++] = (struct bc_plan){ .to = peer,
					   .from = peer,
					   .tag = RCX_BCOLL_TAG_BASE / 2 + j,
					   .sbuf = buf,
					   .reduce = true,
					   .wait_send = true };
	}
	if (r < 2 * rem)
		p[k++] = (struct bc_plan){ .to = r - 1,
					   .from = -1,
					   .tag = BC_TAG_RESULT,
					   .sbuf = buf };
	return k;
}

/* ---- binding */

/*
 * The channel of one side of a step: a persistent send or receive bound
 * with write_imm (the bind is nonblocking: both ends of every pair bind
 * in any order, matched by peer and tag). Lock not held.
 */
static int bind_one(struct bcoll *b, bool send, int peer, int tag, void *buf,
		    size_t len, const struct rcx_info *ci, struct rcx_req **ch,
		    struct rcx_req **eph)
{
	struct rcx_req *init;
	int ret;

	/* the two directions of a pair at one step bind apart */
	tag = 2 * tag +
	      ((send ? b->g->rank : peer) < (send ? peer : b->g->rank));
	ret = send ? rcx_send_init(b->g, buf, len, peer, tag, &init)
		   : rcx_recv_init(b->g, buf, len, peer, tag, &init);
	if (ret)
		return ret;
	ret = rcx_ibind(init, ci, ch, eph);
	rcx_req_free(&init);
	return ret;
}

/* Free the channels ch[0..n-1] bound so far (their sets fail first, so
 * nobody waits for a peer). */
static void unbind(struct rcx_ctx *ctx, struct rcx_req **ch, int n)
{
	int i;

	rcx__lock(ctx);
	for (i = 0; i < n; i++)
		rcx__chan_abort(ch[i], -ECANCELED);
	rcx__unlock(ctx);
	if (n)
		rcx_bind_free(ch, n);
}

/* the schedule's channels, in plan order; first error */
static int bind_plan(struct bcoll *b, const struct bc_plan *p, size_t slot)
{
	struct rcx_req *eph[2 * BC_MAX_STEPS];
	struct rcx_status st[2 * BC_MAX_STEPS];
	struct rcx_info *ci;
	uint8_t *next = b->scratch;
	int i, n = 0, ret;

	ret = rcx_info_create(&ci);
	if (ret)
		return ret;
	ret = rcx_info_set(ci, RCX_CHAN_PROTOCOL, "write_imm");
	for (i = 0; i < b->nsteps && !ret; i++) {
		struct bc_step *s = &b->steps[i];

		s->b = b;
		s->reduce = p[i].reduce;
		s->wait_send = p[i].wait_send;
		if (p[i].to >= 0) {
			ret = bind_one(b, true, p[i].to, p[i].tag, p[i].sbuf,
				       slot, ci, &b->ch[n], &eph[n]);
			if (ret)
				break;
			s->send = b->ch[n++];
		}
		if (p[i].from >= 0) {
			s->slot = p[i].rbuf ? p[i].rbuf : next;
			if (!p[i].rbuf)
				next += slot;
			ret = bind_one(b, false, p[i].from, p[i].tag,
				       (void *)s->slot, slot, ci, &b->ch[n],
				       &eph[n]);
			if (ret)
				break;
			s->recv = b->ch[n++];
		}
	}
	rcx_info_free(&ci);
	if (n && rcx_waitall(n, eph, st) && !ret)
		ret = -EIO;
	for (i = 0; i < n && !ret; i++)
		ret = st[i].error;
	if (ret) {
		RCX__LOG(RCX__LOG_DEBUG, "bcoll", "binding a step: %s",
			 rcx_strerror(ret));
		unbind(b->ctx, b->ch, n);
		return ret;
	}
	b->nch = n;
	return 0;
}

/*
 * Binomial tree to the root: a rank reduces what its children send into
 * recvbuf (each into a slot of its own), then writes the sum of its
 * subtree to its parent.
 */
static int plan_reduce(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->g->size, root = b->d.root, k = 0, mask, j;
	int vr = (b->g->rank - root + n) % n;

	for (mask = 1, j = 0; mask < n; mask <<= 1, j++) {
		if (vr & mask) {
			p[k++] = (struct bc_plan){
				.to = (vr - mask + root) % n,
				.from = -1,
				.tag = RCX_BCOLL_TAG_BASE / 2 + j,
				.sbuf = b->d.buf,
			};
			break;
		}
		if (vr + mask < n)
			p[k++] = (struct bc_plan){
				.to = -1,
				.from = (vr + mask + root) % n,
				.tag = RCX_BCOLL_TAG_BASE / 2 + j,
				.reduce = true,
			};
	}
	return k;
}

/*
 * Ring: at step s a rank forwards to the right the block it received at
 * step s - 1 (its own at step 0), and the left neighbour's lands in its
 * place in recvbuf: every step's buffers are fixed, so they are bound.
 */
static int plan_allgather(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->g->size, r = b->g->rank, s;
	uint8_t *buf = b->d.buf;

	for (s = 0; s < n - 1; s++)
		p[s] = (struct bc_plan){
			.to = (r + 1) % n,
			.from = (r - 1 + n) % n,
			.tag = RCX_BCOLL_TAG_BASE / 2 + s,
			.sbuf = buf + (size_t)((r - s + n) % n) * b->len,
			.rbuf = buf + (size_t)((r - s - 1 + n) % n) * b->len,
		};
	return s;
}

static int plan(struct bcoll *b, struct bc_plan *p)
{
	switch (b->d.kind) {
	case BC_BARRIER:
		return plan_barrier(b, p);
	case BC_BCAST:
		return plan_bcast(b, p);
	case BC_ALLGATHER:
		return plan_allgather(b, p);
	case BC_REDUCE:
		return plan_reduce(b, p);
	default:
		return plan_allreduce(b, p);
	}
}

static void bcoll_destroy(struct bcoll *b)
{
	free(b->scratch);
	free(b->ch);
	free(b);
}

RCX_API int rcx_bind_coll(struct rcx_req *init, const struct rcx_info *info,
			  struct rcx_req **coll)
{
	struct bc_plan p[BC_MAX_STEPS];
	struct bc_desc *d;
	struct bcoll *b;
	struct rcx_ctx *ctx;
	size_t slot, nslots = 0;
	int i, ret;

	(void)info;
	if (!rcx__req_live(init) || init->ops != &rcx__bcoll_init_ops ||
	    !init->obj)
		return bad(__func__, "not a collective's init request:", 0);
	if (!coll)
		return bad(__func__, "result pointer NULL:", 0);
	d = init->obj;
	if (!rcx__group_live(d->g))
		return bad(__func__, "the request's group was freed:", 0);
	ctx = d->g->ctx;
	b = calloc(1, sizeof(*b) + BC_MAX_STEPS * sizeof(b->steps[0]));
	if (!b)
		return -ENOMEM;
	b->ctx = ctx;
	b->d = *d;
	b->g = d->g;
	b->len = d->kind == BC_BARRIER ? 0
				       : d->count * rcx__dtype_size(d->dtype);
	slot = d->kind == BC_BARRIER ? BC_TOKEN_LEN : b->len;
	b->nsteps = plan(b, p);
	for (i = 0; i < b->nsteps; i++)
		if (p[i].from >= 0 && !p[i].rbuf)
			nslots++;
	b->ch = calloc(2 * BC_MAX_STEPS, sizeof(*b->ch));
	if (!b->ch || (nslots && posix_memalign((void **)&b->scratch, 64,
						nslots * slot))) {
		bcoll_destroy(b);
		return -ENOMEM;
	}
	ret = bind_plan(b, p, slot);
	if (ret) {
		bcoll_destroy(b);
		return ret;
	}
	rcx__lock(ctx);
	b->req = rcx__req_get(ctx, RCX__REQ_BCOLL, &rcx__bcoll_ops);
	if (!b->req) {
		rcx__unlock(ctx);
		unbind(ctx, b->ch, b->nch);
		bcoll_destroy(b);
		return -ENOMEM;
	}
	b->req->persistent = 1;
	b->req->obj = b;
	for (i = 0; i < b->nsteps; i++) {
		struct bc_step *s = &b->steps[i];

		if (s->send) {
			s->send->done = rcx__bcoll_ch_done;
			s->send->done_arg = s;
		}
		if (s->recv) {
			s->recv->done = rcx__bcoll_ch_done;
			s->recv->done_arg = s;
		}
	}
	rcx__group_hold(b->g);
	b->next = ctx->bcolls;
	ctx->bcolls = b;
	rcx__unlock(ctx);
	*coll = b->req;
	return 0;
}

/* ---- free: collective, like the channels' (every end frees its own) */

static bool is_bcoll(const struct rcx_req *r)
{
	return rcx__req_live(r) && r->ops == &rcx__bcoll_ops && r->obj;
}

static void unlink_bcoll(struct bcoll *b)
{
	struct bcoll **pp = (struct bcoll **)&b->ctx->bcolls;

	while (*pp && *pp != b)
		pp = &(*pp)->next;
	if (*pp)
		*pp = b->next;
}

int rcx__bcoll_bind_free(struct rcx_req **reqs, int n)
{
	struct rcx_ctx *ctx = reqs[0]->ctx;
	int i, ret = 0, e;

	for (i = 0; i < n; i++) {
		if (!is_bcoll(reqs[i]))
			return bad(__func__, "not a bound collective: entry",
				   i);
		if (reqs[i]->state == RCX__REQ_ACTIVE)
			return -EBUSY;
	}
	if (rcx__reqs_unique(__func__, n, reqs))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct bcoll *b = reqs[i]->obj;

		rcx__lock(ctx);
		unlink_bcoll(b);
		rcx__unlock(ctx);
		e = b->nch ? rcx_bind_free(b->ch, b->nch) : 0;
		if (e && !ret)
			ret = e;
		rcx__lock(ctx);
		rcx__group_release(b->g);
		reqs[i]->obj = NULL;
		rcx__req_put(reqs[i]);
		rcx__unlock(ctx);
		bcoll_destroy(b);
		reqs[i] = NULL;
	}
	return ret;
}
