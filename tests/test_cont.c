/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Continuations (include/rcx/cont.h): registration on every request kind
 * there is (point-to-point, persistent point-to-point, channels,
 * continuation requests), each info key and flag with a check that fails
 * if it were ignored, persistent continuations over many restarts,
 * continueall over 64 requests of mixed kinds, nesting, callbacks posting
 * work, teardown, four threads at once, blocking waits woken by
 * continuations, the event fds, a signal handler, and bad input.
 *
 * This file: the helpers the suite's files share (test_cont.h), basics,
 * flags and info keys, persistent continuations, and the suite's table.
 * The "wire_*" tests run the "cont" peer role in a 2-rank job through the
 * rcx-run launcher, where completions come from the device.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <rcx/rcx.h>
#include "test_cont.h"
#include "tu.h"

static char *saved_bootstrap;

atomic_int rec_seq;
atomic_int rec_max_depth;
static __thread int cb_depth;
static volatile sig_atomic_t in_handler;

int cb_enter(void)
{
	int d = ++cb_depth, m = atomic_load(&rec_max_depth);

	while (d > m && !atomic_compare_exchange_weak(&rec_max_depth, &m, d))
		;
	return d;
}

void cb_leave(void)
{
	cb_depth--;
}

void rec_cb(struct rcx_status *sts, void *arg)
{
	struct rec *r = arg;
	int d = cb_enter();

	r->order = atomic_fetch_add(&rec_seq, 1);
	r->had_status = sts != NULL;
	if (sts)
		memcpy(r->st, sts, sizeof(r->st[0]));
	r->thr = pthread_self();
	r->in_handler = in_handler;
	r->depth = d;
	atomic_fetch_add(&r->runs, 1);
	cb_leave();
}

void count_cb(struct rcx_status *sts, void *arg)
{
	(void)sts;
	atomic_fetch_add((atomic_int *)arg, 1);
}

static int suite_init(void)
{
	const char *b = getenv("RCX_BOOTSTRAP");

	saved_bootstrap = b ? strdup(b) : NULL;
	setenv("RCX_BOOTSTRAP", "singleton", 1);
	return 0;
}

static int suite_cleanup(void)
{
	if (saved_bootstrap)
		setenv("RCX_BOOTSTRAP", saved_bootstrap, 1);
	else
		unsetenv("RCX_BOOTSTRAP");
	free(saved_bootstrap);
	saved_bootstrap = NULL;
	return 0;
}

bool env_open(struct env *e, bool mt)
{
	struct rcx_ctx_attr a = { .thread_level = mt ? RCX_THREAD_MULTIPLE
						     : RCX_THREAD_SINGLE };
	int ret;

	memset(e, 0, sizeof(*e));
	ret = rcx_ctx_create(&a, &e->ctx);
	if (ret) {
		fprintf(stderr, "rcx_ctx_create: %s\n", rcx_strerror(ret));
		return false;
	}
	ret = rcx_group_world(e->ctx, &e->g);
	if (ret) {
		fprintf(stderr, "rcx_group_world: %s\n", rcx_strerror(ret));
		rcx_ctx_destroy(e->ctx);
		return false;
	}
	return true;
}

void env_close(struct env *e)
{
	if (e->g)
		rcx_group_free(&e->g);
	if (e->ctx)
		CU_ASSERT_EQUAL(rcx_ctx_destroy(e->ctx), 0);
	e->ctx = NULL;
}

int creq(struct env *e, struct rcx_req **out, const char *k1, const char *v1,
	 const char *k2, const char *v2, const char *k3, const char *v3)
{
	struct rcx_info *info = NULL;
	int ret;

	if (k1) {
		ret = rcx_info_create(&info);
		if (ret)
			return ret;
		rcx_info_set(info, k1, v1);
		if (k2)
			rcx_info_set(info, k2, v2);
		if (k3)
			rcx_info_set(info, k3, v3);
	}
	ret = rcx_continue_init(e->ctx, info, out);
	if (info)
		rcx_info_free(&info);
	return ret;
}

struct rcx_req *recv_self(struct env *e, int tag, void *buf, size_t len)
{
	struct rcx_req *r = NULL;

	CU_ASSERT_EQUAL(rcx_irecv(e->g, buf, len, 0, tag, &r), 0);
	return r;
}

void send_self(struct env *e, int tag, const void *buf, size_t len)
{
	CU_ASSERT_EQUAL(rcx_send(e->g, buf, len, 0, tag), 0);
}

struct rcx_req *done_send(struct env *e, int tag)
{
	static const char b[8];
	struct rcx_req *r = NULL;

	CU_ASSERT_EQUAL(rcx_isend(e->g, b, sizeof(b), 0, tag, &r), 0);
	return r;
}

bool wait_creq(struct env *e, struct rcx_req **cr, struct rcx_status *st)
{
	long long end = tu_now_ms() + WAIT_MS;
	int flag = 0;

	while (tu_now_ms() < end) {
		if (rcx_test(cr, &flag, st) || flag)
			return flag;
		rcx_ctx_wait(e->ctx, 10);
	}
	return false;
}

bool wait_runs(atomic_int *runs, int want, int ms)
{
	long long end = tu_now_ms() + ms;

	while (atomic_load(runs) < want && tu_now_ms() < end)
		usleep(1000);
	return atomic_load(runs) >= want;
}

/* ---- basics */

static void test_basic(void)
{
	struct env e;
	struct rcx_req *cr, *r;
	struct rcx_status st, cst;
	struct rec rec = { 0 };
	int v = 0, w = 42, flag = -1;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	/* inactive before the first registration */
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, &cst), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(rcx_start(cr), -EOPNOTSUPP);

	r = recv_self(&e, 7, &v, sizeof(v));
	memset(&st, 0xa5, sizeof(st));
	CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &rec, 0, &st, cr), 0);
	CU_ASSERT_PTR_NULL(r); /* rcx owns it now */
	/* active: its continuation has not run */
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, &cst), 0);
	CU_ASSERT_EQUAL(flag, 0);
	CU_ASSERT_EQUAL(rcx_req_free(&cr), -EBUSY);
	CU_ASSERT_EQUAL(atomic_load(&rec.runs), 0);

	send_self(&e, 7, &w, sizeof(w));
	CU_ASSERT_TRUE(wait_creq(&e, &cr, &cst));
	CU_ASSERT_EQUAL(atomic_load(&rec.runs), 1);
	/* the status was written before the callback, and passed to it */
	CU_ASSERT_TRUE(rec.had_status);
	CU_ASSERT_EQUAL(rec.st[0].source, 0);
	CU_ASSERT_EQUAL(rec.st[0].tag, 7);
	CU_ASSERT_EQUAL(rec.st[0].count, sizeof(w));
	CU_ASSERT_EQUAL(rec.st[0].error, 0);
	CU_ASSERT_EQUAL(st.tag, 7);
	CU_ASSERT_EQUAL(v, 42);
	CU_ASSERT_EQUAL(cst.count, 1); /* one continuation ran */
	CU_ASSERT_EQUAL(cst.error, 0);
	CU_ASSERT_EQUAL(rcx_req_free(&cr), 0);
	CU_ASSERT_PTR_NULL(cr);
	env_close(&e);
}

/* The operation's error reaches the callback; STATUS_IGNORE gives NULL. */
static void test_status_error(void)
{
	struct env e;
	struct rcx_req *cr, *r;
	struct rcx_status st;
	struct rec a = { 0 }, b = { 0 };
	char small[4], big[64] = { 0 };

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	r = recv_self(&e, 1, small, sizeof(small));
	CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &a, 0, &st, cr), 0);
	r = recv_self(&e, 2, small, sizeof(small));
	CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &b, 0, RCX_STATUS_IGNORE, cr),
			0);
	send_self(&e, 1, big, sizeof(big));
	send_self(&e, 2, big, sizeof(big));
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&a.runs), 1);
	CU_ASSERT_EQUAL(a.st[0].error, RCX_ERR_TRUNCATE);
	CU_ASSERT_EQUAL(st.error, RCX_ERR_TRUNCATE);
	CU_ASSERT_EQUAL(st.count, sizeof(small));
	CU_ASSERT_EQUAL(atomic_load(&b.runs), 1);
	CU_ASSERT_FALSE(b.had_status);
	rcx_req_free(&cr);
	env_close(&e);
}

/* ---- flags and info keys: each fails if it were ignored */

static void test_immediate(void)
{
	struct env e;
	struct rcx_req *cr, *r;
	struct rcx_status st;
	struct rec now = { 0 }, later = { 0 }, pend = { 0 };
	int v = 0;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	/* complete at registration + IMMEDIATE: ran inside the call */
	r = done_send(&e, 10);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &now, RCX_CONT_IMMEDIATE, &st, cr), 0);
	CU_ASSERT_EQUAL(atomic_load(&now.runs), 1);
	CU_ASSERT_EQUAL(st.tag, 10);
	/* and the continuation request completed with it */
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));

	/* without the flag: queued, run by later progress */
	r = done_send(&e, 11);
	CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &later, 0, &st, cr), 0);
	CU_ASSERT_EQUAL(atomic_load(&later.runs), 0);
	CU_ASSERT_TRUE(rcx_progress(e.ctx) >= 0);
	CU_ASSERT_EQUAL(atomic_load(&later.runs), 1);

	/* IMMEDIATE on an operation not complete: runs on completion */
	r = recv_self(&e, 12, &v, sizeof(v));
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &pend, RCX_CONT_IMMEDIATE, &st, cr),
		0);
	CU_ASSERT_EQUAL(atomic_load(&pend.runs), 0);
	send_self(&e, 12, &v, sizeof(v));
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&pend.runs), 1);
	rcx_req_free(&cr);
	env_close(&e);
}

static void test_enqueue_complete(void)
{
	struct env e;
	struct rcx_req *cr, *r;
	struct rec rec = { 0 };

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, RCX_CONT_INFO_ENQUEUE_COMPLETE,
				   "true", 0, 0, 0, 0),
			      0);
	r = done_send(&e, 20);
	CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &rec, RCX_CONT_IMMEDIATE,
				     RCX_STATUS_IGNORE, cr),
			0);
	/* enqueued despite IMMEDIATE: not inside the call */
	CU_ASSERT_EQUAL(atomic_load(&rec.runs), 0);
	rcx_progress(e.ctx);
	CU_ASSERT_EQUAL(atomic_load(&rec.runs), 1);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	rcx_req_free(&cr);
	env_close(&e);
}

static void test_poll_only(void)
{
	struct env e;
	struct rcx_req *cr, *other, *r, *x;
	struct rec a = { 0 }, b = { 0 }, o = { 0 };
	int v = 0, flag, i;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(
		creq(&e, &cr, RCX_CONT_INFO_POLL_ONLY, "true", 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &other, 0, 0, 0, 0, 0, 0), 0);
	/* complete at registration, even with IMMEDIATE: not in the call */
	r = done_send(&e, 30);
	CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &a, RCX_CONT_IMMEDIATE,
				     RCX_STATUS_IGNORE, cr),
			0);
	/* completed later by the progress of an unrelated call */
	r = recv_self(&e, 31, &v, sizeof(v));
	CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &b, 0, RCX_STATUS_IGNORE, cr),
			0);
	send_self(&e, 31, &v, sizeof(v));
	x = recv_self(&e, 32, &v, sizeof(v));
	CU_ASSERT_EQUAL(
		rcx_continue(&x, rec_cb, &o, 0, RCX_STATUS_IGNORE, other), 0);
	send_self(&e, 32, &v, sizeof(v));
	/* progress, waits, tests of another request: nothing of cr runs */
	for (i = 0; i < 20; i++) {
		rcx_progress(e.ctx);
		rcx_ctx_wait(e.ctx, 1);
	}
	CU_ASSERT_TRUE(wait_creq(&e, &other, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&o.runs), 1);
	CU_ASSERT_EQUAL(atomic_load(&a.runs), 0);
	CU_ASSERT_EQUAL(atomic_load(&b.runs), 0);
	/* a test on cr runs them */
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, RCX_STATUS_IGNORE), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(atomic_load(&a.runs), 1);
	CU_ASSERT_EQUAL(atomic_load(&b.runs), 1);
	rcx_req_free(&cr);
	rcx_req_free(&other);
	env_close(&e);
}

/* max_poll = 2: each test runs two at most; a wait runs them all. */
static void test_max_poll(void)
{
	struct env e;
	struct rcx_req *cr, *cr2, *r;
	struct rcx_status st;
	atomic_int runs = 0, runs2 = 0;
	int i, flag;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, RCX_CONT_INFO_MAX_POLL, "2",
				   RCX_CONT_INFO_POLL_ONLY, "true", 0, 0),
			      0);
	for (i = 0; i < 5; i++) {
		r = done_send(&e, 40 + i);
		CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs, 0,
					     RCX_STATUS_IGNORE, cr),
				0);
	}
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 0);
	CU_ASSERT_EQUAL(atomic_load(&runs), 2);
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 0);
	CU_ASSERT_EQUAL(atomic_load(&runs), 4);
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(atomic_load(&runs), 5);
	CU_ASSERT_EQUAL(st.count, 5);

	/* not poll-only: a test still runs two; rcx_wait runs the rest
	 * (and must not sleep while some are left) */
	CU_ASSERT_EQUAL_FATAL(
		creq(&e, &cr2, RCX_CONT_INFO_MAX_POLL, "2", 0, 0, 0, 0), 0);
	for (i = 0; i < 7; i++) {
		r = done_send(&e, 50 + i);
		CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs2, 0,
					     RCX_STATUS_IGNORE, cr2),
				0);
	}
	CU_ASSERT_EQUAL(rcx_test(&cr2, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 0);
	CU_ASSERT_EQUAL(atomic_load(&runs2), 2);
	CU_ASSERT_EQUAL(rcx_wait(&cr2, &st), 0);
	CU_ASSERT_EQUAL(atomic_load(&runs2), 7);
	CU_ASSERT_EQUAL(st.count, 7);
	rcx_req_free(&cr);
	rcx_req_free(&cr2);
	env_close(&e);
}

/* thread = "any": the progress thread runs it while we stay out of rcx. */
static void test_thread_any(void)
{
	struct env e;
	struct rcx_req *cr, *r;
	struct rec rec = { 0 };

	if (!env_open(&e, true)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(
		creq(&e, &cr, RCX_CONT_INFO_THREAD, "any", 0, 0, 0, 0), 0);
	r = done_send(&e, 60);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &rec, 0, RCX_STATUS_IGNORE, cr), 0);
	CU_ASSERT_TRUE(wait_runs(&rec.runs, 1, WAIT_MS));
	CU_ASSERT_FALSE(pthread_equal(rec.thr, pthread_self()));
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	rcx_req_free(&cr);
	env_close(&e);
}

/*
 * thread = "application" next to a running progress thread: the thread
 * runs the "any" one and leaves the other for an application thread.
 */
static void test_thread_application(void)
{
	struct env e;
	struct rcx_req *any, *app, *r;
	struct rec ra = { 0 }, rb = { 0 };
	int flag;

	if (!env_open(&e, true)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(
		creq(&e, &any, RCX_CONT_INFO_THREAD, "any", 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(
		creq(&e, &app, RCX_CONT_INFO_THREAD, "application", 0, 0, 0, 0),
		0);
	r = done_send(&e, 70);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &rb, 0, RCX_STATUS_IGNORE, app), 0);
	r = done_send(&e, 71);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &ra, 0, RCX_STATUS_IGNORE, any), 0);
	CU_ASSERT_TRUE(wait_runs(&ra.runs, 1, WAIT_MS));
	usleep(300000); /* the thread is awake and has had time */
	CU_ASSERT_EQUAL(atomic_load(&rb.runs), 0);
	CU_ASSERT_EQUAL(rcx_test(&app, &flag, RCX_STATUS_IGNORE), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(atomic_load(&rb.runs), 1);
	CU_ASSERT_TRUE(pthread_equal(rb.thr, pthread_self()));
	rcx_req_free(&any);
	rcx_req_free(&app);
	env_close(&e);
}

/* ---- async_signal_safe: a handler runs those, and only those */

static struct rcx_ctx *sig_ctx;
static volatile int sig_ret;

static void on_sigusr1(int s)
{
	(void)s;
	in_handler = 1;
	sig_ret = rcx_cont_progress_signal(sig_ctx);
	in_handler = 0;
}

static void test_signal_safe(void)
{
	struct sigaction sa = { 0 }, old;
	struct env e;
	struct rcx_req *safe, *plain, *r;
	struct rec a = { 0 }, b = { 0 };
	struct epoll_event ev;
	int flag, xfd, ep;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &safe, RCX_CONT_INFO_ASYNC_SIGNAL_SAFE,
				   "true", 0, 0, 0, 0),
			      0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &plain, 0, 0, 0, 0, 0, 0), 0);
	xfd = rcx_cont_event_fd(e.ctx);
	CU_ASSERT_TRUE_FATAL(xfd >= 0);
	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.fd = xfd;
	CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_ADD, xfd, &ev), 0);
	sig_ctx = e.ctx;
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);

	/* queued, one of each kind: the exported fd says so */
	r = done_send(&e, 80);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &a, 0, RCX_STATUS_IGNORE, safe), 0);
	r = done_send(&e, 81);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &b, 0, RCX_STATUS_IGNORE, plain), 0);
	CU_ASSERT_EQUAL(epoll_wait(ep, &ev, 1, 0), 1);
	/* the handler runs the async-signal-safe one, and only it */
	raise(SIGUSR1);
	CU_ASSERT_EQUAL(sig_ret, 1);
	CU_ASSERT_EQUAL(atomic_load(&a.runs), 1);
	CU_ASSERT_EQUAL(a.in_handler, 1);
	CU_ASSERT_EQUAL(atomic_load(&b.runs), 0);
	raise(SIGUSR1);
	CU_ASSERT_EQUAL(sig_ret, 0); /* exactly once */
	CU_ASSERT_EQUAL(atomic_load(&a.runs), 1);
	/* ordinary progress runs the other and finishes the first */
	rcx_progress(e.ctx);
	CU_ASSERT_EQUAL(atomic_load(&b.runs), 1);
	CU_ASSERT_EQUAL(b.in_handler, 0);
	CU_ASSERT_EQUAL(rcx_test(&safe, &flag, RCX_STATUS_IGNORE), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(rcx_test(&plain, &flag, RCX_STATUS_IGNORE), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(atomic_load(&a.runs), 1);
	CU_ASSERT_EQUAL(atomic_load(&b.runs), 1);
	CU_ASSERT_EQUAL(epoll_wait(ep, &ev, 1, 0), 0); /* drained */
	/* without the key, ordinary progress runs them as usual */
	r = done_send(&e, 82);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &a, 0, RCX_STATUS_IGNORE, safe), 0);
	rcx_progress(e.ctx);
	CU_ASSERT_EQUAL(atomic_load(&a.runs), 2);
	CU_ASSERT_EQUAL(a.in_handler, 0);
	CU_ASSERT_TRUE(wait_creq(&e, &safe, RCX_STATUS_IGNORE));
	sigaction(SIGUSR1, &old, NULL);
	close(ep);
	rcx_req_free(&safe);
	rcx_req_free(&plain);
	env_close(&e);
}

/* ---- persistent continuations */

struct pers {
	atomic_int runs;
	int bad;
	int iter;
	int *data;
	struct rcx_status *sts;
};

static void pers_cb(struct rcx_status *sts, void *arg)
{
	struct pers *p = arg;

	/* receive then send, both to self, this iteration's value */
	if (sts != p->sts || sts[0].error || sts[0].tag != 90 ||
	    sts[0].count != sizeof(int) || sts[1].error || *p->data != p->iter)
		p->bad++;
	atomic_fetch_add(&p->runs, 1);
}

#define RESTARTS 1000

static void test_persistent(void)
{
	struct env e;
	struct rcx_req *cr, *pr[2], *keep[2], *r;
	struct rcx_status sts[2], st;
	struct pers p = { 0 };
	struct rec other = { 0 };
	atomic_int once = 0;
	int sbuf = 0, rbuf = -1, i, flag;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	p.data = &rbuf;
	p.sts = sts;
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(rcx_recv_init(e.g, &rbuf, sizeof(rbuf), 0, 90, &pr[0]),
			0);
	CU_ASSERT_EQUAL(rcx_send_init(e.g, &sbuf, sizeof(sbuf), 0, 90, &pr[1]),
			0);
	keep[0] = pr[0];
	keep[1] = pr[1];
	/* attached once, before the first start */
	CU_ASSERT_EQUAL(rcx_continueall(2, pr, pers_cb, &p, RCX_CONT_PERSISTENT,
					sts, cr),
			0);
	CU_ASSERT_PTR_EQUAL(pr[0], keep[0]); /* persistent: still valid */
	CU_ASSERT_PTR_EQUAL(pr[1], keep[1]);
	for (i = 0; i < RESTARTS; i++) {
		p.iter = sbuf = i;
		CU_ASSERT_EQUAL(rcx_startall(2, pr), 0);
		if (!wait_creq(&e, &cr, &st))
			break;
		if (atomic_load(&p.runs) != i + 1 || st.count != 1)
			break;
		/* the continuation took the completions: both inactive */
		CU_ASSERT_EQUAL(rcx_test(&pr[0], &flag, RCX_STATUS_IGNORE), 0);
		CU_ASSERT_EQUAL(flag, 1);
	}
	CU_ASSERT_EQUAL(i, RESTARTS);
	CU_ASSERT_EQUAL(atomic_load(&p.runs), RESTARTS);
	CU_ASSERT_EQUAL(p.bad, 0);
	/* no start, no run */
	rcx_progress(e.ctx);
	CU_ASSERT_EQUAL(atomic_load(&p.runs), RESTARTS);

	/* attaching to an active request that has one: an error */
	CU_ASSERT_EQUAL(rcx_start(pr[0]), 0);
	r = pr[0];
	CU_ASSERT_EQUAL(
		rcx_continue(&r, rec_cb, &other, 0, RCX_STATUS_IGNORE, cr),
		RCX_ERR_CONT_ATTACHED);
	CU_ASSERT_EQUAL(rcx_start(pr[1]), 0);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&p.runs), RESTARTS + 1);

	/* freeing the receive: the continuation stays on the send alone */
	CU_ASSERT_EQUAL(rcx_req_free(&pr[0]), 0);
	p.iter = rbuf; /* nothing is received any more */
	CU_ASSERT_EQUAL(rcx_start(pr[1]), 0);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&p.runs), RESTARTS + 2);

	/* attaching another while inactive detaches the first */
	r = pr[1];
	CU_ASSERT_EQUAL(
		rcx_continue(&r, count_cb, &once, 0, RCX_STATUS_IGNORE, cr), 0);
	CU_ASSERT_EQUAL(rcx_start(pr[1]), 0);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&once), 1);
	CU_ASSERT_EQUAL(atomic_load(&p.runs), RESTARTS + 2);
	/* the non-persistent one ran; no continuation is left */
	CU_ASSERT_EQUAL(rcx_start(pr[1]), 0);
	CU_ASSERT_EQUAL(rcx_wait(&pr[1], &st), 0);
	CU_ASSERT_EQUAL(st.tag, 90);
	CU_ASSERT_EQUAL(atomic_load(&once), 1);

	/* persistent over non-persistent requests only: runs once */
	r = done_send(&e, 91);
	CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &once, RCX_CONT_PERSISTENT,
				     RCX_STATUS_IGNORE, cr),
			0);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&once), 2);
	for (i = 0; i < 5; i++)
		rcx_progress(e.ctx);
	CU_ASSERT_EQUAL(atomic_load(&once), 2);
	CU_ASSERT_EQUAL(rcx_req_free(&pr[1]), 0);
	CU_ASSERT_EQUAL(rcx_req_free(&cr), 0);
	env_close(&e);
}

/* A persistent continuation freed with its requests disappears unrun. */
static void test_persistent_free(void)
{
	struct env e;
	struct rcx_req *cr, *pr, *r;
	atomic_int runs = 0;
	int buf = 0, flag;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL(rcx_recv_init(e.g, &buf, sizeof(buf), 0, 95, &pr), 0);
	r = pr;
	CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs, RCX_CONT_PERSISTENT,
				     RCX_STATUS_IGNORE, cr),
			0);
	/* registered: the continuation request waits for the start */
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, RCX_STATUS_IGNORE), 0);
	CU_ASSERT_EQUAL(flag, 0);
	CU_ASSERT_EQUAL(rcx_req_free(&pr), 0);
	/* its only request freed: gone, and the request completes */
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, RCX_STATUS_IGNORE), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(atomic_load(&runs), 0);
	CU_ASSERT_EQUAL(rcx_req_free(&cr), 0);
	env_close(&e);
}

static const CU_TestInfo tests[] = {
	{ "bad_input", test_bad_input },
	{ "basic", test_basic },
	{ "status_error", test_status_error },
	{ "flag_immediate", test_immediate },
	{ "info_enqueue_complete", test_enqueue_complete },
	{ "info_poll_only", test_poll_only },
	{ "info_max_poll", test_max_poll },
	{ "info_thread_any", test_thread_any },
	{ "info_thread_application", test_thread_application },
	{ "info_async_signal_safe", test_signal_safe },
	{ "persistent_1000_restarts", test_persistent },
	{ "persistent_freed", test_persistent_free },
	{ "continueall_64_mixed", test_continueall_mixed },
	{ "nesting", test_nesting },
	{ "callback_posts_work", test_callback_posts },
	{ "teardown_ecanceled", test_teardown },
	{ "threads_4", test_threads },
	{ "wait_woken", test_wait_wakeup },
	{ "event_fd", test_event_fd },
	{ "ctx_wait_queued", test_ctx_wait_queued },
	{ "ctx_wait_creq_complete", test_ctx_wait_creq },
	{ "ctx_wait_other_thread", test_ctx_wait_other_thread },
	{ "wire_pingpong", test_wire_pingpong },
	{ "wire_mixed_64", test_wire_mixed },
	{ "wire_progress_thread", test_wire_thread },
	{ "wire_chan_persistent", test_wire_chan },
	{ "wire_chan_ibind", test_wire_chan_ibind },
	{ "wire_now", test_wire_now },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_cont = {
	"cont", TU_DEVICE, suite_init, suite_cleanup, tests,
};
