/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_PT_H
#define RCX_PT_H

/*
 * The shared part of rcx's perftest-style tools: options, set-up of a
 * two-process group (server/client, --loopback, or under rcx-run), a
 * monotonic clock, statistics and perftest-compatible output (+ --json).
 */
#include <stdbool.h>
#include <stddef.h>
#include <rcx/rcx.h>

struct pt_opts {
	const char *tool;
	size_t size;	    /* -s */
	long iters;	    /* -n */
	bool all_sizes;	    /* -a: 2 .. 2^23 */
	size_t max_size;    /* largest size with -a */
	int inline_size;    /* -I */
	const char *dev;    /* -d */
	int port;	    /* -p */
	const char *server; /* client: the server's ip[:port] */
	bool loopback;	    /* --loopback: both ends from one command */
	bool json;	    /* --json: one JSON object per size */
	long warmup;	    /* iterations not measured */
	const char *proto;  /* --proto (channels) */
	int bundle;	    /* -b (channels: bundle size) */
	bool separate;	    /* --separate: start bundle members one by one */
	int slots; /* --slots (channels: circular slots; 0: the tool's) */
	const char *extra; /* --mode (tool specific) */
	const char *sizes; /* --sizes: comma-separated list of sizes */
};

/* Parse argv; prints usage and exits on bad options. */
void pt_parse(int argc, char **argv, struct pt_opts *o, const char *help);

/*
 * The two ends: rank 0 is the server. Under rcx-run the world group;
 * otherwise server (no address) and client (address), or both forked by
 * --loopback. Exits with a message on failure.
 */
void pt_setup(struct pt_opts *o, struct rcx_ctx **ctx, struct rcx_group **g);
void pt_teardown(struct rcx_ctx *ctx, struct rcx_group *g);

/* the context pt_main set up (for calls that take one: progress,
 * continuation requests) */
struct rcx_ctx *pt_ctx(void);

/* a monotonic clock in microseconds, cheap to read (see pt.c) */
double pt_now_us(void);
/* this process is the server (rank 0): it reports */
bool pt_is_server(void);

struct pt_stats {
	double min, max, median, avg, stdev, p99, p999;
};

/* samples are sorted in place */
void pt_stats(double *samples, long n, struct pt_stats *st);
/* latency line (perftest columns), or JSON */
void pt_report_lat(const struct pt_opts *o, size_t size, long iters,
		   const struct pt_stats *st);
/* bandwidth line: bytes moved in usec, messages */
void pt_report_bw(const struct pt_opts *o, size_t size, long msgs, double usec);
/* the sizes to run: --sizes the list, -a 2..max, else just -s */
#define PT_MAX_SIZES 32
int pt_sizes(const struct pt_opts *o, size_t *sizes, int max);

/* parse, set up, run(size) for each size, tear down */
typedef void pt_run_fn(const struct pt_opts *o, struct rcx_group *g,
		       size_t size);
int pt_main(int argc, char **argv, const char *help, pt_run_fn *run);

#define PT_CHECK(call)                                              \
	do {                                                        \
		int pt_ret_ = (call);                               \
		if (pt_ret_)                                        \
			pt_die(__FILE__, __LINE__, #call, pt_ret_); \
	} while (0)
void pt_die(const char *file, int line, const char *what, int err)
	__attribute__((noreturn));

#endif
