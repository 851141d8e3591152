/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "stoppost": a bound channel's own posts refused, or its queue
 * pair flushed, while the peer lives (the fault provider, two ranks under
 * `rcx-run --ft`). Neither is a process failure: without a remake
 * (RCX_FT_TIMEOUT_MS=0) the set fails with RCX_ERR_TRANSPORT at both
 * ends, the refused start's request inactive, and nobody waits for what
 * cannot come; with one, the set is remade and the stream goes on, every
 * message once, in order, in its slot.
 *  - post_refused_*: the device refuses the post of an rcx_start (the
 *    sender's message, the receiver's receive or credit). It returned the
 *    provider's errno, and the peer waited.
 *  - flush_live_*: a completion flushed on a set that is up (its queue
 *    pair went to error under it). It was RCX_ERR_PROC_FAILED, and the
 *    peer waited.
 *  - zrecv_refused_remade: a refill of the zero-length receives that take
 *    the immediates refused part-way. It counted the whole list posted,
 *    so the remake waited for flushes that never came, then failed.
 *  - bundle_refused_*: the post list of an rcx_startall over a bundle (the
 *    sender's messages, the receiver's receives) refused part-way. It was
 *    counted whole: the refused starts active and awaited as in flight
 *    (a remake waited for flushes that never came, then failed).
 */
#include <errno.h>
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

#define BREAK_AT 5  /* messages before the break */
#define NMSG	 24 /* a stream across a remake */

enum brk {
	BRK_POST,  /* the breaker's next post of its start is refused */
	BRK_FLUSH, /* the sender's next completion is flushed */
	BRK_ZRECV, /* a refill of the zero-length receives is cut short */
};

static struct chset *set_of(struct rcx_req *ch)
{
	return to_chan(ch)->set;
}

/* Arm the break in the breaker's set. */
static void arm(struct tp_job *j, struct rcx_req *ch, enum brk how)
{
	struct chset *s = set_of(ch);

	switch (how) {
	case BRK_POST:
		/* a receiver of the send protocol posts a receive; any other
		 * start a send (the sender's message, a credit write) */
		rcx__fault_post_fail(&s->obj,
				     j->rank == 1 && s->proto == RCX_CHAN_SEND,
				     0, -ENOMEM);
		break;
	case BRK_FLUSH:
		rcx__fault_fail_next(&s->obj, RCX_ERR_FLUSHED);
		break;
	case BRK_ZRECV:
		/* the next refill: three go, the rest are refused */
		rcx__fault_post_fail(&s->obj, 1, 3, -ENOMEM);
		break;
	}
}

/* Start *ch and wait for it: its outcome. */
static int start_outcome(struct rcx_req **ch)
{
	struct rcx_status st;
	int ret = rcx_start(*ch);

	return ret ? ret : ts_chan_outcome(ch, &st);
}

static void no_remake_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "0", 1);
}

static void remake_env(void)
{
	setenv("RCX_FT_TIMEOUT_MS", "20000", 1);
}

/*
 * No remake: BREAK_AT messages, then the breaker breaks the set. Every
 * end's start fails with RCX_ERR_TRANSPORT by the one after the break
 * (the message of a flushed send did arrive: the receiver may complete
 * it first), and later starts return it at once: the request is
 * inactive, the set failed.
 */
static void fail_round(struct tp_job *j, const char *proto, int breaker,
		       enum brk how)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[1] = { 0 };
	int k, ret = 0;

	if (!ts_chan_open(j->g, proto, "1", buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < BREAK_AT + 2 && !ret; k++) {
		if (j->rank == breaker && k == BREAK_AT)
			arm(j, ch, how);
		if (j->rank == 0)
			buf[0] = 1000 + (uint64_t)k;
		ret = start_outcome(&ch);
		if (!ret && j->rank == 1)
			TP_CHECK_EQ(buf[0], 1000 + (uint64_t)k);
		/* a sender whose start completes at the post: the break
		 * reaches it at a start once progress polled it */
		if (!ret && ts_chan_early(ch) && k >= BREAK_AT &&
		    (j->rank == breaker || k == BREAK_AT + 1))
			ret = ts_chan_start_broken(j, &ch);
	}
	printf("rank %d, %s, breaker %d: start %d ended %s\n", j->rank, proto,
	       breaker, k - 1, rcx_strerror(ret));
	TP_CHECK_EQ(ret, RCX_ERR_TRANSPORT);
	/* a send protocol sender runs ahead (its starts complete at the
	 * post): what it sent past the receiver's receives is lost with the
	 * set, whose receiver may fail earlier */
	TP_CHECK(k - 1 >= BREAK_AT ||
		 (j->rank == 1 && strcmp(proto, "send") == 0));
	if (j->rank == breaker && how == BRK_POST)
		TP_CHECK_EQ(k - 1, BREAK_AT);
	TP_CHECK_EQ(rcx_start(ch), RCX_ERR_TRANSPORT);
out:
	ts_chan_close(j, &ch, &init, &info);
}

/*
 * A remake: a stream of NMSG across the break, each message once, in
 * order, in its slot; the set remade once at both ends and up.
 */
static void remake_round(struct tp_job *j, const char *proto, const char *slots,
			 int breaker, enum brk how)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	int k, n = atoi(slots), bad = 0, errs = 0, ret;
	struct rcx_status st;

	if (!ts_chan_open(j->g, proto, slots, buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < NMSG; k++) {
		if (j->rank == breaker &&
		    k == (how == BRK_ZRECV ? 0 : BREAK_AT))
			arm(j, ch, how);
		if (j->rank == 0)
			buf[k % n] = 1000 + (uint64_t)k;
		memset(&st, 0, sizeof(st));
		ret = rcx_start(ch);
		if (!ret)
			ret = ts_chan_outcome(&ch, &st);
		errs += ret != 0;
		if (ret && errs == 1)
			printf("rank %d, %s, breaker %d: start %d: %s\n",
			       j->rank, proto, breaker, k, rcx_strerror(ret));
		if (ret)
			break;
		if (j->rank == 1)
			bad += st.slot != k % n || st.count != 8 ||
			       buf[k % n] != 1000 + (uint64_t)k;
	}
	TP_CHECK_EQ(errs, 0);
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_EQ(set_of(ch)->rm_gen, 1u);
	TP_CHECK_EQ(set_of(ch)->state, SET_UP);
out:
	ts_chan_close(j, &ch, &init, &info);
}

static void sc_post_refused_fails(struct tp_job *j)
{
	fail_round(j, "send", 0, BRK_POST);
	fail_round(j, "send", 1, BRK_POST);
	fail_round(j, "write_imm", 0, BRK_POST);
	fail_round(j, "write_imm", 1, BRK_POST);
}

static void sc_post_refused_remade(struct tp_job *j)
{
	remake_round(j, "send", "1", 0, BRK_POST);
	remake_round(j, "send", "1", 1, BRK_POST);
	remake_round(j, "write_imm", "4", 0, BRK_POST);
	remake_round(j, "write_imm", "4", 1, BRK_POST);
}

static void sc_flush_live_fails(struct tp_job *j)
{
	fail_round(j, "send", 0, BRK_FLUSH);
	fail_round(j, "write_imm", 0, BRK_FLUSH);
}

static void sc_flush_live_remade(struct tp_job *j)
{
	remake_round(j, "send", "1", 0, BRK_FLUSH);
	remake_round(j, "write_imm", "4", 0, BRK_FLUSH);
}

/*
 * The receiver's zero-length receives; and the sender's, where its
 * credits come with an immediate (credit_imm: verbs), known once bound
 * (both ranks learn it from rank 0).
 */
static void sc_zrecv_refused_remade(struct tp_job *j)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	int imm = 0;

	remake_round(j, "write_imm", "4", 1, BRK_ZRECV);
	if (ts_chan_open(j->g, "write_imm", "4", buf, &info, &init, &ch) &&
	    j->rank == 0)
		imm = set_of(ch)->credit_imm;
	ts_chan_close(j, &ch, &init, &info);
	TP_CHECK_OK(rcx_group_bcast(j->g, &imm, sizeof(imm), 0));
	if (imm)
		remake_round(j, "write_imm", "1", 0, BRK_ZRECV);
}

#define NBUN	  4 /* channels of a bundle, on as many slots */
#define BUN_CUT	  2 /* the breaker's list goes this far */
#define BUN_TAG	  94
#define BUN_ROUND 4 /* rounds of a bundle; the break in round 1 */

static uint64_t bun_val(int round, int i)
{
	return 1000 + (uint64_t)(round * NBUN + i);
}

/* A send-protocol bundle of NBUN from rank 0 to rank 1, channel i on
 * slot i of buf. */
static bool bundle_open(struct tp_job *j, uint64_t *buf, struct rcx_info **info,
			struct rcx_req **init, struct rcx_req **ch)
{
	TP_CHECK_OK(rcx_info_create(info));
	TP_CHECK_OK(rcx_info_set(*info, RCX_CHAN_PROTOCOL, "send"));
	TP_CHECK_OK(rcx_info_set(*info, RCX_CHAN_SLOTS, "4"));
	if (j->rank == 0)
		TP_CHECK_OK(rcx_send_init(j->g, buf, 8, 1, BUN_TAG, init));
	else
		TP_CHECK_OK(rcx_recv_init(j->g, buf, 8, 0, BUN_TAG, init));
	return TP_CHECK_OK(rcx_mbind(*init, NBUN, *info, ch));
}

static void bundle_close(struct tp_job *j, struct rcx_req **ch,
			 struct rcx_req **init, struct rcx_info **info, bool up)
{
	if (up) {
		ts_world_none_failed(j);
		TP_CHECK_OK(rcx_bind_free(ch, NBUN));
	}
	rcx_req_free(init);
	rcx_info_free(info);
}

/*
 * The breaker's list in round 1 goes BUN_CUT far: the sender's messages
 * (breaker 0) or the receiver's receives (breaker 1).
 */
static void bundle_arm(struct tp_job *j, struct rcx_req **ch, int breaker,
		       int round)
{
	if (j->rank == breaker && round == 1)
		rcx__fault_post_fail(&set_of(ch[0])->obj, breaker == 1, BUN_CUT,
				     -ENOMEM);
}

/*
 * No remake: round 0 goes, round 1 breaks. The breaker's rcx_startall
 * returns RCX_ERR_TRANSPORT: the starts whose WRs went complete with it
 * (in flight until their completions come, and only they), the others
 * are inactive, as a refused rcx_start leaves its request. The peer's
 * complete with it too, but a message that went may have arrived; one
 * that did not go never does.
 */
static void bundle_fail_round(struct tp_job *j, int breaker)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch[NBUN] = { NULL };
	uint64_t buf[NBUN] = { 0 };
	struct rcx_status st;
	int i, r, ret, late = 0;

	if (!bundle_open(j, buf, &info, &init, ch))
		goto out;
	for (r = 0; r < 2; r++) {
		bundle_arm(j, ch, breaker, r);
		if (j->rank == 0)
			for (i = 0; i < NBUN; i++)
				buf[i] = bun_val(r, i);
		ret = rcx_startall(NBUN, ch);
		if (j->rank == breaker && r == 1) {
			TP_CHECK_EQ(ret, RCX_ERR_TRANSPORT);
			TP_CHECK_EQ(set_of(ch[0])->inflight, BUN_CUT);
			for (i = 0; i < NBUN; i++)
				TP_CHECK_EQ(ch[i]->state,
					    i < BUN_CUT ? RCX__REQ_DONE
							: RCX__REQ_INACTIVE);
			for (i = 0; i < BUN_CUT; i++)
				TP_CHECK_EQ(ts_chan_outcome(&ch[i], &st),
					    RCX_ERR_TRANSPORT);
			TP_CHECK_EQ(rcx_start(ch[BUN_CUT]), RCX_ERR_TRANSPORT);
			break;
		}
		/* the peer may have learnt of the break first */
		if (r == 1 && ret) {
			TP_CHECK_EQ(ret, RCX_ERR_TRANSPORT);
			break;
		}
		TP_CHECK_OK(ret);
		for (i = 0; i < NBUN; i++) {
			memset(&st, 0, sizeof(st));
			ret = ts_chan_outcome(&ch[i], &st);
			/* round 0 went whole; the breaker's notice of round
			 * 1 may still be dispatched before this end's
			 * completions of it (another endpoint): then the rest
			 * of the round is failed too */
			if (r == 0 && ret && j->rank != breaker) {
				TP_CHECK_EQ(ret, RCX_ERR_TRANSPORT);
				late++;
				continue;
			}
			/* the set failed at once: nothing of it completes
			 * after that */
			if (late)
				TP_CHECK_EQ(ret, RCX_ERR_TRANSPORT);
			if (r == 0 || (i < BUN_CUT && !ret)) {
				TP_CHECK_OK(ret);
				if (j->rank == 1)
					TP_CHECK_EQ(buf[i], bun_val(r, i));
			} else {
				TP_CHECK_EQ(ret, RCX_ERR_TRANSPORT);
			}
		}
	}
	printf("rank %d, bundle, breaker %d: set failed (%d of round 0 "
	       "failed after the notice)\n",
	       j->rank, breaker, late);
out:
	bundle_close(j, ch, &init, &info, ch[0] != NULL);
}

/*
 * A remake: the messages whose WRs went arrive once, the refused starts
 * are held and made once the set is up again; every message of every
 * round once, in its slot, none twice (a second copy would land in a
 * later round's receive).
 */
static void bundle_remake_round(struct tp_job *j, int breaker)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch[NBUN] = { NULL };
	uint64_t buf[NBUN] = { 0 };
	struct rcx_status st;
	int i, r, bad = 0, errs = 0, ret = 0;

	if (!bundle_open(j, buf, &info, &init, ch))
		goto out;
	for (r = 0; r < BUN_ROUND && !ret; r++) {
		bundle_arm(j, ch, breaker, r);
		if (j->rank == 0)
			for (i = 0; i < NBUN; i++)
				buf[i] = bun_val(r, i);
		ret = rcx_startall(NBUN, ch);
		for (i = 0; i < NBUN && !ret; i++) {
			memset(&st, 0, sizeof(st));
			ret = ts_chan_outcome(&ch[i], &st);
			if (j->rank == 1 && !ret)
				bad += st.slot != i || st.count != 8 ||
				       buf[i] != bun_val(r, i);
		}
		errs += ret != 0;
		if (ret)
			printf("rank %d, bundle, breaker %d: round %d: %s\n",
			       j->rank, breaker, r, rcx_strerror(ret));
	}
	TP_CHECK_EQ(errs, 0);
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_EQ(set_of(ch[0])->rm_gen, 1u);
	TP_CHECK_EQ(set_of(ch[0])->state, SET_UP);
out:
	bundle_close(j, ch, &init, &info, ch[0] != NULL);
}

static void sc_bundle_refused_fails(struct tp_job *j)
{
	bundle_fail_round(j, 0);
	bundle_fail_round(j, 1);
}

static void sc_bundle_refused_remade(struct tp_job *j)
{
	bundle_remake_round(j, 0);
	bundle_remake_round(j, 1);
}

static const struct tp_scenario scenarios[] = {
	TS_FAULT_SC("post_refused_fails", sc_post_refused_fails, no_remake_env),
	TS_FAULT_SC("post_refused_remade", sc_post_refused_remade, remake_env),
	TS_FAULT_SC("flush_live_fails", sc_flush_live_fails, no_remake_env),
	TS_FAULT_SC("flush_live_remade", sc_flush_live_remade, remake_env),
	TS_FAULT_SC("zrecv_refused_remade", sc_zrecv_refused_remade,
		    remake_env),
	TS_FAULT_SC("bundle_refused_fails", sc_bundle_refused_fails,
		    no_remake_env),
	TS_FAULT_SC("bundle_refused_remade", sc_bundle_refused_remade,
		    remake_env),
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("stoppost", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_stoppost = { "stoppost", peer_main };

#define SP_TEST(name)                         \
	static void test_##name(void)         \
	{                                     \
		ts_ft_job("stoppost", #name); \
	}

SP_TEST(post_refused_fails)
SP_TEST(post_refused_remade)
SP_TEST(flush_live_fails)
SP_TEST(flush_live_remade)
SP_TEST(zrecv_refused_remade)
SP_TEST(bundle_refused_fails)
SP_TEST(bundle_refused_remade)

static const CU_TestInfo tests[] = {
	{ "channel_post_refused_transport_at_both_ends_inactive",
	  test_post_refused_fails },
	{ "channel_post_refused_remade_exactly_once",
	  test_post_refused_remade },
	{ "channel_flush_on_live_set_is_transport_at_both_ends",
	  test_flush_live_fails },
	{ "channel_flush_on_live_set_remade", test_flush_live_remade },
	{ "channel_zero_length_refill_cut_short_remade",
	  test_zrecv_refused_remade },
	{ "bundle_list_refused_part_way_transport_rest_inactive",
	  test_bundle_refused_fails },
	{ "bundle_list_refused_part_way_remade_exactly_once",
	  test_bundle_refused_remade },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_stoppost = {
	"stoppost", TU_DEVICE, NULL, NULL, tests,
};
