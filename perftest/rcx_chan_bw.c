/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bound-channel message rate and bandwidth: a bundle of -b channels
 * (rcx_mbind) from the server to the client, started together with
 * rcx_startall, or one by one with --separate. The bundle's channels take
 * one slot each of a circular buffer of -b slots (or --slots) of -s bytes
 * (channel i always slot i), so the messages of one round land side by
 * side: with write_imm, channels started together travel as one RDMA
 * write.
 */
#include <stdio.h>
#include <stdlib.h>
#include "common/pt.h"

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	int me = rcx_group_rank(g), b = o->bundle, k;
	long rounds = o->warmup + o->iters, i;
	char *buf = calloc(o->slots > b ? o->slots : b, size + 1), num[32];
	struct rcx_req *init, *ch[255];
	struct rcx_info *info;
	double t0 = 0;

	PT_CHECK(rcx_info_create(&info));
	PT_CHECK(rcx_info_set(info, RCX_CHAN_PROTOCOL, o->proto));
	if ((o->slots > 1 || b > 1) && size > 0) {
		snprintf(num, sizeof(num), "%d", o->slots > 1 ? o->slots : b);
		PT_CHECK(rcx_info_set(info, RCX_CHAN_SLOTS, num));
		snprintf(num, sizeof(num), "%zu", size);
		PT_CHECK(rcx_info_set(info, RCX_CHAN_STRIDE, num));
	}
	if (me == 0)
		PT_CHECK(rcx_send_init(g, buf, size, 1, 2, &init));
	else
		PT_CHECK(rcx_recv_init(g, buf, size, 0, 2, &init));
	PT_CHECK(rcx_mbind(init, b, info, ch));
	rcx_group_barrier(g);
	for (i = 0; i < rounds; i++) {
		if (i == o->warmup)
			t0 = pt_now_us();
		if (me == 0 && o->separate) {
			for (k = 0; k < b; k++)
				PT_CHECK(rcx_start(ch[k]));
		} else {
			PT_CHECK(rcx_startall(b, ch));
		}
		PT_CHECK(rcx_waitall(b, ch, RCX_STATUSES_IGNORE));
	}
	if (me == 0)
		pt_report_bw(o, size, o->iters * b, pt_now_us() - t0);
	PT_CHECK(rcx_bind_free(ch, b));
	rcx_req_free(&init);
	rcx_info_free(&info);
	free(buf);
}

int main(int argc, char **argv)
{
	return pt_main(argc, argv,
		       "Rates count messages the server (sender) completed.\n",
		       run);
}
