/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Point-to-point across processes, through the rcx-run launcher: the first
 * message on a fresh connection, every size on both sides of the
 * eager/rendezvous switch, ANY_SOURCE/ANY_TAG, non-overtaking order,
 * truncation, a many-message storm, persistent requests, messages to
 * self, and sleeping on the event fd.
 *
 * Each CUnit test runs one scenario of the "p2p" peer role in a job of 2 or
 * 4 ranks; the ranks check with TP_* and the job must exit 0.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <rcx/rcx.h>
#include "tu.h"
#include "tu_mp.h"

/* One wait inside a scenario; past it the request counts as lost. */
#ifndef WAIT_MS
#define WAIT_MS 120000
#endif
#define GUARD 64
#define FILL  0xee

struct job {
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	int rank;
	int size;
};

/*
 * A byte pattern that differs between neighbouring bytes, 256-byte blocks
 * and 64 KiB blocks, and between senders, receivers and messages: a
 * misplaced chunk or a message delivered to the wrong receive shows.
 */
static uint8_t pat(size_t i, int src, int dst, int salt)
{
	return (uint8_t)(i + (i >> 8) * 3 + (i >> 16) * 5 + src * 37 +
			 dst * 11 + salt * 101);
}

static void fill(void *buf, size_t len, int src, int dst, int salt)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pat(i, src, dst, salt);
}

/* Pattern over len bytes, then GUARD bytes still FILL (no overrun). */
static bool check_data(const void *buf, size_t len, bool guard, int src,
		       int dst, int salt, const char *what)
{
	const uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		if (b[i] != pat(i, src, dst, salt)) {
			TP_FAIL("%s: byte %zu of %zu is 0x%02x, want 0x%02x",
				what, i, len, b[i], pat(i, src, dst, salt));
			return false;
		}
	}
	for (i = 0; guard && i < GUARD; i++) {
		if (b[len + i] != FILL) {
			TP_FAIL("%s: %zu bytes received, byte %zu past them "
				"was overwritten",
				what, len, i);
			return false;
		}
	}
	return true;
}

/* A receive buffer of len bytes followed by a guard, all FILL. */
static uint8_t *rbuf_new(size_t len)
{
	uint8_t *b = malloc(len + GUARD);

	if (b)
		memset(b, FILL, len + GUARD);
	return b;
}

static bool check_status(const struct rcx_status *st, int source, int tag,
			 size_t count, int error, const char *what)
{
	if (st->source == source && st->tag == tag && st->count == count &&
	    st->error == error)
		return true;
	TP_FAIL("%s: status {source %d, tag %d, count %zu, error %d}, want "
		"{%d, %d, %zu, %d}",
		what, st->source, st->tag, st->count, st->error, source, tag,
		count, error);
	return false;
}

/* A completed send: no error, every byte transferred. */
static bool check_sent(const struct rcx_status *st, size_t count,
		       const char *what)
{
	if (st->error == 0 && st->count == count)
		return true;
	TP_FAIL("%s: send status {count %zu, error %d}, want {%zu, 0}", what,
		st->count, st->error, count);
	return false;
}

/* What test/wait report for a NULL or inactive request. */
static bool check_empty(const struct rcx_status *st, const char *what)
{
	if (st->source == RCX_ANY_SOURCE && st->tag == RCX_ANY_TAG &&
	    st->error == 0 && st->count == 0)
		return true;
	TP_FAIL("%s: status {source %d, tag %d, count %zu, error %d} is not "
		"empty",
		what, st->source, st->tag, st->count, st->error);
	return false;
}

/*
 * Complete one request, sleeping on the context between tests: a request
 * that never completes is reported, not waited for until the launcher's
 * timeout.
 */
static int wait_req(struct job *j, struct rcx_req **r, struct rcx_status *st,
		    const char *what)
{
	long long end = tu_now_ms() + WAIT_MS;
	int flag = 0, ret;

	for (;;) {
		ret = rcx_test(r, &flag, st);
		if (ret || flag)
			return ret;
		if (tu_now_ms() > end) {
			TP_FAIL("%s: not complete after %d ms", what, WAIT_MS);
			return -ETIMEDOUT;
		}
		rcx_ctx_wait(j->ctx, 100);
	}
}

static int wait_all(struct job *j, int n, struct rcx_req **r,
		    struct rcx_status *sts, const char *what)
{
	long long end = tu_now_ms() + WAIT_MS;
	int flag = 0, ret, i, left;

	for (;;) {
		ret = rcx_testall(n, r, &flag, sts);
		if (ret || flag)
			return ret;
		if (tu_now_ms() > end) {
			/* complete what is done: r[] keeps the stuck ones */
			for (i = 0, left = 0; i < n; i++)
				if (r[i] && !rcx_test(&r[i], &flag, NULL) &&
				    !flag)
					left++;
			TP_FAIL("%s: %d of %d requests not complete after %d "
				"ms",
				what, left, n, WAIT_MS);
			return -ETIMEDOUT;
		}
		rcx_ctx_wait(j->ctx, 100);
	}
}

/* The other rank of this rank's pair (0-1, 2-3, ...), or -1. */
static int partner(const struct job *j)
{
	int p = j->rank ^ 1;

	return p < j->size ? p : -1;
}

/* ---- sizes: every size between all pairs, data and status checked */

static const size_t sizes[] = {
	0,    1,    2,	  3,	7,    8,     63,       64,
	4095, 4096, 8191, 8192, 8193, 65536, 1u << 20, 4u << 20,
};
#define NSIZES	 (int)(sizeof(sizes) / sizeof(sizes[0]))
#define MAX_SIZE (4u << 20)

static void sc_sizes(struct job *j)
{
	int n = j->size, me = j->rank, peers = n - 1, k, p, i;
	struct rcx_req **r = calloc(2 * peers, sizeof(*r));
	struct rcx_status *st = calloc(2 * peers, sizeof(*st));
	uint8_t **sb = calloc(n, sizeof(*sb)), **rb = calloc(n, sizeof(*rb));
	char what[96];

	if (!TP_CHECK(r && st && sb && rb))
		goto out;
	for (p = 0; p < n; p++) {
		if (p == me)
			continue;
		sb[p] = malloc(MAX_SIZE);
		rb[p] = malloc(MAX_SIZE + GUARD);
		if (!TP_CHECK(sb[p] && rb[p]))
			goto out;
	}
	for (k = 0; k < NSIZES; k++) {
		size_t len = sizes[k];

		/* all receives first, then all sends: some messages find
		 * their receive posted, some arrive before it */
		for (p = 0, i = 0; p < n; p++) {
			if (p == me)
				continue;
			memset(rb[p], FILL, len + GUARD);
			/* a zero-byte message needs no buffer at all */
			TP_CHECK_OK(rcx_irecv(j->g, len ? rb[p] : NULL, len, p,
					      k, &r[i++]));
		}
		for (p = 0; p < n; p++) {
			if (p == me)
				continue;
			fill(sb[p], len, me, p, k);
			TP_CHECK_OK(rcx_isend(j->g, len ? sb[p] : NULL, len, p,
					      k, &r[i++]));
		}
		snprintf(what, sizeof(what), "sizes: %zu bytes", len);
		if (!TP_CHECK_OK(wait_all(j, i, r, st, what))) {
			for (p = 0, i = 0; p < n; p++) {
				if (p == me)
					continue;
				if (r[i])
					TP_FAIL("receive from %d stuck", p);
				if (r[peers + i++])
					TP_FAIL("send to %d stuck", p);
			}
			goto out;
		}
		for (p = 0, i = 0; p < n; p++) {
			if (p == me)
				continue;
			snprintf(what, sizeof(what), "%zu bytes from %d", len,
				 p);
			check_status(&st[i], p, k, len, 0, what);
			check_data(rb[p], len, true, p, me, k, what);
			snprintf(what, sizeof(what), "send of %zu bytes to %d",
				 len, p);
			check_sent(&st[peers + i], len, what);
			i++;
		}
	}

	/* blocking forms: rank 0 ping-pongs with each other rank */
	for (k = 11; k < NSIZES; k += 2) {
		size_t len = sizes[k];
		struct rcx_status s;

		for (p = 1; p < n; p++) {
			int q = me ? 0 : p, salt = 100 + k;

			if (me && me != p)
				continue;
			memset(rb[q], FILL, len + GUARD);
			fill(sb[q], len, me, q, salt);
			snprintf(what, sizeof(what),
				 "blocking %zu bytes from %d", len, q);
			if (me == 0) {
				TP_CHECK_OK(
					rcx_send(j->g, sb[q], len, q, 1000));
				TP_CHECK_OK(rcx_recv(j->g, rb[q], len, q, 1001,
						     &s));
				check_status(&s, q, 1001, len, 0, what);
			} else {
				TP_CHECK_OK(rcx_recv(j->g, rb[q], len, q, 1000,
						     &s));
				check_status(&s, q, 1000, len, 0, what);
				TP_CHECK_OK(
					rcx_send(j->g, sb[q], len, q, 1001));
			}
			check_data(rb[q], len, true, q, me, salt, what);
		}
	}
out:
	for (p = 0; sb && rb && p < n; p++) {
		free(sb[p]);
		free(rb[p]);
	}
	free(sb);
	free(rb);
	free(st);
	free(r);
}

/* ---- early: the first message on each new connection */

/*
 * Sent the moment rcx_group_world returns, before any receive is posted:
 * the peer may still be completing its side of the connection.
 */
static void sc_early(struct job *j)
{
	int n = j->size, me = j->rank, p, i = 0;
	uint64_t *out = calloc(n, sizeof(*out)), *in = calloc(n, sizeof(*in));
	struct rcx_req **r = calloc(2 * n, sizeof(*r));
	struct rcx_status *st = calloc(2 * n, sizeof(*st));

	if (!TP_CHECK(out && in && r && st))
		goto out;
	for (p = 0; p < n; p++) {
		if (p == me)
			continue;
		out[p] = 1000u * me + p;
		TP_CHECK_OK(rcx_isend(j->g, &out[p], sizeof(out[p]), p, 1,
				      &r[i++]));
	}
	for (p = 0; p < n; p++)
		if (p != me)
			TP_CHECK_OK(rcx_irecv(j->g, &in[p], sizeof(in[p]), p, 1,
					      &r[i++]));
	if (!TP_CHECK_OK(wait_all(j, i, r, st, "first messages"))) {
		for (p = 0, i = n - 1; p < n; p++)
			if (p != me && r[i++])
				TP_FAIL("nothing from rank %d", p);
		goto out;
	}
	for (p = 0; p < n; p++)
		if (p != me && !TP_CHECK_EQ(in[p], 1000u * p + me))
			TP_FAIL("first message from %d lost or wrong", p);
out:
	free(st);
	free(r);
	free(in);
	free(out);
}

/* ---- any: ANY_SOURCE and ANY_TAG, mixed with specific receives */

#define ANY_SMALL 64
#define ANY_LARGE 20000 /* rendezvous */
#define ANY_D	  32
#define ANY_E	  30000

/* Mark source s seen; false (and a failure) if out of range or twice. */
static bool seen_once(int *seen, int n, int s, const char *what)
{
	if (s < 1 || s >= n) {
		TP_FAIL("%s: source %d is not a sender", what, s);
		return false;
	}
	if (seen[s]++) {
		TP_FAIL("%s: source %d seen twice", what, s);
		return false;
	}
	return true;
}

static void any_root(struct job *j)
{
	int n = j->size, m = n - 1, i, s;
	struct rcx_req **r = calloc(3 * m, sizeof(*r));
	struct rcx_status *st = calloc(3 * m, sizeof(*st)), one;
	uint8_t *buf = malloc(3 * m * (ANY_LARGE + GUARD));
	int *seen = calloc(n, sizeof(*seen));

	if (!TP_CHECK(r && st && buf && seen))
		goto out;
	memset(buf, FILL, 3 * m * (ANY_LARGE + GUARD));
#define SLOT(i) (buf + (size_t)(i) * (ANY_LARGE + GUARD))

	/*
	 * Phase 1, all receives posted before anything is sent, in this
	 * order: (s, 200+s) for each s, (ANY_SOURCE, 300) x m, (ANY_SOURCE,
	 * ANY_TAG) x m. Matching takes the first posted receive that fits,
	 * so whatever the arrival order, the tag-200 messages land in the
	 * specific ones, the tag-300 messages in the second group and only
	 * the tag-100 messages in the fully wild ones.
	 */
	for (s = 1; s < n; s++)
		TP_CHECK_OK(rcx_irecv(j->g, SLOT(s - 1), ANY_SMALL, s, 200 + s,
				      &r[s - 1]));
	for (i = 0; i < m; i++)
		TP_CHECK_OK(rcx_irecv(j->g, SLOT(m + i), ANY_LARGE,
				      RCX_ANY_SOURCE, 300, &r[m + i]));
	for (i = 0; i < m; i++)
		TP_CHECK_OK(rcx_irecv(j->g, SLOT(2 * m + i), ANY_SMALL,
				      RCX_ANY_SOURCE, RCX_ANY_TAG,
				      &r[2 * m + i]));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (!TP_CHECK_OK(wait_all(j, 3 * m, r, st, "any phase 1")))
		goto out;
	for (s = 1; s < n; s++) {
		check_status(&st[s - 1], s, 200 + s, ANY_SMALL, 0, "specific");
		check_data(SLOT(s - 1), ANY_SMALL, true, s, 0, 2, "specific");
	}
	for (i = 0; i < m; i++) {
		s = st[m + i].source;
		if (!seen_once(seen, n, s, "(ANY_SOURCE, 300)"))
			continue;
		check_status(&st[m + i], s, 300, ANY_LARGE, 0,
			     "(ANY_SOURCE, 300)");
		check_data(SLOT(m + i), ANY_LARGE, true, s, 0, 3,
			   "(ANY_SOURCE, 300)");
	}
	memset(seen, 0, n * sizeof(*seen));
	for (i = 0; i < m; i++) {
		s = st[2 * m + i].source;
		if (!seen_once(seen, n, s, "(ANY_SOURCE, ANY_TAG)"))
			continue;
		check_status(&st[2 * m + i], s, 100 + s, ANY_SMALL, 0,
			     "(ANY_SOURCE, ANY_TAG)");
		check_data(SLOT(2 * m + i), ANY_SMALL, true, s, 0, 1,
			   "(ANY_SOURCE, ANY_TAG)");
	}

	/*
	 * Phase 2, receives posted after the messages were sent (they wait
	 * as unexpected): first (ANY_SOURCE, 600) must pick the large
	 * messages past the small ones queued before them, then
	 * (ANY_SOURCE, ANY_TAG) gets the small ones. The first barrier keeps
	 * them from meeting the receives of phase 1: the senders are not
	 * ordered among themselves.
	 */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	memset(seen, 0, n * sizeof(*seen));
	for (i = 0; i < m; i++) {
		memset(buf, FILL, ANY_E + GUARD);
		TP_CHECK_OK(
			rcx_recv(j->g, buf, ANY_E, RCX_ANY_SOURCE, 600, &one));
		s = one.source;
		if (!seen_once(seen, n, s, "late (ANY_SOURCE, 600)"))
			continue;
		check_status(&one, s, 600, ANY_E, 0, "late (ANY_SOURCE, 600)");
		check_data(buf, ANY_E, true, s, 0, 6, "late (ANY_SOURCE, 600)");
	}
	memset(seen, 0, n * sizeof(*seen));
	for (i = 0; i < m; i++) {
		memset(buf, FILL, ANY_D + GUARD);
		TP_CHECK_OK(rcx_recv(j->g, buf, ANY_D, RCX_ANY_SOURCE,
				     RCX_ANY_TAG, &one));
		s = one.source;
		if (!seen_once(seen, n, s, "late (ANY_SOURCE, ANY_TAG)"))
			continue;
		check_status(&one, s, 500 + s, ANY_D, 0,
			     "late (ANY_SOURCE, ANY_TAG)");
		check_data(buf, ANY_D, true, s, 0, 5,
			   "late (ANY_SOURCE, ANY_TAG)");
	}

	/* Phase 3: (s, ANY_TAG) in reverse rank order picks by source */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (s = n - 1; s >= 1; s--) {
		memset(buf, FILL, 16 + GUARD);
		TP_CHECK_OK(rcx_recv(j->g, buf, 16, s, RCX_ANY_TAG, &one));
		check_status(&one, s, 700 + s, 16, 0, "(source, ANY_TAG)");
		check_data(buf, 16, true, s, 0, 7, "(source, ANY_TAG)");
	}
#undef SLOT
out:
	free(seen);
	free(buf);
	free(st);
	free(r);
}

static void any_sender(struct job *j)
{
	static uint8_t a[ANY_SMALL], b[ANY_SMALL], c[ANY_LARGE], d[ANY_D],
		e[ANY_E], f[16];
	struct rcx_req *r[3];
	int me = j->rank;

	fill(a, sizeof(a), me, 0, 1);
	fill(b, sizeof(b), me, 0, 2);
	fill(c, sizeof(c), me, 0, 3);
	fill(d, sizeof(d), me, 0, 5);
	fill(e, sizeof(e), me, 0, 6);
	fill(f, sizeof(f), me, 0, 7);
	/* phase 1: after rank 0 has posted everything */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_isend(j->g, a, sizeof(a), 0, 100 + me, &r[0]));
	TP_CHECK_OK(rcx_isend(j->g, b, sizeof(b), 0, 200 + me, &r[1]));
	TP_CHECK_OK(rcx_isend(j->g, c, sizeof(c), 0, 300, &r[2]));
	TP_CHECK_OK(wait_all(j, 3, r, RCX_STATUSES_IGNORE, "any sends"));
	/* phase 2: once rank 0 is through phase 1 and before it posts (the
	 * large send completes later) */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_isend(j->g, d, sizeof(d), 0, 500 + me, &r[0]));
	TP_CHECK_OK(rcx_isend(j->g, e, sizeof(e), 0, 600, &r[1]));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(wait_all(j, 2, r, RCX_STATUSES_IGNORE, "late sends"));
	/* phase 3: once rank 0 is through phase 2 */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_send(j->g, f, sizeof(f), 0, 700 + me));
}

static void sc_any(struct job *j)
{
	if (j->rank == 0)
		any_root(j);
	else
		any_sender(j);
}

/* ---- order: non-overtaking between one sender and one receiver */

#define ORD_N	    1000
#define ORD_TAG	    42
#define ORD_TAG_GO  43
#define ORD_TAG_END 44

/* Sizes cycle through eager and rendezvous ones (at least 4 bytes). */
static size_t ord_len(int i)
{
	static const size_t t[] = {
		8, 100, 8192, 8193, 16, 30000, 4096, 70000
	};

	return t[(i * 5) % 8];
}

static void ord_layout(size_t *off, size_t *total)
{
	int i;

	*total = 0;
	for (i = 0; i < ORD_N; i++) {
		off[i] = *total;
		*total += ord_len(i) + GUARD;
	}
}

static void ord_sender(struct job *j, int to, uint8_t *arena, const size_t *off,
		       struct rcx_req **r)
{
	static const char *const name[] = { "pre-posted", "late", "mixed" };
	struct rcx_status st;
	int ph, i;

	for (ph = 0; ph < 3; ph++) {
		for (i = 0; i < ORD_N; i++) {
			uint8_t *m = arena + off[i];
			uint32_t seq = i;

			fill(m, ord_len(i), j->rank, to, ph);
			memcpy(m, &seq, sizeof(seq));
		}
		if (ph != 1)
			TP_CHECK_OK(
				rcx_recv(j->g, NULL, 0, to, ORD_TAG_GO, &st));
		for (i = 0; i < ORD_N; i++)
			TP_CHECK_OK(rcx_isend(j->g, arena + off[i], ord_len(i),
					      to, ORD_TAG, &r[i]));
		/* after the last message on the same connection */
		if (ph == 1)
			TP_CHECK_OK(rcx_send(j->g, NULL, 0, to, ORD_TAG_END));
		if (!TP_CHECK_OK(wait_all(j, ORD_N, r, RCX_STATUSES_IGNORE,
					  name[ph])))
			return;
	}
}

static void ord_receiver(struct job *j, int from, uint8_t *arena,
			 const size_t *off, size_t total, struct rcx_req **r,
			 struct rcx_status *st)
{
	static const char *const name[] = { "pre-posted", "late", "mixed" };
	int ph, i, wrong;

	for (ph = 0; ph < 3; ph++) {
		memset(arena, FILL, total);
		/*
		 * 0: every receive posted before the sender starts; 1: none
		 * posted until all messages are here (the end marker comes
		 * after them on the connection); 2: half before, half racing
		 * with the arrivals.
		 */
		if (ph == 1)
			TP_CHECK_OK(rcx_recv(j->g, NULL, 0, from, ORD_TAG_END,
					     RCX_STATUS_IGNORE));
		for (i = 0; i < ORD_N; i++) {
			if (ph == 2 && i == ORD_N / 2)
				TP_CHECK_OK(rcx_send(j->g, NULL, 0, from,
						     ORD_TAG_GO));
			TP_CHECK_OK(rcx_irecv(j->g, arena + off[i], ord_len(i),
					      from, ORD_TAG, &r[i]));
		}
		if (ph == 0)
			TP_CHECK_OK(rcx_send(j->g, NULL, 0, from, ORD_TAG_GO));
		if (!TP_CHECK_OK(wait_all(j, ORD_N, r, st, name[ph])))
			return;
		for (i = 0, wrong = 0; i < ORD_N; i++) {
			uint8_t *m = arena + off[i];
			uint32_t seq;

			memcpy(&seq, m, sizeof(seq));
			if (seq != (uint32_t)i || st[i].count != ord_len(i)) {
				if (!wrong++)
					TP_FAIL("%s: receive %d got message "
						"%" PRIu32 " (%zu bytes)",
						name[ph], i, seq, st[i].count);
				continue;
			}
			check_status(&st[i], from, ORD_TAG, ord_len(i), 0,
				     name[ph]);
			/* the sequence number replaced the first bytes */
			fill(m, sizeof(seq), from, j->rank, ph);
			check_data(m, ord_len(i), true, from, j->rank, ph,
				   name[ph]);
		}
		TP_CHECK_EQ(wrong, 0);
	}
}

static void sc_order(struct job *j)
{
	size_t *off = calloc(ORD_N, sizeof(*off)), total;
	struct rcx_req **r = calloc(ORD_N, sizeof(*r));
	struct rcx_status *st = calloc(ORD_N, sizeof(*st));
	uint8_t *arena = NULL;
	int p = partner(j);

	if (!TP_CHECK(off && r && st))
		goto out;
	ord_layout(off, &total);
	arena = malloc(total);
	if (!TP_CHECK(arena))
		goto out;
	/* odd ranks send to the even rank below them */
	if (p >= 0 && j->rank & 1)
		ord_sender(j, p, arena, off, r);
	else if (p >= 0)
		ord_receiver(j, p, arena, off, total, r, st);
out:
	free(arena);
	free(st);
	free(r);
	free(off);
}

/* ---- truncate: a message longer than its receive */

enum {
	TR_GO = 50,
	TR_EAGER,
	TR_RNDV,
	TR_RNDV0,
	TR_EAGER0,
	TR_AFTER,
	TR_LATE_E,
	TR_LATE_R,
	TR_END
};

static void tr_sender(struct job *j, int to)
{
	static uint8_t m100[100], m100k[100000], m64[64];
	struct rcx_status st[5];
	struct rcx_req *r[5];
	int i;

	fill(m100, sizeof(m100), j->rank, to, 1);
	fill(m100k, sizeof(m100k), j->rank, to, 2);
	fill(m64, sizeof(m64), j->rank, to, 3);
	TP_CHECK_OK(rcx_recv(j->g, NULL, 0, to, TR_GO, RCX_STATUS_IGNORE));
	TP_CHECK_OK(rcx_isend(j->g, m100, 100, to, TR_EAGER, &r[0]));
	TP_CHECK_OK(rcx_isend(j->g, m100k, 100000, to, TR_RNDV, &r[1]));
	TP_CHECK_OK(rcx_isend(j->g, m100k, 100000, to, TR_RNDV0, &r[2]));
	TP_CHECK_OK(rcx_isend(j->g, m100, 100, to, TR_EAGER0, &r[3]));
	TP_CHECK_OK(rcx_isend(j->g, m64, 64, to, TR_AFTER, &r[4]));
	/* the sender is not told about truncation: its sends succeed */
	if (TP_CHECK_OK(wait_all(j, 5, r, st, "sends to truncate")))
		for (i = 0; i < 5; i++)
			check_sent(&st[i],
				   i == 1 || i == 2 ? 100000
				   : i == 4	    ? 64
						    : 100,
				   "send to truncate");
	/* the same, arriving before the receives are posted */
	TP_CHECK_OK(rcx_isend(j->g, m100, 100, to, TR_LATE_E, &r[0]));
	TP_CHECK_OK(rcx_isend(j->g, m100k, 100000, to, TR_LATE_R, &r[1]));
	TP_CHECK_OK(rcx_send(j->g, NULL, 0, to, TR_END));
	if (TP_CHECK_OK(wait_all(j, 2, r, st, "late sends to truncate"))) {
		check_sent(&st[0], 100, "late send to truncate");
		check_sent(&st[1], 100000, "late send to truncate");
	}
}

static void tr_receiver(struct job *j, int from)
{
	uint8_t *b10 = rbuf_new(10), *b50k = rbuf_new(50000),
		*b64 = rbuf_new(64);
	struct rcx_status st[4], s;
	struct rcx_req *r[4], *q;

	if (!TP_CHECK(b10 && b50k && b64))
		goto out;
	TP_CHECK_OK(rcx_irecv(j->g, b10, 10, from, TR_EAGER, &r[0]));
	TP_CHECK_OK(rcx_irecv(j->g, b50k, 50000, from, TR_RNDV, &r[1]));
	/* nothing fits at all: still complete, count 0 */
	TP_CHECK_OK(rcx_irecv(j->g, NULL, 0, from, TR_RNDV0, &r[2]));
	TP_CHECK_OK(rcx_irecv(j->g, NULL, 0, from, TR_EAGER0, &r[3]));
	TP_CHECK_OK(rcx_send(j->g, NULL, 0, from, TR_GO));
	if (TP_CHECK_OK(wait_all(j, 4, r, st, "truncated receives"))) {
		check_status(&st[0], from, TR_EAGER, 10, RCX_ERR_TRUNCATE,
			     "100 bytes into 10");
		check_data(b10, 10, true, from, j->rank, 1,
			   "100 bytes into 10");
		check_status(&st[1], from, TR_RNDV, 50000, RCX_ERR_TRUNCATE,
			     "100000 bytes into 50000");
		check_data(b50k, 50000, true, from, j->rank, 2,
			   "100000 bytes into 50000");
		check_status(&st[2], from, TR_RNDV0, 0, RCX_ERR_TRUNCATE,
			     "100000 bytes into 0");
		check_status(&st[3], from, TR_EAGER0, 0, RCX_ERR_TRUNCATE,
			     "100 bytes into 0");
	}
	/* the connection carries on normally */
	TP_CHECK_OK(rcx_recv(j->g, b64, 64, from, TR_AFTER, &s));
	check_status(&s, from, TR_AFTER, 64, 0, "after truncation");
	check_data(b64, 64, true, from, j->rank, 3, "after truncation");

	/* unexpected messages truncate the same way; with the status
	 * ignored the error is the return value */
	TP_CHECK_OK(rcx_recv(j->g, NULL, 0, from, TR_END, RCX_STATUS_IGNORE));
	memset(b10, FILL, 10 + GUARD);
	memset(b50k, FILL, 50000 + GUARD);
	if (TP_CHECK_OK(rcx_irecv(j->g, b10, 10, from, TR_LATE_E, &q))) {
		TP_CHECK_EQ(rcx_wait(&q, RCX_STATUS_IGNORE), RCX_ERR_TRUNCATE);
		TP_CHECK(q == NULL);
	}
	check_data(b10, 10, true, from, j->rank, 1, "late 100 into 10");
	TP_CHECK_EQ(rcx_recv(j->g, b50k, 50000, from, TR_LATE_R, &s),
		    RCX_ERR_TRUNCATE);
	check_status(&s, from, TR_LATE_R, 50000, RCX_ERR_TRUNCATE,
		     "late 100000 into 50000");
	check_data(b50k, 50000, true, from, j->rank, 2,
		   "late 100000 into 50000");
out:
	free(b10);
	free(b50k);
	free(b64);
}

static void sc_truncate(struct job *j)
{
	int p = partner(j);

	/* even ranks send to the odd rank above them */
	if (p >= 0 && !(j->rank & 1))
		tr_sender(j, p);
	else if (p >= 0)
		tr_receiver(j, p);
}

/* ---- storm: many small messages from every other rank to rank 0 */

#define STORM_TOTAL 10000
#define STORM_WIN   64
#define STORM_MAX   256
#define STORM_NTAGS 32

struct storm_hdr {
	uint32_t seq;
	uint32_t sender;
	uint32_t tag;
	uint32_t len;
};

static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static uint32_t storm_seed(int sender)
{
	return 0x9e3779b9u * (uint32_t)sender + 12345u;
}

static int storm_count(int sender, int nsenders)
{
	return STORM_TOTAL / nsenders + (sender - 1 < STORM_TOTAL % nsenders);
}

/* Message seq of a sender, from its generator state; returns the length. */
static size_t storm_msg(uint32_t *s, int sender, uint32_t seq, uint8_t *buf,
			int *tag)
{
	struct storm_hdr h;
	size_t len, i;

	*tag = (int)(xorshift(s) % STORM_NTAGS);
	len = sizeof(h) + xorshift(s) % (STORM_MAX - sizeof(h) + 1);
	h.seq = seq;
	h.sender = (uint32_t)sender;
	h.tag = (uint32_t)*tag;
	h.len = (uint32_t)len;
	memcpy(buf, &h, sizeof(h));
	for (i = sizeof(h); i < len; i++)
		buf[i] = (uint8_t)xorshift(s);
	return len;
}

static uint64_t fnv1a(const uint8_t *b, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void storm_sender(struct job *j)
{
	static uint8_t buf[STORM_WIN][STORM_MAX];
	struct rcx_req *r[STORM_WIN] = { NULL };
	struct rcx_status st[STORM_WIN];
	int n = storm_count(j->rank, j->size - 1), i, k, idx, flag, tag;
	uint32_t s = storm_seed(j->rank);
	long long end = tu_now_ms() + WAIT_MS;

	for (i = 0; i < n; i++) {
		/*
		 * First half: fill the window, then waitall it. Second half:
		 * a sliding window, one slot freed by testany at a time.
		 */
		if (i < n / 2) {
			k = i % STORM_WIN;
			if (k == 0 && i &&
			    TP_CHECK_OK(rcx_waitall(STORM_WIN, r, st)))
				for (idx = 0; idx < STORM_WIN; idx++)
					TP_CHECK_EQ(st[idx].error, 0);
		} else {
			for (k = 0; k < STORM_WIN && r[k]; k++)
				;
			while (k == STORM_WIN) {
				if (!TP_CHECK_OK(rcx_testany(STORM_WIN, r, &idx,
							     &flag, &st[0])))
					return;
				if (flag && idx != RCX_UNDEFINED) {
					TP_CHECK_EQ(st[0].error, 0);
					k = idx;
				} else if (tu_now_ms() > end) {
					TP_FAIL("storm: sends stuck at %d", i);
					return;
				} else {
					rcx_ctx_wait(j->ctx, 100);
				}
			}
		}
		storm_msg(&s, j->rank, i, buf[k], &tag);
		if (!TP_CHECK_OK(rcx_isend(j->g, buf[k],
					   ((struct storm_hdr *)buf[k])->len, 0,
					   tag, &r[k])))
			return;
	}
	if (TP_CHECK_OK(rcx_waitall(STORM_WIN, r, st)))
		for (idx = 0; idx < STORM_WIN; idx++)
			TP_CHECK_EQ(st[idx].error, 0);
}

static void storm_root(struct job *j)
{
	static uint8_t buf[STORM_WIN][STORM_MAX];
	int ns = j->size - 1, s, i, idx, flag, tag, got = 0, posted = 0;
	int total = 0;
	struct rcx_req *r[STORM_WIN] = { NULL }, *extra;
	struct rcx_status st;
	uint64_t *sum = calloc(j->size, sizeof(*sum));
	uint64_t *want = calloc(j->size, sizeof(*want));
	int *count = calloc(j->size, sizeof(*count));
	uint8_t **seen = calloc(j->size, sizeof(*seen));
	long long end = tu_now_ms() + 4 * WAIT_MS;
	uint8_t tmp[STORM_MAX];

	if (!TP_CHECK(sum && want && count && seen))
		goto out;
	/* what each sender will send, from the same generator */
	for (s = 1; s <= ns; s++) {
		uint32_t g = storm_seed(s);
		int n = storm_count(s, ns);

		for (i = 0; i < n; i++) {
			size_t len = storm_msg(&g, s, i, tmp, &tag);

			want[s] += fnv1a(tmp, len);
		}
		total += n;
		seen[s] = calloc(n, 1);
		if (!TP_CHECK(seen[s]))
			goto out;
	}
	TP_CHECK_EQ(total, STORM_TOTAL);
	for (i = 0; i < STORM_WIN && posted < total; i++, posted++)
		TP_CHECK_OK(rcx_irecv(j->g, buf[i], STORM_MAX, RCX_ANY_SOURCE,
				      RCX_ANY_TAG, &r[i]));
	while (got < total) {
		struct storm_hdr h;

		if (!TP_CHECK_OK(rcx_testany(STORM_WIN, r, &idx, &flag, &st)))
			break;
		if (!flag) {
			if (tu_now_ms() > end) {
				TP_FAIL("storm: %d of %d messages received",
					got, total);
				break;
			}
			rcx_ctx_wait(j->ctx, 100);
			continue;
		}
		if (!TP_CHECK(idx != RCX_UNDEFINED))
			break;
		got++;
		memcpy(&h, buf[idx], sizeof(h));
		s = st.source;
		if (!TP_CHECK(s >= 1 && s <= ns) || !TP_CHECK_EQ(st.error, 0) ||
		    !TP_CHECK_EQ(h.sender, s) || !TP_CHECK_EQ(h.tag, st.tag) ||
		    !TP_CHECK_EQ(h.len, st.count) ||
		    !TP_CHECK(h.seq < (uint32_t)storm_count(s, ns)))
			goto repost;
		if (seen[s][h.seq]++)
			TP_FAIL("storm: message %" PRIu32 " of %d twice", h.seq,
				s);
		count[s]++;
		sum[s] += fnv1a(buf[idx], st.count);
repost:
		if (posted < total) {
			TP_CHECK_OK(rcx_irecv(j->g, buf[idx], STORM_MAX,
					      RCX_ANY_SOURCE, RCX_ANY_TAG,
					      &r[idx]));
			posted++;
		}
	}
	for (s = 1; s <= ns; s++) {
		TP_CHECK_EQ(count[s], storm_count(s, ns));
		if (!TP_CHECK_EQ(sum[s], want[s]))
			TP_FAIL("storm: checksum of sender %d differs", s);
	}
	/* every sender is done: nothing more may arrive */
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (TP_CHECK_OK(rcx_irecv(j->g, tmp, sizeof(tmp), RCX_ANY_SOURCE,
				  RCX_ANY_TAG, &extra))) {
		for (i = 0; i < 20; i++)
			rcx_progress(j->ctx);
		TP_CHECK_OK(rcx_test(&extra, &flag, &st));
		if (!TP_CHECK_EQ(flag, 0))
			TP_FAIL("storm: an extra message from %d, tag %d",
				st.source, st.tag);
		/* freed when the context cancels it */
		if (!flag)
			TP_CHECK_OK(rcx_req_free(&extra));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
out:
	for (s = 0; seen && s < j->size; s++)
		free(seen[s]);
	free(seen);
	free(count);
	free(want);
	free(sum);
}

static void sc_storm(struct job *j)
{
	if (j->rank == 0) {
		storm_root(j);
	} else {
		storm_sender(j);
		TP_CHECK_OK(rcx_group_barrier(j->g));
		TP_CHECK_OK(rcx_group_barrier(j->g));
	}
}

/* ---- persistent: send_init/recv_init restarted many times */

enum { PS_PING = 60, PS_PONG, PS_BIG_A, PS_BIG_B, PS_BUSY_S, PS_BUSY_R, PS_GO };
#define PS_ROUNDS     1000
#define PS_BIG_ROUNDS 100
#define PS_BIG	      65536

/* Test an inactive persistent request: complete, empty, still there. */
static void check_inactive(struct rcx_req *r, const char *what)
{
	struct rcx_req *h = r;
	struct rcx_status st = { .source = 12345 };
	int flag = 0;

	TP_CHECK_OK(rcx_test(&h, &flag, &st));
	TP_CHECK_EQ(flag, 1);
	TP_CHECK(h == r);
	check_empty(&st, what);
	memset(&st, 0x55, sizeof(st));
	TP_CHECK_OK(rcx_wait(&h, &st));
	TP_CHECK(h == r);
	check_empty(&st, what);
}

/* A small counter bounced 1000 times; a starts with 0, b adds one. */
static void ps_pingpong(struct job *j, int p, bool a)
{
	uint64_t sv = 0, rv = 0;
	struct rcx_req *s = NULL, *r = NULL, *both[2];
	struct rcx_status st;
	int i;

	if (!TP_CHECK_OK(rcx_send_init(j->g, &sv, sizeof(sv), p,
				       a ? PS_PING : PS_PONG, &s)) ||
	    !TP_CHECK_OK(rcx_recv_init(j->g, &rv, sizeof(rv), p,
				       a ? PS_PONG : PS_PING, &r)))
		goto out;
	/* created inactive */
	check_inactive(s, "new send_init");
	check_inactive(r, "new recv_init");
	if (!a && !TP_CHECK_OK(rcx_start(r)))
		goto out;
	for (i = 0; i < PS_ROUNDS; i++) {
		if (a) {
			sv = 2 * (uint64_t)i;
			both[0] = r;
			both[1] = s;
			if (i & 1) {
				if (!TP_CHECK_OK(rcx_startall(2, both)))
					break;
			} else if (!TP_CHECK_OK(rcx_start(r)) ||
				   !TP_CHECK_OK(rcx_start(s))) {
				break;
			}
			if (!TP_CHECK_OK(wait_req(j, &s, &st, "ping send")))
				break;
			TP_CHECK(s != NULL);
			check_sent(&st, sizeof(sv), "ping send");
			if (!TP_CHECK_OK(wait_req(j, &r, &st, "pong")))
				break;
			check_status(&st, p, PS_PONG, sizeof(rv), 0, "pong");
			if (!TP_CHECK_EQ(rv, 2 * (uint64_t)i + 1))
				break;
		} else {
			if (!TP_CHECK_OK(wait_req(j, &r, &st, "ping")))
				break;
			check_status(&st, p, PS_PING, sizeof(rv), 0, "ping");
			if (!TP_CHECK_EQ(rv, 2 * (uint64_t)i))
				break;
			sv = rv + 1;
			/* the next ping finds its receive posted */
			if (i + 1 < PS_ROUNDS && !TP_CHECK_OK(rcx_start(r)))
				break;
			if (!TP_CHECK_OK(rcx_start(s)) ||
			    !TP_CHECK_OK(wait_req(j, &s, &st, "pong send")))
				break;
		}
		/* b restarts its receive early: inactive only at the end */
		if (i % 100 == 99) {
			check_inactive(s, "completed persistent send");
			if (a || i + 1 == PS_ROUNDS)
				check_inactive(r,
					       "completed persistent receive");
		}
	}
	TP_CHECK_EQ(i, PS_ROUNDS);
out:
	if (s)
		TP_CHECK_OK(rcx_req_free(&s));
	if (r)
		TP_CHECK_OK(rcx_req_free(&r));
	TP_CHECK(s == NULL && r == NULL);
}

/* 64 KiB (rendezvous) both ways, 100 starts, a fresh pattern each. */
static void ps_big(struct job *j, int p, bool a)
{
	uint8_t *sb = malloc(PS_BIG), *rb = malloc(PS_BIG + GUARD);
	struct rcx_req *s = NULL, *r = NULL;
	struct rcx_status st;
	int i;

	if (!TP_CHECK(sb && rb) ||
	    !TP_CHECK_OK(rcx_send_init(j->g, sb, PS_BIG, p,
				       a ? PS_BIG_A : PS_BIG_B, &s)) ||
	    !TP_CHECK_OK(rcx_recv_init(j->g, rb, PS_BIG, p,
				       a ? PS_BIG_B : PS_BIG_A, &r)))
		goto out;
	for (i = 0; i < PS_BIG_ROUNDS; i++) {
		memset(rb, FILL, PS_BIG + GUARD);
		if (!TP_CHECK_OK(rcx_start(r)))
			break;
		if (a) {
			fill(sb, PS_BIG, j->rank, p, i);
			if (!TP_CHECK_OK(rcx_start(s)) ||
			    !TP_CHECK_OK(wait_req(j, &s, &st, "big send")) ||
			    !TP_CHECK_OK(wait_req(j, &r, &st, "big reply")))
				break;
		} else {
			if (!TP_CHECK_OK(wait_req(j, &r, &st, "big receive")))
				break;
			fill(sb, PS_BIG, j->rank, p, i);
			if (!TP_CHECK_OK(rcx_start(s)) ||
			    !TP_CHECK_OK(wait_req(j, &s, &st, "big send")))
				break;
		}
		if (!check_data(rb, PS_BIG, true, p, j->rank, i, "big"))
			break;
	}
	TP_CHECK_EQ(i, PS_BIG_ROUNDS);
out:
	if (s)
		TP_CHECK_OK(rcx_req_free(&s));
	if (r)
		TP_CHECK_OK(rcx_req_free(&r));
	free(sb);
	free(rb);
}

/*
 * Misuse of active requests: starting or freeing one is refused with
 * -EBUSY and posts nothing. A posted duplicate would show as a second
 * message (send) or as a receive that eats the next message.
 */
static void ps_busy(struct job *j, int p, bool a)
{
	static uint8_t big[PS_BIG], got[PS_BIG + GUARD];
	uint64_t v = 0, w = 0;
	struct rcx_req *s, *r, *h;
	struct rcx_status st;
	int flag = -1;

	if (a) {
		fill(big, PS_BIG, j->rank, p, 7);
		if (!TP_CHECK_OK(
			    rcx_send_init(j->g, big, PS_BIG, p, PS_BUSY_S, &s)))
			return;
		TP_CHECK_OK(rcx_start(s));
		/* b posts no receive before our go: the send stays active */
		TP_CHECK_EQ(rcx_start(s), -EBUSY);
		TP_CHECK_EQ(rcx_startall(1, &s), -EBUSY);
		h = s;
		TP_CHECK_EQ(rcx_req_free(&h), -EBUSY);
		TP_CHECK(h == s);
		TP_CHECK_OK(rcx_test(&h, &flag, &st));
		TP_CHECK_EQ(flag, 0);
		TP_CHECK_OK(rcx_send(j->g, NULL, 0, p, PS_GO));
		if (TP_CHECK_OK(wait_req(j, &s, &st, "busy send")))
			check_sent(&st, PS_BIG, "busy send");
		check_inactive(s, "send after -EBUSY");
		/* the marker must be the next message b sees */
		v = 0x4d41524b4552ull;
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), p, PS_BUSY_S));
		TP_CHECK_OK(rcx_req_free(&s));
		TP_CHECK(s == NULL);

		/* then b's receive: two values, one after its go */
		TP_CHECK_OK(
			rcx_recv(j->g, NULL, 0, p, PS_GO, RCX_STATUS_IGNORE));
		v = 1;
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), p, PS_BUSY_R));
		v = 2;
		TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), p, PS_BUSY_R));
		return;
	}
	TP_CHECK_OK(rcx_recv(j->g, NULL, 0, p, PS_GO, RCX_STATUS_IGNORE));
	memset(got, FILL, sizeof(got));
	TP_CHECK_OK(rcx_recv(j->g, got, PS_BIG, p, PS_BUSY_S, &st));
	check_status(&st, p, PS_BUSY_S, PS_BIG, 0, "message of a busy send");
	check_data(got, PS_BIG, true, p, j->rank, 7, "message of a busy send");
	TP_CHECK_OK(rcx_recv(j->g, got, PS_BIG, p, PS_BUSY_S, &st));
	check_status(&st, p, PS_BUSY_S, sizeof(v), 0, "marker");
	memcpy(&v, got, sizeof(v));
	TP_CHECK_EQ(v, 0x4d41524b4552ull);

	if (!TP_CHECK_OK(rcx_recv_init(j->g, &v, sizeof(v), p, PS_BUSY_R, &r)))
		return;
	TP_CHECK_OK(rcx_start(r));
	TP_CHECK_EQ(rcx_start(r), -EBUSY);
	TP_CHECK_EQ(rcx_startall(1, &r), -EBUSY);
	h = r;
	TP_CHECK_EQ(rcx_req_free(&h), -EBUSY);
	TP_CHECK(h == r);
	TP_CHECK_OK(rcx_test(&h, &flag, &st));
	TP_CHECK_EQ(flag, 0);
	TP_CHECK_OK(rcx_send(j->g, NULL, 0, p, PS_GO));
	if (TP_CHECK_OK(wait_req(j, &r, &st, "busy receive"))) {
		check_status(&st, p, PS_BUSY_R, sizeof(v), 0, "busy receive");
		TP_CHECK_EQ(v, 1);
	}
	check_inactive(r, "receive after -EBUSY");
	/* a duplicate of r would have taken this one */
	if (TP_CHECK_OK(rcx_irecv(j->g, &w, sizeof(w), p, PS_BUSY_R, &h)) &&
	    TP_CHECK_OK(wait_req(j, &h, &st, "value after busy receive")))
		TP_CHECK_EQ(w, 2);
	TP_CHECK_EQ(v, 1);
	TP_CHECK_OK(rcx_req_free(&r));
	TP_CHECK(r == NULL);
}

static void sc_persistent(struct job *j)
{
	int p = partner(j);

	if (p < 0)
		return;
	ps_pingpong(j, p, !(j->rank & 1));
	ps_big(j, p, !(j->rank & 1));
	ps_busy(j, p, !(j->rank & 1));
}

/* ---- self: a rank sends to itself */

static void sc_self(struct job *j)
{
	static const size_t len[] = { 0, 100, 8192, 8193, 1u << 20 };
	int me = j->rank, k, m, i;
	uint8_t *sb = malloc(1u << 20), *rb = malloc((1u << 20) + GUARD);
	struct rcx_req *r[2];
	struct rcx_status st[2];
	char what[64];

	if (!TP_CHECK(sb && rb))
		goto out;
	for (k = 0; k < (int)(sizeof(len) / sizeof(len[0])); k++) {
		/* m = 0: receive first; 1: send first; 2: ANY_SOURCE and
		 * ANY_TAG after the send */
		for (m = 0; m < 3; m++) {
			int tag = 10 * k + m, salt = tag;
			int src = m == 2 ? RCX_ANY_SOURCE : me;

			snprintf(what, sizeof(what), "%zu bytes to self (%d)",
				 len[k], m);
			fill(sb, len[k], me, me, salt);
			memset(rb, FILL, len[k] + GUARD);
			if (m == 0)
				TP_CHECK_OK(rcx_irecv(j->g, rb, len[k], src,
						      tag, &r[0]));
			TP_CHECK_OK(
				rcx_isend(j->g, sb, len[k], me, tag, &r[1]));
			if (m > 0)
				TP_CHECK_OK(rcx_irecv(
					j->g, rb, len[k], src,
					m == 2 ? RCX_ANY_TAG : tag, &r[0]));
			if (!TP_CHECK_OK(wait_all(j, 2, r, st, what)))
				goto out;
			check_status(&st[0], me, tag, len[k], 0, what);
			check_sent(&st[1], len[k], what);
			check_data(rb, len[k], true, me, me, salt, what);
		}
	}
	/* persistent pair to self, restarted */
	if (!TP_CHECK_OK(rcx_send_init(j->g, sb, 8193, me, 99, &r[1])) ||
	    !TP_CHECK_OK(rcx_recv_init(j->g, rb, 8193, me, 99, &r[0])))
		goto out;
	for (i = 0; i < 10; i++) {
		fill(sb, 8193, me, me, 200 + i);
		memset(rb, FILL, 8193 + GUARD);
		if (!TP_CHECK_OK(rcx_startall(2, r)) ||
		    !TP_CHECK_OK(wait_all(j, 2, r, st, "persistent to self")))
			break;
		check_status(&st[0], me, 99, 8193, 0, "persistent to self");
		check_data(rb, 8193, true, me, me, 200 + i,
			   "persistent to self");
	}
	TP_CHECK_OK(rcx_req_free(&r[0]));
	TP_CHECK_OK(rcx_req_free(&r[1]));
out:
	free(sb);
	free(rb);
}

/* ---- eventfd: sleeping on the context's event fd and in ctx_wait */

#define EV_TAG	 77
#define EV_DELAY 300000 /* us the sender holds back after the barrier */

/* rcx_ctx_wait with nothing coming: -ETIMEDOUT after about 100 ms. */
static void ev_timeout(struct job *j)
{
	long long t0 = 0, dt = 0;
	int i, ret = 0;

	/* completions of earlier traffic may still trickle in */
	for (i = 0; i < 20; i++) {
		while (rcx_progress(j->ctx) > 0)
			;
		t0 = tu_now_ms();
		ret = rcx_ctx_wait(j->ctx, 100);
		dt = tu_now_ms() - t0;
		if (ret <= 0)
			break;
	}
	TP_CHECK_EQ(ret, -ETIMEDOUT);
	if (!TP_CHECK(dt >= 95 && dt < 3000))
		TP_FAIL("ctx_wait(100) timed out after %lld ms", dt);
	ret = rcx_ctx_wait(j->ctx, 0);
	TP_CHECK(ret == -ETIMEDOUT || ret > 0);
}

static void ev_receiver(struct job *j, int from)
{
	struct epoll_event ee = { .events = EPOLLIN };
	struct rcx_req *r;
	struct rcx_status st;
	uint64_t v = 0;
	long long t0, dt, slept = 0;
	int efd, ep, flag = 0, ret, blocks = 0;

	efd = rcx_ctx_event_fd(j->ctx);
	if (!TP_CHECK(efd >= 0))
		return;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!TP_CHECK(ep >= 0) ||
	    !TP_CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ee), 0))
		goto out;

	/* 1: block in epoll_wait after arming; the message wakes us */
	TP_CHECK_OK(rcx_irecv(j->g, &v, sizeof(v), from, EV_TAG, &r));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (;;) {
		TP_CHECK_OK(rcx_test(&r, &flag, &st));
		if (flag)
			break;
		ret = rcx_ctx_arm(j->ctx);
		if (ret == -EAGAIN)
			continue; /* found work while arming: test again */
		if (!TP_CHECK_OK(ret))
			break;
		t0 = tu_now_ms();
		ret = epoll_wait(ep, &ee, 1, 30000);
		dt = tu_now_ms() - t0;
		slept += dt;
		blocks++;
		if (!TP_CHECK_EQ(ret, 1)) {
			TP_FAIL("no wakeup within %lld ms", dt);
			break;
		}
	}
	if (flag) {
		check_status(&st, from, EV_TAG, sizeof(v), 0, "woken receive");
		TP_CHECK_EQ(v, 0x1234);
	}
	/* it must have slept: the message comes well after the barrier */
	TP_CHECK(blocks >= 1);
	printf("rank %d: slept %d time(s), %lld ms in epoll_wait\n", j->rank,
	       blocks, slept);

	/* 2: the same through rcx_ctx_wait */
	v = 0;
	TP_CHECK_OK(rcx_irecv(j->g, &v, sizeof(v), from, EV_TAG, &r));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (;;) {
		TP_CHECK_OK(rcx_test(&r, &flag, &st));
		if (flag)
			break;
		ret = rcx_ctx_wait(j->ctx, 30000);
		if (!TP_CHECK(ret > 0))
			break;
	}
	if (flag) {
		check_status(&st, from, EV_TAG, sizeof(v), 0,
			     "ctx_wait receive");
		TP_CHECK_EQ(v, 0x5678);
	}
out:
	if (ep >= 0)
		close(ep);
}

static void ev_sender(struct job *j, int to)
{
	uint64_t v;

	TP_CHECK_OK(rcx_group_barrier(j->g));
	/* a head start for the receiver to go to sleep; the result does
	 * not depend on it, only whether sleeping was exercised */
	usleep(EV_DELAY);
	v = 0x1234;
	TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), to, EV_TAG));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	usleep(EV_DELAY);
	v = 0x5678;
	TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), to, EV_TAG));
}

static void sc_eventfd(struct job *j)
{
	int p = partner(j);

	ev_timeout(j);
	if (p >= 0 && (j->rank & 1)) {
		ev_receiver(j, p);
	} else if (p >= 0) {
		ev_sender(j, p);
	} else {
		/* keep the collective barriers matched */
		TP_CHECK_OK(rcx_group_barrier(j->g));
		TP_CHECK_OK(rcx_group_barrier(j->g));
	}
}

/* ---- the peer role: one scenario per process of the job */

static const struct {
	const char *name;
	void (*run)(struct job *j);
} scenarios[] = {
	{ "early", sc_early },
	{ "sizes", sc_sizes },
	{ "any", sc_any },
	{ "order", sc_order },
	{ "truncate", sc_truncate },
	{ "storm", sc_storm },
	{ "persistent", sc_persistent },
	{ "self", sc_self },
	{ "eventfd", sc_eventfd },
};

static int peer_main(int argc, char **argv)
{
	struct job j = { NULL, NULL, -1, 0 };
	size_t i;

	if (argc < 1) {
		fprintf(stderr, "p2p peer: no scenario\n");
		return 2;
	}
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (!strcmp(scenarios[i].name, argv[0]))
			break;
	if (i == sizeof(scenarios) / sizeof(scenarios[0])) {
		fprintf(stderr, "p2p peer: unknown scenario %s\n", argv[0]);
		return 2;
	}
	if (!TP_CHECK_OK(rcx_ctx_create(NULL, &j.ctx)))
		return tp_exit();
	if (TP_CHECK_OK(rcx_group_world(j.ctx, &j.g))) {
		j.rank = rcx_group_rank(j.g);
		j.size = rcx_group_size(j.g);
		tp_set_rank(j.rank);
		if (TP_CHECK(j.rank >= 0 && j.size >= 2)) {
			scenarios[i].run(&j);
			TP_CHECK_OK(rcx_group_barrier(j.g));
		}
		TP_CHECK_OK(rcx_group_free(&j.g));
	}
	TP_CHECK_OK(rcx_ctx_destroy(j.ctx));
	return tp_exit();
}

const struct tu_peer tu_peer_p2p = { "p2p", peer_main };

/* ---- the CUnit side: one job per test */

static void job(int nprocs, const char *scenario, int timeout_s)
{
	CU_ASSERT_EQUAL(tu_mp_run(nprocs, "p2p", scenario, timeout_s), 0);
}

static void test_early(void)
{
	job(4, "early", 120);
}

static void test_sizes_2(void)
{
	job(2, "sizes", 240);
}

static void test_sizes_4(void)
{
	job(4, "sizes", 300);
}

static void test_any(void)
{
	job(4, "any", 180);
}

static void test_order(void)
{
	job(4, "order", 300);
}

static void test_truncate(void)
{
	job(4, "truncate", 180);
}

static void test_storm(void)
{
	job(4, "storm", 300);
}

static void test_persistent(void)
{
	job(4, "persistent", 300);
}

static void test_self(void)
{
	job(4, "self", 180);
}

static void test_eventfd(void)
{
	job(4, "eventfd", 180);
}

static const CU_TestInfo tests[] = {
	{ "first_messages", test_early },
	{ "sizes_2procs", test_sizes_2 },
	{ "sizes_4procs", test_sizes_4 },
	{ "any_source_any_tag", test_any },
	{ "order", test_order },
	{ "truncate", test_truncate },
	{ "storm", test_storm },
	{ "persistent", test_persistent },
	{ "self", test_self },
	{ "eventfd", test_eventfd },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_p2p = {
	"p2p", TU_DEVICE, NULL, NULL, tests,
};
