/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory provider's fast paths, through its ops table (two
 * endpoints of one device, connected to each other):
 *
 * - an endpoint remembers the registration its last key check found (a
 *   channel's slots, a window): a key that was deregistered, or
 *   deregistered and registered again under the same key for other
 *   memory, must be refused all the same, both where the sender runs the
 *   WR (a WRITE, at post time) and where the receiver does (a WRITE_IMM
 *   carried in its entry);
 * - cq_dispatch hands a success to its target's ok and a failure, with
 *   its status, to its cb, and so does the core's direct poll (cq_peek)
 *   through its found;
 * - a device with SHM_WORK_MIN endpoints or more polls by its work map:
 *   a poll with nothing to do looks at no endpoint in full (those it
 *   watches cost it a load each, until it found nothing long enough),
 *   and a message looks at the two of its connection only; a message to
 *   a watched endpoint leaves no mark in the map, but a WR its peer ran
 *   into its queues does;
 * - a WRITE or READ of a peer process's plain memory, posted when
 *   nothing of the endpoint's is outstanding, is the one cross-memory
 *   copy at post time, with no ring entry;
 * - a prepared WR posted alone takes its own path (shm_pwr.c): its
 *   payload, length, target and immediate, changed between posts, land
 *   each time, through pwr_post and pwr_direct's post, in order behind
 *   what waits; a receive completes in order whoever delivered it;
 * - a SEND into a receive posted in a segment of mem_alloc is copied by
 *   the sender into the receive's buffer, with nothing in the entry.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "providers/provider.h"
#include "providers/shm/shm.h"
#include "tu.h"

#define SF_TMO_MS 20000
#define SF_KEY	  0x5a5a17u /* a key of our choosing (mr_reg_keyed) */
#define SF_LEN	  64

static const struct rcx_provider_ops *ops;
static struct rcx_dev *dev;
static char laddr[64];

static int suite_init(void)
{
	struct rcx_dev_attr da = { 0 };
	int ret;

	ops = rcx__provider_find("shm");
	if (!ops)
		return -1;
	ret = ops->dev_open(&da, &dev);
	if (ret) {
		fprintf(stderr, "shm device open: %s\n", rcx_strerror(ret));
		return -1;
	}
	ret = ops->listen(dev, 0, laddr, sizeof(laddr));
	if (ret) {
		ops->dev_close(dev);
		return -1;
	}
	return 0;
}

static int suite_cleanup(void)
{
	ops->dev_close(dev);
	return 0;
}

/* Endpoint a connected to b, both on dev. */
static int pair_connect(struct rcx_ep **a, struct rcx_ep **b)
{
	struct rcx_ep_attr attr = {
		.max_send_wr = 16,
		.max_recv_wr = 16,
		.max_inline = 64,
		.rnr_retry = 7,
	};
	long long end = tu_now_ms() + SF_TMO_MS;
	struct rcx_cm_event ev;
	int est = 0, ret;

	*a = *b = NULL;
	ret = ops->ep_connect(dev, laddr, &attr, NULL, 0, a);
	while (!ret && est < 2) {
		if (tu_now_ms() > end)
			return -ETIMEDOUT;
		ret = ops->cm_poll(dev, &ev);
		if (ret <= 0)
			continue;
		ret = 0;
		if (ev.type == RCX_CM_CONNECT_REQUEST)
			ret = ops->ep_accept(dev, ev.req, &attr, b);
		else if (ev.type == RCX_CM_ESTABLISHED)
			est++;
		else
			ret = ev.status ? ev.status : -ECONNABORTED;
	}
	return ret;
}

static void pair_close(struct rcx_ep *a, struct rcx_ep *b)
{
	if (a)
		ops->ep_destroy(a);
	if (b)
		ops->ep_destroy(b);
}

/* The completion of wr_id, within the time-out: its status, or -errno. */
static int wait_cqe(uint64_t wr_id)
{
	long long end = tu_now_ms() + SF_TMO_MS;
	struct rcx_cqe c;
	int ret;

	while (tu_now_ms() < end) {
		ret = ops->cq_poll(dev, &c, 1);
		if (ret < 0)
			return ret;
		if (ret && c.wr_id == wr_id)
			return c.status;
	}
	return -ETIMEDOUT;
}

/*
 * op (WRITE or WRITE_IMM) of 8 bytes from a to raddr under SF_KEY: the
 * status of its send completion.
 */
static int write_to(struct rcx_ep *a, struct rcx_ep *b, uint8_t op,
		    uint64_t raddr)
{
	static uint64_t src = 0x1122334455667788ull;
	struct rcx_wr rw = { .wr_id = 2, .op = RCX_OP_RECV };
	struct rcx_wr w = {
		.wr_id = 1,
		.op = op,
		.flags = RCX_WR_SIGNALED,
		.addr = (uintptr_t)&src,
		.length = sizeof(src),
		.remote_addr = raddr,
		.rkey = SF_KEY,
	};
	struct rcx_wr *bad;
	int ret;

	if (op == RCX_OP_WRITE_IMM) {
		ret = ops->post_recv(b, &rw, &bad);
		if (ret)
			return ret;
	}
	ret = ops->post_send(a, &w, &bad);
	return ret ? ret : wait_cqe(1);
}

/*
 * A write under SF_KEY to t1 lands; after t1's registration is gone, a
 * write to it is refused, also when SF_KEY names other memory (t2) again.
 */
static void key_checked_each_time(uint8_t op)
{
	static uint64_t t1[SF_LEN / 8], t2[SF_LEN / 8];
	unsigned int acc = RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_WRITE;
	struct rcx_mr *m1 = NULL, *m2 = NULL;
	struct rcx_ep *a, *b;

	memset(t1, 0, sizeof(t1));
	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	CU_ASSERT_EQUAL_FATAL(ops->mr_reg_keyed(dev, t1, sizeof(t1), acc,
						SF_KEY, SF_KEY, &m1),
			      0);
	CU_ASSERT_EQUAL(write_to(a, b, op, (uintptr_t)t1), 0);
	CU_ASSERT_EQUAL(t1[0], 0x1122334455667788ull);
	/* the same key for other memory: t1 is no longer reachable */
	CU_ASSERT_EQUAL(ops->mr_dereg(m1), 0);
	CU_ASSERT_EQUAL_FATAL(ops->mr_reg_keyed(dev, t2, sizeof(t2), acc,
						SF_KEY, SF_KEY, &m2),
			      0);
	t1[0] = 0;
	CU_ASSERT_EQUAL(write_to(a, b, op, (uintptr_t)t1),
			RCX_ERR_REMOTE_ACCESS);
	CU_ASSERT_EQUAL(t1[0], 0);
	pair_close(a, b);
	/* and with no registration under the key at all */
	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	CU_ASSERT_EQUAL(write_to(a, b, op, (uintptr_t)t2), 0);
	CU_ASSERT_EQUAL(ops->mr_dereg(m2), 0);
	t2[0] = 0;
	CU_ASSERT_EQUAL(write_to(a, b, op, (uintptr_t)t2),
			RCX_ERR_REMOTE_ACCESS);
	CU_ASSERT_EQUAL(t2[0], 0);
	pair_close(a, b);
}

/* a WRITE: run by the sender when it is posted */
static void test_write_key_checked(void)
{
	key_checked_each_time(RCX_OP_WRITE);
}

/* a WRITE_IMM in its entry: run by the receiver when it polls */
static void test_write_imm_key_checked(void)
{
	key_checked_each_time(RCX_OP_WRITE_IMM);
}

struct sf_target {
	struct rcx_wct wct; /* first: what wr_id points at */
	int oks, cbs, status;
	uint32_t byte_len;
};

static void sf_ok(struct rcx_ctx *ctx, struct rcx_wct *t, uint32_t byte_len,
		  uint32_t imm, int has_imm)
{
	struct sf_target *s = (struct sf_target *)t;

	(void)ctx, (void)imm, (void)has_imm;
	s->oks++;
	s->byte_len = byte_len;
}

static void sf_cb(struct rcx_ctx *ctx, struct rcx_wct *t,
		  const struct rcx_cqe *cqe)
{
	struct sf_target *s = (struct sf_target *)t;

	(void)ctx;
	s->cbs++;
	s->status = cqe->status;
}

/* the core's direct poll of dev (cq_peek), or NULL: cq_dispatch */
static struct rcx_cq_peek *peek;

/* one pass: cq_dispatch, or the direct poll and its found */
static int pass(void)
{
	int got;

	if (!peek)
		return ops->cq_dispatch(dev, NULL);
	got = peek->poll(peek->cq, peek->n, peek->buf);
	return got ? peek->found(dev, NULL, got) : 0;
}

/* passes until every target in ts[0..n) got a call */
static int dispatch_until(struct sf_target *ts, int n)
{
	long long end = tu_now_ms() + SF_TMO_MS;
	int i, left = n, ret;

	while (left && tu_now_ms() < end) {
		ret = pass();
		if (ret < 0)
			return ret;
		for (left = 0, i = 0; i < n; i++)
			left += !ts[i].oks && !ts[i].cbs;
	}
	return left ? -ETIMEDOUT : 0;
}

static void dispatch_ok_and_cb(void)
{
	static uint64_t src = 7, dst;
	struct sf_target ts[3];
	struct rcx_wr rw = { .op = RCX_OP_RECV,
			     .addr = (uintptr_t)&dst,
			     .length = sizeof(dst) };
	struct rcx_wr sw = { .op = RCX_OP_SEND,
			     .flags = RCX_WR_SIGNALED,
			     .addr = (uintptr_t)&src,
			     .length = sizeof(src) };
	struct rcx_wr bw = sw; /* a WRITE under a key nobody has */
	struct rcx_wr *bad;
	struct rcx_ep *a, *b;
	int i;

	memset(ts, 0, sizeof(ts));
	for (i = 0; i < 3; i++) {
		ts[i].wct.ok = sf_ok;
		ts[i].wct.cb = sf_cb;
	}
	rw.wr_id = (uintptr_t)&ts[0];
	sw.wr_id = (uintptr_t)&ts[1];
	bw.wr_id = (uintptr_t)&ts[2];
	bw.op = RCX_OP_WRITE;
	bw.remote_addr = (uintptr_t)&dst;
	bw.rkey = SF_KEY + 1;
	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
	CU_ASSERT_EQUAL(ops->post_send(a, &sw, &bad), 0);
	CU_ASSERT_EQUAL(dispatch_until(ts, 2), 0);
	CU_ASSERT_EQUAL(dst, 7);
	for (i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(ts[i].oks, 1);
		CU_ASSERT_EQUAL(ts[i].cbs, 0);
	}
	CU_ASSERT_EQUAL(ts[0].byte_len, sizeof(src));
	CU_ASSERT_EQUAL(ops->post_send(a, &bw, &bad), 0);
	CU_ASSERT_EQUAL(dispatch_until(ts + 2, 1), 0);
	CU_ASSERT_EQUAL(ts[2].oks, 0);
	CU_ASSERT_EQUAL(ts[2].cbs, 1);
	CU_ASSERT_EQUAL(ts[2].status, RCX_ERR_REMOTE_ACCESS);
	pair_close(a, b);
	/* what the endpoints left (their flushes) goes with them */
	while (ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1) > 0)
		;
}

static void test_dispatch(void)
{
	peek = NULL;
	dispatch_ok_and_cb();
}

/*
 * The core's tests poll the device directly (cq_peek): a poll that finds
 * nothing says so, one that finds completions leaves them to found, which
 * hands them over as cq_dispatch does.
 */
static void test_peek(void)
{
	struct rcx_cq_peek pk = { 0 };

	CU_ASSERT_EQUAL_FATAL(ops->cq_peek(dev, &pk), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pk.poll);
	CU_ASSERT_PTR_NOT_NULL_FATAL(pk.found);
	CU_ASSERT(pk.n > 0);
	CU_ASSERT_EQUAL(pk.poll(pk.cq, pk.n, pk.buf), 0);
	peek = &pk;
	dispatch_ok_and_cb();
	peek = NULL;
	CU_ASSERT_EQUAL(pk.poll(pk.cq, pk.n, pk.buf), 0);
}

#define SF_PAIRS 3

/* cq_poll once: how many endpoints it looked at */
static uint32_t poll_looks(int *got)
{
	struct shm_dev *sd = (struct shm_dev *)dev;
	uint32_t l0 = sd->looks;
	struct rcx_cqe c;

	*got = ops->cq_poll(dev, &c, 1);
	return sd->looks - l0;
}

/*
 * a sends 8 bytes to b (signaled or not): its completions, within the
 * time-out; *marks: the map after the post, *after: after the polls
 */
static void work_message(struct rcx_ep *a, struct rcx_ep *b, bool sig,
			 uint32_t *most, uint64_t *marks, uint64_t *after)
{
	static uint64_t src = 9, dst;
	struct rcx_wr rw = { .wr_id = 2,
			     .op = RCX_OP_RECV,
			     .addr = (uintptr_t)&dst,
			     .length = sizeof(dst) };
	struct rcx_wr sw = { .wr_id = 1,
			     .op = RCX_OP_SEND,
			     .flags = sig ? RCX_WR_SIGNALED : 0,
			     .addr = (uintptr_t)&src,
			     .length = sizeof(src) };
	struct shm_dev *sd = (struct shm_dev *)dev;
	struct rcx_wr *bad;
	long long end;
	uint32_t n;
	int got, done = 0;

	dst = 0;
	*most = 0;
	CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
	CU_ASSERT_EQUAL(ops->post_send(a, &sw, &bad), 0);
	/* the marks the post left in the map, before a poll takes them */
	*marks = atomic_load(&sd->seg->work);
	end = tu_now_ms() + SF_TMO_MS;
	while (done < 1 + sig && tu_now_ms() < end) {
		n = poll_looks(&got);
		*most = n > *most ? n : *most;
		done += got > 0;
	}
	*after = atomic_load(&sd->seg->work);
	CU_ASSERT_EQUAL(done, 1 + sig);
	CU_ASSERT_EQUAL(dst, 9);
}

static void test_work_map(void)
{
	struct rcx_ep *a[SF_PAIRS], *b[SF_PAIRS];
	uint64_t marks, after;
	uint32_t most;
	int i, got;

	CU_ASSERT_FATAL(2 * SF_PAIRS >= SHM_WORK_MIN);
	for (i = 0; i < SF_PAIRS; i++)
		CU_ASSERT_EQUAL_FATAL(pair_connect(&a[i], &b[i]), 0);
	CU_ASSERT_FATAL(((struct shm_dev *)dev)->work_on);
	/* the passes after the connections look at every endpoint, then
	 * at those that had work, until none has */
	for (i = 0; i < 8; i++)
		poll_looks(&got);
	CU_ASSERT_EQUAL(poll_looks(&got), 0);
	CU_ASSERT_EQUAL(got, 0);
	work_message(a[1], b[1], true, &most, &marks, &after);
	/* a[1] and b[1], not the four others */
	CU_ASSERT(most <= 2);
	/* watched now (both had work): a pass after the next looks at
	 * neither in full (a load of the seq word each), nor at the others */
	CU_ASSERT_EQUAL(((struct shm_dev *)dev)->nwatch, 2);
	poll_looks(&got);
	CU_ASSERT_EQUAL(poll_looks(&got), 0);
	CU_ASSERT_EQUAL(((struct shm_dev *)dev)->nwatch, 2);
	/* found nothing long enough, a device watches no more */
	for (i = 0; i < SHM_WATCH_IDLE + SHM_WATCH_CHECK; i++)
		poll_looks(&got);
	CU_ASSERT_EQUAL(((struct shm_dev *)dev)->nwatch, 0);
	CU_ASSERT_EQUAL(poll_looks(&got), 0);
	for (i = 0; i < SF_PAIRS; i++)
		pair_close(a[i], b[i]);
	while (ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1) > 0)
		;
}

/*
 * A message to an endpoint its device watches (it had work) leaves no
 * mark in the map (a line the waiter polls, written by the sender and
 * taken back by the waiter: two transfers per message): the waiter's
 * pass looks at the endpoint anyway. Nor does the run of an unsignaled
 * message mark the sender's endpoint: it has nothing to take (sq_want),
 * so it has no work and is not watched. Once b[1] had no work long
 * enough, it is watched no more, and a message marks again, and
 * arrives.
 */
static void test_work_watched(void)
{
	struct shm_dev *sd = (struct shm_dev *)dev;
	struct rcx_ep *a[SF_PAIRS], *b[SF_PAIRS];
	uint64_t abit, bbit, marks, after;
	uint32_t most;
	int i, got;

	for (i = 0; i < SF_PAIRS; i++)
		CU_ASSERT_EQUAL_FATAL(pair_connect(&a[i], &b[i]), 0);
	CU_ASSERT_FATAL(sd->work_on);
	for (i = 0; i < 8; i++)
		poll_looks(&got);
	abit = 1ull << shm_work_bit(((struct shm_ep *)a[1])->id);
	bbit = 1ull << shm_work_bit(((struct shm_ep *)b[1])->id);
	CU_ASSERT_NOT_EQUAL_FATAL(abit, bbit);
	/* not watched yet: the first message marks b[1]'s bit */
	work_message(a[1], b[1], false, &most, &marks, &after);
	CU_ASSERT(marks & bbit);
	CU_ASSERT(((struct shm_ep *)b[1])->watched);
	/* watched: no mark, the message arrives all the same; its run
	 * leaves none for the sender either */
	for (i = 0; i < 3; i++) {
		work_message(a[1], b[1], false, &most, &marks, &after);
		CU_ASSERT_EQUAL(marks, 0);
		CU_ASSERT_EQUAL(after & abit, 0);
		/* b[1] only: a lone unsignaled send leaves its sender
		 * nothing to look for in the next pass */
		CU_ASSERT(most <= 1);
	}
	CU_ASSERT(!((struct shm_ep *)a[1])->watched);
	/* a signaled one: the sender's completion, and its mark */
	work_message(a[1], b[1], true, &most, &marks, &after);
	CU_ASSERT_EQUAL(marks, 0);
	for (i = 0; i <= SHM_WATCH_IDLE + SHM_WATCH_CHECK; i++)
		poll_looks(&got);
	CU_ASSERT(!((struct shm_ep *)b[1])->watched);
	CU_ASSERT_EQUAL(sd->nwatch, 0);
	work_message(a[1], b[1], true, &most, &marks, &after);
	CU_ASSERT(marks & bbit);
	/* an endpoint destroyed while watched leaves the watch */
	CU_ASSERT(((struct shm_ep *)b[1])->watched);
	for (i = 0; i < SF_PAIRS; i++)
		pair_close(a[i], b[i]);
	CU_ASSERT_EQUAL(sd->nwatch, 0);
	while (ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1) > 0)
		;
}

/*
 * A WR the sender runs itself into a watched endpoint's queues (a SEND
 * too long to travel in its entry) moves the entry the receiver's pass
 * loads past it: that receiver is marked all the same, and its receive
 * completes.
 */
static void test_work_watched_sender_ran(void)
{
	static uint8_t src[2 * SHM_INLINE], dst[2 * SHM_INLINE];
	struct shm_dev *sd = (struct shm_dev *)dev;
	struct rcx_ep *a[SF_PAIRS], *b[SF_PAIRS];
	struct rcx_wr rw = { .wr_id = 2,
			     .op = RCX_OP_RECV,
			     .addr = (uintptr_t)dst,
			     .length = sizeof(dst) };
	struct rcx_wr sw = { .wr_id = 1,
			     .op = RCX_OP_SEND,
			     .addr = (uintptr_t)src,
			     .length = sizeof(src) };
	uint64_t bbit, marks, after;
	struct rcx_wr *bad;
	uint32_t most;
	int i;

	for (i = 0; i < SF_PAIRS; i++)
		CU_ASSERT_EQUAL_FATAL(pair_connect(&a[i], &b[i]), 0);
	CU_ASSERT_FATAL(sd->work_on);
	bbit = 1ull << shm_work_bit(((struct shm_ep *)b[1])->id);
	work_message(a[1], b[1], false, &most, &marks, &after);
	CU_ASSERT_FATAL(((struct shm_ep *)b[1])->watched);
	memset(src, 0x5c, sizeof(src));
	memset(dst, 0, sizeof(dst));
	CU_ASSERT_EQUAL(ops->post_recv(b[1], &rw, &bad), 0);
	CU_ASSERT_EQUAL(ops->post_send(a[1], &sw, &bad), 0);
	/* the post ran it (the receive was there) and marked b[1] */
	CU_ASSERT(atomic_load(&sd->seg->work) & bbit);
	CU_ASSERT_EQUAL(wait_cqe(2), 0);
	CU_ASSERT(!memcmp(dst, src, sizeof(src)));
	for (i = 0; i < SF_PAIRS; i++)
		pair_close(a[i], b[i]);
	while (ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1) > 0)
		;
}

/*
 * An inline payload is written past the entry's first line first, then
 * that line (see sq_put): every length around the line's share
 * (SHM_SQE_HEAD) and up to SHM_INLINE arrives whole, for SEND and
 * WRITE_IMM.
 */
static void test_inline_lengths(void)
{
	static const uint32_t lens[] = {
		0,  1,	  SHM_SQE_HEAD - 1, SHM_SQE_HEAD, SHM_SQE_HEAD + 1, 64,
		65, 1000, SHM_INLINE - 1,   SHM_INLINE,
	};
	static uint8_t src[SHM_INLINE], dst[SHM_INLINE + 1];
	struct rcx_ep *a, *b;
	struct rcx_wr *bad;
	struct rcx_mr *mr;
	unsigned int i, k;

	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	CU_ASSERT_EQUAL_FATAL(
		ops->mr_reg(dev, dst, sizeof(dst),
			    RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_WRITE,
			    &mr),
		0);
	for (k = 0; k < 2; k++)
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			struct rcx_wr rw = { .wr_id = 2,
					     .op = RCX_OP_RECV,
					     .addr = (uintptr_t)dst,
					     .length = sizeof(dst) };
			struct rcx_wr sw = {
				.wr_id = 1,
				.op = k ? RCX_OP_WRITE_IMM : RCX_OP_SEND,
				.flags = RCX_WR_SIGNALED,
				.addr = (uintptr_t)src,
				.length = lens[i],
				.remote_addr = (uintptr_t)dst,
				.rkey = ops->mr_rkey(mr),
			};

			memset(src, (int)(i + 16 * k + 1), sizeof(src));
			memset(dst, 0, sizeof(dst));
			CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
			CU_ASSERT_EQUAL(ops->post_send(a, &sw, &bad), 0);
			CU_ASSERT_EQUAL(wait_cqe(2), 0);
			CU_ASSERT_EQUAL(wait_cqe(1), 0);
			CU_ASSERT(!memcmp(dst, src, lens[i]));
			/* nothing past the payload */
			CU_ASSERT_EQUAL(dst[lens[i]], 0);
		}
	ops->mr_dereg(mr);
	pair_close(a, b);
	while (ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1) > 0)
		;
}

/*
 * The sender does not look at how far the receiver ran its unsignaled
 * inline SENDs on every poll (the word the receiver writes per message:
 * held by the sender's polls, each write waited for its line): they are
 * reaped with the next signaled one. One that fails completes all the
 * same, with its error.
 */
static void test_lazy_reap(void)
{
	static uint64_t src[4] = { 7, 8, 9, 10 }, dst[4];
	struct rcx_ep *a, *b;
	struct shm_ep *sa;
	struct rcx_wr *bad;
	struct rcx_cqe c;
	int i, k, got = 0;

	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	sa = (struct shm_ep *)a;
	for (i = 0; i < 4; i++) {
		struct rcx_wr rw = { .wr_id = 10 + i,
				     .op = RCX_OP_RECV,
				     .addr = (uintptr_t)&dst[i],
				     .length = sizeof(dst[i]) };
		struct rcx_wr sw = { .wr_id = 20 + i,
				     .op = RCX_OP_SEND,
				     /* the last one signaled */
				     .flags = i == 3 ? RCX_WR_SIGNALED : 0,
				     .addr = (uintptr_t)&src[i],
				     .length = sizeof(src[i]) };

		CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
		if (i < 3) {
			CU_ASSERT_EQUAL(ops->post_send(a, &sw, &bad), 0);
			CU_ASSERT_EQUAL(wait_cqe(10 + i), 0);
			CU_ASSERT_EQUAL(dst[i], src[i]);
			/* run by the receiver, polled many times: not
			 * reaped (no completion wanted) */
			for (k = 0; k < 100; k++)
				got += ops->cq_poll(dev, &c, 1);
			CU_ASSERT_EQUAL(got, 0);
			CU_ASSERT_EQUAL(sa->sq_reaped, 0);
		} else {
			CU_ASSERT_EQUAL(ops->post_send(a, &sw, &bad), 0);
			CU_ASSERT_EQUAL(wait_cqe(10 + i), 0);
			CU_ASSERT_EQUAL(wait_cqe(20 + i), 0);
			CU_ASSERT_EQUAL(sa->sq_reaped, 4);
		}
	}
	/* an unsignaled SEND longer than its receive: its error comes */
	{
		struct rcx_wr rw = { .wr_id = 30,
				     .op = RCX_OP_RECV,
				     .addr = (uintptr_t)&dst[0],
				     .length = 4 };
		struct rcx_wr sw = { .wr_id = 31,
				     .op = RCX_OP_SEND,
				     .addr = (uintptr_t)&src[0],
				     .length = sizeof(src[0]) };

		CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
		CU_ASSERT_EQUAL(ops->post_send(a, &sw, &bad), 0);
		CU_ASSERT_EQUAL(wait_cqe(31), RCX_ERR_REMOTE_OP);
	}
	pair_close(a, b);
	while (ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1) > 0)
		;
}

/* The peer process of rma_now_plain_memory: a buffer of plain memory. */
struct sf_peer_buf {
	uint64_t addr;
	uint32_t rkey;
};

#define SF_CMA_LEN 65536

/*
 * The child: its own device, connected to ours; its buffer, registered,
 * is told through wfd; it leaves when rfd says so (passive target: it
 * runs no progress meanwhile). Exit status 0 when all went well.
 */
static int cma_peer(int wfd, int rfd)
{
	static uint8_t buf[SF_CMA_LEN];
	struct rcx_ep_attr attr = { .max_send_wr = 16,
				    .max_recv_wr = 16,
				    .rnr_retry = 7 };
	long long end = tu_now_ms() + SF_TMO_MS;
	struct rcx_dev_attr da = { 0 };
	struct rcx_cm_event ev;
	struct sf_peer_buf m;
	struct rcx_dev *cd;
	struct rcx_ep *ep = NULL;
	struct rcx_mr *mr;
	bool est = false;
	char c;
	int ret;

	if (ops->dev_open(&da, &cd))
		return 1;
	ret = ops->ep_connect(cd, laddr, &attr, NULL, 0, &ep);
	while (!ret && !est && tu_now_ms() < end) {
		ret = ops->cm_poll(cd, &ev);
		est = ret > 0 && ev.type == RCX_CM_ESTABLISHED;
		ret = ret > 0 && !est ? -1 : 0;
	}
	memset(buf, 0xa5, sizeof(buf));
	if (!est ||
	    ops->mr_reg(cd, buf, sizeof(buf),
			RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_READ |
				RCX_ACCESS_REMOTE_WRITE,
			&mr))
		return 2;
	m.addr = (uintptr_t)buf;
	m.rkey = ops->mr_rkey(mr);
	if (write(wfd, &m, sizeof(m)) != sizeof(m) || read(rfd, &c, 1) != 1)
		return 3;
	ret = buf[0] == 0x3c && buf[SF_CMA_LEN - 1] == 0x3c ? 0 : 4;
	ops->mr_dereg(mr);
	ops->ep_destroy(ep);
	ops->dev_close(cd);
	return ret;
}

/* op of SF_CMA_LEN bytes between lb and the peer's buffer: its status,
 * and whether it took a ring entry */
static int cma_op(struct rcx_ep *b, uint8_t op, void *lb,
		  const struct sf_peer_buf *m, bool *entry)
{
	struct shm_ep *sep = to_sep(b);
	uint32_t t0 = atomic_load(&sep->tx->sq_tail);
	struct rcx_wr w = {
		.wr_id = 41,
		.op = op,
		.flags = RCX_WR_SIGNALED,
		.addr = (uintptr_t)lb,
		.length = SF_CMA_LEN,
		.remote_addr = m->addr,
		.rkey = m->rkey,
	};
	struct rcx_wr *bad;
	int ret = ops->post_send(b, &w, &bad);

	*entry = atomic_load(&sep->tx->sq_tail) != t0;
	return ret ? ret : wait_cqe(41);
}

/*
 * A READ, then a WRITE, of another process's plain memory (a rendezvous
 * READ), posted with nothing of the endpoint's outstanding: each is the
 * one process_vm_readv / writev the executor would make, run at post
 * time with no ring entry (no line of the connection segment written,
 * no lock, no mark for the peer), and completes with the data moved.
 */
static void test_rma_now_plain(void)
{
	static uint8_t lb[SF_CMA_LEN];
	struct rcx_ep_attr attr = { .max_send_wr = 16,
				    .max_recv_wr = 16,
				    .rnr_retry = 7 };
	int up[2], down[2], st = -1;
	struct sf_peer_buf m = { 0 };
	struct rcx_cm_event ev;
	struct rcx_ep *b = NULL;
	long long end;
	bool entry;
	pid_t pid;

	CU_ASSERT_EQUAL_FATAL(pipe(up), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(down), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid) {
		close(up[0]);
		close(down[1]);
		_exit(cma_peer(up[1], down[0]));
	}
	close(up[1]);
	close(down[0]);
	end = tu_now_ms() + SF_TMO_MS;
	while (tu_now_ms() < end) {
		if (ops->cm_poll(dev, &ev) <= 0)
			continue;
		if (ev.type == RCX_CM_ESTABLISHED)
			break;
		if (ev.type == RCX_CM_CONNECT_REQUEST) {
			CU_ASSERT_EQUAL(ops->ep_accept(dev, ev.req, &attr, &b),
					0);
		}
	}
	CU_ASSERT_EQUAL(read(up[0], &m, sizeof(m)), (ssize_t)sizeof(m));
	if (b && m.addr) {
		CU_ASSERT_EQUAL(cma_op(b, RCX_OP_READ, lb, &m, &entry), 0);
		CU_ASSERT(!entry);
		CU_ASSERT(lb[0] == 0xa5 && lb[SF_CMA_LEN - 1] == 0xa5);
		memset(lb, 0x3c, sizeof(lb));
		CU_ASSERT_EQUAL(cma_op(b, RCX_OP_WRITE, lb, &m, &entry), 0);
		CU_ASSERT(!entry);
	}
	/* the child waits for this unless it failed before (no buffer) */
	if (m.addr)
		CU_ASSERT_EQUAL(write(down[1], "x", 1), 1);
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (b)
		ops->ep_destroy(b);
	close(up[0]);
	close(down[1]);
	while (ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1) > 0)
		;
}

/*
 * Prepared WRs (shm_pwr.c). wait_get: the completion of wr_id, copied
 * to *out, within the time-out (its status, or -errno); those of other
 * WRs it meets are counted in sf_others.
 */
static int sf_others;

static int wait_get(uint64_t wr_id, struct rcx_cqe *out)
{
	long long end = tu_now_ms() + SF_TMO_MS;
	int ret;

	while (tu_now_ms() < end) {
		ret = ops->cq_poll(dev, out, 1);
		if (ret < 0)
			return ret;
		if (ret && out->wr_id == wr_id)
			return out->status;
		sf_others += ret;
	}
	return -ETIMEDOUT;
}

/* a prepared WR of a's: posted by pwr_post or by pwr_direct's post */
static int pwr_send(struct rcx_ep *a, struct rcx_pwr *p,
		    const struct rcx_pwr_direct *d)
{
	struct ibv_send_wr *bad;

	if (d)
		return -d->send(d->qp, (struct ibv_send_wr *)d->swr, &bad);
	return ops->pwr_post(a, &p, 1);
}

#define SF_PWR_POSTS (3 * SHM_SQ + 7)
#define SF_PWR_SLOTS 3

/*
 * A prepared WRITE_IMM posted past the ring's end, its payload, length,
 * slot and immediate changed before each post: each lands whole where it
 * was sent, with its immediate and length, signaled or not, by pwr_post
 * or pwr_direct's post; lengths past the entry's first line and past
 * what an entry carries included.
 */
static void pwr_write_imm_each(bool signaled, bool direct)
{
	static const uint32_t lens[] = { 8,
					 1,
					 0,
					 13,
					 16,
					 31,
					 32,
					 33,
					 100,
					 1024,
					 9,
					 SHM_INLINE,
					 SHM_INLINE + 1 };
	static uint8_t src[SHM_INLINE + 1];
	static uint8_t dst[SF_PWR_SLOTS][SHM_INLINE + 2];
	unsigned int acc = RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_WRITE;
	struct rcx_wr w = {
		.wr_id = 1,
		.op = RCX_OP_WRITE_IMM,
		.flags = (uint8_t)(signaled ? RCX_WR_SIGNALED : 0),
		.addr = (uintptr_t)src,
		.length = 8,
		.remote_addr = (uintptr_t)dst[0],
		.rkey = SF_KEY,
		.imm = 99,
	};
	struct rcx_wr rw = { .wr_id = 2, .op = RCX_OP_RECV };
	struct rcx_pwr_direct d;
	struct rcx_pwr *p = NULL;
	struct rcx_ep *a, *b;
	struct rcx_mr *mr;
	struct rcx_wr *bad;
	struct rcx_cqe c;
	unsigned int i, len, slot, bad_data = 0;

	sf_others = 0;
	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	CU_ASSERT_EQUAL_FATAL(ops->mr_reg_keyed(dev, dst, sizeof(dst), acc,
						SF_KEY, SF_KEY, &mr),
			      0);
	CU_ASSERT_EQUAL_FATAL(ops->pwr_create(a, &w, 0, &p), 0);
	if (direct)
		CU_ASSERT_EQUAL_FATAL(ops->pwr_direct(a, p, 0, &d), 0);
	for (i = 0; i < SF_PWR_POSTS; i++) {
		len = lens[i % (sizeof(lens) / sizeof(lens[0]))];
		slot = i % SF_PWR_SLOTS;
		memset(src, (int)(i * 3 + 1), sizeof(src));
		src[0] = (uint8_t)i;
		memset(dst[slot], 0, sizeof(dst[slot]));
		*p->length = len;
		*p->remote_addr = (uintptr_t)dst[slot];
		*p->imm_be = htobe32(0x1000 + i);
		CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
		CU_ASSERT_EQUAL_FATAL(pwr_send(a, p, direct ? &d : NULL), 0);
		CU_ASSERT_EQUAL_FATAL(wait_get(2, &c), 0);
		CU_ASSERT_EQUAL(c.imm, 0x1000 + i);
		CU_ASSERT(c.has_imm);
		CU_ASSERT_EQUAL(c.byte_len, len);
		bad_data +=
			memcmp(dst[slot], src, len) != 0 || dst[slot][len] != 0;
	}
	CU_ASSERT_EQUAL(bad_data, 0);
	/* the send completions: every one signaled, none else */
	while (ops->cq_poll(dev, &c, 1) > 0)
		sf_others++;
	CU_ASSERT_EQUAL(sf_others, signaled ? SF_PWR_POSTS : 0);
	ops->pwr_destroy(p);
	ops->mr_dereg(mr);
	pair_close(a, b);
	while (ops->cq_poll(dev, &c, 1) > 0)
		;
}

static void test_pwr_write_imm(void)
{
	pwr_write_imm_each(false, false);
	pwr_write_imm_each(true, false);
}

static void test_pwr_write_imm_direct(void)
{
	pwr_write_imm_each(false, true);
	pwr_write_imm_each(true, true);
}

/*
 * A prepared SEND and a prepared receive, both posted by pwr_direct's
 * post, the receive's buffer and the send's payload and length changed
 * between posts; and a prepared SEND posted behind a SEND that waits for
 * its receive goes after it, in order.
 */
static void test_pwr_send_recv_direct(void)
{
	static uint8_t src[256], dst[2][256];
	struct rcx_wr sw = { .wr_id = 1,
			     .op = RCX_OP_SEND,
			     .addr = (uintptr_t)src,
			     .length = 8 };
	struct rcx_wr rw = { .wr_id = 2,
			     .op = RCX_OP_RECV,
			     .addr = (uintptr_t)dst[0],
			     .length = sizeof(dst[0]) };
	struct rcx_wr gw = { .wr_id = 3,
			     .op = RCX_OP_SEND,
			     .flags = RCX_WR_SIGNALED,
			     .addr = (uintptr_t)src,
			     .length = 4 };
	struct rcx_pwr_direct ds, dr;
	struct rcx_pwr *ps = NULL, *pr = NULL;
	struct ibv_recv_wr *rbad;
	struct rcx_ep *a, *b;
	struct rcx_wr *bad;
	struct rcx_cqe c;
	unsigned int i, len, bad_data = 0;
	static const uint8_t first[4] = { 0xa1, 0xa2, 0xa3, 0xa4 };

	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	CU_ASSERT_EQUAL_FATAL(ops->pwr_create(a, &sw, 0, &ps), 0);
	CU_ASSERT_EQUAL_FATAL(ops->pwr_create(b, &rw, 1, &pr), 0);
	CU_ASSERT_EQUAL_FATAL(ops->pwr_direct(a, ps, 0, &ds), 0);
	CU_ASSERT_EQUAL_FATAL(ops->pwr_direct(b, pr, 1, &dr), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ds.send);
	CU_ASSERT_PTR_NOT_NULL_FATAL(dr.recv);
	for (i = 0; i < SF_PWR_POSTS; i++) {
		len = 1 + (i * 37) % sizeof(src);
		memset(src, (int)(i + 1), sizeof(src));
		memset(dst[i % 2], 0, sizeof(dst[i % 2]));
		*pr->addr = (uintptr_t)dst[i % 2];
		*ps->length = len;
		CU_ASSERT_EQUAL_FATAL(dr.recv(dr.qp, dr.rwr, &rbad), 0);
		CU_ASSERT_EQUAL_FATAL(pwr_send(a, ps, &ds), 0);
		CU_ASSERT_EQUAL_FATAL(wait_get(2, &c), 0);
		CU_ASSERT_EQUAL(c.byte_len, len);
		bad_data += memcmp(dst[i % 2], src, len) != 0 ||
			    (len < sizeof(dst[0]) && dst[i % 2][len]);
	}
	CU_ASSERT_EQUAL(bad_data, 0);
	/* behind a SEND that waits for its receive: after it */
	memcpy(src, first, sizeof(first));
	CU_ASSERT_EQUAL(ops->post_send(a, &gw, &bad), 0);
	src[0] = 0xb1;
	*ps->length = 1;
	CU_ASSERT_EQUAL(pwr_send(a, ps, &ds), 0);
	memset(dst, 0, sizeof(dst));
	*pr->addr = (uintptr_t)dst[0];
	CU_ASSERT_EQUAL(dr.recv(dr.qp, dr.rwr, &rbad), 0);
	CU_ASSERT_EQUAL(wait_get(2, &c), 0);
	CU_ASSERT_EQUAL(c.byte_len, 4);
	CU_ASSERT(!memcmp(dst[0], first, 4));
	*pr->addr = (uintptr_t)dst[1];
	CU_ASSERT_EQUAL(dr.recv(dr.qp, dr.rwr, &rbad), 0);
	CU_ASSERT_EQUAL(wait_get(2, &c), 0);
	CU_ASSERT_EQUAL(c.byte_len, 1);
	CU_ASSERT_EQUAL(dst[1][0], 0xb1);
	ops->pwr_destroy(ps);
	ops->pwr_destroy(pr);
	pair_close(a, b);
	while (ops->cq_poll(dev, &c, 1) > 0)
		;
}

/*
 * A prepared RDMA WRITE, its target and length changed between posts,
 * lands (a completion where it is signaled); once its key is gone a post
 * completes with RCX_ERR_REMOTE_ACCESS and writes nothing; on the
 * endpoint in error a post is flushed; a new pair's prepared WRITE (a
 * channel remade) runs again.
 */
static void test_pwr_write(void)
{
	static uint64_t src[8], dst[8];
	unsigned int acc = RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_WRITE;
	struct rcx_wr w = {
		.wr_id = 1,
		.op = RCX_OP_WRITE,
		.flags = RCX_WR_SIGNALED,
		.addr = (uintptr_t)src,
		.length = 8,
		.remote_addr = (uintptr_t)dst,
		.rkey = SF_KEY,
	};
	struct rcx_pwr *p = NULL, *u = NULL;
	struct rcx_ep *a, *b;
	struct rcx_mr *mr;
	struct rcx_cqe c;
	unsigned int i, k, bad_data = 0;

	CU_ASSERT_EQUAL_FATAL(ops->mr_reg_keyed(dev, dst, sizeof(dst), acc,
						SF_KEY, SF_KEY, &mr),
			      0);
	for (k = 0; k < 2; k++) {
		CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
		w.flags = RCX_WR_SIGNALED;
		CU_ASSERT_EQUAL_FATAL(ops->pwr_create(a, &w, 0, &p), 0);
		w.flags = 0;
		CU_ASSERT_EQUAL_FATAL(ops->pwr_create(a, &w, 0, &u), 0);
		for (i = 0; i < SF_PWR_POSTS; i++) {
			struct rcx_pwr *q = i % 2 ? u : p;
			uint32_t n = 1 + i % 8;

			memset(src, 0, sizeof(src));
			src[0] = i + 1;
			src[n - 1] = ~(uint64_t)i;
			memset(dst, 0, sizeof(dst));
			*q->remote_addr = (uintptr_t)&dst[8 - n];
			*q->length = n * 8;
			CU_ASSERT_EQUAL_FATAL(ops->pwr_post(a, &q, 1), 0);
			if (q == p) {
				CU_ASSERT_EQUAL(wait_get(1, &c), 0);
				CU_ASSERT_EQUAL(c.byte_len, n * 8);
			}
			bad_data += memcmp(&dst[8 - n], src, n * 8) != 0 ||
				    (n < 8 && dst[7 - n]);
		}
		CU_ASSERT_EQUAL(bad_data, 0);
		if (k == 1) {
			/* the key gone: refused, nothing written */
			CU_ASSERT_EQUAL(ops->mr_dereg(mr), 0);
			mr = NULL;
			memset(dst, 0, sizeof(dst));
			*p->remote_addr = (uintptr_t)dst;
			*p->length = 8;
			CU_ASSERT_EQUAL(ops->pwr_post(a, &p, 1), 0);
			CU_ASSERT_EQUAL(wait_get(1, &c), RCX_ERR_REMOTE_ACCESS);
			CU_ASSERT_EQUAL(dst[0], 0);
		} else {
			/* in error: flushed, nothing written */
			CU_ASSERT_EQUAL(ops->ep_set_error(a), 0);
			memset(dst, 0, sizeof(dst));
			CU_ASSERT_EQUAL(ops->pwr_post(a, &p, 1), 0);
			CU_ASSERT_EQUAL(wait_get(1, &c), RCX_ERR_FLUSHED);
			CU_ASSERT_EQUAL(dst[0], 0);
		}
		ops->pwr_destroy(p);
		ops->pwr_destroy(u);
		pair_close(a, b);
		while (ops->cq_poll(dev, &c, 1) > 0)
			;
	}
	if (mr)
		ops->mr_dereg(mr);
}

/* A prepared SEND of no bytes and no address: delivered, nothing read. */
static void test_pwr_send_empty(void)
{
	static uint8_t dst[8];
	struct rcx_wr sw = { .wr_id = 1, .op = RCX_OP_SEND };
	struct rcx_wr rw = { .wr_id = 2,
			     .op = RCX_OP_RECV,
			     .addr = (uintptr_t)dst,
			     .length = sizeof(dst) };
	struct rcx_pwr *p = NULL;
	struct rcx_ep *a, *b;
	struct rcx_wr *bad;
	struct rcx_cqe c;

	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	CU_ASSERT_EQUAL_FATAL(ops->pwr_create(a, &sw, 0, &p), 0);
	CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
	CU_ASSERT_EQUAL(ops->pwr_post(a, &p, 1), 0);
	CU_ASSERT_EQUAL(wait_get(2, &c), 0);
	CU_ASSERT_EQUAL(c.byte_len, 0);
	ops->pwr_destroy(p);
	pair_close(a, b);
	while (ops->cq_poll(dev, &c, 1) > 0)
		;
}

/*
 * Receives complete in the order they were taken, whoever delivered
 * them: a SEND too long for its entry, delivered by the sender at its
 * post, then one in its entry, delivered by the receiver's poll (which
 * completes it at once only where nothing before it is left to reap).
 */
static void test_recv_order_mixed(void)
{
	static uint8_t src[SHM_INLINE + 100], dst[2][SHM_INLINE + 100];
	struct rcx_wr big = { .wr_id = 1,
			      .op = RCX_OP_SEND,
			      .addr = (uintptr_t)src,
			      .length = sizeof(src) };
	struct rcx_wr small = big;
	struct rcx_ep *a, *b;
	struct rcx_wr *bad;
	struct rcx_cqe c[2];
	long long end = tu_now_ms() + SF_TMO_MS;
	int i, got = 0, ret;

	small.length = 5;
	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	for (i = 0; i < 2; i++) {
		struct rcx_wr rw = { .wr_id = 10 + (uint64_t)i,
				     .op = RCX_OP_RECV,
				     .addr = (uintptr_t)dst[i],
				     .length = sizeof(dst[i]) };

		CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
	}
	memset(src, 0x5b, sizeof(src));
	CU_ASSERT_EQUAL(ops->post_send(a, &big, &bad), 0);
	src[0] = 0x6c;
	CU_ASSERT_EQUAL(ops->post_send(a, &small, &bad), 0);
	while (got < 2 && tu_now_ms() < end) {
		ret = ops->cq_poll(dev, &c[got], 1);
		CU_ASSERT_FATAL(ret >= 0);
		got += ret && c[got].wr_id >= 10;
	}
	CU_ASSERT_EQUAL_FATAL(got, 2);
	CU_ASSERT_EQUAL(c[0].wr_id, 10);
	CU_ASSERT_EQUAL(c[0].byte_len, sizeof(src));
	CU_ASSERT_EQUAL(c[1].wr_id, 11);
	CU_ASSERT_EQUAL(c[1].byte_len, 5);
	CU_ASSERT_EQUAL(dst[0][sizeof(src) - 1], 0x5b);
	CU_ASSERT_EQUAL(dst[1][0], 0x6c);
	pair_close(a, b);
	while (ops->cq_poll(dev, &c[0], 1) > 0)
		;
}

/*
 * The completions of send wr_id 1 and receive wr_id 2, in whichever
 * order they come: 0 when both came, their statuses in st[0], st[1].
 */
static int wait_pair(int st[2], uint32_t *byte_len)
{
	long long end = tu_now_ms() + SF_TMO_MS;
	struct rcx_cqe c;
	int got = 0, ret;

	while (got != 3 && tu_now_ms() < end) {
		ret = ops->cq_poll(dev, &c, 1);
		if (ret < 0)
			return ret;
		if (!ret || (c.wr_id != 1 && c.wr_id != 2))
			continue;
		st[c.wr_id - 1] = c.status;
		if (c.wr_id == 2)
			*byte_len = c.byte_len;
		got |= (int)c.wr_id;
	}
	return got == 3 ? 0 : -ETIMEDOUT;
}

/* receive wr_id 2 on b into buf (rlen), SEND wr_id 1 of len from src */
static void recv_post(struct rcx_ep *b, void *buf, uint32_t rlen)
{
	struct rcx_wr rw = { .wr_id = 2,
			     .op = RCX_OP_RECV,
			     .addr = (uintptr_t)buf,
			     .length = rlen };
	struct rcx_wr *bad;

	CU_ASSERT_EQUAL(ops->post_recv(b, &rw, &bad), 0);
}

static void send_post(struct rcx_ep *a, const void *src, uint32_t len)
{
	struct rcx_wr sw = { .wr_id = 1,
			     .op = RCX_OP_SEND,
			     .flags = RCX_WR_SIGNALED,
			     .addr = (uintptr_t)src,
			     .length = len };
	struct rcx_wr *bad;

	CU_ASSERT_EQUAL(ops->post_send(a, &sw, &bad), 0);
}

/*
 * A SEND of SHM_DIRECT_MIN bytes or more into a receive already posted
 * in a segment of mem_alloc is copied by the sender into its buffer
 * (sent_direct counts it), payload after payload, one longer than an
 * entry holds too; a receive too short for it fails as before (a length
 * error, an invalid request for the sender), and so does nothing move
 * directly where the receive comes after the send, or lies in plain
 * memory: the entry's path, with the same bytes delivered. A prepared
 * SEND (a channel's) is delivered so too.
 */
static void test_send_direct(void)
{
	static const uint32_t lens[] = { SHM_DIRECT_MIN, 1024, SHM_INLINE,
					 SHM_INLINE + 904 };
	static uint8_t src[3 * SHM_INLINE], plain[3 * SHM_INLINE];
	const size_t blen = 3 * SHM_INLINE;
	struct rcx_wr sw = { .wr_id = 1, .op = RCX_OP_SEND, .length = 2048 };
	struct rcx_pwr_direct ds;
	struct rcx_pwr *ps = NULL;
	struct rcx_ep *a, *b;
	struct rcx_cqe c;
	uint32_t n0, bl = 0, i;
	uint8_t *buf = NULL;
	int st[2];

	CU_ASSERT_EQUAL_FATAL(ops->mem_alloc(dev, blen, (void **)&buf), 0);
	CU_ASSERT_EQUAL_FATAL(pair_connect(&a, &b), 0);
	n0 = to_sep(a)->sent_direct;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(src, (int)(0x21 + i), sizeof(src));
		src[lens[i] - 1] = (uint8_t)(0x80 + i);
		memset(buf, 0, blen);
		recv_post(b, buf + 64, (uint32_t)blen - 64);
		send_post(a, src, lens[i]);
		CU_ASSERT_EQUAL(wait_pair(st, &bl), 0);
		CU_ASSERT_EQUAL(st[0], 0);
		CU_ASSERT_EQUAL(st[1], 0);
		CU_ASSERT_EQUAL(bl, lens[i]);
		CU_ASSERT(!memcmp(buf + 64, src, lens[i]));
		CU_ASSERT_EQUAL(buf[64 + lens[i]], 0);
		CU_ASSERT_EQUAL(buf[63], 0);
		CU_ASSERT_EQUAL(to_sep(a)->sent_direct, n0 + i + 1);
	}
	/* a prepared SEND (a channel's), its payload changed between posts */
	sw.addr = (uintptr_t)src;
	CU_ASSERT_EQUAL_FATAL(ops->pwr_create(a, &sw, 0, &ps), 0);
	CU_ASSERT_EQUAL_FATAL(ops->pwr_direct(a, ps, 0, &ds), 0);
	for (i = 0; i < 2; i++) {
		n0 = to_sep(a)->sent_direct;
		memset(src, (int)(0x61 + i), sizeof(src));
		recv_post(b, buf, (uint32_t)blen);
		CU_ASSERT_EQUAL(pwr_send(a, ps, &ds), 0);
		CU_ASSERT_EQUAL(wait_get(2, &c), 0);
		CU_ASSERT_EQUAL(c.byte_len, sw.length);
		CU_ASSERT(!memcmp(buf, src, sw.length));
		CU_ASSERT_EQUAL(to_sep(a)->sent_direct, n0 + 1);
	}
	ops->pwr_destroy(ps);
	n0 = to_sep(a)->sent_direct;
	/* plain memory: the entry's path */
	memset(plain, 0, sizeof(plain));
	memset(src, 0x3c, sizeof(src));
	recv_post(b, plain, sizeof(plain));
	send_post(a, src, 1024);
	CU_ASSERT_EQUAL(wait_pair(st, &bl), 0);
	CU_ASSERT(st[0] == 0 && st[1] == 0 && bl == 1024);
	CU_ASSERT(!memcmp(plain, src, 1024));
	/* the receive after the send: the entry's path */
	memset(src, 0x4d, sizeof(src));
	memset(buf, 0, blen);
	send_post(a, src, 1024);
	CU_ASSERT_EQUAL(ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1), 0);
	recv_post(b, buf, (uint32_t)blen);
	CU_ASSERT_EQUAL(wait_pair(st, &bl), 0);
	CU_ASSERT(st[0] == 0 && st[1] == 0 && bl == 1024);
	CU_ASSERT(!memcmp(buf, src, 1024));
	CU_ASSERT_EQUAL(buf[1024], 0);
	CU_ASSERT_EQUAL(to_sep(a)->sent_direct, n0);
	/* too long for the receive: its named error, nothing written */
	memset(buf, 0, blen);
	recv_post(b, buf, 512);
	send_post(a, src, 1024);
	CU_ASSERT_EQUAL(wait_pair(st, &bl), 0);
	CU_ASSERT_EQUAL(st[0], RCX_ERR_REMOTE_OP);
	CU_ASSERT_EQUAL(st[1], RCX_ERR_LOCAL);
	CU_ASSERT_EQUAL(buf[0], 0);
	CU_ASSERT_EQUAL(to_sep(a)->sent_direct, n0);
	pair_close(a, b);
	while (ops->cq_poll(dev, &(struct rcx_cqe){ 0 }, 1) > 0)
		;
	CU_ASSERT_EQUAL(ops->mem_free(dev, buf), 0);
}

static const CU_TestInfo tests[] = {
	{ "write_key_checked_each_time", test_write_key_checked },
	{ "write_imm_key_checked_each_time", test_write_imm_key_checked },
	{ "dispatch_ok_and_cb", test_dispatch },
	{ "peek_polls_and_hands_over", test_peek },
	{ "work_map_polls_busy_endpoints_only", test_work_map },
	{ "work_map_no_mark_for_watched", test_work_watched },
	{ "work_map_marks_watched_sender_ran", test_work_watched_sender_ran },
	{ "inline_payload_lengths", test_inline_lengths },
	{ "unsignaled_reaped_lazily", test_lazy_reap },
	{ "rma_now_plain_memory", test_rma_now_plain },
	{ "pwr_write_imm_patched_each_post", test_pwr_write_imm },
	{ "pwr_write_imm_direct_post", test_pwr_write_imm_direct },
	{ "pwr_send_recv_direct_post", test_pwr_send_recv_direct },
	{ "pwr_write_patched_refused_flushed", test_pwr_write },
	{ "recv_order_sender_then_receiver", test_recv_order_mixed },
	{ "pwr_send_empty_no_address", test_pwr_send_empty },
	{ "send_direct_into_mapped_receive", test_send_direct },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_shm_fast = {
	"shm_fast", TU_HOST, suite_init, suite_cleanup, tests,
};
