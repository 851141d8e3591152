/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Tag-matched isend/irecv ping-pong latency (half round trip), like
 * ib_send_lat; the receive is posted before the message it waits for.
 */
#include <stdlib.h>
#include "common/pt.h"
#include "common/pt_count.h"

struct lat {
	struct rcx_group *g;
	char *sb, *rb;
	size_t size;
	struct rcx_req *r;
	long n; /* iterations in all */
	int peer;
	bool server;
};

static void count_irecv(struct lat *l)
{
	pt_count_on(PT_RECV_START);
	PT_CHECK(rcx_irecv(l->g, l->rb, l->size, l->peer, 1, &l->r));
	pt_count_off();
	/* the peer answers only what is sent next: nothing yet */
	pt_count_empty(&l->r);
}

/* --count: the loop below with each call a part of the path */
static void count_body(void *arg, long i)
{
	struct lat *l = arg;
	struct rcx_req *s;

	if (l->server) {
		count_irecv(l);
	} else {
		pt_count_wait(PT_RECV_DONE, &l->r);
		if (i + 1 < l->n)
			count_irecv(l);
	}
	/* the peer's test of its reply's send finds that completion only,
	 * not this message too, however long it waited for it */
	if (l->server)
		pt_count_peer_tested();
	pt_count_on(PT_SEND_START);
	PT_CHECK(rcx_isend(l->g, l->sb, l->size, l->peer, 1, &s));
	pt_count_off();
	pt_count_sent();
	/* the reply first: the peer has the message then */
	if (l->server)
		pt_count_wait(PT_RECV_DONE, &l->r);
	pt_count_wait(PT_SEND_DONE, &s);
}

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	long n = o->warmup + o->iters, i;
	int me = rcx_group_rank(g), peer = 1 - me;
	char *sb = pt_calloc(1, size + 1), *rb = pt_calloc(1, size + 1);
	double *t = pt_calloc(o->iters, sizeof(double)), t0;
	struct rcx_req *s, *r;
	struct pt_stats st;

	rcx_group_barrier(g);
	if (o->count) {
		struct lat l = { .g = g,
				 .sb = sb,
				 .rb = rb,
				 .size = size,
				 .peer = peer,
				 .server = me == 0 };

		l.n = pt_count_iters(o, PT_PARTS_ALL);
		if (me == 1)
			PT_CHECK(rcx_irecv(g, rb, size, peer, 1, &l.r));
		pt_count_run(o, g, PT_PARTS_ALL, count_body, &l);
		n = 0;
	} else if (me == 1) {
		PT_CHECK(rcx_irecv(g, rb, size, peer, 1, &r));
	}
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
	if (me == 0 && !o->count) {
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
	.flags = PT_COUNT,
	.min_size = 1,
	.run = run,
};

int main(int argc, char **argv)
{
	return pt_main(argc, argv, &tool);
}
