/* SPDX-License-Identifier: BSD-2-Clause */
/* Commands run by tests with their output captured. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "tu.h"
#include "tu_proc.h"

extern char **environ;

int tu_job_start(struct tu_job *j, char *const argv[])
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int p[2], ret;

	memset(j, 0, sizeof(*j));
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
	/* its own group: a timeout kills it and whatever it started */
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setpgroup(&at, 0);
	j->start = tu_now_ms();
	ret = posix_spawn(&j->pid, argv[0], &fa, &at, argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	if (ret) {
		close(p[0]);
		return -ret;
	}
	j->fd = p[0];
	return 0;
}

int tu_job_expect(struct tu_job *j, const char *text, int n, int timeout_ms)
{
	long long end = tu_now_ms() + timeout_ms;
	int got;

	for (;;) {
		struct pollfd pfd = { .fd = j->fd, .events = POLLIN };
		long long left = end - tu_now_ms();
		ssize_t r;

		got = tu_count(j->out, text);
		if (got >= n || left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return got;
		r = read(j->fd, j->out + j->len, sizeof(j->out) - 1 - j->len);
		if (r <= 0)
			return got;
		j->len += (size_t)r;
		j->out[j->len] = 0;
	}
}

int tu_job_finish(struct tu_job *j, int timeout_ms, int want)
{
	long long end = j->start + timeout_ms;
	int ret;

	/* text that never shows up: read until EOF */
	tu_job_expect(j, "\001", 1, (int)(end - tu_now_ms()));
	close(j->fd);
	ret = tu_wait_peer(j->pid, (int)(end - tu_now_ms()));
	if (ret == -ETIMEDOUT)
		kill(-j->pid, SIGKILL);
	if (ret != want)
		fprintf(stderr, "\nexit %d, not %d; output:\n%s\n", ret, want,
			j->out);
	return ret;
}

int tu_count(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay++;
	}
	return n;
}

int tu_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && !bind(fd, (struct sockaddr *)&sa, sizeof(sa)) &&
	    !getsockname(fd, (struct sockaddr *)&sa, &sl))
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

int tu_spawn_env_job(const char *peer, char *const args[], int n, pid_t *pid,
		     int *fd)
{
	static const char *const vars[] = { "RCX_ROOT", "RCX_SIZE", "RCX_RANK",
					    "RCX_BOOT_TIMEOUT_MS" };
	char root[64], v[16];
	int r, ret = 0, port = tu_free_port();
	size_t i;

	if (port <= 0)
		return -EADDRNOTAVAIL;
	snprintf(root, sizeof(root), "127.0.0.1:%d", port);
	setenv("RCX_ROOT", root, 1);
	snprintf(v, sizeof(v), "%d", n);
	setenv("RCX_SIZE", v, 1);
	setenv("RCX_BOOT_TIMEOUT_MS", "20000",
	       0); /* unless the caller set one */
	for (r = n - 1; r >= 0 && !ret; r--) {
		snprintf(v, sizeof(v), "%d", r);
		setenv("RCX_RANK", v, 1);
		ret = tu_spawn_peer(peer, args, &pid[r], &fd[r]);
	}
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	/* r + 1 failed to start: the ones above it go */
	for (r += 2; ret && r < n; r++) {
		kill(pid[r], SIGKILL);
		tu_wait_peer(pid[r], 10000);
		close(fd[r]);
	}
	return ret;
}
