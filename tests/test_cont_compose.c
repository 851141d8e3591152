/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Continuations put together: one continuation over 64 requests of mixed
 * kinds, continuations on continuation requests, callbacks that post work
 * and attach continuations, teardown with continuations outstanding, and
 * bad input (test_cont.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <rcx/rcx.h>
#include "test_cont.h"
#include "tu.h"

/* ---- continueall over 64 requests of mixed kinds */

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

void test_continueall_mixed(void)
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

void test_nesting(void)
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
	atomic_store(&rec_seq, 0);
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
	int flag = -1;

	(void)sts;
	cb_enter();
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
	cb_leave();
}

void test_callback_posts(void)
{
	struct env e;
	struct chain c = { 0 };
	struct rcx_req *r;
	struct rcx_status st;

	if (!env_open(&e, false)) {
		CU_FAIL("no context");
		return;
	}
	atomic_store(&rec_max_depth, 0);
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
	CU_ASSERT_EQUAL(atomic_load(&rec_max_depth), 1); /* never re-entered */
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

void test_teardown(void)
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

void test_bad_input(void)
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
