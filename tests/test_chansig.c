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
 * write_imm on verbs: a receiver's start leaves its credit to the next
 * progress pass (lib/chan/chan.c credit_later).
 *  - late_credit (fault provider): a ping-pong on a channel of 8 slots
 *    each way; the replying end's receive start posts nothing, its
 *    reply's WRITE_IMM goes first and the credit after it, in the next
 *    pass (the reply's wait, or, the reply done at its post, the next
 *    call).
 *  - late_remake (fault provider, a remake): the receiver's set breaks
 *    with a late credit not written, in the middle of the stream; the
 *    remake gives the sender its count: every message arrives once, in
 *    order.
 *  - late_refused (fault provider, no remake): the late credit's post is
 *    refused; the start that made it, and the sender's start waiting for
 *    it, fail with RCX_ERR_TRANSPORT.
 * A write_imm sender whose message goes inline, once the receiver's
 * credit is there, completes its start at the post too, the WRITE_IMM
 * unsignaled but one in CH_SIG_EVERY, a copy in the set's ring.
 *  - wimm_early: a stream (200 messages on one slot, then on 4), each
 *    started once its credit came: done when rcx_start returns, the
 *    buffer rewritten at once; the receiver gets each as it was at its
 *    start, once, in order.
 *  - wimm_remake (fault provider, a remake): the sender's set breaks
 *    right after such a start, in the middle of the stream: every
 *    message arrives once, in order, the starts made meanwhile held.
 *  - wimm_unsig_error (fault provider, no remake): an unsignaled
 *    WRITE_IMM fails; its start stays complete, the next one fails, and
 *    so does the receiver's.
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

#define GO_TAG	 94
#define EARLY_N	 1000 /* on one slot; a tenth on 4 */
#define BURST_N	 12   /* under CH_UNACK: all of them early */
#define PRE_N	 3    /* messages in step before a replay's burst */
#define UNACK_N	 6    /* sent, not received, when the set breaks */
#define POST_N	 5    /* after the remake */
#define GARBAGE	 0xdeadbeefdeadbeefull
#define VAL(k)	 (1000 + (uint64_t)(k))
#define PING_TAG 95
#define PONG_TAG 96
#define LATE_N	 16 /* write_imm messages of the late credit cases */
#define LATE_K	 4  /* the receive whose credit is late: the 5th */
#define RIDE_N	 40 /* rounds of the companion cases */

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

static int wimm_send(struct tp_job *j, struct rcx_req **ch, uint64_t *buf,
		     int slots, int k);

/* a stream of nmsg on proto: rank 0 rewrites the slot of each start done
 * at the post (write_imm: each started once its credit is there) */
static void early_round(struct tp_job *j, const char *proto, const char *slots,
			int nmsg)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	int k, n = atoi(slots), bad = 0, early = 0;

	if (!ts_chan_open(j->g, proto, slots, buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < nmsg; k++) {
		if (j->rank == 0 && strcmp(proto, "send"))
			early += wimm_send(j, &ch, buf, n, k);
		else if (j->rank == 0)
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
	early_round(j, "send", "1", EARLY_N);
	early_round(j, "send", "4", EARLY_N / 10);
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

/* the sends and writes posted on ep from record seq on (receives left
 * out): how many, and the first two */
static size_t posted_on(const struct rcx_ep *ep, size_t seq,
			struct rcx_fault_wr *first)
{
	struct rcx_fault_wr w;
	size_t n = 0;

	for (; seq < rcx__fault_log_count(); seq++)
		if (!rcx__fault_log_get(seq, &w) && w.ep == ep &&
		    w.op != RCX_OP_RECV && n++ < 2)
			first[n - 1] = w;
	return n;
}

/*
 * Is a write_imm receiver's credit of ch late? Where the provider's write
 * does not wake the peer (verbs: the credit goes with an immediate);
 * where it does (shm), the start writes it.
 */
static bool late_here(struct rcx_req *ch)
{
	return !(rcx__obj_ops(set_of(ch)->ep)->caps & RCX_PROV_WRITE_WAKES);
}

/* the ping's (0 -> 1) and the pong's (1 -> 0) inits, 8 bytes a slot */
static void pingpong_init(struct tp_job *j, uint64_t *pi, uint64_t *po,
			  struct rcx_req **init)
{
	int peer = 1 - j->rank;

	if (j->rank == 0) {
		TP_CHECK_OK(
			rcx_send_init(j->g, pi, 8, peer, PING_TAG, &init[0]));
		TP_CHECK_OK(
			rcx_recv_init(j->g, po, 8, peer, PONG_TAG, &init[1]));
	} else {
		TP_CHECK_OK(
			rcx_recv_init(j->g, pi, 8, peer, PING_TAG, &init[0]));
		TP_CHECK_OK(
			rcx_send_init(j->g, po, 8, peer, PONG_TAG, &init[1]));
	}
}

/* a write_imm channel of 8 slots each way: ping 0 -> 1, pong 1 -> 0 */
static bool pingpong_open(struct tp_job *j, uint64_t *pi, uint64_t *po,
			  struct rcx_info **info, struct rcx_req **init,
			  struct rcx_req **ch)
{
	TP_CHECK_OK(rcx_info_create(info));
	TP_CHECK_OK(rcx_info_set(*info, RCX_CHAN_PROTOCOL, "write_imm"));
	TP_CHECK_OK(rcx_info_set(*info, RCX_CHAN_SLOTS, "8"));
	pingpong_init(j, pi, po, init);
	return TP_CHECK_OK(rcx_bind(init[0], *info, &ch[0])) &&
	       TP_CHECK_OK(rcx_bind(init[1], *info, &ch[1]));
}

/*
 * Rank 1's k-th round: ping k came; it starts the receive of ping k + 1
 * (its start k + 2), then sends pong k. A window of 8 slots: late (verbs),
 * a credit every 4 starts, the 1st, 5th ...: such a start posts nothing,
 * the pong's WRITE_IMM goes and then the credit, in the next pass: the
 * pong's wait, or (the pong done at its post: no pass) the next call
 * (rank 0 needs it 4 pings later). Else (shm) a credit every 8 starts,
 * written by the start.
 */
static void pong(struct rcx_req **ch, uint64_t *pi, uint64_t *po, int k)
{
	struct rcx_ep *rep = set_of(ch[0])->ep, *sep = set_of(ch[1])->ep;
	bool late = late_here(ch[0]);
	bool due = late ? k % 4 == 3 : k % 8 == 7;
	struct rcx_fault_wr r[2], w[2];
	struct rcx_status st;
	size_t seq;

	TP_CHECK_OK(rcx_wait(&ch[0], &st));
	TP_CHECK_EQ(st.slot, k % 8);
	TP_CHECK_EQ(pi[k % 8], VAL(k));
	seq = rcx__fault_log_count();
	if (k + 1 < LATE_N) {
		TP_CHECK_OK(rcx_start(ch[0]));
		TP_CHECK_EQ(posted_on(rep, seq, r), due && !late ? 1 : 0);
		TP_CHECK_EQ(to_chan(ch[0])->credit_late, due && late);
	}
	po[k % 8] = VAL(k) + 1;
	TP_CHECK_OK(rcx_start(ch[1]));
	TP_CHECK_OK(rcx_wait(&ch[1], &st));
	TP_CHECK_EQ(st.error, 0);
	TP_CHECK(rcx_progress(set_of(ch[0])->ctx) >= 0);
	TP_CHECK(!to_chan(ch[0])->credit_late);
	if (k + 1 == LATE_N || !due)
		return;
	/* one write each: late, the pong first and the credit after it */
	TP_CHECK_EQ(posted_on(sep, seq, w), 1);
	TP_CHECK_EQ(posted_on(rep, seq, r), 1);
	TP_CHECK_EQ(w[0].seq < r[0].seq, late);
	TP_CHECK_EQ(w[0].op, RCX_OP_WRITE_IMM);
	if (late)
		TP_CHECK_EQ(r[0].op, RCX_OP_WRITE_IMM);
}

static void sc_late_credit(struct tp_job *j)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init[2] = { NULL, NULL }, *ch[2] = { NULL, NULL };
	uint64_t pi[8] = { 0 }, po[8] = { 0 };
	struct rcx_status st;
	int k;

	if (!pingpong_open(j, pi, po, &info, init, ch))
		goto out;
	if (j->rank == 1)
		TP_CHECK_OK(rcx_start(ch[0]));
	for (k = 0; k < LATE_N; k++) {
		if (j->rank == 1) {
			pong(ch, pi, po, k);
			continue;
		}
		TP_CHECK_OK(rcx_start(ch[1]));
		pi[k % 8] = VAL(k);
		TP_CHECK_OK(rcx_start(ch[0]));
		TP_CHECK_OK(rcx_wait(&ch[0], &st));
		TP_CHECK_OK(rcx_wait(&ch[1], &st));
		TP_CHECK_EQ(st.slot, k % 8);
		TP_CHECK_EQ(po[k % 8], VAL(k) + 1);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	ts_world_none_failed(j);
	TP_CHECK_OK(rcx_bind_free(ch, 2));
out:
	rcx_req_free(&init[0]);
	rcx_req_free(&init[1]);
	rcx_info_free(&info);
}

/*
 * write_imm on 8 slots (a window of 8: late, the 1st, 5th, 9th ...
 * receive starts write the credit), rank 0 sends LATE_N messages, the
 * (LATE_K + 1)th once rank 1 started its receive, which leaves its
 * credit late; then (how) happens before any progress: its outcome.
 * The others are received in order. Where the start writes the credit
 * (not late_here), nothing happens.
 */
static int late_round(struct tp_job *j, uint64_t *buf, struct rcx_req **ch,
		      void (*how)(struct chset *s), int *bad)
{
	struct rcx_status st;
	uint64_t go = 0;
	int k, ret = 0;

	for (k = 0; k < LATE_N && !ret; k++) {
		if (j->rank == 0) {
			/* message LATE_K + 1 goes once its start was made */
			if (k == LATE_K)
				TP_CHECK_OK(rcx_recv(j->g, &go, sizeof(go), 1,
						     GO_TAG, NULL));
			buf[k % 8] = VAL(k);
			ret = rcx_start(*ch);
			if (!ret)
				ret = ts_chan_outcome(ch, &st);
			continue;
		}
		TP_CHECK_OK(rcx_start(*ch));
		if (k == LATE_K) {
			/* its message is not there yet: late, if ever */
			TP_CHECK_EQ(to_chan(*ch)->credit_late, late_here(*ch));
			rcx__lock(j->ctx);
			if (late_here(*ch))
				how(set_of(*ch));
			rcx__unlock(j->ctx);
			/* a pass: it writes a late credit (the message needs
			 * the go, an eager send may complete with no pass) */
			TP_CHECK(rcx_progress(j->ctx) >= 0);
			TP_CHECK(!to_chan(*ch)->credit_late);
			TP_CHECK_OK(rcx_send(j->g, &go, sizeof(go), 0, GO_TAG));
		}
		ret = ts_chan_outcome(ch, &st);
		*bad += !ret && (st.slot != k % 8 || buf[k % 8] != VAL(k));
	}
	return ret;
}

static void break_set(struct chset *s)
{
	rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
	TP_CHECK_EQ(s->state, SET_REMAKE);
	/* the remake has the late credit no more */
	TP_CHECK(!s->ch[0].credit_late);
}

static void refuse_credit(struct chset *s)
{
	rcx__fault_post_fail(&s->obj, 0, 0, -EIO);
}

/* late_round with how: a remake (every message arrives) or a failure */
static void late_case(struct tp_job *j, void (*how)(struct chset *s),
		      bool remake)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[8] = { 0 };
	int bad = 0, ret;
	bool late;

	if (!ts_chan_open(j->g, "write_imm", "8", buf, &info, &init, &ch))
		goto out;
	late = late_here(ch);
	ret = late_round(j, buf, &ch, how, &bad);
	TP_CHECK_EQ(ret, late && !remake ? RCX_ERR_TRANSPORT : 0);
	TP_CHECK_EQ(bad, 0);
	if (remake) {
		TP_CHECK_OK(rcx_group_barrier(j->g));
		TP_CHECK_EQ(set_of(ch)->rm_gen, late ? 1u : 0u);
	}
	TP_CHECK_EQ(set_of(ch)->state, late && !remake ? SET_FAILED : SET_UP);
out:
	ts_chan_close(j, &ch, &init, &info);
}

static void sc_late_remake(struct tp_job *j)
{
	late_case(j, break_set, true);
}

static void sc_late_refused(struct tp_job *j)
{
	late_case(j, refuse_credit, false);
}

/* Rank 0, write_imm: progress until message k's credit is there. */
static bool wimm_credit(struct tp_job *j, struct rcx_req *ch)
{
	const struct chan *c = to_chan(ch);
	long long end = tu_now_ms() + 30000;

	while (!(*c->ready && *c->ready + c->lag > c->count) &&
	       tu_now_ms() < end)
		TP_CHECK(rcx_progress(j->ctx) >= 0);
	return TP_CHECK(*c->ready + c->lag > c->count);
}

/*
 * Rank 0, write_imm: message k once its credit came. With room in the
 * ring the start is done on return (no poll ran): the slot is rewritten
 * at once, and a test finds it done. Else it is waited for.
 */
static int wimm_send(struct tp_job *j, struct rcx_req **ch, uint64_t *buf,
		     int slots, int k)
{
	struct chring *q = set_of(*ch)->ring;
	bool room = TP_CHECK(q != NULL) && q->early < CH_UNACK;
	struct rcx_status st;
	int flag = 0;

	if (!wimm_credit(j, *ch))
		return 0;
	buf[k % slots] = VAL(k);
	if (!room) {
		TP_CHECK_OK(rcx_start(*ch));
		TP_CHECK_OK(rcx_wait(ch, &st));
		buf[k % slots] = GARBAGE;
		return 0;
	}
	TP_CHECK_OK(rcx_start(*ch));
	TP_CHECK_EQ((*ch)->state, RCX__REQ_DONE);
	buf[k % slots] = GARBAGE;
	TP_CHECK_OK(rcx_test(ch, &flag, &st));
	TP_CHECK_EQ(flag, 1);
	TP_CHECK_EQ(st.error, 0);
	TP_CHECK_EQ(st.slot, k % slots);
	TP_CHECK_EQ(st.count, 8);
	return 1;
}

static void sc_wimm_early(struct tp_job *j)
{
	early_round(j, "write_imm", "1", EARLY_N / 5);
	early_round(j, "write_imm", "4", EARLY_N / 5);
}

static void sc_wimm_remake(struct tp_job *j)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[4] = { 0 };
	int k, bad = 0;

	if (!ts_chan_open(j->g, "write_imm", "4", buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < PRE_N + UNACK_N + POST_N; k++) {
		if (j->rank == 1) {
			bad += recv_one(&ch, buf, 4, k);
			continue;
		}
		if (k < PRE_N + UNACK_N) {
			wimm_send(j, &ch, buf, 4, k);
			continue;
		}
		if (k == PRE_N + UNACK_N) {
			/* early starts in the ring, unsignaled ones among
			 * them: the set breaks */
			TP_CHECK(set_of(ch)->ring &&
				 set_of(ch)->ring->early > 0);
			rcx__lock(j->ctx);
			rcx__chan_set_fail(set_of(ch), RCX_ERR_TRANSPORT);
			rcx__unlock(j->ctx);
			TP_CHECK_EQ(set_of(ch)->state, SET_REMAKE);
		}
		send_held(&ch, buf, 4, k);
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(set_of(ch)->rm_gen, 1u);
	TP_CHECK_EQ(set_of(ch)->state, SET_UP);
out:
	ts_chan_close(j, &ch, &init, &info);
}

/*
 * An unsignaled send (proto "send") or WRITE_IMM fails: its start stays
 * complete, the set fails once progress polled it, the next start fails,
 * and so does the receiver's.
 */
static void unsig_round(struct tp_job *j, const char *proto)
{
	struct rcx_info *info = NULL;
	struct rcx_req *init = NULL, *ch = NULL;
	uint64_t buf[1] = { 0 };
	struct rcx_status st;
	long long end = tu_now_ms() + 30000;
	bool wimm = strcmp(proto, "write_imm") == 0;
	int k, flag = 0, ret;

	if (!ts_chan_open(j->g, proto, "1", buf, &info, &init, &ch))
		goto out;
	for (k = 0; k < PRE_N; k++) {
		if (j->rank == 1)
			TP_CHECK_EQ(recv_one(&ch, buf, 1, k), 0);
		else if (wimm)
			wimm_send(j, &ch, buf, 1, k);
		else
			send_early(&ch, buf, 1, k);
	}
	if (j->rank == 0) {
		if (wimm && !wimm_credit(j, ch))
			goto out;
		/* the next one goes unsignaled; its completion fails */
		TP_CHECK(set_of(ch)->ring &&
			 set_of(ch)->ring->unsig + 1 < CH_SIG_EVERY);
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

static void sc_unsig_error(struct tp_job *j)
{
	unsig_round(j, "send");
}

static void sc_wimm_unsig_error(struct tp_job *j)
{
	unsig_round(j, "write_imm");
}

/*
 * Companion pairs (lib/chan/chan_credit.c): a write_imm channel each
 * way, one slot, both bound with rcx_chan_companion comp (NULL: none),
 * nonblocking, so either end may come up first: ch[0] the ping (0 -> 1),
 * ch[1] the pong.
 */
struct cpair {
	struct rcx_info *info;
	struct rcx_req *init[2], *ch[2];
	uint64_t pi[1], po[1];
};

static bool companion_open(struct tp_job *j, const char *comp, struct cpair *p)
{
	struct rcx_info **info = &p->info;
	struct rcx_req **init = p->init, **ch = p->ch, *eph[2];
	uint64_t *pi = p->pi, *po = p->po;

	TP_CHECK_OK(rcx_info_create(info));
	TP_CHECK_OK(rcx_info_set(*info, RCX_CHAN_PROTOCOL, "write_imm"));
	if (comp)
		TP_CHECK_OK(rcx_info_set(*info, RCX_CHAN_COMPANION, comp));
	pingpong_init(j, pi, po, init);
	return TP_CHECK_OK(rcx_ibind(init[0], *info, &ch[0], &eph[0])) &&
	       TP_CHECK_OK(rcx_ibind(init[1], *info, &ch[1], &eph[1])) &&
	       TP_CHECK_OK(rcx_waitall(2, eph, RCX_STATUSES_IGNORE));
}

static void companion_close(struct tp_job *j, struct cpair *p)
{
	TP_CHECK_OK(rcx_group_barrier(j->g));
	ts_world_none_failed(j);
	if (p->ch[0] && p->ch[1])
		TP_CHECK_OK(rcx_bind_free(p->ch, 2));
	else if (p->ch[0])
		TP_CHECK_OK(rcx_bind_free(p->ch, 1));
	rcx_req_free(&p->init[0]);
	rcx_req_free(&p->init[1]);
	rcx_info_free(&p->info);
}

/* this rank's receiving set of the pair */
static struct chset *rx_set(struct tp_job *j, struct rcx_req **ch)
{
	return set_of(ch[j->rank == 0 ? 1 : 0]);
}

/*
 * Rounds from .. to - 1 of the ping-pong: rank 0 starts the pong's
 * receive, then the ping; rank 1 (its first receive started before
 * round 0) re-arms its receive and tests it once before the pong, so
 * the credit can ride.
 * mid (may be NULL): at rank 1 in round at, after the re-arm, it starts
 * the pong itself (its outcome: 0 to go on). Returns the data errors.
 */
static int companion_rounds(struct tp_job *j, struct rcx_req **ch, uint64_t *pi,
			    uint64_t *po, int from, int to, int at,
			    int (*mid)(struct tp_job *j, struct rcx_req **ch))
{
	struct rcx_status st;
	int k, flag, bad = 0;

	if (j->rank == 1 && from == 0)
		TP_CHECK_OK(rcx_start(ch[0]));
	for (k = from; k < to; k++) {
		if (j->rank == 0) {
			TP_CHECK_OK(rcx_start(ch[1]));
			pi[0] = VAL(k);
			TP_CHECK_OK(rcx_start(ch[0]));
			TP_CHECK_OK(ts_chan_outcome(&ch[0], &st));
			if (!TP_CHECK_OK(ts_chan_outcome(&ch[1], &st)))
				return bad + 1;
			bad += po[0] != VAL(k) + 1;
			continue;
		}
		if (!TP_CHECK_OK(ts_chan_outcome(&ch[0], &st)))
			return bad + 1;
		bad += pi[0] != VAL(k);
		if (k + 1 < to) {
			TP_CHECK_OK(rcx_start(ch[0]));
			/* tested once before the pong: the credit still
			 * rides (no ping comes before the pong) */
			TP_CHECK_OK(rcx_test(&ch[0], &flag, &st));
			TP_CHECK_EQ(flag, 0);
		}
		po[0] = VAL(k) + 1;
		if (mid && k == at) {
			if (mid(j, ch))
				return bad;
			continue;
		}
		TP_CHECK_OK(rcx_start(ch[1]));
		TP_CHECK_OK(ts_chan_outcome(&ch[1], &st));
	}
	return bad;
}

/* pings from .. to - 1 alone (the pong's set is gone): one way; armed:
 * rank 1's receive of the first is started already */
static int companion_oneway(struct tp_job *j, struct rcx_req **ch, uint64_t *pi,
			    int from, int to, bool armed)
{
	struct rcx_status st;
	int k, bad = 0;

	for (k = from; k < to; k++) {
		if (j->rank == 0) {
			pi[0] = VAL(k);
			TP_CHECK_OK(rcx_start(ch[0]));
			if (!TP_CHECK_OK(ts_chan_outcome(&ch[0], &st)))
				return bad + 1;
			continue;
		}
		if (k > from || !armed)
			TP_CHECK_OK(rcx_start(ch[0]));
		if (!TP_CHECK_OK(ts_chan_outcome(&ch[0], &st)))
			return bad + 1;
		bad += pi[0] != VAL(k);
	}
	return bad;
}

/*
 * ride: paired, each receive start's credit rides in the pong's or the
 * next ping's immediate: at most the first (rank 1 starts before any
 * pong) is written, as the sets' counts and the context's work requests
 * (the sends and the credits written) show; both ends paired. Unpaired
 * (no companion), every start writes its credit.
 */
static void sc_ride(struct tp_job *j)
{
	const char *comp[] = { "7", NULL };
	struct rcx_stats s0 = { .size = sizeof(s0) }, s1 = s0;
	int t;

	for (t = 0; t < 2; t++) {
		struct cpair p = { 0 };

		if (!companion_open(j, comp[t], &p))
			goto next;
		TP_CHECK_EQ(set_of(p.ch[0])->companion, comp[t] ? 7u : 0u);
		TP_CHECK_OK(rcx_ctx_stats(j->ctx, &s0));
		TP_CHECK_EQ(companion_rounds(j, p.ch, p.pi, p.po, 0, RIDE_N, -1,
					     NULL),
			    0);
		TP_CHECK_OK(rcx_ctx_stats(j->ctx, &s1));
		if (comp[t]) {
			TP_CHECK(set_of(p.ch[0])->mate == set_of(p.ch[1]));
			TP_CHECK(rx_set(j, p.ch)->credits_sent <= 1);
			TP_CHECK(s1.wrs_posted - s0.wrs_posted <= RIDE_N + 1);
		} else {
			TP_CHECK(set_of(p.ch[0])->mate == NULL);
			TP_CHECK_EQ(rx_set(j, p.ch)->credits_sent, RIDE_N);
			TP_CHECK(s1.wrs_posted - s0.wrs_posted >= 2 * RIDE_N);
		}
next:
		companion_close(j, &p);
	}
}

/*
 * oneway: paired, but only pings go: no pong carries a credit, each is
 * written by the receiver's next pass (its wait): none waits for ever
 */
static void sc_oneway(struct tp_job *j)
{
	struct cpair p = { 0 };

	if (!companion_open(j, "7", &p))
		goto out;
	TP_CHECK_EQ(companion_oneway(j, p.ch, p.pi, 0, RIDE_N, false), 0);
	if (j->rank == 1)
		TP_CHECK_EQ(set_of(p.ch[0])->credits_sent, RIDE_N);
out:
	companion_close(j, &p);
}

/* rank 1's pong after its re-arm (its credit rides in it), then the
 * pong's set breaks: remade, it goes again if it did not arrive */
static int pong_then_break(struct tp_job *j, struct rcx_req **ch)
{
	struct rcx_status st;

	TP_CHECK_OK(rcx_start(ch[1]));
	rcx__lock(j->ctx);
	rcx__chan_set_fail(set_of(ch[1]), RCX_ERR_TRANSPORT);
	rcx__unlock(j->ctx);
	TP_CHECK_EQ(set_of(ch[1])->state, SET_REMAKE);
	TP_CHECK_OK(ts_chan_outcome(&ch[1], &st));
	return 0;
}

/*
 * ride_remake (fault provider, a remake): the pong's set breaks in the
 * middle, a credit riding in its last message: every ping and pong
 * arrives, once, in order
 */
static void sc_ride_remake(struct tp_job *j)
{
	struct cpair p = { 0 };

	if (!companion_open(j, "7", &p))
		goto out;
	TP_CHECK_EQ(companion_rounds(j, p.ch, p.pi, p.po, 0, RIDE_N, RIDE_N / 2,
				     pong_then_break),
		    0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(set_of(p.ch[1])->rm_gen, 1u);
	TP_CHECK_EQ(set_of(p.ch[1])->state, SET_UP);
	TP_CHECK_EQ(set_of(p.ch[0])->state, SET_UP);
out:
	companion_close(j, &p);
}

/* rank 1's pong, its credit riding in it, is refused: its set fails */
static int pong_refused(struct tp_job *j, struct rcx_req **ch)
{
	(void)j;
	rcx__fault_post_fail(&set_of(ch[1])->obj, 0, 0, -EIO);
	TP_CHECK_EQ(rcx_start(ch[1]), RCX_ERR_TRANSPORT);
	return 1;
}

/*
 * ride_fail (fault provider, no remake): the pong that carries rank 1's
 * credit is refused, its set fails at both ends; the pings go on one
 * way, the credit the failed pong took written by rank 1's next pass
 */
static void sc_ride_fail(struct tp_job *j)
{
	struct cpair p = { 0 };
	struct rcx_status st;
	int at = RIDE_N / 2;

	if (!companion_open(j, "7", &p))
		goto out;
	if (j->rank == 1) {
		TP_CHECK_EQ(companion_rounds(j, p.ch, p.pi, p.po, 0, RIDE_N, at,
					     pong_refused),
			    0);
	} else {
		TP_CHECK_EQ(
			companion_rounds(j, p.ch, p.pi, p.po, 0, at, -1, NULL),
			0);
		/* round at: the ping goes, the pong fails */
		TP_CHECK_OK(rcx_start(p.ch[1]));
		p.pi[0] = VAL(at);
		TP_CHECK_OK(rcx_start(p.ch[0]));
		TP_CHECK_OK(ts_chan_outcome(&p.ch[0], &st));
		TP_CHECK_EQ(ts_chan_outcome(&p.ch[1], &st), RCX_ERR_TRANSPORT);
	}
	TP_CHECK_EQ(set_of(p.ch[1])->state, SET_FAILED);
	TP_CHECK_EQ(companion_oneway(j, p.ch, p.pi, at + 1, RIDE_N, true), 0);
	TP_CHECK_EQ(set_of(p.ch[0])->state, SET_UP);
	TP_CHECK(set_of(p.ch[0])->mate == NULL);
	TP_CHECK_OK(rcx_bind_free(&p.ch[1], 1));
	p.ch[1] = NULL;
out:
	companion_close(j, &p);
}

/*
 * ride_freed: the pong's channels are freed in the middle (both ends);
 * the pings go on one way, rank 1's credits written again
 */
static void sc_ride_freed(struct tp_job *j)
{
	struct cpair p = { 0 };
	unsigned int sent = 0;

	if (!companion_open(j, "7", &p))
		goto out;
	TP_CHECK_EQ(companion_rounds(j, p.ch, p.pi, p.po, 0, RIDE_N / 2 + 1, -1,
				     NULL),
		    0);
	TP_CHECK_OK(rcx_bind_free(&p.ch[1], 1));
	p.ch[1] = NULL;
	TP_CHECK(set_of(p.ch[0])->mate == NULL);
	sent = set_of(p.ch[0])->credits_sent;
	/* rank 1's last round started no receive: this starts it */
	TP_CHECK_EQ(
		companion_oneway(j, p.ch, p.pi, RIDE_N / 2 + 1, RIDE_N, false),
		0);
	/* one a start (and one the free may have written again) */
	sent = set_of(p.ch[0])->credits_sent - sent;
	if (j->rank == 1)
		TP_CHECK(sent >= RIDE_N - (RIDE_N / 2 + 1) &&
			 sent <= RIDE_N - RIDE_N / 2);
out:
	companion_close(j, &p);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "early", .run = sc_early, .size = 2 },
	{ .name = "free_burst", .run = sc_free_burst, .size = 2 },
	TS_FAULT_SC("replay", sc_replay, remake_env),
	TS_FAULT_SC("unsig_error", sc_unsig_error, no_remake_env),
	TS_FAULT_SC("late_credit", sc_late_credit, no_remake_env),
	TS_FAULT_SC("late_remake", sc_late_remake, remake_env),
	TS_FAULT_SC("late_refused", sc_late_refused, no_remake_env),
	{ .name = "wimm_early", .run = sc_wimm_early, .size = 2 },
	TS_FAULT_SC("wimm_remake", sc_wimm_remake, remake_env),
	TS_FAULT_SC("wimm_unsig_error", sc_wimm_unsig_error, no_remake_env),
	{ .name = "ride", .run = sc_ride, .size = 2 },
	{ .name = "oneway", .run = sc_oneway, .size = 2 },
	TS_FAULT_SC("ride_remake", sc_ride_remake, remake_env),
	TS_FAULT_SC("ride_fail", sc_ride_fail, no_remake_env),
	{ .name = "ride_freed", .run = sc_ride_freed, .size = 2 },
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
CS_TEST(late_credit)
CS_TEST(late_remake)
CS_TEST(late_refused)
CS_TEST(wimm_early)
CS_TEST(wimm_remake)
CS_TEST(wimm_unsig_error)
CS_TEST(ride)
CS_TEST(oneway)
CS_TEST(ride_remake)
CS_TEST(ride_fail)
CS_TEST(ride_freed)

static const CU_TestInfo tests[] = {
	{ "inline_send_done_at_start_buffer_reused_stream", test_early },
	{ "free_right_after_burst_of_early_starts", test_free_burst },
	{ "remake_replays_unacknowledged_from_copies", test_replay },
	{ "unsignaled_send_error_at_next_start", test_unsig_error },
	{ "write_imm_credit_follows_the_reply", test_late_credit },
	{ "write_imm_remake_with_a_late_credit", test_late_remake },
	{ "write_imm_late_credit_refused_fails_both", test_late_refused },
	{ "write_imm_inline_done_at_start_with_credit", test_wimm_early },
	{ "write_imm_remake_with_early_starts", test_wimm_remake },
	{ "write_imm_unsignaled_error_at_next_start", test_wimm_unsig_error },
	{ "companion_credit_rides_on_the_reply", test_ride },
	{ "companion_one_way_stream_writes_credits", test_oneway },
	{ "companion_remake_in_the_middle", test_ride_remake },
	{ "companion_refused_carrier_credit_written", test_ride_fail },
	{ "companion_freed_credits_written_again", test_ride_freed },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_chansig = {
	"chansig", TU_DEVICE, NULL, NULL, tests,
};
