/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Point-to-point across processes, through the rcx-run launcher: the first
 * message on a fresh connection, every size on both sides of the
 * eager/rendezvous switch, ANY_SOURCE/ANY_TAG, non-overtaking order,
 * truncation, a many-message storm, persistent requests, messages to
 * self, sleeping on the event fd, and threads sharing one context.
 *
 * Each CUnit test runs one scenario of the "p2p" peer role in a job of 2 or
 * 4 ranks; the ranks check with TP_* and the job must exit 0. This file:
 * the helpers of the suite's files (test_p2p.h), matching and data, the
 * peer role and the suite's table.
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
#include "test_p2p.h"
#include "tu.h"
#include "tu_mp.h"

/* A misplaced chunk or a message delivered to the wrong receive shows. */
static uint8_t pat(size_t i, int src, int dst, int salt)
{
	return (uint8_t)(i + (i >> 8) * 3 + (i >> 16) * 5 + src * 37 +
			 dst * 11 + salt * 101);
}

void fill(void *buf, size_t len, int src, int dst, int salt)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pat(i, src, dst, salt);
}

bool check_data(const void *buf, size_t len, bool guard, int src, int dst,
		int salt, const char *what)
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

uint8_t *rbuf_new(size_t len)
{
	uint8_t *b = malloc(len + GUARD);

	if (b)
		memset(b, FILL, len + GUARD);
	return b;
}

bool check_status(const struct rcx_status *st, int source, int tag,
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

bool check_sent(const struct rcx_status *st, size_t count, const char *what)
{
	if (st->error == 0 && st->count == count)
		return true;
	TP_FAIL("%s: send status {count %zu, error %d}, want {%zu, 0}", what,
		st->count, st->error, count);
	return false;
}

bool check_empty(const struct rcx_status *st, const char *what)
{
	if (st->source == RCX_ANY_SOURCE && st->tag == RCX_ANY_TAG &&
	    st->error == 0 && st->count == 0)
		return true;
	TP_FAIL("%s: status {source %d, tag %d, count %zu, error %d} is not "
		"empty",
		what, st->source, st->tag, st->count, st->error);
	return false;
}

int wait_req(struct tp_job *j, struct rcx_req **r, struct rcx_status *st,
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

int wait_all(struct tp_job *j, int n, struct rcx_req **r,
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

int partner(const struct tp_job *j)
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

static void sc_sizes(struct tp_job *j)
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
static void sc_early(struct tp_job *j)
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

static void any_root(struct tp_job *j)
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

static void any_sender(struct tp_job *j)
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

static void sc_any(struct tp_job *j)
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

static void ord_sender(struct tp_job *j, int to, uint8_t *arena,
		       const size_t *off, struct rcx_req **r)
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

static void ord_receiver(struct tp_job *j, int from, uint8_t *arena,
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

static void sc_order(struct tp_job *j)
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

static void tr_sender(struct tp_job *j, int to)
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

static void tr_receiver(struct tp_job *j, int from)
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

static void sc_truncate(struct tp_job *j)
{
	int p = partner(j);

	/* even ranks send to the odd rank above them */
	if (p >= 0 && !(j->rank & 1))
		tr_sender(j, p);
	else if (p >= 0)
		tr_receiver(j, p);
}

/*
 * 2 procs: rank 1 leaves (its context is destroyed: BYE) while rank 0
 * still talks to it. A receive posted for it and a send to it must fail,
 * not wait for ever. Both ranks leave from here: the job's closing
 * barrier would miss rank 1.
 */
static void sc_bye(struct tp_job *j)
{
	struct rcx_status st;
	struct rcx_req *r = NULL;
	uint64_t v = 7;
	int ret;

	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		TP_CHECK_OK(rcx_ctx_destroy(j->ctx));
		exit(tp_exit());
	}
	ret = rcx_irecv(j->g, &v, 8, 1, 5, &r);
	if (ret == 0) {
		/* posted before the BYE came: it completes in error then
		 * (with a status, the error is in it) */
		TP_CHECK_OK(rcx_wait(&r, &st));
		ret = st.error;
	}
	TP_CHECK(ret == -ECONNRESET || ret == RCX_ERR_PROC_FAILED);
	/* the BYE is in: a receive now fails at once, and so does a send */
	ret = rcx_irecv(j->g, &v, 8, 1, 5, &r);
	TP_CHECK(ret == -ECONNRESET || ret == RCX_ERR_PROC_FAILED);
	ret = rcx_isend(j->g, &v, 8, 1, 6, &r);
	TP_CHECK(ret == -ECONNRESET || ret == RCX_ERR_PROC_FAILED);
	printf("rank 0: after the peer left: receive and send fail with %d\n",
	       ret);
	TP_CHECK_OK(rcx_ctx_destroy(j->ctx));
	exit(tp_exit());
}

/* ---- the peer role: one scenario per process of the job */

static const struct tp_scenario scenarios[] = {
	{ .name = "early", .run = sc_early },
	{ .name = "sizes", .run = sc_sizes },
	{ .name = "bounds", .run = sc_bounds, .size = 2 },
	{ .name = "posted_first", .run = sc_posted_first, .size = 3 },
	{ .name = "any", .run = sc_any },
	{ .name = "order", .run = sc_order },
	{ .name = "truncate", .run = sc_truncate },
	{ .name = "storm", .run = sc_storm },
	{ .name = "persistent", .run = sc_persistent },
	{ .name = "self", .run = sc_self },
	{ .name = "eventfd", .run = sc_eventfd },
	{ .name = "bye", .run = sc_bye, .size = 2 },
	{ .name = "lazy", .run = sc_lazy, .size = 4, .setup = sc_lazy_setup },
	{ .name = "eager", .run = sc_eager, .setup = sc_eager_setup },
	{ .name = "lazy_win", .run = sc_lazy_win, .setup = sc_lazy_setup },
	{ .name = "split",
	  .run = sc_split,
	  .provider = "fault",
	  .size = 2,
	  .setup = sc_split_setup },
	{ .name = "split_dev",
	  .run = sc_split_dev,
	  .provider = "fault",
	  .size = 2 },
	{ .name = "big4g", .run = sc_big4g, .size = 2 },
	{ .name = "big2g", .run = sc_big2g, .size = 2 },
	{ .name = "peer_info",
	  .run = sc_peer_info,
	  .size = 2,
	  .setup = sc_lazy_setup },
	{ .name = "shared_cpu",
	  .run = sc_shared_cpu,
	  .size = 2,
	  .setup = sc_cpu_setup },
	{ .name = "threads",
	  .run = sc_threads,
	  .thread_level = RCX_THREAD_MULTIPLE,
	  .size = 2 },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("p2p", scenarios, TP_COUNT(scenarios), argc, argv);
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

static void test_threads(void)
{
	job(2, "threads", 300);
}

static void test_bye(void)
{
	job(2, "bye", 60);
}

static void test_lazy(void)
{
	job(4, "lazy", 180);
}

static void test_eager(void)
{
	job(4, "eager", 180);
}

static void test_lazy_win(void)
{
	job(4, "lazy_win", 180);
}

static void test_split(void)
{
	job(2, "split", 180);
}

static void test_split_dev(void)
{
	job(2, "split_dev", 180);
}

static void test_peer_info(void)
{
	job(2, "peer_info", 120);
}

static void test_shared_cpu(void)
{
	job(2, "shared_cpu", 300);
}

static void test_bounds(void)
{
	job(2, "bounds", 120);
}

/* RCX_INLINE beyond what the device takes: the QPs take less, and work */
static void test_posted_first(void)
{
	job(3, "posted_first", 120);
}

static void test_inline_max(void)
{
	setenv("RCX_INLINE", "1024", 1);
	job(2, "sizes", 240);
	unsetenv("RCX_INLINE");
}

static const CU_TestInfo tests[] = {
	{ "first_messages", test_early },
	{ "sizes_2procs", test_sizes_2 },
	{ "sizes_4procs", test_sizes_4 },
	{ "inline_beyond_device", test_inline_max },
	{ "eager_formats_bounds", test_bounds },
	{ "eager_posted_first", test_posted_first },
	{ "any_source_any_tag", test_any },
	{ "order", test_order },
	{ "truncate", test_truncate },
	{ "storm", test_storm },
	{ "persistent", test_persistent },
	{ "self", test_self },
	{ "eventfd", test_eventfd },
	{ "threads_multiple", test_threads },
	{ "peer_left", test_bye },
	{ "lazy_connections", test_lazy },
	{ "lazy_window", test_lazy_win },
	{ "eager_connections", test_eager },
	{ "peer_info", test_peer_info },
	{ "rendezvous_in_pieces", test_split },
	{ "rendezvous_past_device_limit", test_split_dev },
	{ "two_ranks_one_cpu", test_shared_cpu },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_p2p = {
	"p2p", TU_DEVICE, NULL, NULL, tests,
};
