/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA window with rcx_win_order: publish data, then a flag.
 *
 * Rank 0 writes a block of data into rank 1's window, calls
 * rcx_win_order(RCX_ORDER_WRITE), and writes a flag next to it. The order
 * call promises that the data is complete at the target before the flag's
 * write begins there, without waiting for the data to be acknowledged (on
 * one RC queue pair writes already execute in order, so rcx posts nothing
 * extra; after a get or an atomic it would fence the next write). Rank 1
 * never calls rcx while it waits: it watches its own memory for the flag,
 * then checks the data. Each round uses its own slot of the window.
 *
 *	rcx-run -n 2 ./win_order [ROUNDS]
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sched_yield */
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include "example.h"

#define DATA_WORDS 1024 /* 8 KiB: several packets on the wire */
#define MAX_ROUNDS 64

struct slot {
	uint64_t data[DATA_WORDS];
	uint64_t flag; /* written last: the round number + 1 */
};

/* word k of round r's data */
static uint64_t word(long r, long k)
{
	return (uint64_t)r << 32 | (uint64_t)k;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 16, r, k, bad = 0;
	struct rcx_group *g;
	struct rcx_ctx *ctx;
	struct rcx_win *win;
	struct slot *mine, *src;
	int me = ex_start(&ctx, &g);

	if (rounds < 1 || rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	/* Collective: every rank exposes rounds slots (zeroed by rcx). */
	CHECK(rcx_win_allocate(g, rounds * sizeof(struct slot), 1, NULL,
			       (void **)&mine, &win));

	if (me == 0) {
		/* Sources stay untouched until the epoch ends (unlock). */
		src = calloc(rounds, sizeof(*src));
		if (!src)
			return 1;
		/* Passive target: rank 1 takes no part in the accesses. */
		CHECK(rcx_win_lock_all(win));
		for (r = 0; r < rounds; r++) {
			for (k = 0; k < DATA_WORDS; k++)
				src[r].data[k] = word(r, k);
			src[r].flag = (uint64_t)r + 1;
			/* displacements are byte offsets (disp_unit 1) */
			CHECK(rcx_put(win, src[r].data, sizeof(src[r].data), 1,
				      r * sizeof(struct slot)));
			CHECK(rcx_win_order(win, RCX_ORDER_WRITE));
			CHECK(rcx_put(win, &src[r].flag, sizeof(src[r].flag), 1,
				      r * sizeof(struct slot) +
					      offsetof(struct slot, flag)));
		}
		CHECK(rcx_win_unlock_all(win)); /* complete at rank 1 */
		free(src);
		printf("win_order: %ld rounds of put, order(WRITE), "
		       "put(flag)\n",
		       rounds);
	} else {
		for (r = 0; r < rounds; r++) {
			volatile uint64_t *flag = &mine[r].flag;

			while (*flag != (uint64_t)r + 1)
				sched_yield(); /* rxe runs on this CPU too */
			/* read the data only after seeing the flag */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			for (k = 0; k < DATA_WORDS; k++)
				bad += mine[r].data[k] != word(r, k);
		}
		printf("win_order: rank 1 saw %ld flags, %ld data words "
		       "late\n",
		       rounds, bad);
	}
	CHECK(rcx_group_barrier(g));
	CHECK(rcx_win_free(&win));
	ex_finish(ctx, &g);
	return bad ? 1 : 0;
}
