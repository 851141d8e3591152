/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Multi-process tests: launch a job through rcx-run; checks and the main
 * of a peer role in the ranks.
 */
#include <errno.h>
#include <sched.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "tu.h"
#include "tu_mp.h"

/* The launcher gets this long past its own --timeout before we kill it. */
#define TU_MP_GRACE_S 60
/* Failures printed in full; later ones are only counted. */
#define TP_MAX_REPORTS 50

extern char **environ;

int tu_mp_run(int nprocs, const char *peer, const char *scenario, int timeout_s)
{
#ifdef RCX_RUN_PATH
	char self[PATH_MAX], n[16], t[16];
	char *argv[] = {
		RCX_RUN_PATH, "-n", n,	      "--timeout",  t,
		"--",	      self, "--peer", (char *)peer, (char *)scenario,
		NULL
	};
	ssize_t len;
	pid_t pid;
	int ret;

	/* the launcher resolves /proc/self/exe to itself: pass our path */
	len = snprintf(self, sizeof(self), "%s", tu_self_exe());
	if (len <= 0 || (size_t)len >= sizeof(self))
		return -ENAMETOOLONG;
	snprintf(n, sizeof(n), "%d", nprocs);
	snprintf(t, sizeof(t), "%d", timeout_s);
	printf("\n    rcx-run -n %d --timeout %d ... --peer %s %s\n", nprocs,
	       timeout_s, peer, scenario);
	fflush(NULL);
	ret = posix_spawn(&pid, RCX_RUN_PATH, NULL, NULL, argv, environ);
	if (ret) {
		fprintf(stderr, "cannot start %s: %s\n", RCX_RUN_PATH,
			strerror(ret));
		return -ret;
	}
	ret = tu_wait_peer(pid, (timeout_s + TU_MP_GRACE_S) * 1000);
	if (ret)
		fprintf(stderr, "rcx-run %s %s: exit %d\n", peer, scenario,
			ret);
	return ret;
#else
	(void)nprocs;
	(void)timeout_s;
	fprintf(stderr, "built without RCX_RUN_PATH: cannot run %s %s\n", peer,
		scenario);
	return -ENOENT;
#endif
}

static int tp_rank = -1;
static atomic_int tp_nfail; /* threads of a peer check too */

void tp_set_rank(int rank)
{
	tp_rank = rank;
}

static bool tp_report(void)
{
	int n = atomic_fetch_add(&tp_nfail, 1) + 1;

	if (n == TP_MAX_REPORTS + 1)
		fprintf(stderr, "rank %d: more failures, not shown\n", tp_rank);
	return n <= TP_MAX_REPORTS;
}

bool tp_check(bool ok, const char *file, int line, const char *expr)
{
	if (!ok && tp_report())
		fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed\n", tp_rank,
			file, line, expr);
	return ok;
}

bool tp_check_eq(long long a, long long b, const char *file, int line,
		 const char *ea, const char *eb)
{
	if (a != b && tp_report())
		fprintf(stderr,
			"rank %d: %s:%d: CHECK_EQ(%s, %s) failed: %lld != "
			"%lld\n",
			tp_rank, file, line, ea, eb, a, b);
	return a == b;
}

bool tp_check_ok(int ret, const char *file, int line, const char *expr)
{
	if (ret && tp_report())
		fprintf(stderr, "rank %d: %s:%d: %s returned %d (%s)\n",
			tp_rank, file, line, expr, ret, rcx_strerror(ret));
	return !ret;
}

void tp_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (!tp_report())
		return;
	fprintf(stderr, "rank %d: %s:%d: ", tp_rank, file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int tp_failures(void)
{
	return atomic_load(&tp_nfail);
}

int tp_exit(void)
{
	int n = tp_failures();

	if (n)
		fprintf(stderr, "rank %d: %d check(s) failed\n", tp_rank, n);
	fflush(NULL);
	return n ? 1 : 0;
}

bool tp_world(const struct rcx_ctx_attr *a, struct rcx_ctx **ctx,
	      struct rcx_group **g, int *rank, int *size)
{
	if (!TP_CHECK_OK(rcx_ctx_create(a, ctx)))
		return false;
	if (!TP_CHECK_OK(rcx_group_world(*ctx, g))) {
		TP_CHECK_OK(rcx_ctx_destroy(*ctx));
		return false;
	}
	*rank = rcx_group_rank(*g);
	*size = rcx_group_size(*g);
	tp_set_rank(*rank);
	return true;
}

int tp_peer_main(const char *role, const struct tp_scenario *sc, size_t n,
		 int argc, char **argv)
{
	struct rcx_ctx_attr a = { 0 };
	struct tp_job j = { NULL, NULL, -1, 0 };
	size_t i;

	for (i = 0; argc >= 1 && i < n; i++)
		if (!strcmp(sc[i].name, argv[0]))
			break;
	if (argc < 1 || i == n) {
		fprintf(stderr, "%s peer: %s scenario %s\n", role,
			argc < 1 ? "no" : "unknown", argc < 1 ? "" : argv[0]);
		return 2;
	}
	if (sc[i].setup)
		sc[i].setup();
	a.provider = sc[i].provider;
	a.thread_level = sc[i].thread_level;
	if (!tp_world(&a, &j.ctx, &j.g, &j.rank, &j.size))
		return tp_exit();
	if (TP_CHECK(j.rank >= 0 && j.size >= 2) &&
	    (!sc[i].size || TP_CHECK_EQ(j.size, sc[i].size)))
		sc[i].run(&j);
	/* a scenario may free the world itself (j.g NULL) */
	if (j.g) {
		TP_CHECK_OK(rcx_group_barrier(j.g));
		TP_CHECK_OK(rcx_group_free(&j.g));
	}
	TP_CHECK_OK(rcx_ctx_destroy(j.ctx));
	return tp_exit();
}

int tp_pin_cpu(int idx)
{
	cpu_set_t set;
	int c, n, k = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	n = CPU_COUNT(&set);
	if (n <= 0)
		return -ENODEV;
	idx %= n;
	for (c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &set) || k++ != idx)
			continue;
		CPU_ZERO(&set);
		CPU_SET(c, &set);
		return sched_setaffinity(0, sizeof(set), &set) ? -errno : c;
	}
	return -ENODEV;
}
