/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Continuations and threads, waits and event loops: four threads
 * registering and completing at once, a blocking wait woken by a
 * continuation another thread readies, an epoll loop on the two event
 * fds, and rcx_ctx_wait returning for continuations that become ready
 * without a completion event (test_cont.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <rcx/rcx.h>
#include "test_cont.h"
#include "tu.h"

/* ---- four threads registering and completing at once */

#define NTHREADS   4
#define PER_THREAD 400

struct mt {
	struct env *e;
	struct rcx_req *shared; /* thread = "any" */
	struct rcx_req *own[NTHREADS];
	atomic_int hits[NTHREADS * PER_THREAD];
	struct rcx_status sts[NTHREADS * PER_THREAD];
	atomic_int errs;
	atomic_int off_app; /* ran on the progress thread */
};

static __thread bool app_thread;

struct mt_slot {
	struct mt *m;
	int k;
};

static struct mt_slot mt_slots[NTHREADS * PER_THREAD];

static void mt_cb(struct rcx_status *sts, void *arg)
{
	struct mt_slot *s = arg;

	if (!sts || sts[0].error)
		atomic_fetch_add(&s->m->errs, 1);
	atomic_fetch_add(&s->m->hits[s->k], 1);
	if (!app_thread)
		atomic_fetch_add(&s->m->off_app, 1);
}

struct mt_arg {
	struct mt *m;
	int t;
};

static void *mt_main(void *arg)
{
	struct mt_arg *a = arg;
	struct mt *m = a->m;
	struct rcx_status *st = m->sts + a->t * PER_THREAD;
	int i, buf[PER_THREAD], ret;

	app_thread = true;
	for (i = 0; i < PER_THREAD; i++) {
		int k = a->t * PER_THREAD + i, tag = 1000 + k;
		struct rcx_req *r = NULL, *cr;

		cr = (i & 1) ? m->shared : m->own[a->t];
		mt_slots[k].m = m;
		mt_slots[k].k = k;
		if (i % 3 == 0) {
			/* complete at once, IMMEDIATE */
			ret = rcx_isend(m->e->g, &i, sizeof(i), 0, 50000 + k,
					&r);
			ret |= rcx_continue(&r, mt_cb, &mt_slots[k],
					    RCX_CONT_IMMEDIATE, &st[i], cr);
		} else {
			/* a receive, completed by our own send */
			ret = rcx_irecv(m->e->g, &buf[i], sizeof(int), 0, tag,
					&r);
			ret |= rcx_continue(&r, mt_cb, &mt_slots[k], 0, &st[i],
					    cr);
			ret |= rcx_send(m->e->g, &k, sizeof(k), 0, tag);
		}
		if (ret)
			atomic_fetch_add(&m->errs, 1);
		if (i % 16 == 0)
			rcx_progress(m->e->ctx);
	}
	/* our own continuation request: wait for it here */
	ret = rcx_wait(&m->own[a->t], RCX_STATUS_IGNORE);
	if (ret)
		atomic_fetch_add(&m->errs, 1);
	return NULL;
}

void test_threads(void)
{
	static struct mt m;
	struct env e;
	struct mt_arg args[NTHREADS];
	pthread_t t[NTHREADS];
	int i, bad = 0;

	if (!env_open(&e, true)) {
		CU_FAIL("no context");
		return;
	}
	memset(&m, 0, sizeof(m));
	m.e = &e;
	app_thread = true;
	CU_ASSERT_EQUAL_FATAL(
		creq(&e, &m.shared, RCX_CONT_INFO_THREAD, "any", 0, 0, 0, 0),
		0);
	for (i = 0; i < NTHREADS; i++)
		CU_ASSERT_EQUAL_FATAL(creq(&e, &m.own[i], 0, 0, 0, 0, 0, 0), 0);
	for (i = 0; i < NTHREADS; i++) {
		args[i].m = &m;
		args[i].t = i;
		CU_ASSERT_EQUAL_FATAL(
			pthread_create(&t[i], NULL, mt_main, &args[i]), 0);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	CU_ASSERT_TRUE(wait_creq(&e, &m.shared, RCX_STATUS_IGNORE));
	for (i = 0; i < NTHREADS * PER_THREAD; i++)
		bad += atomic_load(&m.hits[i]) != 1;
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(atomic_load(&m.errs), 0);
	printf("\n    %d of %d continuations ran on the progress thread\n",
	       atomic_load(&m.off_app), NTHREADS * PER_THREAD);
	for (i = 0; i < NTHREADS; i++)
		rcx_req_free(&m.own[i]);
	rcx_req_free(&m.shared);
	env_close(&e);
}

/* ---- blocking: a wait is woken by a continuation another thread readies */

struct waiter {
	struct rcx_req *cr;
	int ret;
	atomic_int done;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->ret = rcx_wait(&w->cr, RCX_STATUS_IGNORE);
	atomic_store(&w->done, 1);
	return NULL;
}

void test_wait_wakeup(void)
{
	struct env e;
	struct waiter w = { 0 };
	struct rcx_req *r;
	pthread_t t;
	atomic_int runs = 0;
	int v = 0;

	if (!env_open(&e, true)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &w.cr, 0, 0, 0, 0, 0, 0), 0);
	r = recv_self(&e, 500, &v, sizeof(v));
	CU_ASSERT_EQUAL(
		rcx_continue(&r, count_cb, &runs, 0, RCX_STATUS_IGNORE, w.cr),
		0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, waiter_main, &w), 0);
	usleep(300000); /* the waiter is asleep by now */
	CU_ASSERT_EQUAL(atomic_load(&w.done), 0);
	/* completes the receive here; no completion event anywhere */
	send_self(&e, 500, &v, sizeof(v));
	CU_ASSERT_TRUE(wait_runs(&w.done, 1, WAIT_MS));
	if (!atomic_load(&w.done)) {
		/* unstick it so the suite can go on */
		rcx_progress(e.ctx);
		wait_runs(&w.done, 1, WAIT_MS);
	}
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(w.ret, 0);
	CU_ASSERT_EQUAL(atomic_load(&runs), 1);
	rcx_req_free(&w.cr);
	env_close(&e);
}

/* ---- an epoll loop on rcx_ctx_event_fd + rcx_cont_event_fd */

struct late {
	struct env *e;
	struct rcx_req *cr;
	atomic_int *runs;
};

static void *late_main(void *arg)
{
	struct late *l = arg;
	struct rcx_req *r;
	static const char b[4];

	usleep(200000);
	/* complete at once, queued (no IMMEDIATE): no completion event */
	if (!rcx_isend(l->e->g, b, sizeof(b), 0, 600, &r))
		rcx_continue(&r, count_cb, l->runs, 0, RCX_STATUS_IGNORE,
			     l->cr);
	return NULL;
}

void test_event_fd(void)
{
	struct env e;
	struct rcx_req *cr, *r;
	struct epoll_event ev;
	struct late l;
	atomic_int runs = 0;
	pthread_t t;
	int ep, cfd, xfd, n, ret;
	long long end;

	if (!env_open(&e, true)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	cfd = rcx_ctx_event_fd(e.ctx);
	xfd = rcx_cont_event_fd(e.ctx);
	CU_ASSERT_TRUE_FATAL(cfd >= 0 && xfd >= 0);
	CU_ASSERT_EQUAL(rcx_cont_event_fd(e.ctx), xfd); /* the same one */
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.fd = cfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &ev);
	ev.data.fd = xfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, xfd, &ev);

	/* same thread: queued -> the fd is readable; progress drains it */
	r = done_send(&e, 601);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, count_cb, &runs, 0, RCX_STATUS_IGNORE, cr), 0);
	CU_ASSERT_EQUAL(epoll_wait(ep, &ev, 1, 0), 1);
	CU_ASSERT_EQUAL(ev.data.fd, xfd);
	rcx_progress(e.ctx);
	CU_ASSERT_EQUAL(atomic_load(&runs), 1);
	CU_ASSERT_EQUAL(epoll_wait(ep, &ev, 1, 0), 0);

	/* another thread queues one while this one sleeps in epoll */
	l.e = &e;
	l.cr = cr;
	l.runs = &runs;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, late_main, &l), 0);
	end = tu_now_ms() + WAIT_MS;
	while (atomic_load(&runs) < 2 && tu_now_ms() < end) {
		ret = rcx_ctx_arm(e.ctx);
		if (ret == -EAGAIN)
			continue;
		CU_ASSERT_EQUAL(ret, 0);
		n = epoll_wait(ep, &ev, 1, WAIT_MS);
		CU_ASSERT_EQUAL(n, 1);
		rcx_progress(e.ctx);
	}
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(atomic_load(&runs), 2);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	close(ep);
	rcx_req_free(&cr);
	env_close(&e);
}

/* ---- rcx_ctx_wait returns for continuations, not only for completions */

/*
 * The timeout of a wait that has work at once: a wait that missed it
 * would sleep all of it and return -ETIMEDOUT.
 */
#define WAKE_MS 5000

/* rcx_ctx_wait that must return > 0 before its timeout: whether it did. */
static bool wait_handles(struct env *e, int timeout_ms)
{
	long long t0 = tu_now_ms(), dt;
	int ret = rcx_ctx_wait(e->ctx, timeout_ms);

	dt = tu_now_ms() - t0;
	if (ret > 0 && dt < WAKE_MS)
		return true;
	fprintf(stderr, "\n    rcx_ctx_wait(%d): %d (%s) after %lld ms\n",
		timeout_ms, ret, ret < 0 ? rcx_strerror(ret) : "ok", dt);
	return false;
}

/* Queued at registration: no completion event, the wait runs it. */
void test_ctx_wait_queued(void)
{
	struct env e;
	struct rcx_req *cr, *ec, *r;
	atomic_int runs = 0;
	int v = 0;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &ec, RCX_CONT_INFO_ENQUEUE_COMPLETE,
				   "true", 0, 0, 0, 0),
			      0);
	/* complete, no IMMEDIATE: queued */
	r = done_send(&e, 800);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, count_cb, &runs, 0, RCX_STATUS_IGNORE, cr), 0);
	CU_ASSERT_EQUAL(atomic_load(&runs), 0);
	CU_ASSERT_TRUE(wait_handles(&e, WAKE_MS));
	CU_ASSERT_EQUAL(atomic_load(&runs), 1);
	/* nothing left: the wait times out */
	CU_ASSERT_EQUAL(rcx_ctx_wait(e.ctx, 50), -ETIMEDOUT);
	/* enqueue_complete despite IMMEDIATE, and a wait that does not
	 * block at all: it runs the continuation and says so */
	r = done_send(&e, 801);
	CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs, RCX_CONT_IMMEDIATE,
				     RCX_STATUS_IGNORE, ec),
			0);
	CU_ASSERT_EQUAL(atomic_load(&runs), 1);
	CU_ASSERT_TRUE(wait_handles(&e, 0));
	CU_ASSERT_EQUAL(atomic_load(&runs), 2);
	/* completed by a send to self, inside the send: no event either */
	r = recv_self(&e, 802, &v, sizeof(v));
	CU_ASSERT_EQUAL(
		rcx_continue(&r, count_cb, &runs, 0, RCX_STATUS_IGNORE, cr), 0);
	send_self(&e, 802, &v, sizeof(v));
	CU_ASSERT_EQUAL(atomic_load(&runs), 2);
	CU_ASSERT_TRUE(wait_handles(&e, WAKE_MS));
	CU_ASSERT_EQUAL(atomic_load(&runs), 3);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_TRUE(wait_creq(&e, &ec, RCX_STATUS_IGNORE));
	rcx_req_free(&cr);
	rcx_req_free(&ec);
	env_close(&e);
}

/*
 * A continuation request completes when its last continuation has run,
 * which readies the continuation attached to it: each wait returns with
 * what it ran, the outer one included.
 */
void test_ctx_wait_creq(void)
{
	struct env e;
	struct rcx_req *c1, *c2, *r, *x;
	struct rcx_status st;
	struct rec in = { 0 }, out = { 0 };
	int v = 0, i;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &c1, 0, 0, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &c2, 0, 0, 0, 0, 0, 0), 0);
	r = recv_self(&e, 810, &v, sizeof(v));
	CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &in, 0, RCX_STATUS_IGNORE, c1),
			0);
	x = c1;
	CU_ASSERT_EQUAL(rcx_continue(&x, rec_cb, &out, 0, &st, c2), 0);
	send_self(&e, 810, &v, sizeof(v));
	for (i = 0; i < 2 && !atomic_load(&out.runs); i++)
		CU_ASSERT_TRUE(wait_handles(&e, WAKE_MS));
	CU_ASSERT_EQUAL(atomic_load(&in.runs), 1);
	CU_ASSERT_EQUAL(atomic_load(&out.runs), 1);
	CU_ASSERT_TRUE(in.order < out.order);
	CU_ASSERT_EQUAL(st.count, 1); /* c1's status: one ran */
	/* both complete: nothing is left to wait for */
	CU_ASSERT_EQUAL(rcx_ctx_wait(e.ctx, 0), -ETIMEDOUT);
	CU_ASSERT_TRUE(wait_creq(&e, &c2, RCX_STATUS_IGNORE));
	rcx_req_free(&c1);
	rcx_req_free(&c2);
	env_close(&e);
}

/* Another thread queues one while this one sleeps in rcx_ctx_wait. */
void test_ctx_wait_other_thread(void)
{
	struct env e;
	struct rcx_req *cr;
	struct late l;
	atomic_int runs = 0;
	pthread_t t;

	if (!env_open(&e, true)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	l.e = &e;
	l.cr = cr;
	l.runs = &runs;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, late_main, &l), 0);
	/* the thread registers after 200 ms and never calls rcx again:
	 * only this wait can run the continuation */
	CU_ASSERT_TRUE(wait_handles(&e, WAKE_MS));
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(atomic_load(&runs), 1);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	rcx_req_free(&cr);
	env_close(&e);
}
