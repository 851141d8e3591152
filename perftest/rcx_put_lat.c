/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Window put ping-pong latency (half round trip), like ib_write_lat: each
 * side puts size bytes into the other's window, the last byte carrying
 * the iteration number, and polls the last byte of its own window memory
 * for the peer's put of the same iteration.
 *
 * The synchronisation is what the test honestly needs, through the public
 * API only:
 * - one passive-target epoch for the whole run (rcx_win_lock_all after
 *   rcx_win_allocate): a fence epoch would add a collective per message,
 *   which ib_write_lat does not have;
 * - rcx_put then rcx_win_flush to the peer in every iteration: the put is
 *   complete (acknowledged by the target) before the origin buffer is
 *   written again, as ib_write_lat waits for its write's send completion
 *   in every iteration;
 * - the arrival is seen by polling the window's memory (the unified
 *   memory model), followed by rcx_win_sync before the data counts as
 *   received.
 * The window holds 2 x size bytes: [0, size) is written by the peer,
 * [size, 2 size) is this side's origin buffer (registered with the
 * window, so puts above the bounce size need no registration of their
 * own).
 */
#include <stdint.h>
#include <stdlib.h>
#include "common/pt.h"
#include "common/pt_count.h"

/* Wait until the peer's put of iteration v has landed. */
static void wait_for(struct rcx_win *w, volatile uint8_t *last, uint8_t v)
{
	while (*last != v)
		;
	PT_CHECK(rcx_win_sync(w));
}

static void put(struct rcx_win *w, uint8_t *out, size_t size, int peer,
		uint8_t v)
{
	out[size - 1] = v;
	pt_count_on(PT_SEND_START);
	PT_CHECK(rcx_put(w, out, size, peer, 0));
	pt_count_off();
	pt_count_on(PT_SEND_DONE);
	PT_CHECK(rcx_win_flush(w, peer));
	pt_count_off();
}

struct count {
	struct rcx_win *w;
	uint8_t *base;
	volatile uint8_t *last;
	size_t size;
	int me;
};

/* --count: the loop below; the put and the flush are the parts */
static void count_body(void *arg, long i)
{
	struct count *c = arg;
	uint8_t v = (uint8_t)(i % 255 + 1);

	if (c->me == 1)
		wait_for(c->w, c->last, v);
	put(c->w, c->base + c->size, c->size, 1 - c->me, v);
	if (c->me == 0)
		wait_for(c->w, c->last, v);
}

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	long n = o->warmup + o->iters, i;
	int me = rcx_group_rank(g), peer = 1 - me;
	double *t = pt_calloc(o->iters, sizeof(double)), t0;
	volatile uint8_t *last;
	struct pt_stats st;
	struct rcx_win *w;
	uint8_t *base, v;

	PT_CHECK(rcx_win_allocate(g, 2 * size, 1, NULL, (void **)&base, &w));
	last = base + size - 1;
	PT_CHECK(rcx_win_lock_all(w));
	PT_CHECK(rcx_group_barrier(g));
	if (o->count) {
		struct count c = { .w = w,
				   .base = base,
				   .last = last,
				   .size = size,
				   .me = me };

		pt_count_run(o, g,
			     PT_PART(PT_SEND_START) | PT_PART(PT_SEND_DONE),
			     count_body, &c);
		n = 0;
	}
	for (i = 0; i < n; i++) {
		/* never 0 twice in a row: the window starts zeroed */
		v = (uint8_t)(i % 255 + 1);
		if (me == 0) {
			t0 = pt_now_us();
			put(w, base + size, size, peer, v);
			wait_for(w, last, v);
			if (i >= o->warmup)
				t[i - o->warmup] = (pt_now_us() - t0) / 2;
		} else {
			wait_for(w, last, v);
			put(w, base + size, size, peer, v);
		}
	}
	PT_CHECK(rcx_win_unlock_all(w));
	if (me == 0 && !o->count) {
		pt_stats(t, o->iters, &st);
		pt_report_lat(o, size, o->iters, &st);
	}
	PT_CHECK(rcx_group_barrier(g));
	PT_CHECK(rcx_win_free(&w));
	free(t);
}

static const struct pt_tool tool = {
	.title = "Put Latency Test",
	.what = "Window put ping-pong latency (half round trip), like "
		"ib_write_lat:\nrcx_put + rcx_win_flush, the arrival seen by "
		"polling the window.",
	.proto = "RDMA write (rcx_put), rcx_win_flush",
	.flags = PT_COUNT,
	.min_size = 1,
	.run = run,
};

int main(int argc, char **argv)
{
	return pt_main(argc, argv, &tool);
}
