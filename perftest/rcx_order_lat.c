/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What rcx_win_order saves: put(data) -> order(WRITE) -> put(flag)
 * against put(data) -> flush -> put(flag). --mode war: get(x) ->
 * order(ALL) -> put(x) against get(x) -> flush -> put(x).
 *
 * Two measures, taken in the same round and reported separately:
 * - end to end: from the first call until both operations are complete
 *   at the target (a final rcx_win_flush after the three calls);
 * - origin held: from the first call until the third call returns, the
 *   time the three calls keep the origin from doing anything else (the
 *   final flush is not part of it).
 * The time of the first call alone is reported too: on Soft-RoCE the
 * posting call itself runs the transfer in the kernel, which bounds what
 * either measure can show.
 * The two forms alternate round by round, each going first in every
 * other round (TCG-emulated rxe swings 2x from run to run, so only
 * interleaved ratios mean much); rank 0 reports both forms under both
 * measures and, per measure, the median of the per-round ratios
 * flush/order.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/pt.h"
#include "common/pt_count.h"

/* the sample series of one size */
enum {
	E2E_ORDER,
	E2E_FLUSH,
	HELD_ORDER,
	HELD_FLUSH,
	FIRST_CALL,
	E2E_RATIO,
	HELD_RATIO,
	NSERIES,
};

struct form {
	bool war;
	void *data;
	size_t size;
	uint64_t *flag;
};

/*
 * One round of either form: *first is the time the first call (put or
 * get) took, *held the time until the third call returned, *e2e until
 * both operations are complete at the target.
 */
static void round_us(struct rcx_win *w, const struct form *f, bool order,
		     double *first, double *held, double *e2e)
{
	double t0 = pt_now_us();

	if (f->war)
		PT_CHECK(rcx_get(w, f->data, f->size, 1, 0));
	else
		PT_CHECK(rcx_put(w, f->data, f->size, 1, 0));
	*first = pt_now_us() - t0;
	if (order)
		PT_CHECK(rcx_win_order(w, f->war ? RCX_ORDER_ALL
						 : RCX_ORDER_WRITE));
	else
		PT_CHECK(rcx_win_flush(w, 1));
	if (f->war)
		PT_CHECK(rcx_put(w, f->flag, 8, 1, 0));
	else
		PT_CHECK(rcx_put(w, f->flag, 8, 1, f->size));
	*held = pt_now_us() - t0;
	PT_CHECK(rcx_win_flush(w, 1));
	*e2e = pt_now_us() - t0;
}

static void report_text(const struct pt_opts *o, const char *what,
			double *order, double *flush, double *ratio)
{
	bool war = o->extra && !strcmp(o->extra, "war");
	struct pt_opts ro = *o;
	struct pt_stats st;
	FILE *f = pt_out();

	fprintf(f, " %s:\n", what);
	ro.tool = war ? "get-order-put" : "put-order-put";
	fprintf(f, " %s (rcx_win_order):\n", ro.tool);
	pt_stats(order, o->iters, &st);
	pt_report_lat(&ro, o->size, o->iters, &st);
	ro.tool = war ? "get-flush-put" : "put-flush-put";
	fprintf(f, " %s (rcx_win_flush):\n", ro.tool);
	pt_stats(flush, o->iters, &st);
	pt_report_lat(&ro, o->size, o->iters, &st);
	pt_stats(ratio, o->iters, &st);
	fprintf(f,
		" median ratio flush/order over %ld interleaved rounds: %.2f\n",
		o->iters, st.median);
}

static void json_pair(const char *key, double *samples, long n)
{
	struct pt_stats st;

	pt_stats(samples, n, &st);
	fprintf(pt_out(), ",\"%s_median\":%.2f,\"%s_p99\":%.2f,\"%s_min\":%.2f",
		key, st.median, key, st.p99, key, st.min);
}

static void report_json(const struct pt_opts *o, size_t size, double **s)
{
	struct pt_stats e2e, held;

	pt_stats(s[E2E_RATIO], o->iters, &e2e);
	pt_stats(s[HELD_RATIO], o->iters, &held);
	fprintf(pt_out(),
		"{\"tool\":\"%s\",\"mode\":\"%s\",\"bytes\":%zu,"
		"\"iterations\":%ld",
		o->tool, o->extra ? o->extra : "flag", size, o->iters);
	json_pair("e2e_order", s[E2E_ORDER], o->iters);
	json_pair("e2e_flush", s[E2E_FLUSH], o->iters);
	json_pair("held_order", s[HELD_ORDER], o->iters);
	json_pair("held_flush", s[HELD_FLUSH], o->iters);
	json_pair("first_call", s[FIRST_CALL], o->iters);
	fprintf(pt_out(), ",\"e2e_ratio\":%.3f,\"held_ratio\":%.3f}\n",
		e2e.median, held.median);
}

struct count {
	struct rcx_win *w;
	const struct form *f;
	bool origin;
};

/*
 * --count (the put form): put(data) -> order(WRITE) -> put(flag) as the
 * start, the final flush (which hands back both completions) as the
 * done part; the target does nothing.
 */
static void count_body(void *arg, long i)
{
	struct count *c = arg;
	const struct form *f = c->f;

	if (!c->origin)
		return;
	pt_count_on(PT_SEND_START);
	PT_CHECK(rcx_put(c->w, f->data, f->size, 1, 0));
	PT_CHECK(rcx_win_order(c->w, RCX_ORDER_WRITE));
	PT_CHECK(rcx_put(c->w, f->flag, 8, 1, f->size));
	pt_count_off();
	pt_count_settle();
	pt_count_on(PT_SEND_DONE);
	PT_CHECK(rcx_win_flush(c->w, 1));
	pt_count_off();
}

static void rounds(const struct pt_opts *o, struct rcx_win *w,
		   const struct form *f, double **s)
{
	double fo, ho, eo, ff, hf, ef;
	long i, k = 0;

	for (i = 0; i < o->warmup + o->iters; i++) {
		/* alternate which form goes first in a round */
		if (i & 1) {
			round_us(w, f, true, &fo, &ho, &eo);
			round_us(w, f, false, &ff, &hf, &ef);
		} else {
			round_us(w, f, false, &ff, &hf, &ef);
			round_us(w, f, true, &fo, &ho, &eo);
		}
		if (i < o->warmup)
			continue;
		s[FIRST_CALL][k] = fo;
		s[E2E_ORDER][k] = eo;
		s[E2E_FLUSH][k] = ef;
		s[HELD_ORDER][k] = ho;
		s[HELD_FLUSH][k] = hf;
		s[E2E_RATIO][k] = ef / eo;
		s[HELD_RATIO][k++] = hf / ho;
	}
}

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	bool war = o->extra && !strcmp(o->extra, "war");
	struct pt_opts ro = *o;
	double *s[NSERIES];
	struct pt_stats st;
	struct rcx_win *w;
	struct form f;
	uint8_t *base;
	int j;

	if (war && size < 8)
		size = 8;
	ro.size = size;
	for (j = 0; j < NSERIES; j++)
		s[j] = pt_calloc(o->iters, sizeof(double));
	/* the origin's buffers live in its window: registered once */
	PT_CHECK(rcx_win_allocate(g, size + 64, 1, NULL, (void **)&base, &w));
	f.war = war;
	f.data = base;
	f.size = size;
	f.flag = (uint64_t *)(base + size);
	if (o->count) {
		struct count c = { .w = w,
				   .f = &f,
				   .origin = rcx_group_rank(g) == 0 };

		if (war)
			pt_die(__FILE__, __LINE__, "--count with --mode war",
			       -EINVAL);
		if (c.origin)
			PT_CHECK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 1));
		pt_count_run(o, g,
			     PT_PART(PT_SEND_START) | PT_PART(PT_SEND_DONE),
			     count_body, &c);
		if (c.origin)
			PT_CHECK(rcx_win_unlock(w, 1));
	} else if (rcx_group_rank(g) == 0) {
		PT_CHECK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 1));
		rounds(o, w, &f, s);
		PT_CHECK(rcx_win_unlock(w, 1));
		if (o->json) {
			report_json(o, size, s);
		} else {
			report_text(&ro, "end to end (complete at the target)",
				    s[E2E_ORDER], s[E2E_FLUSH], s[E2E_RATIO]);
			report_text(&ro, "origin held (until the calls return)",
				    s[HELD_ORDER], s[HELD_FLUSH],
				    s[HELD_RATIO]);
			pt_stats(s[FIRST_CALL], o->iters, &st);
			fprintf(pt_out(),
				" the first call (%s) alone, median: %.2f "
				"usec\n",
				war ? "rcx_get" : "rcx_put", st.median);
		}
	}
	PT_CHECK(rcx_group_barrier(g));
	PT_CHECK(rcx_win_free(&w));
	for (j = 0; j < NSERIES; j++)
		free(s[j]);
}

static const struct pt_tool tool = {
	.title = "Order Against Flush Test",
	.what = "What rcx_win_order saves: put -> order -> put(flag) against "
		"put ->\nflush -> put(flag), interleaved round by round "
		"(ratios: flush/order).",
	.proto = "RDMA write/read (rcx_put, rcx_get), rcx_win_order",
	.modes = "flag|war",
	.help = "flag (default): put -> order(WRITE) -> put(flag)\n"
		"                              war: get -> order(ALL) -> "
		"put\n",
	.flags = PT_COUNT,
	.min_size = 1,
	.run = run,
};

int main(int argc, char **argv)
{
	return pt_main(argc, argv, &tool);
}
