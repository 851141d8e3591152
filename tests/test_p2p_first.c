/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Point-to-point's fast paths: an eager message that the head of the
 * posted receives takes without the matching walk (a wildcard head, a
 * head that does not match, a queue emptied and posted again,
 * unexpected messages pending, truncation, a receive of nothing, a head
 * freed while it waits), sent by rcx_isend's fast path (its status).
 * Rank 0 receives; ranks 1 and 2 send, each only when rank 0 tells it
 * to, so that rank 0 knows which receives are posted when each message
 * arrives.
 */
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "test_p2p.h"
#include "tu_mp.h"

enum {
	PF_GO = 900, /* rank 0 to a sender: send the next message */
	PF_MARK,     /* a sender to rank 0: what went before is in */
	PF_ANY,	     /* to a wildcard head */
	PF_TRUNC,    /* to a head too short for it */
	PF_AGAIN,    /* to a queue that was empty */
	PF_SECOND,   /* to the second receive, the head waiting */
	PF_FIRST,    /* to the head that waited */
	PF_UNEXP,    /* unexpected at rank 0 */
	PF_BESIDE,   /* posted first, with PF_UNEXP pending */
	PF_ANYTAG,   /* to an ANY_TAG head, with PF_UNEXP pending */
	PF_NOTHING,  /* to a receive of 0 bytes */
	PF_FREED,    /* to a head freed while it waits */
	PF_AFTER,    /* to the receive after it, once it is in */
};

/* one message of len bytes of a sender: tag is its salt too */
struct pf_msg {
	int from, tag;
	size_t len;
};

/* what rank 0 asks for, in order (PF_UNEXP goes with a mark) */
static const struct pf_msg pf_msgs[] = {
	{ 2, PF_ANY, 24 },   { 1, PF_TRUNC, 40 },  { 1, PF_AGAIN, 16 },
	{ 2, PF_SECOND, 8 }, { 1, PF_FIRST, 12 },  { 1, PF_UNEXP, 20 },
	{ 2, PF_BESIDE, 8 }, { 2, PF_ANYTAG, 64 }, { 1, PF_NOTHING, 8 },
	{ 1, PF_FREED, 24 }, { 1, PF_AFTER, 8 },
};
#define PF_N  (int)TP_COUNT(pf_msgs)
#define PF_SZ 64

static void pf_sender(struct tp_job *j)
{
	uint8_t sb[PF_SZ];
	struct rcx_status st;
	struct rcx_req *r;
	int i;

	for (i = 0; i < PF_N; i++) {
		const struct pf_msg *m = &pf_msgs[i];

		if (m->from != j->rank)
			continue;
		TP_CHECK_OK(rcx_recv(j->g, NULL, 0, 0, PF_GO, NULL));
		fill(sb, m->len, j->rank, 0, m->tag);
		r = NULL;
		if (!TP_CHECK_OK(rcx_isend(j->g, sb, m->len, 0, m->tag, &r)))
			return;
		/* an eager send is complete once it is posted */
		if (TP_CHECK_OK(wait_req(j, &r, &st, "send"))) {
			check_sent(&st, m->len, "send");
			TP_CHECK_EQ(st.source, j->rank);
			TP_CHECK_EQ(st.tag, m->tag);
		}
		if (m->tag == PF_UNEXP)
			TP_CHECK_OK(rcx_send(j->g, NULL, 0, 0, PF_MARK));
	}
}

/* tell msg's sender to send it */
static void pf_go(struct tp_job *j, int tag)
{
	int i;

	for (i = 0; i < PF_N && pf_msgs[i].tag != tag; i++)
		;
	TP_CHECK_OK(rcx_send(j->g, NULL, 0, pf_msgs[i].from, PF_GO));
}

/* r complete with msg tag (from, len) in b of blen bytes */
static void pf_got(struct tp_job *j, struct rcx_req **r, uint8_t *b,
		   size_t blen, int tag, const char *what)
{
	const struct pf_msg *m = pf_msgs;
	struct rcx_status st;
	size_t n;

	while (m->tag != tag)
		m++;
	n = m->len < blen ? m->len : blen;
	if (!TP_CHECK_OK(wait_req(j, r, &st, what)))
		return;
	check_status(&st, m->from, tag, n, m->len > blen ? RCX_ERR_TRUNCATE : 0,
		     what);
	if (b)
		check_data(b, n, true, m->from, j->rank, tag, what);
}

/* r still waits for its message */
static void pf_waits(struct rcx_req **r, const char *what)
{
	int flag = 1;

	TP_CHECK_OK(rcx_test(r, &flag, NULL));
	if (flag)
		TP_FAIL("%s: complete before its message was sent", what);
}

/*
 * Receives of (src0, tag0) and (src1, tag1) posted in that order into
 * b[0] and b[1], 32 bytes each; the message of receive `first` is sent
 * first: it completes while the other waits; then the other's.
 */
static void pf_two(struct tp_job *j, uint8_t **b, struct rcx_req **r, int src0,
		   int tag0, int src1, int tag1, int first)
{
	int tags[2] = { tag0, tag1 }, i, k;

	memset(b[0], FILL, PF_SZ + GUARD);
	memset(b[1], FILL, PF_SZ + GUARD);
	TP_CHECK_OK(rcx_irecv(j->g, b[0], 32, src0, tag0, &r[0]));
	TP_CHECK_OK(rcx_irecv(j->g, b[1], 32, src1, tag1, &r[1]));
	for (i = 0; i < 2; i++) {
		k = i ? !first : first;
		pf_go(j, tags[k]);
		pf_got(j, &r[k], b[k], 32, tags[k],
		       k ? "the second receive" : "the head");
		if (!i)
			pf_waits(&r[!k], "the receive not matched");
	}
}

static void pf_receiver(struct tp_job *j)
{
	uint8_t *b[3];
	struct rcx_req *r[4];
	int i;

	for (i = 0; i < 3; i++)
		b[i] = rbuf_new(PF_SZ);
	if (!TP_CHECK(b[0] && b[1] && b[2]))
		goto out;

	/* a wildcard head; the second receive is not for that message, and
	 * then the head, too short for the next */
	pf_two(j, b, r, RCX_ANY_SOURCE, PF_ANY, 1, PF_TRUNC, 0);
	/* the queue was emptied by the head's match: posted again */
	memset(b[2], FILL, PF_SZ + GUARD);
	TP_CHECK_OK(rcx_irecv(j->g, b[2], 32, 1, PF_AGAIN, &r[2]));
	pf_go(j, PF_AGAIN);
	pf_got(j, &r[2], b[2], 32, PF_AGAIN, "queue posted again");
	/* a head that does not match: the second receive takes it */
	pf_two(j, b, r, 1, PF_FIRST, 2, PF_SECOND, 1);

	/* a message unexpected here, then heads posted beside it */
	pf_go(j, PF_UNEXP);
	TP_CHECK_OK(rcx_recv(j->g, NULL, 0, 1, PF_MARK, NULL));
	memset(b[0], FILL, PF_SZ + GUARD);
	memset(b[1], FILL, PF_SZ + GUARD);
	memset(b[2], FILL, PF_SZ + GUARD);
	TP_CHECK_OK(
		rcx_irecv(j->g, b[0], 32, RCX_ANY_SOURCE, PF_BESIDE, &r[0]));
	pf_go(j, PF_BESIDE);
	pf_got(j, &r[0], b[0], 32, PF_BESIDE, "head beside an unexpected");
	TP_CHECK_OK(rcx_irecv(j->g, b[1], PF_SZ, 2, RCX_ANY_TAG, &r[1]));
	pf_go(j, PF_ANYTAG);
	pf_got(j, &r[1], b[1], PF_SZ, PF_ANYTAG,
	       "ANY_TAG head beside an unexpected");
	TP_CHECK_OK(rcx_irecv(j->g, b[2], 32, 1, PF_UNEXP, &r[2]));
	pf_got(j, &r[2], b[2], 32, PF_UNEXP, "the unexpected one");

	/* a head of 0 bytes */
	TP_CHECK_OK(rcx_irecv(j->g, NULL, 0, 1, PF_NOTHING, &r[3]));
	pf_go(j, PF_NOTHING);
	pf_got(j, &r[3], NULL, 0, PF_NOTHING, "head of 0 bytes");

	/* a head freed while it waits: its message still lands, and the
	 * one after it (same sender, so in after it) goes to the next */
	memset(b[0], FILL, PF_SZ + GUARD);
	memset(b[1], FILL, PF_SZ + GUARD);
	TP_CHECK_OK(rcx_irecv(j->g, b[0], 32, 1, PF_FREED, &r[0]));
	TP_CHECK_OK(rcx_req_free(&r[0]));
	TP_CHECK_OK(rcx_irecv(j->g, b[1], 32, 1, PF_AFTER, &r[1]));
	pf_go(j, PF_FREED);
	pf_go(j, PF_AFTER);
	pf_got(j, &r[1], b[1], 32, PF_AFTER, "the receive after a freed one");
	check_data(b[0], 24, true, 1, j->rank, PF_FREED, "a freed head");
out:
	for (i = 0; i < 3; i++)
		free(b[i]);
}

void sc_posted_first(struct tp_job *j)
{
	if (j->rank == 0)
		pf_receiver(j);
	else if (j->rank <= 2)
		pf_sender(j);
}
