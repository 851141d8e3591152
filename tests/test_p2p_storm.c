/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Point-to-point over time (test_p2p.h): a storm of many messages with
 * random sizes and tags, persistent requests restarted many times,
 * messages to self, and sleeping on the event fd and in rcx_ctx_wait.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <rcx/rcx.h>
#include "test_p2p.h"
#include "tu.h"
#include "tu_mp.h"
#include "tu_scale.h"

/* ---- storm: many small messages from every other rank to rank 0 */

#define STORM_TOTAL 10000
#define STORM_WIN   64
#define STORM_MAX   256
#define STORM_NTAGS 32

struct storm_hdr {
	uint32_t seq;
	uint32_t sender;
	uint32_t tag;
	uint32_t len;
};

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static uint32_t storm_seed(int sender)
{
	return 0x9e3779b9u * (uint32_t)sender + 12345u;
}

static int storm_count(int sender, int nsenders)
{
	return STORM_TOTAL / nsenders + (sender - 1 < STORM_TOTAL % nsenders);
}

/* Message seq of a sender, from its generator state; returns the length. */
static size_t storm_msg(uint32_t *s, int sender, uint32_t seq, uint8_t *buf,
			int *tag)
{
	struct storm_hdr h;
	size_t len, i;

	*tag = (int)(xorshift(s) % STORM_NTAGS);
	len = sizeof(h) + xorshift(s) % (STORM_MAX - sizeof(h) + 1);
	h.seq = seq;
	h.sender = (uint32_t)sender;
	h.tag = (uint32_t)*tag;
	h.len = (uint32_t)len;
	memcpy(buf, &h, sizeof(h));
	for (i = sizeof(h); i < len; i++)
		buf[i] = (uint8_t)xorshift(s);
	return len;
}

static uint64_t fnv1a(const uint8_t *b, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void storm_sender(struct tp_job *j)
{
	static uint8_t buf[STORM_WIN][STORM_MAX];
	struct rcx_req *r[STORM_WIN] = { NULL };
	struct rcx_status st[STORM_WIN];
	int n = storm_count(j->rank, j->size - 1), i, k, idx, flag, tag;
	uint32_t s = storm_seed(j->rank);
	long long end = tu_now_ms() + WAIT_MS;

	for (i = 0; i < n; i++) {
		/*
		 * First half: fill the window, then waitall it. Second half:
		 * a sliding window, one slot freed by testany at a time.
		 */
		if (i < n / 2) {
			k = i % STORM_WIN;
			if (k == 0 && i &&
			    TP_CHECK_OK(rcx_waitall(STORM_WIN, r, st)))
				for (idx = 0; idx < STORM_WIN; idx++)
					TP_CHECK_EQ(st[idx].error, 0);
		} else {
			for (k = 0; k < STORM_WIN && r[k]; k++)
				;
			while (k == STORM_WIN) {
				if (!TP_CHECK_OK(rcx_testany(STORM_WIN, r, &idx,
							     &flag, &st[0])))
					return;
				if (flag && idx != RCX_UNDEFINED) {
					TP_CHECK_EQ(st[0].error, 0);
					k = idx;
				} else if (tu_now_ms() > end) {
					TP_FAIL("storm: sends stuck at %d", i);
					return;
				} else {
					rcx_ctx_wait(j->ctx, 100);
				}
			}
		}
		storm_msg(&s, j->rank, i, buf[k], &tag);
		if (!TP_CHECK_OK(rcx_isend(j->g, buf[k],
					   ((struct storm_hdr *)buf[k])->len, 0,
					   tag, &r[k])))
			return;
	}
	if (TP_CHECK_OK(rcx_waitall(STORM_WIN, r, st)))
		for (idx = 0; idx < STORM_WIN; idx++)
			TP_CHECK_EQ(st[idx].error, 0);
}

static void storm_root(struct tp_job *j)
{
	static uint8_t buf[STORM_WIN][STORM_MAX];
	int ns = j->size - 1, s, i, idx, flag, tag, got = 0, posted = 0;
	int total = 0;
	struct rcx_req *r[STORM_WIN] = { NULL }, *extra;
	struct rcx_status st;
	uint64_t *sum = calloc(j->size, sizeof(*sum));
	uint64_t *want = calloc(j->size, sizeof(*want));
	int *count = calloc(j->size, sizeof(*count));
	uint8_t **seen = calloc(j->size, sizeof(*seen));
	long long end = tu_now_ms() + 4 * WAIT_MS;
	uint8_t tmp[STORM_MAX];

	if (!TP_CHECK(sum && want && count && seen))
		goto out;
	/* what each sender will send, from the same generator */
	for (s = 1; s <= ns; s++) {
		uint32_t g = storm_seed(s);
		int n = storm_count(s, ns);

		for (i = 0; i < n; i++) {
			size_t len = storm_msg(&g, s, i, tmp, &tag);

			want[s] += fnv1a(tmp, len);
		}
		total += n;
		seen[s] = calloc(n, 1);
		if (!TP_CHECK(seen[s]))
			goto out;
	}
	TP_CHECK_EQ(total, STORM_TOTAL);
	for (i = 0; i < STORM_WIN && posted < total; i++, posted++)
		TP_CHECK_OK(rcx_irecv(j->g, buf[i], STORM_MAX, RCX_ANY_SOURCE,
				      RCX_ANY_TAG, &r[i]));
	while (got < total) {
		struct storm_hdr h;

		if (!TP_CHECK_OK(rcx_testany(STORM_WIN, r, &idx, &flag, &st)))
			break;
		if (!flag) {
			if (tu_now_ms() > end) {
				TP_FAIL("storm: %d of %d messages received",
					got, total);
				break;
			}
			rcx_ctx_wait(j->ctx, 100);
			continue;
		}
		if (!TP_CHECK(idx != RCX_UNDEFINED))
			break;
		got++;
		memcpy(&h, buf[idx], sizeof(h));
		s = st.source;
		if (!TP_CHECK(s >= 1 && s <= ns) || !TP_CHECK_EQ(st.error, 0) ||
		    !TP_CHECK_EQ(h.sender, s) || !TP_CHECK_EQ(h.tag, st.tag) ||
		    !TP_CHECK_EQ(h.len, st.count) ||
		    !TP_CHECK(h.seq < (uint32_t)storm_count(s, ns)))
			goto repost;
		if (seen[s][h.seq]++)
			TP_FAIL("storm: message %" PRIu32 " of %d twice", h.seq,
				s);
		count[s]++;
		sum[s] += fnv1a(buf[idx], st.count);
repost:
		if (posted < total) {
			TP_CHECK_OK(rcx_irecv(j->g, buf[idx], STORM_MAX,
					      RCX_ANY_SOURCE, RCX_ANY_TAG,
					      &r[idx]));
			posted++;
		}
	}
	for (s = 1; s <= ns; s++) {
		TP_CHECK_EQ(count[s], storm_count(s, ns));
		if (!TP_CHECK_EQ(sum[s], want[s]))
			TP_FAIL("storm: checksum of sender %d differs", s);
	}
	/* every sender is done: nothing more may arrive */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (TP_CHECK_OK(rcx_irecv(j->g, tmp, sizeof(tmp), RCX_ANY_SOURCE,
				  RCX_ANY_TAG, &extra))) {
		for (i = 0; i < 20; i++)
			rcx_progress(j->ctx);
		TP_CHECK_OK(rcx_test(&extra, &flag, &st));
		if (!TP_CHECK_EQ(flag, 0))
			TP_FAIL("storm: an extra message from %d, tag %d",
				st.source, st.tag);
		/* freed when the context cancels it */
		if (!flag)
			TP_CHECK_OK(rcx_req_free(&extra));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
out:
	for (s = 0; seen && s < j->size; s++)
		free(seen[s]);
	free(seen);
	free(count);
	free(want);
	free(sum);
}

void sc_storm(struct tp_job *j)
{
	if (j->rank == 0) {
		storm_root(j);
	} else {
		storm_sender(j);
		TP_CHECK_OK(rcx_group_barrier(j->g));
		TP_CHECK_OK(rcx_group_barrier(j->g));
	}
}

/* ---- persistent: send_init/recv_init restarted many times */

enum { PS_PING = 60, PS_PONG, PS_BIG_A, PS_BIG_B, PS_BUSY_S, PS_BUSY_R, PS_GO };
/* a fifth of the rounds where long cases are scaled down (tu_scale.h) */
#define PS_ROUNDS     1000
#define PS_BIG_ROUNDS 100
#define PS_SCALE      5
#define PS_BIG	      65536

/* Test an inactive persistent request: complete, empty, still there. */
static void check_inactive(struct rcx_req *r, const char *what)
{
	struct rcx_req *h = r;
	struct rcx_status st = { .source = 12345 };
	int flag = 0;

	TP_CHECK_OK(rcx_test(&h, &flag, &st));
	TP_CHECK_EQ(flag, 1);
	TP_CHECK(h == r);
	check_empty(&st, what);
	memset(&st, 0x55, sizeof(st));
	TP_CHECK_OK(rcx_wait(&h, &st));
	TP_CHECK(h == r);
	check_empty(&st, what);
}

/* A small counter bounced 1000 times; a starts with 0, b adds one. */
static void ps_pingpong(struct tp_job *j, int p, bool a)
{
	uint64_t sv = 0, rv = 0;
	struct rcx_req *s = NULL, *r = NULL, *both[2];
	struct rcx_status st;
	int i, n = (int)tu_scale(PS_ROUNDS, PS_ROUNDS / PS_SCALE);

	if (!TP_CHECK_OK(rcx_send_init(j->g, &sv, sizeof(sv), p,
				       a ? PS_PING : PS_PONG, &s)) ||
	    !TP_CHECK_OK(rcx_recv_init(j->g, &rv, sizeof(rv), p,
				       a ? PS_PONG : PS_PING, &r)))
		goto out;
	/* created inactive */
	check_inactive(s, "new send_init");
	check_inactive(r, "new recv_init");
	if (!a && !TP_CHECK_OK(rcx_start(r)))
		goto out;
	for (i = 0; i < n; i++) {
		if (a) {
			sv = 2 * (uint64_t)i;
			both[0] = r;
			both[1] = s;
			if (i & 1) {
				if (!TP_CHECK_OK(rcx_startall(2, both)))
					break;
			} else if (!TP_CHECK_OK(rcx_start(r)) ||
				   !TP_CHECK_OK(rcx_start(s))) {
				break;
			}
			if (!TP_CHECK_OK(wait_req(j, &s, &st, "ping send")))
				break;
			TP_CHECK(s != NULL);
			check_sent(&st, sizeof(sv), "ping send");
			if (!TP_CHECK_OK(wait_req(j, &r, &st, "pong")))
				break;
			check_status(&st, p, PS_PONG, sizeof(rv), 0, "pong");
			if (!TP_CHECK_EQ(rv, 2 * (uint64_t)i + 1))
				break;
		} else {
			if (!TP_CHECK_OK(wait_req(j, &r, &st, "ping")))
				break;
			check_status(&st, p, PS_PING, sizeof(rv), 0, "ping");
			if (!TP_CHECK_EQ(rv, 2 * (uint64_t)i))
				break;
			sv = rv + 1;
			/* the next ping finds its receive posted */
			if (i + 1 < n && !TP_CHECK_OK(rcx_start(r)))
				break;
			if (!TP_CHECK_OK(rcx_start(s)) ||
			    !TP_CHECK_OK(wait_req(j, &s, &st, "pong send")))
				break;
		}
		/* b restarts its receive early: inactive only at the end */
		if (i % 100 == 99) {
			check_inactive(s, "completed persistent send");
			if (a || i + 1 == n)
				check_inactive(r,
					       "completed persistent receive");
		}
	}
	TP_CHECK_EQ(i, n);
	if (a)
		printf("rank %d: %d persistent round trips with %d\n", j->rank,
		       i, p);
out:
	if (s)
		TP_CHECK_OK(rcx_req_free(&s));
	if (r)
		TP_CHECK_OK(rcx_req_free(&r));
	TP_CHECK(s == NULL && r == NULL);
}

/* 64 KiB (rendezvous) both ways, 100 starts, a fresh pattern each. */
static void ps_big(struct tp_job *j, int p, bool a)
{
	uint8_t *sb = malloc(PS_BIG), *rb = malloc(PS_BIG + GUARD);
	struct rcx_req *s = NULL, *r = NULL;
	struct rcx_status st;
	int i, n = (int)tu_scale(PS_BIG_ROUNDS, PS_BIG_ROUNDS / PS_SCALE);

	if (!TP_CHECK(sb && rb) ||
	    !TP_CHECK_OK(rcx_send_init(j->g, sb, PS_BIG, p,
				       a ? PS_BIG_A : PS_BIG_B, &s)) ||
	    !TP_CHECK_OK(rcx_recv_init(j->g, rb, PS_BIG, p,
				       a ? PS_BIG_B : PS_BIG_A, &r)))
		goto out;
	for (i = 0; i < n; i++) {
		memset(rb, FILL, PS_BIG + GUARD);
		if (!TP_CHECK_OK(rcx_start(r)))
			break;
		if (a) {
			fill(sb, PS_BIG, j->rank, p, i);
			if (!TP_CHECK_OK(rcx_start(s)) ||
			    !TP_CHECK_OK(wait_req(j, &s, &st, "big send")) ||
			    !TP_CHECK_OK(wait_req(j, &r, &st, "big reply")))
				break;
		} else {
			if (!TP_CHECK_OK(wait_req(j, &r, &st, "big receive")))
				break;
			fill(sb, PS_BIG, j->rank, p, i);
			if (!TP_CHECK_OK(rcx_start(s)) ||
			    !TP_CHECK_OK(wait_req(j, &s, &st, "big send")))
				break;
		}
		if (!check_data(rb, PS_BIG, true, p, j->rank, i, "big"))
			break;
	}
	TP_CHECK_EQ(i, n);
	if (a)
		printf("rank %d: %d persistent 64 KiB round trips with %d\n",
		       j->rank, i, p);
out:
	if (s)
		TP_CHECK_OK(rcx_req_free(&s));
	if (r)
		TP_CHECK_OK(rcx_req_free(&r));
	free(sb);
	free(rb);
}

/*
 * Misuse of active requests: starting or freeing one is refused with
 * -EBUSY and posts nothing. A posted duplicate would show as a second
 * message (send) or as a receive that eats the next message.
 */
static void ps_busy(struct tp_job *j, int p, bool a)
{
	static uint8_t big[PS_BIG], got[PS_BIG + GUARD];
	uint64_t v = 0, w = 0;
	struct rcx_req *s, *r, *h;
	struct rcx_status st;
	int flag = -1;

	if (a) {
		fill(big, PS_BIG, j->rank, p, 7);
		if (!TP_CHECK_OK(
			    rcx_send_init(j->g, big, PS_BIG, p, PS_BUSY_S, &s)))
			return;
		TP_CHECK_OK(rcx_start(s));
		/* b posts no receive before our go: the send stays active */
		TP_CHECK_EQ(rcx_start(s), -EBUSY);
		TP_CHECK_EQ(rcx_startall(1, &s), -EBUSY);
		h = s;
		TP_CHECK_EQ(rcx_req_free(&h), -EBUSY);
		TP_CHECK(h == s);
		TP_CHECK_OK(rcx_test(&h, &flag, &st));
		TP_CHECK_EQ(flag, 0);
		TP_CHECK_OK(rcx_send(j->g, NULL, 0, p, PS_GO));
		if (TP_CHECK_OK(wait_req(j, &s, &st, "busy send")))
			check_sent(&st, PS_BIG, "busy send");
		check_inactive(s, "send after -EBUSY");
		/* the marker must be the next message b sees */
		v = 0x4d41524b4552ull;
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), p, PS_BUSY_S));
		TP_CHECK_OK(rcx_req_free(&s));
		TP_CHECK(s == NULL);

		/* then b's receive: two values, one after its go */
		TP_CHECK_OK(
			rcx_recv(j->g, NULL, 0, p, PS_GO, RCX_STATUS_IGNORE));
		v = 1;
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), p, PS_BUSY_R));
		v = 2;
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), p, PS_BUSY_R));
		return;
	}
	TP_CHECK_OK(rcx_recv(j->g, NULL, 0, p, PS_GO, RCX_STATUS_IGNORE));
	memset(got, FILL, sizeof(got));
	TP_CHECK_OK(rcx_recv(j->g, got, PS_BIG, p, PS_BUSY_S, &st));
	check_status(&st, p, PS_BUSY_S, PS_BIG, 0, "message of a busy send");
	check_data(got, PS_BIG, true, p, j->rank, 7, "message of a busy send");
	TP_CHECK_OK(rcx_recv(j->g, got, PS_BIG, p, PS_BUSY_S, &st));
	check_status(&st, p, PS_BUSY_S, sizeof(v), 0, "marker");
	memcpy(&v, got, sizeof(v));
	TP_CHECK_EQ(v, 0x4d41524b4552ull);

	if (!TP_CHECK_OK(rcx_recv_init(j->g, &v, sizeof(v), p, PS_BUSY_R, &r)))
		return;
	TP_CHECK_OK(rcx_start(r));
	TP_CHECK_EQ(rcx_start(r), -EBUSY);
	TP_CHECK_EQ(rcx_startall(1, &r), -EBUSY);
	h = r;
	TP_CHECK_EQ(rcx_req_free(&h), -EBUSY);
	TP_CHECK(h == r);
	TP_CHECK_OK(rcx_test(&h, &flag, &st));
	TP_CHECK_EQ(flag, 0);
	TP_CHECK_OK(rcx_send(j->g, NULL, 0, p, PS_GO));
	if (TP_CHECK_OK(wait_req(j, &r, &st, "busy receive"))) {
		check_status(&st, p, PS_BUSY_R, sizeof(v), 0, "busy receive");
		TP_CHECK_EQ(v, 1);
	}
	check_inactive(r, "receive after -EBUSY");
	/* a duplicate of r would have taken this one */
	if (TP_CHECK_OK(rcx_irecv(j->g, &w, sizeof(w), p, PS_BUSY_R, &h)) &&
	    TP_CHECK_OK(wait_req(j, &h, &st, "value after busy receive")))
		TP_CHECK_EQ(w, 2);
	TP_CHECK_EQ(v, 1);
	TP_CHECK_OK(rcx_req_free(&r));
	TP_CHECK(r == NULL);
}

void sc_persistent(struct tp_job *j)
{
	int p = partner(j);

	if (p < 0)
		return;
	ps_pingpong(j, p, !(j->rank & 1));
	ps_big(j, p, !(j->rank & 1));
	ps_busy(j, p, !(j->rank & 1));
}

/* ---- self: a rank sends to itself */

void sc_self(struct tp_job *j)
{
	static const size_t len[] = { 0, 100, 8192, 8193, 1u << 20 };
	int me = j->rank, k, m, i;
	uint8_t *sb = malloc(1u << 20), *rb = malloc((1u << 20) + GUARD);
	struct rcx_req *r[2];
	struct rcx_status st[2];
	char what[64];

	if (!TP_CHECK(sb && rb))
		goto out;
	for (k = 0; k < (int)(sizeof(len) / sizeof(len[0])); k++) {
		/* m = 0: receive first; 1: send first; 2: ANY_SOURCE and
		 * ANY_TAG after the send */
		for (m = 0; m < 3; m++) {
			int tag = 10 * k + m, salt = tag;
			int src = m == 2 ? RCX_ANY_SOURCE : me;

			snprintf(what, sizeof(what), "%zu bytes to self (%d)",
				 len[k], m);
			fill(sb, len[k], me, me, salt);
			memset(rb, FILL, len[k] + GUARD);
			if (m == 0)
				TP_CHECK_OK(rcx_irecv(j->g, rb, len[k], src,
						      tag, &r[0]));
			TP_CHECK_OK(
				rcx_isend(j->g, sb, len[k], me, tag, &r[1]));
			if (m > 0)
				TP_CHECK_OK(rcx_irecv(
					j->g, rb, len[k], src,
					m == 2 ? RCX_ANY_TAG : tag, &r[0]));
			if (!TP_CHECK_OK(wait_all(j, 2, r, st, what)))
				goto out;
			check_status(&st[0], me, tag, len[k], 0, what);
			check_sent(&st[1], len[k], what);
			check_data(rb, len[k], true, me, me, salt, what);
		}
	}
	/* persistent pair to self, restarted */
	if (!TP_CHECK_OK(rcx_send_init(j->g, sb, 8193, me, 99, &r[1])) ||
	    !TP_CHECK_OK(rcx_recv_init(j->g, rb, 8193, me, 99, &r[0])))
		goto out;
	for (i = 0; i < 10; i++) {
		fill(sb, 8193, me, me, 200 + i);
		memset(rb, FILL, 8193 + GUARD);
		if (!TP_CHECK_OK(rcx_startall(2, r)) ||
		    !TP_CHECK_OK(wait_all(j, 2, r, st, "persistent to self")))
			break;
		check_status(&st[0], me, 99, 8193, 0, "persistent to self");
		check_data(rb, 8193, true, me, me, 200 + i,
			   "persistent to self");
	}
	TP_CHECK_OK(rcx_req_free(&r[0]));
	TP_CHECK_OK(rcx_req_free(&r[1]));
out:
	free(sb);
	free(rb);
}

/* ---- eventfd: sleeping on the context's event fd and in ctx_wait */

#define EV_TAG	 77
#define EV_DELAY 300000 /* us the sender holds back after the barrier */

/* rcx_ctx_wait with nothing coming: -ETIMEDOUT after about 100 ms. */
static void ev_timeout(struct tp_job *j)
{
	long long t0 = 0, dt = 0;
	int i, ret = 0;

	/* completions of earlier traffic may still trickle in */
	for (i = 0; i < 20; i++) {
		while (rcx_progress(j->ctx) > 0)
			;
		t0 = tu_now_ms();
		ret = rcx_ctx_wait(j->ctx, 100);
		dt = tu_now_ms() - t0;
		if (ret <= 0)
			break;
	}
	TP_CHECK_EQ(ret, -ETIMEDOUT);
	if (!TP_CHECK(dt >= 95 && dt < 3000))
		TP_FAIL("ctx_wait(100) timed out after %lld ms", dt);
	ret = rcx_ctx_wait(j->ctx, 0);
	TP_CHECK(ret == -ETIMEDOUT || ret > 0);
}

static void ev_receiver(struct tp_job *j, int from)
{
	struct epoll_event ee = { .events = EPOLLIN };
	struct rcx_req *r;
	struct rcx_status st;
	uint64_t v = 0;
	long long t0, dt, slept = 0;
	int efd, ep, flag = 0, ret, blocks = 0;

	efd = rcx_ctx_event_fd(j->ctx);
	if (!TP_CHECK(efd >= 0))
		return;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!TP_CHECK(ep >= 0) ||
	    !TP_CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ee), 0))
		goto out;

	/* 1: block in epoll_wait after arming; the message wakes us */
	TP_CHECK_OK(rcx_irecv(j->g, &v, sizeof(v), from, EV_TAG, &r));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (;;) {
		TP_CHECK_OK(rcx_test(&r, &flag, &st));
		if (flag)
			break;
		ret = rcx_ctx_arm(j->ctx);
		if (ret == -EAGAIN)
			continue; /* found work while arming: test again */
		if (!TP_CHECK_OK(ret))
			break;
		t0 = tu_now_ms();
		ret = epoll_wait(ep, &ee, 1, 30000);
		dt = tu_now_ms() - t0;
		slept += dt;
		blocks++;
		if (!TP_CHECK_EQ(ret, 1)) {
			TP_FAIL("no wakeup within %lld ms", dt);
			break;
		}
	}
	if (flag) {
		check_status(&st, from, EV_TAG, sizeof(v), 0, "woken receive");
		TP_CHECK_EQ(v, 0x1234);
	}
	/* it must have slept: the message comes well after the barrier */
	TP_CHECK(blocks >= 1);
	printf("rank %d: slept %d time(s), %lld ms in epoll_wait\n", j->rank,
	       blocks, slept);

	/* 2: the same through rcx_ctx_wait */
	v = 0;
	TP_CHECK_OK(rcx_irecv(j->g, &v, sizeof(v), from, EV_TAG, &r));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (;;) {
		TP_CHECK_OK(rcx_test(&r, &flag, &st));
		if (flag)
			break;
		ret = rcx_ctx_wait(j->ctx, 30000);
		if (!TP_CHECK(ret > 0))
			break;
	}
	if (flag) {
		check_status(&st, from, EV_TAG, sizeof(v), 0,
			     "ctx_wait receive");
		TP_CHECK_EQ(v, 0x5678);
	}
out:
	if (ep >= 0)
		close(ep);
}

static void ev_sender(struct tp_job *j, int to)
{
	uint64_t v;

	TP_CHECK_OK(rcx_group_barrier(j->g));
	/* a head start for the receiver to go to sleep; the result does
	 * not depend on it, only whether sleeping was exercised */
	usleep(EV_DELAY);
	v = 0x1234;
	TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), to, EV_TAG));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	usleep(EV_DELAY);
	v = 0x5678;
	TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), to, EV_TAG));
}

void sc_eventfd(struct tp_job *j)
{
	int p = partner(j);

	ev_timeout(j);
	if (p >= 0 && (j->rank & 1)) {
		ev_receiver(j, p);
	} else if (p >= 0) {
		ev_sender(j, p);
	} else {
		/* keep the collective barriers matched */
		TP_CHECK_OK(rcx_group_barrier(j->g));
		TP_CHECK_OK(rcx_group_barrier(j->g));
	}
}

/* ---- the peer role: one scenario per process of the job */
