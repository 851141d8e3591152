/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels (chan_bind.c, chan.c): the bind handshake's messages and
 * what arrives on a bound set's own queue pair. We are rank 0 of a pair
 * and bind a persistent receive or send to rank 1, the scripted peer.
 *
 * Input: three setup bytes, then records (fz.h).
 *  setup[0]: bit 0 we send (else receive); bits 1-2 our protocol (auto,
 *    send, write_imm; 3: no info at all); bits 3-4 bundle size - 1; bit 5
 *    blocking bind (rcx_bind/rcx_mbind), else rcx_ibind/rcx_imbind and a
 *    test loop; bit 6 receive from RCX_ANY_SOURCE; bit 7 RCX_ANY_TAG.
 *  setup[1]: bits 0-1 slots - 1; bits 2-3 length (8, 0, 64, 200); bit 4
 *    stride = length + 24 (else length); bits 5-6 when the peer connects
 *    to us as a sender: on seeing our request, after its answer, never,
 *    or naming a wrong cookie; bit 7 free the channels at once, before
 *    the nonblocking bind finished.
 *  setup[2]: bit 0 free with rcx_ibind_free (else rcx_bind_free); bits
 *    1-3 progress calls before the bind (each can take one message); bit
 *    4 at the end the peer frees its end of a set still up (else it
 *    disconnects).
 * A record is a kind byte and data:
 *  0: a bind request to us: an EAGER message on cid BIND with our tag,
 *     carrying the data (a struct bind_msg when well formed);
 *  1: an answer to us: EAGER on cid BACK with the tag our request named;
 *  2: the data is a whole message, header included;
 *  3: an event on the bound set, run in order once the bind is up: op,
 *     a, then 8 bytes v (little-endian). op 0 start channel a % n; 1
 *     start every idle channel at once; 2 the peer's message on the set's
 *     queue pair: has_imm = !(a & 1), immediate v[0..3], len v[4..5]
 *     (fz_ep_recv); 3 the peer writes v into our credit word ready[a % n]
 *     (a sender's).
 * Records of kinds 0-2 are the peer's messages on the pair, in order; at
 * their end the peer disconnects (a peer that said BYE first has left
 * without failing: a sender it never connected to gives up after
 * RCX_CONNECT_TIMEOUT_MS, 5 ms here). At the end of the events it
 * disconnects the set's queue pair too, or frees its end (setup).
 *
 * Oracles: every bind ends (succeeds, or fails with an error rcx_strerror
 * names), its ephemeral request completes; a bind that succeeded runs a
 * protocol both ends accept, and a receiver's answer said so; a receiver
 * whose bind failed with -EINVAL (the ends disagree) told the sender
 * (unless its answer still waits for credits or the pair is gone); on
 * the set, a model predicts each completion: a receive completes exactly
 * when a message or immediate names a started channel (its count within
 * the slot, and the slot, checked), anything else fails the set with
 * RCX_ERR_PROTO (or the transport's error); a sender's channel completes
 * exactly when the receiver's credit covers it. Frees return 0 and leave
 * nothing behind.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rcx/rcx.h>
#include "fz.h"
#include "lib/chan/chan_int.h"

#define TAG	   9
#define ACK_MARK   0x7ffffffe /* answer records: replaced by our ack tag */
#define MAX_EVENTS 256
#define SPIN_MAX   1000000

/* The run: setup and what the peer learned from us. */
static struct {
	bool send, blocking, free_early, ifree, peer_frees;
	int proto, n, src, tag, conn, early;
	unsigned long slots, stride;
	size_t len;
	/* the peer's view */
	bool got_request, connected;
	uint64_t cookie;
	int32_t ack_tag;
	int answers, answer_status;
	struct bind_msg answer;
} run;

enum { CONN_EARLY, CONN_LATE, CONN_NEVER, CONN_WRONG };

/* The peer connects a queue pair for the set it learned of. */
static void peer_connect(void)
{
	uint8_t pd[16] = { 'R', 'C', 'X', '1', 3 };
	uint64_t cookie = run.cookie ^ (run.conn == CONN_WRONG);

	if (run.connected || run.conn == CONN_NEVER)
		return;
	run.connected = true;
	memcpy(pd + 8, &cookie, 8);
	fz_conn_request(pd, sizeof(pd));
}

/* Our messages to the peer: a sender's request, a receiver's answer. */
static void on_sent(const uint8_t *buf, size_t len)
{
	struct rcx__hdr h;
	struct bind_msg m;

	if (len != sizeof(h) + sizeof(m))
		return;
	memcpy(&h, buf, sizeof(h));
	memcpy(&m, buf + sizeof(h), sizeof(m));
	if (h.type != RCX__MSG_EAGER || m.magic != CH_MAGIC)
		return;
	if (h.cid == RCX__CID_BIND) {
		FZ_ASSERT(run.send && m.kind == 1 && !run.got_request);
		FZ_ASSERT((int)m.n == run.n && m.len == run.len &&
			  m.slots == run.slots && h.tag == TAG);
		run.got_request = true;
		run.cookie = m.cookie;
		run.ack_tag = (int32_t)m.ack_tag;
		if (run.conn == CONN_EARLY || run.conn == CONN_WRONG)
			peer_connect();
	} else if (h.cid == RCX__CID_BACK) {
		FZ_ASSERT(!run.send && m.kind == 2);
		run.answers++;
		run.answer_status = m.status;
		run.answer = m;
	}
}

/* A record reaches us: answers take the tag our request named. */
static void on_deliver(uint8_t *buf, size_t len)
{
	struct rcx__hdr h;

	if (len < sizeof(h))
		return;
	memcpy(&h, buf, sizeof(h));
	if (h.tag != ACK_MARK)
		return;
	if (run.got_request) {
		h.tag = run.ack_tag;
		memcpy(buf, &h, sizeof(h));
	}
	if (h.cid == RCX__CID_BACK && run.got_request && run.conn == CONN_LATE)
		peer_connect();
}

/*
 * The pair's records as wire messages; the events go to ev[] (offsets of
 * their records, *nev of them).
 */
static uint8_t *wrap(const uint8_t *data, size_t size, size_t *out_len,
		     const uint8_t **ev, int *nev)
{
	struct fz_script s = { data, size };
	uint8_t *buf = fz_msgs_alloc(size), *p = buf;
	const uint8_t *rec;
	size_t len;

	for (*nev = 0; fz_next(&s, &rec, &len);) {
		int kind = len ? rec[0] & 3 : 2;
		struct rcx__hdr h =
			fz_eager(kind ? RCX__CID_BACK : RCX__CID_BIND,
				 kind ? ACK_MARK : TAG, len ? len - 1 : 0);

		if (kind != 3)
			p += fz_msg(p, kind == 2 ? NULL : &h, rec + 1, h.len);
		else if (len >= 11 && *nev < MAX_EVENTS)
			ev[(*nev)++] = rec + 1;
	}
	*out_len = (size_t)(p - buf);
	return buf;
}

/*
 * A receiver answered the request once, with status, or could not yet:
 * its answer waits on the pair for credits, or the pair is gone.
 */
static bool answered(struct rcx_group *g, int status)
{
	const struct rcx__conn *c = g->conns[1];

	if (run.answers)
		return run.answers == 1 && run.answer_status == status;
	return c->state != RCX__CONN_UP || c->backlog;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static bool named(int err)
{
	return strcmp(rcx_strerror(err), "unknown error") != 0;
}

/* Progress until nothing moves: completions, connection events. */
static void settle(struct rcx_ctx *ctx)
{
	int k, a, b;

	for (k = 0;; k++) {
		FZ_ASSERT(k < SPIN_MAX);
		a = rcx_progress(ctx);
		b = rcx__cm_progress(ctx);
		if (a <= 0 && b <= 0)
			break;
	}
}

static struct rcx_info *make_info(void)
{
	static const char *const protos[] = { "auto", "send", "write_imm" };
	struct rcx_info *info = NULL;
	char v[32];

	if (run.proto == 3)
		return NULL;
	FZ_ASSERT(!rcx_info_create(&info));
	FZ_ASSERT(!rcx_info_set(info, RCX_CHAN_PROTOCOL, protos[run.proto]));
	snprintf(v, sizeof(v), "%lu", run.slots);
	FZ_ASSERT(!rcx_info_set(info, RCX_CHAN_SLOTS, v));
	snprintf(v, sizeof(v), "%lu", run.stride);
	FZ_ASSERT(!rcx_info_set(info, RCX_CHAN_STRIDE, v));
	return info;
}

static void setup(const uint8_t *d)
{
	static const size_t lens[] = { 8, 0, 64, 200 };

	memset(&run, 0, sizeof(run));
	run.send = d[0] & 1;
	run.proto = (d[0] >> 1) & 3;
	run.n = ((d[0] >> 3) & 3) + 1;
	run.blocking = d[0] & 0x20;
	run.src = !run.send && (d[0] & 0x40) ? RCX_ANY_SOURCE : 1;
	run.tag = !run.send && (d[0] & 0x80) ? RCX_ANY_TAG : TAG;
	run.slots = (d[1] & 3) + 1;
	run.len = lens[(d[1] >> 2) & 3];
	run.stride = run.len + (run.slots > 1 && (d[1] & 0x10) ? 24 : 0);
	run.conn = (d[1] >> 5) & 3;
	run.free_early = !run.blocking && (d[1] & 0x80);
	run.ifree = d[2] & 1;
	run.early = (d[2] >> 1) & 7;
	run.peer_frees = d[2] & 0x10;
	if (run.proto == 3) /* no info: one slot, stride = len */
		run.slots = 1, run.stride = run.len;
}

/* ---- the bound set: a model of its channels */

struct model {
	struct chset *s;
	bool active[4];
	int starts[4];
	uint64_t ready[4];
	int fifo[64], fifo_n; /* send protocol receiver: posted receives */
	int early[4];	      /* write_imm receiver: arrived before start */
	int lag;	      /* write_imm: the window - 1 */
	int fail;	      /* the error the set failed with, predicted */
	struct rcx_group *g;  /* the pair the set was bound on */
};

static int slot_of(const struct model *md, int i)
{
	return (int)((unsigned long)(i + (md->starts[i] - 1) * run.n) %
		     run.slots);
}

/* Channel i starts; a write_imm receiver's start takes a message that
 * came early at once (done[i]). */
static void start(struct model *md, int i, long *done)
{
	md->active[i] = true;
	md->starts[i]++;
	if (!run.send && md->s->proto == RCX_CHAN_SEND) {
		FZ_ASSERT(md->fifo_n < 64);
		md->fifo[md->fifo_n++] = i;
	}
	if (!run.send && md->s->proto == RCX_CHAN_WRITE_IMM &&
	    md->early[i] > 0) {
		md->early[i]--;
		done[i] = (long)md->s->peer_len;
	}
}

static void fifo_pop(struct model *md)
{
	memmove(md->fifo, md->fifo + 1, --md->fifo_n * sizeof(int));
}

/*
 * The peer's message on the set's QP; done[i] = the count channel i
 * completes with, or -1.
 */
static void message(struct model *md, int has_imm, uint32_t imm, uint32_t len,
		    long *done)
{
	unsigned int idx = imm >> 24, m = ((imm >> 16) & 0xff) + 1, t;
	struct chset *s = md->s;

	if (!fz_ep_recv(s->ep, has_imm, imm, len))
		return; /* no receive posted: nothing arrives */
	if (s->proto == RCX_CHAN_SEND && !run.send) {
		int i = md->fifo[0]; /* the oldest start's receive */

		FZ_ASSERT(md->fifo_n > 0);
		fifo_pop(md);
		if (has_imm) /* an RDMA write took the receive */
			md->fail = RCX_ERR_PROTO;
		else if (len > s->ch[i].len)
			md->fail = RCX_ERR_LOCAL;
		else
			done[i] = len;
		return;
	}
	/* write_imm: the receives are zero-length, for immediates only */
	if (!has_imm && len > 0) {
		md->fail = RCX_ERR_LOCAL;
		return;
	}
	if (!has_imm || idx + m > (unsigned int)run.n) {
		md->fail = RCX_ERR_PROTO;
		return;
	}
	for (t = idx; t < idx + m; t++)
		if (!md->active[t] && md->early[t] >= md->lag) {
			md->fail = RCX_ERR_PROTO;
			return;
		}
	for (t = idx; t < idx + m; t++) {
		if (md->active[t])
			done[t] = (long)s->peer_len;
		else
			md->early[t]++;
	}
}

/* Look at every active channel: what completed must be what was due. */
static void check(struct model *md, struct rcx_req **chans, const long *done)
{
	struct rcx_status st;
	int i, flag, nfailed = 0;
	bool died = false;

	/*
	 * The peer left the pair without a BYE (the script ran out, or its
	 * endpoint went to error): rank 1 has failed, and every channel to
	 * it started then completes with RCX_ERR_PROC_FAILED (a message
	 * taken in the same pass may still complete it first).
	 */
	FZ_ASSERT(!rcx_group_get_failed(md->g, NULL, 0, &nfailed));
	if (nfailed) {
		FZ_ASSERT(nfailed == 1 && fz_peer_down());
		if (!md->fail) {
			md->fail = RCX_ERR_PROC_FAILED;
			died = true;
		}
	}
	for (i = 0; i < run.n; i++) {
		long want = done[i];

		if (!md->active[i])
			continue;
		if (run.send && (!md->fail || died) &&
		    (md->s->proto == RCX_CHAN_SEND ||
		     (md->ready[i] && md->ready[i] + (uint64_t)md->lag >=
					      (uint64_t)md->starts[i])))
			want = (long)run.len; /* had its credit: sent */
		FZ_ASSERT(!rcx_test(&chans[i], &flag, &st));
		if (died && want >= 0 && flag && !st.error) {
			FZ_ASSERT(st.count == (size_t)want);
		} else if (md->fail) {
			FZ_ASSERT(flag && st.error == md->fail);
		} else if (want < 0) {
			FZ_ASSERT(!flag);
			continue;
		} else {
			FZ_ASSERT(flag && !st.error &&
				  st.count == (size_t)want);
			FZ_ASSERT(st.count <= run.len); /* within the slot */
			FZ_ASSERT(st.slot == slot_of(md, i));
		}
		md->active[i] = false;
	}
}

static void event(struct rcx_ctx *ctx, struct model *md, struct rcx_req **chans,
		  const uint8_t *e)
{
	struct rcx_req *idle[4];
	long done[4] = { -1, -1, -1, -1 };
	uint64_t v;
	int a = e[1], i, k = 0;

	memcpy(&v, e + 2, 8);
	switch (e[0] & 3) {
	case 0:
		i = a % run.n;
		if (md->active[i]) {
			FZ_ASSERT(rcx_start(chans[i]) == -EBUSY);
			return;
		}
		FZ_ASSERT(!rcx_start(chans[i]));
		start(md, i, done);
		break;
	case 1:
		for (i = 0; i < run.n; i++)
			if (!md->active[i])
				idle[k++] = chans[i];
		if (!k)
			return;
		FZ_ASSERT(!rcx_startall(k, idle));
		for (i = 0; i < run.n; i++)
			if (!md->active[i])
				start(md, i, done);
		break;
	case 2:
		message(md, !(a & 1), (uint32_t)v, (uint32_t)(v >> 32) & 0xffff,
			done);
		break;
	default:
		if (!run.send)
			return;
		i = a % run.n;
		ready(md->s)[i] = v;
		md->ready[i] = v;
		break;
	}
	settle(ctx);
	check(md, chans, done);
}

/* A bound set: events in order, then the peer leaves. */
static void bound(struct rcx_ctx *ctx, struct rcx_group *g,
		  struct rcx_req **chans, const uint8_t **ev, int nev)
{
	struct model md = { .g = g,
			    .s = to_chan(chans[0])->set,
			    .lag = ch_window(run.slots, run.n) - 1 };
	struct rcx_status st;
	int i, flag;

	FZ_ASSERT(md.s->state == SET_UP && md.s->ep);
	FZ_ASSERT(md.s->proto == RCX_CHAN_SEND ||
		  md.s->proto == RCX_CHAN_WRITE_IMM);
	FZ_ASSERT(run.proto == RCX_CHAN_AUTO || run.proto == 3 ||
		  run.proto == md.s->proto);
	if (!run.send) {
		FZ_ASSERT(answered(g, 0) && md.s->peer_len <= run.len);
		FZ_ASSERT(!run.answers || (int)run.answer.proto == md.s->proto);
	}
	for (i = 0; i < nev && md.s->state == SET_UP; i++)
		event(ctx, &md, chans, ev[i]);
	for (i = 0; i < run.n && !md.active[i]; i++)
		;
	/* the peer frees its end (a remote write), if we can free ours:
	 * our free writes to it; else it leaves */
	if (run.peer_frees && i == run.n && md.s->state == SET_UP) {
		md.s->ctl->peer_free = 1;
		return;
	}
	fz_ep_close(md.s->ep);
	settle(ctx);
	for (i = 0; i < run.n; i++) {
		FZ_ASSERT(!rcx_test(&chans[i], &flag, &st) && flag);
		if (md.active[i])
			FZ_ASSERT(st.error && named(st.error));
	}
}

/* The bind as the setup says; its result (the handles: chans). */
static int do_bind(struct rcx_req *init, struct rcx_info *info,
		   struct rcx_req **chans)
{
	struct rcx_status st;
	struct rcx_req *eph;
	long long end;
	int flag, ret;

	if (run.blocking)
		return run.n == 1 ? rcx_bind(init, info, chans)
				  : rcx_mbind(init, run.n, info, chans);
	ret = run.n == 1 ? rcx_ibind(init, info, chans, &eph)
			 : rcx_imbind(init, run.n, info, chans, &eph);
	FZ_ASSERT(!ret && eph);
	if (run.free_early) {
		struct rcx_req *tmp[4];

		memcpy(tmp, chans, sizeof(tmp));
		FZ_ASSERT(!rcx_bind_free(tmp, run.n));
		memset(chans, 0, 4 * sizeof(*chans));
	}
	/* the script always ends; a connection that never comes takes
	 * RCX_CONNECT_TIMEOUT_MS */
	end = now_ms() + 5000;
	do {
		FZ_ASSERT(!rcx_test(&eph, &flag, &st));
		FZ_ASSERT(flag || now_ms() < end);
	} while (!flag);
	FZ_ASSERT(!eph);
	if (run.free_early)
		FZ_ASSERT(st.error);
	return st.error;
}

static void chans_free(struct rcx_req **chans)
{
	struct rcx_req *eph = NULL;

	if (!run.ifree) {
		FZ_ASSERT(!rcx_bind_free(chans, run.n));
		return;
	}
	FZ_ASSERT(!rcx_ibind_free(chans, run.n, &eph));
	FZ_ASSERT(!rcx_wait(&eph, RCX_STATUS_IGNORE));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *ev[MAX_EVENTS];
	struct rcx_req *init = NULL, *chans[4] = { NULL };
	struct rcx_info *info;
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	uint8_t *msgs, *buf;
	size_t mlen;
	int nev, ret, k;

	if (size < 3 || size > 16384)
		return 0;
	setup(data);
	msgs = wrap(data + 3, size - 3, &mlen, ev, &nev);
	buf = malloc((run.slots - 1) * run.stride + run.len + 1);
	FZ_ASSERT(buf);
	ctx = fz_ctx_new();
	fz_hooks(on_sent, on_deliver);
	fz_peer_script(msgs, mlen);
	g = fz_pair_accept(ctx);
	/* a sender whose connection never comes gives up after 5 ms (what
	 * RCX_CONNECT_TIMEOUT_MS sets, which cannot go below 100) */
	ctx->cfg.connect_timeout_ms = 5;
	info = make_info();
	if (run.send)
		FZ_ASSERT(!rcx_send_init(g, buf, run.len, 1, TAG, &init));
	else
		FZ_ASSERT(!rcx_recv_init(g, buf, run.len, run.src, run.tag,
					 &init));

	for (k = 0; k < run.early; k++)
		rcx_progress(ctx);
	ret = do_bind(init, info, chans);
	FZ_ASSERT(named(ret));
	if (!run.send && ret == -EINVAL) /* the ends disagree: both fail */
		FZ_ASSERT(answered(g, -EINVAL));
	if (run.send && !ret)
		FZ_ASSERT(run.conn == CONN_EARLY || run.conn == CONN_LATE);
	if (!ret)
		bound(ctx, g, chans, ev, nev);
	if (chans[0] && (!ret || !run.blocking))
		chans_free(chans);

	FZ_ASSERT(!rcx_req_free(&init));
	if (info)
		rcx_info_free(&info);
	FZ_ASSERT(!rcx_group_free(&g));
	fz_ctx_destroy(ctx);
	free(buf);
	free(msgs);
	return 0;
}
