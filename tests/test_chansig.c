/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "chansig": a send protocol sender whose message goes inline
 * completes its start at the post, the SEND unsignaled but one in
 * CH_SIG_EVERY (lib/chan/chan.c). Two ranks, rank 0 sends.
 *  - early: the request is done when rcx_start returns, with no poll, the
 *    buffer the program's again at once: rewritten after every start of
 *    a stream (1,000 messages on one slot, then on 4), the receiver gets
 *    each message as it was at its start, once, in order.
 *  - free_burst: frees right after a burst of early completed starts (an
 *    unsignaled tail): every message arrives, neither end hangs.
 *  - replay (fault provider, a remake): the set breaks with several
 *    messages completed at the sender and not received (the receiver has
 *    not started); the remake sends them again from the copies, the
 *    program's buffer rewritten since: each arrives once, in order,
 *    before the messages started while the set was remade.
 *  - unsig_error (fault provider, no remake): an unsignaled send fails;
 *    its start stays complete, the error comes at the next start once
 *    progress polled it, and the receiver's start fails too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "providers/fault/fault.h"
#include "lib/core/core.h"
#include "lib/chan/chan_int.h"
#include "tu.h"
#include "tu_mp.h"
#include "test_stop.h"

#define GO_TAG	94
#define EARLY_N 1000 /* on one slot; a tenth on 4 */
#define BURST_N 12   /* under CH_UNACK: all of them early */
#define PRE_N	3    /* messages in step before a replay's burst */
#define UNACK_N 6    /* sent, not received, when the set breaks */
#define POST_N	5    /* after the remake */
#define GARBAGE 0xdeadbeefdeadbeefull
#define VAL(k)	(1000 + (uint64_t)(k))

static struct chset *set_of(struct rcx_req *ch)
{
	return to_chan(ch)->set;
}

/*
 * Rank 0: start message k into slot k % slots, check that the start is
 * done on return (no poll ran: nothing else was called), rewrite the
 * slot, then test: done at the first call. With CH_UNACK copies in
 * flight the start goes signaled instead: waited for, then rewritten.
 * Returns whether it went early.
 */
static int send_early(struct rcx_req **ch, uint64_t *buf, int slots, int k)
{
	bool room = set_of(*ch)->ring->early < CH_UNACK;
	struct rcx_status st;
	int flag = 0;

	buf[k % slots] = VAL(k);
	TP_CHECK_OK(rcx_start(*ch));
	if (!room) {
		TP_CHECK_OK(rcx_wait(ch, &st));
		buf[k % slots] = GARBAGE;
		TP_CHECK_EQ(st.error, 0);
		return 0;
	}
	TP_CHECK_EQ((*ch)->state, RCX__REQ_DONE);
	buf[k % slots] = GARBAGE;
	if (k % 2) {
		TP_CHECK_OK(rcx_test(ch, &flag, &st));
		TP_CHECK_EQ(flag, 1);
	} else {
		TP_CHECK_OK(rcx_wait(ch, &st));
	}
	TP_CHECK_EQ(st.error, 0);
	TP_CHECK_EQ(st.slot, k % slots);
	TP_CHECK_EQ(st.count, 8);
	return 1;
}

/* Rank 0, the set being remade: message k's start is held, then done */
static void send_held(struct rcx_req **ch, uint64_t *buf, int slots, int k)
{
	struct rcx_status st;

	buf[k % slots] = VAL(k);
	TP_CHECK_OK(rcx_start(*ch));
	TP_CHECK_OK(rcx_wait(ch, &st));
	buf[k % slots] = GARBAGE;
	TP_CHECK_EQ(st.error, 0);
	TP_CHECK_EQ(st.slot, k % slots);
}

/* Rank 1: receive message k: its slot, once, as it was at its start. */
static int recv_one(struct rcx_req **ch, uint64_t *buf, int slots, int k)
{
	struct rcx_status st;

	TP_CHECK_OK(rcx_start(*ch));
	TP_CHECK_OK(ts_chan_outcome(ch, &st));
	return st.slot != k % slots || st.count != 8 ||
	       buf[k % slots] != VAL(k);
}

static void early_round(struct tp_job *j, const char *slots, int nmsg)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	int k, n = atoi(slots), bad = 0, early = 0;

	if (!ts_chan_open(j->g, "send", slots, buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < nmsg; k++) {
		if (j->rank == 0)
			early += send_early(&ch, buf, n, k);
		else
			bad += recv_one(&ch, buf, n, k);
	}
	TP_CHECK_EQ(bad, 0);
	/* at most one start in CH_UNACK + 1 waits for its completion */
	if (j->rank == 0)
		TP_CHECK(early >= nmsg - nmsg / (CH_UNACK + 1) - 1);
out:
	ts_chan_close(j, &ch, &init, &info);
}

static void sc_early(struct tp_job *j)
{
	early_round(j, "1", EARLY_N);
	early_round(j, "4", EARLY_N / 10);
}

static void sc_free_burst(struct tp_job *j)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	int k, bad = 0;

	if (!ts_chan_open(j->g, "send", "4", buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < BURST_N; k++) {
		if (j->rank == 0)
			send_early(&ch, buf, 4, k);
		else
			bad += recv_one(&ch, buf, 4, k);
	}
	TP_CHECK_EQ(bad, 0);
	/* freed at once: the sender's messages may not all have arrived */
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
out:
	rcx_req_free(&init);
	rcx_info_free(&info);
}

static void remake_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "20000", 1);
}

static void no_remake_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "0", 1);
}

static void sc_replay(struct tp_job *j)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 }, go = 0;
	int k, bad = 0;

	if (!ts_chan_open(j->g, "send", "4", buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < PRE_N; k++) {
		if (j->rank == 0)
			send_early(&ch, buf, 4, k);
		else
			bad += recv_one(&ch, buf, 4, k);
	}
	if (j->rank == 0) {
		/* the receiver has not started: none of these arrives */
		for (; k < PRE_N + UNACK_N; k++)
			send_early(&ch, buf, 4, k);
		rcx__lock(j->ctx);
		rcx__chan_set_fail(set_of(ch), RCX_ERR_TRANSPORT);
		rcx__unlock(j->ctx);
		TP_CHECK_EQ(set_of(ch)->state, SET_REMAKE);
		TP_CHECK_OK(rcx_send(j->g, &go, sizeof(go), 1, GO_TAG));
		for (; k < PRE_N + UNACK_N + POST_N; k++)
			send_held(&ch, buf, 4, k);
	} else {
		TP_CHECK_OK(rcx_recv(j->g, &go, sizeof(go), 0, GO_TAG, NULL));
		for (; k < PRE_N + UNACK_N + POST_N; k++)
			bad += recv_one(&ch, buf, 4, k);
	}
	TP_CHECK_EQ(bad, 0);
	/* the receiver's last start is done: both ends remade once */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(set_of(ch)->rm_gen, 1u);
	TP_CHECK_EQ(set_of(ch)->state, SET_UP);
out:
	ts_chan_close(j, &ch, &init, &info);
}

static void sc_unsig_error(struct tp_job *j)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[1] = { 0 };
	struct rcx_status st;
	long long end = tu_now_ms() + 30000;
	int k, flag = 0, ret;

	if (!ts_chan_open(j->g, "send", "1", buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < PRE_N; k++) {
		if (j->rank == 0)
			send_early(&ch, buf, 1, k);
		else
			TP_CHECK_EQ(recv_one(&ch, buf, 1, k), 0);
	}
	if (j->rank == 0) {
		/* the next send goes unsignaled; its completion fails */
		TP_CHECK(set_of(ch)->ring->unsig + 1 < CH_SIG_EVERY);
		rcx__fault_fail_next(&set_of(ch)->obj, RCX_ERR_TRANSPORT);
		buf[0] = VAL(k);
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_EQ(ch->state, RCX__REQ_DONE);
		/* progress polls the failed completion: the set fails */
		while (set_of(ch)->state != SET_FAILED && tu_now_ms() < end)
			rcx_ctx_wait(j->ctx, 10);
		TP_CHECK_EQ(set_of(ch)->state, SET_FAILED);
		/* the start completed stays so; the next one fails */
		TP_CHECK_OK(rcx_test(&ch, &flag, &st));
		TP_CHECK_EQ(flag, 1);
		TP_CHECK_EQ(st.error, 0);
		TP_CHECK_EQ(rcx_start(ch), RCX_ERR_TRANSPORT);
	} else {
		/* the message arrived (the fault lies about its completion);
		 * the next receive learns of the break, at its start or
		 * after */
		TP_CHECK_EQ(recv_one(&ch, buf, 1, k), 0);
		ret = rcx_start(ch);
		TP_CHECK_EQ(ret ? ret : ts_chan_outcome(&ch, &st),
			    RCX_ERR_TRANSPORT);
	}
out:
	ts_chan_close(j, &ch, &init, &info);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "early", .run = sc_early, .size = 2 },
	{ .name = "free_burst", .run = sc_free_burst, .size = 2 },
	TS_FAULT_SC("replay", sc_replay, remake_env),
	TS_FAULT_SC("unsig_error", sc_unsig_error, no_remake_env),
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("chansig", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_chansig = { "chansig", peer_main };

#define CS_TEST(name)                        \
	static void test_##name(void)        \
	{                                    \
		ts_ft_job("chansig", #name); \
	}

CS_TEST(early)
CS_TEST(free_burst)
CS_TEST(replay)
CS_TEST(unsig_error)

static const CU_TestInfo tests[] = {
	{ "inline_send_done_at_start_buffer_reused_stream", test_early },
	{ "free_right_after_burst_of_early_starts", test_free_burst },
	{ "remake_replays_unacknowledged_from_copies", test_replay },
	{ "unsignaled_send_error_at_next_start", test_unsig_error },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_chansig = {
	"chansig", TU_DEVICE, NULL, NULL, tests,
};
