/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Messages on a connection (conn.c on_rx, p2p.c matching, rendezvous and
 * FIN): each record of the input is one message the peer sends on an
 * established pair, header included, while this side has receives and a
 * rendezvous send outstanding. Oracle: the first malformed header (or a
 * numbered message past the one due) fails the connection with
 * RCX_ERR_PROTO, unless something ended it before; a number taken
 * already is dropped.
 */
#include <string.h>
#include <rcx/rcx.h>
#include "fz.h"

#define NREQ 5

/* What the script must do to the connection, replayed from the records. */
static int expected_end(const uint8_t *data, size_t size, size_t slot,
			size_t eager)
{
	struct fz_script s = { data, size };
	struct rcx__hdr h;
	const uint8_t *rec;
	size_t len;
	int rndv_open = 1; /* our rendezvous send: id 0 */
	uint32_t seq = 0;  /* the number due next (conn.c on_rx) */
	int32_t ahead;

	while (fz_next(&s, &rec, &len)) {
		if (len > slot)
			return RCX_ERR_LOCAL; /* local length error */
		memset(&h, 0, sizeof(h));
		memcpy(&h, rec, len < sizeof(h) ? len : sizeof(h));
		if (!rcx__hdr_ok(&h, (uint32_t)len, eager))
			return RCX_ERR_PROTO;
		if (h.type == RCX__MSG_BYE)
			return 0; /* closed, no failure */
		if (h.type != RCX__MSG_CREDIT) {
			/* numbered: a gap is a lost message, one taken
			 * already is dropped (sent again after a reconnection) */
			ahead = (int32_t)(h.seq - seq);
			if (ahead > 0)
				return RCX_ERR_PROTO;
			if (ahead < 0)
				continue;
			seq++;
		}
		if (h.type == RCX__MSG_FIN) {
			if (h.id || !rndv_open)
				return RCX_ERR_PROTO; /* FIN of nothing */
			rndv_open = 0;
		}
	}
	return RCX_ERR_PROC_FAILED; /* the peer disconnects at the end */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t small[64], big[4096], out[16], rndv[2048];
	struct rcx_req *r[NREQ] = { NULL };
	struct rcx_status st;
	struct rcx_ctx *ctx = fz_ctx_new();
	struct rcx_group *g;
	struct rcx__conn *c;
	size_t eager = ctx->cfg.eager_size;
	int want, i, flag, n;

	fz_peer_script(data, size);
	g = fz_pair_accept(ctx);
	c = g->conns[1];
	FZ_ASSERT(!rcx_irecv(g, small, sizeof(small), RCX_ANY_SOURCE,
			     RCX_ANY_TAG, &r[0]));
	FZ_ASSERT(!rcx_irecv(g, big, sizeof(big), 1, 7, &r[1]));
	FZ_ASSERT(!rcx_isend(g, out, sizeof(out), 1, 1, &r[2]));
	FZ_ASSERT(!rcx_isend(g, rndv, sizeof(rndv), 1, 2, &r[3]));
	FZ_ASSERT(!rcx_irecv(g, small, 0, 1, RCX_ANY_TAG, &r[4]));

	for (n = 0;
	     c->state == RCX__CONN_UP || c->state == RCX__CONN_CONNECTING;
	     n++) {
		FZ_ASSERT(n < 1000000); /* the script always ends */
		rcx_progress(ctx);
	}
	want = expected_end(data, size, sizeof(struct rcx__hdr) + eager, eager);
	if (want)
		FZ_ASSERT(c->state == RCX__CONN_FAILED && c->error == want);
	else
		FZ_ASSERT(c->state == RCX__CONN_CLOSED);

	for (i = 0; i < NREQ; i++) {
		if (!r[i] || rcx_test(&r[i], &flag, &st) || !flag)
			continue;
		if (i == 0 && !st.error)
			FZ_ASSERT(st.count <= sizeof(small));
		if (i == 1 && !st.error)
			FZ_ASSERT(st.count <= sizeof(big) && st.tag == 7);
		FZ_ASSERT(!r[i]);
	}
	FZ_ASSERT(!rcx_group_free(&g));
	/* what the group's end cancelled completes now */
	for (i = 0; i < NREQ; i++)
		if (r[i])
			rcx_wait(&r[i], &st);
	fz_ctx_destroy(ctx);
	return 0;
}
