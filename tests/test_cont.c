/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Continuations (include/rcx/cont.h): registration on every request kind
 * there is (point-to-point, persistent point-to-point, continuation
 * requests), each info key and flag with a check that fails if it were
 * ignored, persistent continuations over many restarts, continueall over
 * 64 requests of mixed kinds, nesting, callbacks posting work, teardown,
 * four threads at once, the event fds, a signal handler, and bad input.
 *
 * Most tests run in one process on a singleton world: a receive stays
 * active until the test sends to itself, which completes it inside the
 * send call, so the test decides when each operation completes. The
 * "wire_*" tests run the "cont" peer role in a 2-rank job through the
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
#include "tu.h"
#include "tu_mp.h"

#define WAIT_MS 20000 /* a wait for something that must happen */

struct env {
	struct rcx_ctx *ctx;
	struct rcx_group *g;
};

static char *saved_bootstrap;

/* What a callback saw; cb_data of rec_cb. */
struct rec {
	atomic_int runs;
	int order; /* value of seq when it ran */
	bool had_status;
	struct rcx_status st[4]; /* the first statuses it was given */
	pthread_t thr;
	int in_handler;
	int depth; /* callbacks running on this thread, itself included */
};

static atomic_int seq;
static __thread int cb_depth;
static atomic_int max_depth;
static volatile sig_atomic_t in_handler;

static void rec_cb(struct rcx_status *sts, void *arg)
{
	struct rec *r = arg;
	int d = ++cb_depth, m = atomic_load(&max_depth);

	while (d > m && !atomic_compare_exchange_weak(&max_depth, &m, d))
		;
	r->order = atomic_fetch_add(&seq, 1);
	r->had_status = sts != NULL;
	if (sts)
		memcpy(r->st, sts, sizeof(r->st[0]));
	r->thr = pthread_self();
	r->in_handler = in_handler;
	r->depth = d;
	atomic_fetch_add(&r->runs, 1);
	cb_depth--;
}

static void count_cb(struct rcx_status *sts, void *arg)
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

static bool env_open(struct env *e, bool mt)
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

static void env_close(struct env *e)
{
	if (e->g)
		rcx_group_free(&e->g);
	if (e->ctx)
		CU_ASSERT_EQUAL(rcx_ctx_destroy(e->ctx), 0);
	e->ctx = NULL;
}

/* A continuation request with up to three info keys (NULL: none). */
static int creq(struct env *e, struct rcx_req **out, const char *k1,
		const char *v1, const char *k2, const char *v2, const char *k3,
		const char *v3)
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

/* A receive from self that stays active until send_self(tag). */
static struct rcx_req *recv_self(struct env *e, int tag, void *buf, size_t len)
{
	struct rcx_req *r = NULL;

	CU_ASSERT_EQUAL(rcx_irecv(e->g, buf, len, 0, tag, &r), 0);
	return r;
}

static void send_self(struct env *e, int tag, const void *buf, size_t len)
{
	CU_ASSERT_EQUAL(rcx_send(e->g, buf, len, 0, tag), 0);
}

/* A send to self with no receive: complete (unreported) at once. */
static struct rcx_req *done_send(struct env *e, int tag)
{
	static const char b[8];
	struct rcx_req *r = NULL;

	CU_ASSERT_EQUAL(rcx_isend(e->g, b, sizeof(b), 0, tag, &r), 0);
	return r;
}

/* Wait for the continuation request; false if it did not complete. */
static bool wait_creq(struct env *e, struct rcx_req **cr, struct rcx_status *st)
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

static bool wait_runs(atomic_int *runs, int want, int ms)
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

/* ---- continueall over 64 requests of mixed kinds */

#define MIXED 64

struct mixed {
	atomic_int runs;
	int bad;
	struct rcx_status *sts;
	int *tags;
};

static void mixed_cb(struct rcx_status *sts, void *arg)
{
	struct mixed *m = arg;
	int i;

	for (i = 0; i < MIXED; i++)
		if (sts[i].error ||
		    (m->tags[i] >= 0 && sts[i].tag != m->tags[i]))
			m->bad++;
	atomic_fetch_add(&m->runs, 1);
}

static void test_continueall_mixed(void)
{
	struct env e;
	struct rcx_req *cr, *inner, *reqs[MIXED], *orig[MIXED], *x;
	struct rcx_status sts[MIXED];
	struct mixed m = { 0 };
	int tags[MIXED], rb[MIXED], one = 1, i, order[MIXED];
	atomic_int inner_runs = 0;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	m.sts = sts;
	m.tags = tags;
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &inner, 0, 0, 0, 0, 0, 0), 0);
	for (i = 0; i < MIXED; i++) {
		tags[i] = 100 + i;
		if (i == 0) {
			/* a continuation request, waiting on a receive */
			x = recv_self(&e, tags[i], &rb[i], sizeof(int));
			CU_ASSERT_EQUAL(rcx_continue(&x, count_cb, &inner_runs,
						     0, RCX_STATUS_IGNORE,
						     inner),
					0);
			reqs[i] = inner;
			tags[i] = RCX_ANY_TAG;
			continue;
		}
		switch (i % 8) {
		case 1: /* a send, complete at once */
			reqs[i] = done_send(&e, tags[i]);
			break;
		case 2: /* a persistent receive, started */
		case 3:
			CU_ASSERT_EQUAL(rcx_recv_init(e.g, &rb[i], sizeof(int),
						      0, tags[i], &reqs[i]),
					0);
			CU_ASSERT_EQUAL(rcx_start(reqs[i]), 0);
			break;
		case 4: /* a persistent send, started: complete at once */
			CU_ASSERT_EQUAL(rcx_send_init(e.g, &one, sizeof(one), 0,
						      1000 + i, &reqs[i]),
					0);
			CU_ASSERT_EQUAL(rcx_start(reqs[i]), 0);
			tags[i] = 1000 + i;
			break;
		default: /* receives */
			reqs[i] = recv_self(&e, tags[i], &rb[i], sizeof(int));
			break;
		}
	}
	memcpy(orig, reqs, sizeof(reqs));
	CU_ASSERT_EQUAL(rcx_continueall(MIXED, reqs, mixed_cb, &m, 0, sts, cr),
			0);
	for (i = 0; i < MIXED; i++) {
		bool pers = i == 0 || i % 8 == 2 || i % 8 == 3 || i % 8 == 4;

		if (pers) {
			CU_ASSERT_PTR_EQUAL(reqs[i], orig[i]);
		} else {
			CU_ASSERT_PTR_NULL(reqs[i]);
		}
	}
	/* complete the receives in a scrambled order; the last one fires */
	for (i = 0; i < MIXED; i++)
		order[i] = (i * 37) % MIXED;
	for (i = 0; i < MIXED; i++) {
		int k = order[i];

		if (k % 8 == 1 || k % 8 == 4)
			continue;
		rcx_progress(e.ctx);
		CU_ASSERT_EQUAL(atomic_load(&m.runs), 0);
		send_self(&e, 100 + k, &k, sizeof(k));
	}
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&m.runs), 1);
	CU_ASSERT_EQUAL(atomic_load(&inner_runs), 1);
	CU_ASSERT_EQUAL(m.bad, 0);
	CU_ASSERT_EQUAL(sts[0].count, 1); /* the inner request: one ran */
	for (i = 1; i < MIXED; i++) {
		if (i % 8 != 1 && i % 8 != 4) {
			CU_ASSERT_EQUAL(rb[i], i);
			CU_ASSERT_EQUAL(sts[i].count, sizeof(int));
		}
	}
	for (i = 0; i < MIXED; i++)
		if (reqs[i] && reqs[i] != inner)
			CU_ASSERT_EQUAL(rcx_req_free(&reqs[i]), 0);
	rcx_req_free(&inner);
	rcx_req_free(&cr);
	env_close(&e);
}

/* ---- nesting: continuations on continuation requests */

static void test_nesting(void)
{
	struct env e;
	struct rcx_req *c1, *c2, *c3, *r, *x;
	struct rcx_status st2;
	struct rec in[3] = { 0 }, mid = { 0 }, top = { 0 };
	int v[3], i, flag;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	atomic_store(&seq, 0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &c1, 0, 0, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &c2, 0, 0, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &c3, 0, 0, 0, 0, 0, 0), 0);
	for (i = 0; i < 3; i++) {
		r = recv_self(&e, 200 + i, &v[i], sizeof(int));
		CU_ASSERT_EQUAL(rcx_continue(&r, rec_cb, &in[i], 0,
					     RCX_STATUS_IGNORE, c1),
				0);
	}
	/* c1 -> c2 -> c3: each runs after everything below it */
	x = c1;
	CU_ASSERT_EQUAL(rcx_continue(&x, rec_cb, &mid, 0, &st2, c2), 0);
	CU_ASSERT_PTR_EQUAL(x, c1);
	x = c2;
	CU_ASSERT_EQUAL(
		rcx_continue(&x, rec_cb, &top, 0, RCX_STATUS_IGNORE, c3), 0);
	/* a cycle is refused */
	x = c3;
	CU_ASSERT_EQUAL(
		rcx_continue(&x, rec_cb, &top, 0, RCX_STATUS_IGNORE, c1),
		-EINVAL);
	x = c1;
	CU_ASSERT_EQUAL(
		rcx_continue(&x, rec_cb, &top, 0, RCX_STATUS_IGNORE, c1),
		-EINVAL);
	for (i = 2; i >= 0; i--)
		send_self(&e, 200 + i, &i, sizeof(i));
	CU_ASSERT_TRUE(wait_creq(&e, &c3, RCX_STATUS_IGNORE));
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(atomic_load(&in[i].runs), 1);
		CU_ASSERT_TRUE(in[i].order < mid.order);
	}
	CU_ASSERT_EQUAL(atomic_load(&mid.runs), 1);
	CU_ASSERT_EQUAL(atomic_load(&top.runs), 1);
	CU_ASSERT_TRUE(mid.order < top.order);
	CU_ASSERT_EQUAL(st2.count, 3); /* c1's status: three ran */
	/* the nested ones took their requests' completions */
	CU_ASSERT_EQUAL(rcx_test(&c1, &flag, RCX_STATUS_IGNORE), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(rcx_req_free(&c1), 0);
	CU_ASSERT_EQUAL(rcx_req_free(&c2), 0);
	CU_ASSERT_EQUAL(rcx_req_free(&c3), 0);
	env_close(&e);
}

/* ---- callbacks that post work and attach continuations */

#define CHAIN 100

struct chain {
	struct env *e;
	struct rcx_req *cr;
	atomic_int runs;
	int left;
	int err;
	int inner_flag;
	int buf;
};

static void chain_cb(struct rcx_status *sts, void *arg)
{
	struct chain *c = arg;
	struct rcx_req *r = NULL;
	int d = ++cb_depth, m = atomic_load(&max_depth), flag = -1;

	(void)sts;
	while (d > m && !atomic_compare_exchange_weak(&max_depth, &m, d))
		;
	atomic_fetch_add(&c->runs, 1);
	if (--c->left > 0) {
		/* a new receive, its continuation (IMMEDIATE, complete at
		 * once: still not run in here), and the send completing it */
		c->err |=
			rcx_irecv(c->e->g, &c->buf, sizeof(c->buf), 0, 300, &r);
		c->err |= rcx_send(c->e->g, &c->left, sizeof(c->left), 0, 300);
		c->err |= rcx_continue(&r, chain_cb, c, RCX_CONT_IMMEDIATE,
				       RCX_STATUS_IGNORE, c->cr);
		/* testing the continuation request from here runs nothing */
		c->err |= rcx_test(&c->cr, &flag, RCX_STATUS_IGNORE);
		c->inner_flag |= flag;
	}
	cb_depth--;
}

static void test_callback_posts(void)
{
	struct env e;
	struct chain c = { 0 };
	struct rcx_req *r;
	struct rcx_status st;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	atomic_store(&max_depth, 0);
	c.e = &e;
	c.left = CHAIN;
	CU_ASSERT_EQUAL_FATAL(creq(&e, &c.cr, 0, 0, 0, 0, 0, 0), 0);
	r = done_send(&e, 299);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, chain_cb, &c, 0, RCX_STATUS_IGNORE, c.cr), 0);
	CU_ASSERT_TRUE(wait_creq(&e, &c.cr, &st));
	CU_ASSERT_EQUAL(atomic_load(&c.runs), CHAIN);
	CU_ASSERT_EQUAL(st.count, CHAIN);
	CU_ASSERT_EQUAL(c.err, 0);
	CU_ASSERT_EQUAL(c.inner_flag, 0);
	CU_ASSERT_EQUAL(atomic_load(&max_depth), 1); /* never re-entered */
	rcx_req_free(&c.cr);
	env_close(&e);
}

/* ---- teardown */

struct td {
	atomic_int runs;
	int err;
	int reg_ret;
	struct rcx_req *cr;
};

static void td_cb(struct rcx_status *sts, void *arg)
{
	struct td *t = arg;
	struct rcx_req *r = NULL;

	t->err = sts ? sts[0].error : 1;
	atomic_fetch_add(&t->runs, 1);
	/* a registration from a callback at teardown is refused */
	if (t->err == -ECANCELED)
		t->reg_ret =
			rcx_continue(&r, td_cb, t, 0, RCX_STATUS_IGNORE, t->cr);
}

static void test_teardown(void)
{
	struct env e;
	struct rcx_req *cr, *po, *cr_in, *pr, *idle, *r, *x;
	struct rcx_status st[6];
	struct td pend = { 0 }, pers = { 0 }, ready = { 0 }, nested = { 0 },
		  inner = { 0 }, quiet = { 0 };
	int buf[4];

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, 0, 0, 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(
		creq(&e, &po, RCX_CONT_INFO_POLL_ONLY, "true", 0, 0, 0, 0), 0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr_in, 0, 0, 0, 0, 0, 0), 0);
	pend.cr = pers.cr = ready.cr = nested.cr = inner.cr = quiet.cr = cr;
	/* an operation that never completes */
	r = recv_self(&e, 400, &buf[0], sizeof(int));
	CU_ASSERT_EQUAL(rcx_continue(&r, td_cb, &pend, 0, &st[0], cr), 0);
	/* a persistent continuation, armed by a start */
	CU_ASSERT_EQUAL(rcx_recv_init(e.g, &buf[1], sizeof(int), 0, 401, &pr),
			0);
	x = pr;
	CU_ASSERT_EQUAL(
		rcx_continue(&x, td_cb, &pers, RCX_CONT_PERSISTENT, &st[1], cr),
		0);
	CU_ASSERT_EQUAL(rcx_start(pr), 0);
	/* complete and queued, waiting for a test (poll-only) */
	r = done_send(&e, 402);
	CU_ASSERT_EQUAL(rcx_continue(&r, td_cb, &ready, 0, &st[2], po), 0);
	/* nested: cr_in waits for a receive; cr waits for cr_in */
	r = recv_self(&e, 403, &buf[2], sizeof(int));
	CU_ASSERT_EQUAL(rcx_continue(&r, td_cb, &inner, 0, &st[3], cr_in), 0);
	x = cr_in;
	CU_ASSERT_EQUAL(rcx_continue(&x, td_cb, &nested, 0, &st[4], cr), 0);
	/* an idle persistent continuation (ran, not re-armed): nothing
	 * pending, it does not run again */
	CU_ASSERT_EQUAL(rcx_recv_init(e.g, &buf[3], sizeof(int), 0, 404, &idle),
			0);
	x = idle;
	CU_ASSERT_EQUAL(rcx_continue(&x, td_cb, &quiet, RCX_CONT_PERSISTENT,
				     &st[5], cr),
			0);
	CU_ASSERT_EQUAL(rcx_start(idle), 0);
	send_self(&e, 404, &buf[3], sizeof(int));
	CU_ASSERT_EQUAL(rcx_progress(e.ctx) >= 0, 1);
	CU_ASSERT_EQUAL(atomic_load(&quiet.runs), 1);
	CU_ASSERT_EQUAL(atomic_load(&pend.runs) + atomic_load(&pers.runs) +
				atomic_load(&ready.runs) +
				atomic_load(&inner.runs),
			0);
	/* the context goes with everything in it */
	CU_ASSERT_EQUAL(rcx_ctx_destroy(e.ctx), 0);
	CU_ASSERT_EQUAL(atomic_load(&pend.runs), 1);
	CU_ASSERT_EQUAL(pend.err, -ECANCELED);
	CU_ASSERT_EQUAL(st[0].error, -ECANCELED);
	CU_ASSERT_EQUAL(atomic_load(&pers.runs), 1);
	CU_ASSERT_EQUAL(pers.err, -ECANCELED);
	CU_ASSERT_EQUAL(atomic_load(&ready.runs), 1);
	CU_ASSERT_EQUAL(ready.err, 0); /* it had completed */
	CU_ASSERT_EQUAL(atomic_load(&inner.runs), 1);
	CU_ASSERT_EQUAL(inner.err, -ECANCELED);
	CU_ASSERT_EQUAL(atomic_load(&nested.runs), 1);
	CU_ASSERT_EQUAL(atomic_load(&quiet.runs), 1);
	CU_ASSERT_EQUAL(quiet.err, 0);
	CU_ASSERT_EQUAL(pend.reg_ret, -ECANCELED);
	CU_ASSERT_EQUAL(pers.reg_ret, -ECANCELED);
}

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

static void test_threads(void)
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

static void test_wait_wakeup(void)
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

static void test_event_fd(void)
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

/* ---- bad input: the named error, nothing changed, cb never called */

static union {
	unsigned long long align;
	unsigned char b[4096];
} junk;
#define JUNK(type) ((type *)(void *)&junk)

static void bad_info(struct env *e, const char *k, const char *v, int want)
{
	struct rcx_req *cr = JUNK(struct rcx_req);

	CU_ASSERT_EQUAL(creq(e, &cr, k, v, 0, 0, 0, 0), want);
	CU_ASSERT_PTR_EQUAL(cr, JUNK(struct rcx_req));
}

static void test_bad_input(void)
{
	struct env e, e2;
	struct rcx_req *cr, *cr2, *r, *keep, *pr, *x, *two[2], *other;
	struct rcx_status st;
	atomic_int runs = 0;
	int v = 0, flag;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	/* rcx_continue_init */
	CU_ASSERT_EQUAL(rcx_continue_init(NULL, NULL, &cr), -EINVAL);
	CU_ASSERT_EQUAL(rcx_continue_init(e.ctx, NULL, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_continue_init(JUNK(struct rcx_ctx), NULL, &cr),
			-EINVAL);
	bad_info(&e, RCX_CONT_INFO_POLL_ONLY, "maybe", -EINVAL);
	bad_info(&e, RCX_CONT_INFO_THREAD, "gpu", -EINVAL);
	bad_info(&e, RCX_CONT_INFO_THREAD, "any", -EINVAL); /* not MT */
	bad_info(&e, RCX_CONT_INFO_ENQUEUE_COMPLETE, "1", -EINVAL);
	bad_info(&e, RCX_CONT_INFO_MAX_POLL, "0", -EINVAL);
	bad_info(&e, RCX_CONT_INFO_MAX_POLL, "-2", -EINVAL);
	bad_info(&e, RCX_CONT_INFO_MAX_POLL, "lots", -EINVAL);
	bad_info(&e, RCX_CONT_INFO_ASYNC_SIGNAL_SAFE, "yes", -EINVAL);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr, "some_other_key", "whatever",
				   RCX_CONT_INFO_MAX_POLL, "-1", 0, 0),
			      0);
	CU_ASSERT_EQUAL_FATAL(creq(&e, &cr2, 0, 0, 0, 0, 0, 0), 0);

	/* rcx_continue on an active receive: each error leaves it alone */
	r = keep = recv_self(&e, 700, &v, sizeof(v));
	CU_ASSERT_EQUAL(rcx_continue(NULL, count_cb, &runs, 0, &st, cr),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_continue(&r, NULL, &runs, 0, &st, cr), -EINVAL);
	CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs, 0x4, &st, cr),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs, 0, &st, NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(
		rcx_continue(&r, count_cb, &runs, 0, &st, JUNK(struct rcx_req)),
		-EINVAL);
	other = done_send(&e, 701);
	CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs, 0, &st, other),
			-EINVAL); /* not a continuation request */
	x = JUNK(struct rcx_req);
	CU_ASSERT_EQUAL(rcx_continue(&x, count_cb, &runs, 0, &st, cr), -EINVAL);
	/* a request of another context */
	if (env_open(&e2, false)) {
		CU_ASSERT_EQUAL_FATAL(creq(&e2, &x, 0, 0, 0, 0, 0, 0), 0);
		CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs, 0, &st, x),
				-EINVAL);
		rcx_req_free(&x);
		env_close(&e2);
	}
	/* rcx_continueall */
	CU_ASSERT_EQUAL(rcx_continueall(-1, &r, count_cb, &runs, 0, &st, cr),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_continueall(1, NULL, count_cb, &runs, 0, &st, cr),
			-EINVAL);
	two[0] = two[1] = r;
	CU_ASSERT_EQUAL(rcx_continueall(2, two, count_cb, &runs, 0, NULL, cr),
			-EINVAL); /* twice */
	CU_ASSERT_PTR_EQUAL(two[0], keep);
	CU_ASSERT_PTR_EQUAL(two[1], keep);
	two[1] = JUNK(struct rcx_req);
	CU_ASSERT_EQUAL(rcx_continueall(2, two, count_cb, &runs, 0, NULL, cr),
			-EINVAL); /* one bad: none attached */
	CU_ASSERT_PTR_EQUAL(two[0], keep);
	CU_ASSERT_PTR_EQUAL(r, keep);
	CU_ASSERT_EQUAL(atomic_load(&runs), 0);
	/* nothing was attached: the request still tests as before */
	CU_ASSERT_EQUAL(rcx_test(&r, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 0);
	send_self(&e, 700, &v, sizeof(v));
	CU_ASSERT_EQUAL(rcx_wait(&r, &st), 0);
	CU_ASSERT_EQUAL(st.tag, 700);
	CU_ASSERT_EQUAL(rcx_test(&cr, &flag, RCX_STATUS_IGNORE), 0);
	CU_ASSERT_EQUAL(flag, 1); /* still inactive */
	CU_ASSERT_EQUAL(atomic_load(&runs), 0);

	/* a second continuation on a request */
	CU_ASSERT_EQUAL(rcx_recv_init(e.g, &v, sizeof(v), 0, 702, &pr), 0);
	x = pr;
	CU_ASSERT_EQUAL(
		rcx_continue(&x, count_cb, &runs, 0, RCX_STATUS_IGNORE, cr), 0);
	CU_ASSERT_EQUAL(rcx_continue(&x, count_cb, &runs, RCX_CONT_PERSISTENT,
				     RCX_STATUS_IGNORE, cr2),
			RCX_ERR_CONT_ATTACHED);
	CU_ASSERT_EQUAL(rcx_start(pr), 0);
	send_self(&e, 702, &v, sizeof(v));
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	CU_ASSERT_EQUAL(atomic_load(&runs), 1);
	CU_ASSERT_TRUE(wait_creq(&e, &cr2, RCX_STATUS_IGNORE));
	rcx_req_free(&pr);

	/* n = 0: nothing to wait for, runs */
	CU_ASSERT_EQUAL(rcx_continueall(0, NULL, count_cb, &runs,
					RCX_CONT_IMMEDIATE, NULL, cr),
			0);
	CU_ASSERT_EQUAL(atomic_load(&runs), 2);
	CU_ASSERT_TRUE(wait_creq(&e, &cr, RCX_STATUS_IGNORE));
	/* a NULL handle counts as complete */
	x = NULL;
	CU_ASSERT_EQUAL(
		rcx_continue(&x, count_cb, &runs, RCX_CONT_IMMEDIATE, &st, cr),
		0);
	CU_ASSERT_EQUAL(atomic_load(&runs), 3);
	CU_ASSERT_EQUAL(st.error, 0);
	CU_ASSERT_EQUAL(st.count, 0);

	/* the other new calls */
	CU_ASSERT_EQUAL(rcx_cont_event_fd(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_cont_event_fd(JUNK(struct rcx_ctx)), -EINVAL);
	CU_ASSERT_EQUAL(rcx_cont_progress_signal(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_cont_progress_signal(JUNK(struct rcx_ctx)),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_cont_progress_signal(e.ctx), 0);
	CU_ASSERT_EQUAL(rcx_start(cr), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rcx_req_free(&other), 0);
	CU_ASSERT_EQUAL(rcx_req_free(&cr), 0);
	/* a freed continuation request is not one any more */
	r = keep = done_send(&e, 703);
	x = cr2;
	CU_ASSERT_EQUAL(rcx_req_free(&cr2), 0);
	CU_ASSERT_EQUAL(rcx_continue(&r, count_cb, &runs, 0, &st, x), -EINVAL);
	CU_ASSERT_PTR_EQUAL(r, keep);
	CU_ASSERT_EQUAL(atomic_load(&runs), 3);
	rcx_req_free(&r);
	env_close(&e);
}

/* ---- across processes: completions from the device */

struct job {
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	int rank;
};

#define PINGS 1000

struct pp {
	struct job *j;
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
static void sc_pingpong(struct job *j)
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

static void sc_mixed(struct job *j)
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

static void sc_thread(struct job *j)
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

static const struct {
	const char *name;
	void (*run)(struct job *j);
	bool mt;
} scenarios[] = {
	{ "pingpong", sc_pingpong, false },
	{ "mixed", sc_mixed, false },
	{ "thread", sc_thread, true },
};

static int peer_main(int argc, char **argv)
{
	struct rcx_ctx_attr a = { 0 };
	struct job j = { NULL, NULL, -1 };
	size_t i, n = sizeof(scenarios) / sizeof(scenarios[0]);

	if (argc < 1) {
		fprintf(stderr, "cont peer: no scenario\n");
		return 2;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(scenarios[i].name, argv[0]))
			break;
	if (i == n) {
		fprintf(stderr, "cont peer: unknown scenario %s\n", argv[0]);
		return 2;
	}
	a.thread_level =
		scenarios[i].mt ? RCX_THREAD_MULTIPLE : RCX_THREAD_SINGLE;
	if (!TP_CHECK_OK(rcx_ctx_create(&a, &j.ctx)))
		return tp_exit();
	if (TP_CHECK_OK(rcx_group_world(j.ctx, &j.g))) {
		j.rank = rcx_group_rank(j.g);
		tp_set_rank(j.rank);
		if (TP_CHECK_EQ(rcx_group_size(j.g), 2))
			scenarios[i].run(&j);
		TP_CHECK_OK(rcx_group_barrier(j.g));
		TP_CHECK_OK(rcx_group_free(&j.g));
	}
	TP_CHECK_OK(rcx_ctx_destroy(j.ctx));
	return tp_exit();
}

const struct tu_peer tu_peer_cont = { "cont", peer_main };

static void job(const char *scenario, int timeout_s)
{
	char *b = saved_bootstrap ? strdup(saved_bootstrap) : NULL;

	/* the job's ranks bootstrap through the launcher */
	unsetenv("RCX_BOOTSTRAP");
	CU_ASSERT_EQUAL(tu_mp_run(2, "cont", scenario, timeout_s), 0);
	setenv("RCX_BOOTSTRAP", "singleton", 1);
	free(b);
}

static void test_wire_pingpong(void)
{
	job("pingpong", 300);
}

static void test_wire_mixed(void)
{
	job("mixed", 180);
}

static void test_wire_thread(void)
{
	job("thread", 180);
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
	{ "wire_pingpong", test_wire_pingpong },
	{ "wire_mixed_64", test_wire_mixed },
	{ "wire_progress_thread", test_wire_thread },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_cont = {
	"cont", TU_DEVICE, suite_init, suite_cleanup, tests,
};
