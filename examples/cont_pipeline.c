/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Continuations: a pipeline driven by completion callbacks.
 *
 * Rank 0 streams BLOCKS blocks of numbers to rank 1 through two buffers
 * (two blocks in flight). Nobody loops over the blocks: each operation
 * gets a continuation (rcx_continue), and its callback performs the next
 * step. On rank 0, the callback of a finished send refills that buffer
 * and sends the next block; on rank 1, the callback of a finished receive
 * checks and sums the block, then posts the receive of the next block
 * into the same buffer. Blocks are 64 KiB, above the eager limit, so each
 * send completes only once rank 1 has fetched the data (RDMA READ).
 *
 * All continuations are registered with one continuation request; it
 * stays active while any is outstanding (callbacks register new ones
 * before returning), so one rcx_wait on it runs the whole pipeline.
 *
 *	rcx-run -n 2 ./cont_pipeline [BLOCKS]
 */
#include <errno.h>
#include <stdint.h>
#include "example.h"

#define BLOCK_INTS (16 * 1024) /* 64 KiB */
#define DEPTH	   2	       /* buffers, blocks in flight */
#define TAG_SUM	   RCX_TAG_UB  /* the blocks use tags 0 .. BLOCKS-1 */

struct pipeline {
	struct rcx_group *g;
	struct rcx_req *cont; /* continuation request */
	long blocks;	      /* to transfer */
	long next;	      /* next block to post */
	long done;	      /* blocks sent (rank 0) or received (rank 1) */
	uint64_t sum;	      /* rank 1: sum of every number received */
	int err;	      /* first error seen in a callback */
};

/* One buffer of the pipeline: the callback's cb_data. */
struct lane {
	struct pipeline *p;
	uint32_t data[BLOCK_INTS];
	long block;	      /* the block in this buffer */
	struct rcx_status st; /* written before the callback runs */
};

static void step(struct lane *l);

/* A block's numbers: block b holds b * BLOCK_INTS .. + BLOCK_INTS - 1. */
static uint32_t value(long block, int i)
{
	return (uint32_t)(block * BLOCK_INTS + i);
}

static void fail(struct pipeline *p, int err)
{
	if (!p->err)
		p->err = err;
}

/* Runs when the lane's operation has completed. */
static void done_cb(struct rcx_status *st, void *cb_data)
{
	struct lane *l = cb_data;
	struct pipeline *p = l->p;
	int i;

	if (st->error) {
		fail(p, st->error);
		return; /* the pipeline stops; rcx_wait returns */
	}
	if (rcx_group_rank(p->g) == 1) {
		for (i = 0; i < BLOCK_INTS; i++) {
			if (l->data[i] != value(l->block, i))
				fail(p, -EBADMSG);
			p->sum += l->data[i];
		}
	}
	p->done++;
	if (p->next < p->blocks)
		step(l); /* the next block through this buffer */
}

/*
 * Post the next block through lane l and attach done_cb to it. The
 * request passes to rcx (it is freed after the callback) and the handle
 * is set to NULL.
 */
static void step(struct lane *l)
{
	struct pipeline *p = l->p;
	struct rcx_req *req;
	long b = p->next++;
	int i, ret;

	l->block = b;
	if (rcx_group_rank(p->g) == 0) {
		for (i = 0; i < BLOCK_INTS; i++)
			l->data[i] = value(b, i);
		ret = rcx_isend(p->g, l->data, sizeof(l->data), 1, (int)b,
				&req);
	} else {
		ret = rcx_irecv(p->g, l->data, sizeof(l->data), 0, (int)b,
				&req);
	}
	if (!ret)
		ret = rcx_continue(&req, done_cb, l, 0, &l->st, p->cont);
	if (ret)
		fail(p, ret);
}

int main(int argc, char **argv)
{
	struct pipeline p = { .blocks = argc > 1 ? atol(argv[1]) : 64 };
	struct lane *lanes = calloc(DEPTH, sizeof(*lanes));
	uint64_t n, sum;
	struct rcx_status st;
	struct rcx_ctx *ctx;
	int me = ex_start(&ctx, &p.g), i;

	if (!lanes)
		return 1;
	if (p.blocks < DEPTH)
		p.blocks = DEPTH;
	CHECK(rcx_continue_init(ctx, NULL, &p.cont));
	for (i = 0; i < DEPTH; i++) {
		lanes[i].p = &p;
		step(&lanes[i]);
	}
	/* Progress runs the callbacks; returns when every one has run. */
	CHECK(rcx_wait(&p.cont, &st));
	CHECK(p.err);
	printf("rank %d: %ld blocks %s by %zu callbacks\n", me, p.done,
	       me ? "received" : "sent", st.count);
	if (p.done != p.blocks)
		return 1;

	/* rank 1 reports the sum; rank 0 knows what it must be */
	n = (uint64_t)p.blocks * BLOCK_INTS;
	if (me == 1) {
		CHECK(rcx_send(p.g, &p.sum, sizeof(p.sum), 0, TAG_SUM));
	} else {
		CHECK(rcx_recv(p.g, &sum, sizeof(sum), 1, TAG_SUM,
			       RCX_STATUS_IGNORE));
		if (sum != n * (n - 1) / 2) {
			fprintf(stderr, "sum %llu, expected %llu\n",
				(unsigned long long)sum,
				(unsigned long long)(n * (n - 1) / 2));
			return 1;
		}
		printf("cont_pipeline: sum of %llu numbers checked\n",
		       (unsigned long long)n);
	}
	CHECK(rcx_req_free(&p.cont));
	free(lanes);
	ex_finish(ctx, &p.g);
	return 0;
}
