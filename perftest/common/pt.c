/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
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
#include "pt_count.h"

static bool is_server, both_print;
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

void pt_clock_init(void)
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
void pt_clock_init(void)
{
}

double pt_now_us(void)
{
	return mono_us();
}
#endif

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

/* under callgrind (--count) in an emulated guest set-up takes minutes */
static int setup_ms(const struct pt_opts *o, int ms)
{
	return o->count ? 20 * ms : ms;
}

void pt_setup(struct pt_opts *o, struct rcx_ctx **ctx, struct rcx_group **g)
{
	static char addr[128];
	char buf[32];
	const char *fd;

	if (getenv("RCX_RUN_SOCK") || getenv("RCX_ROOT")) {
		if (o->server || o->loopback)
			pt_die(__FILE__, __LINE__,
			       "under rcx-run: no address, no --loopback",
			       -EINVAL);
		PT_CHECK(rcx_ctx_create(NULL, ctx));
		PT_CHECK(rcx_group_world(*ctx, g));
		if (rcx_group_size(*g) < 2 ||
		    (rcx_group_size(*g) != 2 && !(o->t->flags & PT_GROUP)))
			pt_die(__FILE__, __LINE__, "needs 2 ranks", -EINVAL);
		is_server = rcx_group_rank(*g) == 0;
		pt_header(o, *ctx, *g);
		return;
	}
	both_print = !o->loopback;
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
		PT_CHECK(rcx_group_connect(*ctx, o->server, setup_ms(o, 30000),
					   g));
		pt_header(o, *ctx, *g);
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
	PT_CHECK(rcx_group_accept(*ctx, setup_ms(o, 60000), g));
	pt_header(o, *ctx, *g);
}

void pt_teardown(struct rcx_ctx *ctx, struct rcx_group *g)
{
	int st;

	rcx_group_barrier(g);
	rcx_group_free(&g);
	rcx_ctx_destroy(ctx);
	if (!is_server && getenv("RCX_PT_ADDR_FD") == NULL)
		while (wait(&st) > 0)
			if (!WIFEXITED(st) || WEXITSTATUS(st))
				pt_fail(); /* the server's status */
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

int pt_sizes(const struct pt_opts *o, size_t *sizes, int max)
{
	const char *p = o->sizes;
	size_t s;
	int n = 0;

	if (p) {
		/* checked by pt_parse */
		while (*p && n < max) {
			sizes[n++] = strtoul(p, (char **)&p, 0);
			p += *p == ',';
		}
		return n;
	}
	if (!o->all_sizes) {
		sizes[0] = o->size;
		return 1;
	}
	for (s = 2; s <= o->max_size && n < max; s *= 2)
		sizes[n++] = s;
	return n;
}

void *pt_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p) {
		fprintf(stderr, "out of memory: %zu x %zu bytes\n", n, size);
		exit(1);
	}
	return p;
}

struct rcx_ctx *pt_ctx(void)
{
	return the_ctx;
}

bool pt_is_server(void)
{
	return is_server;
}

bool pt_both_print(void)
{
	return both_print;
}

bool pt_prints(void)
{
	return both_print || is_server;
}

int pt_main(int argc, char **argv, const struct pt_tool *t)
{
	struct pt_opts o;
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	size_t sizes[PT_MAX_SIZES];
	int i, n;

	pt_parse(argc, argv, t, &o);
	if (o.count)
		pt_count_init(&o); /* shared by the ends --loopback forks */
	pt_setup(&o, &ctx, &g);
	the_ctx = ctx;
	n = pt_sizes(&o, sizes, PT_MAX_SIZES);
	for (i = 0; i < n; i++) {
		t->run(&o, g, sizes[i] < t->min_size ? t->min_size : sizes[i]);
		pt_publish(&o, g);
	}
	pt_teardown(ctx, g);
	return pt_failed() ? 1 : 0;
}
