/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Window active messages (win_acc.c): software accumulates and their
 * replies arriving for a window of 1000 bytes. Each record is a flag
 * byte and the message's payload; the harness wraps it in an EAGER
 * header on the window's cid, and with flag bit 0 writes the window's id
 * (which changes from run to run) into the payload's id field. Oracles:
 * nothing outside the window is touched (ASan), and the window changes
 * only if a message addressed it.
 */
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "fz.h"
#include "lib/win/win_int.h"

#define WLEN	1000
#define WIN_OFF 4 /* the target window's id in the payload */

/* The records as wire messages; *hit: one of them names the window. */
static uint8_t *wrap(const uint8_t *data, size_t size, uint32_t id,
		     size_t *out_len, int *hit)
{
	struct fz_script s = { data, size };
	const uint8_t *rec;
	size_t len, n = 0;
	uint8_t *buf = fz_msgs_alloc(size);
	struct rcx__hdr h;

	*hit = 0;
	while (fz_next(&s, &rec, &len)) {
		size_t pl = len ? len - 1 : 0;

		/* a credit in each: room for the replies */
		h = fz_eager(RCX__CID_WIN, 0, pl);
		fz_msg(buf + n, &h, rec + 1, pl);
		if (len && (rec[0] & 1) && pl >= WIN_OFF + 4) {
			memcpy(buf + n + 2 + sizeof(h) + WIN_OFF, &id, 4);
			*hit = 1;
		}
		n += 2 + sizeof(h) + pl;
	}
	*out_len = n;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t before[WLEN];
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	struct rcx_win *w;
	struct rcx__conn *c;
	uint8_t *base, *msgs;
	size_t mlen;
	int hit, n;

	if (size > 16384)
		return 0;
	ctx = fz_ctx_new();
	FZ_ASSERT(!rcx_group_world(ctx, &g));
	base = malloc(WLEN);
	FZ_ASSERT(base);
	for (n = 0; n < WLEN; n++)
		base[n] = (uint8_t)(n * 7);
	memcpy(before, base, WLEN);
	FZ_ASSERT(!rcx_win_create(g, base, WLEN, 1, NULL, &w));
	msgs = wrap(data, size, w->id, &mlen, &hit);

	/* a connection of the window's group that the messages come in on */
	FZ_ASSERT(!rcx__conn_new(ctx, g, 0, &c));
	fz_peer_script(msgs, mlen);
	FZ_ASSERT(!rcx__conn_connect(c, "fz0", NULL, 0));
	for (n = 0;
	     c->state == RCX__CONN_UP || c->state == RCX__CONN_CONNECTING;
	     n++) {
		FZ_ASSERT(n < 1000000);
		if (!rcx_progress(ctx))
			rcx__cm_progress(ctx);
	}
	if (!hit)
		FZ_ASSERT(!memcmp(before, base, WLEN));
	rcx__conn_destroy(c);
	FZ_ASSERT(!rcx_win_free(&w));
	free(base);
	free(msgs);
	FZ_ASSERT(!rcx_group_free(&g));
	fz_ctx_destroy(ctx);
	return 0;
}
