/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound channels: a ping-pong between two ranks.
 *
 * Each rank makes an ordinary persistent send and receive
 * (rcx_send_init/rcx_recv_init) and binds each into a channel
 * (rcx_bind): a private queue pair with the buffer registered and the
 * work request built once. After that a message costs one rcx_start and
 * one rcx_wait. A channel carries one message at a time, and its receive
 * buffer belongs to the program from completion until the next
 * rcx_start, so each side starts its receive before it sends the message
 * that will be answered.
 *
 *	rcx-run -n 2 ./chan_pingpong [ROUNDS]
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sched_yield */
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "example.h"

#define TAG 1

struct msg {
	uint64_t round;
	char text[56];
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000, i;
	struct rcx_req *send_init, *recv_init, *sc, *rc;
	struct rcx_status st;
	struct rcx_group *g;
	struct rcx_ctx *ctx;
	struct msg out = { 0 }, in = { 0 };
	int me = ex_start(&ctx, &g), peer = 1 - me;
	double t0;

	if (rounds < 1)
		rounds = 1;
	CHECK(rcx_send_init(g, &out, sizeof(out), peer, TAG, &send_init));
	CHECK(rcx_recv_init(g, &in, sizeof(in), peer, TAG, &recv_init));
	/*
	 * A bind matches like the send or receive would (peer, tag, order)
	 * and rcx_bind blocks until the peer's matching bind: as with
	 * blocking sends, the two ranks bind in opposite orders.
	 * (rcx_ibind on both and one rcx_waitall works as well.)
	 */
	if (me == 0) {
		CHECK(rcx_bind(send_init, NULL, &sc));
		CHECK(rcx_bind(recv_init, NULL, &rc));
	} else {
		CHECK(rcx_bind(recv_init, NULL, &rc));
		CHECK(rcx_bind(send_init, NULL, &sc));
	}
	/* The channels are independent of the requests they came from. */
	CHECK(rcx_req_free(&send_init));
	CHECK(rcx_req_free(&recv_init));

	/* rank 1's first receive is posted before rank 0 may send */
	if (me == 1)
		CHECK(rcx_start(rc));
	CHECK(rcx_group_barrier(g));

	t0 = now_us();
	for (i = 0; i < rounds; i++) {
		if (me == 0) {
			out.round = (uint64_t)i;
			snprintf(out.text, sizeof(out.text), "ping %ld", i);
			CHECK(rcx_start(rc)); /* for the pong */
			CHECK(rcx_start(sc));
			CHECK(rcx_wait(&sc, RCX_STATUS_IGNORE));
			CHECK(rcx_wait(&rc, &st));
			CHECK(st.error);
			if (in.round != (uint64_t)i + 1 ||
			    strncmp(in.text, "pong", 4)) {
				fprintf(stderr, "round %ld: got %s (%llu)\n", i,
					in.text, (unsigned long long)in.round);
				return 1;
			}
		} else {
			CHECK(rcx_wait(&rc, &st));
			CHECK(st.error);
			if (in.round != (uint64_t)i) {
				fprintf(stderr, "round %ld: got %llu\n", i,
					(unsigned long long)in.round);
				return 1;
			}
			/* answer from the data, then hand the buffer back */
			out.round = in.round + 1;
			snprintf(out.text, sizeof(out.text), "pong %ld", i);
			if (i + 1 < rounds)
				CHECK(rcx_start(rc)); /* for the next ping */
			CHECK(rcx_start(sc));
			CHECK(rcx_wait(&sc, RCX_STATUS_IGNORE));
		}
	}
	if (me == 0)
		printf("chan_pingpong: %ld round trips, %.1f us each\n", rounds,
		       (now_us() - t0) / rounds);

	/* Loosely collective with the peer: returns once it freed its end. */
	{
		struct rcx_req *chans[2] = { sc, rc };

		CHECK(rcx_bind_free(chans, 2));
	}
	ex_finish(ctx, &g);
	return 0;
}
