/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif
#include "pt.h"

static bool is_server;
static struct rcx_ctx *the_ctx;

void pt_die(const char *file, int line, const char *what, int err)
{
	fprintf(stderr, "%s:%d: %s: %s\n", file, line, what, rcx_strerror(err));
	exit(1);
}

static double mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

#if defined(__x86_64__) || defined(__i386__)
/*
 * The time stamp counter, scaled by a calibration against CLOCK_MONOTONIC:
 * where the kernel's clocksource is not the TSC (HPET under emulation),
 * every clock_gettime is a system call and a device read of over a
 * microsecond, a bias of several percent on a latency sample. perftest
 * stamps with the TSC as well, so both sides pay the same for the clock.
 */
static double tsc_per_us;

/* a CLOCK_MONOTONIC reading and the TSC at the same moment: the tightest
 * of a few tries (a preemption between the two reads would skew it) */
static void stamp(double *t, double *c)
{
	unsigned long long a, b, best = ~0ULL;
	double tt;
	int k;

	for (k = 0; k < 16; k++) {
		a = __rdtsc();
		tt = mono_us();
		b = __rdtsc();
		if (b - a < best) {
			best = b - a;
			*t = tt;
			*c = (double)a + (double)(b - a) / 2;
		}
	}
}

static void clock_init(void)
{
	double t0, c0, t1, c1;

	stamp(&t0, &c0);
	do
		stamp(&t1, &c1);
	while (t1 - t0 < 20000);
	tsc_per_us = (c1 - c0) / (t1 - t0);
}

double pt_now_us(void)
{
	return tsc_per_us > 0 ? (double)__rdtsc() / tsc_per_us : mono_us();
}
#else
static void clock_init(void)
{
}

double pt_now_us(void)
{
	return mono_us();
}
#endif

static void usage(const struct pt_opts *o, const char *help)
{
	fprintf(stderr,
		"usage: %s [options] [server-address]\n"
		"  -s SIZE      message size in bytes (default 8)\n"
		"  -n ITERS     iterations (default 1000)\n"
		"  -a           all sizes 2 .. 2^23 (see -m)\n"
		"  -m MAX       largest size with -a (default 8 MiB)\n"
		"  -I SIZE      largest inline send (RCX_INLINE)\n"
		"  -d DEV       RDMA device (RCX_DEVICE)\n"
		"  -p PORT      server port (RCX_PORT)\n"
		"  -w ITERS     warm-up iterations (default 100)\n"
		"  -b N         channels in a bundle (channel tools)\n"
		"  --proto P    channel protocol: send | write_imm | auto\n"
		"  --separate   start bundle channels one by one\n"
		"  --slots N    circular slots of a channel (channel tools)\n"
		"  --mode M     tool-specific mode\n"
		"  --sizes LIST comma-separated sizes, one after the other\n"
		"  --loopback   run both ends from this one command\n"
		"  --json       one JSON object per size\n"
		"With no address: the server; it prints the address to give\n"
		"the client. Under rcx-run -n 2: rank 0 is the server.\n%s",
		o->tool, help ? help : "");
	exit(2);
}

/* --sizes: the number of sizes, or -1 when the list is malformed */
static int size_list(const char *p, size_t *sizes, int max)
{
	char *end;
	int n = 0;

	while (*p) {
		if (n == max)
			return -1;
		sizes[n++] = strtoul(p, &end, 0);
		if (end == p || (*end && *end != ','))
			return -1;
		p = *end ? end + 1 : end;
	}
	return n ? n : -1;
}

void pt_parse(int argc, char **argv, struct pt_opts *o, const char *help)
{
	static const struct option lo[] = {
		{ "loopback", no_argument, NULL, 'L' },
		{ "json", no_argument, NULL, 'J' },
		{ "proto", required_argument, NULL, 'P' },
		{ "separate", no_argument, NULL, 'S' },
		{ "slots", required_argument, NULL, 'T' },
		{ "mode", required_argument, NULL, 'M' },
		{ "sizes", required_argument, NULL, 'Z' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	size_t sizes[PT_MAX_SIZES];
	char buf[32];
	int c;

	memset(o, 0, sizeof(*o));
	o->tool = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	o->size = 8;
	o->iters = 1000;
	o->max_size = 1 << 23;
	o->warmup = 100;
	o->inline_size = -1;
	o->bundle = 1;
	o->proto = "auto";
	while ((c = getopt_long(argc, argv, "s:n:am:I:d:p:w:b:h", lo, NULL)) !=
	       -1) {
		switch (c) {
		case 's':
			o->size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			o->iters = strtol(optarg, NULL, 0);
			break;
		case 'a':
			o->all_sizes = true;
			break;
		case 'm':
			o->max_size = strtoul(optarg, NULL, 0);
			break;
		case 'I':
			o->inline_size = atoi(optarg);
			break;
		case 'd':
			o->dev = optarg;
			break;
		case 'p':
			o->port = atoi(optarg);
			break;
		case 'w':
			o->warmup = strtol(optarg, NULL, 0);
			break;
		case 'b':
			o->bundle = atoi(optarg);
			break;
		case 'P':
			o->proto = optarg;
			break;
		case 'S':
			o->separate = true;
			break;
		case 'T':
			o->slots = atoi(optarg);
			break;
		case 'M':
			o->extra = optarg;
			break;
		case 'Z':
			o->sizes = optarg;
			break;
		case 'L':
			o->loopback = true;
			break;
		case 'J':
			o->json = true;
			break;
		default:
			usage(o, help);
		}
	}
	if (optind < argc)
		o->server = argv[optind];
	if (o->iters < 1 || o->warmup < 0 || o->bundle < 1 || o->bundle > 255 ||
	    o->slots < 0 ||
	    (o->sizes && size_list(o->sizes, sizes, PT_MAX_SIZES) < 0))
		usage(o, help);
	/* options that map onto the configuration table */
	if (o->dev)
		setenv("RCX_DEVICE", o->dev, 1);
	if (o->inline_size >= 0) {
		snprintf(buf, sizeof(buf), "%d", o->inline_size);
		setenv("RCX_INLINE", buf, 1);
	}
	clock_init();
	/* latency tools poll: never sleep in the kernel between messages */
	setenv("RCX_SPIN_US", "10000000", 0);
}

/* --loopback: the server is a child started before any device is opened */
static void loopback(struct pt_opts *o, char *addr, size_t len)
{
	int p[2];
	pid_t pid;
	FILE *f;

	if (pipe(p))
		pt_die(__FILE__, __LINE__, "pipe", -errno);
	pid = fork();
	if (pid < 0)
		pt_die(__FILE__, __LINE__, "fork", -errno);
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 3);
		is_server = true;
		o->server = NULL;
		o->loopback = false;
		setenv("RCX_PT_ADDR_FD", "3", 1);
		return;
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	if (!f || !fgets(addr, (int)len, f))
		pt_die(__FILE__, __LINE__, "server address", -EPIPE);
	addr[strcspn(addr, "\n")] = 0;
	fclose(f);
	o->server = addr;
}

void pt_setup(struct pt_opts *o, struct rcx_ctx **ctx, struct rcx_group **g)
{
	static char addr[128];
	char buf[32];
	const char *fd;

	if (getenv("RCX_RUN_SOCK") || getenv("RCX_ROOT")) {
		PT_CHECK(rcx_ctx_create(NULL, ctx));
		PT_CHECK(rcx_group_world(*ctx, g));
		if (rcx_group_size(*g) != 2)
			pt_die(__FILE__, __LINE__, "needs 2 ranks", -EINVAL);
		is_server = rcx_group_rank(*g) == 0;
		return;
	}
	if (o->loopback)
		loopback(o, addr, sizeof(addr));
	if (o->port && !o->server) {
		snprintf(buf, sizeof(buf), "%d", o->port);
		setenv("RCX_PORT", buf, 1);
	}
	PT_CHECK(rcx_ctx_create(NULL, ctx));
	if (o->server) {
		if (o->port && !strchr(o->server, ':')) {
			snprintf(addr, sizeof(addr), "%s:%d", o->server,
				 o->port);
			o->server = addr;
		}
		PT_CHECK(rcx_group_connect(*ctx, o->server, 30000, g));
		return;
	}
	is_server = true;
	PT_CHECK(rcx_ctx_address(*ctx, addr, sizeof(addr)));
	fd = getenv("RCX_PT_ADDR_FD");
	if (fd) {
		dprintf(atoi(fd), "%s\n", addr);
		close(atoi(fd));
	} else {
		printf("# server listening on %s\n", addr);
		fflush(stdout);
	}
	PT_CHECK(rcx_group_accept(*ctx, 60000, g));
}

void pt_teardown(struct rcx_ctx *ctx, struct rcx_group *g)
{
	int st;

	rcx_group_barrier(g);
	rcx_group_free(&g);
	rcx_ctx_destroy(ctx);
	if (!is_server && getenv("RCX_PT_ADDR_FD") == NULL)
		while (wait(&st) > 0)
			;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void pt_stats(double *s, long n, struct pt_stats *st)
{
	double sum = 0, sq = 0;
	long i;

	qsort(s, n, sizeof(*s), cmp);
	for (i = 0; i < n; i++)
		sum += s[i];
	st->avg = sum / n;
	for (i = 0; i < n; i++)
		sq += (s[i] - st->avg) * (s[i] - st->avg);
	st->stdev = n > 1 ? sqrt(sq / (n - 1)) : 0;
	st->min = s[0];
	st->max = s[n - 1];
	st->median = s[n / 2];
	st->p99 = s[(long)(n * 0.99) < n ? (long)(n * 0.99) : n - 1];
	st->p999 = s[(long)(n * 0.999) < n ? (long)(n * 0.999) : n - 1];
}

void pt_report_lat(const struct pt_opts *o, size_t size, long iters,
		   const struct pt_stats *st)
{
	static bool header;

	if (!is_server)
		return;
	if (o->json) {
		printf("{\"tool\":\"%s\",\"bytes\":%zu,\"iterations\":%ld,"
		       "\"t_min\":%.2f,\"t_max\":%.2f,\"t_median\":%.2f,"
		       "\"t_avg\":%.2f,\"t_stdev\":%.2f,\"p99\":%.2f,"
		       "\"p99_9\":%.2f}\n",
		       o->tool, size, iters, st->min, st->max, st->median,
		       st->avg, st->stdev, st->p99, st->p999);
	} else {
		if (!header) {
			printf(" #bytes #iterations    t_min[usec]    "
			       "t_max[usec]  t_typical[usec]    t_avg[usec]    "
			       "t_stdev[usec]   99%% percentile[usec]   "
			       "99.9%% percentile[usec]\n");
			header = true;
		}
		printf(" %-7zu %-10ld %-14.2f %-14.2f %-16.2f %-14.2f "
		       "%-15.2f %-22.2f %.2f\n",
		       size, iters, st->min, st->max, st->median, st->avg,
		       st->stdev, st->p99, st->p999);
	}
	fflush(stdout);
}

void pt_report_bw(const struct pt_opts *o, size_t size, long msgs, double usec)
{
	static bool header;
	double mbs = (double)size * msgs / usec, mpps = msgs / usec;

	if (!is_server)
		return;
	if (o->json) {
		printf("{\"tool\":\"%s\",\"bytes\":%zu,\"messages\":%ld,"
		       "\"bw_MBps\":%.2f,\"msg_rate_Mpps\":%.6f,\"bundle\":%d,"
		       "\"separate\":%s}\n",
		       o->tool, size, msgs, mbs, mpps, o->bundle,
		       o->separate ? "true" : "false");
	} else {
		if (!header) {
			printf(" #bytes     #iterations    BW average[MB/sec]  "
			       " "
			       "MsgRate[Mpps]\n");
			header = true;
		}
		printf(" %-10zu %-14ld %-20.2f %.6f\n", size, msgs, mbs, mpps);
	}
	fflush(stdout);
}

int pt_sizes(const struct pt_opts *o, size_t *sizes, int max)
{
	size_t s;
	int n = 0;

	if (o->sizes)
		return size_list(o->sizes, sizes, max);
	if (!o->all_sizes) {
		sizes[0] = o->size;
		return 1;
	}
	for (s = 2; s <= o->max_size && n < max; s *= 2)
		sizes[n++] = s;
	return n;
}

struct rcx_ctx *pt_ctx(void)
{
	return the_ctx;
}

bool pt_is_server(void)
{
	return is_server;
}

int pt_main(int argc, char **argv, const char *help, pt_run_fn *run)
{
	struct pt_opts o;
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	size_t sizes[PT_MAX_SIZES];
	int i, n;

	pt_parse(argc, argv, &o, help);
	pt_setup(&o, &ctx, &g);
	the_ctx = ctx;
	n = pt_sizes(&o, sizes, PT_MAX_SIZES);
	for (i = 0; i < n; i++)
		run(&o, g, sizes[i]);
	pt_teardown(ctx, g);
	return 0;
}
