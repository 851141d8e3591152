/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound collectives, the schedules: for each step, whom to write and
 * whom to wait for (struct bc_plan), and which schedule a collective
 * takes: by size and group, or the one RCX_BCOLL_SCHEDULE forces. A
 * schedule runs over b->n ranks numbered 0..n-1: the group's, or on a
 * validated group its survivors (b->live maps them to group ranks; the
 * blocks of allgather and alltoall stay at the group ranks' places).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/bcoll/bcoll_int.h"

/* the tags of the steps' binds: step s from TAG0 up, the fold and its
 * result; a tree allreduce's broadcast half from TAG_BCAST */
#define TAG0	      (RCX_BCOLL_TAG_BASE / 2)
#define BC_TAG_FOLD   (TAG0 + 62)
#define BC_TAG_RESULT (TAG0 + 63)
#define BC_TAG_BCAST  (TAG0 + 64)
/* the automatic choice: a ring allreduce from this many bytes */
#define BC_RING_MIN (64 * 1024)

/* the group rank of rank v of the schedule */
static int real(const struct bcoll *b, int v)
{
	return b->live ? b->live[v] : v;
}

int rcx__bcoll_view(struct bcoll *b)
{
	struct rcx_group *g = b->g;
	bool rooted = b->d.kind == BC_BCAST || b->d.kind == BC_REDUCE;
	int root;

	if (rcx__group_broken(g)) {
		rcx__log(RCX__LOG_ERROR, "bcoll",
			 "rcx_bind_coll: a member of the group failed and no "
			 "rcx_group_validate took it out");
		return RCX_ERR_PROC_FAILED;
	}
	b->n = g->size;
	b->r = g->rank;
	b->root = rooted ? b->d.root : 0;
	if (!g->nacked)
		return 0;
	if (rooted && g->acked[b->d.root]) {
		rcx__log(RCX__LOG_ERROR, "bcoll",
			 "rcx_bind_coll: root %d failed", b->d.root);
		return RCX_ERR_PROC_FAILED;
	}
	b->live = malloc(sizeof(int) * (size_t)g->size);
	if (!b->live)
		return -ENOMEM;
	b->n = rcx__group_survivors(g, rooted ? b->d.root : -1, b->live, &b->r,
				    &root);
	b->root = rooted ? root : 0;
	return 0;
}

/* dissemination: step k sends to r + 2^k and waits for r - 2^k */
static int plan_barrier(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->n, r = b->r, k = 0, d;

	for (d = 1; d < n; d <<= 1, k++)
		p[k] = (struct bc_plan){ .to = (r + d) % n,
					 .from = (r - d + n) % n,
					 .tag = TAG0 + k,
					 .sbuf = (void *)b->token };
	return k;
}

/* binomial tree from the root: the parent's data lands in buf */
static int plan_bcast(const struct bcoll *b, struct bc_plan *p, int tag)
{
	int n = b->n, root = b->root, k = 0, mask = 1;
	int vr = (b->r - root + n) % n;

	while (mask < n) {
		if (vr & mask) {
			p[k++] = (struct bc_plan){
				.to = -1,
				.from = (vr - mask + root) % n,
				.tag = tag,
				.rbuf = b->d.buf,
			};
			break;
		}
		mask <<= 1;
	}
	for (mask >>= 1; mask > 0; mask >>= 1)
		if (vr + mask < n)
			p[k++] = (struct bc_plan){
				.to = (vr + mask + root) % n,
				.from = -1,
				.tag = tag,
				.sbuf = b->d.buf,
			};
	return k;
}

/*
 * Recursive doubling over the largest power of two p <= n ranks; the
 * first 2 (n - p) ranks fold in pairs first (the even one hands its data
 * to the odd one and gets the result back at the end).
 */
static int plan_allreduce(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->n, r = b->r, k = 0, pw = 1, rem, nr, mask, j;
	void *buf = b->d.buf;

	while (pw * 2 <= n)
		pw *= 2;
	rem = n - pw;
	if (r < 2 * rem && r % 2 == 0) {
		p[k++] = (struct bc_plan){ .to = r + 1,
					   .from = -1,
					   .tag = BC_TAG_FOLD,
					   .sbuf = buf,
					   .wait_send = true };
		p[k++] = (struct bc_plan){ .to = -1,
					   .from = r + 1,
					   .tag = BC_TAG_RESULT,
					   .rbuf = buf };
		return k;
	}
	if (r < 2 * rem) {
		p[k++] = (struct bc_plan){ .to = -1,
					   .from = r - 1,
					   .tag = BC_TAG_FOLD,
					   .reduce = true };
		nr = r / 2;
	} else {
		nr = r - rem;
	}
	for (mask = 1, j = 0; mask < pw; mask <<= 1, j++) {
		int pn = nr ^ mask, peer = pn < rem ? pn * 2 + 1 : pn + rem;

		p[k++] = (struct bc_plan){ .to = peer,
					   .from = peer,
					   .tag = TAG0 + j,
					   .sbuf = buf,
					   .reduce = true,
					   .wait_send = true };
	}
	if (r < 2 * rem)
		p[k++] = (struct bc_plan){ .to = r - 1,
					   .from = -1,
					   .tag = BC_TAG_RESULT,
					   .sbuf = buf };
	return k;
}

/*
 * Binomial tree to the root: a rank reduces what its children send into
 * recvbuf (each into a slot of its own), then writes the sum of its
 * subtree to its parent.
 */
static int plan_reduce(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->n, root = b->root, k = 0, mask, j;
	int vr = (b->r - root + n) % n;

	for (mask = 1, j = 0; mask < n; mask <<= 1, j++) {
		if (vr & mask) {
			p[k++] = (struct bc_plan){
				.to = (vr - mask + root) % n,
				.from = -1,
				.tag = TAG0 + j,
				.sbuf = b->d.buf,
			};
			break;
		}
		if (vr + mask < n)
			p[k++] = (struct bc_plan){
				.to = -1,
				.from = (vr + mask + root) % n,
				.tag = TAG0 + j,
				.reduce = true,
			};
	}
	return k;
}

/*
 * Ring: at step s a rank forwards to the right the block it received at
 * step s - 1 (its own at step 0), and the left neighbour's lands in its
 * place in recvbuf: every step's buffers are fixed, so they are bound.
 */
static int plan_allgather(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->n, r = b->r, s;
	uint8_t *buf = b->d.buf;

	for (s = 0; s < n - 1; s++)
		p[s] = (struct bc_plan){
			.to = (r + 1) % n,
			.from = (r - 1 + n) % n,
			.tag = TAG0 + s,
			.sbuf = buf + (size_t)real(b, (r - s + n) % n) * b->len,
			.rbuf = buf +
				(size_t)real(b, (r - s - 1 + n) % n) * b->len,
		};
	return s;
}

/*
 * Ring allreduce (reduce-scatter, then allgather) over n segments of the
 * buffer: at step k of the first half a rank writes segment r - k to its
 * right neighbour and reduces segment r - k - 1 from its left one into
 * its own; after n - 1 steps it holds segment r + 1 whole, and the
 * second half passes the whole segments round, each written straight
 * into the neighbour's buffer. Every step waits for its send: the
 * segment it read is written by the second half.
 */
static int plan_ring_allreduce(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->n, r = b->r, k;
	size_t c = b->d.count, es = b->len / c;
	uint8_t *buf = b->d.buf;

	for (k = 0; k < 2 * (n - 1); k++) {
		bool rs = k < n - 1;
		int ks = rs ? k : k - (n - 1);
		int sseg = ((rs ? r - ks : r + 1 - ks) % n + n) % n;
		int seg = ((rs ? r - ks - 1 : r - ks) % n + n) % n;
		size_t slo = c * (size_t)sseg / (size_t)n;
		size_t shi = c * (size_t)(sseg + 1) / (size_t)n;
		size_t lo = c * (size_t)seg / (size_t)n;
		size_t hi = c * (size_t)(seg + 1) / (size_t)n;

		p[k] = (struct bc_plan){
			.to = (r + 1) % n,
			.from = (r - 1 + n) % n,
			.tag = TAG0 + k,
			.sbuf = buf + slo * es,
			.rbuf = rs ? NULL : buf + lo * es,
			.slen = (shi - slo) * es,
			.rlen = (hi - lo) * es,
			.off = lo,
			.cnt = hi - lo,
			.reduce = rs,
			.wait_send = true,
		};
	}
	return k;
}

/* Tree allreduce: a binomial reduce to rank 0, then its broadcast. */
static int plan_tree_allreduce(const struct bcoll *b, struct bc_plan *p)
{
	int k = plan_reduce(b, p);

	return k + plan_bcast(b, p + k, BC_TAG_BCAST);
}

/*
 * Alltoall in shifted pairs: step s writes this rank's block for r + s
 * into that rank's recvbuf, and the block of r - s lands in ours. Every
 * send is posted first (steps without a receive), then the receives are
 * waited for: no step waits for another's data.
 */
static int plan_alltoall(const struct bcoll *b, struct bc_plan *p)
{
	int n = b->n, r = b->r, s, k = 0;
	const uint8_t *src = b->copy ? b->copy : b->d.sendbuf;
	uint8_t *buf = b->d.buf;

	for (s = 1; s < n; s++) {
		int to = (r + s) % n;

		p[k++] = (struct bc_plan){
			.to = to,
			.from = -1,
			.tag = TAG0 + s,
			.sbuf = (void *)(src + (size_t)real(b, to) * b->len),
		};
	}
	for (s = 1; s < n; s++) {
		int from = (r - s + n) % n;

		p[k++] = (struct bc_plan){
			.to = -1,
			.from = from,
			.tag = TAG0 + s,
			.rbuf = buf + (size_t)real(b, from) * b->len,
		};
	}
	return k;
}

/* the schedules each kind has; its automatic one first */
static bool has_sched(const struct bcoll *b, int s)
{
	switch (b->d.kind) {
	case BC_BARRIER:
		return s == BC_SCHED_RDOUBLING;
	case BC_BCAST:
	case BC_REDUCE:
		return s == BC_SCHED_TREE;
	case BC_ALLGATHER:
	case BC_ALLTOALL:
		return s == BC_SCHED_RING;
	default:
		return s == BC_SCHED_RDOUBLING || s == BC_SCHED_TREE ||
		       (s == BC_SCHED_RING && b->d.count >= (size_t)b->n &&
			2 * (b->n - 1) <= BC_MAX_STEPS);
	}
}

int rcx__bcoll_sched(struct bcoll *b, int forced)
{
	static const char *const names[] = { "auto", "tree",
					     "recursive_doubling", "ring" };
	int n = b->n;

	if (forced != BC_SCHED_AUTO) {
		if (!has_sched(b, forced)) {
			rcx__log(RCX__LOG_ERROR, "bcoll",
				 "rcx_bind_coll: schedule %s not one of this "
				 "collective's (of %d ranks, %zu elements)",
				 names[forced], n, b->d.count);
			return -EINVAL;
		}
		b->sched = forced;
		return 0;
	}
	switch (b->d.kind) {
	case BC_BARRIER:
		b->sched = BC_SCHED_RDOUBLING;
		break;
	case BC_BCAST:
	case BC_REDUCE:
		b->sched = BC_SCHED_TREE;
		break;
	case BC_ALLGATHER:
	case BC_ALLTOALL:
		b->sched = BC_SCHED_RING;
		break;
	default:
		/* large data: the ring moves 2 (n - 1) / n of it per rank,
		 * recursive doubling all of it log2 n times */
		b->sched = n > 2 && b->len >= BC_RING_MIN &&
					   has_sched(b, BC_SCHED_RING)
				   ? BC_SCHED_RING
				   : BC_SCHED_RDOUBLING;
	}
	return 0;
}

static int plan_of(struct bcoll *b, struct bc_plan *p)
{
	switch (b->d.kind) {
	case BC_BARRIER:
		return plan_barrier(b, p);
	case BC_BCAST:
		return plan_bcast(b, p, TAG0);
	case BC_ALLGATHER:
		return plan_allgather(b, p);
	case BC_REDUCE:
		return plan_reduce(b, p);
	case BC_ALLTOALL:
		return plan_alltoall(b, p);
	}
	if (b->sched == BC_SCHED_RING)
		return plan_ring_allreduce(b, p);
	if (b->sched == BC_SCHED_TREE)
		return plan_tree_allreduce(b, p);
	return plan_allreduce(b, p);
}

int rcx__bcoll_plan(struct bcoll *b, struct bc_plan *p)
{
	int k = plan_of(b, p), i;

	/* the schedule's ranks to the group's */
	for (i = 0; b->live && i < k; i++) {
		if (p[i].to >= 0)
			p[i].to = b->live[p[i].to];
		if (p[i].from >= 0)
			p[i].from = b->live[p[i].from];
	}
	return k;
}
