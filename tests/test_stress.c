/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Stress (the "stress" suite: 4 processes through rcx-run on rxe).
 * RCX_STRESS_MSGS messages in all (default 100,000, as in every tools/test
 * run; tools/test --full runs 1,000,000) mixed over
 * point-to-point (isend/irecv, every payload checked, every 97th one a
 * rendezvous), bound channels (write_imm, four slots, both ways between
 * partners), window RMA (put; get of what an earlier put left, checked;
 * NIC and software accumulates, counted at the target) and continuations
 * attached to some receives and puts, on contexts with the smallest ring
 * (RCX_RX_DEPTH=4: two credits per connection, so most sends wait in the
 * backlog) and after bursts: unexpected messages, a send-protocol channel
 * whose receiver starts late (receiver-not-ready NAKs retried by the
 * HCA). Every completion is counted: no message may be lost, reordered or
 * come twice (sequence numbers per sender, counters at the targets, sent
 * against received across ranks), and the request pool and the resident
 * set must stay flat once warm.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "lib/win/win_int.h"
#include "tu.h"
#include "tu_mp.h"

#define NP	  3	/* peers of each rank */
#define W	  16	/* receives and sends in flight per peer */
#define RW	  32	/* RMA requests in flight */
#define BIG	  12288 /* rendezvous messages (RCX_EAGER_SIZE is 8192) */
#define CH_LEN	  64
#define CH_SLOTS  4
#define NSLOT	  64 /* put/get locations per origin at a target */
#define LAG	  32 /* get k reads what put k - LAG wrote */
#define SLOT	  64
#define CNT_OFF	  (4 * NSLOT * SLOT) /* counters: int64[4], int32[4] */
#define WIN_LEN	  (CNT_OFF + 64)
#define UNEXP	  256 /* unexpected burst per rank */
#define RNR_N	  50  /* late-receiver messages per pair */
#define STALL_MS  30000
#define IDLE_MS	  100 /* no progress this long: flush the window */
#define RSS_SLACK (16 << 20)

struct stress;

struct slot {
	struct stress *S;
	struct rcx_req *r;
	struct rcx_status st;
	uint64_t seq;
	int q;	  /* peer index, or the RMA kind */
	int busy; /* posted, not yet counted */
	int cont; /* completion taken by a continuation */
	uint8_t *buf;
};

struct stress {
	struct tp_job *j;
	int peer[NP];
	uint64_t per_peer, n_ch, n_rma;
	/* point-to-point */
	struct slot s[NP][W], rv[NP][W];
	uint64_t sent[NP], posted[NP], sdone[NP], rdone[NP];
	/* continuations */
	struct rcx_req *creq;
	uint64_t cont_on, cont_ran;
	/* channels with the partner */
	struct rcx_req *chs, *chr;
	uint8_t chsbuf[CH_SLOTS * CH_LEN], chrbuf[CH_SLOTS * CH_LEN];
	struct rcx_status chst;
	uint64_t ch_started, ch_sent, ch_rstarted, ch_recvd;
	int chs_busy, chr_busy, chr_cont;
	/* window */
	struct rcx_win *w;
	uint8_t *wbase;
	struct slot rs[RW];
	uint64_t rma_issued, rma_done, rma_kind[4], gets_checked;
	uint64_t put_done[NSLOT]; /* 1 + last put completed there */
	/* totals */
	uint64_t completions, bursts, idle_flushes;
	int bad;
};

static uint64_t env_msgs(void)
{
	const char *s = getenv("RCX_STRESS_MSGS");
	unsigned long long v = s ? strtoull(s, NULL, 10) : 0;

	return v >= 1000 ? v : 100000;
}

static long rss_kib(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

static size_t pool_free(struct rcx_ctx *ctx)
{
	size_t n = 0;
	struct rcx_req *r;

	for (r = ctx->req_free; r; r = r->next)
		n++;
	return n;
}

/* ---- payloads: a header, then bytes that depend on all of it */

struct phdr {
	uint32_t src, dst, seq, len;
};

static size_t p2p_len(uint64_t seq)
{
	return seq % 97 == 96 ? BIG : 16 + (size_t)(seq * 37 % 240);
}

static void pfill(uint8_t *b, size_t len, int src, int dst, uint64_t seq)
{
	struct phdr h = { (uint32_t)src, (uint32_t)dst, (uint32_t)seq,
			  (uint32_t)len };
	size_t i;

	memcpy(b, &h, sizeof(h));
	for (i = sizeof(h); i < len; i++)
		b[i] = (uint8_t)(src * 31 + dst * 17 + seq * 7 + i);
}

static bool pcheck(const uint8_t *b, size_t len, int src, int dst, uint64_t seq)
{
	struct phdr h;
	size_t i;

	if (len < sizeof(h))
		return false;
	memcpy(&h, b, sizeof(h));
	if (h.src != (uint32_t)src || h.dst != (uint32_t)dst ||
	    h.seq != (uint32_t)seq || h.len != len)
		return false;
	for (i = sizeof(h); i < len; i++)
		if (b[i] != (uint8_t)(src * 31 + dst * 17 + seq * 7 + i))
			return false;
	return true;
}

/* ---- point-to-point */

static void recv_done(struct slot *sl)
{
	struct stress *S = sl->S;
	int src = S->peer[sl->q];

	if (!TP_CHECK_EQ(sl->st.error, 0) || !TP_CHECK_EQ(sl->st.source, src) ||
	    !TP_CHECK_EQ(sl->st.count, p2p_len(sl->seq)) ||
	    !TP_CHECK(pcheck(sl->buf, sl->st.count, src, S->j->rank, sl->seq)))
		S->bad++;
	sl->busy = 0;
	sl->cont = 0;
	S->rdone[sl->q]++;
	S->completions++;
}

static void recv_cb(struct rcx_status *st, void *arg)
{
	struct slot *sl = arg;

	sl->S->cont_ran++;
	TP_CHECK(st == &sl->st);
	recv_done(sl);
}

static int p2p_step(struct stress *S, int q)
{
	struct rcx_status st;
	int i, flag, moved = 0, peer = S->peer[q], me = S->j->rank;

	for (i = 0; i < W; i++) {
		struct slot *sl = &S->s[q][i];

		if (sl->busy && TP_CHECK_OK(rcx_test(&sl->r, &flag, &st)) &&
		    flag) {
			TP_CHECK_EQ(st.error, 0);
			TP_CHECK_EQ(st.count, p2p_len(sl->seq));
			sl->busy = 0;
			S->sdone[q]++;
			S->completions++;
			moved = 1;
		}
		if (!sl->busy && S->sent[q] < S->per_peer) {
			sl->seq = S->sent[q]++;
			pfill(sl->buf, p2p_len(sl->seq), me, peer, sl->seq);
			if (!TP_CHECK_OK(rcx_isend(S->j->g, sl->buf,
						   p2p_len(sl->seq), peer, 1,
						   &sl->r)))
				return -1;
			sl->busy = 1;
			moved = 1;
		}
	}
	for (i = 0; i < W; i++) {
		struct slot *sl = &S->rv[q][i];

		if (sl->busy && !sl->cont &&
		    TP_CHECK_OK(rcx_test(&sl->r, &flag, &sl->st)) && flag) {
			recv_done(sl);
			moved = 1;
		}
		if (sl->busy || S->posted[q] >= S->per_peer)
			continue;
		/* receives match in the order they are posted */
		sl->seq = S->posted[q]++;
		if (!TP_CHECK_OK(
			    rcx_irecv(S->j->g, sl->buf, BIG, peer, 1, &sl->r)))
			return -1;
		sl->busy = 1;
		moved = 1;
		if (sl->seq % 16 == 5) {
			if (!TP_CHECK_OK(rcx_continue(&sl->r, recv_cb, sl, 0,
						      &sl->st, S->creq)))
				return -1;
			sl->cont = 1;
			S->cont_on++;
		}
	}
	return moved;
}

/* ---- channels: even ranks send on tag 10, odd ones on tag 11 */

static void chan_cb(struct rcx_status *st, void *arg);

static void chan_got(struct stress *S, const struct rcx_status *st)
{
	int src = S->j->rank ^ 1, slot = (int)(S->ch_recvd % CH_SLOTS);

	if (!TP_CHECK_EQ(st->error, 0) || !TP_CHECK_EQ(st->slot, slot) ||
	    !TP_CHECK(pcheck(S->chrbuf + slot * CH_LEN, CH_LEN, src, S->j->rank,
			     S->ch_recvd)))
		S->bad++;
	S->ch_recvd++;
	S->chr_busy = 0;
	S->completions++;
}

static void chan_cb(struct rcx_status *st, void *arg)
{
	struct stress *S = arg;

	S->cont_ran++;
	S->chr_cont = 0;
	chan_got(S, st);
}

static int chan_step(struct stress *S)
{
	struct rcx_status st;
	int flag, moved = 0, me = S->j->rank;

	if (S->chs_busy && TP_CHECK_OK(rcx_test(&S->chs, &flag, &st)) && flag) {
		TP_CHECK_EQ(st.error, 0);
		S->chs_busy = 0;
		S->ch_sent++;
		S->completions++;
		moved = 1;
	}
	if (!S->chs_busy && S->ch_started < S->n_ch) {
		pfill(S->chsbuf + (S->ch_started % CH_SLOTS) * CH_LEN, CH_LEN,
		      me, me ^ 1, S->ch_started);
		if (!TP_CHECK_OK(rcx_start(S->chs)))
			return -1;
		S->ch_started++;
		S->chs_busy = 1;
		moved = 1;
	}
	if (S->chr_busy && !S->chr_cont &&
	    TP_CHECK_OK(rcx_test(&S->chr, &flag, &st)) && flag) {
		chan_got(S, &st);
		moved = 1;
	}
	if (!S->chr_busy && S->ch_rstarted < S->n_ch) {
		if (!TP_CHECK_OK(rcx_start(S->chr)))
			return -1;
		S->chr_busy = 1;
		moved = 1;
		if (S->ch_rstarted++ % 32 == 7) {
			if (!TP_CHECK_OK(rcx_continue(&S->chr, chan_cb, S, 0,
						      &S->chst, S->creq)))
				return -1;
			S->chr_cont = 1;
			S->cont_on++;
		}
	}
	return moved;
}

/*
 * ---- window RMA to the next rank: put, get, two accumulates. A get
 * checks what the last completed put to its location wrote, or the next
 * put there, which may land first (nothing orders them).
 */

enum { K_PUT, K_GET, K_ACC64, K_ACC32 };

static void rma_fill(uint8_t *b, int origin, uint64_t k)
{
	int i;

	for (i = 0; i < 32; i++)
		b[i] = (uint8_t)(origin * 13 + k * 5 + i);
}

static void rma_done(struct slot *sl)
{
	struct stress *S = sl->S;
	uint8_t want[32];

	TP_CHECK_EQ(sl->st.error, 0);
	if (sl->q == K_PUT && S->put_done[sl->seq % NSLOT] < sl->seq + 1)
		S->put_done[sl->seq % NSLOT] = sl->seq + 1;
	if (sl->q == K_GET && sl->seq) {
		uint8_t next[32];

		rma_fill(want, S->j->rank, sl->seq - 1);
		rma_fill(next, S->j->rank, sl->seq - 1 + NSLOT);
		if (!TP_CHECK(!memcmp(sl->buf, want, 32) ||
			      !memcmp(sl->buf, next, 32)))
			S->bad++;
		S->gets_checked++;
	}
	sl->busy = 0;
	sl->cont = 0;
	S->rma_done++;
	S->completions++;
}

static void rma_cb(struct rcx_status *st, void *arg)
{
	struct slot *sl = arg;

	sl->S->cont_ran++;
	rma_done(sl);
}

static int rma_post(struct stress *S, struct slot *sl)
{
	static const int64_t one64 = 1;
	static const int32_t one32 = 1;
	int me = S->j->rank, t = (me + 1) % 4, ret;
	uint64_t k = S->rma_issued / 4, loc = k % NSLOT;
	size_t off = (size_t)me * NSLOT * SLOT;

	sl->q = (int)(S->rma_issued % 4);
	sl->seq = k;
	switch (sl->q) {
	case K_PUT:
		rma_fill(sl->buf, me, k);
		ret = rcx_rput(S->w, sl->buf, 32, t, off + loc * SLOT, &sl->r);
		break;
	case K_GET:
		/* where put k - LAG went; seq: 1 + the put to expect, or 0 */
		loc = (k + NSLOT - LAG) % NSLOT;
		sl->seq = S->put_done[loc];
		memset(sl->buf, 0, 32);
		ret = rcx_rget(S->w, sl->buf, 32, t, off + loc * SLOT, &sl->r);
		break;
	case K_ACC64:
		ret = rcx_raccumulate(S->w, &one64, 1, RCX_INT64, t,
				      CNT_OFF + me * 8, RCX_SUM, &sl->r);
		break;
	default:
		ret = rcx_raccumulate(S->w, &one32, 1, RCX_INT32, t,
				      CNT_OFF + 32 + me * 4, RCX_SUM, &sl->r);
		break;
	}
	if (!TP_CHECK_OK(ret))
		return -1;
	S->rma_kind[sl->q]++;
	S->rma_issued++;
	sl->busy = 1;
	if (sl->q == K_PUT && k % 16 == 3) {
		if (!TP_CHECK_OK(rcx_continue(&sl->r, rma_cb, sl, 0, &sl->st,
					      S->creq)))
			return -1;
		sl->cont = 1;
		S->cont_on++;
	}
	return 0;
}

static int rma_step(struct stress *S)
{
	int i, flag, moved = 0;

	for (i = 0; i < RW; i++) {
		struct slot *sl = &S->rs[i];

		if (sl->busy && !sl->cont &&
		    TP_CHECK_OK(rcx_test(&sl->r, &flag, &sl->st)) && flag) {
			rma_done(sl);
			moved = 1;
		}
		if (!sl->busy && S->rma_issued < S->n_rma) {
			if (rma_post(S, sl))
				return -1;
			moved = 1;
		}
	}
	return moved;
}

/* ---- bursts before the mixed phase */

/* UNEXP messages to the partner before it posts a receive. */
static void burst_unexpected(struct stress *S)
{
	static uint8_t sb[UNEXP][64], rb[UNEXP][64];
	struct rcx_req *sr[UNEXP], *rr[UNEXP];
	int me = S->j->rank, p = me ^ 1, i;

	for (i = 0; i < UNEXP; i++) {
		pfill(sb[i], 64, me, p, (uint64_t)i);
		TP_CHECK_OK(rcx_isend(S->j->g, sb[i], 64, p, 2, &sr[i]));
	}
	TP_CHECK_OK(rcx_waitall(UNEXP, sr, RCX_STATUSES_IGNORE));
	/* what the partner sent is (mostly) queued unexpected by now */
	TP_CHECK_OK(rcx_group_barrier(S->j->g));
	for (i = 0; i < UNEXP; i++)
		TP_CHECK_OK(rcx_irecv(S->j->g, rb[i], 64, p, 2, &rr[i]));
	TP_CHECK_OK(rcx_waitall(UNEXP, rr, RCX_STATUSES_IGNORE));
	for (i = 0; i < UNEXP; i++)
		if (!TP_CHECK(pcheck(rb[i], 64, p, me, (uint64_t)i)))
			S->bad++;
	S->bursts += UNEXP;
	S->completions += 2 * UNEXP;
}

static struct rcx_req *chan_bind(struct stress *S, bool send, int tag,
				 const char *proto, uint8_t *buf, size_t len)
{
	struct rcx_req *init = NULL, *ch = NULL;
	struct rcx_info *info = NULL;
	char slots[8];
	int p = S->j->rank ^ 1;

	snprintf(slots, sizeof(slots), "%d", CH_SLOTS);
	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_PROTOCOL, proto));
	TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_SLOTS, slots));
	if (send)
		TP_CHECK_OK(rcx_send_init(S->j->g, buf, len, p, tag, &init));
	else
		TP_CHECK_OK(rcx_recv_init(S->j->g, buf, len, p, tag, &init));
	TP_CHECK_OK(rcx_bind(init, info, &ch));
	TP_CHECK_OK(rcx_req_free(&init));
	rcx_info_free(&info);
	return ch;
}

/*
 * The send protocol posts the receive at each start: a receiver that
 * starts late makes the sender's HCA take receiver-not-ready NAKs and
 * retry (RCX_RNR_RETRY=7: forever). Nothing may be lost.
 */
static void burst_rnr(struct stress *S)
{
	static uint8_t buf[CH_SLOTS * CH_LEN];
	bool send = !(S->j->rank & 1);
	struct rcx_status st;
	struct rcx_req *ch = chan_bind(S, send, 12, "send", buf, CH_LEN);
	int i, me = S->j->rank;

	for (i = 0; ch && i < RNR_N; i++) {
		uint8_t *p = buf + (i % CH_SLOTS) * CH_LEN;

		if (send) {
			pfill(p, CH_LEN, me, me ^ 1, (uint64_t)i);
		} else {
			usleep(2000);
		}
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(rcx_wait(&ch, &st));
		TP_CHECK_EQ(st.error, 0);
		if (!send && !TP_CHECK(pcheck(p, CH_LEN, me ^ 1, me, i)))
			S->bad++;
	}
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
	S->bursts += send ? RNR_N : 0;
	S->completions += RNR_N;
}

/* ---- the scenario */

static bool all_done(const struct stress *S)
{
	int q;

	for (q = 0; q < NP; q++)
		if (S->sdone[q] < S->per_peer || S->rdone[q] < S->per_peer)
			return false;
	return S->ch_sent == S->n_ch && S->ch_recvd == S->n_ch &&
	       S->rma_done == S->n_rma;
}

static uint64_t p2p_sent(const struct stress *S)
{
	return S->sent[0] + S->sent[1] + S->sent[2];
}

static void setup(struct stress *S, struct tp_job *j, uint64_t total)
{
	uint64_t n = total / 4;
	int q, i;

	S->j = j;
	for (q = 0; q < NP; q++)
		S->peer[q] = (j->rank + 1 + q) % 4;
	S->per_peer = n * 6 / 10 / NP;
	S->n_ch = n * 2 / 10;
	S->n_rma = n - S->per_peer * NP - S->n_ch;
	for (q = 0; q < NP; q++)
		for (i = 0; i < W; i++) {
			S->s[q][i] = (struct slot){ .S = S, .q = q };
			S->rv[q][i] = (struct slot){ .S = S, .q = q };
			S->s[q][i].buf = malloc(BIG);
			S->rv[q][i].buf = malloc(BIG);
			TP_CHECK(S->s[q][i].buf && S->rv[q][i].buf);
		}
	for (i = 0; i < RW; i++) {
		S->rs[i] = (struct slot){ .S = S };
		S->rs[i].buf = malloc(32);
	}
}

static void teardown(struct stress *S)
{
	int q, i;

	for (q = 0; q < NP; q++)
		for (i = 0; i < W; i++) {
			free(S->s[q][i].buf);
			free(S->rv[q][i].buf);
		}
	for (i = 0; i < RW; i++)
		free(S->rs[i].buf);
}

/* Counters at this rank: the previous rank's accumulates, each once. */
static void check_targets(struct stress *S)
{
	int prev = (S->j->rank + 3) % 4, o;
	int64_t c64;
	int32_t c32;

	for (o = 0; o < 4; o++) {
		memcpy(&c64, S->wbase + CNT_OFF + o * 8, 8);
		memcpy(&c32, S->wbase + CNT_OFF + 32 + o * 4, 4);
		TP_CHECK_EQ(c64, o == prev ? (int64_t)S->rma_kind[K_ACC64] : 0);
		TP_CHECK_EQ(c32, o == prev ? (int64_t)S->rma_kind[K_ACC32] : 0);
	}
}

/* Sent to each rank against received from each rank, over all ranks. */
static void check_totals(struct stress *S, double secs)
{
	uint64_t mine[16] = { 0 }, all[4][16];
	uint64_t msgs = 0, done = 0;
	int r, q;

	for (q = 0; q < NP; q++) {
		mine[S->peer[q]] = S->sdone[q];
		mine[4 + S->peer[q]] = S->rdone[q];
	}
	mine[8] = S->ch_sent;
	mine[9] = S->ch_recvd;
	mine[10] = S->rma_done;
	mine[11] = S->bursts;
	mine[12] = S->completions;
	mine[13] = S->cont_ran;
	if (!TP_CHECK_OK(rcx_group_allgather(S->j->g, mine, sizeof(mine), all)))
		return;
	for (r = 0; r < 4; r++) {
		for (q = 0; q < 4; q++)
			if (q != r)
				TP_CHECK_EQ(all[r][q], all[q][4 + r]);
		TP_CHECK_EQ(all[r][8], all[r ^ 1][9]);
		msgs += all[r][0] + all[r][1] + all[r][2] + all[r][3] +
			all[r][8] + all[r][10] + all[r][11];
		done += all[r][12];
	}
	if (S->j->rank == 0)
		printf("stress: %" PRIu64 " messages (p2p, channels, RMA, "
		       "bursts) in %.1f s, %.0f/s; %" PRIu64
		       " completions counted, %" PRIu64 " continuations ran\n",
		       msgs, secs, msgs / (secs > 0 ? secs : 1), done,
		       all[0][13] + all[1][13] + all[2][13] + all[3][13]);
}

/* Where each part stands (a stall). */
static void dump(const struct stress *S)
{
	int q;

	for (q = 0; q < NP; q++) {
		const struct rcx__conn *c = S->j->g->conns[S->peer[q]];
		const struct rcx_req *r;
		int backlog = 0;

		for (r = c->backlog; r; r = r->next)
			backlog++;
		fprintf(stderr,
			"rank %d: to/from %d: sent %" PRIu64 " done %" PRIu64
			", posted %" PRIu64 " received %" PRIu64
			"; connection state %d credits %d owed %d backlog %d "
			"tx %d rx %d window WRs %u\n",
			S->j->rank, S->peer[q], S->sent[q], S->sdone[q],
			S->posted[q], S->rdone[q], c->state, c->credits,
			c->owed, backlog, c->tx_inflight, c->rx_posted,
			c->win_wr);
	}
	if (S->w) {
		struct rcx__win_stats ws;
		int t = (S->j->rank + 1) % 4;

		rcx__win_stats(S->w, &ws);
		fprintf(stderr,
			"rank %d: window to %d: in flight %u, fenced %u; "
			"fences %" PRIu64 " kicks %" PRIu64 " sw %" PRIu64
			" nic %" PRIu64 "\n",
			S->j->rank, t, S->w->tgt[t].inflight,
			S->w->tgt[t].fenced, ws.fences, ws.kicks, ws.sw,
			ws.nic);
	}
	fprintf(stderr, "rank %d: send slots free: %s, pending: %s\n",
		S->j->rank, S->j->ctx->tx_free ? "yes" : "none",
		S->j->ctx->pending ? "yes" : "none");
	fprintf(stderr,
		"rank %d: channel started %" PRIu64 " sent %" PRIu64
		", started %" PRIu64 " received %" PRIu64 " (cont %d); rma "
		"issued %" PRIu64 " done %" PRIu64 "; continuations %" PRIu64
		" of %" PRIu64 "\n",
		S->j->rank, S->ch_started, S->ch_sent, S->ch_rstarted,
		S->ch_recvd, S->chr_cont, S->rma_issued, S->rma_done,
		S->cont_ran, S->cont_on);
}

static void sc_mixed(struct tp_job *j)
{
	static struct stress S;
	struct rcx_ctx *ctx = j->ctx;
	struct rcx_req *chans[2];
	size_t chunks_a, free_a, chunks_b = 0, chunks_c, free_c;
	long rss_b = 0, rss_c;
	long long t0, last, now;
	int moved, q, dumped = 0;

	setup(&S, j, env_msgs());
	TP_CHECK_OK(rcx_continue_init(ctx, NULL, &S.creq));
	TP_CHECK_OK(rcx_win_allocate(j->g, WIN_LEN, 1, NULL, (void **)&S.wbase,
				     &S.w));
	if (j->rank & 1) {
		S.chr = chan_bind(&S, false, 10, "write_imm", S.chrbuf, CH_LEN);
		S.chs = chan_bind(&S, true, 11, "write_imm", S.chsbuf, CH_LEN);
	} else {
		S.chs = chan_bind(&S, true, 10, "write_imm", S.chsbuf, CH_LEN);
		S.chr = chan_bind(&S, false, 11, "write_imm", S.chrbuf, CH_LEN);
	}
	burst_unexpected(&S);
	burst_rnr(&S);
	TP_CHECK_OK(rcx_win_lock_all(S.w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (tp_failures())
		goto out;

	chunks_a = ctx->nchunks;
	free_a = pool_free(ctx);
	t0 = last = tu_now_ms();
	while (!all_done(&S)) {
		moved = 0;
		for (q = 0; q < NP; q++)
			moved |= p2p_step(&S, q);
		moved |= chan_step(&S) | rma_step(&S);
		if (moved < 0 || tp_failures())
			break;
		if (!chunks_b && p2p_sent(&S) >= S.per_peer * NP / 4) {
			chunks_b = ctx->nchunks; /* warm: a quarter done */
			rss_b = rss_kib();
		}
		now = tu_now_ms();
		if (moved) {
			last = now;
			dumped = 0;
		} else if (now - last > STALL_MS / 3 && !dumped) {
			dump(&S); /* every rank that is stuck says where */
			dumped = 1;
		} else if (now - last > STALL_MS) {
			TP_FAIL("no progress for %d s", STALL_MS / 1000);
			/* teardown would wait for the same peers: leave */
			fflush(NULL);
			_exit(tp_exit());
		} else if (now - last > IDLE_MS && S.rma_done < S.rma_issued) {
			/*
			 * rxe can lose the wakeup of a fenced WR (win.c, kick):
			 * only a window wait re-drives it, and until then every
			 * send queued behind it on that QP waits too, holding
			 * send slots the whole context shares. Flush.
			 */
			TP_CHECK_OK(
				rcx_win_flush_local(S.w, (j->rank + 1) % 4));
			S.idle_flushes++;
			last = tu_now_ms();
		} else {
			rcx_ctx_wait(ctx, 1);
		}
	}
	if (!TP_CHECK(all_done(&S)))
		goto out;
	TP_CHECK_EQ(S.cont_ran, S.cont_on);
	/* quiescent again: every request back in the pool, nothing grew */
	chunks_c = ctx->nchunks;
	free_c = pool_free(ctx);
	rss_c = rss_kib();
	TP_CHECK_EQ(chunks_c, chunks_b);
	TP_CHECK_EQ(free_c, free_a + (chunks_c - chunks_a) * 64);
#ifndef __SANITIZE_ADDRESS__
	/* (ASan keeps freed memory in quarantine: its RSS grows anyway) */
	TP_CHECK(rss_c - rss_b < RSS_SLACK / 1024);
#endif
	printf("rank %d: p2p %" PRIu64 "/%" PRIu64
	       " sent/received, channel %" PRIu64 "/%" PRIu64 ", rma %" PRIu64
	       " (put %" PRIu64 " get %" PRIu64 " acc %" PRIu64 "+%" PRIu64
	       "), continuations %" PRIu64 "; pool %zu chunks (%zu at start), "
	       "%zu free; rss %ld -> %ld KiB; %" PRIu64
	       " gets checked, %" PRIu64 " idle flushes\n",
	       j->rank, p2p_sent(&S), S.rdone[0] + S.rdone[1] + S.rdone[2],
	       S.ch_sent, S.ch_recvd, S.rma_done, S.rma_kind[K_PUT],
	       S.rma_kind[K_GET], S.rma_kind[K_ACC64], S.rma_kind[K_ACC32],
	       S.cont_ran, chunks_c, chunks_a, free_c, rss_b, rss_c,
	       S.gets_checked, S.idle_flushes);
	TP_CHECK_OK(rcx_win_flush_all(S.w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	check_targets(&S);
	check_totals(&S, (tu_now_ms() - t0) / 1000.0);
	TP_CHECK_EQ(S.bad, 0);
out:
	rcx_win_unlock_all(S.w);
	/* both at once: each end's free waits for the other end's */
	chans[0] = S.chs;
	chans[1] = S.chr;
	TP_CHECK_OK(rcx_bind_free(chans, 2));
	TP_CHECK_OK(rcx_win_free(&S.w));
	TP_CHECK_OK(rcx_req_free(&S.creq));
	teardown(&S);
}

/* The smallest rings: credits run out at once, CREDIT messages fly. */
static void small_rings(void)
{
	setenv("RCX_RX_DEPTH", "4", 1);
	setenv("RCX_TX_DEPTH", "8", 1);
}

/*
 * Completions piling up unpolled on a completion queue that starts far too
 * small: RCX_CQ_SIZE=64 with the largest rings (4,096 receives and 8,192
 * send slots per connection). Both ranks post OVR sends to each other and
 * do not poll for 2 s, so 2 * OVR = 8,000 completions are due on each CQ,
 * over a hundred times what it was made with: without the reservations
 * (every endpoint's depths counted, the CQ grown to hold them) this is an
 * overrun, a CQ error that kills every QP. The CQ must have grown to at
 * least what the endpoints reserved, and every message must arrive, once
 * and intact.
 */
#define OVR    4000
#define OVR_CQ 64

static void sc_cq_overrun(struct tp_job *j)
{
	static uint32_t sb[OVR], rb[OVR];
	static struct rcx_req *sr[OVR], *rr[OVR];
	struct rcx_dev_info info;
	int peer = j->rank ^ 1, i, lost = 0;

	for (i = 0; i < OVR; i++)
		sb[i] = (uint32_t)(j->rank << 16 | i);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (!TP_CHECK_OK(j->ctx->ops->dev_query(j->ctx->dev, &info)))
		return;
	/* the connection's receive ring and send queue at least */
	TP_CHECK(info.cq_reserved >= 4096 + 8192);
	TP_CHECK(info.cq_size >= info.cq_reserved);
	TP_CHECK(info.cq_size >= 2 * OVR);
	printf("rank %d: CQ asked for with %d entries, now %u for %u "
	       "reserved\n",
	       j->rank, OVR_CQ, info.cq_size, info.cq_reserved);
	for (i = 0; i < OVR; i++)
		if (!TP_CHECK_OK(rcx_isend(j->g, &sb[i], sizeof(sb[i]), peer, i,
					   &sr[i])))
			return;
	usleep(2000000); /* no progress: completions queue up */
	for (i = 0; i < OVR; i++)
		TP_CHECK_OK(rcx_irecv(j->g, &rb[i], sizeof(rb[i]), peer, i,
				      &rr[i]));
	TP_CHECK_OK(rcx_waitall(OVR, sr, RCX_STATUSES_IGNORE));
	TP_CHECK_OK(rcx_waitall(OVR, rr, RCX_STATUSES_IGNORE));
	for (i = 0; i < OVR; i++)
		lost += rb[i] != (uint32_t)(peer << 16 | i);
	TP_CHECK_EQ(lost, 0);
	printf("rank %d: %d messages each way with completions left unpolled "
	       "for 2 s: %d wrong or missing\n",
	       j->rank, OVR, lost);
}

/* Rings as large as allowed, and a CQ that starts far too small. */
static void big_rings(void)
{
	setenv("RCX_RX_DEPTH", "4096", 1);
	setenv("RCX_TX_DEPTH", "8192", 1);
	setenv("RCX_CQ_SIZE", "64", 1);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "mixed", .run = sc_mixed, .size = 4, .setup = small_rings },
	{ .name = "cq_overrun",
	  .run = sc_cq_overrun,
	  .size = 2,
	  .setup = big_rings },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("stress", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_stress = { "stress", peer_main };

static void test_mixed(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(4, "stress", "mixed", 1200), 0);
}

static void test_cq_overrun(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "stress", "cq_overrun", 300), 0);
}

static const CU_TestInfo tests[] = {
	{ "mixed_4procs", test_mixed },
	{ "cq_overrun", test_cq_overrun },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_stress = {
	"stress", TU_DEVICE, NULL, NULL, tests,
};
