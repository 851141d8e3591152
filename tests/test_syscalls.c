/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * System calls in the steady state of the shared-memory paths (not a
 * timing test): two ranks run N and then 10 N messages of each path under
 * strace -f; each rank brackets a path with marker calls (a write to fd
 * -1 that strace shows with its text), and the calls between the markers
 * are counted. A path passes when the 9 N extra messages added fewer than
 * 9 N / SC_PER system calls: what is left (the liveness check once a
 * tick, a wait that went to sleep on a loaded machine) does not grow with
 * the number of messages.
 *
 * Each rank runs on a CPU of its own (the first two it may use).
 *
 * Paths: eager isend/irecv, bound channels of both protocols (ping-pong),
 * put, get, accumulate, fetch_and_op and compare_and_swap with a flush on
 * a window of rcx_win_allocate (rank 0 the origin, rank 1 passive).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <rcx/rcx.h>
#include "tu.h"
#include "tu_mp.h"
#include "tu_proc.h"

#define SC_N	     1000 /* messages of the short run; the long one: 10 N */
#define SC_PER	     5	  /* at most 1 system call per SC_PER extra messages */
#define SC_TAG	     77
#define SC_MARK	     "rcx-syscount:"
#define SC_MAX_PIDS  64
#define SC_TIMEOUT_S 600

static const char *const paths[] = {
	"p2p", "chan_send",  "chan_write_imm", "put",
	"get", "accumulate", "fetch_and_op",   "compare_and_swap",
};
#define SC_NPATHS (int)(sizeof(paths) / sizeof(paths[0]))

static void mark(const char *what, const char *path)
{
	char buf[96];
	int n = snprintf(buf, sizeof(buf), SC_MARK "%s:%s", what, path);

	/* fails with EBADF: strace shows the text, nothing else happens */
	(void)!syscall(SYS_write, -1, buf, (size_t)n);
}

static long sc_iters(void)
{
	const char *s = getenv("SYSCOUNT_N");

	return s ? atol(s) : SC_N;
}

static void sc_p2p(struct tp_job *j, long n)
{
	int peer = 1 - j->rank, i;
	uint64_t v = 0;

	for (i = 0; i < n; i++) {
		if (j->rank == 0) {
			TP_CHECK_OK(
				rcx_send(j->g, &v, sizeof(v), peer, SC_TAG));
			TP_CHECK_OK(rcx_recv(j->g, &v, sizeof(v), peer, SC_TAG,
					     NULL));
		} else {
			TP_CHECK_OK(rcx_recv(j->g, &v, sizeof(v), peer, SC_TAG,
					     NULL));
			TP_CHECK_OK(
				rcx_send(j->g, &v, sizeof(v), peer, SC_TAG));
		}
	}
}

/* A channel each way, ping-pong; marks around the loop only. */
static void sc_chan(struct tp_job *j, const char *proto, const char *path,
		    long n)
{
	struct rcx_req *si = NULL, *ri = NULL, *ch[2] = { NULL, NULL }, *eph[2];
	struct rcx_info *info = NULL;
	uint64_t out = 0, in = 0;
	int peer = 1 - j->rank;
	long i;

	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_CHAN_PROTOCOL, proto));
	TP_CHECK_OK(rcx_send_init(j->g, &out, sizeof(out), peer, SC_TAG, &si));
	TP_CHECK_OK(rcx_recv_init(j->g, &in, sizeof(in), peer, SC_TAG, &ri));
	TP_CHECK_OK(rcx_ibind(si, info, &ch[0], &eph[0]));
	TP_CHECK_OK(rcx_ibind(ri, info, &ch[1], &eph[1]));
	TP_CHECK_OK(rcx_waitall(2, eph, RCX_STATUSES_IGNORE));
	rcx_info_free(&info);
	if (tp_failures())
		return;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	mark("begin", path);
	/* the first round trip is a warm-up */
	for (i = 0; i < n + 1; i++) {
		if (i == 1)
			mark("count", path);
		TP_CHECK_OK(rcx_start(ch[1]));
		if (j->rank == 0) {
			out = (uint64_t)i;
			TP_CHECK_OK(rcx_start(ch[0]));
			TP_CHECK_OK(rcx_wait(&ch[0], RCX_STATUS_IGNORE));
			TP_CHECK_OK(rcx_wait(&ch[1], RCX_STATUS_IGNORE));
		} else {
			TP_CHECK_OK(rcx_wait(&ch[1], RCX_STATUS_IGNORE));
			out = in;
			TP_CHECK_OK(rcx_start(ch[0]));
			TP_CHECK_OK(rcx_wait(&ch[0], RCX_STATUS_IGNORE));
		}
		TP_CHECK_EQ(in, i);
		if (tp_failures())
			break;
	}
	mark("end", path);
	TP_CHECK_OK(rcx_bind_free(ch, 2));
	rcx_req_free(&si);
	rcx_req_free(&ri);
}

/* One RMA operation of path k (3..7) to rank 1, then a flush. */
static void sc_rma_op(struct rcx_win *w, int k)
{
	int64_t one = 1, cmp = 0, res = 0;
	uint64_t buf = 5;

	switch (k) {
	case 3:
		TP_CHECK_OK(rcx_put(w, &buf, sizeof(buf), 1, 8));
		break;
	case 4:
		TP_CHECK_OK(rcx_get(w, &buf, sizeof(buf), 1, 8));
		break;
	case 5:
		TP_CHECK_OK(
			rcx_accumulate(w, &one, 1, RCX_INT64, 1, 16, RCX_SUM));
		break;
	case 6:
		TP_CHECK_OK(rcx_fetch_and_op(w, &one, &res, RCX_INT64, 1, 24,
					     RCX_SUM));
		break;
	default:
		TP_CHECK_OK(rcx_compare_and_swap(w, &one, &cmp, &res, RCX_INT64,
						 1, 32));
		break;
	}
	TP_CHECK_OK(rcx_win_flush(w, 1));
}

static void sc_rma(struct tp_job *j, long n)
{
	struct rcx_win *w = NULL;
	int64_t *base = NULL;
	long i;
	int k;

	TP_CHECK_OK(rcx_win_allocate(j->g, 4096, 1, NULL, (void **)&base, &w));
	if (!w)
		return;
	TP_CHECK_OK(rcx_win_lock_all(w));
	for (k = 3; k < SC_NPATHS; k++) {
		TP_CHECK_OK(rcx_group_barrier(j->g));
		mark("begin", paths[k]);
		for (i = 0; j->rank == 0 && i < n + 1; i++) {
			if (i == 1)
				mark("count", paths[k]);
			sc_rma_op(w, k);
			if (tp_failures())
				break;
		}
		if (j->rank == 1)
			mark("count", paths[k]);
		/* the target is passive: it waits here meanwhile */
		TP_CHECK_OK(rcx_group_barrier(j->g));
		mark("end", paths[k]);
	}
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		TP_CHECK_EQ(base[1], 5);
		TP_CHECK_EQ(base[2], n + 1);
		TP_CHECK_EQ(base[3], n + 1);
		TP_CHECK_EQ(base[4], 1);
	}
	TP_CHECK_OK(rcx_win_free(&w));
}

static void sc_all(struct tp_job *j)
{
	long n = sc_iters();

	/*
	 * A CPU each: ranks that share one give it to each other in their
	 * waits (sched_yield, test_p2p_cpu.c), a system call per message
	 * by design. What is counted is the path between running ranks.
	 */
	TP_CHECK(tp_pin_cpu(j->rank) >= 0);
	/* warm-up: connections up, eager buffers touched */
	sc_p2p(j, 10);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	mark("begin", "p2p");
	sc_p2p(j, 1);
	mark("count", "p2p");
	sc_p2p(j, n);
	mark("end", "p2p");
	sc_chan(j, "send", "chan_send", n);
	sc_chan(j, "write_imm", "chan_write_imm", n);
	sc_rma(j, n);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "all", .run = sc_all, .provider = "shm", .size = 2 },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("syscalls", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_syscalls = { "syscalls", peer_main };

struct sc_pid {
	long pid;
	int path; /* counting for this path, or -1 */
};

/* The path a marker line names ("...rcx-syscount:WHAT:PATH\""), or -1. */
static int marker(const char *line, const char *what)
{
	char want[64];
	const char *p;
	size_t n;
	int k;

	snprintf(want, sizeof(want), SC_MARK "%s:", what);
	p = strstr(line, want);
	if (!p)
		return -1;
	p += strlen(want);
	for (k = 0; k < SC_NPATHS; k++) {
		n = strlen(paths[k]);
		if (!strncmp(p, paths[k], n) && p[n] == '"')
			return k;
	}
	return -1;
}

/*
 * Count, per path, the system calls each process made between its
 * "count" and "end" markers in strace -f output ("PID name(...").
 */
static int count_file(const char *file, long counts[SC_NPATHS])
{
	struct sc_pid pids[SC_MAX_PIDS];
	int npids = 0, i, k;
	char line[4096];
	long pid;
	FILE *f = fopen(file, "r");

	if (!f)
		return -errno;
	memset(counts, 0, SC_NPATHS * sizeof(*counts));
	while (fgets(line, sizeof(line), f)) {
		char *rest;

		pid = strtol(line, &rest, 10);
		while (*rest == ' ')
			rest++;
		for (i = 0; i < npids && pids[i].pid != pid; i++)
			;
		if (i == npids) {
			if (npids == SC_MAX_PIDS)
				continue;
			pids[npids].pid = pid;
			pids[npids++].path = -1;
		}
		if ((k = marker(rest, "count")) >= 0) {
			pids[i].path = k;
			continue;
		}
		if (marker(rest, "end") >= 0 || marker(rest, "begin") >= 0) {
			pids[i].path = -1;
			continue;
		}
		/* a call's second half, a signal, an exit: not a new call */
		if (pids[i].path < 0 || !strncmp(rest, "<...", 4) ||
		    !strncmp(rest, "---", 3) || !strncmp(rest, "+++", 3))
			continue;
		counts[pids[i].path]++;
	}
	fclose(f);
	return 0;
}

/* Run the scenario with n messages per path under strace. */
static int traced_run(long n, long counts[SC_NPATHS])
{
	char out[] = "/tmp/rcx-syscount.XXXXXX", nbuf[32], tbuf[16];
	char self[4096];
	char *argv[] = { "/usr/bin/strace",
			 "-f",
			 "-qq",
			 "-s",
			 "64",
			 "-o",
			 out,
			 RCX_RUN_PATH,
			 "-n",
			 "2",
			 "--timeout",
			 tbuf,
			 "--",
			 self,
			 "--peer",
			 "syscalls",
			 "all",
			 NULL };
	char asan[512], *saved;
	const char *old;
	struct tu_job job;
	int fd, ret;

	fd = mkstemp(out);
	if (fd < 0)
		return -errno;
	close(fd);
	snprintf(self, sizeof(self), "%s", tu_self_exe());
	snprintf(tbuf, sizeof(tbuf), "%d", SC_TIMEOUT_S);
	snprintf(nbuf, sizeof(nbuf), "%ld", n);
	setenv("SYSCOUNT_N", nbuf, 1);
	/* LeakSanitizer cannot run under ptrace: the traced job goes
	 * without it (the same suites run untraced elsewhere) */
	old = getenv("ASAN_OPTIONS");
	snprintf(asan, sizeof(asan), "%s%sdetect_leaks=0", old ? old : "",
		 old && *old ? ":" : "");
	saved = old ? strdup(old) : NULL;
	setenv("ASAN_OPTIONS", asan, 1);
	ret = tu_job_start(&job, argv);
	if (saved)
		setenv("ASAN_OPTIONS", saved, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(saved);
	if (!ret)
		ret = tu_job_finish(&job, (SC_TIMEOUT_S + 60) * 1000, 0);
	if (!ret)
		ret = count_file(out, counts);
	unlink(out);
	return ret;
}

static void test_steady_state(void)
{
	long a[SC_NPATHS], b[SC_NPATHS];
	int k;

	if (access("/usr/bin/strace", X_OK)) {
		/* tools/common.sh installs it: missing is a failure */
		fprintf(stderr, "strace is not installed (apt-get install "
				"strace)\n");
		CU_FAIL_FATAL("no /usr/bin/strace");
	}
	if (strcmp(tu_provider(), "shm")) {
		fprintf(stderr,
			"this suite measures RCX_PROVIDER=shm, not %s\n",
			tu_provider());
		CU_FAIL_FATAL("RCX_PROVIDER is not shm");
	}
	/* a wait that sleeps makes system calls: spin for the whole run */
	setenv("RCX_SPIN_US", "10000000", 1);
	CU_ASSERT_EQUAL_FATAL(traced_run(SC_N, a), 0);
	CU_ASSERT_EQUAL_FATAL(traced_run(10 * SC_N, b), 0);
	for (k = 0; k < SC_NPATHS; k++) {
		printf("\n    %-18s %ld messages: %ld system calls, %ld: %ld",
		       paths[k], (long)SC_N, a[k], 10L * SC_N, b[k]);
		if (b[k] - a[k] >= 9L * SC_N / SC_PER)
			fprintf(stderr,
				"\n%s: %ld more system calls for %ld more "
				"messages\n",
				paths[k], b[k] - a[k], 9L * SC_N);
		CU_ASSERT(b[k] - a[k] < 9L * SC_N / SC_PER);
	}
	printf("\n");
}

static const CU_TestInfo tests[] = {
	{ "steady_state_without_system_calls", test_steady_state },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_syscalls = {
	"syscalls", TU_HOST, NULL, NULL, tests,
};
