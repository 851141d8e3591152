/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fuzz harness's in-memory provider (fz.h): endpoints with receive
 * queues, one completion ring, one connection-event queue, and the
 * scripted peer that turns fuzz input into received messages.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "fz.h"

#define FZ_CQ_SIZE  (1u << 16)
#define FZ_EVT_SIZE 256

struct fz_rwr {
	uint64_t wr_id;
	uint64_t addr;
	uint32_t length;
};

struct fz_ep {
	struct rcx_ep pub; /* first */
	struct fz_ep *next;
	void *ep_ctx;
	struct fz_rwr *rq; /* posted receives, a FIFO */
	uint32_t rq_cap, rq_head, rq_n;
	int error;
	int scripted;
};

struct fz_cqent {
	struct rcx_cqe c;
	struct fz_ep *ep;
};

struct fz_evt {
	struct rcx_cm_event ev;
	struct fz_ep *ep;
};

struct fz_creq {
	struct rcx_conn_req pub;
};

struct fz_mr {
	uint32_t lkey, rkey;
};

static const struct rcx_provider_ops fz_ops;

static struct {
	struct fz_cqent cq[FZ_CQ_SIZE];
	uint32_t cq_head, cq_n;
	struct fz_evt evt[FZ_EVT_SIZE];
	uint32_t evt_head, evt_n;
	struct fz_ep *eps;
	struct fz_script script;
	struct fz_ep *peer; /* the scripted endpoint, once made */
	int arm_script;	    /* the next endpoint made is scripted */
	uint32_t next_key;
	unsigned long sent;
	int epfd;
	void (*on_sent)(const uint8_t *buf, size_t len);
	void (*on_deliver)(uint8_t *buf, size_t len);
} fz;

void fz_fail(const char *file, int line, const char *what)
{
	fprintf(stderr, "%s:%d: harness check failed: %s\n", file, line, what);
	abort();
}

static void cq_push(struct fz_ep *ep, uint64_t wr_id, int status, uint8_t op,
		    uint32_t len)
{
	struct fz_cqent *e;

	FZ_ASSERT(fz.cq_n < FZ_CQ_SIZE);
	e = &fz.cq[(fz.cq_head + fz.cq_n++) % FZ_CQ_SIZE];
	memset(e, 0, sizeof(*e));
	e->ep = ep;
	e->c.wr_id = wr_id;
	e->c.ep_ctx = ep->ep_ctx;
	e->c.status = status;
	e->c.vendor = status ? 5 : 0; /* IBV_WC_WR_FLUSH_ERR */
	e->c.op = op;
	e->c.byte_len = len;
}

static void evt_push(struct fz_ep *ep, uint8_t type, int status)
{
	struct fz_evt *e;

	FZ_ASSERT(fz.evt_n < FZ_EVT_SIZE);
	e = &fz.evt[(fz.evt_head + fz.evt_n++) % FZ_EVT_SIZE];
	memset(e, 0, sizeof(*e));
	e->ep = ep;
	e->ev.type = type;
	e->ev.status = status;
	e->ev.ep = (struct rcx_ep *)ep;
	e->ev.ep_ctx = ep ? ep->ep_ctx : NULL;
}

void fz_conn_request(const void *pdata, size_t len)
{
	struct fz_creq *r = calloc(1, sizeof(*r));
	struct fz_evt *e;

	FZ_ASSERT(r && len <= sizeof(e->ev.pdata));
	r->pub.ops = &fz_ops;
	evt_push(NULL, RCX_CM_CONNECT_REQUEST, 0);
	e = &fz.evt[(fz.evt_head + fz.evt_n - 1) % FZ_EVT_SIZE];
	e->ev.req = (struct rcx_conn_req *)r;
	memcpy(e->ev.pdata, pdata, len);
	e->ev.pdata_len = (uint8_t)len;
}

/* The endpoint went to the error state: its receives flush. */
static void ep_flush(struct fz_ep *ep)
{
	ep->error = 1;
	while (ep->rq_n) {
		struct fz_rwr *w = &ep->rq[ep->rq_head];

		ep->rq_head = (ep->rq_head + 1) % ep->rq_cap;
		ep->rq_n--;
		cq_push(ep, w->wr_id, RCX_ERR_FLUSHED, RCX_OP_RECV, 0);
	}
}

void fz_ep_close(struct rcx_ep *e)
{
	struct fz_ep *ep = (struct fz_ep *)e;

	if (!ep || ep->error)
		return;
	ep_flush(ep);
	evt_push(ep, RCX_CM_DISCONNECTED, 0);
}

void fz_peer_close(void)
{
	fz_ep_close((struct rcx_ep *)fz.peer);
}

int fz_peer_down(void)
{
	return !fz.peer || fz.peer->error;
}

void fz_hooks(void (*sent)(const uint8_t *buf, size_t len),
	      void (*deliver)(uint8_t *buf, size_t len))
{
	fz.on_sent = sent;
	fz.on_deliver = deliver;
}

/* The oldest receive posted on ep, taken off its queue: 0 when none. */
static int rq_take(struct fz_ep *ep, struct fz_rwr *w)
{
	if (ep->error || !ep->rq_n)
		return 0;
	*w = ep->rq[ep->rq_head];
	ep->rq_head = (ep->rq_head + 1) % ep->rq_cap;
	ep->rq_n--;
	return 1;
}

int fz_ep_recv(struct rcx_ep *e, int has_imm, uint32_t imm, uint32_t len)
{
	struct fz_ep *ep = (struct fz_ep *)e;
	struct fz_cqent *c;
	struct fz_rwr w;

	if (!ep || !rq_take(ep, &w))
		return 0;
	if (!has_imm && len > w.length) {
		/* a local length error: the QP goes to the error state */
		cq_push(ep, w.wr_id, RCX_ERR_LOCAL, RCX_OP_RECV, 0);
		ep_flush(ep);
		return 1;
	}
	/* a SEND lands in the receive buffer; a WRITE_IMM's data went to
	 * the address the peer chose, the receive only takes the immediate */
	if (!has_imm && len)
		memset((void *)(uintptr_t)w.addr, 0xa5, len);
	cq_push(ep, w.wr_id, 0, has_imm ? RCX_OP_RECV_IMM : RCX_OP_RECV, len);
	c = &fz.cq[(fz.cq_head + fz.cq_n - 1) % FZ_CQ_SIZE];
	c->c.has_imm = has_imm != 0;
	c->c.imm = has_imm ? imm : 0;
	return 1;
}

void fz_peer_script(const uint8_t *data, size_t len)
{
	fz.script.p = data;
	fz.script.left = data ? len : 0;
	fz.arm_script = 1;
}

int fz_next(struct fz_script *s, const uint8_t **rec, size_t *len)
{
	size_t n;

	if (s->left < 2)
		return 0;
	n = (size_t)s->p[0] | (size_t)s->p[1] << 8;
	if (n > s->left - 2)
		n = s->left - 2;
	*rec = s->p + 2;
	*len = n;
	s->p += 2 + n;
	s->left -= 2 + n;
	return 1;
}

uint8_t *fz_msgs_alloc(size_t size)
{
	uint8_t *buf =
		malloc(size / 2 * (sizeof(struct rcx__hdr) + 2) + size + 1);

	FZ_ASSERT(buf);
	return buf;
}

size_t fz_msg(uint8_t *out, const struct rcx__hdr *h, const uint8_t *pl,
	      size_t len)
{
	size_t m = (h ? sizeof(*h) : 0) + len;

	FZ_ASSERT(m <= 0xffff);
	out[0] = (uint8_t)m;
	out[1] = (uint8_t)(m >> 8);
	if (h)
		memcpy(out + 2, h, sizeof(*h));
	if (len)
		memcpy(out + 2 + m - len, pl, len);
	return 2 + m;
}

struct rcx__hdr fz_eager(uint8_t cid, int32_t tag, size_t len)
{
	struct rcx__hdr h;

	memset(&h, 0, sizeof(h));
	h.type = RCX__MSG_EAGER;
	h.cid = cid;
	h.credits = 1; /* room for what we send back */
	h.tag = tag;
	h.len = (uint32_t)len;
	return h;
}

int fz_peer_pending(void)
{
	return fz.script.left >= 2;
}

int fz_peer_done(void)
{
	return fz.peer && !fz_peer_pending();
}

unsigned long fz_sent(void)
{
	return fz.sent;
}

/*
 * The scripted peer sends its next record if a receive is posted: the
 * bytes land in the receive buffer as a NIC would put them (a record
 * longer than the buffer is a local length error). At the end of the
 * script the peer disconnects, once the context has taken the connection
 * events queued before.
 */
static void peer_step(void)
{
	struct fz_ep *ep = fz.peer;
	const uint8_t *rec;
	struct fz_rwr w;
	size_t len;

	if (!ep || ep->error || fz.cq_n)
		return;
	if (!fz_peer_pending()) {
		/* what the peer did before it left (a connection it asked
		 * for) reaches us first */
		if (!fz.evt_n)
			fz_peer_close();
		return;
	}
	if (!rq_take(ep, &w))
		return;
	fz_next(&fz.script, &rec, &len);
	if (len > w.length) {
		cq_push(ep, w.wr_id, RCX_ERR_LOCAL, RCX_OP_RECV, 0);
		return;
	}
	memcpy((void *)(uintptr_t)w.addr, rec, len);
	if (fz.on_deliver)
		fz.on_deliver((uint8_t *)(uintptr_t)w.addr, len);
	cq_push(ep, w.wr_id, 0, RCX_OP_RECV, (uint32_t)len);
}

/* ---- the ops table */

static int fz_dev_list(char (*names)[64], int max)
{
	if (max < 1)
		return 0;
	snprintf(names[0], 64, "fz0");
	return 1;
}

static int fz_dev_open(const struct rcx_dev_attr *attr, struct rcx_dev **out)
{
	return -EOPNOTSUPP; /* contexts come from fz_ctx_new */
}

static void fz_dev_close(struct rcx_dev *dev)
{
}

static int fz_dev_query(struct rcx_dev *dev, struct rcx_dev_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "fz0");
	info->max_mr_size = 1ull << 40;
	info->max_qp_wr = 16384;
	info->max_cqe = FZ_CQ_SIZE;
	info->max_inline = 64;
	info->max_rd_atomic = 16;
	info->atomics = 1;
	info->port_active = 1;
	info->mtu = 4096;
	snprintf(info->addr, sizeof(info->addr), "fz0");
	return 0;
}

static int fz_mr_reg(struct rcx_dev *dev, void *addr, size_t len,
		     unsigned int access, struct rcx_mr **out)
{
	struct fz_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return -ENOMEM;
	m->lkey = ++fz.next_key;
	m->rkey = ++fz.next_key;
	*out = (struct rcx_mr *)m;
	return 0;
}

static int fz_mr_dereg(struct rcx_mr *mr)
{
	free(mr);
	return 0;
}

static uint32_t fz_mr_lkey(const struct rcx_mr *mr)
{
	return ((const struct fz_mr *)mr)->lkey;
}

static uint32_t fz_mr_rkey(const struct rcx_mr *mr)
{
	return ((const struct fz_mr *)mr)->rkey;
}

/*
 * A new endpoint: receives can be posted at once, ESTABLISHED follows (or
 * the connection error cm_err).
 */
static int ep_make(const struct rcx_ep_attr *attr, int cm_err,
		   struct rcx_ep **out)
{
	struct fz_ep *ep = calloc(1, sizeof(*ep));
	int ret;

	if (!ep)
		return -ENOMEM;
	ep->rq_cap = attr->max_recv_wr ? attr->max_recv_wr : 1;
	ep->rq = calloc(ep->rq_cap, sizeof(*ep->rq));
	if (!ep->rq) {
		free(ep);
		return -ENOMEM;
	}
	ep->pub.ops = &fz_ops;
	ep->ep_ctx = attr->ep_ctx;
	ep->next = fz.eps;
	fz.eps = ep;
	if (fz.arm_script) {
		fz.arm_script = 0;
		ep->scripted = 1;
		fz.peer = ep;
	}
	*out = (struct rcx_ep *)ep;
	if (attr->on_ready) {
		ret = attr->on_ready(*out, attr->ep_ctx);
		if (ret)
			return ret; /* the caller destroys it */
	}
	if (cm_err)
		evt_push(ep, RCX_CM_ERROR, cm_err);
	else
		evt_push(ep, RCX_CM_ESTABLISHED, 0);
	return 0;
}

static int fz_ep_connect(struct rcx_dev *dev, const char *addr,
			 const struct rcx_ep_attr *attr, const void *pdata,
			 size_t pdata_len, struct rcx_ep **out)
{
	/* a provider parses the address as a string (getaddrinfo) */
	FZ_ASSERT(strnlen(addr, RCX__ADDR_LEN) < RCX__ADDR_LEN);
	if (pdata_len > 56)
		return -EINVAL;
	/* the peer listens at "fz0" only: elsewhere nobody answers */
	return ep_make(attr, strcmp(addr, "fz0") ? -ECONNREFUSED : 0, out);
}

static int fz_ep_accept(struct rcx_dev *dev, struct rcx_conn_req *req,
			const struct rcx_ep_attr *attr, struct rcx_ep **out)
{
	free(req);
	return ep_make(attr, 0, out);
}

static int fz_ep_reject(struct rcx_dev *dev, struct rcx_conn_req *req)
{
	free(req);
	return 0;
}

static int fz_ep_disconnect(struct rcx_ep *ep)
{
	return 0;
}

static void fz_ep_destroy(struct rcx_ep *e)
{
	struct fz_ep *ep = (struct fz_ep *)e, **pp;
	uint32_t i;

	/* nothing may still point into the owner once it is gone */
	for (i = 0; i < fz.cq_n; i++) {
		struct fz_cqent *c = &fz.cq[(fz.cq_head + i) % FZ_CQ_SIZE];

		if (c->ep == ep) {
			c->ep = NULL;
			c->c.wr_id = 0;
		}
	}
	for (i = 0; i < fz.evt_n; i++) {
		struct fz_evt *v = &fz.evt[(fz.evt_head + i) % FZ_EVT_SIZE];

		if (v->ep == ep) {
			v->ep = NULL;
			v->ev.ep_ctx = NULL;
		}
	}
	for (pp = &fz.eps; *pp; pp = &(*pp)->next)
		if (*pp == ep) {
			*pp = ep->next;
			break;
		}
	if (fz.peer == ep)
		fz.peer = NULL;
	free(ep->rq);
	free(ep);
}

static int fz_ep_set_error(struct rcx_ep *e)
{
	ep_flush((struct fz_ep *)e);
	return 0;
}

static uint32_t fz_ep_max_inline(const struct rcx_ep *ep)
{
	return 64;
}

static int fz_cm_poll(struct rcx_dev *dev, struct rcx_cm_event *ev)
{
	struct fz_evt *e;

	while (fz.evt_n) {
		e = &fz.evt[fz.evt_head];
		fz.evt_head = (fz.evt_head + 1) % FZ_EVT_SIZE;
		fz.evt_n--;
		/* events of destroyed endpoints are dropped */
		if (e->ev.type != RCX_CM_CONNECT_REQUEST && !e->ep)
			continue;
		*ev = e->ev;
		return 1;
	}
	return 0;
}

static int fz_post_send(struct rcx_ep *e, struct rcx_wr *wr,
			struct rcx_wr **bad)
{
	struct fz_ep *ep = (struct fz_ep *)e;

	for (; wr; wr = wr->next) {
		if (wr->op == RCX_OP_SEND || wr->op == RCX_OP_SEND_IMM) {
			fz.sent++;
			if (fz.on_sent && ep == fz.peer)
				fz.on_sent((const uint8_t *)(uintptr_t)wr->addr,
					   wr->length);
		}
		if (ep->error) {
			cq_push(ep, wr->wr_id, RCX_ERR_FLUSHED, wr->op,
				wr->length);
			continue;
		}
		/* what a READ or an atomic brings back: zeros, written the
		 * whole length (a length past the buffer is found here) */
		if (wr->op == RCX_OP_READ && wr->length)
			memset((void *)(uintptr_t)wr->addr, 0, wr->length);
		else if (wr->op == RCX_OP_FADD || wr->op == RCX_OP_CSWAP)
			memset((void *)(uintptr_t)wr->addr, 0, 8);
		if (!(wr->flags & RCX_WR_SIGNALED))
			continue;
		cq_push(ep, wr->wr_id, 0, wr->op, wr->length);
		/* rxe flags a WRITE_IMM's own completion as carrying one */
		if (wr->op == RCX_OP_WRITE_IMM || wr->op == RCX_OP_SEND_IMM) {
			struct fz_cqent *c =
				&fz.cq[(fz.cq_head + fz.cq_n - 1) % FZ_CQ_SIZE];

			c->c.has_imm = 1;
			c->c.imm = wr->imm;
		}
	}
	return 0;
}

static int fz_post_recv(struct rcx_ep *e, struct rcx_wr *wr,
			struct rcx_wr **bad)
{
	struct fz_ep *ep = (struct fz_ep *)e;

	for (; wr; wr = wr->next) {
		if (ep->error) {
			cq_push(ep, wr->wr_id, RCX_ERR_FLUSHED, RCX_OP_RECV, 0);
			continue;
		}
		if (ep->rq_n == ep->rq_cap) {
			*bad = wr;
			return -ENOMEM;
		}
		ep->rq[(ep->rq_head + ep->rq_n++) % ep->rq_cap] =
			(struct fz_rwr){ wr->wr_id, wr->addr, wr->length };
	}
	return 0;
}

/*
 * Prepared WRs: the WR kept whole; rcx patches it through the pointers
 * (each points into the WR, or at the immediate kept in network order)
 * and every post goes through post_send/post_recv.
 */
struct fz_pwr {
	struct rcx_pwr pub;
	struct rcx_wr wr;
	uint32_t imm_be;
	int recv;
};

static int fz_pwr_create(struct rcx_ep *ep, const struct rcx_wr *wr, int recv,
			 struct rcx_pwr **out)
{
	struct fz_pwr *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->wr = *wr;
	p->wr.next = NULL;
	p->recv = recv;
	p->imm_be = htobe32(wr->imm);
	p->pub.ops = &fz_ops;
	p->pub.addr = &p->wr.addr;
	p->pub.length = &p->wr.length;
	p->pub.remote_addr = &p->wr.remote_addr;
	p->pub.imm_be = &p->imm_be;
	p->pub.wr_id = &p->wr.wr_id;
	*out = &p->pub;
	return 0;
}

static void fz_pwr_destroy(struct rcx_pwr *pwr)
{
	free(pwr);
}

static int fz_pwr_post(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	struct rcx_wr *bad;
	int i, ret = 0;

	for (i = 0; i < n && !ret; i++) {
		struct fz_pwr *p = (struct fz_pwr *)pwr[i];

		p->wr.imm = be32toh(p->imm_be);
		ret = p->recv ? fz_post_recv(ep, &p->wr, &bad)
			      : fz_post_send(ep, &p->wr, &bad);
	}
	return ret;
}

static int fz_pwr_post_list(struct rcx_ep *ep, struct rcx_pwr **pwr, int n,
			    int recv, int *posted)
{
	int i, ret = 0;

	(void)recv; /* each WR knows (fz_pwr_post) */
	for (i = 0; i < n && !ret; i++)
		ret = fz_pwr_post(ep, &pwr[i], 1);
	*posted = ret ? i - 1 : n;
	return ret;
}

static int fz_cq_poll(struct rcx_dev *dev, struct rcx_cqe *cqe, int n)
{
	int k = 0;

	peer_step();
	while (k < n && fz.cq_n) {
		struct fz_cqent *c = &fz.cq[fz.cq_head];

		fz.cq_head = (fz.cq_head + 1) % FZ_CQ_SIZE;
		fz.cq_n--;
		if (c->ep)
			cqe[k++] = c->c;
	}
	return k;
}

static int fz_event_fd(struct rcx_dev *dev)
{
	return fz.epfd;
}

static int fz_noop(struct rcx_dev *dev)
{
	return 0;
}

static const struct rcx_provider_ops fz_ops = {
	.name = "fuzz",
	.dev_list = fz_dev_list,
	.dev_open = fz_dev_open,
	.dev_close = fz_dev_close,
	.dev_query = fz_dev_query,
	.mr_reg = fz_mr_reg,
	.mr_dereg = fz_mr_dereg,
	.mr_reg_keyed = rcx__stub_mr_reg_keyed,
	.mr_lkey = fz_mr_lkey,
	.mr_rkey = fz_mr_rkey,
	.listen = rcx__stub_listen,
	.ep_connect = fz_ep_connect,
	.ep_accept = fz_ep_accept,
	.ep_reject = fz_ep_reject,
	.peer_split = rcx__stub_peer_split,
	.ep_disconnect = fz_ep_disconnect,
	.ep_destroy = fz_ep_destroy,
	.ep_set_error = fz_ep_set_error,
	.ep_max_inline = fz_ep_max_inline,
	.ep_query = rcx__stub_ep_query,
	.pwr_create = fz_pwr_create,
	.pwr_destroy = fz_pwr_destroy,
	.pwr_post = fz_pwr_post,
	.pwr_post_recv = fz_pwr_post,
	.pwr_post_list = fz_pwr_post_list,
	.cm_poll = fz_cm_poll,
	.post_send = fz_post_send,
	.post_recv = fz_post_recv,
	.cq_poll = fz_cq_poll,
	.cq_poll_min = rcx__stub_cq_poll,
	.ep_rma_now = rcx__stub_ep_rma_now,
	.cq_dispatch = rcx__stub_cq_dispatch,
	.cq_peek = rcx__stub_cq_peek,
	.pwr_direct = rcx__stub_pwr_direct,
	.mem_alloc = rcx__stub_mem_alloc,
	.mem_free = rcx__stub_mem_free,
	.event_fd = fz_event_fd,
	.arm = fz_noop,
	.ack = fz_noop,
};

/* ---- contexts */

static void fz_init(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	uint64_t one = 1;
	int efd;

	/* small rings: cheap contexts, and credits run out quickly */
	setenv("RCX_RX_DEPTH", "8", 0);
	setenv("RCX_TX_DEPTH", "16", 0);
	setenv("RCX_EAGER_SIZE", "1024", 0);
	setenv("RCX_SPIN_US", "0", 0);
	/*
	 * Waits never sleep: the event fd is an epoll set holding an eventfd
	 * that stays readable.
	 */
	efd = eventfd(0, EFD_CLOEXEC);
	fz.epfd = epoll_create1(EPOLL_CLOEXEC);
	FZ_ASSERT(efd >= 0 && fz.epfd >= 0);
	FZ_ASSERT(write(efd, &one, sizeof(one)) == sizeof(one));
	FZ_ASSERT(!epoll_ctl(fz.epfd, EPOLL_CTL_ADD, efd, &ev));
}

struct rcx_ctx *fz_ctx_new(void)
{
	static char dev_token;
	static int inited;
	struct rcx_ctx *ctx;

	if (!inited++)
		fz_init();
	ctx = calloc(1, sizeof(*ctx));
	FZ_ASSERT(ctx);
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->magic = RCX__CTX_MAGIC;
	FZ_ASSERT(!rcx__config_load(&ctx->cfg));
	snprintf(ctx->cfg.bootstrap, sizeof(ctx->cfg.bootstrap), "singleton");
	ctx->ops = &fz_ops;
	ctx->dev = (struct rcx_dev *)&dev_token;
	/* the full poll: the fuzzer's CQ has no minimal one */
	ctx->cq_poll = fz_ops.cq_poll;
	ctx->cq_dispatch = rcx__poll_dispatch;
	fz_dev_query(ctx->dev, &ctx->info);
	snprintf(ctx->addr, sizeof(ctx->addr), "fz0");
	FZ_ASSERT(!rcx__tx_init(ctx));
	memset(&fz.script, 0, sizeof(fz.script));
	fz.peer = NULL;
	fz.arm_script = 0;
	fz.sent = 0;
	fz.on_sent = NULL;
	fz.on_deliver = NULL;
	return ctx;
}

void fz_ctx_destroy(struct rcx_ctx *ctx)
{
	struct fz_evt *e;

	FZ_ASSERT(!rcx_ctx_destroy(ctx));
	/* every endpoint was torn down: nothing was leaked on purpose */
	FZ_ASSERT(!fz.eps);
	while (fz.evt_n) {
		e = &fz.evt[fz.evt_head];
		fz.evt_head = (fz.evt_head + 1) % FZ_EVT_SIZE;
		fz.evt_n--;
		if (e->ev.type == RCX_CM_CONNECT_REQUEST)
			free(e->ev.req);
	}
	fz.cq_n = 0;
	fz.peer = NULL;
	memset(&fz.script, 0, sizeof(fz.script));
}

struct rcx_group *fz_pair_accept(struct rcx_ctx *ctx)
{
	/* group.c's request of a pair: "RCX1", kind 2, rank 1, size 2 */
	uint8_t pd[24] = { 'R', 'C', 'X', '1', 2, 0, 0, 0, 1, 0, 0, 0, 2 };
	struct rcx_group *g = NULL;

	fz_conn_request(pd, sizeof(pd));
	FZ_ASSERT(!rcx_group_accept(ctx, 1000, &g));
	return g;
}
