/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What rcx_win_order saves: put(data) -> order(WRITE) -> put(flag)
 * against put(data) -> flush -> put(flag), each timed until both are
 * complete at the target (a final flush). --mode war: get(x) ->
 * order(ALL) -> put(x) against get(x) -> flush -> put(x). The two forms
 * alternate round by round (TCG-emulated rxe swings 2x from run to run,
 * so only interleaved ratios mean much); rank 0 reports both latencies
 * and the median of the per-round ratios flush/order.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/pt.h"

static const char help[] =
	"  --mode MODE   flag (default): put -> order(WRITE) -> put(flag)\n"
	"                war: get -> order(ALL) -> put\n";

/* One round of either form; returns its time in microseconds. */
static double round_us(struct rcx_win *w, bool war, bool order, void *data,
		       size_t size, uint64_t *flag)
{
	double t0 = pt_now_us();

	if (war)
		PT_CHECK(rcx_get(w, data, size, 1, 0));
	else
		PT_CHECK(rcx_put(w, data, size, 1, 0));
	if (order)
		PT_CHECK(rcx_win_order(w,
				       war ? RCX_ORDER_ALL : RCX_ORDER_WRITE));
	else
		PT_CHECK(rcx_win_flush(w, 1));
	if (war)
		PT_CHECK(rcx_put(w, flag, 8, 1, 0));
	else
		PT_CHECK(rcx_put(w, flag, 8, 1, size));
	PT_CHECK(rcx_win_flush(w, 1));
	return pt_now_us() - t0;
}

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	bool war = o->extra && !strcmp(o->extra, "war");
	long n = o->warmup + o->iters, i, k = 0;
	double *to = calloc(o->iters, sizeof(double));
	double *tf = calloc(o->iters, sizeof(double));
	double *ratio = calloc(o->iters, sizeof(double));
	struct pt_opts ro = *o;
	struct pt_stats st;
	struct rcx_win *w;
	uint8_t *base;
	double a, b;

	if (o->extra && !war && strcmp(o->extra, "flag"))
		pt_die(__FILE__, __LINE__, "--mode flag|war", -EINVAL);
	if (war && size < 8)
		size = 8;
	/* the origin's buffers live in its window: registered once */
	PT_CHECK(rcx_win_allocate(g, size + 64, 1, NULL, (void **)&base, &w));
	if (rcx_group_rank(g) == 0) {
		PT_CHECK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 1));
		for (i = 0; i < n; i++) {
			/* alternate which form goes first in a round */
			if (i & 1) {
				a = round_us(w, war, true, base, size,
					     (uint64_t *)(base + size));
				b = round_us(w, war, false, base, size,
					     (uint64_t *)(base + size));
			} else {
				b = round_us(w, war, false, base, size,
					     (uint64_t *)(base + size));
				a = round_us(w, war, true, base, size,
					     (uint64_t *)(base + size));
			}
			if (i < o->warmup)
				continue;
			to[k] = a;
			tf[k] = b;
			ratio[k++] = b / a;
		}
		PT_CHECK(rcx_win_unlock(w, 1));
		ro.tool = war ? "get-order-put" : "put-order-put";
		if (!o->json)
			printf(" %s (rcx_win_order):\n", ro.tool);
		pt_stats(to, o->iters, &st);
		pt_report_lat(&ro, size, o->iters, &st);
		ro.tool = war ? "get-flush-put" : "put-flush-put";
		if (!o->json)
			printf(" %s (rcx_win_flush):\n", ro.tool);
		pt_stats(tf, o->iters, &st);
		pt_report_lat(&ro, size, o->iters, &st);
		pt_stats(ratio, o->iters, &st);
		if (!o->json)
			printf(" median ratio flush/order over %ld interleaved "
			       "rounds: %.2f\n",
			       o->iters, st.median);
	}
	PT_CHECK(rcx_group_barrier(g));
	PT_CHECK(rcx_win_free(&w));
	free(to);
	free(tf);
	free(ratio);
}

int main(int argc, char **argv)
{
	return pt_main(argc, argv, help, run);
}
