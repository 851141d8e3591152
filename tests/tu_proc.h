/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_TU_PROC_H
#define RCX_TU_PROC_H

/*
 * Commands whose output a test reads: started in their own process group
 * with stdout and stderr on one pipe, so a test can wait for a line, send
 * a signal, and check the exit status and what was printed.
 */
#include <stddef.h>
#include <sys/types.h>

#define TU_JOB_OUT 16384

struct tu_job {
	pid_t pid;
	int fd;
	long long start; /* tu_now_ms() at start */
	size_t len;
	char out[TU_JOB_OUT]; /* all output so far, NUL-terminated */
};

/* posix_spawn argv[0] (a path); 0 or -errno. */
int tu_job_start(struct tu_job *j, char *const argv[]);
/* Read until text has appeared n times, EOF or timeout: the count seen. */
int tu_job_expect(struct tu_job *j, const char *text, int n, int timeout_ms);
/*
 * Read to EOF and reap, within timeout_ms of the start: exit code,
 * 128+signal, or -ETIMEDOUT (the whole process group is then killed).
 * Prints the output when the result is not want.
 */
int tu_job_finish(struct tu_job *j, int timeout_ms, int want);
/* Occurrences of needle in hay. */
int tu_count(const char *hay, const char *needle);
/* A TCP port on 127.0.0.1 that was free a moment ago, or -1. */
int tu_free_port(void);
/*
 * n ranks of a job with the env bootstrap (RCX_ROOT on 127.0.0.1, a free
 * port), each this runner as peer with args (tu_spawn_peer), the highest
 * rank first: the others wait for rank 0. pid[r] and fd[r] of rank r.
 * RCX_BOOT_TIMEOUT_MS is 20 s unless the caller set it. The RCX_ROOT,
 * RCX_SIZE, RCX_RANK and RCX_BOOT_TIMEOUT_MS of the job are unset again.
 * 0, or -errno (then no rank is left running).
 */
int tu_spawn_env_job(const char *peer, char *const args[], int n, pid_t *pid,
		     int *fd);

#endif
