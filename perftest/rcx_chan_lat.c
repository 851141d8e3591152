/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound-channel ping-pong latency (half round trip), like ib_send_lat:
 * each side binds a send and a receive channel; the client starts its
 * next receive before it replies. --slots N: channels on N circular slots
 * (with write_imm the receiver then writes its credit once in N starts).
 * The two channels are bound as a companion pair (rcx_chan_companion):
 * with write_imm each receive start's credit rides in the reply's
 * immediate, and no credit write of its own goes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/pt.h"
#include "common/pt_count.h"

struct lat {
	struct rcx_req *sc, *rc;
	long n; /* iterations in all */
	bool server;
};

/* --count: the loop below with each call a part of the path */
static void count_body(void *arg, long i)
{
	struct lat *l = arg;

	if (l->server) {
		pt_count_on(PT_RECV_START);
		PT_CHECK(rcx_start(l->rc));
		pt_count_off();
		/* the peer answers only what is sent next: nothing yet */
		pt_count_empty(&l->rc);
	} else {
		pt_count_wait(PT_RECV_DONE, &l->rc);
		if (i + 1 < l->n) {
			pt_count_on(PT_RECV_START);
			PT_CHECK(rcx_start(l->rc));
			pt_count_off();
			pt_count_empty(&l->rc);
		}
	}
	/* the peer's test of its reply's send finds that completion only,
	 * not this message too, however long it waited for it */
	if (l->server)
		pt_count_peer_tested();
	pt_count_on(PT_SEND_START);
	PT_CHECK(rcx_start(l->sc));
	pt_count_off();
	pt_count_sent();
	/* the reply first: the peer has the message then */
	if (l->server)
		pt_count_wait(PT_RECV_DONE, &l->rc);
	pt_count_wait(PT_SEND_DONE, &l->sc);
}

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	long n = o->warmup + o->iters, i;
	int me = rcx_group_rank(g), peer = 1 - me;
	int ns = o->slots > 1 ? o->slots : 1;
	size_t blen = (size_t)ns * (size + 1);
	char *sb, *rb, num[16];
	double *t = pt_calloc(o->iters, sizeof(double)), t0;
	struct rcx_req *si, *ri, *sc, *rc, *eph[2];
	struct rcx_info *info;
	struct rcx_win *bw;
	struct pt_stats st;

	/* the buffers in memory the library allocates (as MPI_Alloc_mem's):
	 * on shared memory a segment the peer maps, where the sender copies
	 * a message straight into the receive's buffer */
	PT_CHECK(rcx_win_allocate(g, 2 * blen, 1, NULL, (void **)&sb, &bw));
	rb = sb + blen;
	PT_CHECK(rcx_info_create(&info));
	PT_CHECK(rcx_info_set(info, RCX_CHAN_PROTOCOL, o->proto));
	/* the two channels are a companion pair: with write_imm each
	 * receiver's credit rides on the reply */
	PT_CHECK(rcx_info_set(info, RCX_CHAN_COMPANION, "1"));
	if (ns > 1) {
		snprintf(num, sizeof(num), "%d", ns);
		PT_CHECK(rcx_info_set(info, RCX_CHAN_SLOTS, num));
	}
	PT_CHECK(rcx_send_init(g, sb, size, peer, 1, &si));
	PT_CHECK(rcx_recv_init(g, rb, size, peer, 1, &ri));
	PT_CHECK(rcx_ibind(si, info, &sc, &eph[0]));
	PT_CHECK(rcx_ibind(ri, info, &rc, &eph[1]));
	PT_CHECK(rcx_waitall(2, eph, RCX_STATUSES_IGNORE));
	rcx_group_barrier(g);
	if (o->count) {
		struct lat l = { .sc = sc, .rc = rc, .server = me == 0 };

		l.n = pt_count_iters(o, PT_PARTS_ALL);
		if (me == 1)
			PT_CHECK(rcx_start(rc));
		pt_count_run(o, g, PT_PARTS_ALL, count_body, &l);
		n = 0;
	} else if (me == 1) {
		PT_CHECK(rcx_start(rc));
	}
	for (i = 0; i < n; i++) {
		if (me == 0) {
			t0 = pt_now_us();
			PT_CHECK(rcx_start(rc));
			PT_CHECK(rcx_start(sc));
			PT_CHECK(rcx_wait(&sc, RCX_STATUS_IGNORE));
			PT_CHECK(rcx_wait(&rc, RCX_STATUS_IGNORE));
			if (i >= o->warmup)
				t[i - o->warmup] = (pt_now_us() - t0) / 2;
		} else {
			PT_CHECK(rcx_wait(&rc, RCX_STATUS_IGNORE));
			if (i + 1 < n)
				PT_CHECK(rcx_start(rc));
			PT_CHECK(rcx_start(sc));
			PT_CHECK(rcx_wait(&sc, RCX_STATUS_IGNORE));
		}
	}
	if (me == 0 && !o->count) {
		pt_stats(t, o->iters, &st);
		pt_report_lat(o, size, o->iters, &st);
	}
	{
		struct rcx_req *ch[2] = { sc, rc };

		PT_CHECK(rcx_bind_free(ch, 2));
	}
	rcx_req_free(&si);
	rcx_req_free(&ri);
	rcx_info_free(&info);
	PT_CHECK(rcx_win_free(&bw));
	free(t);
}

static const struct pt_tool tool = {
	.title = "Channel Latency Test",
	.what = "Bound-channel ping-pong latency (half round trip), like "
		"ib_send_lat\n(--proto send) or ib_write_lat (--proto "
		"write_imm). The two channels\nare a companion pair "
		"(rcx_chan_companion): with write_imm each\nreceiver's "
		"credit rides in the reply's immediate.",
	.flags = PT_CHAN | PT_COUNT,
	.min_size = 1,
	.run = run,
};

int main(int argc, char **argv)
{
	return pt_main(argc, argv, &tool);
}
