/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rcx-run: start N ranks of a program on this host and serve their
 * bootstrap (the "local" backend) over a unix socket in a private
 * directory. One poll() loop watches a signalfd (SIGCHLD and the signals
 * it forwards) and the gather server. With --nodes M the ranks play M
 * nodes: rank r runs on node r % M (RCX_NODE), so the auto provider
 * connects ranks of different nodes through the NIC.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <rcx/version.h>
#include "lib/boot/boot_wire.h"

#define EXIT_TIMEOUT 124 /* as timeout(1) */
#define EXIT_SELF    125 /* rcx-run itself failed */
#define EXIT_NOEXEC  127

struct run {
	int n;
	int keep_going;
	int ft;	   /* ranks killed by SIGKILL are failures the others survive */
	int nodes; /* simulated nodes, 0: this host is the only one */
	long timeout_s;
	char **argv;
	uint64_t jobid;
	char dir[PATH_MAX];
	char sock[PATH_MAX];
	struct rcx__boot_srv *srv;
	int sfd;
	sigset_t oldmask;
	pid_t *pids; /* 0 once reaped */
	int live;
	int killing; /* the rest were sent SIGKILL: their exits are ours */
	int timed_out;
	int status; /* exit status of the first abnormal rank, or -1 */
};

static const char *const signames[] = {
	[SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",   [SIGQUIT] = "SIGQUIT",
	[SIGILL] = "SIGILL",   [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
	[SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",   [SIGKILL] = "SIGKILL",
	[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
	[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
	[SIGXCPU] = "SIGXCPU", [SIGXFSZ] = "SIGXFSZ", [SIGSYS] = "SIGSYS",
};

static void usage(FILE *f)
{
	fputs("usage: rcx-run -n N [--nodes M] [--timeout SEC] [--keep-going] "
	      "[--ft] [--]\n"
	      "              PROG [ARGS...]\n"
	      "  -n, --np N         start N ranks of PROG\n"
	      "  -N, --nodes M      the ranks play M nodes (also "
	      "RCX_RUN_NODES=M):\n"
	      "                     rank r is on node r % M (RCX_NODE), and "
	      "ranks of\n"
	      "                     different nodes reach each other "
	      "through the NIC\n"
	      "                     (auto provider)\n"
	      "  -t, --timeout SEC  kill every rank after SEC seconds\n"
	      "  -k, --keep-going   a failed rank does not stop the others\n"
	      "                     (default: they are killed)\n"
	      "  -f, --ft           fault-tolerant job (also RCX_RUN_FT=1): a "
	      "rank\n"
	      "                     killed by SIGKILL is a process failure "
	      "the others\n"
	      "                     survive; it neither stops them nor "
	      "counts in the\n"
	      "                     exit status\n"
	      "  -h, --help         this text\n"
	      "  -V, --version      rcx-run's version (rcx's)\n"
	      "exit status: 0 when every rank exits 0, else the first failed "
	      "rank's\n"
	      "  status (128+signal if killed); 124 on timeout, 125 when "
	      "rcx-run fails\n",
	      f);
}

static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_args(struct run *run, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "np", required_argument, NULL, 'n' },
		{ "nodes", required_argument, NULL, 'N' },
		{ "timeout", required_argument, NULL, 't' },
		{ "keep-going", no_argument, NULL, 'k' },
		{ "ft", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	long v;
	int c;

	/* "+": options end at PROG, whose own options are left alone */
	const char *nodes = getenv("RCX_RUN_NODES");

	if (nodes && *nodes && parse_long(nodes, 1, RCX__BOOT_MAX_SIZE, &v)) {
		fprintf(stderr, "rcx-run: bad RCX_RUN_NODES: %s\n", nodes);
		return -EINVAL;
	}
	run->nodes = nodes && *nodes ? (int)v : 0;
	while ((c = getopt_long(argc, argv, "+n:N:t:kfhV", opts, NULL)) != -1) {
		switch (c) {
		case 'N':
			if (parse_long(optarg, 1, RCX__BOOT_MAX_SIZE, &v))
				goto bad;
			run->nodes = (int)v;
			break;
		case 'n':
			if (parse_long(optarg, 1, RCX__BOOT_MAX_SIZE, &v))
				goto bad;
			run->n = (int)v;
			break;
		case 't':
			if (parse_long(optarg, 1, 100000000, &v))
				goto bad;
			run->timeout_s = v;
			break;
		case 'k':
			run->keep_going = 1;
			break;
		case 'f':
			run->ft = 1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("rcx-run (rcx) %s\n", RCX_VERSION_STRING);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (getenv("RCX_RUN_FT") && !strcmp(getenv("RCX_RUN_FT"), "1"))
		run->ft = 1;
	if (!run->n || optind >= argc) {
		usage(stderr);
		return -EINVAL;
	}
	run->argv = argv + optind;
	return 0;

bad:
	fprintf(stderr, "rcx-run: bad value for -%c: %s\n", c, optarg);
	return -EINVAL;
}

/* The private directory and the listening socket in it. */
static int make_socket(struct run *run, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *tmp = getenv("TMPDIR");
	int fd;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (snprintf(run->dir, sizeof(run->dir), "%s/rcx-run.XXXXXX", tmp) >=
		    (int)sizeof(run->dir) ||
	    !mkdtemp(run->dir)) {
		fprintf(stderr, "rcx-run: cannot make a directory in %s: %s\n",
			tmp, strerror(errno));
		run->dir[0] = 0;
		return -1;
	}
	if (snprintf(run->sock, sizeof(run->sock), "%s/sock", run->dir) >=
		    (int)sizeof(run->sock) ||
	    strlen(run->sock) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "rcx-run: socket path too long: %s\n",
			run->sock);
		return -1;
	}
	strcpy(sa.sun_path, run->sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(fd, run->n + 8)) {
		fprintf(stderr, "rcx-run: socket %s: %s\n", run->sock,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*out = fd;
	return 0;
}

static void kill_all(struct run *run, int sig)
{
	int r;

	for (r = 0; r < run->n; r++)
		if (run->pids[r] > 0)
			kill(run->pids[r], sig);
}

/*
 * Rank r's node: r % nodes ("HOST/k") with --nodes, and its rank and the
 * rank count on that node.
 */
static void set_node(const struct run *run, int r)
{
	int m = run->nodes > 1 ? run->nodes : 1;
	char v[32], host[256] = "", node[300];

	if (m > 1) {
		gethostname(host, sizeof(host) - 1);
		snprintf(node, sizeof(node), "%s/%d", host, r % m);
		setenv("RCX_NODE", node, 1);
	}
	snprintf(v, sizeof(v), "%d", r / m);
	setenv("RCX_LOCAL_RANK", v, 1);
	snprintf(v, sizeof(v), "%d", run->n / m + (r % m < run->n % m));
	setenv("RCX_LOCAL_SIZE", v, 1);
}

static void child_exec(struct run *run, int r)
{
	char v[32];

	sigprocmask(SIG_SETMASK, &run->oldmask, NULL);
	signal(SIGPIPE, SIG_DFL);
	setenv("RCX_RUN_SOCK", run->sock, 1);
	snprintf(v, sizeof(v), "%d", r);
	setenv("RCX_RANK", v, 1);
	snprintf(v, sizeof(v), "%d", run->n);
	setenv("RCX_SIZE", v, 1);
	set_node(run, r);
	snprintf(v, sizeof(v), "%016" PRIx64, run->jobid);
	setenv("RCX_JOBID", v, 1);
	unsetenv("RCX_BOOTSTRAP");
	/* under mpirun -np 1 rcx-run ..., the ranks are ours, not PMIx's */
	unsetenv("PMIX_RANK");
	unsetenv("PMIX_NAMESPACE");
	execvp(run->argv[0], run->argv);
	fprintf(stderr, "rcx-run: %s: %s\n", run->argv[0], strerror(errno));
	_exit(EXIT_NOEXEC);
}

/* fork + exec each rank: nothing but the environment is shared. */
static int spawn_all(struct run *run)
{
	pid_t pid;
	int r;

	for (r = 0; r < run->n; r++) {
		pid = fork();
		if (pid < 0) {
			fprintf(stderr, "rcx-run: fork: %s\n", strerror(errno));
			run->killing = 1;
			kill_all(run, SIGKILL);
			run->status = EXIT_SELF;
			return -1;
		}
		if (!pid)
			child_exec(run, r);
		run->pids[r] = pid;
		run->live++;
	}
	return 0;
}

static void print_exit(int r, int st)
{
	int sig;

	if (WIFEXITED(st)) {
		fprintf(stderr, "rcx-run: rank %d exited with status %d\n", r,
			WEXITSTATUS(st));
		return;
	}
	sig = WTERMSIG(st);
	if (sig > 0 && (size_t)sig < sizeof(signames) / sizeof(signames[0]) &&
	    signames[sig]) {
		fprintf(stderr, "rcx-run: rank %d killed by signal %s\n", r,
			signames[sig]);
		return;
	}
	fprintf(stderr, "rcx-run: rank %d killed by signal %d\n", r,
		WTERMSIG(st));
}

static void on_exit_rank(struct run *run, int r, int st)
{
	int abnormal = !WIFEXITED(st) || WEXITSTATUS(st);
	int survivable = run->ft && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;

	if (survivable && !run->killing) {
		print_exit(r, st);
		rcx__boot_srv_rank_gone(run->srv, r, 1);
		return;
	}
	/* after we sent SIGKILL, exits are our doing and not reported */
	if (abnormal && !run->killing) {
		print_exit(r, st);
		if (run->status < 0)
			run->status = WIFEXITED(st) ? WEXITSTATUS(st)
						    : 128 + WTERMSIG(st);
	}
	/* tell the survivors first, then stop them unless asked not to */
	rcx__boot_srv_rank_gone(run->srv, r, abnormal);
	if (abnormal && !run->keep_going && !run->killing) {
		run->killing = 1;
		kill_all(run, SIGKILL);
	}
}

static void reap(struct run *run)
{
	pid_t pid;
	int st, r;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (r = 0; r < run->n && run->pids[r] != pid; r++)
			;
		if (r == run->n)
			continue;
		run->pids[r] = 0;
		run->live--;
		on_exit_rank(run, r, st);
	}
}

static void on_signals(struct run *run)
{
	struct signalfd_siginfo si;

	while (read(run->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			reap(run);
			continue;
		}
		/*
		 * A terminal's ^C or hangup (SI_KERNEL) already reached the
		 * ranks, which share our process group: do not send it twice.
		 */
		if (si.ssi_code != SI_KERNEL)
			kill_all(run, (int)si.ssi_signo);
	}
}

/*
 * A rank declared another failed without a sign of its death (cut off by
 * the transport past RCX_FT_TIMEOUT_MS): the others were told it failed;
 * kill it, so that it cannot go on as a zombie the others ignore.
 */
static void kill_declared(struct run *run)
{
	int r, by;

	while (rcx__boot_srv_declared(run->srv, &r, &by) == 1) {
		if (r >= run->n || run->pids[r] <= 0)
			continue;
		fprintf(stderr,
			"rcx-run: rank %d declared rank %d failed (unreachable "
			"for RCX_FT_TIMEOUT_MS): killing rank %d\n",
			by, r, r);
		kill(run->pids[r], SIGKILL);
	}
}

static int event_loop(struct run *run)
{
	long long deadline = -1;
	struct pollfd pfd[2] = {
		{ .fd = run->sfd, .events = POLLIN },
		{ .fd = rcx__boot_srv_fd(run->srv), .events = POLLIN },
	};
	int ret;

	if (run->timeout_s)
		deadline = rcx__boot_now_ms() + run->timeout_s * 1000LL;
	/* SIGCHLD may have come before the loop: reap first */
	reap(run);
	while (run->live) {
		ret = poll(pfd, 2,
			   run->timed_out ? -1 : rcx__boot_left_ms(deadline));
		if (ret < 0 && errno != EINTR) {
			fprintf(stderr, "rcx-run: poll: %s\n", strerror(errno));
			return -1;
		}
		if (deadline >= 0 && !run->timed_out &&
		    !rcx__boot_left_ms(deadline)) {
			fprintf(stderr,
				"rcx-run: timeout after %ld s, killing all "
				"ranks\n",
				run->timeout_s);
			run->timed_out = 1;
			run->killing = 1;
			kill_all(run, SIGKILL);
		}
		if (ret > 0 && pfd[0].revents)
			on_signals(run);
		if (ret > 0 && pfd[1].revents) {
			rcx__boot_srv_run(run->srv, 0);
			kill_declared(run);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct run run = { .status = -1, .sfd = -1 };
	sigset_t mask;
	int lfd = -1, ret = EXIT_SELF;

	if (parse_args(&run, argc, argv))
		return EXIT_SELF;
	/* a closed stderr must not kill us and orphan the ranks */
	signal(SIGPIPE, SIG_IGN);
	run.jobid = rcx__boot_random_jobid();
	run.pids = calloc((size_t)run.n, sizeof(*run.pids));
	if (!run.pids) {
		fprintf(stderr, "rcx-run: out of memory\n");
		return EXIT_SELF;
	}
	if (make_socket(&run, &lfd))
		goto out_dir;
	if (rcx__boot_srv_open(lfd, run.n, run.jobid, -1, &run.srv)) {
		fprintf(stderr, "rcx-run: cannot start the server\n");
		close(lfd);
		goto out_dir;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &run.oldmask);
	run.sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (run.sfd < 0) {
		fprintf(stderr, "rcx-run: signalfd: %s\n", strerror(errno));
		goto out_srv;
	}
	if (spawn_all(&run) || event_loop(&run)) {
		/* what is left of the job must not outlive us */
		kill_all(&run, SIGKILL);
		while (run.live > 0 && wait(NULL) > 0)
			run.live--;
		ret = EXIT_SELF;
	} else if (run.timed_out) {
		ret = EXIT_TIMEOUT;
	} else {
		ret = run.status < 0 ? 0 : run.status;
	}
	close(run.sfd);
out_srv:
	rcx__boot_srv_close(run.srv);
	sigprocmask(SIG_SETMASK, &run.oldmask, NULL);
out_dir:
	if (run.sock[0])
		unlink(run.sock);
	if (run.dir[0])
		rmdir(run.dir);
	free(run.pids);
	return ret;
}
