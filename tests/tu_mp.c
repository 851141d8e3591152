/* SPDX-License-Identifier: BSD-2-Clause */
/* Multi-process tests: launch a job through rcx-run; checks in the ranks. */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
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
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len < 0)
		return -errno;
	self[len] = 0;
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
static int tp_nfail;

void tp_set_rank(int rank)
{
	tp_rank = rank;
}

static bool tp_report(void)
{
	if (++tp_nfail == TP_MAX_REPORTS + 1)
		fprintf(stderr, "rank %d: more failures, not shown\n", tp_rank);
	return tp_nfail <= TP_MAX_REPORTS;
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
	return tp_nfail;
}

int tp_exit(void)
{
	if (tp_nfail)
		fprintf(stderr, "rank %d: %d check(s) failed\n", tp_rank,
			tp_nfail);
	fflush(NULL);
	return tp_nfail ? 1 : 0;
}
