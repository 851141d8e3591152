/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_TU_H
#define RCX_TU_H

/* Test harness: suites, peers (helper processes), device requirement. */
#include <CUnit/CUnit.h>
#include <sys/types.h>

enum tu_needs {
	TU_HOST = 0,   /* runs anywhere */
	TU_DEVICE = 1, /* needs an RDMA device (label "verbs") */
};

struct tu_suite {
	const char *name;
	int needs;
	CU_InitializeFunc init;
	CU_CleanupFunc cleanup;
	const CU_TestInfo *tests; /* CU_TEST_INFO_NULL-terminated */
};

struct tu_peer {
	const char *name;
	int (*main)(int argc, char **argv);
};

/* Defined by each test file; listed in runner.c. */
#define TU_SUITE(sym) extern const struct tu_suite sym
#define TU_PEER(sym)  extern const struct tu_peer sym

/*
 * Start this runner again as a peer process (exec, never a bare fork, so
 * the child shares no verbs resources). Its stdout is a pipe whose read end
 * is returned in *out_fd. Returns 0 or -errno.
 */
/* this test binary (its build path) */
const char *tu_self_exe(void);

int tu_spawn_peer(const char *peer, char *const args[], pid_t *pid,
		  int *out_fd);
/* Wait for a peer to exit within timeout_ms (killed after); returns its
 * exit code, 128+signal when killed by one, or -ETIMEDOUT. */
int tu_wait_peer(pid_t pid, int timeout_ms);
/* Read one line from fd within timeout_ms; 0 or -errno. */
int tu_read_line(int fd, char *buf, size_t len, int timeout_ms);
/* Monotonic milliseconds. */
long long tu_now_ms(void);
/* The provider contexts get: RCX_PROVIDER, or its default when unset. */
const char *tu_provider(void);

#endif
