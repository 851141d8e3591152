/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Accumulates. 64-bit fetch-add (RCX_SUM; RCX_NO_OP as fetch-add 0) and
 * 64-bit compare-and-swap at 8-byte aligned addresses go to the NIC (one
 * ATOMIC WR per element; the window's own memory through its loopback
 * endpoints, since CPU and NIC atomics do not exclude each other, and for
 * the same reason a peer the group reaches through shared memory through
 * the window's own NIC endpoints when the context has a NIC too). More
 * than RCX__WIN_BULK elements to a peer go as one message, whose elements
 * the target posts as NIC atomics on its loopback endpoints: still the
 * NIC's atomics on the words, one message on the way. Whether the NIC
 * takes part at all (rcx_accumulate_nic) is the same at every rank, or
 * the window is not made (win.c). Every
 * other accumulate runs in software at the target: an active message on
 * RCX__CID_WIN, applied by the target's progress under its context lock
 * (so software accumulates exclude each other) and answered with the old
 * values or a bare acknowledgement. A software accumulate and a NIC atomic
 * never touch the same location concurrently under MPI's
 * accumulate_ops=same_op_no_op rule, which the window assumes: the NIC
 * does all 64-bit SUM/NO_OP and CAS, software all the rest. Same-location
 * order between the two paths (accumulate_ordering) is kept by order.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/win/win_int.h"

/* CAS in the software protocol (not a public op). */
#define RCX__OP_CAS 0x40

enum { RCX__WAM_OP = 1, RCX__WAM_REPLY = 2 };

/* Software accumulate message: this header, then data. */
struct rcx__wam {
	uint8_t type;
	uint8_t op;    /* enum rcx_acc_op or RCX__OP_CAS */
	uint8_t dtype; /* enum rcx_datatype */
	uint8_t fetch; /* the reply carries the old values */
	uint32_t win;  /* window id at the receiver */
	uint32_t from; /* window id at the sender (for the reply) */
	uint32_t slot; /* origin op slot and its generation */
	uint32_t gen;
	uint32_t count;
	int32_t status; /* reply: 0 or an error */
	uint8_t nic;	/* request: apply with the target's NIC atomics */
	uint8_t pad[3];
	uint64_t off; /* byte offset in the target's window */
	/* request: count values (none for NO_OP), then count compare
	 * values for CAS; reply: count old values when fetch */
};

/* target[i] op= o[i] for n elements; old values to old (may be NULL). */
void rcx__win_apply(int op, int dtype, uint8_t *t, const uint8_t *o,
		    const uint8_t *cmp, uint8_t *old, size_t n)
{
	size_t es = rcx__dtype_size(dtype), i;

	if (old)
		memmove(old, t, n * es);
	if (op != RCX__OP_CAS) {
		rcx__dtype_fold(dtype, op, t, o, n);
		return;
	}
	for (i = 0; i < n; i++, t += es)
		if (!memcmp(t, cmp + i * es, es))
			memcpy(t, o + i * es, es);
}

/* ---- the target's side of the software path */

static void reply_init(struct rcx__wam *r, const struct rcx__wam *m,
		       int32_t status)
{
	memset(r, 0, sizeof(*r));
	r->type = RCX__WAM_REPLY;
	r->win = m->from;
	r->slot = m->slot;
	r->gen = m->gen;
	r->count = m->count;
	r->status = status;
}

static void sw_exec(struct rcx_win *w, struct rcx__conn *c,
		    const struct rcx__wam *m, const uint8_t *data, size_t dlen)
{
	struct rcx__wam *r = (struct rcx__wam *)w->scratch;
	size_t es = rcx__dtype_size(m->dtype), n = m->count, need;
	size_t max = w->ctx->cfg.eager_size;
	int ret, st = 0;

	need = m->op == RCX_NO_OP ? 0 : n * es * (m->op == RCX__OP_CAS ? 2 : 1);
	if (!es || !n || n > max ||
	    !rcx__dtype_ok(m->dtype, m->op,
			   m->op == RCX__OP_CAS ? RCX__DT_CAS : RCX__DT_ACC) ||
	    dlen < need || (m->fetch && sizeof(*r) + n * es > max))
		st = RCX_ERR_PROTO;
	else if (!rcx__win_local(w, m->off, n * es))
		st = RCX_ERR_REMOTE_ACCESS;
	if (!st)
		rcx__win_apply(m->op, m->dtype,
			       rcx__win_tptr(w, w->rank, m->off), data,
			       data + n * es,
			       m->fetch ? (uint8_t *)(r + 1) : NULL, n);
	reply_init(r, m, st);
	ret = rcx__am_send(c, RCX__CID_WIN, 0, r,
			   sizeof(*r) + (m->fetch && !st ? n * es : 0));
	if (ret)
		rcx__conn_fail(c, ret); /* the origin would wait forever */
}

/* An operation for a window that is not here: a reply in error. */
static void refuse(struct rcx__conn *c, const struct rcx__wam *m)
{
	struct rcx__wam r;
	int ret;

	reply_init(&r, m, RCX_ERR_REMOTE_ACCESS);
	ret = rcx__am_send(c, RCX__CID_WIN, 0, &r, sizeof(r));
	if (ret)
		rcx__conn_fail(c, ret);
}

static void sw_reply(struct rcx_win *w, const struct rcx__wam *m,
		     const uint8_t *data, size_t dlen)
{
	struct rcx__win_op *op;

	if (m->slot >= RCX__WIN_OPS)
		return;
	op = &w->ops[m->slot];
	if (!op->busy || op->gen != m->gen || op->via != RCX__VIA_SW)
		return; /* stale: the op already ended (its peer failed) */
	/* op->error: the window failed while it was on its way */
	if (!m->status && !op->error && op->result)
		memcpy(op->result, data, dlen < op->rsize ? dlen : op->rsize);
	rcx__win_op_done(w, op, m->status ? m->status : op->error);
}

/* ---- the target's side of a bulk accumulate */

/*
 * A 64-bit SUM, NO_OP or CAS accumulate of many elements comes as one
 * message (RCX__WIN_BULK) but must still be applied with NIC atomics:
 * the same words may take single NIC atomics from other ranks at the
 * same time, and CPU and NIC atomics do not exclude each other. The
 * target posts them on its loopback pair, RCX__WIN_NIC_MAX per slot, as
 * room on that queue allows, and answers when the last has completed.
 * Software messages for the window that arrive meanwhile wait behind
 * it, so that one origin's accumulates to one location are applied in
 * the order they were sent (accumulate_ordering).
 */
struct rcx__win_job {
	struct rcx__win_job *next;
	struct rcx__conn *c; /* the origin's connection */
	struct rcx__wam m;   /* the request's header */
	size_t dlen;
	uint32_t posted; /* elements posted */
	uint32_t out;	 /* slots in flight */
	int32_t status;
	uint8_t *reply; /* a reply header, then the old values */
	uint8_t data[]; /* the request's data, dlen bytes */
};

static void job_pop(struct rcx_win *w)
{
	struct rcx__win_job *j = w->jobs;

	w->jobs = j->next;
	if (!w->jobs)
		w->jobs_tail = NULL;
	free(j->reply);
	free(j);
}

void rcx__win_jobs_free(struct rcx_win *w)
{
	while (w->jobs)
		job_pop(w);
}

/* Can this window apply m with its NIC atomics? 0 or the reply's error. */
static int job_check(struct rcx_win *w, const struct rcx__wam *m, size_t dlen)
{
	size_t n = m->count, need;

	need = m->op == RCX_NO_OP ? 0 : n * 8 * (m->op == RCX__OP_CAS ? 2 : 1);
	if ((m->dtype != RCX_INT64 && m->dtype != RCX_UINT64) || !n ||
	    n > w->ctx->cfg.eager_size ||
	    (m->op != RCX_SUM && m->op != RCX_NO_OP && m->op != RCX__OP_CAS) ||
	    dlen < need || !w->nic_acc || !w->loop)
		return RCX_ERR_PROTO;
	if (!rcx__win_local(w, m->off, n * 8) ||
	    (uintptr_t)rcx__win_tptr(w, w->rank, m->off) & 7)
		return RCX_ERR_REMOTE_ACCESS;
	return 0;
}

static void job_wr_done(struct rcx_ctx *ctx, struct rcx__wrctx *wc,
			const struct rcx_cqe *cqe)
{
	struct rcx__win_op *op = (struct rcx__win_op *)wc;
	struct rcx__win_job *j = op->job;
	struct rcx_win *w = op->win;

	(void)ctx;
	(*op->sq)--;
	if (cqe->status && !op->error)
		op->error = cqe->status;
	if (--op->nwr)
		return;
	if (op->error && !j->status)
		j->status = RCX_ERR_REMOTE_OP;
	else if (!op->error)
		memcpy(j->reply + sizeof(struct rcx__wam) + op->off, op->bounce,
		       op->len);
	j->out--;
	rcx__win_op_put(w, op);
	rcx__win_jobs_pump(w);
}

/*
 * Post the next elements of j: 1 posted, 0 no room now (a completion on
 * the loopback queue pumps again), or an error.
 */
static int job_post(struct rcx_win *w, struct rcx__win_job *j)
{
	struct rcx_wr wr[RCX__WIN_NIC_MAX], *bad;
	uint32_t *sq = &w->loop[0].wr, i, k = j->m.count - j->posted;
	const uint8_t *v = j->data, *cmp = j->data + j->m.count * 8;
	uint64_t base = w->peer[w->rank].base + j->m.off;
	struct rcx__win_op *op;

	if (w->loop[0].state != RCX__CONN_UP)
		return RCX_ERR_REMOTE_OP;
	if (k > RCX__WIN_NIC_MAX)
		k = RCX__WIN_NIC_MAX;
	if (*sq + k > RCX__WIN_SQ_OPS || !w->op_free)
		return 0;
	op = w->op_free;
	w->op_free = op->next;
	memset(&op->wrc, 0, sizeof(op->wrc));
	op->busy = 1;
	op->internal = RCX__OP_JOB;
	op->job = j;
	op->target = w->rank;
	op->error = 0;
	op->reg = NULL;
	op->off = (uint64_t)j->posted * 8; /* where its results go */
	op->len = (uint64_t)k * 8;
	op->wrc.cb = job_wr_done;
	memset(wr, 0, k * sizeof(wr[0]));
	for (i = 0; i < k; i++) {
		uint64_t x = 0, e = j->posted + i;

		if (j->m.op != RCX_NO_OP)
			memcpy(&x, v + e * 8, 8);
		wr[i].wr_id = (uintptr_t)&op->wrc;
		wr[i].flags = RCX_WR_SIGNALED;
		wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
		wr[i].addr = (uintptr_t)(op->bounce + i * 8);
		wr[i].length = 8;
		wr[i].lkey = w->bounce_reg->lkey;
		wr[i].remote_addr = base + e * 8;
		wr[i].rkey = rcx__win_rkey(w, w->rank, j->m.off);
		if (j->m.op == RCX__OP_CAS) {
			memcpy(&wr[i].compare_add, cmp + e * 8, 8);
			wr[i].op = RCX_OP_CSWAP;
			wr[i].swap = x;
		} else {
			wr[i].op = RCX_OP_FADD;
			wr[i].compare_add = x;
		}
	}
	if (w->ctx->ops->post_send(w->loop[0].ep, wr, &bad)) {
		/* a prefix that went out completes and carries the error */
		i = (uint32_t)(bad - wr);
		if (!i || i > k) {
			rcx__win_op_put(w, op);
			return RCX_ERR_REMOTE_OP;
		}
		op->error = RCX_ERR_REMOTE_OP;
		k = i;
	}
	op->sq = sq;
	op->nwr = k;
	*sq += k;
	j->posted += k;
	j->out++;
	return 1;
}

/* The answer to a bulk accumulate, once all its atomics completed. */
static void job_reply(struct rcx_win *w, struct rcx__win_job *j)
{
	struct rcx__wam *r = (struct rcx__wam *)j->reply;
	size_t n = j->m.fetch && !j->status ? (size_t)j->m.count * 8 : 0;
	int ret;

	(void)w;
	reply_init(r, &j->m, j->status);
	ret = rcx__am_send(j->c, RCX__CID_WIN, 0, r, sizeof(*r) + n);
	if (ret)
		rcx__conn_fail(j->c, ret); /* the origin would wait forever */
}

void rcx__win_jobs_pump(struct rcx_win *w)
{
	struct rcx__win_job *j;
	int ret;

	while ((j = w->jobs)) {
		if (!j->m.nic) {
			sw_exec(w, j->c, &j->m, j->data, j->dlen);
			job_pop(w);
			continue;
		}
		while (!j->status && j->posted < j->m.count) {
			ret = job_post(w, j);
			if (ret < 0)
				j->status = ret;
			if (ret <= 0)
				break;
		}
		if (j->out || (!j->status && j->posted < j->m.count))
			return; /* completions to come pump again */
		job_reply(w, j);
		job_pop(w);
	}
}

/* Queue a message for the window behind the bulk ones (or as one). */
static void job_add(struct rcx_win *w, struct rcx__conn *c,
		    const struct rcx__wam *m, const uint8_t *data, size_t dlen)
{
	struct rcx__win_job *j = calloc(1, sizeof(*j) + dlen);
	struct rcx__wam r;
	int ret;

	if (j && m->nic) {
		/* the count is the origin's word: sized only once checked
		 * (a refused job answers with no data) */
		j->status = job_check(w, m, dlen);
		j->reply = malloc(sizeof(r) +
				  (j->status ? 0 : (size_t)m->count * 8));
	}
	if (!j || (m->nic && !j->reply)) {
		if (j)
			free(j->reply);
		free(j);
		reply_init(&r, m, RCX_ERR_REMOTE_OP);
		ret = rcx__am_send(c, RCX__CID_WIN, 0, &r, sizeof(r));
		if (ret)
			rcx__conn_fail(c, ret);
		return;
	}
	j->c = c;
	j->m = *m;
	j->dlen = dlen;
	memcpy(j->data, data, dlen);
	if (w->jobs_tail)
		w->jobs_tail->next = j;
	else
		w->jobs = j;
	w->jobs_tail = j;
	rcx__win_jobs_pump(w);
}

void rcx__win_am(struct rcx__conn *c, const struct rcx__hdr *h,
		 const uint8_t *payload)
{
	struct rcx__wam m;
	struct rcx_win *w;

	if (h->len < sizeof(m))
		return;
	memcpy(&m, payload, sizeof(m));
	w = rcx__win_find(c->ctx, m.win);
	if (!w || rcx__group_root(w->g) != c->g) {
		/*
		 * Freed here (after a failure this process saw first, or by
		 * an erroneous program): the origin waits for an answer, as
		 * it would for the NIC's on a freed registration.
		 */
		if (m.type == RCX__WAM_OP)
			refuse(c, &m);
		return;
	}
	if (m.type == RCX__WAM_OP && (m.nic || w->jobs))
		job_add(w, c, &m, payload + sizeof(m), h->len - sizeof(m));
	else if (m.type == RCX__WAM_OP)
		sw_exec(w, c, &m, payload + sizeof(m), h->len - sizeof(m));
	else if (m.type == RCX__WAM_REPLY)
		sw_reply(w, &m, payload + sizeof(m), h->len - sizeof(m));
}

void rcx__win_fail_sw(struct rcx_win *w)
{
	struct rcx__win_op *op;
	int t, i;

	for (t = 0; t < w->size; t++) {
		/* a peer that left (BYE) will not answer either */
		if (t == w->rank || !w->tgt[t].inflight ||
		    (rcx__win_conn(w, t)->state != RCX__CONN_FAILED &&
		     rcx__win_conn(w, t)->state != RCX__CONN_CLOSED))
			continue;
		for (i = 0; i < RCX__WIN_OPS; i++) {
			op = &w->ops[i];
			if (op->busy && op->target == t &&
			    op->via == RCX__VIA_SW)
				rcx__win_op_done(w, op, RCX_ERR_PROC_FAILED);
		}
	}
}

/* ---- the origin's side */

struct acc {
	const uint8_t *buf;
	const uint8_t *cmp;
	uint8_t *result;
	size_t count;
	int dtype;
	int op; /* RCX__OP_CAS for compare-and-swap */
	int target;
	uint64_t off;
	unsigned int cls;
};

/* Elements one software message carries (0: not even one fits). */
static size_t sw_max(const struct rcx_win *w, const struct acc *a)
{
	size_t es = rcx__dtype_size(a->dtype);
	size_t room = w->ctx->cfg.eager_size;

	if (room < sizeof(struct rcx__wam))
		return 0;
	room -= sizeof(struct rcx__wam);
	return room / (es * (a->op == RCX__OP_CAS ? 2 : 1));
}

static bool nic_path(const struct rcx_win *w, const struct acc *a)
{
	/* a shared window's memory is every member's: CPU atomics only */
	if (!w->nic_acc || w->shr ||
	    (a->dtype != RCX_INT64 && a->dtype != RCX_UINT64))
		return false;
	if (a->op != RCX_SUM && a->op != RCX_NO_OP && a->op != RCX__OP_CAS)
		return false;
	/* IBA 9.4.5: an atomic's remote address is 8-byte aligned */
	if ((w->peer[a->target].base + a->off) & 7)
		return false;
	/* alone in the group, nobody else's NIC can touch the memory */
	return !(a->target == w->rank && w->size == 1);
}

static int acc_cpu(struct rcx_win *w, struct rcx__win_strm *s,
		   const struct acc *a)
{
	size_t es = rcx__dtype_size(a->dtype);
	uint8_t *t = rcx__win_tptr(w, a->target, a->off);
	bool f;
	int ret;

	ret = rcx__order_prepare(w, s, a->target, a->cls, RCX__VIA_CPU, a->off,
				 a->count * es, &f);
	if (ret)
		return ret;
	if (w->shr)
		ret = rcx__win_shared_apply(a->op, a->dtype, t, a->buf, a->cmp,
					    a->result, a->count);
	else
		rcx__win_apply(a->op, a->dtype, t, a->buf, a->cmp, a->result,
			       a->count);
	if (ret)
		return ret;
	if (w->fence_open)
		w->fence_ops++;
	return 0;
}

static int acc_nic(struct rcx_win *w, struct rcx__win_strm *s,
		   const struct acc *a, size_t first, size_t k,
		   struct rcx_req *req)
{
	struct rcx_wr wr[RCX__WIN_NIC_MAX];
	struct rcx__win_op *op;
	uint64_t v, cmp;
	size_t i;
	int ret;

	ret = rcx__win_op_get(w, a->target, &op);
	if (ret)
		return ret;
	op->strm = s;
	op->req = req;
	op->cls = a->cls;
	op->via = RCX__VIA_ATOMIC;
	op->off = a->off + first * 8;
	op->len = k * 8;
	if (a->result) {
		op->result = a->result + first * 8;
		op->rsize = k * 8;
		op->local = 1;
	}
	memset(wr, 0, k * sizeof(wr[0]));
	for (i = 0; i < k; i++) {
		v = 0;
		if (a->op != RCX_NO_OP)
			memcpy(&v, a->buf + (first + i) * 8, 8);
		wr[i].addr = (uintptr_t)(op->bounce + i * 8);
		wr[i].length = 8;
		wr[i].lkey = w->bounce_reg->lkey;
		wr[i].remote_addr = w->peer[a->target].base + op->off + i * 8;
		wr[i].rkey = rcx__win_rkey(w, a->target, op->off);
		if (a->op == RCX__OP_CAS) {
			memcpy(&cmp, a->cmp + (first + i) * 8, 8);
			wr[i].op = RCX_OP_CSWAP;
			wr[i].compare_add = cmp;
			wr[i].swap = v;
		} else {
			/* two's complement: one add serves int64 and uint64 */
			wr[i].op = RCX_OP_FADD;
			wr[i].compare_add = v;
		}
	}
	ret = rcx__win_post(w, op, wr, (int)k);
	if (ret) {
		rcx__win_op_put(w, op);
		return ret;
	}
	rcx__win_issued(w, op);
	w->stats.nic += k;
	return 0;
}

/* bulk: NIC atomics the target applies (64-bit SUM, NO_OP, CAS) */
static int acc_sw(struct rcx_win *w, struct rcx__win_strm *s,
		  const struct acc *a, size_t first, size_t k,
		  struct rcx_req *req, bool bulk)
{
	size_t es = rcx__dtype_size(a->dtype), len;
	struct rcx__conn *c = rcx__win_conn(w, a->target);
	uint8_t *msg = w->scratch + w->ctx->cfg.eager_size + 64;
	struct rcx__wam *m = (struct rcx__wam *)msg;
	struct rcx__win_op *op;
	bool f;
	int ret;

	ret = rcx__win_op_get(w, a->target, &op);
	if (ret)
		return ret;
	op->strm = s;
	op->req = req;
	op->cls = a->cls;
	op->via = RCX__VIA_SW;
	op->off = a->off + first * es;
	op->len = k * es;
	if (a->result) {
		op->result = a->result + first * es;
		op->rsize = k * es;
		op->local = 1;
	}
	/* waits here if earlier READ/ATOMICs must finish first */
	ret = rcx__order_prepare(w, s, a->target, op->cls, op->via, op->off,
				 op->len, &f);
	if (!ret && c->state == RCX__CONN_FAILED)
		ret = RCX_ERR_PROC_FAILED;
	if (ret) {
		rcx__win_op_put(w, op);
		return ret;
	}
	memset(m, 0, sizeof(*m));
	m->type = RCX__WAM_OP;
	m->op = (uint8_t)a->op;
	m->dtype = (uint8_t)a->dtype;
	m->fetch = a->result != NULL;
	m->win = w->peer[a->target].id;
	m->from = w->id;
	m->slot = (uint32_t)(op - w->ops);
	m->gen = op->gen;
	m->count = (uint32_t)k;
	m->nic = bulk;
	m->off = op->off;
	len = sizeof(*m);
	if (a->op != RCX_NO_OP) {
		memcpy(msg + len, a->buf + first * es, k * es);
		len += k * es;
	}
	if (a->op == RCX__OP_CAS) {
		memcpy(msg + len, a->cmp + first * es, k * es);
		len += k * es;
	}
	ret = rcx__am_send(c, RCX__CID_WIN, 0, msg, len);
	if (ret) {
		rcx__win_op_put(w, op);
		return ret;
	}
	rcx__order_posted(w, op, false);
	rcx__win_issued(w, op);
	w->stats.sw++;
	w->stats.bulk += bulk;
	return 0;
}

static int acc_issue(struct rcx_win *w, const struct acc *a,
		     struct rcx_req *req)
{
	struct rcx__win_strm *s = rcx__order_strm(w);
	size_t per, i, k;
	bool nic, bulk;
	int ret = 0;

	if (!s)
		return -ENOMEM;
	if (!a->count)
		return 0;
	nic = nic_path(w, a);
	if ((a->target == w->rank && !nic) || w->shr)
		return acc_cpu(w, s, a);
	/*
	 * Many elements to a peer: one message instead of an atomic each;
	 * the target applies them with its NIC atomics all the same, so
	 * the rule "64-bit SUM, NO_OP and CAS by the NIC" holds whatever
	 * the count, at every rank (win_acc.c, the bulk accumulate).
	 */
	bulk = nic && a->target != w->rank && a->count > RCX__WIN_BULK &&
	       sw_max(w, a) > RCX__WIN_BULK;
	per = nic && !bulk ? RCX__WIN_NIC_MAX : sw_max(w, a);
	for (i = 0; i < a->count && !ret; i += k) {
		k = a->count - i < per ? a->count - i : per;
		ret = nic && !bulk ? acc_nic(w, s, a, i, k, req)
				   : acc_sw(w, s, a, i, k, req, bulk);
	}
	return ret;
}

/* what an accumulate does to target memory (RCX__ACC_*) */
static unsigned int acc_cls(const struct acc *a)
{
	unsigned int cls = RCX__ACC_ACC;

	if (a->op != RCX_NO_OP)
		cls |= RCX__ACC_WR;
	if (a->result || a->op == RCX__OP_CAS)
		cls |= RCX__ACC_RD;
	return cls;
}

static int acc_check(const char *fn, struct rcx_win *w, struct acc *a,
		     size_t disp, bool req)
{
	size_t es = rcx__dtype_size(a->dtype);
	int ret;

	ret = rcx__dtype_check("win", fn, a->dtype, a->op,
			       a->op == RCX__OP_CAS ? RCX__DT_CAS
						    : RCX__DT_ACC);
	if (ret || a->count > SIZE_MAX / es)
		return -EINVAL;
	if (a->op == RCX__OP_CAS ? !a->cmp || !a->buf
				 : a->op != RCX_NO_OP && !a->buf && a->count)
		return -EINVAL;
	ret = rcx__win_range(w, a->target, disp, a->count * es, &a->off);
	if (ret)
		return ret;
	ret = req ? rcx__win_epoch_passive(w, a->target)
		  : rcx__win_epoch_access(w, a->target);
	if (ret)
		return ret;
	if (a->target != w->rank &&
	    rcx__win_conn(w, a->target)->state == RCX__CONN_FAILED)
		return RCX_ERR_PROC_FAILED;
	if (a->count && a->target != w->rank && !w->shr && !nic_path(w, a) &&
	    !sw_max(w, a))
		return -EMSGSIZE;
	a->cls = acc_cls(a);
	return 0;
}

int rcx__win_acc_check(struct rcx_win *w, const char *fn, const void *buf,
		       int dtype, int op, int target, size_t disp,
		       uint64_t *off)
{
	struct acc a = { .buf = buf,
			 .count = 1,
			 .dtype = dtype,
			 .op = op,
			 .target = target };
	int ret = acc_check(fn, w, &a, disp, false);

	if (!ret)
		*off = a.off;
	return ret;
}

int rcx__win_acc_piece(struct rcx_win *w, const void *buf, size_t count,
		       int dtype, int op, int target, uint64_t off)
{
	struct acc a = { .buf = buf,
			 .count = count,
			 .dtype = dtype,
			 .op = op,
			 .target = target,
			 .off = off };
	int ret;

	a.cls = acc_cls(&a);
	ret = acc_issue(w, &a, NULL);
	if (!ret && (a.cls & RCX__ACC_WR))
		rcx__win_span_add(w, target, off,
				  count * rcx__dtype_size(dtype));
	return ret;
}

static int acc_call(const char *fn, struct rcx_win *w, struct acc *a,
		    size_t disp, struct rcx_req **req)
{
	struct rcx_req *r = NULL;
	int ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	rcx__lock(w->ctx);
	if (a->target == RCX_PROC_NULL) {
		ret = rcx__dtype_check("win", fn, a->dtype, a->op,
				       a->op == RCX__OP_CAS ? RCX__DT_CAS
							    : RCX__DT_ACC);
		ret = ret ? ret : rcx__win_null(w, req);
		rcx__unlock(w->ctx);
		return ret;
	}
	ret = acc_check(fn, w, a, disp, req != NULL);
	if (!ret && req) {
		r = rcx__win_req_new(w);
		if (!r)
			ret = -ENOMEM;
		else
			r->status.count = a->count * rcx__dtype_size(a->dtype);
	}
	if (!ret)
		ret = acc_issue(w, a, r);
	if (!ret && (a->cls & RCX__ACC_WR))
		rcx__win_span_add(w, a->target, a->off,
				  a->count * rcx__dtype_size(a->dtype));
	if (req)
		ret = rcx__win_req_finish(r, ret, req);
	rcx__unlock(w->ctx);
	return ret;
}

RCX_API int rcx_accumulate(struct rcx_win *win, const void *buf, size_t count,
			   int dtype, int target, size_t disp, int op)
{
	struct acc a = { .buf = buf,
			 .count = count,
			 .dtype = dtype,
			 .op = op,
			 .target = target };

	return acc_call(__func__, win, &a, disp, NULL);
}

RCX_API int rcx_get_accumulate(struct rcx_win *win, const void *buf,
			       void *result, size_t count, int dtype,
			       int target, size_t disp, int op)
{
	struct acc a = { .buf = buf,
			 .result = result,
			 .count = count,
			 .dtype = dtype,
			 .op = op,
			 .target = target };

	if (!result && count)
		return -EINVAL;
	return acc_call(__func__, win, &a, disp, NULL);
}

RCX_API int rcx_fetch_and_op(struct rcx_win *win, const void *buf, void *result,
			     int dtype, int target, size_t disp, int op)
{
	struct acc a = { .buf = buf,
			 .result = result,
			 .count = 1,
			 .dtype = dtype,
			 .op = op,
			 .target = target };

	if (!result)
		return -EINVAL;
	return acc_call(__func__, win, &a, disp, NULL);
}

RCX_API int rcx_compare_and_swap(struct rcx_win *win, const void *buf,
				 const void *compare, void *result, int dtype,
				 int target, size_t disp)
{
	struct acc a = { .buf = buf,
			 .cmp = compare,
			 .result = result,
			 .count = 1,
			 .dtype = dtype,
			 .op = RCX__OP_CAS,
			 .target = target };

	if (!result)
		return -EINVAL;
	return acc_call(__func__, win, &a, disp, NULL);
}

RCX_API int rcx_raccumulate(struct rcx_win *win, const void *buf, size_t count,
			    int dtype, int target, size_t disp, int op,
			    struct rcx_req **req)
{
	struct acc a = { .buf = buf,
			 .count = count,
			 .dtype = dtype,
			 .op = op,
			 .target = target };

	if (!req)
		return -EINVAL;
	return acc_call(__func__, win, &a, disp, req);
}

RCX_API int rcx_rget_accumulate(struct rcx_win *win, const void *buf,
				void *result, size_t count, int dtype,
				int target, size_t disp, int op,
				struct rcx_req **req)
{
	struct acc a = { .buf = buf,
			 .result = result,
			 .count = count,
			 .dtype = dtype,
			 .op = op,
			 .target = target };

	if (!req || (!result && count))
		return -EINVAL;
	return acc_call(__func__, win, &a, disp, req);
}
