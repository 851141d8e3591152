/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "p2p_tx": the account of the send bounce slots when eager sends
 * go unsignaled (lib/core/conn_tx.c). Rank 0 sends a run of eager
 * messages whose last ones went unsignaled; every slot comes back to the
 * context's pool, whether a later signaled send returns them or the
 * connection breaks while they are held.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "lib/core/core.h"
#include "lib/core/conn_int.h"
#include "tu.h"
#include "tu_mp.h"

enum {
	TX_TAG = 40, /* the run of messages */
	TX_ACK,	     /* rank 1 took them all */
	TX_NEVER,    /* a receive the break ends */
	TX_IDLE,     /* a receive tested while nothing comes */
	TX_RUN = 21, /* a run: an unsignaled tail after a signaled one */
};

static int free_slots(struct rcx_ctx *ctx)
{
	struct rcx__txslot *s;
	int n = 0;

	for (s = ctx->tx_free; s; s = s->next)
		n++;
	return n;
}

#define TX_LAST (1ull << 63)

/*
 * A run of 8-byte messages from rank 0 to rank 1, its last flagged: at
 * least n of them, up to one that goes unsignaled; or (n 0) up to the
 * next that goes signaled.
 */
static void run_send(struct tp_job *j, int salt, int n)
{
	struct rcx__conn *c = j->g->conns[1];
	bool last = false, sig;
	uint64_t v;
	int i;

	for (i = 0; i < 4 * RCX__TX_SIGNAL_EVERY; i++) {
		/* the next send goes signaled (conn_int.h) */
		sig = c->tx_unsig >= RCX__TX_SIGNAL_EVERY - 1 ||
		      !j->ctx->tx_free || !j->ctx->tx_free->next;
		last = n ? i >= n - 1 && !sig : sig;
		v = (uint64_t)salt << 32 | (uint64_t)i | (last ? TX_LAST : 0);
		if (!TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 1, TX_TAG)))
			return;
		if (last)
			break;
	}
	TP_CHECK(last);
	TP_CHECK_OK(rcx_recv(j->g, &v, sizeof(v), 1, TX_ACK, NULL));
}

static void run_recv(struct tp_job *j, int salt)
{
	uint64_t v;
	int i;

	for (i = 0;; i++) {
		v = 0;
		if (!TP_CHECK_OK(
			    rcx_recv(j->g, &v, sizeof(v), 0, TX_TAG, NULL)))
			return;
		TP_CHECK_EQ(v & ~TX_LAST, (uint64_t)salt << 32 | (uint64_t)i);
		if (v & TX_LAST)
			break;
	}
	TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 0, TX_ACK));
}

/* progress until c holds no slot, within 20 s */
static void settle(struct tp_job *j, struct rcx__conn *c)
{
	long long end = rcx__now_us() + 20000000;

	rcx__lock(j->ctx);
	while ((c->tx_inflight || c->mark_busy) && rcx__now_us() < end) {
		rcx__unlock(j->ctx);
		rcx_progress(j->ctx);
		rcx__lock(j->ctx);
	}
	rcx__unlock(j->ctx);
}

/* every slot of the pool is back, none held unsignaled */
static void check_all_back(struct tp_job *j, struct rcx__conn *c)
{
	rcx__lock(j->ctx);
	TP_CHECK_EQ(c->tx_inflight, 0);
	TP_CHECK_EQ(c->txq, NULL);
	TP_CHECK_EQ(c->tx_unsig, 0);
	TP_CHECK_EQ(free_slots(j->ctx), j->ctx->cfg.tx_depth);
	rcx__unlock(j->ctx);
}

/* the run left an unsignaled tail on c */
static void check_tail_held(struct tp_job *j, struct rcx__conn *c)
{
	rcx__lock(j->ctx);
	TP_CHECK(c->tx_unsig > 0);
	TP_CHECK(free_slots(j->ctx) <= (int)j->ctx->cfg.tx_depth - c->tx_unsig);
	rcx__unlock(j->ctx);
}

/* rank 0: a first run, that left a tail held on its connection to 1 */
static struct rcx__conn *tail_sent(struct tp_job *j)
{
	struct rcx__conn *c = j->g->conns[1];

	if (!TP_CHECK(c != NULL))
		return NULL;
	run_send(j, 1, TX_RUN);
	check_tail_held(j, c);
	return c;
}

/*
 * Two runs: the second's signaled send returns the first's tail; a
 * third's tail goes back with the clean exit (its mark).
 */
static void sc_tail(struct tp_job *j)
{
	struct rcx__conn *c;

	if (j->rank == 1) {
		run_recv(j, 1);
		run_recv(j, 2);
		run_recv(j, 3);
		return;
	}
	c = tail_sent(j);
	if (!c)
		return;
	/* up to a signaled send: it returns the tail before it */
	run_send(j, 2, 0);
	settle(j, c);
	check_all_back(j, c);
	run_send(j, 3, TX_RUN);
	check_tail_held(j, c);
}

/*
 * The endpoint breaks with an unsignaled tail held (its sends completed,
 * no completion of theirs to come): the connection fails, a receive
 * posted on it completes once with the error, and every slot comes back.
 */
static void sc_broken(struct tp_job *j)
{
	struct rcx_req *r = NULL;
	struct rcx_status st;
	struct rcx__conn *c;
	uint64_t v;
	int ret;

	if (j->rank == 1) {
		run_recv(j, 1);
		/* rank 0's endpoint ends: this never matches */
		ret = rcx_recv(j->g, &v, sizeof(v), 0, TX_NEVER, NULL);
		TP_CHECK(ret < 0);
		rcx_group_free(&j->g);
		return;
	}
	c = tail_sent(j);
	if (!c)
		return;
	if (!TP_CHECK_OK(rcx_irecv(j->g, &v, sizeof(v), 1, TX_NEVER, &r)))
		return;
	rcx__lock(j->ctx);
	j->ctx->ops->ep_set_error(c->ep);
	rcx__unlock(j->ctx);
	TP_CHECK_OK(rcx_wait(&r, &st));
	TP_CHECK(st.error < 0);
	TP_CHECK(r == NULL);
	settle(j, c);
	check_all_back(j, c);
	TP_CHECK_EQ(c->state, RCX__CONN_FAILED);
	/* the peer learns of it */
	rcx__lock(j->ctx);
	j->ctx->ops->ep_disconnect(c->ep);
	rcx__unlock(j->ctx);
	rcx_group_free(&j->g);
}

/*
 * A pool of 8 slots (RCX_TX_DEPTH, the least) and one connection: an
 * unsignaled tail takes every slot but the last, which goes signaled and
 * returns them all; the sends after it wait for that and all arrive, in
 * order, and every slot comes back.
 */
static void sc_pool(struct tp_job *j)
{
	int depth = (int)j->ctx->cfg.tx_depth, i, n = 3 * depth;
	struct rcx__conn *c = j->g->conns[1];
	uint64_t v;

	if (j->rank == 1) {
		run_recv(j, 1);
		run_recv(j, 2);
		return;
	}
	if (!TP_CHECK(c != NULL) || !TP_CHECK_EQ(depth, 8))
		return;
	/* connected, every slot back, no tail */
	run_send(j, 1, 0);
	settle(j, c);
	check_all_back(j, c);
	for (i = 0; i < n; i++) {
		v = (uint64_t)2 << 32 | (uint64_t)i |
		    (i == n - 1 ? TX_LAST : 0);
		if (!TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 1, TX_TAG)))
			return;
		/* the tail holds all but the pool's last slot */
		if (i == depth - 2)
			TP_CHECK_EQ(c->tx_unsig, depth - 1);
	}
	TP_CHECK_OK(rcx_recv(j->g, &v, sizeof(v), 1, TX_ACK, NULL));
	rcx__lock(j->ctx);
	rcx__conn_tx_mark(c);
	rcx__unlock(j->ctx);
	settle(j, c);
	check_all_back(j, c);
}

/*
 * A test that finds nothing counts no empty poll of its own (req.c): the
 * stat is the passes less those that found something. Rank 0 tests a
 * receive while rank 1 sends nothing (it waits for what rank 0 sends
 * after): each test is one empty poll, past the rest of a progress pass
 * (RCX__CM_PASSES) more than once.
 */
static void sc_empty_polls(struct tp_job *j)
{
	struct rcx_stats s0 = { .size = sizeof(s0) },
			 s1 = { .size = sizeof(s1) };
	struct rcx_req *r = NULL;
	uint64_t v = 0, w = 1;
	int i, flag = 0, n = 1000;

	if (j->rank == 1) {
		TP_CHECK_OK(rcx_recv(j->g, &v, sizeof(v), 0, TX_ACK, NULL));
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 0, TX_IDLE));
		return;
	}
	if (!TP_CHECK_OK(rcx_irecv(j->g, &v, sizeof(v), 1, TX_IDLE, &r)))
		return;
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &s0));
	for (i = 0; i < n && !flag; i++)
		TP_CHECK_OK(rcx_test(&r, &flag, RCX_STATUS_IGNORE));
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, &s1));
	TP_CHECK_EQ(flag, 0);
	TP_CHECK_EQ(s1.empty_polls - s0.empty_polls, (uint64_t)n);
	TP_CHECK_OK(rcx_send(j->g, &w, sizeof(w), 1, TX_ACK));
	TP_CHECK_OK(rcx_wait(&r, RCX_STATUS_IGNORE));
	TP_CHECK_EQ(v, w);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "tail", .run = sc_tail, .size = 2 },
	{ .name = "broken", .run = sc_broken, .size = 2 },
	{ .name = "empty_polls", .run = sc_empty_polls, .size = 2 },
	{ .name = "pool", .run = sc_pool, .size = 2 },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("p2p_tx", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_p2p_tx = { "p2p_tx", peer_main };

static void test_tail(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "p2p_tx", "tail", 120), 0);
}

static void test_broken(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "p2p_tx", "broken", 120), 0);
}

static void test_empty_polls(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "p2p_tx", "empty_polls", 120), 0);
}

static void test_pool(void)
{
	const char *was = getenv("RCX_TX_DEPTH");
	char *keep = was ? strdup(was) : NULL;

	setenv("RCX_TX_DEPTH", "8", 1);
	CU_ASSERT_EQUAL(tu_mp_run(2, "p2p_tx", "pool", 120), 0);
	if (keep)
		setenv("RCX_TX_DEPTH", keep, 1);
	else
		unsetenv("RCX_TX_DEPTH");
	free(keep);
}

static const CU_TestInfo tests[] = {
	{ "unsignaled_tail_returned", test_tail },
	{ "broken_with_unsignaled_tail", test_broken },
	{ "empty_tests_counted", test_empty_polls },
	{ "tail_takes_all_but_the_last_slot", test_pool },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_p2p_tx = {
	"p2p_tx", TU_DEVICE, NULL, NULL, tests,
};
