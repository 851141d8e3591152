/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's limits and what lies past them: more endpoints than one
 * completion queue holds (bound channels, deep point-to-point rings),
 * ring depths the provider cannot take, and connections that never come.
 * Whatever the limit, the answer is work done or a named error, never a
 * crash or a hang, and the context keeps working afterwards.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <rcx/rcx.h>
#include "lib/core/core.h"
#include "tu.h"
#include "tu_mp.h"

/* what a connection's send queue holds beyond the two rings (conn.c: the
 * windows' share, the probe, the mark of the unsignaled sends) */
#define CONN_SQ_EXTRA (RCX__WIN_SQ_DEPTH + 2)
#define PAIR_MSGS     64

/* ---- helpers of the single-process tests */

/* The limits a context of the provider under test gets. */
static int dev_limits(struct rcx_dev_info *info)
{
	struct rcx_ctx *ctx;
	int ret = rcx_ctx_create(NULL, &ctx);

	if (ret) {
		fprintf(stderr, "rcx_ctx_create: %s\n", rcx_strerror(ret));
		return ret;
	}
	*info = ctx->info;
	rcx_ctx_destroy(ctx);
	return 0;
}

/* send queue and completion entries one connection takes at these depths */
static unsigned long conn_sq(unsigned long tx, unsigned long rx)
{
	return tx + rx + CONN_SQ_EXTRA;
}

static bool depth_fits(const struct rcx_dev_info *info, unsigned long tx,
		       unsigned long rx)
{
	return conn_sq(tx, rx) <= info->max_qp_wr &&
	       conn_sq(tx, rx) + rx <= info->max_cqe;
}

struct env_save {
	const char *name;
	char *old;
};

static void env_set(struct env_save *e, const char *name, const char *val)
{
	const char *v = getenv(name);

	e->name = name;
	e->old = v ? strdup(v) : NULL;
	setenv(name, val, 1);
}

static void env_restore(struct env_save *e)
{
	if (e->old)
		setenv(e->name, e->old, 1);
	else
		unsetenv(e->name);
	free(e->old);
	e->old = NULL;
}

/* stderr into a file while a call runs: what the library logged */
struct capture {
	FILE *f;
	int saved;
	char text[512];
};

static void capture_begin(struct capture *c)
{
	fflush(stderr);
	c->f = tmpfile();
	c->saved = dup(STDERR_FILENO);
	if (c->f && c->saved >= 0)
		dup2(fileno(c->f), STDERR_FILENO);
}

static void capture_end(struct capture *c)
{
	size_t n = 0;

	fflush(stderr);
	if (c->saved >= 0) {
		dup2(c->saved, STDERR_FILENO);
		close(c->saved);
	}
	if (c->f) {
		rewind(c->f);
		n = fread(c->text, 1, sizeof(c->text) - 1, c->f);
		fclose(c->f);
	}
	c->text[n] = 0;
	fputs(c->text, stderr); /* still shown */
}

struct acceptor {
	struct rcx_ctx *ctx;
	int ret;
	int echoed;
};

/* The server of a pair: accept, then echo every message back. */
static void *accept_main(void *arg)
{
	struct acceptor *a = arg;
	struct rcx_group *g;
	uint64_t v;
	int i;

	a->ret = rcx_group_accept(a->ctx, 60000, &g);
	if (a->ret)
		return NULL;
	for (i = 0; i < PAIR_MSGS; i++) {
		a->ret = rcx_recv(g, &v, sizeof(v), 1, i, NULL);
		if (!a->ret)
			a->ret = rcx_send(g, &v, sizeof(v), 1, i);
		if (a->ret)
			break;
		a->echoed++;
	}
	rcx_group_free(&g);
	return NULL;
}

/*
 * Real work on ctx: connect to a second context of this process (its
 * accept and echo on a thread) and get PAIR_MSGS messages back intact.
 * Returns true when all came back.
 */
static bool pair_work(struct rcx_ctx *ctx)
{
	struct acceptor a = { 0 };
	struct rcx_group *g = NULL;
	char addr[128];
	pthread_t t;
	uint64_t v, back;
	int i, ret, ok = 0;

	ret = rcx_ctx_create(NULL, &a.ctx);
	CU_ASSERT_EQUAL(ret, 0);
	if (ret)
		return false;
	CU_ASSERT_EQUAL_FATAL(rcx_ctx_address(a.ctx, addr, sizeof(addr)), 0);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&t, NULL, accept_main, &a), 0);
	ret = rcx_group_connect(ctx, addr, 60000, &g);
	CU_ASSERT_EQUAL(ret, 0);
	for (i = 0; !ret && i < PAIR_MSGS; i++) {
		v = 0x5ca1ab1e00000000ull | (uint64_t)i;
		back = 0;
		ret = rcx_send(g, &v, sizeof(v), 0, i);
		if (!ret)
			ret = rcx_recv(g, &back, sizeof(back), 0, i, NULL);
		CU_ASSERT_EQUAL(ret, 0);
		CU_ASSERT_EQUAL(back, v);
		ok += !ret && back == v;
	}
	if (g)
		CU_ASSERT_EQUAL(rcx_group_free(&g), 0);
	pthread_join(t, NULL);
	CU_ASSERT_EQUAL(a.ret, 0);
	CU_ASSERT_EQUAL(a.echoed, PAIR_MSGS);
	rcx_ctx_destroy(a.ctx);
	return ok == PAIR_MSGS && a.echoed == PAIR_MSGS;
}

/*
 * Ring depths past what the provider's endpoints take (shm: a send queue
 * of 16,384) fail the context's creation with -EINVAL and a line naming
 * the variables and the limit; before, the context was made and every
 * connection failed (-EINVAL) while rcx_send hung. Depths that fit make a
 * context that connects and works, the largest one that fits included.
 */
static void test_depth_check(void)
{
	static const unsigned long rx_list[] = { 64, 4096 };
	struct rcx_dev_info info;
	struct env_save tx, rx, eager;
	struct capture cap;
	struct rcx_ctx *ctx;
	char num[32], lim[32];
	unsigned long edge;
	size_t i;
	int ret;

	CU_ASSERT_EQUAL_FATAL(dev_limits(&info), 0);
	printf("\n    %s: max_qp_wr %u, max_cqe %u\n", info.name,
	       info.max_qp_wr, info.max_cqe);
	/* the bounce buffers are tx_depth of these: keep them small */
	env_set(&eager, "RCX_EAGER_SIZE", "64");
	for (i = 0; i < sizeof(rx_list) / sizeof(rx_list[0]); i++) {
		snprintf(num, sizeof(num), "%lu", rx_list[i]);
		env_set(&rx, "RCX_RX_DEPTH", num);
		env_set(&tx, "RCX_TX_DEPTH", "16384");
		capture_begin(&cap);
		ret = rcx_ctx_create(NULL, &ctx);
		capture_end(&cap);
		printf("    RCX_TX_DEPTH=16384 RCX_RX_DEPTH=%lu: %s\n",
		       rx_list[i], rcx_strerror(ret));
		if (depth_fits(&info, 16384, rx_list[i])) {
			CU_ASSERT_EQUAL(ret, 0);
		} else {
			CU_ASSERT_EQUAL(ret, -EINVAL);
			CU_ASSERT_PTR_NOT_NULL(
				strstr(cap.text, "RCX_TX_DEPTH"));
			CU_ASSERT_PTR_NOT_NULL(
				strstr(cap.text, "RCX_RX_DEPTH"));
			snprintf(lim, sizeof(lim), "%u",
				 conn_sq(16384, rx_list[i]) > info.max_qp_wr
					 ? info.max_qp_wr
					 : info.max_cqe);
			CU_ASSERT_PTR_NOT_NULL(strstr(cap.text, lim));
		}
		if (!ret)
			rcx_ctx_destroy(ctx);
		env_restore(&tx);
		/* the deepest send ring that fits: it connects and works */
		edge = info.max_qp_wr - conn_sq(0, rx_list[i]);
		if (info.max_qp_wr > conn_sq(0, rx_list[i]) && edge >= 8 &&
		    edge <= 16384 && depth_fits(&info, edge, rx_list[i])) {
			snprintf(num, sizeof(num), "%lu", edge);
			env_set(&tx, "RCX_TX_DEPTH", num);
			ret = rcx_ctx_create(NULL, &ctx);
			printf("    RCX_TX_DEPTH=%lu RCX_RX_DEPTH=%lu: %s\n",
			       edge, rx_list[i], rcx_strerror(ret));
			CU_ASSERT_EQUAL(ret, 0);
			if (!ret) {
				CU_ASSERT(pair_work(ctx));
				rcx_ctx_destroy(ctx);
			}
			env_restore(&tx);
		}
		env_restore(&rx);
	}
	env_restore(&eager);
}

/*
 * own ("...shm:PID:DEV...", shm or auto) with another pid and device: a
 * shared-memory peer that is not there.
 */
static void shm_addr(const char *own, int pid, unsigned int dev, char *buf,
		     size_t len)
{
	const char *p = strstr(own, "shm:"), *rest;

	rest = strchr(p + 4, ':');
	rest = rest ? rest + 1 + strspn(rest + 1, "0123456789") : "";
	snprintf(buf, len, "%.*sshm:%d:%u%s", (int)(p - own), own, pid, dev,
		 rest);
}

/*
 * own ("a.b.c.d:port") with port 1, nobody listening there, or (other)
 * another host of the subnet, port 7000: nobody answers.
 */
static void ip_addr(const char *own, bool other, char *buf, size_t len)
{
	const char *colon = strrchr(own, ':'), *dot = strrchr(own, '.');
	int host;

	if (!colon || !dot || dot > colon) {
		snprintf(buf, len, "%s", own);
		return;
	}
	if (!other) {
		snprintf(buf, len, "%.*s:1", (int)(colon - own), own);
		return;
	}
	host = atoi(dot + 1) == 250 ? 251 : 250;
	snprintf(buf, len, "%.*s.%d:7000", (int)(dot - own), own, host);
}

/*
 * Connections that never come: rcx_group_connect gives its named error
 * (-ETIMEDOUT, or the refusal or unreachability it learnt first), and the
 * context stays usable: progress does not crash on what the abandoned
 * endpoint leaves behind (verbs: a BYE posted on a QP that never reached
 * RTS came back later as a flush completion for a free send slot), and a
 * real connection afterwards works.
 */
static void test_connect_timeout(void)
{
	static const int timeouts[] = { 1, 100, 300 };
	char own[128], addrs[3][128];
	struct rcx_group *g = NULL;
	struct rcx_ctx *ctx;
	size_t i, k;
	int ret, n;

	CU_ASSERT_EQUAL_FATAL(rcx_ctx_create(NULL, &ctx), 0);
	CU_ASSERT_EQUAL_FATAL(rcx_ctx_address(ctx, own, sizeof(own)), 0);
	/* nowhere at all */
	snprintf(addrs[0], sizeof(addrs[0]), "1.2.3.4:5");
	if (strstr(own, "shm:")) {
		/* a device of this process that is not open; a dead pid */
		shm_addr(own, (int)getpid(), 999, addrs[1], sizeof(addrs[1]));
		shm_addr(own, 0x3ffffff0, 0, addrs[2], sizeof(addrs[2]));
	} else {
		/* nobody on this device's subnet; nobody listening */
		ip_addr(own, true, addrs[1], sizeof(addrs[1]));
		ip_addr(own, false, addrs[2], sizeof(addrs[2]));
	}
	for (i = 0; i < 3; i++)
		for (k = 0; k < sizeof(timeouts) / sizeof(timeouts[0]); k++) {
			ret = rcx_group_connect(ctx, addrs[i], timeouts[k], &g);
			printf("\n    connect %s, %d ms: %s", addrs[i],
			       timeouts[k], rcx_strerror(ret));
			CU_ASSERT(ret == -ETIMEDOUT || ret == -ECONNREFUSED ||
				  ret == -EHOSTUNREACH || ret == -ENETUNREACH ||
				  ret == -ECONNABORTED ||
				  /* shm takes no IP address */
				  (ret == -EINVAL && i == 0 &&
				   !strncmp(own, "shm:", 4)));
			if (!ret)
				rcx_group_free(&g);
			/* whatever the endpoint left behind comes in now */
			for (n = 0; n < 200; n++)
				CU_ASSERT(rcx_progress(ctx) >= 0);
			ret = rcx_ctx_wait(ctx, 20);
			CU_ASSERT(ret >= 0 || ret == -ETIMEDOUT);
		}
	printf("\n");
	CU_ASSERT(pair_work(ctx));
	CU_ASSERT(rcx_progress(ctx) >= 0);
	rcx_ctx_destroy(ctx);
}

/* ---- multi-process scenarios */

/*
 * More bound channels than one completion queue holds: each reserves its
 * queue pair's depths (59 entries for a one-slot send channel), so 547 of
 * them (with the world's connection) pass rxe's 32,767 entries. All 600
 * bind, carry a message each, and free.
 */
#define NCHAN 600
#define BATCH 50

static void sc_chans(struct tp_job *j)
{
	static uint64_t buf[NCHAN];
	static struct rcx_req *init[NCHAN], *ch[NCHAN], *eph[NCHAN];
	static struct rcx_status st[NCHAN];
	bool send = j->rank == 0;
	int peer = 1 - j->rank, i, k, bound = 0, fine = 0;
	struct rcx_dev_info info;

	for (i = 0; i < NCHAN; i++) {
		buf[i] = 0;
		if (!TP_CHECK_OK(send ? rcx_send_init(j->g, &buf[i], 8, peer, i,
						      &init[i])
				      : rcx_recv_init(j->g, &buf[i], 8, peer, i,
						      &init[i])))
			return;
	}
	for (i = 0; i < NCHAN; i += BATCH) {
		for (k = i; k < i + BATCH && k < NCHAN; k++)
			TP_CHECK_OK(rcx_ibind(init[k], NULL, &ch[k], &eph[k]));
		rcx_waitall(k - i, &eph[i], &st[i]);
		for (k = i; k < i + BATCH && k < NCHAN; k++) {
			TP_CHECK_OK(st[k].error);
			bound += !st[k].error;
		}
	}
	TP_CHECK_EQ(bound, NCHAN);
	if (!TP_CHECK_OK(j->ctx->ops->dev_query(j->ctx->dev, &info)))
		return;
	printf("rank %d: %d channels bound; CQ entries %u for %u reserved "
	       "(%u per CQ at most)\n",
	       j->rank, bound, info.cq_size, info.cq_reserved, info.max_cqe);
	TP_CHECK(info.cq_size >= info.cq_reserved);
	if (bound != NCHAN)
		return;
	if (!send)
		for (i = 0; i < NCHAN; i++)
			TP_CHECK_OK(rcx_start(ch[i]));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (send)
		for (i = 0; i < NCHAN; i++) {
			buf[i] = 0xc4a0000000000000ull | (uint64_t)i;
			TP_CHECK_OK(rcx_start(ch[i]));
		}
	TP_CHECK_OK(rcx_waitall(NCHAN, ch, st));
	for (i = 0; i < NCHAN; i++)
		fine += !st[i].error &&
			buf[i] == (0xc4a0000000000000ull | (uint64_t)i);
	TP_CHECK_EQ(fine, NCHAN);
	TP_CHECK_OK(rcx_bind_free(ch, NCHAN));
	for (i = 0; i < NCHAN; i++)
		TP_CHECK_OK(rcx_req_free(&init[i]));
}

/*
 * Point-to-point connections as deep as RCX_TX_DEPTH goes: each takes
 * 16,641 completion entries, so a rank's second connection passes rxe's
 * 32,767. Every rank sends to and receives from every other.
 */
#define DEEP_MSGS 100

static void sc_deep(struct tp_job *j)
{
	static uint64_t out[8][DEEP_MSGS], in[8][DEEP_MSGS];
	static struct rcx_req *r[2 * 8 * DEEP_MSGS];
	int p, i, n = 0, bad = 0;

	if (!TP_CHECK(j->size <= 8))
		return;
	for (p = 0; p < j->size; p++) {
		if (p == j->rank)
			continue;
		for (i = 0; i < DEEP_MSGS; i++) {
			out[p][i] = (uint64_t)j->rank << 32 | (uint64_t)i;
			in[p][i] = 0;
			TP_CHECK_OK(
				rcx_irecv(j->g, &in[p][i], 8, p, i, &r[n++]));
			TP_CHECK_OK(
				rcx_isend(j->g, &out[p][i], 8, p, i, &r[n++]));
		}
	}
	TP_CHECK_OK(rcx_waitall(n, r, RCX_STATUSES_IGNORE));
	for (p = 0; p < j->size; p++)
		for (i = 0; p != j->rank && i < DEEP_MSGS; i++)
			bad += in[p][i] != ((uint64_t)p << 32 | (uint64_t)i);
	TP_CHECK_EQ(bad, 0);
}

static void deep_env(void)
{
	setenv("RCX_TX_DEPTH", "16384", 1);
	setenv("RCX_EAGER_SIZE", "256", 1);
}

static void deep_lazy_setup(void)
{
	deep_env();
	setenv("RCX_CONNECT", "lazy", 1);
}

static void deep_eager_setup(void)
{
	deep_env();
	setenv("RCX_CONNECT", "eager", 1);
}

/* the job of shm_sweep_ns: its context's first device swept */
static void sc_sweep(struct tp_job *j)
{
	TP_CHECK_EQ(j->size, 2);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "sweep", .run = sc_sweep, .size = 2 },
	{ .name = "chans", .run = sc_chans, .size = 2 },
	{ .name = "deep_lazy",
	  .run = sc_deep,
	  .size = 3,
	  .setup = deep_lazy_setup },
	{ .name = "deep_eager",
	  .run = sc_deep,
	  .size = 3,
	  .setup = deep_eager_setup },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("limits", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_limits = { "limits", peer_main };

static void test_many_chans(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "limits", "chans", 600), 0);
}

/*
 * The deep rings where the provider takes them (verbs); shm does not
 * (depth_check).
 */
static void deep(const char *scenario)
{
	struct rcx_dev_info info;

	CU_ASSERT_EQUAL_FATAL(dev_limits(&info), 0);
	if (!depth_fits(&info, 16384, 64)) {
		printf("\n    %s takes no RCX_TX_DEPTH=16384 (max_qp_wr %u): "
		       "not run\n",
		       info.name, info.max_qp_wr);
		return;
	}
	CU_ASSERT_EQUAL(tu_mp_run(3, "limits", scenario, 300), 0);
}

static void test_deep_lazy(void)
{
	deep("deep_lazy");
}

static void test_deep_eager(void)
{
	deep("deep_eager");
}

/*
 * A shm device sweeps the segments of dead processes from /dev/shm when
 * it opens, by the pid in their names. A pid means something only in its
 * own PID namespace: a segment made in another one (a container or a
 * Slurm step sharing /dev/shm) must stay, though no process here has its
 * pid; one of ours whose process is gone must go. (The names carried no
 * namespace before, and a job's live segments could vanish under a
 * process of another namespace opening a device: its peers then failed
 * to connect, RCX_ERR_PROC_FAILED.)
 */
static void test_shm_sweep_ns(void)
{
	const char *p = getenv("RCX_PROVIDER");
	char other[64], ours[64];
	bool kept, gone;
	struct stat st;
	pid_t dead;
	int fd;

	if (!p || (strcmp(p, "shm") && strcmp(p, "auto"))) {
		printf("\n    shm sweep: not on RCX_PROVIDER=%s (no shm)\n",
		       p ? p : "(unset)");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(stat("/proc/self/ns/pid", &st), 0);
	/* a pid no process here has */
	dead = fork();
	CU_ASSERT_FATAL(dead >= 0);
	if (!dead)
		_exit(0);
	CU_ASSERT_EQUAL_FATAL(waitpid(dead, NULL, 0), dead);
	snprintf(other, sizeof(other), "/rcx-shm.%lu-%d.0",
		 (unsigned long)st.st_ino + 1, (int)dead);
	snprintf(ours, sizeof(ours), "/rcx-shm.%lu-%d.0",
		 (unsigned long)st.st_ino, (int)dead);
	fd = shm_open(other, O_CREAT | O_EXCL | O_RDWR, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	fd = shm_open(ours, O_CREAT | O_EXCL | O_RDWR, 0600);
	CU_ASSERT(fd >= 0);
	if (fd >= 0)
		close(fd);
	/* fresh processes: the first device of each sweeps */
	CU_ASSERT_EQUAL(tu_mp_run(2, "limits", "sweep", 120), 0);
	fd = shm_open(other, O_RDWR, 0);
	kept = fd >= 0;
	if (fd >= 0)
		close(fd);
	fd = shm_open(ours, O_RDWR, 0);
	gone = fd < 0 && errno == ENOENT;
	if (fd >= 0)
		close(fd);
	printf("\n    shm sweep: another namespace's %s %s, our dead %s %s\n",
	       other, kept ? "kept" : "REMOVED", ours,
	       gone ? "removed" : "KEPT");
	CU_ASSERT(kept);
	CU_ASSERT(gone);
	shm_unlink(other);
	shm_unlink(ours);
}

static const CU_TestInfo tests[] = {
	{ "depth_check", test_depth_check },
	{ "connect_timeout", test_connect_timeout },
	{ "many_chans", test_many_chans },
	{ "deep_lazy", test_deep_lazy },
	{ "deep_eager", test_deep_eager },
	{ "shm_sweep_ns", test_shm_sweep_ns },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_limits = {
	"limits", TU_DEVICE, NULL, NULL, tests,
};
