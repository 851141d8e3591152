/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The public API against bad input, in one process: every call of
 * include/rcx/{ctx,req,group,p2p,errors}.h with NULL handles and out
 * pointers, dead objects where the header promises to detect them,
 * out-of-range ranks and tags, bad attributes and RCX_* variables, and
 * request misuse. Each expects the exact error of the header comment, and
 * that nothing happened: out arguments untouched, nothing posted, and a
 * valid call afterwards still works. The world is a singleton, so every
 * message goes to self. The suite's jobs (several ranks) are in
 * test_api_jobs.c.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rcx/rcx.h>
#include "lib/core/core.h"
#include "lib/win/win_int.h"
#include "test_api.h"
#include "tu.h"
#include "tu_mp.h"

static struct rcx_ctx *ctx;
static struct rcx_group *world;
static char *saved_bootstrap;

/* A zeroed object of any type: its magic is wrong. */
static union {
	unsigned long long align;
	unsigned char b[4096];
} junk;
#define JUNK(type) ((type *)(void *)&junk)

/* Out-pointer values a failing call must leave alone. */
#define SENTINEL(type) ((type *)(void *)&saved_bootstrap)

static void env_restore(const char *name, const char *old)
{
	if (old)
		setenv(name, old, 1);
	else
		unsetenv(name);
}

static int suite_init(void)
{
	const char *b = getenv("RCX_BOOTSTRAP");
	int ret;

	saved_bootstrap = b ? strdup(b) : NULL;
	setenv("RCX_BOOTSTRAP", "singleton", 1);
	ret = rcx_ctx_create(NULL, &ctx);
	if (ret) {
		fprintf(stderr, "rcx_ctx_create: %s\n", rcx_strerror(ret));
		return -1;
	}
	ret = rcx_group_world(ctx, &world);
	if (ret) {
		fprintf(stderr, "rcx_group_world: %s\n", rcx_strerror(ret));
		rcx_ctx_destroy(ctx);
		ctx = NULL;
		return -1;
	}
	return 0;
}

static int suite_cleanup(void)
{
	if (world)
		rcx_group_free(&world);
	if (ctx)
		rcx_ctx_destroy(ctx);
	ctx = NULL;
	env_restore("RCX_BOOTSTRAP", saved_bootstrap);
	free(saved_bootstrap);
	saved_bootstrap = NULL;
	return 0;
}

static bool status_empty(const struct rcx_status *st)
{
	return st->source == RCX_ANY_SOURCE && st->tag == RCX_ANY_TAG &&
	       st->error == 0 && st->count == 0 && st->slot == -1;
}

static void status_junk(struct rcx_status *st)
{
	memset(st, 0x5a, sizeof(*st));
}

/* Test until complete, at most ~2 s; 1 when it completed. */
static int test_until(struct rcx_req **r, struct rcx_status *st)
{
	long long end = tu_now_ms() + 2000;
	int flag = 0;

	while (!flag && tu_now_ms() < end)
		if (rcx_test(r, &flag, st))
			return 0;
	return flag;
}

/* A message to self with this tag arrives intact (nothing got in the way). */
static bool roundtrip(int tag)
{
	char out[24], in[24];
	struct rcx_req *s = NULL, *r = NULL;
	struct rcx_status st;
	bool ok;

	snprintf(out, sizeof(out), "message %d", tag);
	memset(in, 0, sizeof(in));
	if (rcx_isend(world, out, sizeof(out), 0, tag, &s) ||
	    rcx_irecv(world, in, sizeof(in), 0, tag, &r))
		return false;
	ok = test_until(&r, &st) && r == NULL && st.source == 0 &&
	     st.tag == tag && st.count == sizeof(out) && st.error == 0 &&
	     !memcmp(in, out, sizeof(out));
	ok = test_until(&s, &st) && s == NULL && st.error == 0 && ok;
	return ok;
}

/*
 * Nothing is waiting to be received: a wildcard receive stays open until
 * a message of ours arrives, and then it gets that one.
 */
static bool nothing_queued(void)
{
	char in[24];
	struct rcx_req *r = NULL;
	struct rcx_status st;
	int flag = 1, i;

	if (rcx_irecv(world, in, sizeof(in), RCX_ANY_SOURCE, RCX_ANY_TAG, &r))
		return false;
	for (i = 0; i < 10 && r; i++) {
		rcx_progress(ctx);
		if (rcx_test(&r, &flag, &st) || flag)
			break;
	}
	if (flag) {
		fprintf(stderr, "\n    unexpected message: tag %d, %zu bytes\n",
			st.tag, st.count);
		return false;
	}
	if (rcx_send(world, "probe", 6, 0, 4242))
		return false;
	return test_until(&r, &st) && st.tag == 4242 && st.count == 6 &&
	       !strcmp(in, "probe");
}

/* ---- ctx.h */

static void test_ctx_create_args(void)
{
	struct rcx_ctx *c = SENTINEL(struct rcx_ctx);
	struct rcx_ctx_attr a;

	CU_ASSERT_EQUAL(rcx_ctx_create(NULL, NULL), -EINVAL);
	memset(&a, 0, sizeof(a));
	CU_ASSERT_EQUAL(rcx_ctx_create(&a, NULL), -EINVAL);
	a.thread_level = 2;
	CU_ASSERT_EQUAL(rcx_ctx_create(&a, &c), -EINVAL);
	a.thread_level = -1;
	CU_ASSERT_EQUAL(rcx_ctx_create(&a, &c), -EINVAL);
	a.thread_level = INT_MAX;
	CU_ASSERT_EQUAL(rcx_ctx_create(&a, &c), -EINVAL);
	a.thread_level = RCX_THREAD_SINGLE;
	a.connect = RCX_CONNECT_LAZY + 1;
	CU_ASSERT_EQUAL(rcx_ctx_create(&a, &c), -EINVAL);
	a.connect = -1;
	CU_ASSERT_EQUAL(rcx_ctx_create(&a, &c), -EINVAL);
	CU_ASSERT_PTR_EQUAL(c, SENTINEL(struct rcx_ctx));

	memset(&a, 0, sizeof(a));
	a.device = "no_such_device9";
	CU_ASSERT_EQUAL(rcx_ctx_create(&a, &c), -ENODEV);
	memset(&a, 0, sizeof(a));
	a.provider = "no-such-provider";
	CU_ASSERT_EQUAL(rcx_ctx_create(&a, &c), -EINVAL);
	CU_ASSERT_PTR_EQUAL(c, SENTINEL(struct rcx_ctx));

	/* both valid levels work */
	memset(&a, 0, sizeof(a));
	a.thread_level = RCX_THREAD_MULTIPLE;
	CU_ASSERT_EQUAL_FATAL(rcx_ctx_create(&a, &c), 0);
	CU_ASSERT_PTR_NOT_EQUAL(c, SENTINEL(struct rcx_ctx));
	CU_ASSERT(rcx_progress(c) >= 0);
	CU_ASSERT_EQUAL(rcx_ctx_destroy(c), 0);
	a.thread_level = RCX_THREAD_SINGLE;
	CU_ASSERT_EQUAL_FATAL(rcx_ctx_create(&a, &c), 0);
	CU_ASSERT_EQUAL(rcx_ctx_destroy(c), 0);
}

/* A bad RCX_* variable makes rcx_ctx_create fail with the given code. */
static void env_case(const char *name, const char *val, int want)
{
	const char *o = getenv(name);
	char *old = o ? strdup(o) : NULL;
	struct rcx_ctx *c = SENTINEL(struct rcx_ctx);
	int ret;

	setenv(name, val, 1);
	ret = rcx_ctx_create(NULL, &c);
	env_restore(name, old);
	free(old);
	if (ret != want)
		fprintf(stderr, "\n    %s=%s: %d (%s), want %d\n", name, val,
			ret, rcx_strerror(ret), want);
	CU_ASSERT_EQUAL(ret, want);
	CU_ASSERT_PTR_EQUAL(c, SENTINEL(struct rcx_ctx));
	if (!ret && c != SENTINEL(struct rcx_ctx))
		rcx_ctx_destroy(c);
}

static void test_ctx_env(void)
{
	struct rcx_ctx *c = NULL;

	env_case("RCX_EAGER_SIZE", "abc", -EINVAL);
	env_case("RCX_CONNECT", "sometimes", -EINVAL);
	env_case("RCX_EAGER_SIZE", "12abc", -EINVAL);
	env_case("RCX_EAGER_SIZE", "-1", -EINVAL);
	env_case("RCX_EAGER_SIZE", "2097152", -EINVAL); /* > 1 MiB */
	env_case("RCX_EAGER_SIZE", "99999999999999999999999", -EINVAL);
	env_case("RCX_QP_RETRY", "7", -EINVAL);
	env_case("RCX_QP_TIMEOUT", "0", -EINVAL);
	env_case("RCX_QP_TIMEOUT", "32", -EINVAL);
	env_case("RCX_RNR_RETRY", "8", -EINVAL);
	env_case("RCX_RX_DEPTH", "3", -EINVAL);
	env_case("RCX_TX_DEPTH", "16385", -EINVAL);
	env_case("RCX_INLINE", "1025", -EINVAL);
	env_case("RCX_SPIN_US", "1.5", -EINVAL);
	env_case("RCX_CONNECT_TIMEOUT_MS", "99", -EINVAL);
	env_case("RCX_MR_CACHE", "2", -EINVAL);
	env_case("RCX_PROVIDER", "no-such-provider", -EINVAL);
	env_case("RCX_DEVICE", "no_such_device9", -ENODEV);
	env_case("RCX_PROGRESS_CPUS", "5-2", -EINVAL); /* reversed */
	env_case("RCX_PORT", "65536", -EINVAL);
	env_case("RCX_PORT", "port", -EINVAL);
	env_case("RCX_YIELD", "sometimes", -EINVAL);

	/* the environment is back: a context can be made again */
	CU_ASSERT_EQUAL(rcx_ctx_create(NULL, &c), 0);
	if (c)
		CU_ASSERT_EQUAL(rcx_ctx_destroy(c), 0);
	/* the edges of the ranges are valid */
	c = NULL;
	setenv("RCX_EAGER_SIZE", "0", 1);
	setenv("RCX_QP_RETRY", "6", 1);
	CU_ASSERT_EQUAL(rcx_ctx_create(NULL, &c), 0);
	unsetenv("RCX_EAGER_SIZE");
	unsetenv("RCX_QP_RETRY");
	if (c)
		CU_ASSERT_EQUAL(rcx_ctx_destroy(c), 0);
}

/* ctx->yield of a context made with RCX_YIELD y and RCX_LOCAL_SIZE n */
static int yield_of(const char *y, const char *n)
{
	const char *o = getenv("RCX_LOCAL_SIZE");
	char *old = o ? strdup(o) : NULL;
	struct rcx_ctx *c = NULL;
	int ret = -1;

	setenv("RCX_YIELD", y, 1);
	if (n)
		setenv("RCX_LOCAL_SIZE", n, 1);
	else
		unsetenv("RCX_LOCAL_SIZE");
	if (rcx_ctx_create(NULL, &c) == 0) {
		ret = c->yield;
		rcx_ctx_destroy(c);
	}
	unsetenv("RCX_YIELD");
	env_restore("RCX_LOCAL_SIZE", old);
	free(old);
	return ret;
}

/* the cpus of this thread and of this process's parent (the launcher) */
static int node_cpus(cpu_set_t *set)
{
	cpu_set_t up;

	if (sched_getaffinity(0, sizeof(*set), set))
		return -1;
	if (!sched_getaffinity(getppid(), sizeof(up), &up))
		CPU_OR(set, set, &up);
	return CPU_COUNT(set);
}

/*
 * RCX_YIELD=auto: a wait yields when the launcher's ranks on this node
 * outnumber the cpus they may run on (this process's and its parent's,
 * the launcher's), not otherwise; always and never whatever the count; a
 * local size that is not a count is left out (auto then does not
 * yield). A rank bound to one cpu of its own (mpirun binds a rank to a
 * core) is not oversubscribed when its launcher has a cpu for each rank:
 * counted alone, its one cpu made every idle poll a yield.
 */
static void test_ctx_yield(void)
{
	cpu_set_t set, one;
	char many[32];
	int cpus, c;

	cpus = node_cpus(&set);
	CU_ASSERT_FATAL(cpus > 0);
	snprintf(many, sizeof(many), "%d", cpus + 1);
	CU_ASSERT_EQUAL(yield_of("auto", many), 1);
	CU_ASSERT_EQUAL(yield_of("auto", "1"), 0);
	CU_ASSERT_EQUAL(yield_of("auto", NULL), 0);
	CU_ASSERT_EQUAL(yield_of("auto", "four"), 0);
	CU_ASSERT_EQUAL(yield_of("always", "1"), 1);
	CU_ASSERT_EQUAL(yield_of("never", many), 0);
	/* bound to one cpu, as mpirun binds: 2 ranks */
	CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof(set), &set), 0);
	for (c = 0; !CPU_ISSET(c, &set); c++)
		;
	CPU_ZERO(&one);
	CPU_SET(c, &one);
	CU_ASSERT_EQUAL_FATAL(sched_setaffinity(0, sizeof(one), &one), 0);
	cpus = node_cpus(&one);
	printf("bound to cpu %d, with the launcher's %d cpus: ", c, cpus);
	CU_ASSERT_EQUAL(yield_of("auto", "2"), cpus < 2);
	CU_ASSERT_EQUAL(sched_setaffinity(0, sizeof(set), &set), 0);
}

static void test_ctx_lifecycle(void)
{
	struct rcx_ctx *c;
	int i, ret;

	for (i = 0; i < 20; i++) {
		c = NULL;
		ret = rcx_ctx_create(NULL, &c);
		CU_ASSERT_EQUAL_FATAL(ret, 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(c);
		CU_ASSERT(rcx_progress(c) >= 0);
		CU_ASSERT_EQUAL_FATAL(rcx_ctx_destroy(c), 0);
	}
	CU_ASSERT_EQUAL(rcx_ctx_destroy(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_ctx_destroy(JUNK(struct rcx_ctx)), -EINVAL);
	/* the suite's context was not disturbed */
	CU_ASSERT(roundtrip(1));
}

/* "shm:PID:N": this process's device number N */
static void check_shm_addr(const char *addr)
{
	int pid = 0, used = 0;
	unsigned int dn;

	CU_ASSERT_EQUAL(sscanf(addr, "shm:%d:%u%n", &pid, &dn, &used), 2);
	CU_ASSERT_EQUAL(pid, (int)getpid());
	CU_ASSERT_EQUAL(addr[used], 0);
}

/* "ip:port" (or "[ipv6]:port") */
static void check_ip_addr(const char *addr)
{
	unsigned char bin[16];
	const char *colon;
	unsigned long port;
	char host[64], *end;
	size_t n;

	colon = strrchr(addr, ':');
	CU_ASSERT_PTR_NOT_NULL_FATAL(colon);
	port = strtoul(colon + 1, &end, 10);
	CU_ASSERT(colon[1] >= '0' && colon[1] <= '9' && !*end && port > 0 &&
		  port <= 65535);
	n = (size_t)(colon - addr);
	CU_ASSERT_FATAL(n > 0 && n < sizeof(host));
	if (addr[0] == '[') {
		CU_ASSERT_EQUAL(addr[n - 1], ']');
		memcpy(host, addr + 1, n - 2);
		host[n - 2] = 0;
		CU_ASSERT_EQUAL(inet_pton(AF_INET6, host, bin), 1);
	} else {
		memcpy(host, addr, n);
		host[n] = 0;
		CU_ASSERT_EQUAL(inet_pton(AF_INET, host, bin), 1);
	}
}

/*
 * "auto:NODE;SHM;VERBS": NODE 16 hex digits, a shm address, and the
 * verbs one when the context has an RDMA device (the device's name is
 * "shm" when it has none).
 */
static void check_auto_addr(const char *addr, const char *dev)
{
	char node[17], sa[64], va[80];
	int used = 0;

	CU_ASSERT_EQUAL_FATAL(
		sscanf(addr, "auto:%16[0-9a-f];%63[^;];%n", node, sa, &used),
		2);
	CU_ASSERT_EQUAL(strlen(node), 16);
	check_shm_addr(sa);
	CU_ASSERT_FATAL(strlen(addr + used) < sizeof(va));
	strcpy(va, addr + used);
	if (!strcmp(dev, "shm")) {
		CU_ASSERT_STRING_EQUAL(va, "");
	} else {
		check_ip_addr(va);
	}
}

static void test_ctx_names(void)
{
	const char *req = getenv("RCX_REQUIRE_DEVICE");
	const char *prov = tu_provider(), *rdev = getenv("RCX_DEVICE");
	bool shm = !strcmp(prov, "shm");
	bool autop = !strcmp(prov, "auto");
	char name[64], addr[RCX__ADDR_LEN], buf[8];
	size_t n;

	CU_ASSERT_EQUAL_FATAL(rcx_ctx_device(ctx, name, sizeof(name)), 0);
	n = strlen(name);
	CU_ASSERT(n > 0);
	/* under Soft-RoCE the device is the rxe one */
	if (shm || (autop && rdev && !strcmp(rdev, "shm"))) {
		CU_ASSERT_STRING_EQUAL(name, "shm");
	} else if (req && *req && strcmp(req, "0")) {
		CU_ASSERT_STRING_EQUAL(name, "rxe0");
	}
	CU_ASSERT_EQUAL(rcx_ctx_device(NULL, name, sizeof(name)), -EINVAL);
	CU_ASSERT_EQUAL(rcx_ctx_device(ctx, NULL, sizeof(name)), -EINVAL);
	/* too small, even by one (no room for the NUL): nothing written */
	memset(buf, 'X', sizeof(buf));
	CU_ASSERT_EQUAL(rcx_ctx_device(ctx, buf, 2), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(rcx_ctx_device(ctx, buf, 0), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(memcmp(buf, "XXXXXXXX", 8), 0);
	memset(addr, 'X', sizeof(addr));
	CU_ASSERT_EQUAL(rcx_ctx_device(ctx, addr, n), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(addr[0], 'X');
	CU_ASSERT_EQUAL(rcx_ctx_device(ctx, addr, n + 1), 0);
	CU_ASSERT_STRING_EQUAL(addr, name);

	CU_ASSERT_EQUAL_FATAL(rcx_ctx_address(ctx, addr, sizeof(addr)), 0);
	if (shm)
		check_shm_addr(addr);
	else if (autop)
		check_auto_addr(addr, name);
	else
		check_ip_addr(addr);
	CU_ASSERT_EQUAL(rcx_ctx_address(NULL, addr, sizeof(addr)), -EINVAL);
	CU_ASSERT_EQUAL(rcx_ctx_address(ctx, NULL, sizeof(addr)), -EINVAL);
	memset(buf, 'X', sizeof(buf));
	CU_ASSERT_EQUAL(rcx_ctx_address(ctx, buf, 2), -ENAMETOOLONG);
	CU_ASSERT_EQUAL(memcmp(buf, "XXXXXXXX", 8), 0);
}

/* What fn(arg) writes to stderr, into buf (NUL-terminated). */
static void capture_stderr(void (*fn)(void *), void *arg, char *buf, size_t len)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t n = 0;

	CU_ASSERT_FATAL(f && saved >= 0);
	fflush(stderr);
	dup2(fileno(f), 2);
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
}

static void create_fails(void *want)
{
	struct rcx_ctx *c = SENTINEL(struct rcx_ctx);

	CU_ASSERT_EQUAL(rcx_ctx_create(NULL, &c), *(int *)want);
	CU_ASSERT_PTR_EQUAL(c, SENTINEL(struct rcx_ctx));
}

/*
 * A device asked for that is not there: -ENODEV, and a line naming it
 * and the devices the provider has (ours among them).
 */
static void test_ctx_device_missing(void)
{
	const char *o = getenv("RCX_DEVICE");
	char *old = o ? strdup(o) : NULL, name[64], log[4096];
	int want = -ENODEV;

	CU_ASSERT_EQUAL_FATAL(rcx_ctx_device(ctx, name, sizeof(name)), 0);
	setenv("RCX_DEVICE", "no_such_device9", 1);
	capture_stderr(create_fails, &want, log, sizeof(log));
	env_restore("RCX_DEVICE", old);
	free(old);
	if (!strstr(log, "no_such_device9") || !strstr(log, name))
		fprintf(stderr, "\n    logged: %s", log);
	CU_ASSERT_PTR_NOT_NULL(strstr(log, "RCX_DEVICE"));
	CU_ASSERT_PTR_NOT_NULL(strstr(log, "no_such_device9"));
	CU_ASSERT_PTR_NOT_NULL(strstr(log, name));
}

/* The port of an "ip:port" address at the end of addr (after ';'), or 0. */
static unsigned long ip_port(const char *addr)
{
	const char *semi = strrchr(addr, ';'), *colon;

	if (semi)
		addr = semi + 1;
	colon = strrchr(addr, ':');
	if (!*addr || !strncmp(addr, "shm:", 4) || !colon)
		return 0;
	return strtoul(colon + 1, NULL, 10);
}

/*
 * RCX_PORT: the context's RDMA listener takes that port (a second
 * context cannot: -EADDRINUSE, and a line naming it); shared memory has
 * no port and ignores it. The port is one just given back by a context
 * that took any free one.
 */
static void test_ctx_port(void)
{
	struct rcx_ctx *a = NULL, *b = NULL;
	char addr[RCX__ADDR_LEN], val[24], log[4096];
	unsigned long port;
	int want = -EADDRINUSE;

	CU_ASSERT_EQUAL_FATAL(rcx_ctx_create(NULL, &a), 0);
	CU_ASSERT_EQUAL_FATAL(rcx_ctx_address(a, addr, sizeof(addr)), 0);
	port = ip_port(addr);
	CU_ASSERT_EQUAL(rcx_ctx_destroy(a), 0);
	if (!port) {
		/* no RDMA listener: the variable is taken and changes nothing */
		setenv("RCX_PORT", "18515", 1);
		CU_ASSERT_EQUAL(rcx_ctx_create(NULL, &a), 0);
		unsetenv("RCX_PORT");
		if (a) {
			CU_ASSERT_EQUAL(rcx_ctx_address(a, addr, sizeof(addr)),
					0);
			CU_ASSERT_EQUAL(ip_port(addr), 0);
			CU_ASSERT_EQUAL(rcx_ctx_destroy(a), 0);
		}
		return;
	}
	printf("\n    RDMA listener: RCX_PORT=%lu ", port);
	snprintf(val, sizeof(val), "%lu", port);
	setenv("RCX_PORT", val, 1);
	CU_ASSERT_EQUAL(rcx_ctx_create(NULL, &b), 0);
	if (b) {
		CU_ASSERT_EQUAL(rcx_ctx_address(b, addr, sizeof(addr)), 0);
		CU_ASSERT_EQUAL(ip_port(addr), port);
		capture_stderr(create_fails, &want, log, sizeof(log));
		CU_ASSERT_PTR_NOT_NULL(strstr(log, "RCX_PORT"));
		CU_ASSERT_PTR_NOT_NULL(strstr(log, val));
		CU_ASSERT_EQUAL(rcx_ctx_destroy(b), 0);
	}
	unsetenv("RCX_PORT");
}

static void test_ctx_progress(void)
{
	long long t0, dt = 0;
	int fd, ret = 0, i;

	CU_ASSERT_EQUAL(rcx_progress(NULL), -EINVAL);
	CU_ASSERT(rcx_progress(ctx) >= 0);
	CU_ASSERT_EQUAL(rcx_ctx_event_fd(NULL), -EINVAL);
	fd = rcx_ctx_event_fd(ctx);
	CU_ASSERT(fd >= 0);
	CU_ASSERT_EQUAL(rcx_ctx_event_fd(ctx), fd);
	CU_ASSERT_EQUAL(rcx_ctx_arm(NULL), -EINVAL);
	ret = rcx_ctx_arm(ctx);
	CU_ASSERT(ret == 0 || ret == -EAGAIN);
	CU_ASSERT_EQUAL(rcx_ctx_wait(NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(rcx_ctx_wait(ctx, -2), -EINVAL);
	CU_ASSERT_EQUAL(rcx_ctx_wait(ctx, INT_MIN), -EINVAL);
	/* nothing in flight: a timed wait times out, after the time */
	for (i = 0; i < 10; i++) {
		t0 = tu_now_ms();
		ret = rcx_ctx_wait(ctx, 100);
		dt = tu_now_ms() - t0;
		if (ret <= 0)
			break;
	}
	CU_ASSERT_EQUAL(ret, -ETIMEDOUT);
	CU_ASSERT(dt >= 95 && dt < 3000);
	CU_ASSERT(roundtrip(2));
}

/* ---- stats.h */

/* A file's text (at most len - 1 bytes), "" when it cannot be read. */
void api_read_text(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = 0;
}

static void test_stats_args(void)
{
	union {
		struct rcx_stats st;
		unsigned char b[sizeof(struct rcx_stats) + 64];
	} u;
	struct rcx_stats st, st2;
	char path[64], text[1024];
	size_t i, part = offsetof(struct rcx_stats, eager_tx_bytes);

	/* bad input: -EINVAL, nothing written, a line naming the value */
	snprintf(path, sizeof(path), "/tmp/rcx-test-stats-log.%d",
		 (int)getpid());
	unlink(path);
	CU_ASSERT_EQUAL_FATAL(rcx__log_setup("warn", path), 0);
	CU_ASSERT_EQUAL(rcx_ctx_stats(NULL, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_ctx_stats(JUNK(struct rcx_ctx), &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_ctx_stats(ctx, NULL), -EINVAL);
	memset(&u, 0xab, sizeof(u));
	u.st.size = 7;
	CU_ASSERT_EQUAL(rcx_ctx_stats(ctx, &u.st), -EINVAL);
	CU_ASSERT_EQUAL(u.st.size, 7);
	for (i = sizeof(u.st.size); i < sizeof(u); i++)
		if (u.b[i] != 0xab)
			break;
	CU_ASSERT_EQUAL(i, sizeof(u));
	rcx__log_setup("warn", "");
	api_read_text(path, text, sizeof(text));
	unlink(path);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "stats->size 7 is too small"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "stats is NULL"));

	/* this header's size: all of it, and the library's version */
	memset(&st, 0xab, sizeof(st));
	st.size = sizeof(st);
	CU_ASSERT_EQUAL(rcx_ctx_stats(ctx, &st), 0);
	CU_ASSERT_EQUAL(st.size, sizeof(st));
	CU_ASSERT_EQUAL(st.version, RCX_STATS_VERSION);
	CU_ASSERT(st.cont_run_thread != 0xababababababababull);
	/* an older, shorter struct: what it has, not a byte past it */
	memset(&u, 0xab, sizeof(u));
	u.st.size = (uint32_t)part;
	CU_ASSERT_EQUAL(rcx_ctx_stats(ctx, &u.st), 0);
	CU_ASSERT_EQUAL(u.st.size, part);
	CU_ASSERT_EQUAL(u.st.version, RCX_STATS_VERSION);
	CU_ASSERT_EQUAL(u.st.eager_tx_msgs, st.eager_tx_msgs);
	for (i = part; i < sizeof(u); i++)
		if (u.b[i] != 0xab)
			break;
	CU_ASSERT_EQUAL(i, sizeof(u));
	/* a newer, longer one: ours filled, its tail untouched */
	memset(&u, 0xab, sizeof(u));
	u.st.size = sizeof(u);
	CU_ASSERT_EQUAL(rcx_ctx_stats(ctx, &u.st), 0);
	CU_ASSERT_EQUAL(u.st.size, sizeof(u));
	for (i = sizeof(st); i < sizeof(u); i++)
		if (u.b[i] != 0xab)
			break;
	CU_ASSERT_EQUAL(i, sizeof(u));
	/* a progress pass that finds nothing is an empty poll */
	CU_ASSERT_EQUAL(rcx_progress(ctx), 0);
	st2.size = sizeof(st2);
	CU_ASSERT_EQUAL(rcx_ctx_stats(ctx, &st2), 0);
	CU_ASSERT(st2.empty_polls > st.empty_polls);
}

/* RCX_STATS=1 with RCX_STATS_FILE: the counters in the file at destroy */
static void test_stats_file(void)
{
	const char *old = getenv("RCX_STATS"), *oldf = getenv("RCX_STATS_FILE");
	char *so = old ? strdup(old) : NULL, *sf = oldf ? strdup(oldf) : NULL;
	char path[64], text[4096], want[64];
	struct rcx_ctx *c = NULL;

	snprintf(path, sizeof(path), "/tmp/rcx-test-stats.%d", (int)getpid());
	unlink(path);
	setenv("RCX_STATS", "1", 1);
	setenv("RCX_STATS_FILE", "/tmp/rcx-test-stats.%p", 1);
	CU_ASSERT_EQUAL_FATAL(rcx_ctx_create(NULL, &c), 0);
	CU_ASSERT(rcx_progress(c) >= 0);
	CU_ASSERT_EQUAL(rcx_ctx_destroy(c), 0);
	env_restore("RCX_STATS", so);
	env_restore("RCX_STATS_FILE", sf);
	free(so);
	free(sf);
	api_read_text(path, text, sizeof(text));
	unlink(path);
	snprintf(want, sizeof(want), "rcx stats: pid %d ", (int)getpid());
	CU_ASSERT_PTR_NOT_NULL(strstr(text, want));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "rcx stats: eager_tx_msgs 0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "rcx stats: order_fenced 0\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "rcx stats: empty_polls "));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "rcx stats: cont_run_thread 0\n"));
	/* without RCX_STATS nothing is printed */
	CU_ASSERT_EQUAL_FATAL(rcx_ctx_create(NULL, &c), 0);
	CU_ASSERT_EQUAL(rcx_ctx_destroy(c), 0);
	CU_ASSERT_EQUAL(access(path, F_OK), -1);
}

/* ---- group.h */

static void test_group_args(void)
{
	struct rcx_group *g = SENTINEL(struct rcx_group), *g2 = NULL;
	int in = 0x1234567, out[2] = { -1, -1 };

	CU_ASSERT_EQUAL(rcx_group_world(NULL, &g), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_world(ctx, NULL), -EINVAL);
	CU_ASSERT_PTR_EQUAL(g, SENTINEL(struct rcx_group));

	/* the same group again, reference counted */
	CU_ASSERT_EQUAL_FATAL(rcx_group_world(ctx, &g2), 0);
	CU_ASSERT_PTR_EQUAL(g2, world);
	CU_ASSERT_EQUAL(rcx_group_free(&g2), 0);
	CU_ASSERT_PTR_NULL(g2);
	CU_ASSERT_EQUAL(rcx_group_rank(world), 0);
	CU_ASSERT_EQUAL(rcx_group_size(world), 1);
	CU_ASSERT_EQUAL(rcx_group_barrier(world), 0);

	CU_ASSERT_EQUAL(rcx_group_rank(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_size(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_rank(JUNK(struct rcx_group)), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_size(JUNK(struct rcx_group)), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_barrier(NULL), -EINVAL);

	CU_ASSERT_EQUAL(rcx_group_allgather(NULL, &in, sizeof(in), out),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_group_allgather(world, NULL, sizeof(in), out),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_group_allgather(world, &in, sizeof(in), NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(out[0], -1);
	CU_ASSERT_EQUAL(rcx_group_allgather(world, &in, sizeof(in), out), 0);
	CU_ASSERT_EQUAL(out[0], in);
	CU_ASSERT_EQUAL(out[1], -1);
	CU_ASSERT_EQUAL(rcx_group_allgather(world, NULL, 0, NULL), 0);

	CU_ASSERT_EQUAL(rcx_group_free(NULL), -EINVAL);
	g = NULL;
	CU_ASSERT_EQUAL(rcx_group_free(&g), -EINVAL);

	g = SENTINEL(struct rcx_group);
	CU_ASSERT_EQUAL(rcx_group_connect(NULL, "10.0.0.1:7000", 100, &g),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_group_connect(ctx, NULL, 100, &g), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_connect(ctx, "", 100, &g), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_connect(ctx, "not-an-address", 100, &g),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_group_connect(ctx, "[::1", 100, &g), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_connect(ctx, "10.0.0.1:7000", 100, NULL),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_group_accept(NULL, 100, &g), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_accept(ctx, 100, NULL), -EINVAL);
	CU_ASSERT_PTR_EQUAL(g, SENTINEL(struct rcx_group));
	/* nobody connects */
	CU_ASSERT_EQUAL(rcx_group_accept(ctx, 100, &g), -ETIMEDOUT);
	CU_ASSERT_PTR_EQUAL(g, SENTINEL(struct rcx_group));

	/* the world still works */
	CU_ASSERT_EQUAL(rcx_group_rank(world), 0);
	CU_ASSERT(roundtrip(3));
}

/*
 * A timeout below -1 (-1 is no limit) is refused before anything starts,
 * as rcx_ctx_wait does.
 */
static void test_group_timeout(void)
{
	struct rcx_group *g = SENTINEL(struct rcx_group);
	char addr[RCX__ADDR_LEN];

	CU_ASSERT_EQUAL_FATAL(rcx_ctx_address(ctx, addr, sizeof(addr)), 0);
	CU_ASSERT_EQUAL(rcx_group_connect(ctx, addr, -2, &g), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_connect(ctx, addr, INT_MIN, &g), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_accept(ctx, -2, &g), -EINVAL);
	CU_ASSERT_EQUAL(rcx_group_accept(ctx, INT_MIN, &g), -EINVAL);
	CU_ASSERT_PTR_EQUAL(g, SENTINEL(struct rcx_group));
	CU_ASSERT_EQUAL(rcx_ctx_wait(ctx, -2), -EINVAL);
	CU_ASSERT(roundtrip(6));
}

/*
 * An info handle that is not one (never made, or freed: its magic is
 * gone) is refused by every call that takes an info, not taken for none.
 */
static void test_info_junk(void)
{
	struct rcx_info *bad = JUNK(struct rcx_info);
	struct rcx_req *cr = SENTINEL(struct rcx_req);
	struct rcx_win *w = SENTINEL(struct rcx_win);
	uint64_t mem[8];
	void *base = NULL;

	CU_ASSERT_EQUAL(rcx_continue_init(ctx, bad, &cr), -EINVAL);
	CU_ASSERT_PTR_EQUAL(cr, SENTINEL(struct rcx_req));
	CU_ASSERT_EQUAL(rcx_win_create(world, mem, sizeof(mem), 8, bad, &w),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_win_allocate(world, 64, 8, bad, &base, &w),
			-EINVAL);
	CU_ASSERT_PTR_EQUAL(w, SENTINEL(struct rcx_win));
	CU_ASSERT_PTR_NULL(base);
	/* with none, the same calls work */
	CU_ASSERT_EQUAL(rcx_continue_init(ctx, NULL, &cr), 0);
	CU_ASSERT_EQUAL(rcx_req_free(&cr), 0);
	CU_ASSERT(roundtrip(7));
}

/* ---- p2p.h */

static void test_p2p_send_args(void)
{
	static const int bad_rank[] = { 1, -3, RCX_ANY_SOURCE, INT_MAX,
					INT_MIN };
	static const int bad_tag[] = { -2, RCX_ANY_TAG, RCX_TAG_UB + 1, INT_MAX,
				       INT_MIN };
	char buf[16] = "payload";
	struct rcx_req *r = SENTINEL(struct rcx_req);
	size_t i;

	CU_ASSERT_EQUAL(rcx_isend(NULL, buf, 8, 0, 1, &r), -EINVAL);
	CU_ASSERT_EQUAL(rcx_send(NULL, buf, 8, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(rcx_send_init(NULL, buf, 8, 0, 1, &r), -EINVAL);
	CU_ASSERT_EQUAL(rcx_isend(world, buf, 8, 0, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_send_init(world, buf, 8, 0, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_isend(world, NULL, 8, 0, 1, &r), -EINVAL);
	CU_ASSERT_EQUAL(rcx_send(world, NULL, 8, 0, 1), -EINVAL);
	CU_ASSERT_EQUAL(rcx_send_init(world, NULL, 8, 0, 1, &r), -EINVAL);
	for (i = 0; i < sizeof(bad_rank) / sizeof(bad_rank[0]); i++) {
		CU_ASSERT_EQUAL(rcx_isend(world, buf, 8, bad_rank[i], 1, &r),
				-EINVAL);
		CU_ASSERT_EQUAL(rcx_send(world, buf, 8, bad_rank[i], 1),
				-EINVAL);
		CU_ASSERT_EQUAL(
			rcx_send_init(world, buf, 8, bad_rank[i], 1, &r),
			-EINVAL);
	}
	for (i = 0; i < sizeof(bad_tag) / sizeof(bad_tag[0]); i++) {
		CU_ASSERT_EQUAL(rcx_isend(world, buf, 8, 0, bad_tag[i], &r),
				-EINVAL);
		CU_ASSERT_EQUAL(rcx_send(world, buf, 8, 0, bad_tag[i]),
				-EINVAL);
		CU_ASSERT_EQUAL(rcx_send_init(world, buf, 8, 0, bad_tag[i], &r),
				-EINVAL);
	}
	CU_ASSERT_PTR_EQUAL(r, SENTINEL(struct rcx_req));
	/* nothing was sent */
	CU_ASSERT(nothing_queued());
	/* the edges are valid: tag 0 and RCX_TAG_UB, a NULL zero-byte send */
	CU_ASSERT(roundtrip(0));
	CU_ASSERT(roundtrip(RCX_TAG_UB));
	CU_ASSERT_EQUAL(rcx_send(world, NULL, 0, 0, 5), 0);
	CU_ASSERT_EQUAL(rcx_recv(world, NULL, 0, 0, 5, RCX_STATUS_IGNORE), 0);
}

static void test_p2p_recv_args(void)
{
	static const int bad_rank[] = { 1, -3, INT_MAX, INT_MIN };
	static const int bad_tag[] = { -2, RCX_TAG_UB + 1, INT_MAX, INT_MIN };
	char buf[16];
	struct rcx_req *r = SENTINEL(struct rcx_req);
	struct rcx_status st;
	size_t i;

	status_junk(&st);
	CU_ASSERT_EQUAL(rcx_irecv(NULL, buf, 8, 0, 1, &r), -EINVAL);
	CU_ASSERT_EQUAL(rcx_recv(NULL, buf, 8, 0, 1, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_recv_init(NULL, buf, 8, 0, 1, &r), -EINVAL);
	/* valid but for the missing handle or buffer: tag 1 from self */
	CU_ASSERT_EQUAL(rcx_irecv(world, buf, 8, 0, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_recv_init(world, buf, 8, 0, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_irecv(world, NULL, 8, 0, 1, &r), -EINVAL);
	CU_ASSERT_EQUAL(rcx_recv(world, NULL, 8, 0, 1, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_recv_init(world, NULL, 8, 0, 1, &r), -EINVAL);
	for (i = 0; i < sizeof(bad_rank) / sizeof(bad_rank[0]); i++) {
		CU_ASSERT_EQUAL(rcx_irecv(world, buf, 8, bad_rank[i], 1, &r),
				-EINVAL);
		CU_ASSERT_EQUAL(rcx_recv(world, buf, 8, bad_rank[i], 1, &st),
				-EINVAL);
		CU_ASSERT_EQUAL(
			rcx_recv_init(world, buf, 8, bad_rank[i], 1, &r),
			-EINVAL);
	}
	for (i = 0; i < sizeof(bad_tag) / sizeof(bad_tag[0]); i++) {
		CU_ASSERT_EQUAL(rcx_irecv(world, buf, 8, 0, bad_tag[i], &r),
				-EINVAL);
		CU_ASSERT_EQUAL(rcx_recv(world, buf, 8, 0, bad_tag[i], &st),
				-EINVAL);
		CU_ASSERT_EQUAL(rcx_recv_init(world, buf, 8, 0, bad_tag[i], &r),
				-EINVAL);
	}
	CU_ASSERT_PTR_EQUAL(r, SENTINEL(struct rcx_req));
	/* no receive was posted: a message with tag 1 is still ours */
	CU_ASSERT(roundtrip(1));
	/* wildcards are valid on receives */
	CU_ASSERT_EQUAL(rcx_send(world, "w", 2, 0, 6), 0);
	CU_ASSERT_EQUAL(rcx_recv(world, buf, sizeof(buf), RCX_ANY_SOURCE,
				 RCX_ANY_TAG, &st),
			0);
	CU_ASSERT(st.source == 0 && st.tag == 6 && st.count == 2);
}

/* ---- req.h */

static void test_req_args(void)
{
	struct rcx_req *bad = JUNK(struct rcx_req), *nul = NULL;
	struct rcx_req *two[2] = { NULL, NULL }, *r = NULL, *p = NULL;
	struct rcx_status st, sts[2];
	int flag, idx;
	char buf[8];

	CU_ASSERT_EQUAL(rcx_start(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_start(bad), -EINVAL);
	CU_ASSERT_EQUAL(rcx_startall(-1, two), -EINVAL);
	CU_ASSERT_EQUAL(rcx_startall(1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_startall(1, two), -EINVAL); /* NULL entry */
	CU_ASSERT_EQUAL(rcx_startall(1, &bad), -EINVAL);

	flag = 7;
	CU_ASSERT_EQUAL(rcx_test(NULL, &flag, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_test(&nul, NULL, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_test(&bad, &flag, &st), -EINVAL);
	CU_ASSERT_EQUAL(flag, 7);
	CU_ASSERT_PTR_EQUAL(bad, JUNK(struct rcx_req));
	CU_ASSERT_EQUAL(rcx_wait(NULL, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_wait(&bad, &st), -EINVAL);

	/* a NULL handle is complete with an empty status */
	status_junk(&st);
	CU_ASSERT_EQUAL(rcx_test(&nul, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT(status_empty(&st));
	status_junk(&st);
	CU_ASSERT_EQUAL(rcx_wait(&nul, &st), 0);
	CU_ASSERT(status_empty(&st));
	CU_ASSERT_EQUAL(rcx_wait(&nul, RCX_STATUS_IGNORE), 0);

	CU_ASSERT_EQUAL(rcx_testall(-1, two, &flag, sts), -EINVAL);
	CU_ASSERT_EQUAL(rcx_testall(1, NULL, &flag, sts), -EINVAL);
	CU_ASSERT_EQUAL(rcx_testall(2, two, NULL, sts), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitall(-1, two, sts), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitall(1, NULL, sts), -EINVAL);
	CU_ASSERT_EQUAL(rcx_testany(-1, two, &idx, &flag, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_testany(1, NULL, &idx, &flag, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_testany(2, two, NULL, &flag, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_testany(2, two, &idx, NULL, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitany(-1, two, &idx, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitany(1, NULL, &idx, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitany(2, two, NULL, &st), -EINVAL);

	/* all NULL: complete, empty, index undefined */
	status_junk(&sts[0]);
	status_junk(&sts[1]);
	flag = 0;
	CU_ASSERT_EQUAL(rcx_testall(2, two, &flag, sts), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT(status_empty(&sts[0]) && status_empty(&sts[1]));
	status_junk(&sts[1]);
	CU_ASSERT_EQUAL(rcx_waitall(2, two, sts), 0);
	CU_ASSERT(status_empty(&sts[1]));
	idx = 5;
	flag = 0;
	CU_ASSERT_EQUAL(rcx_testany(2, two, &idx, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT_EQUAL(idx, RCX_UNDEFINED);
	idx = 5;
	status_junk(&st);
	CU_ASSERT_EQUAL(rcx_waitany(2, two, &idx, &st), 0);
	CU_ASSERT_EQUAL(idx, RCX_UNDEFINED);
	CU_ASSERT(status_empty(&st));

	/* a dead entry fails the whole call and leaves the live one alone */
	CU_ASSERT_EQUAL_FATAL(rcx_irecv(world, buf, sizeof(buf), 0, 30, &r), 0);
	two[0] = r;
	two[1] = bad;
	flag = 7;
	CU_ASSERT_EQUAL(rcx_testall(2, two, &flag, sts), -EINVAL);
	CU_ASSERT_EQUAL(flag, 7);
	CU_ASSERT_EQUAL(rcx_waitall(2, two, sts), -EINVAL);
	CU_ASSERT_EQUAL(rcx_testany(2, two, &idx, &flag, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitany(2, two, &idx, &st), -EINVAL);
	CU_ASSERT_PTR_EQUAL(two[0], r);
	CU_ASSERT_EQUAL(rcx_test(&r, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 0);
	CU_ASSERT_EQUAL(rcx_send(world, "abc", 4, 0, 30), 0);
	CU_ASSERT(test_until(&r, &st));
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT(st.tag == 30 && st.count == 4 && !strcmp(buf, "abc"));

	/* startall with a dead entry starts none of the others */
	CU_ASSERT_EQUAL_FATAL(rcx_recv_init(world, buf, sizeof(buf), 0, 31, &p),
			      0);
	two[0] = p;
	two[1] = bad;
	CU_ASSERT_EQUAL(rcx_startall(2, two), -EINVAL);
	status_junk(&st);
	CU_ASSERT_EQUAL(rcx_test(&p, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 1); /* inactive */
	CU_ASSERT(status_empty(&st));
	CU_ASSERT_EQUAL(rcx_req_free(&p), 0);

	/* req_free */
	CU_ASSERT_EQUAL(rcx_req_free(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_req_free(&nul), -EINVAL);
	CU_ASSERT_EQUAL(rcx_req_free(&bad), -EINVAL);
	CU_ASSERT_PTR_EQUAL(bad, JUNK(struct rcx_req));
	CU_ASSERT(roundtrip(4));
}

static void test_req_misuse(void)
{
	struct rcx_req *p = NULL, *q = NULL, *r = NULL, *h, *stale, *two[2];
	struct rcx_status st;
	int v = 0, w = 0, x = 0, flag;
	char buf[16];

	/* start of an active persistent request: -EBUSY, nothing posted */
	CU_ASSERT_EQUAL_FATAL(rcx_recv_init(world, &v, sizeof(v), 0, 20, &p),
			      0);
	CU_ASSERT_EQUAL(rcx_start(p), 0);
	CU_ASSERT_EQUAL(rcx_start(p), -EBUSY);
	CU_ASSERT_EQUAL(rcx_startall(1, &p), -EBUSY);
	h = p;
	CU_ASSERT_EQUAL(rcx_req_free(&h), -EBUSY);
	CU_ASSERT_PTR_EQUAL(h, p);
	CU_ASSERT_EQUAL(rcx_test(&h, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 0);
	w = 11;
	CU_ASSERT_EQUAL(rcx_send(world, &w, sizeof(w), 0, 20), 0);
	CU_ASSERT(test_until(&p, &st));
	CU_ASSERT_PTR_EQUAL(p, h); /* persistent: the handle stays */
	CU_ASSERT(st.source == 0 && st.tag == 20 && st.count == sizeof(v) &&
		  st.error == 0);
	CU_ASSERT_EQUAL(v, 11);
	/* inactive now: complete, empty status */
	status_junk(&st);
	flag = 0;
	CU_ASSERT_EQUAL(rcx_test(&p, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT(status_empty(&st));
	/* a second receive posted by the refused start would take this */
	w = 12;
	CU_ASSERT_EQUAL(rcx_send(world, &w, sizeof(w), 0, 20), 0);
	CU_ASSERT_EQUAL(rcx_recv(world, &x, sizeof(x), 0, 20, &st), 0);
	CU_ASSERT_EQUAL(x, 12);
	CU_ASSERT_EQUAL(v, 11);

	/* start of a non-persistent request: -EOPNOTSUPP, still pending */
	CU_ASSERT_EQUAL_FATAL(rcx_irecv(world, buf, sizeof(buf), 0, 21, &r), 0);
	CU_ASSERT_EQUAL(rcx_start(r), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rcx_startall(1, &r), -EOPNOTSUPP);
	CU_ASSERT_EQUAL(rcx_test(&r, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 0);

	/* startall checks all first: on an error none is started */
	two[0] = p;
	two[1] = r;
	CU_ASSERT_EQUAL(rcx_startall(2, two), -EOPNOTSUPP);
	CU_ASSERT_EQUAL_FATAL(rcx_recv_init(world, &x, sizeof(x), 0, 22, &q),
			      0);
	CU_ASSERT_EQUAL(rcx_start(q), 0);
	two[1] = q;
	CU_ASSERT_EQUAL(rcx_startall(2, two), -EBUSY);
	/* p is still inactive: complete and empty, and it can start */
	status_junk(&st);
	CU_ASSERT_EQUAL(rcx_test(&p, &flag, &st), 0);
	CU_ASSERT_EQUAL(flag, 1);
	CU_ASSERT(status_empty(&st));
	CU_ASSERT_EQUAL(rcx_start(p), 0);

	/* finish all three */
	CU_ASSERT_EQUAL(rcx_send(world, "twenty-one", 11, 0, 21), 0);
	w = 22;
	CU_ASSERT_EQUAL(rcx_send(world, &w, sizeof(w), 0, 22), 0);
	w = 13;
	CU_ASSERT_EQUAL(rcx_send(world, &w, sizeof(w), 0, 20), 0);
	CU_ASSERT(test_until(&r, &st));
	CU_ASSERT(st.tag == 21 && !strcmp(buf, "twenty-one"));
	CU_ASSERT(test_until(&q, &st));
	CU_ASSERT(st.tag == 22 && x == 22);
	CU_ASSERT(test_until(&p, &st));
	CU_ASSERT(st.tag == 20 && v == 13);

	/* free, then free again through a stale copy: the request is dead */
	stale = p;
	CU_ASSERT_EQUAL(rcx_req_free(&p), 0);
	CU_ASSERT_PTR_NULL(p);
	CU_ASSERT_EQUAL(rcx_req_free(&stale), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(stale);
	CU_ASSERT_EQUAL(rcx_start(stale), -EINVAL);
	CU_ASSERT_EQUAL(rcx_test(&stale, &flag, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_wait(&stale, &st), -EINVAL);
	stale = q;
	CU_ASSERT_EQUAL(rcx_req_free(&q), 0);
	CU_ASSERT_EQUAL(rcx_req_free(&stale), -EINVAL);

	/* a completed non-persistent request is freed by test: stale too */
	CU_ASSERT_EQUAL(rcx_isend(world, "x", 2, 0, 23, &r), 0);
	stale = r;
	CU_ASSERT(test_until(&r, &st));
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL(rcx_req_free(&stale), -EINVAL);
	CU_ASSERT_EQUAL(rcx_recv(world, buf, sizeof(buf), 0, 23, &st), 0);

	/* freeing an active receive: it still completes into its buffer */
	memset(buf, 0, sizeof(buf));
	CU_ASSERT_EQUAL_FATAL(rcx_irecv(world, buf, sizeof(buf), 0, 24, &r), 0);
	CU_ASSERT_EQUAL(rcx_req_free(&r), 0);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT_EQUAL(rcx_send(world, "late", 5, 0, 24), 0);
	rcx_progress(ctx);
	CU_ASSERT_STRING_EQUAL(buf, "late");
	CU_ASSERT(nothing_queued());
	CU_ASSERT(roundtrip(5));
}

/* Every array call of req.h on reqs[0..n-1]: -EINVAL, none blocks. */
static void array_calls_refuse(int n, struct rcx_req **reqs)
{
	struct rcx_status sts[24], st;
	int flag = 7, idx = 5;

	CU_ASSERT_EQUAL(rcx_testall(n, reqs, &flag, sts), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitall(n, reqs, sts), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitall(n, reqs, RCX_STATUSES_IGNORE), -EINVAL);
	CU_ASSERT_EQUAL(rcx_testany(n, reqs, &idx, &flag, &st), -EINVAL);
	CU_ASSERT_EQUAL(rcx_waitany(n, reqs, &idx, &st), -EINVAL);
	CU_ASSERT_EQUAL(flag, 7);
	CU_ASSERT_EQUAL(idx, 5);
}

/*
 * The same request twice in one array call is refused with -EINVAL and
 * changes nothing: the request completes once afterwards and the pool
 * is intact. Pairs (compared) and a long array (the duplicates far
 * apart, NULLs repeated) for every call; startall too. A context of its
 * own: a double finish would corrupt its request pool.
 */
static void test_req_twice(void)
{
	struct rcx_req *r = NULL, *a = NULL, *b = NULL, *two[2], *many[24];
	struct rcx_ctx *c = NULL;
	struct rcx_group *w = NULL;
	struct rcx_status st;
	int i, flag, v[24] = { 0 };
	char buf[8] = "";

	CU_ASSERT_EQUAL_FATAL(rcx_ctx_create(NULL, &c), 0);
	CU_ASSERT_EQUAL_FATAL(rcx_group_world(c, &w), 0);
	/* a receive with its message there: finishing it frees it */
	CU_ASSERT_EQUAL_FATAL(rcx_send(w, "ab", 3, 0, 40), 0);
	CU_ASSERT_EQUAL_FATAL(rcx_irecv(w, buf, sizeof(buf), 0, 40, &r), 0);
	rcx_progress(c);
	two[0] = two[1] = r;
	flag = 7;
	CU_ASSERT_EQUAL_FATAL(rcx_testall(2, two, &flag, NULL), -EINVAL);
	array_calls_refuse(2, two);
	for (i = 0; i < 24; i++)
		many[i] = NULL;
	many[3] = many[20] = r;
	array_calls_refuse(24, many);
	CU_ASSERT(two[0] == r && two[1] == r && many[3] == r && many[20] == r);
	/* r is as it was: it completes once */
	CU_ASSERT_EQUAL(rcx_wait(&r, &st), 0);
	CU_ASSERT_PTR_NULL(r);
	CU_ASSERT(st.tag == 40 && st.count == 3 && !strcmp(buf, "ab"));
	/* the pool is intact: two receives are two requests */
	CU_ASSERT_EQUAL(rcx_irecv(w, &v[0], 4, 0, 41, &a), 0);
	CU_ASSERT_EQUAL(rcx_irecv(w, &v[1], 4, 0, 41, &b), 0);
	CU_ASSERT_PTR_NOT_EQUAL(a, b);
	CU_ASSERT_EQUAL(rcx_send(w, &i, 4, 0, 41), 0);
	CU_ASSERT_EQUAL(rcx_send(w, &i, 4, 0, 41), 0);
	two[0] = a;
	two[1] = b;
	CU_ASSERT_EQUAL(rcx_waitall(2, two, RCX_STATUSES_IGNORE), 0);

	/* startall: persistent receives, one of them twice, start none */
	for (i = 0; i < 20; i++)
		CU_ASSERT_EQUAL_FATAL(
			rcx_recv_init(w, &v[i], 4, 0, 50 + i, &many[i]), 0);
	two[0] = two[1] = many[0];
	CU_ASSERT_EQUAL(rcx_startall(2, two), -EINVAL);
	many[20] = many[5];
	CU_ASSERT_EQUAL(rcx_startall(21, many), -EINVAL);
	for (i = 0; i < 20; i++) {
		flag = 0;
		CU_ASSERT_EQUAL(rcx_test(&many[i], &flag, &st), 0);
		CU_ASSERT_EQUAL(flag, 1); /* inactive: not started */
	}
	/* twenty different ones, twice: nothing is left marked */
	for (int round = 0; round < 2; round++) {
		CU_ASSERT_EQUAL(rcx_startall(20, many), 0);
		for (i = 0; i < 20; i++)
			CU_ASSERT_EQUAL(rcx_send(w, &i, 4, 0, 50 + i), 0);
		CU_ASSERT_EQUAL(rcx_waitall(20, many, RCX_STATUSES_IGNORE), 0);
		for (i = 0; i < 20; i++)
			CU_ASSERT_EQUAL(v[i], i);
	}
	for (i = 0; i < 20; i++)
		CU_ASSERT_EQUAL(rcx_req_free(&many[i]), 0);
	CU_ASSERT_EQUAL(rcx_group_free(&w), 0);
	CU_ASSERT_EQUAL(rcx_ctx_destroy(c), 0);
}

/* ---- errors.h */

static void test_strerror_any(void)
{
	static const int codes[] = { INT_MIN, INT_MAX,	    -1,
				     1,	      RCX_ERR_BASE, -RCX_ERR_BASE };
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		CU_ASSERT_PTR_NOT_NULL(rcx_strerror(codes[i]));
	CU_ASSERT_PTR_NOT_NULL(
		strstr(rcx_strerror(RCX_ERR_TRUNCATE), "TRUNCATE"));
	CU_ASSERT_EQUAL(
		strncmp(rcx_strerror(-ENAMETOOLONG), "ENAMETOOLONG", 12), 0);
}

static const CU_TestInfo tests[] = {
	{ "ctx_create_args", test_ctx_create_args },
	{ "ctx_env", test_ctx_env },
	{ "ctx_yield", test_ctx_yield },
	{ "ctx_lifecycle", test_ctx_lifecycle },
	{ "ctx_names", test_ctx_names },
	{ "ctx_progress", test_ctx_progress },
	{ "ctx_device_missing", test_ctx_device_missing },
	{ "ctx_port", test_ctx_port },
	{ "group_args", test_group_args },
	{ "group_timeout", test_group_timeout },
	{ "info_junk", test_info_junk },
	{ "p2p_send_args", test_p2p_send_args },
	{ "p2p_recv_args", test_p2p_recv_args },
	{ "req_args", test_req_args },
	{ "req_misuse", test_req_misuse },
	{ "req_twice", test_req_twice },
	{ "strerror", test_strerror_any },
	{ "provider_per_peer", api_provider_per_peer },
	{ "launcher_nodes", api_launcher_nodes },
	{ "stats_args", test_stats_args },
	{ "stats_file", test_stats_file },
	{ "stats_counts", api_stats_counts },
	{ "trace_lines", api_trace_lines },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_api = {
	"api", TU_DEVICE, suite_init, suite_cleanup, tests,
};
