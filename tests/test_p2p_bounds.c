/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Point-to-point at the edges of the eager formats: sizes around the
 * inline limit, a path MTU of 1024, the eager limit and the rendezvous
 * switch; tags on both sides of the largest one an eager message carries
 * in its immediate (conn.c); buffers at odd addresses; the receive
 * posted before the message, or after it arrived; ANY_TAG receives that
 * must report the tag sent; a short receive that truncates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "test_p2p.h"
#include "tu_mp.h"

static const size_t bsizes[] = { 1,    2,    63,   64,	 65,   128,
				 200,  256,  1000, 1023, 1024, 1025,
				 4096, 8191, 8192, 8193, 20000 };
#define NBSIZES (int)(sizeof(bsizes) / sizeof(bsizes[0]))

/* the largest tag of the immediate (2^23 - 1), one past it, the largest */
static const int btags[] = { 3, 0x7fffff, 0x800000, RCX_TAG_UB };
#define NBTAGS (int)(sizeof(btags) / sizeof(btags[0]))

#define BMAX   20000
#define B_GO   (RCX_TAG_UB - 1)
#define B_MARK (RCX_TAG_UB - 2)
#define B_OFFS 2 /* buffer offsets: 0 and 3 */

/*
 * One message: late = 0, the receiver posts first and says GO; late = 1,
 * the sender sends, then a mark; the receiver takes the mark first (the
 * message is then in, unexpected) and posts the receive after it.
 */
static void b_send(struct tp_job *j, int to, uint8_t *sb, size_t len, int tag,
		   int salt, bool late)
{
	struct rcx_status st;
	struct rcx_req *r = NULL;

	fill(sb, len, j->rank, to, salt);
	if (!late)
		TP_CHECK_OK(rcx_recv(j->g, NULL, 0, to, B_GO, NULL));
	if (!TP_CHECK_OK(rcx_isend(j->g, sb, len, to, tag, &r)))
		return;
	/* a rendezvous send completes once the receive is posted: the
	 * mark goes before the wait */
	if (late)
		TP_CHECK_OK(rcx_send(j->g, NULL, 0, to, B_MARK));
	if (TP_CHECK_OK(wait_req(j, &r, &st, "send")))
		check_sent(&st, len, "send");
}

/* the receive of b_send's message; any: with RCX_ANY_TAG */
static void b_recv(struct tp_job *j, int from, uint8_t *rb, size_t len, int tag,
		   int salt, bool late, bool any, const char *what)
{
	struct rcx_status st;
	struct rcx_req *r = NULL;

	memset(rb, FILL, len + GUARD);
	if (late)
		TP_CHECK_OK(rcx_recv(j->g, NULL, 0, from, B_MARK, NULL));
	if (!TP_CHECK_OK(rcx_irecv(j->g, rb, len, from, any ? RCX_ANY_TAG : tag,
				   &r)))
		return;
	if (!late)
		TP_CHECK_OK(rcx_send(j->g, NULL, 0, from, B_GO));
	if (!TP_CHECK_OK(wait_req(j, &r, &st, what)))
		return;
	check_status(&st, from, tag, len, 0, what);
	check_data(rb, len, true, from, j->rank, salt, what);
}

/* case k of every size, tag, offset and order; sender: this rank sends */
static void b_case(struct tp_job *j, int peer, uint8_t *sbase, uint8_t *rbase,
		   int k, bool sender)
{
	int late = k & 1, o = k >> 1 & 1, t = k / 4 % NBTAGS,
	    s = k / 4 / NBTAGS;
	size_t len = bsizes[s], off = o ? 3 : 0;
	char what[128];

	if (sender) {
		b_send(j, peer, sbase + off, len, btags[t], k, late);
		return;
	}
	snprintf(what, sizeof(what), "%zu bytes, tag %#x, offset %zu, %s", len,
		 btags[t], off, late ? "unexpected" : "posted first");
	b_recv(j, peer, rbase + off, len, btags[t], k, late, (s + t) & 1, what);
}

void sc_bounds(struct tp_job *j)
{
	int peer = partner(j), n = NBSIZES * NBTAGS * 4, k, sender;
	uint8_t *sb = malloc(BMAX + 8), *rb = malloc(BMAX + GUARD + 8);

	/* each rank of the pair sends in turn: the even one first */
	if (peer >= 0 && TP_CHECK(sb && rb))
		for (sender = 0; sender < 2; sender++)
			for (k = 0; k < n; k++)
				b_case(j, peer, sb, rb, k,
				       (j->rank & 1) == sender);
	free(sb);
	free(rb);
}
