/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "group": sub-groups (rcx_group_split/incl/excl) on 2, 3 and 4
 * processes: ranks renumbered as MPI does, traffic that never matches
 * across groups (point-to-point and channel binds with the same tags on
 * the parent and the sub-group), windows and channels on a sub-group of
 * 3 out of 4 ranks and on two disjoint sub-groups at once, the parent
 * freed first, failures inside and outside a sub-group; RCX_PROC_NULL;
 * the group collectives (bcast, reduce, allreduce, gather, blocking and
 * nonblocking) with every result checked.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "tu.h"
#include "tu_mp.h"

enum { G_TAG = 7, G_SLOTS = 8 };

/* Sub-group of 3 out of 4 (or of 2 and 3): this list, in this order. */
static const int three[] = { 3, 1, 2 };

/* Every member learns the parent ranks of the group, in its order. */
static void check_members(struct rcx_group *s, int prank, const int *expect,
			  int n)
{
	int *all = calloc((size_t)n, sizeof(int));
	int i;

	if (!TP_CHECK(all))
		return;
	TP_CHECK_EQ(rcx_group_size(s), n);
	TP_CHECK_OK(rcx_group_allgather(s, &prank, sizeof(prank), all));
	for (i = 0; i < n; i++)
		TP_CHECK_EQ(all[i], expect[i]);
	TP_CHECK_EQ(expect[rcx_group_rank(s)], prank);
	free(all);
}

/*
 * To the next rank on both groups with the same tag, the receives
 * posted sub-group first on one group and parent first on the other:
 * each message is matched on its own group.
 */
static void cross_p2p(struct rcx_group *p, struct rcx_group *s)
{
	int pr = rcx_group_rank(p), pn = rcx_group_size(p);
	int sr = rcx_group_rank(s), sn = rcx_group_size(s);
	int out[2] = { 1000 + pr, 2000 + pr }, in[2] = { -1, -1 };
	struct rcx_req *r[4];
	struct rcx_status st[4];

	TP_CHECK_OK(rcx_irecv(s, &in[1], sizeof(int), (sr + sn - 1) % sn, G_TAG,
			      &r[0]));
	TP_CHECK_OK(rcx_irecv(p, &in[0], sizeof(int), (pr + pn - 1) % pn, G_TAG,
			      &r[1]));
	TP_CHECK_OK(rcx_isend(p, &out[0], sizeof(int), (pr + 1) % pn, G_TAG,
			      &r[2]));
	TP_CHECK_OK(rcx_isend(s, &out[1], sizeof(int), (sr + 1) % sn, G_TAG,
			      &r[3]));
	TP_CHECK_OK(rcx_waitall(4, r, st));
	TP_CHECK_EQ(in[0], 1000 + (pr + pn - 1) % pn);
	TP_CHECK_EQ(st[1].source, (pr + pn - 1) % pn);
	TP_CHECK_EQ(st[0].source, (sr + sn - 1) % sn);
	/* the sub-group's left neighbour, by its parent rank */
	TP_CHECK(in[1] >= 2000 && in[1] < 2000 + pn);
}

/*
 * split by parity, ranked backwards by key; incl and excl; a rank not in
 * the group gets NULL; the parent's own traffic is untouched.
 */
static void sc_split(struct tp_job *j)
{
	struct rcx_group *s = NULL, *in = NULL, *ex = NULL;
	int expect[4], n = 0, r, excl0 = 0;
	int incl_list[2] = { j->size - 1, 0 };

	/* parity groups, highest parent rank first */
	for (r = j->size - 1; r >= 0; r--)
		if (r % 2 == j->rank % 2)
			expect[n++] = r;
	if (!TP_CHECK_OK(rcx_group_split(j->g, j->rank % 2, -j->rank, &s)))
		return;
	check_members(s, j->rank, expect, n);
	cross_p2p(j->g, s);
	TP_CHECK_OK(rcx_group_barrier(s));

	/* incl: the list's order */
	TP_CHECK_OK(rcx_group_incl(j->g, 2, incl_list, &in));
	if (j->rank == incl_list[0] || j->rank == incl_list[1]) {
		if (TP_CHECK(in != NULL)) {
			check_members(in, j->rank, incl_list, 2);
			TP_CHECK_OK(rcx_group_barrier(in));
		}
	} else {
		TP_CHECK(in == NULL);
	}
	/* excl: the parent's order, less rank 0 */
	TP_CHECK_OK(rcx_group_excl(j->g, 1, &excl0, &ex));
	if (j->rank) {
		int rest[3] = { 1, 2, 3 };

		if (TP_CHECK(ex != NULL))
			check_members(ex, j->rank, rest, j->size - 1);
	} else {
		TP_CHECK(ex == NULL);
	}
	/* a sub-group of a sub-group: of the parity group, all but its 0 */
	if (ex && rcx_group_size(ex) > 1) {
		struct rcx_group *ss = NULL;
		int zero = 0;

		TP_CHECK_OK(rcx_group_excl(ex, 1, &zero, &ss));
		if (j->rank > 1 && TP_CHECK(ss != NULL)) {
			int rest[2] = { 2, 3 };

			check_members(ss, j->rank, rest, j->size - 2);
			TP_CHECK_OK(rcx_group_barrier(ss));
			TP_CHECK_OK(rcx_group_free(&ss));
		}
	}
	if (in)
		TP_CHECK_OK(rcx_group_free(&in));
	if (ex)
		TP_CHECK_OK(rcx_group_free(&ex));
	/* freeing the parent's handle first leaves the sub-group working */
	TP_CHECK_OK(rcx_group_free(&j->g));
	TP_CHECK_OK(rcx_group_barrier(s));
	TP_CHECK_OK(rcx_group_allgather(s, &j->rank, sizeof(int), expect));
	TP_CHECK_OK(rcx_group_free(&s));
	TP_CHECK(s == NULL);
}

/* Wrong arguments on one rank: every rank fails, nothing is made. */
static void sc_split_bad(struct tp_job *j)
{
	struct rcx_group *s = (struct rcx_group *)&s, *keep = s;
	int list[2] = { 0, 1 }, twice[2] = { 1, 1 };

	TP_CHECK_EQ(rcx_group_split(NULL, 0, 0, &s), -EINVAL);
	TP_CHECK_EQ(rcx_group_split(j->g, 0, 0, NULL), -EINVAL);
	/* rank 0's color is neither >= 0 nor RCX_UNDEFINED */
	TP_CHECK_EQ(rcx_group_split(j->g, j->rank ? 0 : -5, 0, &s), -EINVAL);
	TP_CHECK(s == keep);
	/* rank 1 gives another list */
	TP_CHECK_EQ(rcx_group_incl(j->g, j->rank == 1 ? 1 : 2, list, &s),
		    -EINVAL);
	TP_CHECK(s == keep);
	/* a rank twice, on rank 0 only */
	TP_CHECK_EQ(rcx_group_excl(j->g, 2, j->rank ? list : twice, &s),
		    -EINVAL);
	TP_CHECK_EQ(rcx_group_incl(j->g, j->size + 1, list, &s), -EINVAL);
	TP_CHECK(s == keep);
	/* incl and excl do not pair */
	TP_CHECK_EQ(j->rank ? rcx_group_incl(j->g, 1, list, &s)
			    : rcx_group_excl(j->g, 1, list, &s),
		    -EINVAL);
	TP_CHECK(s == keep);
	/* the parent still works, and a good call after the bad ones */
	TP_CHECK_OK(rcx_group_split(j->g, RCX_UNDEFINED, 0, &s));
	TP_CHECK(s == NULL);
	TP_CHECK_OK(rcx_group_barrier(j->g));
}

/*
 * A window on s: every member puts its parent rank into its slot at
 * every target between fences; each checks what arrived.
 */
static void window_on(struct rcx_group *s, int prank, const int *members)
{
	int n = rcx_group_size(s), me = rcx_group_rank(s), t;
	uint64_t *base = NULL, v = 100 + (uint64_t)prank;
	struct rcx_win *w = NULL;

	if (!TP_CHECK_OK(rcx_win_allocate(s, (size_t)n * 8, 8, NULL,
					  (void **)&base, &w)))
		return;
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (t = 0; t < n; t++)
		TP_CHECK_OK(rcx_put(w, &v, 8, t, (size_t)me));
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (t = 0; t < n; t++)
		TP_CHECK_EQ(base[t], 100 + members[t]);
	/* a software accumulate (answered through the shared connection),
	 * once every member has read its slots */
	TP_CHECK_OK(rcx_group_barrier(s));
	v = 1;
	TP_CHECK_OK(rcx_win_lock_all(w));
	for (t = 0; t < n; t++)
		TP_CHECK_OK(rcx_accumulate(w, &v, 1, RCX_INT32, t, 0, RCX_SUM));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(s));
	TP_CHECK_EQ((uint32_t)base[0], 100 + members[0] + n);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* One bound channel: bind started, not waited for (ibind). */
struct bound {
	struct rcx_req *init, *ch, *eph;
	int buf[G_SLOTS];
};

static void bind_start(struct rcx_group *g, struct bound *b, bool send,
		       int peer, int mark)
{
	int i;

	for (i = 0; i < G_SLOTS; i++)
		b->buf[i] = send ? mark : -1;
	TP_CHECK_OK(send ? rcx_send_init(g, b->buf, sizeof(b->buf), peer, G_TAG,
					 &b->init)
			 : rcx_recv_init(g, b->buf, sizeof(b->buf), peer, G_TAG,
					 &b->init));
	TP_CHECK_OK(rcx_ibind(b->init, NULL, &b->ch, &b->eph));
}

/* The bind done: the channel is ready to start. */
static void bound_ready(struct bound *b)
{
	TP_CHECK_OK(rcx_wait(&b->eph, RCX_STATUS_IGNORE));
	TP_CHECK_OK(rcx_req_free(&b->init));
}

/* Its one message has come or gone; a receiver checks the data. */
static void bound_check(struct bound *b, int expect)
{
	struct rcx_status st;
	int i;

	TP_CHECK_OK(rcx_wait(&b->ch, &st));
	if (expect >= 0)
		for (i = 0; i < G_SLOTS; i++)
			TP_CHECK_EQ(b->buf[i], expect);
}

/*
 * A ring of channels on s (member i sends to i + 1) and, with the same
 * tag, one from parent rank 1 to parent rank 2 on p: the binds are
 * started in opposite orders at the two ends, so one that matched
 * across groups would pair the wrong channels (and data).
 */
static void channels_on(struct rcx_group *p, struct rcx_group *s, int prank,
			const int *members)
{
	int n = rcx_group_size(s), me = rcx_group_rank(s);
	struct bound tx, rx, pb;
	struct rcx_req *chs[3];
	bool on_p = p && (prank == 1 || prank == 2);

	if (on_p && prank == 1)
		bind_start(p, &pb, true, 2, 5000);
	bind_start(s, &tx, true, (me + 1) % n, 3000 + prank);
	bind_start(s, &rx, false, (me + n - 1) % n, 0);
	if (on_p && prank == 2)
		bind_start(p, &pb, false, 1, 0);
	bound_ready(&tx);
	bound_ready(&rx);
	if (on_p)
		bound_ready(&pb);
	/* receivers first: a sender may wait for its receiver's start */
	TP_CHECK_OK(rcx_start(rx.ch));
	if (on_p && prank == 2)
		TP_CHECK_OK(rcx_start(pb.ch));
	TP_CHECK_OK(rcx_start(tx.ch));
	if (on_p && prank == 1)
		TP_CHECK_OK(rcx_start(pb.ch));
	bound_check(&tx, -1);
	bound_check(&rx, 3000 + members[(me + n - 1) % n]);
	if (on_p)
		bound_check(&pb, prank == 2 ? 5000 : -1);
	/* in one call: freeing them one by one around a ring would wait
	 * for a peer that waits for its own neighbour */
	chs[0] = tx.ch;
	chs[1] = rx.ch;
	chs[2] = on_p ? pb.ch : NULL;
	TP_CHECK_OK(rcx_bind_free(chs, on_p ? 3 : 2));
}

/* Ranks {3, 1, 2} of 4; rank 0 has none. Window, channels, parent freed. */
static void sc_sub3(struct tp_job *j)
{
	struct rcx_group *s = NULL;

	if (!TP_CHECK_OK(rcx_group_incl(j->g, 3, three, &s)))
		return;
	if (j->rank == 0) {
		TP_CHECK(s == NULL);
		/* its parent's channel ends are not on rank 0 */
		TP_CHECK_OK(rcx_group_free(&j->g));
		return;
	}
	if (!TP_CHECK(s != NULL))
		return;
	check_members(s, j->rank, three, 3);
	window_on(s, j->rank, three);
	channels_on(j->g, s, j->rank, three);
	/* the parent's handle goes first; the sub-group keeps working */
	TP_CHECK_OK(rcx_group_free(&j->g));
	window_on(s, j->rank, three);
	channels_on(NULL, s, j->rank, three);
	TP_CHECK_OK(rcx_group_free(&s));
}

/* {0, 2} and {1, 3} at once: a window and channels on each. */
static void sc_disjoint(struct tp_job *j)
{
	struct rcx_group *s = NULL;
	int members[2] = { j->rank % 2, j->rank % 2 + 2 };

	if (!TP_CHECK_OK(rcx_group_split(j->g, j->rank % 2, j->rank, &s)))
		return;
	TP_CHECK_OK(rcx_group_free(&j->g)); /* parent first */
	check_members(s, j->rank, members, 2);
	window_on(s, j->rank, members);
	channels_on(NULL, s, j->rank, members);
	window_on(s, j->rank, members);
	TP_CHECK_OK(rcx_group_free(&s));
}

/* Every rank's rank to the next one; each checks what came. */
static void ring(struct rcx_group *g)
{
	int me = rcx_group_rank(g), n = rcx_group_size(g), got = -1;
	struct rcx_req *r[2];

	TP_CHECK_OK(
		rcx_irecv(g, &got, sizeof(got), (me + n - 1) % n, 2, &r[0]));
	TP_CHECK_OK(rcx_isend(g, &me, sizeof(me), (me + 1) % n, 2, &r[1]));
	TP_CHECK_OK(rcx_waitall(2, r, RCX_STATUSES_IGNORE));
	TP_CHECK_EQ(got, (me + n - 1) % n);
}

/* Check a status of a completed operation with RCX_PROC_NULL. */
static void null_status(const struct rcx_status *st)
{
	TP_CHECK_EQ(st->source, RCX_PROC_NULL);
	TP_CHECK_EQ(st->tag, RCX_ANY_TAG);
	TP_CHECK_EQ(st->count, 0);
	TP_CHECK_EQ(st->error, 0);
}

/*
 * RCX_PROC_NULL as a peer: blocking, nonblocking and persistent sends
 * and receives complete at once and move nothing, on the world and on
 * a sub-group; a continuation follows one; a real message after them
 * is still matched.
 */
static void sc_proc_null(struct tp_job *j)
{
	struct rcx_group *groups[2] = { j->g, NULL };
	struct rcx_status st;
	struct rcx_req *r, *p[2];
	int k, i, v = 42, got = -1, flag;

	TP_CHECK_OK(rcx_group_split(j->g, 0, 0, &groups[1]));
	for (k = 0; k < 2; k++) {
		struct rcx_group *g = groups[k];

		TP_CHECK_OK(rcx_send(g, &v, sizeof(v), RCX_PROC_NULL, 3));
		memset(&st, 0x5a, sizeof(st));
		TP_CHECK_OK(
			rcx_recv(g, &got, sizeof(got), RCX_PROC_NULL, 3, &st));
		null_status(&st);
		TP_CHECK_EQ(got, -1);
		TP_CHECK_OK(rcx_irecv(g, &got, sizeof(got), RCX_PROC_NULL,
				      RCX_ANY_TAG, &r));
		/* complete at the first test, without progress from anyone */
		TP_CHECK_OK(rcx_test(&r, &flag, &st));
		TP_CHECK(flag);
		TP_CHECK(r == NULL);
		null_status(&st);
		TP_CHECK_OK(rcx_isend(g, &v, sizeof(v), RCX_PROC_NULL, 0, &r));
		TP_CHECK_OK(rcx_wait(&r, &st));
		null_status(&st);
		TP_CHECK_OK(rcx_send_init(g, &v, sizeof(v), RCX_PROC_NULL, 1,
					  &p[0]));
		TP_CHECK_OK(rcx_recv_init(g, &got, 1 << 20, RCX_PROC_NULL, 1,
					  &p[1]));
		for (i = 0; i < 3; i++) {
			TP_CHECK_OK(rcx_startall(2, p));
			TP_CHECK_OK(rcx_wait(&p[1], &st));
			null_status(&st);
			TP_CHECK_OK(rcx_wait(&p[0], &st));
			null_status(&st);
		}
		TP_CHECK_OK(rcx_req_free(&p[0]));
		TP_CHECK_OK(rcx_req_free(&p[1]));
		/* still an error: ranks out of range, ANY_SOURCE on a send */
		TP_CHECK_EQ(rcx_isend(g, &v, sizeof(v), -3, 0, &r), -EINVAL);
		TP_CHECK_EQ(rcx_isend(g, &v, sizeof(v), RCX_ANY_SOURCE, 0, &r),
			    -EINVAL);
		/* real traffic after it */
		ring(g);
	}
	TP_CHECK_OK(rcx_group_free(&groups[1]));
}

/*
 * Two sub-groups with the same members in the same order: messages and
 * channel binds with the same tags, posted in crossing orders, each
 * match on their own group only.
 */
static void sc_twins(struct tp_job *j)
{
	static const int members[] = { 0, 1, 2, 3 };
	struct rcx_group *a = NULL, *b = NULL;

	TP_CHECK_OK(rcx_group_split(j->g, 0, j->rank, &a));
	TP_CHECK_OK(rcx_group_split(j->g, 0, j->rank, &b));
	TP_CHECK_OK(rcx_group_free(&j->g));
	if (!TP_CHECK(a && b))
		return;
	cross_p2p(a, b);
	cross_p2p(b, a);
	channels_on(a, b, j->rank, members);
	channels_on(b, a, j->rank, members);
	TP_CHECK_OK(rcx_group_free(&a));
	TP_CHECK_OK(rcx_group_free(&b));
}

/* Wait until g knows a failed rank (the launcher or a connection). */
static int wait_failed(struct rcx_group *g, int *failed, int max)
{
	long long end = tu_now_ms() + 60000;
	int n = 0;

	while (!n && tu_now_ms() < end)
		TP_CHECK_OK(rcx_group_get_failed(g, failed, max, &n));
	return n;
}

/*
 * Rank 3 dies with windows open on A = {0, 1, 3} (it is in it) and on
 * B = {0, 1, 2} (it is not): on 0 and 1, A and its window learn of the
 * failure (A's rank 2), B and its window go on as before; rank 2, only
 * in B, sees B's window work too.
 */
static void sc_sub_ft(struct tp_job *j)
{
	static const int la[] = { 0, 1, 3 }, lb[] = { 0, 1, 2 };
	struct rcx_group *a = NULL, *b = NULL;
	struct rcx_win *wa = NULL;
	uint64_t *base_a = NULL, v = 7;
	int failed[4], n, ret;

	TP_CHECK_OK(rcx_group_incl(j->g, 3, la, &a));
	TP_CHECK_OK(rcx_group_incl(j->g, 3, lb, &b));
	if (a)
		TP_CHECK_OK(rcx_win_allocate(a, 64, 8, NULL, (void **)&base_a,
					     &wa));
	if (b)
		window_on(b, j->rank, lb);
	ret = rcx_group_barrier(j->g);
	TP_CHECK(ret == 0 || ret == RCX_ERR_PROC_FAILED);
	if (j->rank == 3) {
		fflush(NULL);
		raise(SIGKILL);
	}
	if (a && TP_CHECK_EQ(wait_failed(a, failed, 4), 1)) {
		TP_CHECK_EQ(failed[0], 2); /* rank 3 is A's rank 2 */
		TP_CHECK_OK(rcx_win_get_failed(wa, failed, 4, &n));
		TP_CHECK_EQ(n, 1);
		TP_CHECK_EQ(failed[0], 2);
		TP_CHECK_EQ(rcx_put(wa, &v, 8, 0, 0), RCX_ERR_WIN_INVALID);
		TP_CHECK_EQ(rcx_group_barrier(a), RCX_ERR_PROC_FAILED);
		TP_CHECK_EQ(
			rcx_group_allreduce(a, &v, &v, 1, RCX_INT64, RCX_SUM),
			RCX_ERR_PROC_FAILED);
		TP_CHECK_OK(rcx_win_free(&wa));
	}
	/* the world knows it by its own rank */
	if (a && TP_CHECK_EQ(wait_failed(j->g, failed, 4), 1))
		TP_CHECK_EQ(failed[0], 3);
	/* B has no failed member: its window and collectives go on */
	TP_CHECK_OK(rcx_group_get_failed(b, failed, 4, &n));
	TP_CHECK_EQ(n, 0);
	window_on(b, j->rank, lb);
	v = 1;
	TP_CHECK_OK(rcx_group_allreduce(b, &v, &v, 1, RCX_INT64, RCX_SUM));
	TP_CHECK_EQ(v, 3);
	if (a)
		TP_CHECK_OK(rcx_group_free(&a));
	TP_CHECK_OK(rcx_group_free(&b));
	/* no closing barrier on the world: a member is dead */
	TP_CHECK_OK(rcx_group_free(&j->g));
}

/* Start and wait n null channels k times: each at once, nothing moved. */
static void null_starts(int n, struct rcx_req **ch, int k)
{
	struct rcx_status st[4];
	int i, flag;

	while (k-- > 0) {
		TP_CHECK_OK(rcx_startall(n, ch));
		/* complete at the first test */
		TP_CHECK_OK(rcx_testall(n, ch, &flag, st));
		TP_CHECK(flag);
		for (i = 0; i < n; i++)
			null_status(&st[i]);
	}
}

/*
 * Channels bound to RCX_PROC_NULL: bind, ibind and mbind complete at
 * once at one end only (no peer), every start completes at once, free
 * waits for no one; a null channel rebound to a real peer carries data.
 */
static void sc_chan_null(struct tp_job *j)
{
	int buf[4] = { 1, 2, 3, 4 }, i;
	struct rcx_req *init, *ch[4], *eph;
	bool send = j->rank == 0;

	TP_CHECK_OK(send ? rcx_send_init(j->g, buf, sizeof(buf), RCX_PROC_NULL,
					 5, &init)
			 : rcx_recv_init(j->g, buf, sizeof(buf), RCX_PROC_NULL,
					 5, &init));
	TP_CHECK_OK(rcx_bind(init, NULL, &ch[0]));
	TP_CHECK_OK(rcx_ibind(init, NULL, &ch[1], &eph));
	TP_CHECK_OK(rcx_wait(&eph, RCX_STATUS_IGNORE));
	TP_CHECK_OK(rcx_mbind(init, 2, NULL, &ch[2]));
	null_starts(4, ch, 3);
	for (i = 0; i < 4; i++)
		TP_CHECK_EQ(buf[i], i + 1);
	TP_CHECK_OK(rcx_bind_free(&ch[1], 3));
	/* rebound to the other rank: a real channel now */
	TP_CHECK_OK(rcx_rebind(ch[0], buf, sizeof(buf), 1 - j->rank, 6,
			       RCX_CHAN_AUTO, NULL));
	if (!send)
		memset(buf, 0, sizeof(buf));
	TP_CHECK_OK(rcx_start(ch[0]));
	TP_CHECK_OK(rcx_wait(&ch[0], RCX_STATUS_IGNORE));
	for (i = 0; i < 4; i++)
		TP_CHECK_EQ(buf[i], i + 1);
	/* and back to no one */
	TP_CHECK_OK(rcx_rebind(ch[0], buf, sizeof(buf), RCX_PROC_NULL, 6,
			       RCX_CHAN_AUTO, NULL));
	null_starts(1, ch, 2);
	TP_CHECK_OK(rcx_bind_free(&ch[0], 1));
	TP_CHECK_OK(rcx_req_free(&init));
}

static const struct tp_scenario scenarios[] = {
	{ .name = "split", .run = sc_split },
	{ .name = "split_bad", .run = sc_split_bad },
	{ .name = "proc_null", .run = sc_proc_null, .size = 2 },
	{ .name = "chan_null", .run = sc_chan_null, .size = 2 },
	{ .name = "sub3", .run = sc_sub3, .size = 4 },
	{ .name = "disjoint", .run = sc_disjoint, .size = 4 },
	{ .name = "twins", .run = sc_twins, .size = 4 },
	{ .name = "sub_ft", .run = sc_sub_ft, .size = 4 },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("group", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_group = { "group", peer_main };

static void job(int nprocs, const char *scenario)
{
	CU_ASSERT_EQUAL(tu_mp_run(nprocs, "group", scenario, 240), 0);
}

static void test_split(void)
{
	job(2, "split");
	job(3, "split");
	job(4, "split");
}

static void test_split_bad(void)
{
	job(3, "split_bad");
}

static void test_proc_null(void)
{
	job(2, "proc_null");
}

static void test_chan_null(void)
{
	job(2, "chan_null");
}

static void test_sub3(void)
{
	job(4, "sub3");
}

static void test_disjoint(void)
{
	job(4, "disjoint");
}

static void test_twins(void)
{
	job(4, "twins");
}

static void test_sub_ft(void)
{
	setenv("RCX_RUN_FT", "1", 1);
	job(4, "sub_ft");
	unsetenv("RCX_RUN_FT");
}

static const CU_TestInfo tests[] = {
	{ "split_incl_excl_2_3_4", test_split },
	{ "split_bad_arguments", test_split_bad },
	{ "proc_null_p2p", test_proc_null },
	{ "proc_null_channel", test_chan_null },
	{ "window_channel_on_3_of_4", test_sub3 },
	{ "two_disjoint_subgroups", test_disjoint },
	{ "same_members_own_matching", test_twins },
	{ "failure_inside_and_outside_subgroup", test_sub_ft },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_group = {
	"group", TU_DEVICE, NULL, NULL, tests,
};
