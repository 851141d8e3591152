/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The single table of RCX_* environment variables. docs/config.md mirrors
 * it, and a test checks that every variable here is documented there.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"

#define S(f)                                                                   \
	offsetof(struct rcx__config, f), sizeof(((struct rcx__config *)0)->f), \
		0, 0
#define U(f, lo, hi) offsetof(struct rcx__config, f), 0, lo, hi

const struct rcx__config_var rcx__config_vars[] = {
	{ "RCX_DEVICE", "", "RDMA device to use (default: nearest, by hwloc)",
	  S(device) },
	{ "RCX_PROVIDER", "auto",
	  "transport provider: auto (shm on this node, verbs to others), "
	  "verbs, shm, fault",
	  S(provider) },
	{ "RCX_BOOTSTRAP", "",
	  "pmix | local | env | singleton (default: detect)", S(bootstrap) },
	{ "RCX_IFADDR", "", "IP address to listen on (default: the device's)",
	  S(ifaddr) },
	{ "RCX_PORT", "0",
	  "port the RDMA listener takes (0: any free one); not used by shm",
	  U(port, 0, 65535) },
	{ "RCX_EAGER_SIZE", "8192",
	  "largest message sent eagerly; larger ones use RDMA-READ rendezvous",
	  U(eager_size, 0, 1 << 20) },
	{ "RCX_RNDV_READ_MAX", "0",
	  "largest RDMA READ of a rendezvous; a longer message is read in "
	  "pieces (0: the device's largest message)",
	  U(rndv_read_max, 0, UINT32_MAX) },
	{ "RCX_RMA_WR_MAX", "0",
	  "largest RDMA READ or WRITE of a window's put or get; a longer one "
	  "is posted in pieces (0: the device's largest message)",
	  U(rma_wr_max, 0, UINT32_MAX) },
	{ "RCX_RX_DEPTH", "64", "receive buffers pre-posted per connection",
	  U(rx_depth, 4, 4096) },
	{ "RCX_TX_DEPTH", "256", "send bounce buffers and send queue depth",
	  U(tx_depth, 8, 16384) },
	{ "RCX_INLINE", "64", "largest send posted inline",
	  U(inline_size, 0, 1024) },
	{ "RCX_QP_TIMEOUT", "14",
	  "QP ACK timeout exponent (4.096 us * 2^n); bounds failure detection",
	  U(qp_timeout, 1, 31) },
	{ "RCX_QP_RETRY", "6",
	  "QP transport retries, 0-6 (7 would retry forever on rxe)",
	  U(qp_retry, 0, 6) },
	{ "RCX_RNR_RETRY", "7", "receiver-not-ready retries (7: forever)",
	  U(rnr_retry, 0, 7) },
	{ "RCX_SPIN_US", "50", "spin this long before blocking in a wait",
	  U(spin_us, 0, 10000000) },
	{ "RCX_YIELD", "auto",
	  "a spinning wait yields its cpu (sched_yield) between polls: auto "
	  "(when the launcher's ranks on this node outnumber the cpus of "
	  "this process and its launcher), always, never",
	  S(yield) },
	{ "RCX_CONNECT_TIMEOUT_MS", "60000",
	  "limit for connection set-up (group creation, channel binds)",
	  U(connect_timeout_ms, 100, 3600000) },
	{ "RCX_CONNECT", "lazy",
	  "lazy: a pair of the world connects on first use; eager: every "
	  "pair at creation",
	  S(connect) },
	{ "RCX_ORDER_FENCE", "auto",
	  "how rcx_win_order orders an RDMA READ or atomic before a later "
	  "write: fence (IBV_SEND_FENCE on the later WR), wait (until the "
	  "earlier one completes), auto (fence, but wait on a device whose "
	  "fenced WRs may stall for good: rxe)",
	  S(order_fence) },
	{ "RCX_CQ_SIZE", "4096",
	  "completion queue entries to start with; it grows as endpoints "
	  "are made",
	  U(cq_size, 16, 1 << 22) },
	{ "RCX_MR_CACHE", "0",
	  "keep unused registrations (1); only if buffers are not freed and "
	  "reused for other memory while cached",
	  U(mr_cache, 0, 1) },
	{ "RCX_HEARTBEAT_MS", "0",
	  "period of a liveness probe on every connection (0: off)",
	  U(heartbeat_ms, 0, 3600000) },
	{ "RCX_FT_TIMEOUT_MS", "10000",
	  "a peer cut off by a transport failure (QP retries exhausted) with "
	  "no sign of its death is declared failed after this long (0: at "
	  "once)",
	  U(ft_timeout_ms, 0, 3600000) },
	{ "RCX_PROGRESS_CPUS", "",
	  "cpulist the continuation progress thread is bound to (default: the "
	  "device's local cpus)",
	  S(progress_cpus) },
	{ "RCX_LOG_LEVEL", "warn",
	  "lines logged: error | warn | info | debug | trace", S(log_level) },
	{ "RCX_LOG_FILE", "",
	  "where lines go (default: stderr); %p the pid, %r the rank",
	  S(log_file) },
	{ "RCX_STATS", "0",
	  "print the context's counters when it is destroyed (1)",
	  U(stats, 0, 1) },
	{ "RCX_STATS_FILE", "",
	  "where RCX_STATS prints (default: stderr); %p the pid, %r the rank",
	  S(stats_file) },
	{ NULL, NULL, NULL, 0, 0, 0, 0 },
};

static int set_var(struct rcx__config *cfg, const struct rcx__config_var *v,
		   const char *val)
{
	char *p = (char *)cfg + v->offset, *end;
	unsigned long u;

	if (v->str_size) {
		if (strlen(val) >= v->str_size)
			return -EINVAL;
		memcpy(p, val, strlen(val) + 1);
		return 0;
	}
	errno = 0;
	u = strtoul(val, &end, 0);
	if (errno || end == val || *end || val[0] == '-' || u < v->min ||
	    u > v->max)
		return -EINVAL;
	memcpy(p, &u, sizeof(u));
	return 0;
}

int rcx__config_load(struct rcx__config *cfg)
{
	const struct rcx__config_var *v;
	const char *e, *f;
	struct rcx__config tmp;
	int ret;

	memset(&tmp, 0, sizeof(tmp));
	/* where and what to log, first: what follows may log */
	e = getenv("RCX_LOG_LEVEL");
	if (!e || rcx__log_parse_level(e) < 0)
		e = "warn";
	f = getenv("RCX_LOG_FILE");
	rcx__log_setup(e, f && strlen(f) < sizeof(tmp.log_file) ? f : "");
	for (v = rcx__config_vars; v->name; v++) {
		e = getenv(v->name);

		ret = set_var(&tmp, v, v->deflt);
		if (!ret && e && *e) {
			ret = set_var(&tmp, v, e);
			if (ret)
				rcx__log(RCX__LOG_ERROR, "config",
					 "%s=%s is not valid (%s)", v->name, e,
					 v->help);
		}
		if (ret)
			return ret;
	}
	if (rcx__log_parse_level(tmp.log_level) < 0) {
		rcx__log(RCX__LOG_ERROR, "config",
			 "RCX_LOG_LEVEL=%s is not valid (error, warn, info, "
			 "debug or trace)",
			 tmp.log_level);
		return -EINVAL;
	}
	/* checked here, not at thread start, where it could not be reported */
	ret = tmp.progress_cpus[0] ? rcx__topo_cpus_check(tmp.progress_cpus)
				   : 0;
	if (ret) {
		if (ret == -EINVAL)
			rcx__log(RCX__LOG_ERROR, "config",
				 "RCX_PROGRESS_CPUS=%s is not a cpulist (cpus "
				 "and low-high ranges, comma separated, e.g. "
				 "0-3,8)",
				 tmp.progress_cpus);
		return ret;
	}
	*cfg = tmp;
	return 0;
}

/* ---- RCX_* variables rcx does not know: one warning each */

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * RCX_* names read outside the config table (launcher, bootstrap, the
 * fault provider, the tools and tests). A test checks that every
 * getenv("RCX_...") of the tree is here or in the table.
 */
static const char *const env_known[] = {
	"RCX_RANK",
	"RCX_SIZE",
	"RCX_ROOT",
	"RCX_JOBID",
	"RCX_NODE",
	"RCX_LOCAL_RANK",
	"RCX_LOCAL_SIZE",
	"RCX_BOOT_TIMEOUT_MS",
	"RCX_RUN_FT",
	"RCX_RUN_NODES",
	"RCX_RUN_SOCK",
	"RCX_FAULT_LOWER",
	"RCX_FAULT_STALL_FENCE",
	"RCX_PT_ADDR_FD",
	"RCX_ORDER_ROUNDS",
	"RCX_SOFTROCE_DEV",
	"RCX_SOFTROCE_MODE",
	"RCX_SOFTROCE_ADDR",
	"RCX_SOFTROCE_NETDEV",
	"RCX_REQUIRE_DEVICE",
	"RCX_STRESS_MSGS",
	"RCX_FTGROUP_RUNS",
	"RCX_FTGROUP_CASES",
	"RCX_TEST_SEED",
	"RCX_TEST_TWO_PATHS",
	"RCX_TEST_LINK",
	"RCX_TEST_NETEM",
	"RCX_TEST_LOSS_ROUNDS",
	"RCX_TEST_FT_DIR",
	"RCX_TEST_ORDER_SHORT",
	"RCX_TEST_CASE",
	"RCX_FUZZ_SECONDS",
	NULL,
};

bool rcx__env_known(const char *name)
{
	const struct rcx__config_var *v;
	int i;

	for (v = rcx__config_vars; v->name; v++)
		if (!strcmp(v->name, name))
			return true;
	for (i = 0; env_known[i]; i++)
		if (!strcmp(env_known[i], name))
			return true;
	return false;
}

/* edits from a to b (insert, delete, replace one character) */
static size_t distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, d[64], prev, cur;

	if (lb >= sizeof(d) / sizeof(d[0]))
		return (size_t)-1;
	for (j = 0; j <= lb; j++)
		d[j] = j;
	for (i = 1; i <= la; i++) {
		prev = d[0];
		d[0] = i;
		for (j = 1; j <= lb; j++) {
			cur = d[j];
			d[j] = a[i - 1] == b[j - 1] ? prev : 1 + prev;
			if (d[j] > d[j - 1] + 1)
				d[j] = d[j - 1] + 1;
			if (d[j] > cur + 1)
				d[j] = cur + 1;
			prev = cur;
		}
	}
	return d[lb];
}

const char *rcx__env_nearest(const char *name)
{
	const struct rcx__config_var *v;
	const char *best = NULL;
	size_t d, bd = (size_t)-1;
	int i;

	for (v = rcx__config_vars; v->name; v++)
		if ((d = distance(name, v->name)) < bd) {
			bd = d;
			best = v->name;
		}
	for (i = 0; env_known[i]; i++)
		if ((d = distance(name, env_known[i])) < bd) {
			bd = d;
			best = env_known[i];
		}
	return best;
}

extern char **environ;

void rcx__env_check(void)
{
	static bool checked;
	char name[128], **e;
	const char *eq;
	size_t n;

	/* once per process: the first context looks */
	pthread_mutex_lock(&env_lock);
	if (checked) {
		pthread_mutex_unlock(&env_lock);
		return;
	}
	checked = true;
	pthread_mutex_unlock(&env_lock);
	for (e = environ; e && *e; e++) {
		if (strncmp(*e, "RCX_", 4))
			continue;
		eq = strchr(*e, '=');
		n = eq ? (size_t)(eq - *e) : strlen(*e);
		if (n >= sizeof(name))
			n = sizeof(name) - 1;
		memcpy(name, *e, n);
		name[n] = 0;
		if (!rcx__env_known(name))
			rcx__log(RCX__LOG_WARN, "config",
				 "%s is not a variable rcx knows (%s?); "
				 "it is ignored",
				 name, rcx__env_nearest(name));
	}
}
