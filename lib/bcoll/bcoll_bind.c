/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound collectives, the binding side: the init calls, the schedules
 * (dissemination, binomial tree, recursive doubling with the fold of a
 * group that is not a power of two), the binding of every step's
 * channels, and the collective free.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/bcoll/bcoll_int.h"
#include "lib/chan/chan.h"

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

/* an alltoall described by d: checked (a block for every rank), then its
 * request */
static int blocks_new(const char *fn, const struct bc_desc *d,
		      struct rcx_req **req)
{
	int ret = check_init(fn, d->g, req);

	if (!ret)
		ret = check_data(fn, d->buf, d->count, d->dtype);
	if (ret)
		return ret;
	if (d->count >
	    UINT32_MAX / rcx__dtype_size(d->dtype) / (size_t)d->g->size)
		return bad(fn, "count too large for the group:",
			   (long long)d->count);
	if (2 * (d->g->size - 1) > BC_MAX_STEPS)
		return bad(fn, "group too large, ranks:", d->g->size);
	if (!d->sendbuf)
		return bad(fn, "sendbuf NULL:", 0);
	if (d->sendbuf == d->buf)
		return bad(fn, "sendbuf is recvbuf (use RCX_IN_PLACE):", 0);
	return desc_new(d, req);
}

RCX_API int rcx_alltoall_init(const void *sendbuf, void *recvbuf, size_t count,
			      int datatype, struct rcx_group *g,
			      const struct rcx_info *info, struct rcx_req **req)
{
	const struct bc_desc d = { .kind = BC_ALLTOALL,
				   .sendbuf = sendbuf,
				   .buf = recvbuf,
				   .count = count,
				   .dtype = datatype,
				   .g = g };

	(void)info;
	return blocks_new(__func__, &d, req);
}

/* ---- binding */

/*
 * The channel of one side of a step: a persistent send or receive bound
 * with write_imm (the bind is nonblocking: both ends of every pair bind
 * in any order, matched by peer and tag). Lock not held.
 */
static int bind_one(struct bcoll *b, bool send, int peer, int tag, void *buf,
		    size_t len, struct rcx_info *ci, struct rcx_req **ch,
		    struct rcx_req **eph)
{
	char v[32];
	struct rcx_req *init;
	int ret;

	if (b->nslots > 1) {
		/* slots used in turn: one start may run ahead (below) */
		snprintf(v, sizeof(v), "%zu", len);
		ret = rcx_info_set(ci, RCX_CHAN_STRIDE, v);
		if (ret)
			return ret;
	}
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

/*
 * The fold a reducing step runs each start: its type's and operation's,
 * chosen once, where the result's elements and every slot the step
 * reads are aligned for the type (a slot's stride is whole elements);
 * else NULL, the general one, which bounces.
 */
static rcx__fold_fn *fold_of(const struct bcoll *b, const struct bc_step *s)
{
	int t = b->d.dtype;

	if (!rcx__dtype_aligned(t, s->acc) || !rcx__dtype_aligned(t, s->slot))
		return NULL;
	return rcx__dtype_folder(t, b->d.op);
}

/* the schedule's channels, in plan order; first error */
static int bind_plan(struct bcoll *b, const struct bc_plan *p, size_t slot)
{
	size_t len;
	struct rcx_req *eph[2 * BC_MAX_STEPS];
	struct rcx_status st[2 * BC_MAX_STEPS];
	struct rcx_info *ci;
	char v[16];
	uint8_t *next = b->scratch;
	void *sbuf;
	int i, n = 0, lazy = 0, ret;
	bool wait_send;

	ret = rcx_info_create(&ci);
	if (ret)
		return ret;
	ret = rcx_info_set(ci, RCX_CHAN_PROTOCOL, "write_imm");
	if (!ret && b->nslots > 1) {
		snprintf(v, sizeof(v), "%d", b->nslots);
		ret = rcx_info_set(ci, RCX_CHAN_SLOTS, v);
	}
	for (i = 0; i < b->nsteps && !ret; i++) {
		struct bc_step *s = &b->steps[i];

		s->b = b;
		s->idx = i;
		s->reduce = p[i].reduce;
		wait_send = p[i].wait_send;
		if (s->reduce) /* where reduce() folds: fixed at bind */
			s->acc = (uint8_t *)b->d.buf +
				 p[i].off * rcx__dtype_size(b->d.dtype);
		s->cnt = p[i].cnt ? p[i].cnt : b->d.count;
		if (p[i].to >= 0) {
			len = p[i].slen ? p[i].slen : slot;
			sbuf = p[i].sbuf;
			if (b->nslots > 1 && b->d.kind != BC_BARRIER) {
				s->sbuf = sbuf;
				s->stage = next;
				s->stlen = len;
				sbuf = next;
				next += len * (size_t)b->nslots;
				/* the send reads its stage: the result
				 * may change under it */
				wait_send = false;
			}
			/* a slot of ours that turns (stage, token): its
			 * completion is collected at the next start */
			s->lazy = b->nslots > 1;
			lazy += s->lazy;
			ret = bind_one(b, true, p[i].to, p[i].tag, sbuf, len,
				       ci, &b->ch[n], &eph[n]);
			if (ret)
				break;
			s->send = b->ch[n++];
		}
		if (p[i].from >= 0) {
			len = p[i].rlen ? p[i].rlen : slot;
			s->slot = p[i].rbuf ? p[i].rbuf : next;
			s->slen = len;
			if (!p[i].rbuf)
				next += len * (size_t)b->nslots;
			ret = bind_one(b, false, p[i].from, p[i].tag,
				       (void *)s->slot, len, ci, &b->ch[n],
				       &eph[n]);
			if (ret)
				break;
			s->recv = b->ch[n++];
		}
		s->need = (s->recv ? BC_RECVD : 0) |
			  (s->send && wait_send ? BC_SENT : 0);
		if (s->reduce)
			s->fold = fold_of(b, s);
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
	b->nwait = n - lazy;
	return 0;
}

static void bcoll_destroy(struct bcoll *b)
{
	free(b->live);
	free(b->copy);
	free(b->scratch);
	free(b->ch);
	free(b);
}

/* RCX_BCOLL_SCHEDULE in info: *sched (enum bc_sched), AUTO when unset */
static int sched_of(const struct rcx_info *info, int *sched)
{
	static const char *const names[] = { "auto", "tree",
					     "recursive_doubling", "ring" };
	char v[RCX_INFO_VAL_MAX + 1];
	int flag = 0, i;

	*sched = BC_SCHED_AUTO;
	if (!info)
		return 0;
	if (rcx_info_get(info, RCX_BCOLL_SCHEDULE, v, sizeof(v), &flag))
		return bad("rcx_bind_coll", "info not an info:", 0);
	if (!flag)
		return 0;
	for (i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++)
		if (!strcmp(v, names[i])) {
			*sched = i;
			return 0;
		}
	rcx__log(RCX__LOG_ERROR, "bcoll", "rcx_bind_coll: %s \"%s\" unknown",
		 RCX_BCOLL_SCHEDULE, v);
	return -EINVAL;
}

/* the largest allreduce whose sends are copied into slots of their own */
#define BC_STAGE_MAX 4096

/*
 * BC_NSLOTS slots a channel where every receive of the schedule lands
 * in scratch: a writer may then run BC_NSLOTS - 1 starts ahead of its
 * reader, and a reader's credit goes out once in BC_NSLOTS starts, so a
 * step seldom waits for its peer's start (oversubscribed, each such
 * wait is a trip through the scheduler) and a sleeping writer is seldom
 * woken by a credit it does not need yet. BC_NSLOTS_WAKES where the
 * provider's write wakes its reader (RCX_PROV_WRITE_WAKES, shm): a
 * credit is a store there, one in 16 starts costs a quarter of the
 * posts of one in 4; where it does not (verbs, auto), a credit is a
 * WRITE with immediate, and lib/chan writes it from the next progress
 * pass, not the start, past 4 slots (ch_credit_every): not for a
 * collective whose start is waited for at once. The barrier, and recursive
 * doubling over a power-of-two group for an allreduce of up to
 * BC_STAGE_MAX bytes, whose sends are copied into slots of their own
 * (the sender's slots turn too, and the result buffer is the user's). The ranks the
 * schedule runs over count (b->n: on a validated group the survivors):
 * over 3 of 4, the fold's result lands in the user's buffer, which has
 * one slot. Every rank decides alike: kind, schedule, size, the
 * survivors and the provider are the same everywhere.
 */
static int nslots_of(const struct bcoll *b)
{
	int n = b->n, k = b->ctx->ops->caps & RCX_PROV_WRITE_WAKES
				  ? BC_NSLOTS_WAKES
				  : BC_NSLOTS;

	if (b->d.kind == BC_BARRIER)
		return k;
	if (b->d.kind == BC_ALLREDUCE && b->sched == BC_SCHED_RDOUBLING &&
	    !(n & (n - 1)) && b->len <= BC_STAGE_MAX)
		return k;
	return 1;
}

/* what the schedule's steps need: scratch slots, alltoall's copy */
static int bcoll_alloc(struct bcoll *b, const struct bc_plan *p, size_t slot)
{
	size_t bytes = 0;
	int i;

	for (i = 0; i < b->nsteps; i++) {
		if (p[i].from >= 0 && !p[i].rbuf)
			bytes += (p[i].rlen ? p[i].rlen : slot) *
				 (size_t)b->nslots;
		if (p[i].to >= 0 && b->nslots > 1 && b->d.kind != BC_BARRIER)
			bytes += (p[i].slen ? p[i].slen : slot) *
				 (size_t)b->nslots;
	}
	b->ch = calloc(2 * BC_MAX_STEPS, sizeof(*b->ch));
	if (!b->ch ||
	    (bytes && posix_memalign((void **)&b->scratch, 64, bytes)))
		return -ENOMEM;
	return 0;
}

RCX_API int rcx_bind_coll(struct rcx_req *init, const struct rcx_info *info,
			  struct rcx_req **coll)
{
	struct bc_plan p[BC_MAX_STEPS];
	struct bc_desc *d;
	struct bcoll *b;
	struct rcx_ctx *ctx;
	size_t slot;
	int i, ret, forced;

	if (!rcx__req_live(init) || init->ops != &rcx__bcoll_init_ops ||
	    !init->obj)
		return bad(__func__, "not a collective's init request:", 0);
	if (!coll)
		return bad(__func__, "result pointer NULL:", 0);
	d = init->obj;
	if (!rcx__group_live(d->g))
		return bad(__func__, "the request's group was freed:", 0);
	if ((d->kind == BC_ALLGATHER && d->g->size - 1 > BC_MAX_STEPS) ||
	    (d->kind == BC_ALLTOALL && 2 * (d->g->size - 1) > BC_MAX_STEPS))
		return bad(__func__, "group too large for the schedule: ranks",
			   d->g->size);
	ret = sched_of(info, &forced);
	if (ret)
		return ret;
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
	b->nslots = 1;
	rcx__lock(ctx);
	ret = rcx__bcoll_view(b);
	rcx__unlock(ctx);
	if (!ret)
		ret = rcx__bcoll_sched(b, forced);
	if (!ret)
		b->nslots = nslots_of(b);
	if (!ret && d->kind == BC_ALLTOALL && d->sendbuf == RCX_IN_PLACE &&
	    !(b->copy = malloc((size_t)b->g->size * b->len)))
		ret = -ENOMEM;
	if (!ret) {
		b->nsteps = rcx__bcoll_plan(b, p);
		ret = bcoll_alloc(b, p, slot);
	}
	if (!ret)
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
			/* a lazy send's completion needs no hook but where
			 * something waits for it (bcoll.c, lazy_busy) */
			s->send->done = s->lazy ? NULL : rcx__bcoll_ch_done;
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

/*
 * The lazy sends of b's last start (bc_step.lazy) still in flight,
 * collected before their channels go: the peers answer them (their
 * start needs the data), or their sets fail with the member. Lock held.
 */
static void collect_sends(struct bcoll *b)
{
	int i = 0;

	while (i < b->nsteps) {
		const struct rcx_req *c = b->steps[i].send;

		if (!c || c->state != RCX__REQ_ACTIVE) {
			i++;
			continue;
		}
		if (!rcx__progress(b->ctx))
			rcx__wait_events(b->ctx, 1);
	}
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
		collect_sends(b);
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
