/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_TU_MP_H
#define RCX_TU_MP_H

/*
 * Multi-process tests: a CUnit test starts a job through the rcx-run
 * launcher, each rank runs a peer role of this runner, and the ranks check
 * with the TP_* macros below (not CUnit: the registry lives in the parent).
 */
#include <stdbool.h>
#include <stddef.h>

struct rcx_ctx;
struct rcx_group;
struct rcx_ctx_attr;

/*
 * Run `rcx-run -n nprocs --timeout timeout_s <this runner> --peer peer
 * scenario` with stdout and stderr inherited. Returns the launcher's exit
 * code (0: every rank exited 0), 128+signal when it was killed by one, or
 * a negative errno when it could not be started or outlived its own
 * timeout by a margin (then it is killed).
 */
int tu_mp_run(int nprocs, const char *peer, const char *scenario,
	      int timeout_s);

/* Rank shown in the messages of the checks below (-1 until set). */
void tp_set_rank(int rank);

/*
 * Checks for peer processes: on failure print rank, file:line, the
 * expression and the values to stderr and count the failure. Each
 * evaluates its arguments once and yields true when the check held.
 */
#define TP_CHECK(cond) tp_check(!!(cond), __FILE__, __LINE__, #cond)
#define TP_CHECK_EQ(a, b) \
	tp_check_eq((long long)(a), (long long)(b), __FILE__, __LINE__, #a, #b)
/* An rcx call that must return 0: shows the error's name. */
#define TP_CHECK_OK(call) tp_check_ok((call), __FILE__, __LINE__, #call)

bool tp_check(bool ok, const char *file, int line, const char *expr);
bool tp_check_eq(long long a, long long b, const char *file, int line,
		 const char *ea, const char *eb);
bool tp_check_ok(int ret, const char *file, int line, const char *expr);
/* Report a failure found by other means (printf-style). */
void tp_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define TP_FAIL(...) tp_fail(__FILE__, __LINE__, __VA_ARGS__)

/* Failures counted so far in this process. */
int tp_failures(void);
/* Exit code of a peer: 1 if any check failed, else 0 (prints a summary). */
int tp_exit(void);

/* One rank of a job, as its scenario sees it. */
struct tp_job {
	struct rcx_ctx *ctx;
	struct rcx_group *g; /* the world */
	int rank;
	int size;
};

/*
 * A context (attributes a, or NULL for the defaults) and its world
 * group, with this process's rank and the group's size; the rank of the
 * checks' messages set. False (checked, the context destroyed again)
 * when either fails.
 */
bool tp_world(const struct rcx_ctx_attr *a, struct rcx_ctx **ctx,
	      struct rcx_group **g, int *rank, int *size);

/* A scenario of a peer role. */
struct tp_scenario {
	const char *name;
	void (*run)(struct tp_job *j);
	const char *provider; /* NULL: the default (RCX_PROVIDER) */
	int thread_level;     /* RCX_THREAD_SINGLE or RCX_THREAD_MULTIPLE */
	int size;	      /* ranks it needs; 0: any number from 2 */
	void (*setup)(void);  /* runs before the context is made, or NULL */
};

/*
 * The main of a peer role: runs the scenario named argv[0] among sc[0..n-1]
 * on a new context (its provider and thread level) and the world group,
 * then barrier, group free and context destroy, each checked. Returns
 * tp_exit(), or 2 when argv names no scenario of the role.
 */
int tp_peer_main(const char *role, const struct tp_scenario *sc, size_t n,
		 int argc, char **argv);
/*
 * Pin this process to the CPU at index idx (modulo their number) of the
 * CPUs it may run on: that CPU, or -errno.
 */
int tp_pin_cpu(int idx);
/* Elements of an array (a scenario table). */
#define TP_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif
