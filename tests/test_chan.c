/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels on rxe, 2 and 4 processes under rcx-run: bind/ibind
 * mixes, matching order, long runs with data verified, circular slots,
 * bundles with startall, rebind, mrebind of a subset, free after the group
 * is gone, and every misuse with its named error.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "lib/chan/chan_int.h"
#include "providers/shm/shm.h"
#include "tu.h"
#include "tu_mp.h"
#include "tu_scale.h"

static struct rcx_ctx *ctx;
static struct rcx_group *g;
static int rank, size;

static struct rcx_info *info_of(const char *proto, const char *slots,
				const char *stride)
{
	struct rcx_info *i = NULL;

	TP_CHECK_OK(rcx_info_create(&i));
	if (proto)
		TP_CHECK_OK(rcx_info_set(i, RCX_CHAN_PROTOCOL, proto));
	if (slots)
		TP_CHECK_OK(rcx_info_set(i, RCX_CHAN_SLOTS, slots));
	if (stride)
		TP_CHECK_OK(rcx_info_set(i, RCX_CHAN_STRIDE, stride));
	return i;
}

/* A bound pair 0 -> 1 (rank 0 sends); returns the channel. */
static struct rcx_req *bind_one(void *buf, size_t len, int tag,
				const struct rcx_info *info, bool nonblocking)
{
	struct rcx_req *init = NULL, *ch = NULL, *eph = NULL;

	if (rank == 0)
		TP_CHECK_OK(rcx_send_init(g, buf, len, 1, tag, &init));
	else
		TP_CHECK_OK(rcx_recv_init(g, buf, len, 0, tag, &init));
	if (nonblocking) {
		TP_CHECK_OK(rcx_ibind(init, info, &ch, &eph));
		TP_CHECK_OK(rcx_wait(&eph, RCX_STATUS_IGNORE));
	} else {
		TP_CHECK_OK(rcx_bind(init, info, &ch));
	}
	/* the input request is untouched and reusable */
	TP_CHECK_OK(rcx_req_free(&init));
	return ch;
}

/* One-way stream of n messages, each verified, over a bound pair. */
static void stream(const char *proto, const char *slots, int n, size_t len)
{
	unsigned long ns = slots ? strtoul(slots, NULL, 0) : 1;
	struct rcx_info *info = info_of(proto, slots, NULL);
	uint8_t *buf = calloc(ns, len);
	struct rcx_status st;
	struct rcx_req *ch;
	int i, bad = 0;

	ch = bind_one(buf, len, 7, info, rank == 1);
	for (i = 0; i < n && ch; i++) {
		int slot = (int)(i % ns);
		uint8_t *p = buf + (size_t)slot * len;

		if (rank == 0) {
			memset(p, (uint8_t)(i * 13 + 1), len);
			TP_CHECK_OK(rcx_start(ch));
			TP_CHECK_OK(rcx_wait(&ch, &st));
			continue;
		}
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(rcx_wait(&ch, &st));
		if (st.slot != slot || st.count != len || st.error ||
		    p[0] != (uint8_t)(i * 13 + 1) ||
		    p[len - 1] != (uint8_t)(i * 13 + 1))
			bad++;
	}
	TP_CHECK_EQ(bad, 0);
	if (rank == 1)
		printf("rank 1: %d %s messages of %zu bytes on %lu slot(s), "
		       "%d wrong\n",
		       i, proto, len, ns, bad);
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
	TP_CHECK(ch == NULL);
	rcx_info_free(&info);
	free(buf);
}

/*
 * 2 procs, send protocol, one slot, buffers in a window's memory
 * (rcx_win_allocate: on shared memory the peer maps it): a ping-pong of
 * n messages of len bytes each way, every byte of each checked, the
 * receive started before the reply's send. On shm a sender that finds
 * the receive posted copies the message straight into that buffer
 * (providers/shm: sent_direct counts it): it must have, at least once.
 */
#define MAPPED_PAT(i, b, r) ((uint8_t)((i)*7 + (b) + (r)*3))

/* the i-th message from rank r into rb: how many things are wrong;
 * again: start the next receive */
static int mapped_recv(struct rcx_req *ch, const uint8_t *rb, size_t len, int i,
		       int r, bool again)
{
	struct rcx_status st;
	int bad = 0;
	size_t b;

	TP_CHECK_OK(rcx_wait(&ch, &st));
	for (b = 0; b < len; b++)
		bad += rb[b] != MAPPED_PAT(i, b, r);
	/* the next receive, before this end's reply */
	if (again)
		TP_CHECK_OK(rcx_start(ch));
	return bad + (st.count != len) + (st.error != 0);
}

static void sc_mapped_len(size_t len, int n)
{
	struct rcx_info *info = info_of("send", NULL, NULL);
	struct rcx_req *init[2] = { NULL, NULL }, *ch[2] = { NULL, NULL };
	struct rcx_win *w = NULL;
	struct rcx_status st;
	uint8_t *sb = NULL, *rb;
	struct rcx_ep *ep;
	int i, bad = 0, peer = 1 - rank;
	size_t b;

	if (!TP_CHECK_OK(
		    rcx_win_allocate(g, 2 * len, 1, NULL, (void **)&sb, &w)))
		goto out;
	rb = sb + len;
	TP_CHECK_OK(rcx_send_init(g, sb, len, peer, 40 + rank, &init[0]));
	TP_CHECK_OK(rcx_recv_init(g, rb, len, peer, 40 + peer, &init[1]));
	/* the ping's two ends first, then the pong's */
	TP_CHECK_OK(rcx_bind(init[rank], info, &ch[rank]));
	TP_CHECK_OK(rcx_bind(init[1 - rank], info, &ch[1 - rank]));
	/* each receive is posted before the peer's message can be sent */
	if (ch[0] && ch[1])
		TP_CHECK_OK(rcx_start(ch[1]));
	for (i = 0; i < n && ch[0] && ch[1]; i++) {
		if (rank == 1)
			bad += mapped_recv(ch[1], rb, len, i, peer, i + 1 < n);
		for (b = 0; b < len; b++)
			sb[b] = MAPPED_PAT(i, b, rank);
		TP_CHECK_OK(rcx_start(ch[0]));
		TP_CHECK_OK(rcx_wait(&ch[0], &st));
		if (rank == 0)
			bad += mapped_recv(ch[1], rb, len, i, peer, i + 1 < n);
	}
	TP_CHECK_EQ(bad, 0);
	ep = ch[0] ? to_chan(ch[0])->set->ep : NULL;
	if (ep && !strcmp(rcx__obj_ops(ep)->name, "shm"))
		TP_CHECK(to_sep(ep)->sent_direct > 0);
out:
	/* in the order of the binds */
	rcx_bind_free(&ch[rank], 1);
	rcx_bind_free(&ch[1 - rank], 1);
	rcx_req_free(&init[0]);
	rcx_req_free(&init[1]);
	if (w)
		TP_CHECK_OK(rcx_win_free(&w));
	rcx_info_free(&info);
}

static void sc_mapped(void)
{
	sc_mapped_len(1024, 200);
	sc_mapped_len(5000, 50);
}

/*
 * 2 procs: rcx_chan_companion refused with -EINVAL and nothing made: a
 * value that is not a number from 0 to 2^32 - 1, a bundle, a second live
 * set of one direction to one peer with the value. Every refusal is
 * local (no handshake starts), so neither end waits for the other.
 */
static void sc_companion_bad(void)
{
	static const char *const bad[] = { "x", "-1", "4294967296", "7z" };
	uint64_t buf[2] = { 0 };
	struct rcx_req *init = NULL, *ch[2] = { NULL, NULL }, *one = NULL;
	struct rcx_info *info;
	size_t i;

	if (rank == 0)
		TP_CHECK_OK(rcx_send_init(g, buf, 8, 1, 50, &init));
	else
		TP_CHECK_OK(rcx_recv_init(g, buf, 8, 0, 50, &init));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		info = info_of("write_imm", NULL, NULL);
		TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_COMPANION, bad[i]));
		TP_CHECK_EQ(rcx_bind(init, info, &ch[0]), -EINVAL);
		TP_CHECK(ch[0] == NULL);
		rcx_info_free(&info);
	}
	info = info_of("write_imm", NULL, NULL);
	TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_COMPANION, "7"));
	TP_CHECK_EQ(rcx_mbind(init, 2, info, ch), -EINVAL);
	TP_CHECK(ch[0] == NULL && ch[1] == NULL);
	/* one is bound; a second of the same direction with 7 is refused */
	TP_CHECK_OK(rcx_bind(init, info, &one));
	TP_CHECK_EQ(rcx_bind(init, info, &ch[0]), -EINVAL);
	TP_CHECK(ch[0] == NULL);
	if (one)
		TP_CHECK_OK(rcx_bind_free(&one, 1));
	rcx_info_free(&info);
	TP_CHECK_OK(rcx_req_free(&init));
}

/*
 * 2 procs: 100,000 starts on one channel, every message verified (10,000
 * on a device where long cases are scaled down: tu_scale.h). A one-way
 * stream with the send protocol meets a receiver that has not started
 * yet most of the time, and rxe delays each RNR retry by a timer tick
 * (4 ms): write_imm waits for the receiver's credit instead. The 16-bit
 * message count in the immediate wraps only in the full count, which
 * shared memory runs every time (the count is the core's, not the
 * device's).
 */
static void sc_long(void)
{
	stream("write_imm", NULL, (int)tu_scale(100000, 10000), 64);
}

/*
 * 2 procs, write_imm on 4 slots: after the receiver's first start the
 * sender completes 4 messages (it may run 3 ahead of the receiver's
 * starts: each slot it writes is one the receiver gave back) while the
 * receiver waits in a barrier; one slot would deadlock here. The
 * receiver's next starts then complete with the messages already there,
 * each in its own slot. Then 400 more with the receiver pausing now and
 * then, every message checked in its slot.
 */
static void sc_ahead(void)
{
	struct rcx_info *info = info_of("write_imm", "4", NULL);
	uint64_t buf[4] = { 0 };
	struct rcx_req *init, *ch;
	struct rcx_status st;
	int k, bad = 0;

	if (rank == 0)
		TP_CHECK_OK(rcx_send_init(g, buf, 8, 1, 12, &init));
	else
		TP_CHECK_OK(rcx_recv_init(g, buf, 8, 0, 12, &init));
	TP_CHECK_OK(rcx_bind(init, info, &ch));
	if (rank == 1)
		TP_CHECK_OK(rcx_start(ch));
	for (k = 0; rank == 0 && k < 4; k++) {
		buf[k] = 100 + (uint64_t)k;
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(rcx_wait(&ch, &st));
	}
	TP_CHECK_OK(rcx_group_barrier(g));
	for (k = 0; k < 404; k++) {
		if (rank == 0 && k >= 4) {
			buf[k % 4] = 100 + (uint64_t)k;
			TP_CHECK_OK(rcx_start(ch));
			TP_CHECK_OK(rcx_wait(&ch, &st));
		} else if (rank == 1) {
			if (k)
				TP_CHECK_OK(rcx_start(ch));
			TP_CHECK_OK(rcx_wait(&ch, &st));
			bad += st.slot != k % 4 || st.count != 8 ||
			       buf[k % 4] != 100 + (uint64_t)k;
			if (k % 50 == 7)
				usleep(2000); /* the sender gets ahead */
		}
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
	rcx_req_free(&init);
	rcx_info_free(&info);
}

/*
 * 2 procs: four slots wrap 250 times with send, 1,000 with write_imm,
 * then 1,000 messages of 4 KiB on one; a tenth of each where long cases
 * are scaled down (tu_scale.h).
 */
static void sc_slots(void)
{
	int d = (int)tu_scale(1, 10);

	stream("send", "4", 1000 / d, 256);
	stream("write_imm", "4", 4000 / d, 256);
	stream("write_imm", NULL, 1000 / d, 4096);
}

/*
 * 2 procs: ping-pong over two channels, with -EBUSY on a second start;
 * 1,000 round trips, 100 where long cases are scaled down (tu_scale.h)
 */
static void sc_pingpong(void)
{
	uint64_t sv = 0, rv = 0;
	struct rcx_req *si, *ri, *sc, *rc, *e1, *e2;
	struct rcx_status st;
	int peer = 1 - rank, i, n = (int)tu_scale(1000, 100);

	TP_CHECK_OK(rcx_send_init(g, &sv, 8, peer, 1, &si));
	TP_CHECK_OK(rcx_recv_init(g, &rv, 8, peer, 1, &ri));
	/* blocking and nonblocking binds match each other */
	if (rank == 0) {
		TP_CHECK_OK(rcx_ibind(si, NULL, &sc, &e1));
		TP_CHECK_OK(rcx_ibind(ri, NULL, &rc, &e2));
		/* not bound yet (nothing has progressed): refused, not posted */
		TP_CHECK_EQ(rcx_start(sc), -EAGAIN);
		TP_CHECK_OK(rcx_wait(&e1, RCX_STATUS_IGNORE));
		TP_CHECK_OK(rcx_wait(&e2, RCX_STATUS_IGNORE));
	} else {
		TP_CHECK_OK(rcx_bind(ri, NULL, &rc));
		TP_CHECK_OK(rcx_bind(si, NULL, &sc));
	}
	rcx_group_barrier(g);
	for (i = 0; i < n; i++) {
		if (rank == 0) {
			TP_CHECK_OK(rcx_start(rc));
			sv = i;
			TP_CHECK_OK(rcx_start(sc));
			/* one message in flight: nothing posted */
			TP_CHECK_EQ(rcx_start(sc), -EBUSY);
			TP_CHECK_OK(rcx_wait(&sc, RCX_STATUS_IGNORE));
			TP_CHECK_OK(rcx_wait(&rc, &st));
			TP_CHECK_EQ(rv, (uint64_t)i + 1000000);
		} else {
			TP_CHECK_OK(rcx_start(rc));
			TP_CHECK_OK(rcx_wait(&rc, &st));
			TP_CHECK_EQ(rv, (uint64_t)i);
			sv = rv + 1000000;
			TP_CHECK_OK(rcx_start(sc));
			TP_CHECK_OK(rcx_wait(&sc, RCX_STATUS_IGNORE));
		}
		if (tp_failures())
			break;
	}
	TP_CHECK_EQ(i, n);
	if (rank == 0)
		printf("rank 0: %d round trips\n", i);
	{
		struct rcx_req *all[2] = { sc, rc };

		TP_CHECK_OK(rcx_bind_free(all, 2));
	}
	rcx_req_free(&si);
	rcx_req_free(&ri);
}

/* 2 procs: binds match in post order per tag, out of band */
static void sc_match(void)
{
	int tags[4] = { 3, 3, 4, 3 }, i, k;
	uint32_t val[4] = { 0 };
	struct rcx_req *init[4], *ch[4], *eph[4];
	struct rcx_status st;

	for (i = 0; i < 4; i++) {
		/* the receiver binds tag 4 first: order holds per tag */
		k = rank == 0 ? i : (i + 2) % 4;
		if (rank == 0)
			TP_CHECK_OK(rcx_send_init(g, &val[k], 4, 1, tags[k],
						  &init[k]));
		else
			TP_CHECK_OK(rcx_recv_init(g, &val[k], 4, 0, tags[k],
						  &init[k]));
		TP_CHECK_OK(rcx_ibind(init[k], NULL, &ch[k], &eph[k]));
	}
	TP_CHECK_OK(rcx_waitall(4, eph, RCX_STATUSES_IGNORE));
	for (i = 0; i < 4; i++) {
		if (rank == 0) {
			val[i] = 100 + i;
			TP_CHECK_OK(rcx_start(ch[i]));
		} else {
			TP_CHECK_OK(rcx_start(ch[i]));
		}
	}
	for (i = 0; i < 4; i++) {
		/*
		 * The k-th bind of a tag pairs with the peer's k-th of that
		 * tag. Tag 3 is bound by the sender as 0, 1, 3 and by the
		 * receiver as 3, 0, 1; tag 4 is index 2 on both sides.
		 */
		static const uint32_t expect[4] = { 101, 103, 102, 100 };

		TP_CHECK_OK(rcx_wait(&ch[i], &st));
		if (rank == 1)
			TP_CHECK_EQ(val[i], expect[i]);
	}
	TP_CHECK_OK(rcx_bind_free(ch, 4));
	for (i = 0; i < 4; i++)
		rcx_req_free(&init[i]);
}

/*
 * Start every channel of a bundle once, in one of four ways: all
 * together, two halves, one by one, the middle four together and the rest
 * one by one.
 */
static void bundle_round(struct rcx_req **ch, int mode)
{
	static const int single[] = { 0, 1, 6, 7 };
	int i;

	switch (mode) {
	case 0:
		TP_CHECK_OK(rcx_startall(8, ch));
		break;
	case 1:
		TP_CHECK_OK(rcx_startall(4, ch));
		TP_CHECK_OK(rcx_startall(4, ch + 4));
		break;
	case 2:
		for (i = 0; i < 8; i++)
			TP_CHECK_OK(rcx_start(ch[i]));
		break;
	default:
		TP_CHECK_OK(rcx_startall(4, ch + 2));
		for (i = 0; i < 4; i++)
			TP_CHECK_OK(rcx_start(ch[single[i]]));
		break;
	}
}

/* A bundle of n over 8-byte messages in buf, rank 0 sending; its init. */
static struct rcx_req *bind_bundle(uint64_t *buf, int tag, int n,
				   const struct rcx_info *info,
				   struct rcx_req **ch)
{
	struct rcx_req *init = NULL;

	if (rank == 0)
		TP_CHECK_OK(rcx_send_init(g, buf, 8, 1, tag, &init));
	else
		TP_CHECK_OK(rcx_recv_init(g, buf, 8, 0, tag, &init));
	TP_CHECK_OK(rcx_mbind(init, n, info, ch));
	return init;
}

/*
 * A write_imm bundle of 2 on contiguous slots: the sender starts both at
 * once, the receiver one at a time, waiting for each before it starts the
 * next (the sender must not hold the first back for the second's credit).
 */
static void bundle_staggered(void)
{
	struct rcx_req *init, *ch[2];
	uint64_t buf[2] = { 0 };
	struct rcx_info *info = info_of("write_imm", "2", "8");
	int i, r, bad = 0;

	init = bind_bundle(buf, 13, 2, info, ch);
	for (r = 0; r < 20; r++) {
		if (rank == 0) {
			buf[0] = 2 * (uint64_t)r + 1;
			buf[1] = 2 * (uint64_t)r + 2;
			TP_CHECK_OK(rcx_startall(2, ch));
			TP_CHECK_OK(rcx_waitall(2, ch, RCX_STATUSES_IGNORE));
			continue;
		}
		for (i = 0; i < 2; i++) {
			TP_CHECK_OK(rcx_start(ch[i]));
			TP_CHECK_OK(rcx_wait(&ch[i], RCX_STATUS_IGNORE));
			bad += buf[i] != 2 * (uint64_t)r + i + 1;
		}
	}
	TP_CHECK_EQ(bad, 0);
	TP_CHECK_OK(rcx_bind_free(ch, 2));
	rcx_req_free(&init);
	rcx_info_free(&info);
}

/*
 * 2 procs: a bundle of 8 on 16 contiguous slots goes round robin, channel
 * i's k-th start on slot (i + 8k) mod 16 (write_imm: consecutive channels
 * started together travel as one write); each message checked in its
 * slot; then mrebind of a subset; then a bundle of 2 started together at
 * one end, one by one at the other
 */
static void sc_bundle(void)
{
	struct rcx_req *init, *ch[8], *sub[3];
	struct rcx_status st[8];
	uint64_t buf[16], nbuf[4] = { 0 };
	struct rcx_info *info = info_of("write_imm", "16", "8");
	int i, r, slot, bad = 0;

	memset(buf, 0, sizeof(buf));
	init = bind_bundle(buf, 9, 8, info, ch);
	for (r = 0; r < 400; r++) {
		if (rank == 0)
			for (i = 0; i < 8; i++)
				buf[(i + 8 * r) % 16] =
					(uint64_t)r * 100 + i + 1;
		/* the two ends start in different ways too */
		bundle_round(ch, (r + rank * (r / 4)) % 4);
		TP_CHECK_OK(rcx_waitall(8, ch, st));
		for (i = 0; i < 8; i++) {
			slot = (i + 8 * r) % 16;
			bad += st[i].slot != slot || st[i].error ||
			       st[i].count != 8;
			if (rank == 1)
				bad += buf[slot] != (uint64_t)r * 100 + i + 1;
		}
	}
	TP_CHECK_EQ(bad, 0);
	/* take channels 2, 5, 7 out into a new bundle on a new buffer */
	sub[0] = ch[2];
	sub[1] = ch[5];
	sub[2] = ch[7];
	TP_CHECK_OK(rcx_mrebind(3, sub, nbuf, 8, 1 - rank, 10, RCX_CHAN_SEND,
				NULL));
	TP_CHECK(sub[0] == ch[2]); /* same handles */
	for (r = 0; r < 50; r++) {
		if (rank == 0)
			nbuf[0] = 7000 + r;
		TP_CHECK_OK(rcx_startall(3, sub));
		TP_CHECK_OK(rcx_waitall(3, sub, st));
		if (rank == 1)
			TP_CHECK_EQ(nbuf[0], 7000 + r);
		/* the rest of the old bundle still works */
		TP_CHECK_OK(rcx_start(ch[0]));
		TP_CHECK_OK(rcx_wait(&ch[0], &st[0]));
	}
	TP_CHECK_OK(rcx_bind_free(ch, 8));
	rcx_req_free(&init);
	rcx_info_free(&info);
	bundle_staggered();
}

/*
 * 2 procs, both ends auto: a bundle on contiguous slots gets write_imm
 * (its channels started together then go as one write); a stride with a
 * gap, one shared slot or a single channel gets send. Every message is
 * checked in its slot (the shared slot: its size and slot only).
 */
static void sc_bundle_auto(void)
{
	static const struct {
		const char *slots, *stride;
		int n, proto;
	} cases[] = {
		{ "16", NULL, 8, RCX_CHAN_WRITE_IMM },
		{ "16", "8", 4, RCX_CHAN_WRITE_IMM },
		{ "16", "16", 8, RCX_CHAN_SEND },
		{ NULL, NULL, 8, RCX_CHAN_SEND },
		{ "4", NULL, 1, RCX_CHAN_SEND },
	};
	uint64_t buf[32];
	struct rcx_req *init, *ch[8];
	struct rcx_status st[8];
	size_t k;
	int i, r, n, slots, step, at, bad = 0;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct rcx_info *info =
			info_of(NULL, cases[k].slots, cases[k].stride);

		n = cases[k].n;
		slots = cases[k].slots ? atoi(cases[k].slots) : 1;
		step = cases[k].stride ? atoi(cases[k].stride) / 8 : 1;
		memset(buf, 0, sizeof(buf));
		init = bind_bundle(buf, 30 + (int)k, n, info, ch);
		for (i = 0; i < n; i++)
			bad += to_chan(ch[i])->set->proto != cases[k].proto;
		for (r = 0; r < 40; r++) {
			for (i = 0; rank == 0 && i < n; i++)
				buf[(i + n * r) % slots * step] =
					(uint64_t)r * 100 + i + 1;
			TP_CHECK_OK(rcx_startall(n, ch));
			TP_CHECK_OK(rcx_waitall(n, ch, st));
			for (i = 0; i < n; i++) {
				at = (i + n * r) % slots;
				bad += st[i].slot != at || st[i].error ||
				       st[i].count != 8;
				if (rank == 1 && slots > 1)
					bad += buf[at * step] !=
					       (uint64_t)r * 100 + i + 1;
			}
		}
		TP_CHECK_OK(rcx_bind_free(ch, n));
		rcx_req_free(&init);
		rcx_info_free(&info);
	}
	TP_CHECK_EQ(bad, 0);
}

/* 4 procs: rebind to another peer and tag; free after the group is gone */
static void sc_rebind(void)
{
	uint64_t v = 0, w = 0;
	struct rcx_req *init, *ch;
	struct rcx_status st;
	int i;

	/* first 0->1 and 2->3, then 0->3 and 2->1 */
	if (rank % 2 == 0)
		TP_CHECK_OK(rcx_send_init(g, &v, 8, rank + 1, 5, &init));
	else
		TP_CHECK_OK(rcx_recv_init(g, &v, 8, rank - 1, 5, &init));
	TP_CHECK_OK(rcx_bind(init, NULL, &ch));
	for (i = 0; i < 10; i++) {
		if (rank % 2 == 0)
			v = rank * 100 + i;
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(rcx_wait(&ch, &st));
		if (rank % 2)
			TP_CHECK_EQ(v, (rank - 1) * 100 + i);
	}
	if (rank % 2 == 0)
		TP_CHECK_OK(rcx_rebind(ch, &w, 8, (rank + 3) % 4, 6,
				       RCX_CHAN_WRITE_IMM, NULL));
	else
		TP_CHECK_OK(rcx_rebind(ch, &w, 8, (rank + 1) % 4, 6,
				       RCX_CHAN_AUTO, NULL));
	for (i = 0; i < 10; i++) {
		if (rank % 2 == 0)
			w = 5000 + rank * 10 + i;
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(rcx_wait(&ch, &st));
		if (rank % 2)
			TP_CHECK_EQ(w, 5000 + ((rank + 1) % 4) * 10 + i);
	}
	rcx_req_free(&init);
	/* the group may go first; the channel lives on */
	TP_CHECK_OK(rcx_group_free(&g));
	if (rank % 2 == 0)
		w = 42;
	TP_CHECK_OK(rcx_start(ch));
	TP_CHECK_OK(rcx_wait(&ch, &st));
	if (rank % 2)
		TP_CHECK_EQ(w, 42);
	/* rebind needs the group it was bound on */
	TP_CHECK_EQ(rcx_rebind(ch, &w, 8, 0, 1, 0, NULL), -EINVAL);
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
}

/* 2 procs: misuse gets named errors and changes nothing */
static void sc_misuse(void)
{
	uint64_t v = 0, big[4], junk[8] = { 0 };
	struct rcx_req *init, *nb, *ch[2], *eph, *one;
	struct rcx_info *bad = info_of("carrier-pigeon", NULL, NULL);
	struct rcx_info *stride = info_of(NULL, "4", "4");
	struct rcx_info *okinfo = info_of("send", NULL, NULL);
	int peer = 1 - rank, ret;

	if (rank == 0)
		TP_CHECK_OK(rcx_send_init(g, &v, 8, peer, 2, &init));
	else
		TP_CHECK_OK(rcx_recv_init(g, &v, 8, peer, 2, &init));
	TP_CHECK_EQ(rcx_bind(NULL, NULL, &one), -EINVAL);
	TP_CHECK_EQ(rcx_bind(init, NULL, NULL), -EINVAL);
	TP_CHECK_EQ(rcx_bind(init, bad, &one), -EINVAL);
	TP_CHECK_EQ(rcx_bind(init, stride, &one), -EINVAL);
	/* not an info (no magic): refused, not taken for none */
	TP_CHECK_EQ(rcx_bind(init, (struct rcx_info *)(void *)junk, &one),
		    -EINVAL);
	TP_CHECK_EQ(rcx_mbind(init, 0, NULL, ch), -EINVAL);
	TP_CHECK_EQ(rcx_mbind(init, 256, NULL, ch), -EINVAL);
	/* a non-persistent request cannot be bound */
	if (rank == 0)
		TP_CHECK_OK(rcx_isend(g, &v, 8, peer, 99, &nb));
	else
		TP_CHECK_OK(rcx_irecv(g, &v, 8, peer, 99, &nb));
	TP_CHECK_EQ(rcx_bind(nb, NULL, &one), -EINVAL);
	TP_CHECK_OK(rcx_wait(&nb, RCX_STATUS_IGNORE));
	/* an active request cannot be bound */
	if (rank == 1) {
		TP_CHECK_OK(rcx_start(init));
		TP_CHECK_EQ(rcx_bind(init, NULL, &one), -EBUSY);
	}
	rcx_group_barrier(g);
	if (rank == 0)
		TP_CHECK_OK(rcx_send(g, &v, 8, peer, 2));
	else
		TP_CHECK_OK(rcx_wait(&init, RCX_STATUS_IGNORE));
	/* mismatched bundle size: both ends fail, with -EINVAL */
	ret = rcx_mbind(init, rank == 0 ? 2 : 1, NULL, ch);
	TP_CHECK_EQ(ret, -EINVAL);
	/* a receiver shorter than the sender: both fail */
	if (rank == 0)
		ret = rcx_send_init(g, big, sizeof(big), peer, 3, &one);
	else
		ret = rcx_recv_init(g, big, 8, peer, 3, &one);
	TP_CHECK_OK(ret);
	TP_CHECK_EQ(rcx_bind(one, NULL, ch), -EINVAL);
	rcx_req_free(&one);
	/* a good bind after all that still works */
	TP_CHECK_OK(rcx_bind(init, okinfo, &ch[0]));
	/* channels end with rcx_bind_free, not rcx_req_free */
	TP_CHECK_EQ(rcx_req_free(&ch[0]), -EINVAL);
	TP_CHECK(ch[0] != NULL);
	TP_CHECK_EQ(rcx_bind_free(NULL, 1), -EINVAL);
	one = init;
	TP_CHECK_EQ(rcx_bind_free(&one, 1), -EINVAL); /* not a channel */
	if (rank == 1) {
		TP_CHECK_OK(rcx_start(ch[0]));
		/* an active channel cannot be freed or rebound */
		TP_CHECK_EQ(rcx_bind_free(&ch[0], 1), -EBUSY);
		TP_CHECK_EQ(rcx_rebind(ch[0], &v, 8, 0, 2, 0, NULL), -EBUSY);
	}
	if (rank == 0) {
		TP_CHECK_OK(rcx_start(ch[0]));
		TP_CHECK_EQ(rcx_start(ch[0]), -EBUSY);
	}
	TP_CHECK_OK(rcx_wait(&ch[0], RCX_STATUS_IGNORE));
	eph = NULL;
	TP_CHECK_OK(rcx_ibind_free(&ch[0], 1, &eph));
	TP_CHECK_OK(rcx_wait(&eph, RCX_STATUS_IGNORE));
	TP_CHECK(ch[0] == NULL);
	rcx_req_free(&init);
	rcx_info_free(&bad);
	rcx_info_free(&stride);
	rcx_info_free(&okinfo);
}

/* Three messages 0 -> 1 over ch, from *buf: first + 0, 1, 2. */
static void three_messages(struct rcx_req *ch, uint64_t *buf, uint64_t first)
{
	struct rcx_status st;
	uint64_t i;

	for (i = 0; i < 3; i++) {
		if (rank == 0)
			*buf = first + i;
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(rcx_wait(&ch, &st));
		if (rank == 1)
			TP_CHECK_EQ(*buf, first + i);
	}
}

/*
 * Rank 0: *eph (a nonblocking rebind or free) has not completed, for the
 * peer has not acted yet; then rank 0 tells it to (a message on gotag)
 * and waits for *eph.
 */
static void go_then_wait(struct rcx_req **eph, int gotag)
{
	uint64_t go = 1;
	int flag = -1;

	TP_CHECK_OK(rcx_test(eph, &flag, RCX_STATUS_IGNORE));
	TP_CHECK_EQ(flag, 0); /* the peer has not acted yet */
	TP_CHECK_OK(rcx_send(g, &go, 8, 1, gotag));
	TP_CHECK_OK(rcx_wait(eph, RCX_STATUS_IGNORE));
}

/* Rank 1: waits for rank 0's message on gotag. */
static void wait_go(int gotag)
{
	uint64_t go = 0;

	TP_CHECK_OK(rcx_recv(g, &go, 8, 0, gotag, RCX_STATUS_IGNORE));
}

/*
 * 2 procs: rcx_irebind and rcx_ibind_free return before the peer has
 * freed its end (rank 1 does so only after a message that rank 0 sends
 * after the calls returned and their requests tested incomplete); the
 * requests complete once it has, and the rebound channel carries data.
 */
static void sc_async(void)
{
	struct rcx_req *ch, *eph = NULL;
	uint64_t v = 0, w = 0;

	ch = bind_one(&v, 8, 11, NULL, false);
	three_messages(ch, &v, 100);
	if (rank == 0) {
		TP_CHECK_OK(rcx_irebind(ch, &w, 8, 1, 12, RCX_CHAN_WRITE_IMM,
					NULL, &eph));
		go_then_wait(&eph, 99);
	} else {
		wait_go(99);
		TP_CHECK_OK(rcx_rebind(ch, &w, 8, 0, 12, RCX_CHAN_AUTO, NULL));
	}
	three_messages(ch, &w, 200);
	if (rank == 0) {
		TP_CHECK_OK(rcx_ibind_free(&ch, 1, &eph));
		TP_CHECK(ch == NULL);
		go_then_wait(&eph, 98);
	} else {
		wait_go(98);
		TP_CHECK_OK(rcx_bind_free(&ch, 1));
	}
	printf("rank %d: irebind and ibind_free returned before the peer "
	       "acted, completed after\n",
	       rank);
}

/*
 * 2 procs: the group goes while a rcx_irebind is under way (rank 0 frees
 * its only handle, and the persistent request, before the peer rebinds):
 * the rebind still binds on it, and the channel carries data. The new
 * bind used to read the freed group.
 */
static void sc_rebind_freed(void)
{
	struct rcx_req *init = NULL, *ch = NULL, *eph = NULL;
	struct rcx_group *sub = NULL;
	uint64_t v = 0, w = 0;

	if (!TP_CHECK_OK(rcx_group_split(g, 0, rank, &sub)))
		return;
	if (rank == 0)
		TP_CHECK_OK(rcx_send_init(sub, &v, 8, 1, 13, &init));
	else
		TP_CHECK_OK(rcx_recv_init(sub, &v, 8, 0, 13, &init));
	if (!TP_CHECK_OK(rcx_bind(init, NULL, &ch)))
		goto out;
	three_messages(ch, &v, 300);
	if (rank == 0) {
		TP_CHECK_OK(rcx_irebind(ch, &w, 8, 1, 14, RCX_CHAN_AUTO, NULL,
					&eph));
		rcx_req_free(&init);
		TP_CHECK_OK(rcx_group_free(&sub));
		go_then_wait(&eph, 97);
	} else {
		wait_go(97);
		TP_CHECK_OK(rcx_rebind(ch, &w, 8, 0, 14, RCX_CHAN_AUTO, NULL));
	}
	three_messages(ch, &w, 400);
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
out:
	rcx_req_free(&init);
	if (sub)
		TP_CHECK_OK(rcx_group_free(&sub));
}

/*
 * n channels from a persistent request 1 -> 0 (the receiver's from src,
 * tag rtag: a wildcard or the sender's), one message each; every status
 * names the sender's rank and tag, as the request's own would.
 */
static void status_round(const char *proto, const char *slots, int n, int src,
			 int rtag)
{
	struct rcx_info *info = info_of(proto, slots, slots ? "8" : NULL);
	struct rcx_req *init, *ch[4];
	struct rcx_status st[4];
	uint64_t buf[8] = { 0 };
	int i, k;

	if (rank == 1)
		TP_CHECK_OK(rcx_send_init(g, buf, 8, 0, 42, &init));
	else
		TP_CHECK_OK(rcx_recv_init(g, buf, 8, src, rtag, &init));
	TP_CHECK_OK(rcx_mbind(init, n, info, ch));
	for (k = 0; k < 3; k++) {
		memset(st, 0, sizeof(st));
		if (n == 1) {
			TP_CHECK_OK(rcx_start(ch[0]));
			TP_CHECK_OK(rcx_wait(&ch[0], &st[0]));
		} else {
			TP_CHECK_OK(rcx_startall(n, ch));
			TP_CHECK_OK(rcx_waitall(n, ch, st));
		}
		for (i = 0; i < n; i++) {
			TP_CHECK_EQ(st[i].error, 0);
			TP_CHECK_EQ(st[i].source, 1);
			TP_CHECK_EQ(st[i].tag, 42);
		}
	}
	TP_CHECK_OK(rcx_bind_free(ch, n));
	rcx_req_free(&init);
	rcx_info_free(&info);
}

/*
 * 2 procs: a channel's status carries source and tag, on both protocols,
 * from a named or a wildcard receive, alone and in a bundle (write_imm on
 * contiguous slots: fused), and after a rebind from a wildcard
 */
static void sc_status(void)
{
	static const char *const protos[] = { "send", "write_imm" };
	struct rcx_req *ch;
	struct rcx_status st;
	uint64_t v = 0;
	int p;

	for (p = 0; p < 2; p++) {
		status_round(protos[p], NULL, 1, 1, 42);
		status_round(protos[p], NULL, 1, RCX_ANY_SOURCE, RCX_ANY_TAG);
		status_round(protos[p], "4", 4, 1, 42);
		status_round(protos[p], "4", 4, RCX_ANY_SOURCE, RCX_ANY_TAG);
	}
	/* rebound from a wildcard: the matched sender and tag */
	ch = bind_one(&v, 8, 7, NULL, false);
	if (rank == 0)
		TP_CHECK_OK(
			rcx_rebind(ch, &v, 8, 1, 43, RCX_CHAN_WRITE_IMM, NULL));
	else
		TP_CHECK_OK(rcx_rebind(ch, &v, 8, RCX_ANY_SOURCE, RCX_ANY_TAG,
				       RCX_CHAN_AUTO, NULL));
	memset(&st, 0, sizeof(st));
	TP_CHECK_OK(rcx_start(ch));
	TP_CHECK_OK(rcx_wait(&ch, &st));
	TP_CHECK_EQ(st.source, 0);
	TP_CHECK_EQ(st.tag, 43);
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
}

/*
 * A completion reaches a channel two ways: a provider's dispatch hands a
 * success straight to its object's ok handler (verbs' cq_dispatch and
 * the direct poll), and anything else, or any completion where the
 * provider has no dispatch of its own, to its cb as an rcx_cqe. The
 * progress passes of a round below take one way or the other for every
 * completion, through a dispatch of the test's own, which counts the
 * handlers it called.
 */
#define PATH_MSGS 9
static int path_ok, path_cb;

static int path_dispatch(struct rcx_dev *dev, struct rcx_ctx *c, bool ok)
{
	struct rcx_cqe cqe[8];
	int n = c->cq_poll(dev, cqe, 8), i;

	for (i = 0; i < n; i++) {
		struct rcx_wct *w = (struct rcx_wct *)(uintptr_t)cqe[i].wr_id;

		if (ok && !cqe[i].status && w->ok) {
			path_ok++;
			w->ok(c, w, cqe[i].byte_len, cqe[i].imm,
			      cqe[i].has_imm);
		} else {
			path_cb++;
			w->cb(c, w, &cqe[i]);
		}
	}
	return n;
}

static int path_dispatch_ok(struct rcx_dev *dev, struct rcx_ctx *c)
{
	return path_dispatch(dev, c, true);
}

static int path_dispatch_cb(struct rcx_dev *dev, struct rcx_ctx *c)
{
	return path_dispatch(dev, c, false);
}

/* PATH_MSGS messages 0 -> 1 on 4 slots, each completion one way */
static void path_round(const char *proto, bool ok, struct rcx_status *st)
{
	struct rcx_info *info = info_of(proto, "4", "8");
	int (*saved)(struct rcx_dev *, struct rcx_ctx *);
	uint64_t buf[4] = { 0 };
	struct rcx_req *ch;
	int i;

	ch = bind_one(buf, 8, 16, info, false);
	rcx_info_free(&info);
	if (!ch)
		return;
	saved = ctx->cq_dispatch;
	ctx->cq_dispatch = ok ? path_dispatch_ok : path_dispatch_cb;
	ch->peek = NULL; /* every test a progress pass: the dispatch above */
	path_ok = path_cb = 0;
	for (i = 0; i < PATH_MSGS; i++) {
		if (rank == 0)
			buf[i % 4] = (uint64_t)i + 1;
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(rcx_wait(&ch, &st[i]));
		if (rank == 1)
			TP_CHECK_EQ(buf[i % 4], (uint64_t)i + 1);
	}
	ctx->cq_dispatch = saved;
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
}

/*
 * 2 procs: on both protocols the same messages complete a channel the
 * same, field by field, whether its handlers took them as ok (the
 * direct dispatch) or as cb (the generic one): error, count, slot, source
 * and tag, each also as expected.
 */
static void sc_paths(void)
{
	static const char *const protos[] = { "send", "write_imm" };
	struct rcx_status a[PATH_MSGS], b[PATH_MSGS];
	int p, i;

	for (p = 0; p < 2; p++) {
		memset(a, 0x5a, sizeof(a));
		memset(b, 0xa5, sizeof(b));
		/* a sender whose message goes inline completes its start
		 * at the post (write_imm: once its credit is there): its
		 * handler is not called for every message */
		bool early = rank == 0;

		path_round(protos[p], false, a);
		TP_CHECK(early || path_cb >= PATH_MSGS);
		path_round(protos[p], true, b);
		TP_CHECK(early || path_ok >= PATH_MSGS);
		for (i = 0; i < PATH_MSGS; i++) {
			TP_CHECK_EQ(b[i].error, a[i].error);
			TP_CHECK_EQ(b[i].count, a[i].count);
			TP_CHECK_EQ(b[i].slot, a[i].slot);
			TP_CHECK_EQ(b[i].source, a[i].source);
			TP_CHECK_EQ(b[i].tag, a[i].tag);
			TP_CHECK_EQ(b[i].error, 0);
			TP_CHECK_EQ(b[i].count, 8);
			TP_CHECK_EQ(b[i].slot, i % 4);
			if (rank == 1) { /* the receiver's */
				TP_CHECK_EQ(b[i].source, 0);
				TP_CHECK_EQ(b[i].tag, 16);
			}
		}
	}
}

/*
 * rank 1: wait outside rcx until the message v is in *b (no progress),
 * where the device writes it by itself (verbs); elsewhere it lands in a
 * progress pass (the tests below find it there)
 */
static void direct_landed(const uint64_t *b, uint64_t v)
{
	if (strcmp(ctx->ops->name, "verbs"))
		return;
	while (*(const volatile uint64_t *)b != v)
		;
}

/* rank 1: test channel i (*ch) until it is done: 8 bytes from 0 */
static void direct_done(struct rcx_req **ch, int i)
{
	struct rcx_status st;
	int flag = 0;

	memset(&st, 0x5a, sizeof(st));
	while (!flag)
		TP_CHECK_OK(rcx_test(ch, &flag, &st));
	TP_CHECK_EQ(st.error, 0);
	TP_CHECK_EQ(st.count, 8);
	TP_CHECK_EQ(st.slot, 0);
	TP_CHECK_EQ(st.source, 0);
	TP_CHECK_EQ(st.tag, 21 + i);
}

/*
 * 2 procs, two channels of the send protocol: the receiver tests
 * one channel while the other's message is there, alone (the test's poll
 * hands it to the other channel and reports the tested one not done) or
 * with the tested one's before or after it (one poll finds both): each
 * start is reported once, with its own status, and none before its
 * message came.
 */
static void sc_direct(void)
{
	struct rcx_info *info = info_of("send", NULL, NULL);
	struct rcx_req *ch[2];
	uint64_t buf[2] = { 0 }, go = 0, v;
	int r, t, o, a, k, flag;

	ch[0] = bind_one(&buf[0], 8, 21, info, false);
	ch[1] = bind_one(&buf[1], 8, 22, info, false);
	rcx_info_free(&info);
	for (r = 0; r < 8; r++) {
		t = r &
		    1; /* the channel tested first; o's message goes first */
		o = 1 - t;
		v = 100 + (uint64_t)r;
		if (rank == 0) {
			a = r < 6 ? o : t; /* from 6 on, t's goes first */
			buf[0] = buf[1] = v;
			TP_CHECK_OK(rcx_start(ch[a]));
			TP_CHECK_OK(rcx_wait(&ch[a], RCX_STATUS_IGNORE));
			if (r < 4) /* t's message once the peer tested */
				TP_CHECK_OK(rcx_recv(g, &go, 8, 1, 23,
						     RCX_STATUS_IGNORE));
			TP_CHECK_OK(rcx_start(ch[1 - a]));
			TP_CHECK_OK(rcx_wait(&ch[1 - a], RCX_STATUS_IGNORE));
			continue;
		}
		TP_CHECK_OK(rcx_start(ch[0]));
		TP_CHECK_OK(rcx_start(ch[1]));
		direct_landed(&buf[o], v);
		if (r < 4) {
			/* t's message is not sent yet: never done */
			for (k = 0; k < 20; k++) {
				flag = -1;
				TP_CHECK_OK(rcx_test(&ch[t], &flag,
						     RCX_STATUS_IGNORE));
				TP_CHECK_EQ(flag, 0);
			}
			direct_done(&ch[o], o);
			TP_CHECK_OK(rcx_send(g, &go, 8, 0, 23));
			direct_landed(&buf[t], v);
			direct_done(&ch[t], t);
		} else {
			direct_landed(&buf[t], v);
			direct_done(&ch[t], t);
			direct_done(&ch[o], o);
		}
	}
	TP_CHECK_OK(rcx_bind_free(&ch[0], 1));
	TP_CHECK_OK(rcx_bind_free(&ch[1], 1));
}

/* Every array call that takes channels, on reqs[0..n-1]: -EINVAL. */
static void chan_calls_refuse(int n, struct rcx_req **reqs)
{
	struct rcx_req *eph = NULL;

	TP_CHECK_EQ(rcx_startall(n, reqs), -EINVAL);
	TP_CHECK_EQ(rcx_bind_free(reqs, n), -EINVAL);
	TP_CHECK_EQ(rcx_ibind_free(reqs, n, &eph), -EINVAL);
	TP_CHECK(eph == NULL);
	TP_CHECK_EQ(rcx_mrebind(n, reqs, NULL, 0, 1 - rank, 15, RCX_CHAN_AUTO,
				NULL),
		    -EINVAL);
	TP_CHECK_EQ(rcx_waitall(n, reqs, RCX_STATUSES_IGNORE), -EINVAL);
}

/*
 * 2 procs: a channel twice in one array call is refused with -EINVAL and
 * changes nothing, for a pair and for a bundle of 20 with one of them
 * again at the end; then each carries messages and frees as usual.
 */
static void sc_twice(void)
{
	struct rcx_req *ch, *two[2], *init, *b[21];
	uint64_t v = 0, bv = 0;
	int i;

	ch = bind_one(&v, 8, 14, NULL, false);
	two[0] = two[1] = ch;
	chan_calls_refuse(2, two);
	TP_CHECK(two[0] == ch && two[1] == ch);
	init = bind_bundle(&bv, 16, 20, NULL, b);
	b[20] = b[7];
	chan_calls_refuse(21, b);
	TP_CHECK(b[7] == b[20]);
	three_messages(ch, &v, 300);
	for (i = 0; i < 3; i++) {
		TP_CHECK_OK(rcx_startall(20, b));
		TP_CHECK_OK(rcx_waitall(20, b, RCX_STATUSES_IGNORE));
	}
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
	TP_CHECK_OK(rcx_bind_free(b, 20));
	rcx_req_free(&init);
}

static void inline_cb(struct rcx_status *st, void *data)
{
	(void)st;
	(*(int *)data)++;
}

/* rank 0: a start of ch that completed at its post (verbs) reported by
 * rcx_test, once, to st or RCX_STATUS_IGNORE, after calls refused */
static void inline_report(struct rcx_req *ch, bool ignore)
{
	struct rcx_req *same = ch;
	struct rcx_status st;
	int flag = -1;

	/* one message in flight: not reported yet, so not started again */
	TP_CHECK_EQ(rcx_start(ch), -EBUSY);
	TP_CHECK_EQ(rcx_test(&same, NULL, &st), -EINVAL);
	TP_CHECK_EQ(rcx_test(NULL, &flag, &st), -EINVAL);
	TP_CHECK(same == ch && flag == -1);
	memset(&st, 0x5a, sizeof(st));
	/* verbs: done at the post; elsewhere it may take a few tests */
	do
		TP_CHECK_OK(rcx_test(&same, &flag,
				     ignore ? RCX_STATUS_IGNORE : &st));
	while (flag == 0);
	TP_CHECK(same == ch && flag == 1);
	if (!ignore) {
		TP_CHECK_EQ(st.error, 0);
		TP_CHECK_EQ(st.count, 8);
		TP_CHECK_EQ(st.slot, 0);
		TP_CHECK_EQ(st.source, 0);
		TP_CHECK_EQ(st.tag, 24);
	}
	/* inactive now: the empty status */
	flag = -1;
	TP_CHECK_OK(rcx_test(&same, &flag, &st));
	TP_CHECK(same == ch && flag == 1);
	TP_CHECK_EQ(st.slot, -1);
	TP_CHECK_EQ(st.count, 0);
}

/*
 * 2 procs, send protocol, one slot, 8 bytes: the sender's start goes
 * inline and is complete at its post. Its test reports it once with the
 * start's status (to a status or none), and a start or a bad test before
 * that report is refused and changes nothing; with a persistent
 * continuation attached at both ends the starts take the checked way and
 * the continuation takes each completion; detached, the fast way again.
 * Every message arrives with its count and slot.
 */
static void sc_inline(void)
{
	struct rcx_req *ch, *cr = NULL, *c2;
	struct rcx_status st, cst;
	uint64_t v = 0;
	int k, runs = 0, flag;

	ch = bind_one(&v, 8, 24, NULL, false);
	for (k = 0; k < 9; k++) {
		bool cont = k >= 3 && k < 6;

		if (k == 3) {
			TP_CHECK_OK(rcx_continue_init(ctx, NULL, &cr));
			c2 = ch;
			TP_CHECK_OK(rcx_continue(&c2, inline_cb, &runs,
						 RCX_CONT_PERSISTENT, &cst,
						 cr));
			TP_CHECK(c2 == ch);
		}
		if (k == 6) /* freeing it drops the persistent continuation */
			TP_CHECK_OK(rcx_req_free(&cr));
		if (rank == 0)
			v = 1000 + (uint64_t)k;
		memset(&cst, 0x5a, sizeof(cst));
		TP_CHECK_OK(rcx_start(ch));
		if (cont) {
			TP_CHECK_OK(rcx_wait(&cr, RCX_STATUS_IGNORE));
			TP_CHECK_EQ(runs, k - 2);
			TP_CHECK_EQ(cst.error, 0);
			TP_CHECK_EQ(cst.count, 8);
			TP_CHECK_EQ(cst.slot, 0);
			/* the continuation took the completion */
			flag = 0;
			TP_CHECK_OK(rcx_test(&ch, &flag, &st));
			TP_CHECK_EQ(flag, 1);
			TP_CHECK_EQ(st.slot, -1);
		} else if (rank == 0) {
			inline_report(ch, k % 2);
		} else {
			memset(&st, 0x5a, sizeof(st));
			TP_CHECK_OK(rcx_wait(&ch, &st));
			TP_CHECK_EQ(st.count, 8);
			TP_CHECK_EQ(st.slot, 0);
			TP_CHECK_EQ(st.source, 0);
		}
		if (rank == 1)
			TP_CHECK_EQ(v, 1000 + (uint64_t)k);
		/* the next message once this one is in */
		TP_CHECK_OK(rcx_group_barrier(g));
	}
	TP_CHECK_EQ(runs, 3);
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
}

static const struct {
	const char *name;
	void (*fn)(void);
} scenarios[] = {
	{ "long", sc_long },
	{ "slots", sc_slots },
	{ "pingpong", sc_pingpong },
	{ "match", sc_match },
	{ "bundle", sc_bundle },
	{ "rebind", sc_rebind },
	{ "misuse", sc_misuse },
	{ "async", sc_async },
	{ "rebind_freed", sc_rebind_freed },
	{ "ahead", sc_ahead },
	{ "bundle_auto", sc_bundle_auto },
	{ "status", sc_status },
	{ "twice", sc_twice },
	{ "paths", sc_paths },
	{ "direct", sc_direct },
	{ "inline", sc_inline },
	{ "mapped", sc_mapped },
	{ "companion_bad", sc_companion_bad },
};

static int peer_main(int argc, char **argv)
{
	size_t i;

	if (argc < 1)
		return 2;
	if (!tp_world(NULL, &ctx, &g, &rank, &size))
		return tp_exit();
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(scenarios[i].name, argv[0]))
			scenarios[i].fn();
	if (g) {
		TP_CHECK_OK(rcx_group_barrier(g));
		TP_CHECK_OK(rcx_group_free(&g));
	}
	TP_CHECK_OK(rcx_ctx_destroy(ctx));
	return tp_exit();
}

#define RUN(n, sc, t) CU_ASSERT_EQUAL(tu_mp_run(n, "chan", sc, t), 0)

static void test_pingpong(void)
{
	RUN(2, "pingpong", 120);
}

static void test_match(void)
{
	RUN(2, "match", 120);
}

/* at full size on a busy emulated device 100,000 messages take 10 min */
static void test_long(void)
{
	RUN(2, "long", tu_scaled_down() ? 600 : 1200);
}

static void test_slots(void)
{
	RUN(2, "slots", 300);
}

static void test_bundle(void)
{
	RUN(2, "bundle", 300);
}

static void test_bundle_auto(void)
{
	RUN(2, "bundle_auto", 120);
}

static void test_rebind(void)
{
	RUN(4, "rebind", 300);
}

static void test_misuse(void)
{
	RUN(2, "misuse", 120);
}

static void test_async(void)
{
	RUN(2, "async", 120);
}

static void test_rebind_freed(void)
{
	RUN(2, "rebind_freed", 120);
}

static void test_mapped(void)
{
	RUN(2, "mapped", 120);
}

static void test_companion_bad(void)
{
	RUN(2, "companion_bad", 120);
}

static void test_ahead(void)
{
	RUN(2, "ahead", 120);
}

static void test_status(void)
{
	RUN(2, "status", 120);
}

static void test_paths(void)
{
	RUN(2, "paths", 120);
}

static void test_direct(void)
{
	RUN(2, "direct", 120);
}

static void test_inline(void)
{
	RUN(2, "inline", 120);
}

static void test_twice(void)
{
	RUN(2, "twice", 120);
}

static const CU_TestInfo tests[] = {
	{ "pingpong", test_pingpong },
	{ "match", test_match },
	{ "slots", test_slots },
	{ "bundle", test_bundle },
	{ "bundle_auto", test_bundle_auto },
	{ "rebind", test_rebind },
	{ "misuse", test_misuse },
	{ "long_100k", test_long }, /* 10,000 if scaled down */
	{ "irebind_ibind_free_async", test_async },
	{ "irebind_group_freed_before_it_ends", test_rebind_freed },
	{ "write_imm_sender_runs_ahead", test_ahead },
	{ "status_source_tag", test_status },
	{ "same_channel_twice", test_twice },
	{ "ok_and_cb_complete_alike", test_paths },
	{ "direct_poll_hands_over_to_either", test_direct },
	{ "inline_send_reported_once", test_inline },
	{ "send_into_window_memory_checked", test_mapped },
	{ "companion_refused_local", test_companion_bad },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_chan = { "chan", TU_DEVICE, NULL, NULL, tests };
const struct tu_peer tu_peer_chan = { "chan", peer_main };
