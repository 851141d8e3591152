/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Suite "log" (host): what a user sees when the configuration is wrong.
 * Each case runs a peer process with a bad setting and RCX_LOG_FILE
 * pointing at a file of its own; the test reads the file and checks that
 * the line names the variable, the value (and for devices, the devices
 * that exist), and that a misspelt RCX_ variable is warned about once.
 * Also: RCX_LOG_LEVEL filters, %p in RCX_LOG_FILE, and every RCX_ name
 * the tree reads with getenv is one rcx knows (so none is warned about).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/types.h>
#include <rcx/rcx.h>
#include "lib/core/core.h"
#include "tu.h"

/* ---- the peer: one context (and a world) in the environment it got */

static int peer_main(int argc, char **argv)
{
	struct rcx_ctx *ctx = NULL;
	struct rcx_group *g = NULL;
	int ret, ret2 = 0;

	ret = rcx_ctx_create(NULL, &ctx);
	if (!ret && argc > 0 && !strcmp(argv[0], "world"))
		ret2 = rcx_group_world(ctx, &g);
	if (!ret && argc > 0 && !strcmp(argv[0], "twice")) {
		struct rcx_ctx *c2 = NULL;

		ret2 = rcx_ctx_create(NULL, &c2);
		if (!ret2)
			rcx_ctx_destroy(c2);
	}
	if (g)
		rcx_group_free(&g);
	if (ctx)
		rcx_ctx_destroy(ctx);
	printf("%d %d\n", ret, ret2);
	fflush(stdout);
	return 0;
}

const struct tu_peer tu_peer_log = { "log", peer_main };

/* ---- the CUnit side */

static char log_path[256];

/*
 * Run the peer (mode "ctx", "world" or "twice") with the environment
 * entries env (NULL-terminated, NAME=VALUE) added; its log goes to a new
 * file. *ret: what context creation returned; *ret2: the second call's.
 */
static void run(const char *mode, const char *const *env, int *ret, int *ret2)
{
	char *args[] = { (char *)mode, NULL };
	char line[64] = "", *names[16];
	int i, n = 0, fd = -1;
	pid_t pid;

	snprintf(log_path, sizeof(log_path), "/tmp/rcx-test-log.%d",
		 (int)getpid());
	unlink(log_path);
	setenv("RCX_LOG_FILE", log_path, 1);
	for (i = 0; env[i] && n < 16; i++) {
		const char *eq = strchr(env[i], '=');

		names[n] = strndup(env[i], (size_t)(eq - env[i]));
		setenv(names[n++], eq + 1, 1);
	}
	*ret = *ret2 = 1;
	if (tu_spawn_peer("log", args, &pid, &fd) == 0) {
		if (!tu_read_line(fd, line, sizeof(line), 60000))
			sscanf(line, "%d %d", ret, ret2);
		CU_ASSERT_EQUAL(tu_wait_peer(pid, 60000), 0);
		close(fd);
	} else {
		CU_FAIL("peer not started");
	}
	for (i = 0; i < n; i++) {
		unsetenv(names[i]);
		free(names[i]);
	}
	unsetenv("RCX_LOG_FILE");
}

/* The log's text (static buffer), "" when there is none. */
static const char *log_text(void)
{
	static char buf[16384];
	size_t len = 0;
	FILE *f = fopen(log_path, "r");

	buf[0] = 0;
	if (f) {
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[len] = 0;
	return buf;
}

static int count(const char *text, const char *what)
{
	int n = 0;

	for (; (text = strstr(text, what)); text += strlen(what))
		n++;
	return n;
}

/* The log has a line with every one of the words. */
static bool has_line(const char *text, const char *const *words)
{
	const char *p = text, *end;
	char line[1024];
	int i;

	for (; *p; p = *end ? end + 1 : end) {
		end = strchr(p, '\n');
		if (!end)
			end = p + strlen(p);
		snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
		for (i = 0; words[i] && strstr(line, words[i]); i++)
			;
		if (!words[i])
			return true;
	}
	return false;
}

#define EXPECT(mode, want, ...)                                          \
	do {                                                             \
		static const char *const env_[] = { __VA_ARGS__, NULL }; \
		int r_, r2_;                                             \
		run(mode, env_, &r_, &r2_);                              \
		CU_ASSERT_EQUAL(strcmp(mode, "ctx") ? r2_ : r_, want);   \
	} while (0)

static void check_line(const char *const *words)
{
	const char *text = log_text();

	if (!has_line(text, words)) {
		printf("\n    log was:\n%s", text);
		CU_FAIL("no log line with the expected words");
	}
}

static void test_provider(void)
{
	static const char *const w[] = { "ctx error", "RCX_PROVIDER=bogus",
					 "auto, verbs, shm", NULL };

	EXPECT("ctx", -EINVAL, "RCX_PROVIDER=bogus");
	check_line(w);
}

static void test_connect(void)
{
	static const char *const w[] = { "RCX_CONNECT=foo", "lazy or eager",
					 NULL };

	EXPECT("ctx", -EINVAL, "RCX_CONNECT=foo");
	check_line(w);
}

static void test_value_range(void)
{
	static const char *const w[] = { "config error",
					 "RCX_TX_DEPTH=99999999",
					 "is not valid", NULL };

	EXPECT("ctx", -EINVAL, "RCX_TX_DEPTH=99999999");
	check_line(w);
}

static void test_device_missing(void)
{
	static const char *const w[] = { "device no_such_hca0", "RCX_DEVICE",
					 "not found by provider verbs",
					 "(devices: ", NULL };

	EXPECT("ctx", -ENODEV, "RCX_PROVIDER=verbs", "RCX_DEVICE=no_such_hca0");
	check_line(w);
}

static void test_device_with_shm(void)
{
	static const char *const w[] = { "device mlx5_0",
					 "provider shm uses no RDMA device",
					 NULL };

	EXPECT("ctx", -ENODEV, "RCX_PROVIDER=shm", "RCX_DEVICE=mlx5_0");
	check_line(w);
}

static void test_root_syntax(void)
{
	static const char *const w[] = { "boot error", "RCX_ROOT=nohostcolon",
					 "host:port", NULL };

	EXPECT("world", -EPROTO, "RCX_PROVIDER=shm", "RCX_BOOTSTRAP=env",
	       "RCX_RANK=1", "RCX_SIZE=2", "RCX_ROOT=nohostcolon");
	check_line(w);
}

/* the first refusal is said at once, the end with the time it waited */
static void test_root_refused(void)
{
	static const char *const w1[] = { "boot warn", "RCX_ROOT=127.0.0.1:1",
					  "Connection refused", "trying again",
					  NULL };
	static const char *const w2[] = { "boot error", "RCX_ROOT=127.0.0.1:1",
					  "Connection refused",
					  "RCX_BOOT_TIMEOUT_MS", NULL };

	EXPECT("world", -ECONNREFUSED, "RCX_PROVIDER=shm", "RCX_BOOTSTRAP=env",
	       "RCX_RANK=1", "RCX_SIZE=2", "RCX_ROOT=127.0.0.1:1",
	       "RCX_BOOT_TIMEOUT_MS=1500");
	check_line(w1);
	check_line(w2);
}

/* one warning for the misspelt name, with the name it meant, however
 * many contexts the process makes */
static void test_misspelt(void)
{
	static const char *const w[] = { "config warn", "RCX_PROVDER",
					 "RCX_PROVIDER?", NULL };

	EXPECT("twice", 0, "RCX_PROVIDER=shm", "RCX_PROVDER=verbs");
	check_line(w);
	CU_ASSERT_EQUAL(count(log_text(), "RCX_PROVDER"), 1);
}

static void test_level(void)
{
	static const char *const w[] = { "RCX_LOG_LEVEL=loud", NULL };

	EXPECT("ctx", -EINVAL, "RCX_LOG_LEVEL=loud");
	check_line(w);
	/* error only: the misspelt name's warning is not written */
	EXPECT("ctx", 0, "RCX_PROVIDER=shm", "RCX_LOG_LEVEL=error",
	       "RCX_PROVDER=x");
	CU_ASSERT_EQUAL(count(log_text(), "RCX_PROVDER"), 0);
	/* a line carries time, host, pid and rank */
	EXPECT("ctx", -EINVAL, "RCX_CONNECT=foo");
	CU_ASSERT(strncmp(log_text(), "rcx 20", 6) == 0);
	CU_ASSERT(strstr(log_text(), " pid ") != NULL);
	CU_ASSERT(strstr(log_text(), " rank ") != NULL);
}

/* every RCX_ name the tree reads is one rcx knows */
static void test_names_known(void)
{
	char cmd[512], name[128];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && grep -rhoE 'getenv\\(\"RCX_[A-Z_]+\"' lib tools "
		 "providers perftest tests examples | grep -oE 'RCX_[A-Z_]+' "
		 "| sort -u",
		 RCX_SOURCE_DIR);
	p = popen(cmd, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	while (fscanf(p, "%127s", name) == 1) {
		n++;
		if (!rcx__env_known(name)) {
			printf("\n    %s is read but not known\n", name);
			CU_FAIL("an RCX_ variable rcx would warn about");
		}
	}
	pclose(p);
	CU_ASSERT(n > 10);
	CU_ASSERT(!rcx__env_known("RCX_PROVDER"));
	CU_ASSERT_STRING_EQUAL(rcx__env_nearest("RCX_PROVDER"), "RCX_PROVIDER");
}

static const CU_TestInfo tests[] = {
	{ "provider_bogus", test_provider },
	{ "connect_foo", test_connect },
	{ "value_out_of_range", test_value_range },
	{ "device_not_found_lists_devices", test_device_missing },
	{ "device_named_with_shm", test_device_with_shm },
	{ "root_not_host_port", test_root_syntax },
	{ "root_refused_said_at_once", test_root_refused },
	{ "misspelt_variable_warned_once", test_misspelt },
	{ "level_filters_lines", test_level },
	{ "names_read_are_known", test_names_known },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_log = {
	"log", TU_HOST, NULL, NULL, tests,
};
