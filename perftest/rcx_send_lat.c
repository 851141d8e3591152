/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tag-matched isend/irecv ping-pong latency (half round trip), like
 * ib_send_lat; the receive is posted before the message it waits for.
 */
#include <stdlib.h>
#include "common/pt.h"

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	long n = o->warmup + o->iters, i;
	int me = rcx_group_rank(g), peer = 1 - me;
	char *sb = pt_calloc(1, size + 1), *rb = pt_calloc(1, size + 1);
	double *t = pt_calloc(o->iters, sizeof(double)), t0;
	struct rcx_req *s, *r;
	struct pt_stats st;

	rcx_group_barrier(g);
	if (me == 1)
		PT_CHECK(rcx_irecv(g, rb, size, peer, 1, &r));
	for (i = 0; i < n; i++) {
		if (me == 0) {
			t0 = pt_now_us();
			PT_CHECK(rcx_irecv(g, rb, size, peer, 1, &r));
			PT_CHECK(rcx_isend(g, sb, size, peer, 1, &s));
			PT_CHECK(rcx_wait(&s, RCX_STATUS_IGNORE));
			PT_CHECK(rcx_wait(&r, RCX_STATUS_IGNORE));
			if (i >= o->warmup)
				t[i - o->warmup] = (pt_now_us() - t0) / 2;
		} else {
			PT_CHECK(rcx_wait(&r, RCX_STATUS_IGNORE));
			if (i + 1 < n)
				PT_CHECK(rcx_irecv(g, rb, size, peer, 1, &r));
			PT_CHECK(rcx_isend(g, sb, size, peer, 1, &s));
			PT_CHECK(rcx_wait(&s, RCX_STATUS_IGNORE));
		}
	}
	if (me == 0) {
		pt_stats(t, o->iters, &st);
		pt_report_lat(o, size, o->iters, &st);
	}
	free(sb);
	free(rb);
	free(t);
}

static const struct pt_tool tool = {
	.title = "Send Latency Test",
	.what = "Tag-matched rcx_isend/rcx_irecv ping-pong latency (half round "
		"trip),\nlike ib_send_lat.",
	.proto = "eager up to RCX_EAGER_SIZE, then RDMA-read rendezvous",
	.min_size = 1,
	.run = run,
};

int main(int argc, char **argv)
{
	return pt_main(argc, argv, &tool);
}
