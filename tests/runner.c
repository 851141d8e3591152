/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CUnit runner: `rcx_tests --suite NAME` runs one suite (one CTest
 * entry each), `--list` prints them, `--peer NAME ...` runs a helper role
 * for multi-process tests. Exit: 0 all passed, 1 any failure, 77 skipped
 * (a device suite without a device, allowed only when RCX_REQUIRE_DEVICE is
 * not set; tools/test sets it inside Soft-RoCE, where a missing device is a
 * failure).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <CUnit/Basic.h>
#include <infiniband/verbs.h>
#include "lib/core/core.h"
#include "tu.h"

TU_SUITE(tu_suite_errors);
TU_SUITE(tu_suite_log);
TU_SUITE(tu_suite_boot);
TU_SUITE(tu_suite_chan);
TU_SUITE(tu_suite_chansig);
TU_SUITE(tu_suite_topo);
TU_SUITE(tu_suite_p2p);
TU_SUITE(tu_suite_p2p_big);
TU_SUITE(tu_suite_p2p_tx);
TU_SUITE(tu_suite_api);
TU_SUITE(tu_suite_cont);
TU_SUITE(tu_suite_verbs_smoke);
TU_SUITE(tu_suite_win);
TU_SUITE(tu_suite_dynwin);
TU_SUITE(tu_suite_winshared);
TU_SUITE(tu_suite_pscw);
TU_SUITE(tu_suite_order);
TU_SUITE(tu_suite_ft);
TU_SUITE(tu_suite_stress);
TU_SUITE(tu_suite_life);
TU_SUITE(tu_suite_limits);
TU_SUITE(tu_suite_group);
TU_SUITE(tu_suite_coll);
TU_SUITE(tu_suite_syscalls);
TU_SUITE(tu_suite_shm_fast);
TU_SUITE(tu_suite_bcoll);
TU_SUITE(tu_suite_stop);
TU_SUITE(tu_suite_stoppost);
TU_SUITE(tu_suite_stop_win);
TU_SUITE(tu_suite_loss);
TU_SUITE(tu_suite_wintypes);
TU_SUITE(tu_suite_ftgroup);
TU_PEER(tu_peer_api);
TU_PEER(tu_peer_log);
TU_PEER(tu_peer_smoke);
TU_PEER(tu_peer_boot);
TU_PEER(tu_peer_chan);
TU_PEER(tu_peer_chansig);
TU_PEER(tu_peer_p2p);
TU_PEER(tu_peer_cont);
TU_PEER(tu_peer_win);
TU_PEER(tu_peer_dynwin);
TU_PEER(tu_peer_winshared);
TU_PEER(tu_peer_pscw);
TU_PEER(tu_peer_order);
TU_PEER(tu_peer_ft);
TU_PEER(tu_peer_stress);
TU_PEER(tu_peer_life);
TU_PEER(tu_peer_p2p_tx);
TU_PEER(tu_peer_limits);
TU_PEER(tu_peer_group);
TU_PEER(tu_peer_coll);
TU_PEER(tu_peer_syscalls);
TU_PEER(tu_peer_bcoll);
TU_PEER(tu_peer_stop);
TU_PEER(tu_peer_stoppost);
TU_PEER(tu_peer_stop_win);
TU_PEER(tu_peer_loss);
TU_PEER(tu_peer_wintypes);
TU_PEER(tu_peer_ftgroup);

/* clang-format off */
static const struct tu_suite *const suites[] = {
	&tu_suite_errors,
	&tu_suite_log,
	&tu_suite_boot,
	&tu_suite_topo,
	&tu_suite_verbs_smoke,
	&tu_suite_api,
	&tu_suite_p2p,
	&tu_suite_p2p_big,
	&tu_suite_p2p_tx,
	&tu_suite_chan,
	&tu_suite_chansig,
	&tu_suite_cont,
	&tu_suite_win,
	&tu_suite_dynwin,
	&tu_suite_winshared,
	&tu_suite_pscw,
	&tu_suite_order,
	&tu_suite_ft,
	&tu_suite_stress,
	&tu_suite_life,
	&tu_suite_limits,
	&tu_suite_group,
	&tu_suite_coll,
	&tu_suite_syscalls,
	&tu_suite_shm_fast,
	&tu_suite_bcoll,
	&tu_suite_stop,
	&tu_suite_stoppost,
	&tu_suite_stop_win,
	&tu_suite_loss,
	&tu_suite_wintypes,
	&tu_suite_ftgroup,
	NULL,
};

static const struct tu_peer *const peers[] = {
	&tu_peer_api,
	&tu_peer_log,
	&tu_peer_smoke,
	&tu_peer_boot,
	&tu_peer_chan,
	&tu_peer_chansig,
	&tu_peer_p2p,
	&tu_peer_cont,
	&tu_peer_win,
	&tu_peer_dynwin,
	&tu_peer_winshared,
	&tu_peer_pscw,
	&tu_peer_order,
	&tu_peer_ft,
	&tu_peer_stress,
	&tu_peer_life,
	&tu_peer_p2p_tx,
	&tu_peer_limits,
	&tu_peer_group,
	&tu_peer_coll,
	&tu_peer_syscalls,
	&tu_peer_bcoll,
	&tu_peer_stop,
	&tu_peer_stoppost,
	&tu_peer_stop_win,
	&tu_peer_loss,
	&tu_peer_wintypes,
	&tu_peer_ftgroup,
	NULL,
};
/* clang-format on */

extern char **environ;

long long tu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/*
 * This test binary, for starting peers: its build path, not
 * /proc/self/exe, which under valgrind names valgrind's own tool.
 */
const char *tu_self_exe(void)
{
	return RCX_TESTS_PATH;
}

int tu_spawn_peer(const char *peer, char *const args[], pid_t *pid, int *out_fd)
{
	char *argv[32];
	posix_spawn_file_actions_t fa;
	int p[2], n = 0, ret;

	argv[n++] = (char *)tu_self_exe();
	argv[n++] = "--peer";
	argv[n++] = (char *)peer;
	while (args && *args && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	ret = posix_spawn(pid, tu_self_exe(), &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (ret) {
		close(p[0]);
		return -ret;
	}
	*out_fd = p[0];
	return 0;
}

int tu_wait_peer(pid_t pid, int timeout_ms)
{
	long long end = tu_now_ms() + timeout_ms;
	int st;

	for (;;) {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			break;
		if (r < 0)
			return -errno;
		if (tu_now_ms() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		usleep(2000);
	}
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

int tu_read_line(int fd, char *buf, size_t len, int timeout_ms)
{
	long long end = tu_now_ms() + timeout_ms;
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long long left = end - tu_now_ms();
		ssize_t r;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		r = read(fd, buf + n, 1);
		if (r <= 0)
			return r ? -errno : -EPIPE;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return 0;
}

static bool env_is(const char *name, const char *val)
{
	const char *v = getenv(name);

	return v && !strcmp(v, val);
}

/* RCX_PROVIDER, or its default (lib/core/config.c) when it is not set. */
const char *tu_provider(void)
{
	const struct rcx__config_var *c;
	const char *v = getenv("RCX_PROVIDER");

	if (v && *v)
		return v;
	for (c = rcx__config_vars; strcmp(c->name, "RCX_PROVIDER"); c++)
		;
	return c->deflt;
}

/*
 * The suites' device: an RDMA one, or the shared-memory provider (always
 * there) when the provider is shm, the fault provider over it, or auto
 * told to use shm only (RCX_DEVICE=shm). auto otherwise needs an RDMA
 * device: its suites are meant to mix shm and verbs.
 */
static int device_present(void)
{
	const char *p = tu_provider(), *lower = getenv("RCX_FAULT_LOWER");
	int n = 0;
	struct ibv_device **l;

	if (!strcmp(p, "fault"))
		p = lower && *lower ? lower : "auto";
	if (!strcmp(p, "shm") ||
	    (!strcmp(p, "auto") && env_is("RCX_DEVICE", "shm")))
		return 1;
	l = ibv_get_device_list(&n);

	if (l)
		ibv_free_device_list(l);
	return n > 0;
}

/*
 * Every case runs through timed_case, which finds the case CUnit is
 * running by name and prints how long it took beside CUnit's "passed",
 * so that a slow case can be found in a CTest log. A case that ends in
 * a fatal assertion leaves by longjmp and prints no time.
 */
static const CU_TestInfo *run_cases;

static void timed_case(void)
{
	CU_pTest cur = CU_get_current_test();
	const CU_TestInfo *t;
	long long t0;

	for (t = run_cases; t->pName; t++)
		if (cur && !strcmp(t->pName, cur->pName))
			break;
	CU_ASSERT_PTR_NOT_NULL_FATAL(t->pName);
	t0 = tu_now_ms();
	t->pTestFunc();
	printf("(%.1f s) ", (double)(tu_now_ms() - t0) / 1000.0);
}

/*
 * RCX_TEST_CASE: run only the cases whose names contain one of its
 * comma-separated words (to repeat one case in a loop). A filter that
 * matches no case fails the suite, so a misspelt name is not a pass.
 */
static bool case_wanted(const char *name)
{
	const char *f = getenv("RCX_TEST_CASE"), *w;
	char word[128];
	size_t n;

	if (!f || !*f)
		return true;
	for (w = f; *w; w += n + (w[n] == ',')) {
		n = strcspn(w, ",");
		if (!n || n >= sizeof(word))
			continue;
		memcpy(word, w, n);
		word[n] = 0;
		if (strstr(name, word))
			return true;
	}
	return false;
}

static int run_suite(const struct tu_suite *s)
{
	CU_pSuite cs;
	const CU_TestInfo *t;
	unsigned int failed, added = 0;

	if (s->needs & TU_DEVICE && !device_present()) {
		const char *req = getenv("RCX_REQUIRE_DEVICE");

		if (req && *req && strcmp(req, "0")) {
			fprintf(stderr,
				"FAIL %s: no RDMA device, and "
				"RCX_REQUIRE_DEVICE is set\n",
				s->name);
			return 1;
		}
		fprintf(stderr,
			"SKIP %s: no RDMA device (run it under "
			"tools/softroce)\n",
			s->name);
		return 77;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	cs = CU_add_suite(s->name, s->init, s->cleanup);
	run_cases = s->tests;
	for (t = s->tests; cs && t->pName; t++) {
		const CU_TestInfo *u;

		for (u = s->tests; u != t; u++)
			if (!strcmp(u->pName, t->pName)) {
				fprintf(stderr, "FAIL %s: case %s twice\n",
					s->name, t->pName);
				CU_cleanup_registry();
				return 1;
			}
		if (!case_wanted(t->pName))
			continue;
		CU_add_test(cs, t->pName, timed_case);
		added++;
	}
	if (cs && !added) {
		fprintf(stderr, "FAIL %s: RCX_TEST_CASE=%s matches no case\n",
			s->name, getenv("RCX_TEST_CASE"));
		CU_cleanup_registry();
		return 1;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() +
		 CU_get_number_of_suites_failed() +
		 CU_get_number_of_tests_failed();
	if (CU_get_error() != CUE_SUCCESS)
		failed++;
	CU_cleanup_registry();
	return failed ? 1 : 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: rcx_tests --list | --suite NAME | "
			"--peer NAME [ARGS...]\n");
}

int main(int argc, char **argv)
{
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "--list")) {
		for (i = 0; suites[i]; i++)
			printf("%s %s\n", suites[i]->name,
			       suites[i]->needs & TU_DEVICE ? "verbs" : "host");
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "--peer")) {
		for (i = 0; peers[i]; i++)
			if (!strcmp(peers[i]->name, argv[2]))
				return peers[i]->main(argc - 3, argv + 3);
		fprintf(stderr, "unknown peer %s\n", argv[2]);
		return 2;
	}
	if (argc == 3 && !strcmp(argv[1], "--suite")) {
		for (i = 0; suites[i]; i++)
			if (!strcmp(suites[i]->name, argv[2]))
				return run_suite(suites[i]);
		fprintf(stderr, "unknown suite %s\n", argv[2]);
		return 2;
	}
	usage();
	return 2;
}
