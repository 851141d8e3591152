/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Continuations across processes (the "cont" peer role, 2 ranks through
 * rcx-run), where completions come from the device: a ping-pong driven by
 * persistent continuations, one continuation over 64 requests of mixed
 * kinds, the progress thread, and bound channels: continuations attached
 * to each start of a channel, persistent ones attached once, and ones on
 * the ephemeral request of rcx_ibind (test_cont.h); continuations that
 * run as soon as the dispatch that completed their request returns.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "test_cont.h"
#include "tu.h"
#include "tu_mp.h"

#define PINGS 1000

struct pp {
	struct tp_job *j;
	struct rcx_req *rr, *sr;
	int rbuf, sbuf;
	int n;
	int bad;
	struct rcx_status st;
};

/* Echo/ping in a persistent continuation: restart receive, send. */
static void pp_cb(struct rcx_status *sts, void *arg)
{
	struct pp *p = arg;
	int ret;

	if (sts != &p->st || sts->error || sts->count != sizeof(int) ||
	    p->rbuf != p->n)
		p->bad++;
	p->n++;
	if (p->n >= PINGS && p->j->rank == 0)
		return;
	if (p->n < PINGS) {
		ret = rcx_start(p->rr);
		if (ret)
			TP_FAIL("restart receive: %s", rcx_strerror(ret));
	}
	p->sbuf = p->j->rank == 0 ? p->n : p->rbuf;
	ret = rcx_start(p->sr);
	if (ret)
		TP_FAIL("start send: %s", rcx_strerror(ret));
}

/*
 * PINGS round trips, each a persistent continuation restarting its
 * receive and sending from its callback; the main thread only sleeps in
 * rcx_ctx_wait.
 */
static void sc_pingpong(struct tp_job *j)
{
	struct rcx_req *cr, *x;
	struct pp p = { 0 };
	atomic_int sends = 0;
	int peer = 1 - j->rank, ret;
	long long end, t0;

	p.j = j;
	if (!TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &cr)) ||
	    !TP_CHECK_OK(rcx_recv_init(j->g, &p.rbuf, sizeof(int), peer, 1,
				       &p.rr)) ||
	    !TP_CHECK_OK(
		    rcx_send_init(j->g, &p.sbuf, sizeof(int), peer, 1, &p.sr)))
		return;
	x = p.rr;
	TP_CHECK_OK(
		rcx_continue(&x, pp_cb, &p, RCX_CONT_PERSISTENT, &p.st, cr));
	x = p.sr;
	TP_CHECK_OK(rcx_continue(&x, count_cb, &sends, RCX_CONT_PERSISTENT,
				 RCX_STATUS_IGNORE, cr));
	TP_CHECK_OK(rcx_start(p.rr));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	t0 = tu_now_ms();
	if (j->rank == 0) {
		p.sbuf = 0;
		TP_CHECK_OK(rcx_start(p.sr));
	}
	end = tu_now_ms() + 240000;
	while ((p.n < PINGS || atomic_load(&sends) < PINGS) &&
	       tu_now_ms() < end) {
		ret = rcx_ctx_wait(j->ctx, 1000);
		if (ret < 0 && ret != -ETIMEDOUT) {
			TP_FAIL("rcx_ctx_wait: %s", rcx_strerror(ret));
			break;
		}
	}
	TP_CHECK_EQ(p.n, PINGS);
	TP_CHECK_EQ(atomic_load(&sends), PINGS);
	TP_CHECK_EQ(p.bad, 0);
	printf("rank %d: %d round trips by continuations in %lld ms\n", j->rank,
	       p.n, tu_now_ms() - t0);
	TP_CHECK(rcx_wait(&cr, RCX_STATUS_IGNORE) == 0);
	TP_CHECK_OK(rcx_req_free(&p.rr));
	TP_CHECK_OK(rcx_req_free(&p.sr));
	TP_CHECK_OK(rcx_req_free(&cr));
}

/*
 * One continuation over 64 requests of mixed kinds on the wire: eager
 * and rendezvous sends and receives, persistent ones, a truncated receive
 * (its error must reach the callback) and a continuation request.
 */
#define BIG (256 * 1024)

struct wmix {
	atomic_int runs;
	struct rcx_status sts[MIXED];
};

static void wmix_cb(struct rcx_status *sts, void *arg)
{
	struct wmix *w = arg;

	(void)sts;
	atomic_fetch_add(&w->runs, 1);
}

static void sc_mixed(struct tp_job *j)
{
	struct rcx_req *cr, *inner, *reqs[MIXED], *x;
	struct wmix w = { 0 };
	atomic_int inner_runs = 0;
	int peer = 1 - j->rank, i, small[MIXED], trunc_at = 5;
	char *big = calloc(8, BIG);

	if (!TP_CHECK(big) ||
	    !TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &cr)) ||
	    !TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &inner)))
		return;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (i = 0; i < MIXED; i++) {
		bool send = (i + j->rank) & 1;
		int tag = i, k = i % 8;
		size_t len = sizeof(int);
		void *buf = &small[i];

		small[i] = send ? i * 3 : -1;
		if (k == 6) { /* rendezvous */
			buf = big + (size_t)(i / 8) * BIG;
			len = BIG;
			memset(buf, send ? i : 0, len);
		}
		if (i == 0) {
			/* the continuation request, waiting on a receive */
			TP_CHECK_OK(rcx_irecv(j->g, &small[i], sizeof(int),
					      peer, 9999, &x));
			TP_CHECK_OK(rcx_continue(&x, count_cb, &inner_runs, 0,
						 RCX_STATUS_IGNORE, inner));
			reqs[i] = inner;
			continue;
		}
		if (k == 2 || k == 3) {
			TP_CHECK_OK(send ? rcx_send_init(j->g, buf, len, peer,
							 tag, &reqs[i])
					 : rcx_recv_init(j->g, buf, len, peer,
							 tag, &reqs[i]));
			TP_CHECK_OK(rcx_start(reqs[i]));
		} else if (send) {
			/* one message longer than its receive buffer */
			TP_CHECK_OK(rcx_isend(j->g, buf,
					      i == trunc_at ? 2 * len : len,
					      peer, tag, &reqs[i]));
		} else {
			TP_CHECK_OK(
				rcx_irecv(j->g, buf, len, peer, tag, &reqs[i]));
		}
	}
	TP_CHECK_OK(rcx_continueall(MIXED, reqs, wmix_cb, &w, 0, w.sts, cr));
	/* complete the inner one last, from the peer */
	TP_CHECK_OK(rcx_send(j->g, &i, sizeof(i), peer, 9999));
	TP_CHECK(rcx_wait(&cr, RCX_STATUS_IGNORE) == 0);
	TP_CHECK_EQ(atomic_load(&w.runs), 1);
	TP_CHECK_EQ(atomic_load(&inner_runs), 1);
	for (i = 1; i < MIXED; i++) {
		bool send = (i + j->rank) & 1;
		int want = !send && i == trunc_at ? RCX_ERR_TRUNCATE : 0;

		if (!TP_CHECK_EQ(w.sts[i].error, want))
			TP_FAIL("request %d: status error %d", i,
				w.sts[i].error);
		if (!send && i % 8 != 6 && i != trunc_at)
			TP_CHECK_EQ(small[i], i * 3);
		if (!send && i % 8 == 6)
			TP_CHECK_EQ(
				(unsigned char)big[(size_t)(i / 8) * BIG + 7],
				i);
		if (i % 8 == 2 || i % 8 == 3)
			TP_CHECK_OK(rcx_req_free(&reqs[i]));
		else
			TP_CHECK(reqs[i] == NULL);
	}
	TP_CHECK_EQ(w.sts[0].count, 1);
	TP_CHECK_OK(rcx_req_free(&inner));
	TP_CHECK_OK(rcx_req_free(&cr));
	free(big);
}

/*
 * thread = "any" on the wire: receives completed by the device run on the
 * progress thread while this thread stays out of rcx; a "application"
 * one completed the same way waits for this thread.
 */
struct wt {
	atomic_int runs;
	pthread_t thr;
};

static void wt_cb(struct rcx_status *sts, void *arg)
{
	struct wt *w = arg;

	(void)sts;
	w->thr = pthread_self();
	atomic_fetch_add(&w->runs, 1);
}

static void sc_thread(struct tp_job *j)
{
	struct rcx_req *any, *app, *r;
	struct rcx_info *info;
	struct wt a = { 0 }, b = { 0 };
	int peer = 1 - j->rank, v[2] = { 0, 0 }, flag;

	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_CONT_INFO_THREAD, "any"));
	TP_CHECK_OK(rcx_continue_init(j->ctx, info, &any));
	TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &app));
	rcx_info_free(&info);
	if (j->rank == 0) {
		TP_CHECK_OK(rcx_irecv(j->g, &v[0], sizeof(int), peer, 1, &r));
		TP_CHECK_OK(
			rcx_continue(&r, wt_cb, &b, 0, RCX_STATUS_IGNORE, app));
		TP_CHECK_OK(rcx_irecv(j->g, &v[1], sizeof(int), peer, 2, &r));
		TP_CHECK_OK(
			rcx_continue(&r, wt_cb, &a, 0, RCX_STATUS_IGNORE, any));
		TP_CHECK_OK(rcx_group_barrier(j->g));
		/* an eager send completes at once, polling nothing: from here
		 * this thread is out of rcx and the data comes after */
		TP_CHECK_OK(rcx_send(j->g, &v[0], sizeof(int), peer, 3));
		/* only the progress thread can see them */
		if (!TP_CHECK(wait_runs(&a.runs, 1, 60000)))
			TP_FAIL("the progress thread ran nothing");
		TP_CHECK(!pthread_equal(a.thr, pthread_self()));
		usleep(200000);
		TP_CHECK_EQ(atomic_load(&b.runs), 0);
		TP_CHECK_OK(rcx_test(&app, &flag, RCX_STATUS_IGNORE));
		if (!flag)
			TP_CHECK(rcx_wait(&app, RCX_STATUS_IGNORE) == 0);
		TP_CHECK_EQ(atomic_load(&b.runs), 1);
		TP_CHECK(pthread_equal(b.thr, pthread_self()));
		TP_CHECK_EQ(v[0], 11);
		TP_CHECK_EQ(v[1], 22);
	} else {
		TP_CHECK_OK(rcx_group_barrier(j->g));
		TP_CHECK_OK(rcx_recv(j->g, &v[0], sizeof(int), peer, 3, NULL));
		v[0] = 11;
		v[1] = 22;
		TP_CHECK_OK(rcx_send(j->g, &v[0], sizeof(int), peer, 1));
		TP_CHECK_OK(rcx_send(j->g, &v[1], sizeof(int), peer, 2));
	}
	TP_CHECK(rcx_wait(&any, RCX_STATUS_IGNORE) == 0);
	TP_CHECK_OK(rcx_req_free(&any));
	TP_CHECK_OK(rcx_req_free(&app));
}

/* ---- bound channels: continuations on the channel requests */

#define CH_ROUNDS 200 /* per protocol and per kind of attachment */
#define CH_SLOTS  4
#define CH_LEN	  64 /* bytes per slot */

static uint8_t ch_byte(int k, size_t i, int from)
{
	return (uint8_t)(k * 31 + (int)i * 7 + from * 101 + 1);
}

/* Message k from rank from, in its slot of buf. */
static void ch_fill(uint8_t *buf, int k, int from)
{
	uint8_t *p = buf + (size_t)(k % CH_SLOTS) * CH_LEN;
	size_t i;

	for (i = 0; i < CH_LEN; i++)
		p[i] = ch_byte(k, i, from);
}

/*
 * One end of a channel as its continuation sees it: runs counts the
 * messages it took, so message k is the one of run k; a receiving end
 * checks the payload there, before the slot is reused.
 */
struct chend {
	atomic_int runs;
	int bad;
	int from; /* receiving end: the sender's rank; -1 for a sending end */
	uint8_t *buf;
	struct rcx_status st;
};

static void chend_cb(struct rcx_status *sts, void *arg)
{
	struct chend *c = arg;
	int k = atomic_load(&c->runs), slot = k % CH_SLOTS;
	const uint8_t *p = c->buf + (size_t)slot * CH_LEN;
	size_t i;

	if (sts != &c->st || sts->error || sts->slot != slot ||
	    sts->count != CH_LEN) {
		TP_FAIL("channel message %d: status {slot %d, count %zu, "
			"error %d}, want {%d, %d, 0}",
			k, sts ? sts->slot : -1, sts ? sts->count : 0,
			sts ? sts->error : 0, slot, CH_LEN);
		c->bad++;
	}
	for (i = 0; c->from >= 0 && i < CH_LEN; i++) {
		if (p[i] != ch_byte(k, i, c->from)) {
			TP_FAIL("channel message %d: byte %zu is 0x%02x, want "
				"0x%02x",
				k, i, p[i], ch_byte(k, i, c->from));
			c->bad++;
			break;
		}
	}
	atomic_fetch_add(&c->runs, 1);
}

/* A pair of channels between the two ranks, and their continuations. */
struct chpair {
	struct env e;
	struct rcx_req *sc, *rc;   /* the bound channels */
	struct rcx_req *crs, *crr; /* continuation requests: sends, receives */
	struct chend s, r;
	uint8_t sbuf[CH_SLOTS * CH_LEN];
	uint8_t rbuf[CH_SLOTS * CH_LEN];
};

static struct rcx_info *ch_info(const char *proto, const char *slots)
{
	struct rcx_info *info = NULL;

	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_PROTOCOL, proto));
	TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_SLOTS, slots));
	return info;
}

/* A pair not bound yet; its ends see its buffers. */
static void ch_init(struct tp_job *j, struct chpair *p)
{
	memset(p, 0, sizeof(*p));
	p->e.ctx = j->ctx;
	p->e.g = j->g;
	p->s.from = -1;
	p->s.buf = p->sbuf;
	p->r.from = 1 - j->rank;
	p->r.buf = p->rbuf;
}

/* Blocking binds: rank 0's send with rank 1's receive first. */
static bool ch_bind(struct tp_job *j, struct chpair *p, const char *proto)
{
	struct rcx_info *info = ch_info(proto, "4");
	struct rcx_req *si = NULL, *ri = NULL;
	int peer = 1 - j->rank;
	bool ok;

	ch_init(j, p);
	ok = TP_CHECK_OK(rcx_send_init(j->g, p->sbuf, CH_LEN, peer, 1, &si)) &&
	     TP_CHECK_OK(rcx_recv_init(j->g, p->rbuf, CH_LEN, peer, 1, &ri));
	if (ok && j->rank == 0)
		ok = TP_CHECK_OK(rcx_bind(si, info, &p->sc)) &&
		     TP_CHECK_OK(rcx_bind(ri, info, &p->rc));
	else if (ok)
		ok = TP_CHECK_OK(rcx_bind(ri, info, &p->rc)) &&
		     TP_CHECK_OK(rcx_bind(si, info, &p->sc));
	ok = ok && TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &p->crs)) &&
	     TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &p->crr));
	rcx_req_free(&si);
	rcx_req_free(&ri);
	rcx_info_free(&info);
	return ok;
}

/*
 * Start channel message k. Without a persistent continuation, attach one
 * for this message: after the start on even k, before it on odd k (an
 * inactive persistent request counts as complete only after its next
 * start has completed). The handle stays valid either way.
 */
static void ch_start(struct rcx_req *ch, struct chend *c, struct rcx_req *cr,
		     int k, bool persistent)
{
	struct rcx_req *x = ch;

	if (!persistent && (k & 1))
		TP_CHECK_OK(rcx_continue(&x, chend_cb, c, 0, &c->st, cr));
	TP_CHECK_OK(rcx_start(ch));
	if (!persistent && !(k & 1))
		TP_CHECK_OK(rcx_continue(&x, chend_cb, c, 0, &c->st, cr));
	TP_CHECK(x == ch);
}

/*
 * Messages first .. first+n-1 each way: rank 0 starts its receive and
 * sends, rank 1 answers each message. Completion is seen only through the
 * continuations (the continuation requests are waited for, never the
 * channels).
 */
static void ch_rounds(struct tp_job *j, struct chpair *p, int first, int n,
		      bool persistent)
{
	int k, r;

	for (k = first; k < first + n && !tp_failures(); k++) {
		if (j->rank == 0) {
			ch_start(p->rc, &p->r, p->crr, k, persistent);
			ch_fill(p->sbuf, k, 0);
			ch_start(p->sc, &p->s, p->crs, k, persistent);
			TP_CHECK(wait_creq(&p->e, &p->crs, RCX_STATUS_IGNORE));
			TP_CHECK(wait_creq(&p->e, &p->crr, RCX_STATUS_IGNORE));
		} else {
			if (k == first)
				ch_start(p->rc, &p->r, p->crr, k, persistent);
			TP_CHECK(wait_creq(&p->e, &p->crr, RCX_STATUS_IGNORE));
			/* the next receive before the answer it replies to */
			if (k + 1 < first + n)
				ch_start(p->rc, &p->r, p->crr, k + 1,
					 persistent);
			ch_fill(p->sbuf, k, 1);
			ch_start(p->sc, &p->s, p->crs, k, persistent);
			TP_CHECK(wait_creq(&p->e, &p->crs, RCX_STATUS_IGNORE));
		}
		TP_CHECK_EQ(atomic_load(&p->s.runs), k + 1);
		/* rank 1 may have taken the next message already */
		r = atomic_load(&p->r.runs);
		if (!TP_CHECK(r == k + 1 || (j->rank == 1 && r == k + 2 &&
					     k + 1 < first + n)))
			TP_FAIL("message %d: %d receives seen", k, r);
	}
}

/*
 * Per protocol: CH_ROUNDS round trips with a continuation attached to
 * each start, then CH_ROUNDS with one persistent continuation per channel
 * attached once; every payload is checked by its continuation.
 */
static void sc_chan(struct tp_job *j)
{
	static const char *const protos[] = { "send", "write_imm" };
	struct chpair *p = calloc(1, sizeof(*p));
	struct rcx_req *x, *both[2];
	size_t i;

	for (i = 0; p && i < 2 && !tp_failures(); i++) {
		if (!ch_bind(j, p, protos[i]))
			break;
		ch_rounds(j, p, 0, CH_ROUNDS, false);
		x = p->rc;
		TP_CHECK_OK(rcx_continue(&x, chend_cb, &p->r,
					 RCX_CONT_PERSISTENT, &p->r.st,
					 p->crr));
		x = p->sc;
		TP_CHECK_OK(rcx_continue(&x, chend_cb, &p->s,
					 RCX_CONT_PERSISTENT, &p->s.st,
					 p->crs));
		ch_rounds(j, p, CH_ROUNDS, CH_ROUNDS, true);
		TP_CHECK_EQ(p->s.bad + p->r.bad, 0);
		printf("rank %d: %s: %d messages each way seen by "
		       "continuations\n",
		       j->rank, protos[i], atomic_load(&p->r.runs));
		/* freeing the channels drops the persistent continuations:
		 * the continuation requests are left inactive */
		both[0] = p->sc;
		both[1] = p->rc;
		TP_CHECK_OK(rcx_bind_free(both, 2));
		TP_CHECK_OK(rcx_req_free(&p->crs));
		TP_CHECK_OK(rcx_req_free(&p->crr));
		TP_CHECK_OK(rcx_group_barrier(j->g));
	}
	TP_CHECK(p != NULL);
	free(p);
}

/*
 * A continuation on the ephemeral request of rcx_ibind: it runs once the
 * channel is bound, and starts the first message from inside the
 * callback, with a continuation of its own on the channel.
 */
struct bound {
	struct rcx_req *ch, *cr;
	struct chend *end;
	struct rcx_status st;
	atomic_int runs;
	int start_ret, cont_ret;
};

static void bound_cb(struct rcx_status *sts, void *arg)
{
	struct bound *b = arg;
	struct rcx_req *x = b->ch;

	if (sts == &b->st && !sts->error) {
		b->start_ret = rcx_start(b->ch);
		b->cont_ret = rcx_continue(&x, chend_cb, b->end, 0, &b->end->st,
					   b->cr);
	}
	atomic_fetch_add(&b->runs, 1);
}

static void ibind_cont(struct rcx_req *init, struct rcx_info *info,
		       struct bound *b)
{
	struct rcx_req *eph = NULL;

	TP_CHECK_OK(rcx_ibind(init, info, &b->ch, &eph));
	TP_CHECK_OK(rcx_continue(&eph, bound_cb, b, 0, &b->st, b->cr));
	TP_CHECK(eph == NULL); /* rcx owns it now */
}

static void sc_chan_ibind(struct tp_job *j)
{
	struct chpair *p = calloc(1, sizeof(*p));
	struct rcx_info *info = ch_info("auto", "4"), *bad;
	struct bound bs = { 0 }, br = { 0 }, bx = { 0 };
	struct rcx_req *si = NULL, *ri = NULL, *xi = NULL, *cr, *both[2];
	int peer = 1 - j->rank, v = 0;

	if (!TP_CHECK(p))
		return;
	ch_init(j, p);
	if (!TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &cr)) ||
	    !TP_CHECK_OK(rcx_send_init(j->g, p->sbuf, CH_LEN, peer, 5, &si)) ||
	    !TP_CHECK_OK(rcx_recv_init(j->g, p->rbuf, CH_LEN, peer, 5, &ri)))
		return;
	bs.cr = br.cr = bx.cr = cr;
	bs.end = &p->s;
	br.end = &p->r;
	ch_fill(p->sbuf, 0, j->rank);
	/* both directions at once: nonblocking binds cannot deadlock */
	ibind_cont(si, info, &bs);
	ibind_cont(ri, info, &br);
	/* not bound yet (nothing has progressed): refused */
	TP_CHECK_EQ(rcx_start(bs.ch), -EAGAIN);
	TP_CHECK_EQ(atomic_load(&bs.runs), 0);
	/* binds, then the first message each way, all by continuations */
	TP_CHECK(wait_creq(&p->e, &cr, RCX_STATUS_IGNORE));
	TP_CHECK_EQ(atomic_load(&bs.runs), 1);
	TP_CHECK_EQ(atomic_load(&br.runs), 1);
	TP_CHECK_EQ(bs.st.error, 0);
	TP_CHECK_EQ(br.st.error, 0);
	TP_CHECK_OK(bs.start_ret);
	TP_CHECK_OK(br.start_ret);
	TP_CHECK_OK(bs.cont_ret);
	TP_CHECK_OK(br.cont_ret);
	TP_CHECK_EQ(atomic_load(&p->s.runs), 1);
	TP_CHECK_EQ(atomic_load(&p->r.runs), 1);
	TP_CHECK_EQ(p->s.bad + p->r.bad, 0);

	/* the two ends disagree on the slots: the bind's error reaches the
	 * continuation at both ends */
	bad = ch_info("auto", j->rank == 0 ? "2" : "3");
	if (j->rank == 0)
		TP_CHECK_OK(rcx_send_init(j->g, &v, sizeof(v), peer, 6, &xi));
	else
		TP_CHECK_OK(rcx_recv_init(j->g, &v, sizeof(v), peer, 6, &xi));
	ibind_cont(xi, bad, &bx);
	TP_CHECK(wait_creq(&p->e, &cr, RCX_STATUS_IGNORE));
	TP_CHECK_EQ(atomic_load(&bx.runs), 1);
	TP_CHECK_EQ(bx.st.error, -EINVAL);
	TP_CHECK_OK(rcx_bind_free(&bx.ch, 1));
	both[0] = bs.ch;
	both[1] = br.ch;
	TP_CHECK_OK(rcx_bind_free(both, 2));
	rcx_info_free(&bad);
	rcx_info_free(&info);
	rcx_req_free(&xi);
	rcx_req_free(&si);
	rcx_req_free(&ri);
	TP_CHECK_OK(rcx_req_free(&cr));
	free(p);
}

/*
 * ---- continuations made ready by a completion run when the dispatch
 * that found it returns (no queue): also when that dispatch was a test's
 * direct poll of another request, when a second one is ready in the same
 * batch, and when a callback polls again from inside.
 */

#define NOW_ROUNDS 50

struct now {
	struct tp_job *j;
	int ack; /* what cb_ack sends back */
	int nest, acks, bad;
	struct rcx_status st1, st2;
};

/* polls from inside a callback: what it finds waits for this to end */
static void now_nest_cb(struct rcx_status *sts, void *arg)
{
	struct now *w = arg;
	int i;

	if (sts != &w->st1 || sts->error || sts->tag != 1 ||
	    sts->count != sizeof(int))
		w->bad++;
	for (i = 0; i < 4; i++)
		if (rcx_progress(w->j->ctx) < 0)
			w->bad++;
	w->nest++;
}

/* the peer sends tag 4 only once this has run */
static void now_ack_cb(struct rcx_status *sts, void *arg)
{
	struct now *w = arg;
	struct rcx_req *s;

	if (sts != &w->st2 || sts->error || sts->tag != 2)
		w->bad++;
	w->acks++;
	if (rcx_isend(w->j->g, &w->ack, sizeof(int), 1 - w->j->rank, 5, &s) ||
	    rcx_req_free(&s))
		w->bad++;
}

static void now_recv(struct tp_job *j, struct now *w, struct rcx_req *cr,
		     int *v)
{
	struct rcx_req *r1, *r2, *r3, *r4;
	int peer = 1 - j->rank, flag = 0, round = w->acks;

	TP_CHECK_OK(rcx_irecv(j->g, &v[0], sizeof(int), peer, 1, &r1));
	TP_CHECK_OK(rcx_continue(&r1, now_nest_cb, w, 0, &w->st1, cr));
	TP_CHECK_OK(rcx_irecv(j->g, &v[1], sizeof(int), peer, 2, &r2));
	TP_CHECK_OK(rcx_continue(&r2, now_ack_cb, w, 0, &w->st2, cr));
	TP_CHECK_OK(rcx_irecv(j->g, &v[2], sizeof(int), peer, 3, &r3));
	TP_CHECK_OK(rcx_irecv(j->g, &v[3], sizeof(int), peer, 4, &r4));
	/* only tests of r4: they must run both continuations (tag 4 comes
	 * after the acknowledgement; the job's time-out ends a hang) */
	while (!flag)
		if (!TP_CHECK_OK(rcx_test(&r4, &flag, RCX_STATUS_IGNORE)))
			return;
	TP_CHECK_OK(rcx_wait(&r3, RCX_STATUS_IGNORE));
	TP_CHECK_EQ(w->acks, round + 1);
	TP_CHECK_EQ(w->nest, round + 1);
	TP_CHECK_EQ(v[0], round * 4 + 1);
	TP_CHECK_EQ(v[1], round * 4 + 2);
	TP_CHECK_EQ(v[2], round * 4 + 3);
	TP_CHECK_EQ(v[3], round * 4 + 4);
}

static void sc_now(struct tp_job *j)
{
	struct now w = { .j = j };
	struct rcx_req *cr;
	int peer = 1 - j->rank, v[4], i, k;

	TP_CHECK_OK(rcx_continue_init(j->ctx, NULL, &cr));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (i = 0; i < NOW_ROUNDS; i++) {
		if (j->rank == 1) {
			now_recv(j, &w, cr, v);
			continue;
		}
		/* back to back: one poll of the peer may find them all */
		for (k = 0; k < 3; k++) {
			v[k] = i * 4 + k + 1;
			TP_CHECK_OK(rcx_send(j->g, &v[k], sizeof(int), peer,
					     k + 1));
		}
		TP_CHECK_OK(rcx_recv(j->g, &v[3], sizeof(int), peer, 5, NULL));
		v[3] = i * 4 + 4;
		TP_CHECK_OK(rcx_send(j->g, &v[3], sizeof(int), peer, 4));
	}
	TP_CHECK_EQ(w.bad, 0);
	/* every continuation ran: the continuation request is complete */
	TP_CHECK(rcx_wait(&cr, RCX_STATUS_IGNORE) == 0);
	TP_CHECK_OK(rcx_req_free(&cr));
	TP_CHECK_OK(rcx_group_barrier(j->g));
}

static const struct tp_scenario scenarios[] = {
	{ .name = "pingpong", .run = sc_pingpong, .size = 2 },
	{ .name = "mixed", .run = sc_mixed, .size = 2 },
	{ .name = "thread",
	  .run = sc_thread,
	  .thread_level = RCX_THREAD_MULTIPLE,
	  .size = 2 },
	{ .name = "chan", .run = sc_chan, .size = 2 },
	{ .name = "chan_ibind", .run = sc_chan_ibind, .size = 2 },
	{ .name = "now", .run = sc_now, .size = 2 },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("cont", scenarios, TP_COUNT(scenarios), argc, argv);
}

const struct tu_peer tu_peer_cont = { "cont", peer_main };

static void job(const char *scenario, int timeout_s)
{
	/* the job's ranks bootstrap through the launcher */
	unsetenv("RCX_BOOTSTRAP");
	CU_ASSERT_EQUAL(tu_mp_run(2, "cont", scenario, timeout_s), 0);
	setenv("RCX_BOOTSTRAP", "singleton", 1);
}

void test_wire_pingpong(void)
{
	job("pingpong", 300);
}

void test_wire_mixed(void)
{
	job("mixed", 180);
}

void test_wire_thread(void)
{
	job("thread", 180);
}

void test_wire_chan(void)
{
	job("chan", 300);
}

void test_wire_chan_ibind(void)
{
	job("chan_ibind", 180);
}

void test_wire_now(void)
{
	job("now", 180);
}
