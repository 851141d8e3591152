/* SPDX-License-Identifier: BSD-2-Clause */
/* Queue pairs, posting and completion polling. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vrb.h"

#define VRB_POST_CHUNK 32

/*
 * A CQ must hold every completion its QPs can have outstanding: an
 * overrun is a CQ error that takes every QP on it down (IBA 11.4.2.1, the
 * CI's CQ overrun). Each QP reserves its send and receive depth (a WR
 * completes at most once) on one CQ: the first whose reservations it fits
 * in, growing it (ibv_resize_cq) up to the device's max_cqe, else a new
 * one. Only a QP that no CQ of the device could hold, or one more CQ than
 * the device has, is refused: -ENOSPC, never an overrun.
 */
static int cq_fit(struct vrb_dev *dev, struct vrb_cq *c, uint32_t n)
{
	uint64_t need = c->reserved + n, want;
	int max = dev->attr.max_cqe;

	if (need <= (uint64_t)c->cq->cqe)
		return 0;
	if (need > (uint64_t)max)
		return -ENOSPC;
	want = 2 * (uint64_t)c->cq->cqe;
	if (want < need)
		want = need;
	if (want > (uint64_t)max)
		want = (uint64_t)max;
	if (ibv_resize_cq(c->cq, (int)want) &&
	    (want == need || ibv_resize_cq(c->cq, (int)need)))
		return -ENOSPC;
	return 0;
}

static int cq_reserve(struct vrb_dev *dev, uint32_t n, unsigned int *out)
{
	unsigned int i;
	int ret;

	if (n > (uint32_t)dev->attr.max_cqe)
		return -ENOSPC;
	for (i = 0; i < dev->ncq; i++)
		if (!cq_fit(dev, &dev->cqs[i], n))
			break;
	if (i == dev->ncq) {
		ret = vrb_cq_add(dev, n > (uint32_t)dev->cq_size
					      ? (int)n
					      : dev->cq_size);
		if (ret < 0)
			return ret;
		i = (unsigned int)ret;
	}
	dev->cqs[i].reserved += n;
	*out = i;
	return 0;
}

/*
 * The most inline data up to qa's that the device takes (RCX_INLINE goes
 * to 1024, rxe stops below that; more fails the QP with EINVAL), found
 * with QPs of its own outside rdma_cm: rdma_create_qp's EINVAL may also
 * be rdma_cm's (a connection request whose peer gave up cannot take a
 * QP), and a QP it made reports caps the device rounded up, so halving
 * them there need never end.
 */
static uint32_t inline_fit(struct vrb_dev *dev,
			   const struct ibv_qp_init_attr *qa)
{
	struct ibv_qp_init_attr t;
	uint32_t want = qa->cap.max_inline_data;
	struct ibv_qp *qp;

	while (want > dev->inline_ok) {
		if (dev->inline_bad && want >= dev->inline_bad) {
			want = dev->inline_ok;
			break;
		}
		t = *qa;
		t.cap.max_inline_data = want;
		qp = ibv_create_qp(dev->pd, &t);
		if (qp) {
			ibv_destroy_qp(qp);
			dev->inline_ok = want;
			break;
		}
		if (errno != EINVAL)
			break; /* the QP's own creation says why */
		dev->inline_bad = want;
		want /= 2;
	}
	return want;
}

int vrb_qp_create(struct vrb_ep *ep, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 0,
		.cap = {
			.max_send_wr = ep->attr.max_send_wr,
			.max_recv_wr = ep->attr.max_recv_wr,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = ep->attr.max_inline,
		},
	};
	uint32_t res = ep->attr.max_send_wr + ep->attr.max_recv_wr;
	unsigned int cq;
	int ret;

	ret = cq_reserve(ep->dev, res, &cq);
	if (ret)
		return ret;
	/* sends and receives on one CQ: the QP's completions stay in order */
	qa.send_cq = qa.recv_cq = ep->dev->cqs[cq].cq;
	qa.cap.max_inline_data = inline_fit(ep->dev, &qa);
	if (rdma_create_qp(id, ep->dev->pd, &qa)) {
		ret = vrb_errno();
		ep->dev->cqs[cq].reserved -= res;
		return ret;
	}
	ep->id = id;
	ep->qp = id->qp;
	ep->cq_res = res;
	ep->cq = cq;
	ep->max_inline = qa.cap.max_inline_data;
	ret = vrb_qpmap_add(ep->dev, ep);
	if (!ret && ep->attr.on_ready)
		ret = ep->attr.on_ready((struct rcx_ep *)ep, ep->attr.ep_ctx);
	if (ret)
		vrb_qp_destroy(ep);
	return ret;
}

void vrb_qp_destroy(struct vrb_ep *ep)
{
	if (!ep->qp)
		return;
	vrb_qpmap_del(ep->dev, ep);
	rdma_destroy_qp(ep->id);
	ep->qp = NULL;
	ep->dev->cqs[ep->cq].reserved -= ep->cq_res;
	ep->cq_res = 0;
}

static const enum ibv_wr_opcode op_map[] = {
	[RCX_OP_SEND] = IBV_WR_SEND,
	[RCX_OP_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
	[RCX_OP_WRITE] = IBV_WR_RDMA_WRITE,
	[RCX_OP_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[RCX_OP_READ] = IBV_WR_RDMA_READ,
	[RCX_OP_FADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
	[RCX_OP_CSWAP] = IBV_WR_ATOMIC_CMP_AND_SWP,
};

static int to_ibv(const struct rcx_wr *w, struct ibv_send_wr *iw,
		  struct ibv_sge *sge)
{
	if (w->op > RCX_OP_CSWAP)
		return -EINVAL;
	memset(iw, 0, sizeof(*iw));
	iw->wr_id = w->wr_id;
	iw->opcode = op_map[w->op];
	iw->send_flags =
		((w->flags & RCX_WR_SIGNALED) ? IBV_SEND_SIGNALED : 0) |
		((w->flags & RCX_WR_FENCE) ? IBV_SEND_FENCE : 0) |
		((w->flags & RCX_WR_INLINE) ? IBV_SEND_INLINE : 0) |
		((w->flags & RCX_WR_SOLICITED) ? IBV_SEND_SOLICITED : 0);
	sge->addr = w->addr;
	sge->length = w->length;
	sge->lkey = w->lkey;
	iw->sg_list = sge;
	iw->num_sge = w->length ? 1 : 0;
	switch (w->op) {
	case RCX_OP_SEND_IMM:
		iw->imm_data = htobe32(w->imm);
		break;
	case RCX_OP_WRITE_IMM:
		iw->imm_data = htobe32(w->imm);
		/* fall through */
	case RCX_OP_WRITE:
	case RCX_OP_READ:
		iw->wr.rdma.remote_addr = w->remote_addr;
		iw->wr.rdma.rkey = w->rkey;
		break;
	case RCX_OP_FADD:
	case RCX_OP_CSWAP:
		/* IBA 9.4.5: 8-byte aligned remote address, 8-byte local */
		if ((w->remote_addr & 7) || w->length != 8)
			return -EINVAL;
		iw->wr.atomic.remote_addr = w->remote_addr;
		iw->wr.atomic.rkey = w->rkey;
		iw->wr.atomic.compare_add = w->compare_add;
		iw->wr.atomic.swap = w->swap;
		break;
	}
	return 0;
}

/*
 * Convert and post in chunks; a list up to VRB_POST_CHUNK long is one
 * ibv_post_send (one doorbell). On failure *bad is the first WR not posted.
 */
int vrb_post_send(struct rcx_ep *e, struct rcx_wr *wr, struct rcx_wr **bad)
{
	struct vrb_ep *ep = to_vep(e);
	struct ibv_send_wr iw[VRB_POST_CHUNK], *ibad;
	struct ibv_sge sge[VRB_POST_CHUNK];
	struct rcx_wr *src[VRB_POST_CHUNK];
	int n, i, ret;

	if (__builtin_expect(!ep->rts, 0)) {
		*bad = wr;
		return -ENOTCONN;
	}
	while (wr) {
		for (n = 0; wr && n < VRB_POST_CHUNK; n++, wr = wr->next) {
			ret = to_ibv(wr, &iw[n], &sge[n]);
			if (ret) {
				if (n == 0) {
					*bad = wr;
					return ret;
				}
				break; /* post what is valid, report next */
			}
			src[n] = wr;
			if (n)
				iw[n - 1].next = &iw[n];
		}
		ret = ibv_post_send(ep->qp, iw, &ibad);
		if (ret) {
			for (i = 0; i < n && &iw[i] != ibad; i++)
				;
			*bad = i < n ? src[i] : src[0];
			return -ret;
		}
		if (wr && n < VRB_POST_CHUNK) {
			ret = to_ibv(wr, &iw[0], &sge[0]);
			*bad = wr;
			return ret;
		}
	}
	return 0;
}

int vrb_post_recv(struct rcx_ep *e, struct rcx_wr *wr, struct rcx_wr **bad)
{
	struct vrb_ep *ep = to_vep(e);
	struct ibv_recv_wr iw[VRB_POST_CHUNK], *ibad;
	struct ibv_sge sge[VRB_POST_CHUNK];
	struct rcx_wr *src[VRB_POST_CHUNK];
	int n, i, ret;

	if (!ep->qp) {
		*bad = wr;
		return -ENOTCONN;
	}
	while (wr) {
		for (n = 0; wr && n < VRB_POST_CHUNK; n++, wr = wr->next) {
			sge[n].addr = wr->addr;
			sge[n].length = wr->length;
			sge[n].lkey = wr->lkey;
			iw[n].wr_id = wr->wr_id;
			iw[n].sg_list = &sge[n];
			iw[n].num_sge = wr->length ? 1 : 0;
			iw[n].next = NULL;
			src[n] = wr;
			if (n)
				iw[n - 1].next = &iw[n];
		}
		ret = ibv_post_recv(ep->qp, iw, &ibad);
		if (ret) {
			for (i = 0; i < n && &iw[i] != ibad; i++)
				;
			*bad = i < n ? src[i] : src[0];
			return -ret;
		}
	}
	return 0;
}

static uint8_t wc_op(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND:
		return RCX_OP_SEND;
	case IBV_WC_RDMA_WRITE:
		return RCX_OP_WRITE;
	case IBV_WC_RDMA_READ:
		return RCX_OP_READ;
	case IBV_WC_FETCH_ADD:
		return RCX_OP_FADD;
	case IBV_WC_COMP_SWAP:
		return RCX_OP_CSWAP;
	case IBV_WC_RECV_RDMA_WITH_IMM:
		return RCX_OP_RECV_IMM;
	default:
		return RCX_OP_RECV;
	}
}

/* Several CQs: each poll starts at the next one, so none is starved. */
static int poll_all(struct vrb_dev *dev, struct ibv_wc *wc, int n)
{
	unsigned int i = dev->cq_next, k;
	int got = 0, ret;

	dev->cq_next = i + 1 < dev->ncq ? i + 1 : 0;
	for (k = 0; k < dev->ncq && got < n; k++) {
		ret = ibv_poll_cq(dev->cqs[i].cq, n - got, wc + got);
		if (ret < 0)
			return got ? got : ret;
		got += ret;
		i = i + 1 < dev->ncq ? i + 1 : 0;
	}
	return got;
}

/* The endpoint context of a completion's QP: the last QP's, or the map's. */
static inline void *qp_ep_ctx(struct vrb_dev *dev, uint32_t qpn)
{
	struct vrb_ep *ep;

	if (__builtin_expect(qpn == dev->last_qpn && dev->last_ep != NULL, 1))
		return dev->last_ep->attr.ep_ctx;
	ep = vrb_qpmap_find(dev, qpn);
	if (!ep)
		return NULL;
	dev->last_qpn = qpn;
	dev->last_ep = ep;
	return ep->attr.ep_ctx;
}

static __attribute__((noinline)) void wc_failed(const struct ibv_wc *wc,
						struct rcx_cqe *c)
{
	/* opcode, length and immediate are defined only on success */
	c->status = vrb_wc_status(wc->status);
	c->op = RCX_OP_RECV;
	c->has_imm = 0;
	c->imm = 0;
}

/* what every completion carries; false: it failed (no opcode then) */
static inline bool wc_fill(const struct ibv_wc *wc, struct rcx_cqe *c)
{
	c->wr_id = wc->wr_id;
	c->vendor = wc->status;
	c->byte_len = wc->byte_len;
	if (__builtin_expect(wc->status != IBV_WC_SUCCESS, 0)) {
		wc_failed(wc, c);
		return false;
	}
	c->status = 0;
	c->has_imm = !!(wc->wc_flags & IBV_WC_WITH_IMM);
	c->imm = c->has_imm ? be32toh(wc->imm_data) : 0;
	return true;
}

static inline void wc_to_cqe(struct vrb_dev *dev, const struct ibv_wc *wc,
			     struct rcx_cqe *c)
{
	c->ep_ctx = qp_ep_ctx(dev, wc->qp_num);
	if (wc_fill(wc, c))
		c->op = wc_op(wc->opcode);
}

int vrb_cq_poll(struct rcx_dev *d, struct rcx_cqe *cqe, int n)
{
	struct vrb_dev *dev = to_vdev(d);
	struct ibv_wc wc[32];
	int got, i;

	if (n > 32)
		n = 32;
	if (__builtin_expect(dev->ncq == 1, 1))
		got = ibv_poll_cq(dev->cqs[0].cq, n, wc);
	else
		got = poll_all(dev, wc, n);
	if (got <= 0)
		return got < 0 ? -EIO : 0;
	for (i = 0; i < got; i++)
		wc_to_cqe(dev, &wc[i], &cqe[i]);
	return got;
}

/* vrb_cq_poll_min's translation: what the core dispatches on, no more */
static __attribute__((noinline)) int wc_min(struct vrb_dev *dev,
					    struct rcx_cqe *cqe, int got)
{
	int i;

	for (i = 0; i < got; i++)
		wc_fill(&dev->wc[i], &cqe[i]);
	return got;
}

/*
 * The fast path's poll (ops.cq_poll_min): no endpoint lookup, no opcode;
 * a poll that finds nothing costs the call into the driver and a test.
 */
int vrb_cq_poll_min(struct rcx_dev *d, struct rcx_cqe *cqe, int n)
{
	struct vrb_dev *dev = to_vdev(d);
	int got;

	if (__builtin_expect(dev->ncq != 1 || n > VRB_WC_BATCH, 0))
		return vrb_cq_poll(d, cqe, n);
	got = ibv_poll_cq(dev->cqs[0].cq, n, dev->wc);
	if (got <= 0)
		return got < 0 ? -EIO : 0;
	return wc_min(dev, cqe, got);
}

/* a completion that failed, or whose target takes only rcx_cqe entries */
static __attribute__((noinline)) void wc_cb(struct rcx_ctx *ctx,
					    struct rcx_wct *t,
					    const struct ibv_wc *wc)
{
	struct rcx_cqe c;

	wc_fill(wc, &c);
	t->cb(ctx, t, &c);
}

/*
 * vrb_cq_dispatch's hand-over of one completion to the target its wr_id
 * points at: a success to its ok straight from the ibv_wc (no rcx_cqe).
 */
static inline void wc_one(struct rcx_ctx *ctx, const struct ibv_wc *wc)
{
	struct rcx_wct *t = (struct rcx_wct *)(uintptr_t)wc->wr_id;
	int imm = wc->wc_flags & IBV_WC_WITH_IMM;

	if (__builtin_expect(wc->status != IBV_WC_SUCCESS || !t->ok, 0))
		wc_cb(ctx, t, wc);
	else
		t->ok(ctx, t, wc->byte_len, imm ? be32toh(wc->imm_data) : 0,
		      imm);
}

static __attribute__((noinline)) int wc_many(struct vrb_dev *dev,
					     struct rcx_ctx *ctx, int got)
{
	int i;

	for (i = 0; i < got; i++)
		wc_one(ctx, &dev->wc[i]);
	return got;
}

/* what vrb_cq_dispatch found: one completion is handed over with no loop */
static __attribute__((noinline)) int wc_dispatch(struct vrb_dev *dev,
						 struct rcx_ctx *ctx, int got)
{
	if (__builtin_expect(got != 1, 0))
		return wc_many(dev, ctx, got);
	wc_one(ctx, dev->wc);
	return 1;
}

/*
 * The fast path's poll and dispatch (ops.cq_dispatch): a poll that finds
 * nothing costs the call into the driver and a test.
 */
int vrb_cq_dispatch(struct rcx_dev *d, struct rcx_ctx *ctx)
{
	struct vrb_dev *dev = to_vdev(d);
	int got;

	if (__builtin_expect(dev->ncq != 1, 0))
		got = poll_all(dev, dev->wc, VRB_WC_BATCH);
	else
		got = ibv_poll_cq(dev->cqs[0].cq, VRB_WC_BATCH, dev->wc);
	if (got <= 0)
		return got < 0 ? -EIO : 0;
	return wc_dispatch(dev, ctx, got);
}

/* rcx_cq_peek's found: what the peek's poll left in dev->wc (got != 0) */
static int peek_found(struct rcx_dev *d, struct rcx_ctx *ctx, int got)
{
	if (__builtin_expect(got != 1, 0))
		return got < 0 ? -EIO : wc_many(to_vdev(d), ctx, got);
	wc_one(ctx, to_vdev(d)->wc);
	return 1;
}

/* peek_test's completion that goes as found hands it over, then the report */
static __attribute__((noinline)) int peek_one(struct rcx_ctx *ctx,
					      const struct ibv_wc *wc)
{
	wc_one(ctx, wc);
	return rcx__peek_report(ctx, 1);
}

/* a completion that an ok_test may take: a success with no immediate */
static inline bool wc_test_ok(const struct ibv_wc *wc, const struct rcx_wct *t)
{
	return wc->status == IBV_WC_SUCCESS &&
	       !(wc->wc_flags & IBV_WC_WITH_IMM) && t->ok_test;
}

/*
 * ... a poll that found more than one, or failed: all handed over as
 * found does, in order, then the report; a last one that an ok_test
 * takes goes to it once the others are handed over and the request
 * under the test is still active (in a ping-pong: a signaled send's
 * completion, then the reply)
 */
static __attribute__((noinline)) int peek_many(struct vrb_dev *dev,
					       struct rcx_ctx *ctx, int got)
{
	const struct ibv_wc *last;
	struct rcx_wct *t;

	if (got < 0)
		return rcx__peek_report(ctx, -EIO);
	last = &dev->wc[got - 1];
	t = (struct rcx_wct *)(uintptr_t)last->wr_id;
	if (!wc_test_ok(last, t)) {
		wc_many(dev, ctx, got);
		return rcx__peek_report(ctx, got);
	}
	if (got == 2)
		wc_one(ctx, dev->wc);
	else
		wc_many(dev, ctx, got - 1);
	if (!rcx__peek_active(ctx))
		return peek_one(ctx, last);
	return t->ok_test(ctx, t, last->byte_len);
}

/*
 * rcx_cq_peek's found_test: one completion, a success without an
 * immediate, goes to its target's ok_test, which reports the test: no
 * frame here, no rcx_cqe, no lookup. More than one: peek_many.
 */
static int peek_test(struct rcx_ctx *ctx, struct rcx_dev *d, int got)
{
	const struct ibv_wc *wc = to_vdev(d)->wc;
	struct rcx_wct *t = (struct rcx_wct *)(uintptr_t)wc->wr_id;

	if (__builtin_expect(got != 1, 0))
		return peek_many(to_vdev(d), ctx, got);
	if (__builtin_expect(!wc_test_ok(wc, t), 0))
		return peek_one(ctx, wc);
	return t->ok_test(ctx, t, wc->byte_len);
}

/*
 * rcx_cq_peek's poll on a device with more than one CQ: the buffer is
 * the device's own, which names it; all its CQs are polled in turn.
 */
static int peek_all(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct vrb_dev *dev =
		(struct vrb_dev *)(void *)((char *)wc -
					   offsetof(struct vrb_dev, wc));

	(void)cq;
	return poll_all(dev, wc, n);
}

/* The core's direct poll: the driver's own poll_cq on the one CQ. */
void vrb_cq_peek_update(struct vrb_dev *dev)
{
	struct rcx_cq_peek *pk = dev->peek;
	struct ibv_cq *cq = dev->cqs[0].cq;

	if (!pk)
		return;
	pk->cq = cq;
	pk->buf = dev->wc;
	pk->n = VRB_WC_BATCH;
	pk->found = peek_found;
	pk->found_test = peek_test;
	pk->poll = dev->ncq == 1 ? cq->context->ops.poll_cq : peek_all;
}

int vrb_cq_peek(struct rcx_dev *d, struct rcx_cq_peek *pk)
{
	struct vrb_dev *dev = to_vdev(d);

	if (!dev->ncq)
		return -EOPNOTSUPP;
	dev->peek = pk;
	vrb_cq_peek_update(dev);
	return 0;
}

int vrb_ep_set_error(struct rcx_ep *e)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct vrb_ep *ep = to_vep(e);

	/* no QP yet (resolving) or none made (no room): nothing to flush */
	if (!ep->qp)
		return -ENOTCONN;
	return -ibv_modify_qp(ep->qp, &qa, IBV_QP_STATE);
}

uint32_t vrb_ep_max_inline(const struct rcx_ep *e)
{
	return ((const struct vrb_ep *)e)->max_inline;
}

/* The QP's own numbers and path MTU, and the inline size it was granted. */
int vrb_ep_query(const struct rcx_ep *e, struct rcx_ep_info *info)
{
	const struct vrb_ep *ep = (const struct vrb_ep *)e;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr qa;
	int ret;

	if (!ep->qp)
		return -ENOTCONN;
	ret = ibv_query_qp(ep->qp, &qa, IBV_QP_PATH_MTU | IBV_QP_DEST_QPN,
			   &init);
	if (ret)
		return -ret;
	memset(info, 0, sizeof(*info));
	snprintf(info->device, sizeof(info->device), "%s", ep->dev->name);
	info->qpn = ep->qp->qp_num;
	info->remote_qpn = qa.dest_qp_num;
	info->path_mtu = 128u << qa.path_mtu; /* IBV_MTU_256 is 1 */
	info->max_inline = ep->max_inline;
	return 0;
}

struct vrb_pwr {
	struct rcx_pwr pub;
	union {
		struct ibv_send_wr s;
		struct ibv_recv_wr r;
	};
	struct ibv_sge sge;
	uint64_t scratch64;
	uint32_t scratch32;
};

int vrb_pwr_create(struct rcx_ep *e, const struct rcx_wr *wr, int recv,
		   struct rcx_pwr **out)
{
	struct vrb_pwr *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	p->pub.ops = &rcx__verbs_ops;
	p->pub.addr = &p->sge.addr;
	p->pub.length = &p->sge.length;
	p->pub.remote_addr = &p->scratch64;
	p->pub.imm_be = &p->scratch32;
	if (recv) {
		p->pub.wr_id = &p->r.wr_id;
		p->r.wr_id = wr->wr_id;
		p->sge.addr = wr->addr;
		p->sge.length = wr->length;
		p->sge.lkey = wr->lkey;
		p->r.sg_list = &p->sge;
		p->r.num_sge = 1;
		*out = &p->pub;
		return 0;
	}
	ret = to_ibv(wr, &p->s, &p->sge);
	if (ret) {
		free(p);
		return ret;
	}
	p->pub.wr_id = &p->s.wr_id;
	p->s.sg_list = &p->sge;
	/* keep one segment even at length 0: patching may grow it */
	p->s.num_sge = 1;
	if (wr->op == RCX_OP_WRITE || wr->op == RCX_OP_WRITE_IMM ||
	    wr->op == RCX_OP_READ)
		p->pub.remote_addr = &p->s.wr.rdma.remote_addr;
	if (wr->op == RCX_OP_SEND_IMM || wr->op == RCX_OP_WRITE_IMM)
		p->pub.imm_be = &p->s.imm_data;
	*out = &p->pub;
	return 0;
}

void vrb_pwr_destroy(struct rcx_pwr *p)
{
	free(p);
}

static struct vrb_pwr *to_vpwr(struct rcx_pwr *p)
{
	return (struct vrb_pwr *)p;
}

/*
 * p[0..n-1] linked into one list of the driver's WRs and posted, each
 * alone again after (vrb_pwr_direct posts one with its next); *posted:
 * those before the one the driver refused (bad), n where it named none
 * of them (never counted short: provider.h). The send list out of line:
 * a send posted alone (vrb_pwr_post: a credit, a point-to-point send)
 * pays nothing for it; the receive list inline, as a connection's
 * batch of receive buffers goes.
 */
static __attribute__((noinline)) int post_list_send(struct ibv_qp *qp,
						    struct rcx_pwr **p, int n,
						    int *posted)
{
	struct ibv_send_wr *bad = NULL;
	int i, ret;

	for (i = 0; i < n - 1; i++)
		to_vpwr(p[i])->s.next = &to_vpwr(p[i + 1])->s;
	to_vpwr(p[n - 1])->s.next = NULL;
	ret = -ibv_post_send(qp, &to_vpwr(p[0])->s, &bad);
	for (i = 0; i < n - 1; i++)
		to_vpwr(p[i])->s.next = NULL;
	for (i = 0; ret && i < n && bad != &to_vpwr(p[i])->s; i++)
		;
	*posted = ret ? i : n;
	return ret;
}

static inline int post_list_recv(struct ibv_qp *qp, struct rcx_pwr **p, int n,
				 int *posted)
{
	struct ibv_recv_wr *bad = NULL, *first = &to_vpwr(p[0])->r, *w, *x;
	int i, ret;

	/* a batch of receive buffers per message of a connection's ring:
	 * the link and the unlink are its per-buffer cost */
	w = first;
#pragma GCC unroll 4
	for (i = 1; i < n; i++) {
		x = &to_vpwr(p[i])->r;
		w->next = x;
		w = x;
	}
	w->next = NULL;
	ret = -ibv_post_recv(qp, first, &bad);
#pragma GCC unroll 4
	for (i = 0; i < n - 1; i++)
		to_vpwr(p[i])->r.next = NULL;
	for (i = 0; ret && i < n && bad != &to_vpwr(p[i])->r; i++)
		;
	*posted = ret ? i : n;
	return ret;
}

int vrb_pwr_post_list(struct rcx_ep *e, struct rcx_pwr **p, int n, int recv,
		      int *posted)
{
	struct ibv_qp *qp = to_vep(e)->qp;

	return recv ? post_list_recv(qp, p, n, posted)
		    : post_list_send(qp, p, n, posted);
}

int vrb_pwr_post(struct rcx_ep *e, struct rcx_pwr **p, int n)
{
	struct ibv_send_wr *bad;
	int k;

	if (n == 1)
		return -ibv_post_send(to_vep(e)->qp, &to_vpwr(p[0])->s, &bad);
	return post_list_send(to_vep(e)->qp, p, n, &k);
}

int vrb_pwr_post_recv(struct rcx_ep *e, struct rcx_pwr **p, int n)
{
	struct ibv_recv_wr *bad;
	int k;

	if (n == 1)
		return -ibv_post_recv(to_vep(e)->qp, &to_vpwr(p[0])->r, &bad);
	return post_list_recv(to_vep(e)->qp, p, n, &k);
}

/* The driver's own post for one prepared WR (ops.pwr_direct). */
int vrb_pwr_direct(struct rcx_ep *e, struct rcx_pwr *p, int recv,
		   struct rcx_pwr_direct *d)
{
	struct ibv_qp *qp = to_vep(e)->qp;

	if (!qp || p->ops != &rcx__verbs_ops)
		return -EOPNOTSUPP;
	memset(d, 0, sizeof(*d));
	d->qp = qp;
	if (recv) {
		d->recv = qp->context->ops.post_recv;
		d->rwr = &to_vpwr(p)->r;
	} else {
		d->send = qp->context->ops.post_send;
		d->swr = &to_vpwr(p)->s;
	}
	return 0;
}
