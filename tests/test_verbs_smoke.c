/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Soft-RoCE bed, proven through providers/verbs: a device, RC QPs
 * connected over rdma_cm (loopback and between two processes), SEND/RECV,
 * RDMA WRITE (with immediate), RDMA READ, a fenced WRITE after a READ,
 * 64-bit atomics, and completion-channel wakeup.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include "providers/provider.h"
#include "tu.h"

#define TMO_MS 20000

static const struct rcx_provider_ops *ops;
static struct rcx_dev *dev;
static char laddr[64];
static int tag_a = 'a', tag_b = 'b';

static struct rcx_ep_attr ep_attr(void *ctx)
{
	struct rcx_ep_attr a = {
		.ep_ctx = ctx,
		.max_send_wr = 256,
		.max_recv_wr = 64,
		.max_inline = 64,
		.timeout = 14,
		.retry_cnt = 6,
		.rnr_retry = 7,
	};
	return a;
}

static int open_dev(struct rcx_dev **d, char *addr, size_t len)
{
	struct rcx_dev_attr da = { .name = getenv("RCX_DEVICE") };
	int ret;

	ops = rcx__provider_find("verbs");
	if (!ops)
		return -ENODEV;
	ret = ops->dev_open(&da, d);
	if (ret)
		return ret;
	ret = ops->listen(*d, 0, addr, len);
	if (ret)
		ops->dev_close(*d);
	return ret;
}

static int suite_init(void)
{
	int ret = open_dev(&dev, laddr, sizeof(laddr));

	if (ret) {
		fprintf(stderr, "verbs device open: %s\n", rcx_strerror(ret));
		return -1;
	}
	return 0;
}

static int suite_cleanup(void)
{
	ops->dev_close(dev);
	return 0;
}

/* Drive cm events until every wanted endpoint is established. */
static int cm_until(struct rcx_dev *d, int want_est, struct rcx_ep **accepted,
		    const struct rcx_ep_attr *acc_attr, const char *want_pdata)
{
	long long end = tu_now_ms() + TMO_MS;
	struct rcx_cm_event ev;
	int est = 0, ret;

	while (est < want_est) {
		if (tu_now_ms() > end)
			return -ETIMEDOUT;
		ret = ops->cm_poll(d, &ev);
		if (ret < 0)
			return ret;
		if (ret == 0) {
			usleep(500);
			continue;
		}
		switch (ev.type) {
		case RCX_CM_CONNECT_REQUEST:
			if (!accepted || ev.pdata_len < strlen(want_pdata) ||
			    memcmp(ev.pdata, want_pdata, strlen(want_pdata))) {
				ops->ep_reject(d, ev.req);
				return -EPROTO;
			}
			ret = ops->ep_accept(d, ev.req, acc_attr, accepted);
			if (ret)
				return ret;
			break;
		case RCX_CM_ESTABLISHED:
			est++;
			break;
		default:
			return ev.status ? ev.status : -ECONNABORTED;
		}
	}
	return 0;
}

static int poll_n(struct rcx_dev *d, struct rcx_cqe *cqe, int n)
{
	long long end = tu_now_ms() + TMO_MS;
	int got = 0, ret;

	while (got < n) {
		ret = ops->cq_poll(d, cqe + got, n - got);
		if (ret < 0)
			return ret;
		got += ret;
		if (got < n && tu_now_ms() > end)
			return -ETIMEDOUT;
	}
	return 0;
}

struct pair {
	struct rcx_ep *a, *b;
};

static int pair_connect(struct pair *p)
{
	struct rcx_ep_attr aa = ep_attr(&tag_a), ab = ep_attr(&tag_b);
	int ret;

	p->a = p->b = NULL;
	ret = ops->ep_connect(dev, laddr, &aa, "smoke", 5, &p->a);
	if (ret)
		return ret;
	return cm_until(dev, 2, &p->b, &ab, "smoke");
}

static void pair_close(struct pair *p)
{
	ops->ep_destroy(p->a);
	ops->ep_destroy(p->b);
}

struct buf {
	void *p;
	size_t len;
	struct rcx_mr *mr;
};

static int buf_new(struct buf *b, size_t len)
{
	b->len = len;
	if (posix_memalign(&b->p, 64, len))
		return -ENOMEM;
	memset(b->p, 0, len);
	return ops->mr_reg(dev, b->p, len,
			   RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_READ |
				   RCX_ACCESS_REMOTE_WRITE |
				   RCX_ACCESS_REMOTE_ATOMIC,
			   &b->mr);
}

static int buf_free(struct buf *b)
{
	int ret = ops->mr_dereg(b->mr);

	free(b->p);
	return ret;
}

static struct rcx_wr wr_of(uint8_t op, const struct buf *l, size_t off,
			   uint32_t len, uint64_t wr_id)
{
	struct rcx_wr w = {
		.wr_id = wr_id,
		.op = op,
		.flags = RCX_WR_SIGNALED,
		.addr = (uintptr_t)l->p + off,
		.length = len,
		.lkey = ops->mr_lkey(l->mr),
	};
	return w;
}

static void test_device(void)
{
	struct rcx_dev_info info;

	CU_ASSERT_EQUAL_FATAL(ops->dev_query(dev, &info), 0);
	printf("\n    device %s, address %s, listening on %s, mtu %u\n",
	       info.name, info.addr, laddr, info.mtu);
	CU_ASSERT(info.port_active);
	CU_ASSERT(info.atomics);
	CU_ASSERT(info.max_qp_wr >= 256);
	CU_ASSERT(strlen(info.addr) > 0);
	/* under Soft-RoCE the device must be the rxe one */
	if (getenv("RCX_REQUIRE_DEVICE"))
		CU_ASSERT_EQUAL(strncmp(info.name, "rxe", 3), 0);
}

/*
 * The CQ holds what its QPs can have outstanding: made with 16 entries, it
 * grows as a pair of QPs reserves their depths, gives them back when they
 * go, and a QP whose depths cannot fit under the device's limit is refused
 * with -ENOSPC (where the device's limits allow one: rxe's 2 * 16,384 WRs
 * against 32,767 CQ entries) instead of risking an overrun.
 */
static void test_cq_reserve(void)
{
	struct rcx_dev_attr da = { .name = getenv("RCX_DEVICE"),
				   .cq_size = 16 };
	struct rcx_ep_attr aa = ep_attr(&tag_a), ab = ep_attr(&tag_b), big;
	struct rcx_ep *a = NULL, *b = NULL, *e = NULL;
	uint32_t pair_res = 2 * (aa.max_send_wr + aa.max_recv_wr);
	struct rcx_dev_info info;
	struct rcx_dev *d;
	char addr[64];
	int ret;

	CU_ASSERT_EQUAL_FATAL(ops->dev_open(&da, &d), 0);
	CU_ASSERT_EQUAL_FATAL(ops->listen(d, 0, addr, sizeof(addr)), 0);
	CU_ASSERT_EQUAL_FATAL(ops->dev_query(d, &info), 0);
	CU_ASSERT_EQUAL(info.cq_reserved, 0);
	CU_ASSERT(info.cq_size < pair_res);
	printf("\n    CQ made with %u entries", info.cq_size);
	CU_ASSERT_EQUAL(ops->ep_connect(d, addr, &aa, "smoke", 5, &a), 0);
	CU_ASSERT_EQUAL(cm_until(d, 2, &b, &ab, "smoke"), 0);
	CU_ASSERT_EQUAL(ops->dev_query(d, &info), 0);
	CU_ASSERT_EQUAL(info.cq_reserved, pair_res);
	CU_ASSERT(info.cq_size >= info.cq_reserved);
	printf(", %u with a pair of QPs (%u reserved)", info.cq_size,
	       info.cq_reserved);
	if (2ull * info.max_qp_wr + pair_res > info.max_cqe) {
		big = ep_attr(&tag_a);
		big.max_send_wr = big.max_recv_wr = info.max_qp_wr;
		ret = ops->ep_connect(d, addr, &big, "smoke", 5, &e);
		if (!ret)
			ret = cm_until(d, 1, NULL, NULL, "smoke");
		CU_ASSERT_EQUAL(ret, -ENOSPC);
		CU_ASSERT_EQUAL(ops->dev_query(d, &info), 0);
		CU_ASSERT_EQUAL(info.cq_reserved, pair_res);
		printf("; a QP of 2 x %u WRs: %s", info.max_qp_wr,
		       rcx_strerror(ret));
		ops->ep_destroy(e);
	}
	ops->ep_destroy(a);
	ops->ep_destroy(b);
	CU_ASSERT_EQUAL(ops->dev_query(d, &info), 0);
	CU_ASSERT_EQUAL(info.cq_reserved, 0);
	printf("\n");
	ops->dev_close(d);
}

static void test_send_recv(void)
{
	struct pair p;
	struct buf s, r;
	struct rcx_wr w, *bad;
	struct rcx_cqe c[2];
	int i;

	CU_ASSERT_EQUAL_FATAL(pair_connect(&p), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&s, 4096), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&r, 4096), 0);
	for (i = 0; i < 3; i++) {
		/* i=0 plain SEND, 1 inline SEND, 2 SEND with immediate */
		uint32_t len = i == 1 ? 48 : 3000;

		memset(s.p, 'A' + i, len);
		memset(r.p, 0, r.len);
		w = wr_of(RCX_OP_RECV, &r, 0, r.len, 100 + i);
		CU_ASSERT_EQUAL(ops->post_recv(p.b, &w, &bad), 0);
		w = wr_of(i == 2 ? RCX_OP_SEND_IMM : RCX_OP_SEND, &s, 0, len,
			  200 + i);
		if (i == 1) {
			CU_ASSERT(ops->ep_max_inline(p.a) >= 48);
			w.flags |= RCX_WR_INLINE;
		}
		w.imm = 0xdeadbeef;
		CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
		CU_ASSERT_EQUAL_FATAL(poll_n(dev, c, 2), 0);
		if (c[0].wr_id != 100u + i) { /* order across QPs is free */
			struct rcx_cqe t = c[0];

			c[0] = c[1];
			c[1] = t;
		}
		CU_ASSERT_EQUAL(c[0].wr_id, 100u + i);
		CU_ASSERT_EQUAL(c[0].status, 0);
		CU_ASSERT_EQUAL(c[0].op, RCX_OP_RECV);
		CU_ASSERT_EQUAL(c[0].byte_len, len);
		CU_ASSERT_PTR_EQUAL(c[0].ep_ctx, &tag_b);
		CU_ASSERT_EQUAL(c[0].has_imm, i == 2);
		if (i == 2)
			CU_ASSERT_EQUAL(c[0].imm, 0xdeadbeef);
		CU_ASSERT_EQUAL(c[1].wr_id, 200u + i);
		CU_ASSERT_EQUAL(c[1].status, 0);
		CU_ASSERT_EQUAL(c[1].op, RCX_OP_SEND);
		CU_ASSERT_PTR_EQUAL(c[1].ep_ctx, &tag_a);
		CU_ASSERT_EQUAL(memcmp(s.p, r.p, len), 0);
		CU_ASSERT_EQUAL(((char *)r.p)[len], 0);
	}
	CU_ASSERT_EQUAL(buf_free(&s), 0);
	CU_ASSERT_EQUAL(buf_free(&r), 0);
	pair_close(&p);
}

static void test_write_read(void)
{
	struct pair p;
	struct buf l, t, r;
	struct rcx_wr w, *bad;
	struct rcx_cqe c[2];
	size_t i;

	CU_ASSERT_EQUAL_FATAL(pair_connect(&p), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&l, 65536), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&t, 65536), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&r, 64), 0);
	for (i = 0; i < l.len; i++)
		((uint8_t *)l.p)[i] = (uint8_t)(i * 7 + 3);

	/* RDMA WRITE 64 KiB: lands in the target's memory */
	w = wr_of(RCX_OP_WRITE, &l, 0, 65536, 1);
	w.remote_addr = (uintptr_t)t.p;
	w.rkey = ops->mr_rkey(t.mr);
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
	CU_ASSERT_EQUAL_FATAL(poll_n(dev, c, 1), 0);
	CU_ASSERT_EQUAL(c[0].status, 0);
	CU_ASSERT_EQUAL(c[0].op, RCX_OP_WRITE);
	CU_ASSERT_EQUAL(memcmp(l.p, t.p, 65536), 0);

	/* WRITE with immediate consumes a receive and carries the imm */
	w = wr_of(RCX_OP_RECV, &r, 0, 0, 2);
	CU_ASSERT_EQUAL(ops->post_recv(p.b, &w, &bad), 0);
	memset(l.p, 0x5a, 128);
	w = wr_of(RCX_OP_WRITE_IMM, &l, 0, 128, 3);
	w.remote_addr = (uintptr_t)t.p + 1000;
	w.rkey = ops->mr_rkey(t.mr);
	w.imm = 77;
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
	CU_ASSERT_EQUAL_FATAL(poll_n(dev, c, 2), 0);
	for (i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(c[i].status, 0);
		if (c[i].wr_id == 2) {
			CU_ASSERT_EQUAL(c[i].op, RCX_OP_RECV_IMM);
			CU_ASSERT_EQUAL(c[i].imm, 77);
			CU_ASSERT(c[i].has_imm);
		}
	}
	CU_ASSERT_EQUAL(((uint8_t *)t.p)[1000], 0x5a);
	CU_ASSERT_EQUAL(((uint8_t *)t.p)[1127], 0x5a);

	/* RDMA READ 32 KiB back into the start of l */
	memset(l.p, 0, 32768);
	w = wr_of(RCX_OP_READ, &l, 0, 32768, 4);
	w.remote_addr = (uintptr_t)t.p + 2048;
	w.rkey = ops->mr_rkey(t.mr);
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
	CU_ASSERT_EQUAL_FATAL(poll_n(dev, c, 1), 0);
	CU_ASSERT_EQUAL(c[0].status, 0);
	CU_ASSERT_EQUAL(c[0].op, RCX_OP_READ);
	CU_ASSERT_EQUAL(memcmp(l.p, (char *)t.p + 2048, 32768), 0);

	/* a bad rkey is the remote side's access error, not a crash */
	w = wr_of(RCX_OP_WRITE, &l, 0, 8, 5);
	w.remote_addr = (uintptr_t)t.p;
	w.rkey = ops->mr_rkey(t.mr) ^ 0x5500;
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
	CU_ASSERT_EQUAL_FATAL(poll_n(dev, c, 1), 0);
	CU_ASSERT_EQUAL(c[0].status, RCX_ERR_REMOTE_ACCESS);
	CU_ASSERT_EQUAL(buf_free(&l), 0);
	CU_ASSERT_EQUAL(buf_free(&t), 0);
	CU_ASSERT_EQUAL(buf_free(&r), 0);
	pair_close(&p);
}

/*
 * Wait for the READ (wr_id 10) and the fenced WRITE (11) on p->a. rxe
 * (seen on Linux 6.1) can lose the wakeup of a fenced WR (lib/win/win.c,
 * kick): while nothing comes for 100 ms, an 8-byte READ of t into l + 128
 * is posted behind it (wr_id 99) and makes the requester look again, as
 * the library does. Those complete after the WRITE and are reaped here;
 * *kicks counts them.
 */
static int poll_fenced(struct pair *p, struct buf *l, struct buf *t,
		       struct rcx_cqe *c, int *kicks)
{
	long long end = tu_now_ms() + TMO_MS, quiet = tu_now_ms() + 100;
	int got = 0, out = 0, ret;
	struct rcx_wr k, *bad;
	struct rcx_cqe e;

	while (got < 2 || out) {
		ret = ops->cq_poll(dev, &e, 1);
		if (ret < 0)
			return ret;
		if (ret == 1) {
			if (e.wr_id == 99)
				out--;
			else if (got < 2)
				c[got++] = e;
			quiet = tu_now_ms() + 100;
			continue;
		}
		if (tu_now_ms() > end)
			return -ETIMEDOUT;
		if (got < 2 && tu_now_ms() > quiet && out < 4) {
			k = wr_of(RCX_OP_READ, l, 128, 8, 99);
			k.remote_addr = (uintptr_t)t->p + 256;
			k.rkey = ops->mr_rkey(t->mr);
			ret = ops->post_send(p->a, &k, &bad);
			if (ret)
				return ret;
			out++;
			(*kicks)++;
			quiet = tu_now_ms() + 100;
		}
	}
	return 0;
}

/*
 * READ x, then WRITE x with IBV_SEND_FENCE: the fence holds the WRITE until
 * the READ's response is back (IBA 10.8.3.3), so the READ must always see
 * the value from before the WRITE.
 */
static void test_fence_after_read(void)
{
	struct pair p;
	struct buf l, t;
	struct rcx_wr w[2], *bad;
	struct rcx_cqe c[2];
	int i, wrong = 0, kicks = 0;

	CU_ASSERT_EQUAL_FATAL(pair_connect(&p), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&l, 4096), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&t, 4096), 0);
	for (i = 0; i < 500; i++) {
		*(uint64_t *)t.p = i;
		*(uint64_t *)((char *)l.p + 64) = 1000000 + i;
		w[0] = wr_of(RCX_OP_READ, &l, 0, 8, 10);
		w[0].remote_addr = (uintptr_t)t.p;
		w[0].rkey = ops->mr_rkey(t.mr);
		w[1] = wr_of(RCX_OP_WRITE, &l, 64, 8, 11);
		w[1].flags |= RCX_WR_FENCE;
		w[1].remote_addr = (uintptr_t)t.p;
		w[1].rkey = ops->mr_rkey(t.mr);
		w[0].next = &w[1];
		CU_ASSERT_EQUAL_FATAL(ops->post_send(p.a, w, &bad), 0);
		CU_ASSERT_EQUAL_FATAL(poll_fenced(&p, &l, &t, c, &kicks), 0);
		CU_ASSERT(c[0].status == 0 && c[1].status == 0);
		/* same QP: completions come in post order */
		CU_ASSERT(c[0].wr_id == 10 && c[1].wr_id == 11);
		if (*(uint64_t *)l.p != (uint64_t)i)
			wrong++;
		CU_ASSERT_EQUAL(*(uint64_t *)t.p, 1000000u + i);
	}
	CU_ASSERT_EQUAL(wrong, 0);
	if (kicks)
		printf("\n    %d kick(s) re-drove a fenced WRITE (the device "
		       "lost its wakeup)\n",
		       kicks);
	CU_ASSERT_EQUAL(buf_free(&l), 0);
	CU_ASSERT_EQUAL(buf_free(&t), 0);
	pair_close(&p);
}

static void test_atomics(void)
{
	struct pair p;
	struct buf l, t;
	struct rcx_wr w, *bad;
	struct rcx_cqe c;
	volatile uint64_t *tv, *lv;

	CU_ASSERT_EQUAL_FATAL(pair_connect(&p), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&l, 64), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&t, 64), 0);
	tv = t.p;
	lv = l.p;
	*tv = 5;

	w = wr_of(RCX_OP_FADD, &l, 0, 8, 20);
	w.remote_addr = (uintptr_t)t.p;
	w.rkey = ops->mr_rkey(t.mr);
	w.compare_add = 10;
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
	CU_ASSERT_EQUAL_FATAL(poll_n(dev, &c, 1), 0);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_EQUAL(c.op, RCX_OP_FADD);
	CU_ASSERT_EQUAL(*lv, 5);
	CU_ASSERT_EQUAL(*tv, 15);

	/* CSWAP that matches, then one that does not */
	w = wr_of(RCX_OP_CSWAP, &l, 0, 8, 21);
	w.remote_addr = (uintptr_t)t.p;
	w.rkey = ops->mr_rkey(t.mr);
	w.compare_add = 15;
	w.swap = 99;
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
	CU_ASSERT_EQUAL_FATAL(poll_n(dev, &c, 1), 0);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_EQUAL(c.op, RCX_OP_CSWAP);
	CU_ASSERT_EQUAL(*lv, 15);
	CU_ASSERT_EQUAL(*tv, 99);
	w.compare_add = 15;
	w.swap = 1234;
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
	CU_ASSERT_EQUAL_FATAL(poll_n(dev, &c, 1), 0);
	CU_ASSERT_EQUAL(*lv, 99);
	CU_ASSERT_EQUAL(*tv, 99);

	/* misaligned target: refused at post, nothing posted */
	w.remote_addr = (uintptr_t)t.p + 4;
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), -EINVAL);
	CU_ASSERT_PTR_EQUAL(bad, &w);
	CU_ASSERT_EQUAL(ops->cq_poll(dev, &c, 1), 0);
	CU_ASSERT_EQUAL(buf_free(&l), 0);
	CU_ASSERT_EQUAL(buf_free(&t), 0);
	pair_close(&p);
}

static void test_event_wakeup(void)
{
	struct pair p;
	struct buf s, r;
	struct rcx_wr w, *bad;
	struct rcx_cqe c[2];
	struct epoll_event ee = { .events = EPOLLIN };
	int ep, efd, n, got = 0;

	CU_ASSERT_EQUAL_FATAL(pair_connect(&p), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&s, 64), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&r, 64), 0);
	efd = ops->event_fd(dev);
	CU_ASSERT_FATAL(efd >= 0);
	ep = epoll_create1(0);
	CU_ASSERT_EQUAL_FATAL(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ee), 0);

	/* armed with nothing pending: no wakeup */
	CU_ASSERT(ops->ack(dev) >= 0);
	CU_ASSERT_EQUAL(ops->arm(dev), 0);
	CU_ASSERT_EQUAL(ops->cq_poll(dev, c, 2), 0);
	CU_ASSERT_EQUAL(epoll_wait(ep, &ee, 1, 200), 0);

	w = wr_of(RCX_OP_RECV, &r, 0, 64, 30);
	CU_ASSERT_EQUAL(ops->post_recv(p.b, &w, &bad), 0);
	w = wr_of(RCX_OP_SEND, &s, 0, 16, 31);
	CU_ASSERT_EQUAL(ops->post_send(p.a, &w, &bad), 0);
	/* blocks in the kernel until the completion event arrives */
	CU_ASSERT_EQUAL(epoll_wait(ep, &ee, 1, TMO_MS), 1);
	n = ops->ack(dev);
	CU_ASSERT(n >= 1);
	while (got < 2) {
		n = ops->cq_poll(dev, c + got, 2 - got);
		CU_ASSERT_FATAL(n >= 0);
		got += n;
		if (got < 2) {
			/* re-arm, re-check, then sleep: no lost wakeup */
			CU_ASSERT_EQUAL(ops->arm(dev), 0);
			n = ops->cq_poll(dev, c + got, 2 - got);
			got += n > 0 ? n : 0;
			if (got < 2) {
				CU_ASSERT_EQUAL_FATAL(
					epoll_wait(ep, &ee, 1, TMO_MS), 1);
				ops->ack(dev);
			}
		}
	}
	CU_ASSERT(c[0].status == 0 && c[1].status == 0);
	close(ep);
	CU_ASSERT_EQUAL(buf_free(&s), 0);
	CU_ASSERT_EQUAL(buf_free(&r), 0);
	pair_close(&p);
}

/* Control message between the two processes. */
struct msg {
	char what[8];
	uint64_t addr;
	uint32_t rkey;
	int32_t verdict;
	uint64_t addr2;
	uint32_t rkey2;
	uint32_t pad;
};

static int send_msg(struct rcx_dev *d, struct rcx_ep *e, struct buf *b,
		    const struct msg *m)
{
	struct rcx_wr w = wr_of(RCX_OP_SEND, b, 0, sizeof(*m), 900), *bad;
	struct rcx_cqe c;
	int ret;

	memcpy(b->p, m, sizeof(*m));
	ret = ops->post_send(e, &w, &bad);
	if (!ret)
		ret = poll_n(d, &c, 1);
	return ret ? ret : c.status;
}

static int recv_msg(struct rcx_dev *d, struct buf *b, struct msg *m)
{
	struct rcx_cqe c;
	int ret = poll_n(d, &c, 1);

	if (ret)
		return ret;
	if (c.status || c.op != RCX_OP_RECV || c.byte_len != sizeof(*m))
		return c.status ? c.status : -EPROTO;
	memcpy(m, b->p, sizeof(*m));
	return 0;
}

/* Same verifying pattern on both sides. */
static uint8_t pat(size_t i, int seed)
{
	return (uint8_t)(i * 31 + seed);
}

static void test_two_processes(void)
{
	struct rcx_ep_attr aa = ep_attr(&tag_b);
	struct rcx_ep *ep = NULL;
	struct buf mb, data;
	struct rcx_wr w, *bad;
	struct rcx_cqe c;
	struct rcx_cm_event ev;
	struct msg m, hello;
	char *args[] = { laddr, NULL };
	long long end;
	pid_t pid;
	int fd, i, ret;
	uint64_t *counter;

	CU_ASSERT_EQUAL_FATAL(buf_new(&mb, 4096), 0);
	CU_ASSERT_EQUAL_FATAL(buf_new(&data, 8192), 0);
	counter = (uint64_t *)((char *)data.p + 4096);
	*counter = 1000;
	for (i = 0; i < 4096; i++)
		((uint8_t *)data.p)[i] = pat(i, 2);
	w = wr_of(RCX_OP_RECV, &mb, 2048, 2048, 800);
	CU_ASSERT_EQUAL_FATAL(tu_spawn_peer("smoke", args, &pid, &fd), 0);
	CU_ASSERT_EQUAL_FATAL(cm_until(dev, 1, &ep, &aa, "peer"), 0);
	/* our receive is posted before we answer anything */
	w.addr = (uintptr_t)mb.p + 2048;
	CU_ASSERT_EQUAL(ops->post_recv(ep, &w, &bad), 0);
	struct buf rb = { (char *)mb.p + 2048, 2048, mb.mr };
	/* hello: the peer's buffer */
	CU_ASSERT_EQUAL_FATAL(recv_msg(dev, &rb, &hello), 0);
	CU_ASSERT_EQUAL(memcmp(hello.what, "hello", 6), 0);

	/* RDMA WRITE a pattern into the peer, then SEND "done": RC order
	 * makes the data visible before the peer sees the message */
	struct buf pb = data;
	w = wr_of(RCX_OP_WRITE, &pb, 0, 4096, 801);
	w.remote_addr = hello.addr;
	w.rkey = hello.rkey;
	CU_ASSERT_EQUAL(ops->post_send(ep, &w, &bad), 0);
	CU_ASSERT_EQUAL_FATAL(poll_n(dev, &c, 1), 0);
	CU_ASSERT_EQUAL(c.status, 0);
	w = wr_of(RCX_OP_RECV, &rb, 0, 2048, 802);
	CU_ASSERT_EQUAL(ops->post_recv(ep, &w, &bad), 0);
	memset(&m, 0, sizeof(m));
	memcpy(m.what, "done", 5);
	m.addr = (uintptr_t)data.p;
	m.rkey = ops->mr_rkey(data.mr);
	m.addr2 = (uintptr_t)counter;
	m.rkey2 = m.rkey;
	CU_ASSERT_EQUAL_FATAL(send_msg(dev, ep, &mb, &m), 0);
	/* the peer READs our data, adds 7 to our counter, reports */
	CU_ASSERT_EQUAL_FATAL(recv_msg(dev, &rb, &m), 0);
	CU_ASSERT_EQUAL(memcmp(m.what, "bye", 4), 0);
	CU_ASSERT_EQUAL(m.verdict, 0);
	CU_ASSERT_EQUAL(*counter, 1007);

	/* the peer disconnects and exits: we see DISCONNECTED */
	end = tu_now_ms() + TMO_MS;
	ret = 0;
	while (tu_now_ms() < end) {
		ret = ops->cm_poll(dev, &ev);
		if (ret == 1 && ev.type == RCX_CM_DISCONNECTED && ev.ep == ep)
			break;
		ret = 0;
		usleep(1000);
	}
	CU_ASSERT_EQUAL(ret, 1);
	CU_ASSERT_EQUAL(tu_wait_peer(pid, TMO_MS), 0);
	close(fd);
	ops->ep_destroy(ep);
	CU_ASSERT_EQUAL(buf_free(&mb), 0);
	CU_ASSERT_EQUAL(buf_free(&data), 0);
}

/* The other process of test_two_processes. Exit code: 0 ok. */
static int peer_main(int argc, char **argv)
{
	struct rcx_dev *d;
	struct rcx_ep *ep;
	struct rcx_ep_attr aa = ep_attr(&tag_a);
	struct buf mine, rb, sb;
	struct rcx_wr w, *bad;
	struct rcx_cqe c;
	struct msg m;
	char addr[64];
	int i, bad_bytes = 0, ret;

	if (argc < 1)
		return 2;
	ret = open_dev(&d, addr, sizeof(addr));
	if (ret) {
		fprintf(stderr, "peer: open: %s\n", rcx_strerror(ret));
		return 3;
	}
	dev = d; /* buf_new registers with the suite's device pointer */
	if (ops->ep_connect(d, argv[0], &aa, "peer", 4, &ep) ||
	    cm_until(d, 1, NULL, NULL, "") || buf_new(&mine, 8192) ||
	    buf_new(&rb, 4096) || buf_new(&sb, 4096))
		return 4;
	w = wr_of(RCX_OP_RECV, &rb, 0, 4096, 1);
	if (ops->post_recv(ep, &w, &bad))
		return 5;
	memset(&m, 0, sizeof(m));
	memcpy(m.what, "hello", 6);
	m.addr = (uintptr_t)mine.p;
	m.rkey = ops->mr_rkey(mine.mr);
	/* messages are staged in sb: mine is the parent's to write now */
	if (send_msg(d, ep, &sb, &m))
		return 6;
	if (recv_msg(d, &rb, &m) || memcmp(m.what, "done", 5))
		return 7;
	for (i = 0; i < 4096; i++)
		bad_bytes += ((uint8_t *)mine.p)[i] != pat(i, 2);
	/* READ the parent's data back, FADD its counter */
	w = wr_of(RCX_OP_READ, &mine, 4096, 4096, 2);
	w.remote_addr = m.addr;
	w.rkey = m.rkey;
	if (ops->post_send(ep, &w, &bad) || poll_n(d, &c, 1) || c.status)
		return 8;
	for (i = 0; i < 4096; i++)
		bad_bytes += ((uint8_t *)mine.p)[4096 + i] != pat(i, 2);
	w = wr_of(RCX_OP_FADD, &mine, 0, 8, 3);
	w.remote_addr = m.addr2;
	w.rkey = m.rkey2;
	w.compare_add = 7;
	if (ops->post_send(ep, &w, &bad) || poll_n(d, &c, 1) || c.status ||
	    *(uint64_t *)mine.p != 1000)
		return 9;
	memset(&m, 0, sizeof(m));
	memcpy(m.what, "bye", 4);
	m.verdict = bad_bytes;
	if (send_msg(d, ep, &sb, &m))
		return 10;
	ops->ep_disconnect(ep);
	usleep(100000);
	ops->ep_destroy(ep);
	if (buf_free(&mine))
		return 12;
	if (buf_free(&rb) || buf_free(&sb))
		return 12;
	ops->dev_close(d);
	return bad_bytes ? 11 : 0;
}

/*
 * A connection request whose connecting side gave up (its endpoint
 * destroyed: its REJ reaches the request) before the accept: the accept
 * returns, -ECONNABORTED (rdma_cm takes no QP for it), or the connection
 * fails after it, and the request rejected goes without a trace. rdma_cm
 * refuses the QP with EINVAL, which the inline retry of QP creation once
 * took for the device's limit: rxe reports its sizes rounded up, and the
 * halving never ended.
 */
static void test_accept_withdrawn(void)
{
	struct rcx_ep_attr aa = ep_attr(&tag_a), ab = ep_attr(&tag_b);
	struct rcx_ep *a = NULL, *b = NULL;
	struct rcx_conn_req *req = NULL;
	struct rcx_cm_event ev;
	long long end = tu_now_ms() + TMO_MS;
	int ret;

	CU_ASSERT_EQUAL_FATAL(ops->ep_connect(dev, laddr, &aa, "smoke", 5, &a),
			      0);
	while (!req && tu_now_ms() < end) {
		ret = ops->cm_poll(dev, &ev);
		CU_ASSERT(ret >= 0);
		if (ret == 1 && ev.type == RCX_CM_CONNECT_REQUEST)
			req = ev.req;
		else if (ret <= 0)
			usleep(500);
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(req);
	ops->ep_destroy(a);
	/* let its REJ arrive (the request's own events are not ours) */
	for (end = tu_now_ms() + 500; tu_now_ms() < end;)
		if (ops->cm_poll(dev, &ev) <= 0)
			usleep(1000);
	ret = ops->ep_accept(dev, req, &ab, &b);
	printf("\n    accept of a request given up: %s", rcx_strerror(ret));
	if (ret) {
		CU_ASSERT_EQUAL(ret, -ECONNABORTED);
		ops->ep_reject(dev, req);
	} else {
		/* the REJ came after the accept: the connection fails */
		ret = cm_until(dev, 1, NULL, NULL, "smoke");
		printf(", then %s", rcx_strerror(ret));
		CU_ASSERT(ret < 0 && ret != -ETIMEDOUT);
		ops->ep_destroy(b);
	}
	printf("\n");
}

static const CU_TestInfo tests[] = {
	{ "device", test_device },
	{ "cq_reserve", test_cq_reserve },
	{ "send_recv", test_send_recv },
	{ "write_read", test_write_read },
	{ "fence_after_read", test_fence_after_read },
	{ "atomics", test_atomics },
	{ "event_wakeup", test_event_wakeup },
	{ "two_processes_rdmacm", test_two_processes },
	{ "accept_withdrawn", test_accept_withdrawn },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_verbs_smoke = {
	"verbs_smoke", TU_DEVICE, suite_init, suite_cleanup, tests,
};

const struct tu_peer tu_peer_smoke = { "smoke", peer_main };
