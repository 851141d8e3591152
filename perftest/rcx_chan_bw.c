/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound-channel message rate and bandwidth: a bundle of --bundle channels
 * (rcx_mbind) from the server to the client, started together with
 * rcx_startall, or one by one with --separate. The bundle's channels take
 * one slot each of a circular buffer of --bundle slots (or --slots) of -s
 * bytes (channel i always slot i), so the messages of one round land side
 * by side: with write_imm, channels started together travel as one RDMA
 * write. -b (bidirectional, as in ib_send_bw): a bundle each way, both
 * started in every round; the rates count both directions.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "common/pt.h"
#include "common/pt_count.h"

/* one direction: a bundle bound from init (tag 2: 0 -> 1, tag 3: 1 -> 0) */
struct dir {
	char *buf;
	struct rcx_req *init, *ch[255];
};

static void bind_dir(const struct pt_opts *o, struct rcx_group *g,
		     const struct rcx_info *info, size_t size, int from,
		     struct dir *d)
{
	int me = rcx_group_rank(g), b = o->bundle;

	d->buf = pt_calloc(o->slots > b ? o->slots : b, size + 1);
	if (me == from)
		PT_CHECK(rcx_send_init(g, d->buf, size, 1 - me, 2 + from,
				       &d->init));
	else
		PT_CHECK(rcx_recv_init(g, d->buf, size, from, 2 + from,
				       &d->init));
	PT_CHECK(rcx_mbind(d->init, b, info, d->ch));
}

static void free_dir(const struct pt_opts *o, struct dir *d)
{
	PT_CHECK(rcx_bind_free(d->ch, o->bundle));
	rcx_req_free(&d->init);
	free(d->buf);
}

/* each bundle together; --separate: the sender's one by one */
static void start(const struct pt_opts *o, int me, struct dir *d, int nd)
{
	int k, j;

	for (k = 0; k < nd; k++) {
		if (me != k || !o->separate) {
			PT_CHECK(rcx_startall(o->bundle, d[k].ch));
			continue;
		}
		for (j = 0; j < o->bundle; j++)
			PT_CHECK(rcx_start(d[k].ch[j]));
	}
}

struct bw {
	const struct pt_opts *o;
	struct rcx_req **ch;
	bool server; /* sends */
};

/*
 * --count, one direction: the receiver starts its bundle and tells (its
 * start is the sender's credit with write_imm), the sender waits for
 * that outside rcx, starts its bundle and waits for it; per message:
 * the counts over the bundle's size (compare divides).
 */
static void count_body(void *arg, long i)
{
	struct bw *w = arg;
	int b = w->o->bundle;

	if (w->server) {
		pt_count_ready(PT_RECV_DONE); /* the receiver started */
		pt_count_received();
		pt_count_on(PT_SEND_START);
		PT_CHECK(rcx_startall(b, w->ch));
		pt_count_off();
		pt_count_sent();
		pt_count_waitall(PT_SEND_DONE, b, w->ch);
		return;
	}
	pt_count_on(PT_RECV_START);
	PT_CHECK(rcx_startall(b, w->ch));
	pt_count_off();
	pt_count_sent();
	pt_count_waitall(PT_RECV_DONE, b, w->ch);
}

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	int me = rcx_group_rank(g), b = o->bundle, nd = o->bidir ? 2 : 1, k;
	long rounds = o->warmup + o->iters, i;
	struct rcx_req *all[2 * 255];
	struct rcx_info *info;
	struct dir d[2];
	double t0 = 0;
	char num[32];

	PT_CHECK(rcx_info_create(&info));
	PT_CHECK(rcx_info_set(info, RCX_CHAN_PROTOCOL, o->proto));
	if (o->slots > 1 || b > 1) {
		snprintf(num, sizeof(num), "%d", o->slots > 1 ? o->slots : b);
		PT_CHECK(rcx_info_set(info, RCX_CHAN_SLOTS, num));
		snprintf(num, sizeof(num), "%zu", size);
		PT_CHECK(rcx_info_set(info, RCX_CHAN_STRIDE, num));
	}
	/* both ends bind in the same order: 0 -> 1 first */
	for (k = 0; k < nd; k++) {
		bind_dir(o, g, info, size, k, &d[k]);
		for (i = 0; i < b; i++)
			all[k * b + i] = d[k].ch[i];
	}
	rcx_group_barrier(g);
	if (o->count) {
		struct bw w = { .o = o, .ch = d[0].ch, .server = me == 0 };

		if (o->bidir || o->separate)
			pt_die(__FILE__, __LINE__,
			       "--count with -b or --separate", -EINVAL);
		pt_count_run(o, g,
			     PT_PART(PT_SEND_START) | PT_PART(PT_SEND_DONE) |
				     PT_PART(PT_RECV_START) |
				     PT_PART(PT_RECV_DONE),
			     count_body, &w);
		rounds = 0;
	}
	for (i = 0; i < rounds; i++) {
		if (i == o->warmup)
			t0 = pt_now_us();
		start(o, me, d, nd);
		PT_CHECK(rcx_waitall(nd * b, all, RCX_STATUSES_IGNORE));
	}
	if (me == 0 && !o->count)
		pt_report_bw(o, size, o->iters * b * nd, pt_now_us() - t0);
	for (k = 0; k < nd; k++)
		free_dir(o, &d[k]);
	rcx_info_free(&info);
}

static const struct pt_tool tool = {
	.title = "Channel BW Test",
	.what = "Bound-channel message rate and bandwidth, like ib_send_bw: "
		"a bundle\nof --bundle channels (rcx_mbind) started together "
		"(rcx_startall)\nor one by one (--separate). Rates count the "
		"messages the server\ncompleted.",
	.flags = PT_BW | PT_CHAN | PT_BUNDLE | PT_COUNT,
	.min_size = 1,
	.run = run,
};

int main(int argc, char **argv)
{
	return pt_main(argc, argv, &tool);
}
