/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Latency of bound collectives (include/rcx/bcoll.h) under rcx-run on
 * any number of ranks: each iteration starts the bound collective and
 * waits for it; rank 0 reports the time from its start to its
 * completion. --mode allreduce (default: int64 SUM in place, size bytes),
 * bcast (from rank 0), barrier (size ignored), and group_barrier: rcx's
 * own unbound rcx_group_barrier, for comparison. The ranks meet in an
 * unbound barrier before each size and check the result of the last
 * iteration. Rank 0 then prints, on a line of its own starting with #,
 * each rank's context switches per iteration over the measured ones
 * (getrusage: voluntary, a wait that slept; involuntary, a yield that
 * gave the cpu away or a preemption): on a node with more ranks than
 * cpus the latency is mostly the scheduler's.
 *
 *   rcx-run -n 4 rcx_coll_lat -a --max-size 1048576 --mode allreduce
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdlib.h>
#include <string.h>
#include "common/pt.h"

enum mode { M_ALLREDUCE, M_BCAST, M_BARRIER, M_GROUP_BARRIER };

static enum mode mode_of(const struct pt_opts *o)
{
	static const char *const names[] = { "allreduce", "bcast", "barrier",
					     "group_barrier" };
	size_t i;

	if (!o->extra)
		return M_ALLREDUCE;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(o->extra, names[i]))
			return (enum mode)i;
	pt_die(__FILE__, __LINE__, "--mode", -EINVAL);
}

static struct rcx_req *bind(enum mode m, struct rcx_group *g, int64_t *buf,
			    size_t count)
{
	struct rcx_req *init = NULL, *c = NULL;

	if (m == M_GROUP_BARRIER)
		return NULL;
	if (m == M_ALLREDUCE)
		PT_CHECK(rcx_allreduce_init(RCX_IN_PLACE, buf, count, RCX_INT64,
					    RCX_SUM, g, NULL, &init));
	else if (m == M_BCAST)
		PT_CHECK(rcx_bcast_init(buf, count, RCX_INT64, 0, g, NULL,
					&init));
	else
		PT_CHECK(rcx_barrier_init(g, NULL, &init));
	PT_CHECK(rcx_bind_coll(init, NULL, &c));
	PT_CHECK(rcx_req_free(&init));
	return c;
}

/* the data of iteration i at rank r, and what the collective makes */
static void fill(enum mode m, int64_t *buf, size_t count, int r, long i)
{
	size_t j;

	for (j = 0; j < count; j++)
		buf[j] = m == M_BCAST && r ? -1
					   : (int64_t)(r + 1) * i + (int64_t)j;
}

static void check(enum mode m, const int64_t *buf, size_t count, int n, long i)
{
	int64_t want;
	size_t j;

	if (m != M_ALLREDUCE && m != M_BCAST)
		return;
	for (j = 0; j < count; j++) {
		want = m == M_BCAST ? i + (int64_t)j
				    : (int64_t)n * (n + 1) / 2 * i +
					      (int64_t)n * (int64_t)j;
		if (buf[j] != want)
			pt_die(__FILE__, __LINE__, "wrong result", -EPROTO);
	}
}

/* this process's context switches so far: voluntary, involuntary */
static void switches(double *v)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	v[0] = (double)ru.ru_nvcsw;
	v[1] = (double)ru.ru_nivcsw;
}

/* each rank's context switches per iteration since sw0, at rank 0 */
static void report_switches(struct rcx_group *g, const double *sw0, long iters)
{
	int r, n = rcx_group_size(g);
	double sw[2], *all = pt_calloc((size_t)n * 2, sizeof(double));

	switches(sw);
	sw[0] = (sw[0] - sw0[0]) / (double)iters;
	sw[1] = (sw[1] - sw0[1]) / (double)iters;
	PT_CHECK(rcx_group_allgather(g, sw, sizeof(sw), all));
	if (rcx_group_rank(g) == 0) {
		printf("# context switches an iteration, rank: voluntary "
		       "involuntary:");
		for (r = 0; r < n; r++)
			printf(" %d: %.2f %.2f", r, all[2 * r], all[2 * r + 1]);
		printf("\n");
	}
	free(all);
}

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	enum mode m = mode_of(o);
	size_t count = size / sizeof(int64_t);
	int r = rcx_group_rank(g), n = rcx_group_size(g);
	int64_t *buf = pt_calloc(count, sizeof(int64_t));
	double *t = pt_calloc((size_t)o->iters, sizeof(double)), t0;
	struct rcx_req *c = bind(m, g, buf, count);
	long i, total = o->warmup + o->iters;
	struct pt_stats st;
	double sw0[2] = { 0, 0 };

	PT_CHECK(rcx_group_barrier(g));
	for (i = 0; i < total; i++) {
		if (i == o->warmup)
			switches(sw0);
		fill(m, buf, count, r, i);
		t0 = pt_now_us();
		if (c) {
			PT_CHECK(rcx_start(c));
			PT_CHECK(rcx_wait(&c, RCX_STATUS_IGNORE));
		} else {
			PT_CHECK(rcx_group_barrier(g));
		}
		if (i >= o->warmup)
			t[i - o->warmup] = pt_now_us() - t0;
	}
	check(m, buf, count, n, total - 1);
	if (r == 0) {
		pt_stats(t, o->iters, &st);
		pt_report_lat(o, size, o->iters, &st);
	}
	report_switches(g, sw0, o->iters);
	if (c)
		PT_CHECK(rcx_bind_free(&c, 1));
	PT_CHECK(rcx_group_barrier(g));
	free(buf);
	free(t);
}

static const struct pt_tool tool = {
	.title = "Bound Collective Latency Test",
	.what = "Latency of a bound allreduce, bcast or barrier on all the "
		"ranks of\nrcx-run, start to completion at rank 0.",
	.flags = PT_GROUP,
	.proto = "bound collective: write_imm channels per step",
	.modes = "allreduce|bcast|barrier|group_barrier",
	.help = "allreduce (default): int64 SUM in place\n"
		"                              bcast: from rank 0\n"
		"                              barrier: bound barrier\n"
		"                              group_barrier: "
		"rcx_group_barrier\n",
	.min_size = 8,
	.run = run,
};

int main(int argc, char **argv)
{
	return pt_main(argc, argv, &tool);
}
