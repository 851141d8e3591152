/* SPDX-License-Identifier: BSD-2-Clause */
/* Context: configuration, device, progress engine and blocking waits. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include "lib/core/core.h"

#define RCX__POLL_BATCH 16
#define RCX__MAX_DEVS	32
/*
 * Connection polls: a connection poll is a system call or two (the event
 * channel, the clock for liveness), not something to pay every few
 * microseconds of a spin. Progress counts its passes and polls
 * connections:
 * - once RCX__CM_EVERY passes went by since the last poll;
 * - once RCX__CM_PASSES passes went by and the period has passed (4 ms,
 *   the step of the coarse clock it replaces at the kernel's usual
 *   250 Hz) on a pass that found no completion (a spinning waiter: its
 *   passes come in microseconds, so the period decides);
 * - once RCX__CM_PASSES passes went by and RCX__CM_LATE periods passed
 *   (100 ms, a tenth of the failure detection bound, docs/config.md), on
 *   any pass: a program that calls progress rarely.
 * A blocking wait polls before it sleeps when the period has passed, and
 * after a wake-up that brought no completion (rcx__wait_events), and
 * every poll, wherever it is made, starts the count and the period again
 * (rcx__cm_polled). So a pass whose poll is
 * not due by count pays a counter, the CPU's time-stamp counter (one
 * instruction, no call) and two compares; and which pass polls does not
 * depend on how fast the passes run until RCX__CM_PASSES of them came,
 * which makes the instructions of a short run repeatable. The counter's
 * rate is taken from the clock at the polls (until it is known, the
 * period is over at once).
 */
#define RCX__CM_EVERY	  1024
#define RCX__CM_PASSES	  128
#define RCX__CM_PERIOD_US 4000
#define RCX__CM_LATE	  25
/* the clock is compared with the counter over at least this long */
#define RCX__TICK_CALIB_US 10000

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t tick_now(void)
{
	return __rdtsc();
}
#elif defined(__aarch64__)
static inline uint64_t tick_now(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
}
#else
/* no counter: the coarse clock in microseconds (a read per call) */
static inline uint64_t tick_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
#endif

long long rcx__now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/*
 * A connection poll was made (now_us: the clock): the next one is due
 * by count and by the counter from here, at the rate seen since the
 * context was made.
 */
void rcx__cm_polled(struct rcx_ctx *ctx, long long now_us)
{
	uint64_t now = tick_now();
	long long us = now_us - ctx->tick_us0;

	if (us >= RCX__TICK_CALIB_US)
		ctx->cm_period = (uint64_t)((double)(now - ctx->tick0) *
					    RCX__CM_PERIOD_US / (double)us);
	rcx__passes_fold(ctx);
	ctx->cm_passes = 0;
	ctx->cm_next = now + ctx->cm_period;
	ctx->cm_late = now + ctx->cm_period * RCX__CM_LATE;
}

/* Hand each completion to the object its wr_id points at. A call of its
 * own: a poll that finds nothing keeps progress's frame small. */
static __attribute__((noinline)) void dispatch(struct rcx_ctx *ctx,
					       const struct rcx_cqe *cqe, int n)
{
	int i;

	if (RCX__UNLIKELY(rcx__log_level >= RCX__LOG_TRACE))
		rcx__stats_trace_cqes(ctx, cqe, n);
	for (i = 0; i < n; i++) {
		struct rcx__wrctx *w = (void *)(uintptr_t)cqe[i].wr_id;

		w->cb(ctx, w, &cqe[i]);
	}
}

__attribute__((noinline)) void rcx__wc_ok_slow(struct rcx_ctx *ctx,
					       struct rcx__wrctx *w,
					       uint32_t byte_len, uint32_t imm,
					       int has_imm)
{
	struct rcx_cqe cqe = {
		.wr_id = (uintptr_t)w,
		.byte_len = byte_len,
		.imm = imm,
		.has_imm = (uint8_t) !!has_imm,
		.op = has_imm ? RCX_OP_RECV_IMM : RCX_OP_RECV,
	};

	w->cb(ctx, w, &cqe);
}

/*
 * ctx->cq_dispatch where the provider has no cq_dispatch (or the trace
 * is on): poll a batch as rcx_cqe entries, then hand each to its object.
 */
int rcx__poll_dispatch(struct rcx_dev *dev, struct rcx_ctx *ctx)
{
	struct rcx_cqe cqe[RCX__POLL_BATCH];
	int n = ctx->cq_poll(dev, cqe, RCX__POLL_BATCH);

	if (n > 0)
		dispatch(ctx, cqe, n);
	return n;
}

/*
 * The rest of a progress pass, after the poll found n completions:
 * connections waiting for credits or slots, features with work of their
 * own (channel senders waiting for credit, frees under way,
 * continuations ready to run; *ran, when not NULL, counts the
 * continuations run: work done without a completion), and the
 * connection cadence by the count of passes. Then the passes that may be
 * quick until it is due again (ctx->quick): while no connection waits and
 * no feature asked for work, a pass before the RCX__CM_PASSES-th since
 * the last connection poll has nothing else to do.
 */
int rcx__progress_rest(struct rcx_ctx *ctx, int n, int *ran)
{
	unsigned int passes;
	uint64_t now;
	int left;

	/* this pass and the quick ones before it count towards the cadence */
	rcx__passes_fold(ctx);
	/* left by a dispatch that was not progress's (a test's direct poll) */
	if (RCX__UNLIKELY(ctx->cont_now != NULL)) {
		int k = rcx__req_hooks->run_now(ctx);

		if (ran)
			*ran += k;
		if (k && n <= 0)
			n = 1;
	}
	if (n > 0)
		ctx->polls_found++;
	if (ctx->pending) {
		/* those waiting for a slot get the tails' back */
		if (!ctx->tx_free)
			rcx__tx_starved(ctx);
		rcx__conn_drain(ctx);
	}
	if (RCX__UNLIKELY(ctx->feat_work))
		n = rcx__feats_progress(ctx, n, ran);
	/*
	 * Connection events handled here count as work: one may complete
	 * what a waiter waits for (a bind is up once its connection is), and
	 * a waiter told "nothing happened" would sleep with no event left to
	 * wake it.
	 */
	passes = ctx->cm_passes;
	if (RCX__UNLIKELY(passes >= RCX__CM_PASSES) &&
	    (passes >= RCX__CM_EVERY || ((now = tick_now()) >= ctx->cm_next &&
					 (n <= 0 || now >= ctx->cm_late)))) {
		if (rcx__cm_progress(ctx) > 0 && n <= 0)
			n = 1;
		rcx__feats_idle(ctx);
	}
	/*
	 * What the cadence or a feature did may have made more due. A pass
	 * made inside this one (a drain of the connection poll, a callback's
	 * test) set a grant of its own: the passes made quick under it count
	 * before the grant is set again, or the empty polls would lose them
	 * and the passes that found something would not.
	 */
	rcx__passes_fold(ctx);
	left = RCX__CM_PASSES - 1 - (int)ctx->cm_passes;
	if (!ctx->pending && !ctx->feat_work && left > 0)
		ctx->quick_grant = ctx->quick = left;
	return n > 0 ? n : 0;
}

/*
 * The dispatch completed a request whose continuation may run at once
 * (lib/cont left it in ctx->cont_now): it runs here, after the dispatch
 * returned (a callback may poll again, and the provider's batch of
 * completions would not survive a poll from inside its dispatch).
 */
static __attribute__((noinline)) int progress_cont_now(struct rcx_ctx *ctx)
{
	return rcx__req_hooks->run_now(ctx);
}

/*
 * The fast path: poll a batch and hand each completion to the object its
 * wr_id points at (no lookup, no allocation), and the rest of the pass
 * when it is due. Inlined with a constant NULL into rcx__progress, so
 * counting continuations costs the fast path nothing.
 */
static inline __attribute__((always_inline)) int progress(struct rcx_ctx *ctx,
							  int *ran)
{
	int n = ctx->cq_dispatch(ctx->dev, ctx);

	if (RCX__UNLIKELY(ctx->cont_now != NULL)) {
		int k = progress_cont_now(ctx);

		if (ran)
			*ran += k;
	}
	/* continuations are counted by the rest of the pass: run it */
	if (RCX__UNLIKELY(--ctx->quick < 0) || ran)
		return rcx__progress_rest(ctx, n, ran);
	if (n > 0)
		ctx->polls_found++;
	return n > 0 ? n : 0;
}

/*
 * Every poll is a pass (ctx->quick counts them), and a pass that found
 * something says so: the empty polls are the rest, which keeps a counter
 * off the test that finds nothing. A put or get run at once counts as a
 * pass too (win_rma.c), one that found nothing.
 */
uint64_t rcx__empty_polls(const struct rcx_ctx *ctx)
{
	return ctx->passes + (uint64_t)(ctx->quick_grant - ctx->quick) -
	       ctx->polls_found;
}

/*
 * Oversubscribed (more ranks on the node than cpus to run them), a
 * waiter that spins holds the cpu the rank it waits for needs: it gives
 * it up after each idle poll instead, as Open MPI's progress does when
 * it runs oversubscribed (mpi_yield_when_idle). The yield is a system
 * call already, so the clock is read on every poll.
 */
bool rcx__spin_yield(const struct rcx_ctx *ctx, struct rcx__spin *sp)
{
	long long now;

	sched_yield();
	now = rcx__now_us();
	if (!sp->end)
		sp->end = now + (long long)ctx->cfg.spin_us;
	sp->over = now >= sp->end;
	return sp->over;
}

int rcx__progress(struct rcx_ctx *ctx)
{
	return progress(ctx, NULL);
}

int rcx__sleep_limit(struct rcx_ctx *ctx, int timeout_ms)
{
	/* an ask whose connection must come by a deadline (fail.c) */
	if (ctx->nanswer && (timeout_ms < 0 || timeout_ms > 100))
		timeout_ms = 100;
	/* a reconnection's steps are taken on the connection cadence */
	if (ctx->nreconn && (timeout_ms < 0 || timeout_ms > 10))
		timeout_ms = 10;
	timeout_ms = rcx__fail_sleep_limit(ctx, timeout_ms);
	return rcx__feats_sleep_limit(ctx, timeout_ms);
}

/*
 * Is a connection poll due by the clock (the period since the last one
 * passed)? A wait about to sleep needs no poll otherwise: what a poll
 * takes comes through fds in the event fd's set (the connection
 * manager's channel, the launcher's notices, the peers' exits on shm),
 * so a sleep with something to take wakes at once and the wake-up polls
 * (rcx__wait_woken); what comes by the clock alone (probes, answers,
 * suspects, heartbeats) limits the sleep (rcx__sleep_limit).
 */
static inline bool cm_due(const struct rcx_ctx *ctx)
{
	return tick_now() >= ctx->cm_next;
}

/*
 * Before a sleep, after the pass that found nothing: the connection poll
 * when it is due by the clock. True when that poll (or the pass, gen
 * being wake_gen before it) may have completed what the caller waits
 * for: no sleep then (issue 29's rule: every sleeping wait re-checks its
 * condition after any progress that can complete it).
 */
bool rcx__wait_cm_before(struct rcx_ctx *ctx, unsigned int gen)
{
	if (ctx->wake_gen != gen)
		return true;
	if (!cm_due(ctx))
		return false;
	return rcx__cm_progress(ctx) > 0 || ctx->wake_gen != gen;
}

/*
 * After a sleep and the pass that followed (n completions): a wake-up
 * that brought no completion came from another fd of the set (or the
 * time-out): the connection poll takes what it was, and a pass after it
 * what that poll completed (a peer's exit flushes its endpoints). A
 * wake-up with completions polls only when the clock says so.
 */
int rcx__wait_woken(struct rcx_ctx *ctx, int n)
{
	if (n > 0 && !cm_due(ctx))
		return n;
	/*
	 * The launcher's notices are read once in a while (fail.c), but a
	 * notice that woke the sleep stays readable until read: read now, or
	 * every sleep until then would wake at once.
	 */
	if (n <= 0)
		ctx->notice_next_us = 0;
	if (rcx__cm_progress(ctx) > 0 && n <= 0)
		n = rcx__progress(ctx);
	return n;
}

/*
 * Sleep on the event fd: acknowledge, arm, poll once more (a completion
 * that arrived before the arm raises no event), then block. The lock is
 * dropped while sleeping.
 */
int rcx__wait_events(struct rcx_ctx *ctx, int timeout_ms)
{
	struct epoll_event ev;
	int n, fd = ctx->ops->event_fd(ctx->dev);

	timeout_ms = rcx__sleep_limit(ctx, timeout_ms);

	ctx->ops->ack(ctx->dev);
	if (ctx->ops->arm(ctx->dev) == 0) {
		unsigned int gen = ctx->wake_gen;

		n = rcx__progress(ctx);
		if (n > 0)
			return n;
		/* a launcher's notice or a connection's end taken here may
		 * have completed what the caller waits for: no sleep then */
		if (rcx__wait_cm_before(ctx, gen))
			return 0;
		rcx__unlock(ctx);
		epoll_wait(fd, &ev, 1, timeout_ms);
		rcx__lock(ctx);
		ctx->ops->ack(ctx->dev);
		return rcx__wait_woken(ctx, rcx__progress(ctx));
	}
	rcx__cm_progress(ctx);
	return rcx__progress(ctx);
}

void rcx__block_req(struct rcx_ctx *ctx, struct rcx_req *r)
{
	/* a kind with a poll of its own (continuation requests) polls it */
	while (rcx__block(ctx, -1) > 0 && r->state == RCX__REQ_ACTIVE &&
	       !(r->ops && r->ops->poll))
		;
}

/*
 * The cpus the ranks of this node may run on: this process's, and its
 * parent's (the launcher's). A launcher that binds each rank to a cpu of
 * its own (Open MPI's mpirun binds a rank to a core when there are no
 * more ranks than cores, srun --cpu-bind) leaves a rank one cpu: counted
 * alone, two ranks bound to two cores looked oversubscribed and every
 * idle poll of their waits was a sched_yield. Ranks bound to one cpu
 * together (or a parent that is not the launcher) are left to the
 * providers' waits (the shm provider yields to a peer queued behind it).
 */
static int node_cpus(void)
{
	cpu_set_t set, up;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	if (!sched_getaffinity(getppid(), sizeof(up), &up))
		CPU_OR(&set, &set, &up);
	return CPU_COUNT(&set);
}

/* RCX_YIELD: ctx->yield, auto from the launcher's ranks on this node */
static int yield_mode(struct rcx_ctx *ctx)
{
	const char *m = ctx->cfg.yield, *from = NULL;
	int local, cpus;

	if (!strcmp(m, "always") || !strcmp(m, "never")) {
		ctx->yield = m[0] == 'a';
		return 0;
	}
	if (strcmp(m, "auto")) {
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "RCX_YIELD=%s is not valid (auto, always or never)",
			 m);
		return -EINVAL;
	}
	local = rcx__boot_local_size(&from);
	cpus = node_cpus();
	ctx->yield = local > 0 && cpus > 0 && local > cpus;
	if (ctx->yield)
		rcx__log(RCX__LOG_DEBUG, "ctx",
			 "%d ranks on this node (%s), %d cpus (its own and "
			 "its launcher's): waits yield",
			 local, from, cpus);
	return 0;
}

static int pick_device(struct rcx_ctx *ctx, char *name, size_t len)
{
	char(*names)[64];
	int n, pick = 0, ret;

	if (ctx->cfg.device[0]) {
		snprintf(name, len, "%s", ctx->cfg.device);
		return 0;
	}
	names = calloc(RCX__MAX_DEVS, sizeof(*names));
	if (!names)
		return -ENOMEM;
	n = ctx->ops->dev_list(names, RCX__MAX_DEVS);
	if (n <= 0) {
		free(names);
		return n < 0 ? n : -ENODEV;
	}
	ret = rcx__topo_pick((const char(*)[64])names, n, NULL, NULL, &pick);
	if (ret)
		pick = 0; /* no topology: take the provider's first */
	snprintf(name, len, "%s", names[pick]);
	free(names);
	return 0;
}

static void ctx_free(struct rcx_ctx *ctx)
{
	struct rcx__pending_req *p;
	size_t i;

	rcx__feats_fini(ctx);
	rcx__groups_destroy(ctx);
	while ((p = ctx->conn_reqs)) {
		ctx->conn_reqs = p->next;
		ctx->ops->ep_reject(ctx->dev, p->req);
		free(p);
	}
	rcx__tx_fini(ctx);
	rcx__reg_flush(ctx);
	if (ctx->dev)
		ctx->ops->dev_close(ctx->dev);
	rcx__boot_close(ctx->boot);
	for (i = 0; i < ctx->nchunks; i++)
		free(ctx->req_chunks[i]);
	free(ctx->req_chunks);
	pthread_mutex_destroy(&ctx->lock);
	ctx->magic = 0;
	free(ctx);
}

/*
 * RCX_ORDER_FENCE: how rcx_win_order keeps a later write behind an earlier
 * RDMA READ or atomic. rxe (Linux 6.1) has been seen to hold a fenced WR
 * for good, the earlier WRs complete and more WRs posted behind it (a
 * fence then never returns): there auto waits instead.
 */
static int order_fence_mode(struct rcx_ctx *ctx)
{
	const char *m = ctx->cfg.order_fence;

	if (!strcmp(m, "fence")) {
		ctx->fence_wait = 0;
	} else if (!strcmp(m, "wait")) {
		ctx->fence_wait = 1;
	} else if (!strcmp(m, "auto")) {
		ctx->fence_wait = ctx->info.fence_stalls;
	} else {
		rcx__log(
			RCX__LOG_ERROR, "ctx",
			"RCX_ORDER_FENCE=%s is not valid (auto, fence or wait)",
			m);
		return -EINVAL;
	}
	if (ctx->fence_wait && !ctx->info.ordered)
		rcx__log(RCX__LOG_DEBUG, "ctx",
			 "rcx_win_order waits instead of fencing on %s "
			 "(RCX_ORDER_FENCE=%s)",
			 ctx->info.name, m);
	return 0;
}

RCX_API int rcx_ctx_create(const struct rcx_ctx_attr *attr,
			   struct rcx_ctx **out)
{
	struct rcx_dev_attr da = { 0 };
	struct rcx_ctx *ctx;
	char devname[64], node[320];
	const char *from = NULL;
	int ret;

	if (!out)
		return -EINVAL;
	if (attr && attr->thread_level != RCX_THREAD_SINGLE &&
	    attr->thread_level != RCX_THREAD_MULTIPLE)
		return -EINVAL;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->lock, NULL);
	ctx->magic = RCX__CTX_MAGIC;
	ctx->tick0 = tick_now();
	ctx->tick_us0 = rcx__now_us();
	ret = rcx__config_load(&ctx->cfg);
	if (!ret)
		ret = rcx__log_setup(ctx->cfg.log_level, ctx->cfg.log_file);
	if (ret)
		goto err;
	rcx__env_check();
	ret = yield_mode(ctx);
	if (ret)
		goto err;
	ret = -EINVAL;
	if (attr && attr->device &&
	    snprintf(ctx->cfg.device, sizeof(ctx->cfg.device), "%s",
		     attr->device) >= (int)sizeof(ctx->cfg.device)) {
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "rcx_ctx_attr.device %s: longer than %zu characters",
			 attr->device, sizeof(ctx->cfg.device) - 1);
		goto err;
	}
	if (attr && attr->provider &&
	    snprintf(ctx->cfg.provider, sizeof(ctx->cfg.provider), "%s",
		     attr->provider) >= (int)sizeof(ctx->cfg.provider)) {
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "rcx_ctx_attr.provider %s: no such provider "
			 "(auto, verbs, shm, fault)",
			 attr->provider);
		goto err;
	}
	ctx->mt = attr && attr->thread_level == RCX_THREAD_MULTIPLE;
	if (attr && (attr->connect < RCX_CONNECT_DEFAULT ||
		     attr->connect > RCX_CONNECT_LAZY)) {
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "rcx_ctx_attr.connect %d: not an RCX_CONNECT_* value",
			 attr->connect);
		goto err;
	}
	if (attr && attr->connect != RCX_CONNECT_DEFAULT) {
		ctx->lazy = attr->connect == RCX_CONNECT_LAZY;
	} else if (!strcmp(ctx->cfg.connect, "lazy")) {
		ctx->lazy = 1;
	} else if (strcmp(ctx->cfg.connect, "eager")) {
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "RCX_CONNECT=%s is not valid (lazy or eager)",
			 ctx->cfg.connect);
		goto err;
	}
	ctx->ops = rcx__stats_ops(rcx__provider_find(ctx->cfg.provider));
	if (!ctx->ops) {
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "%s%s is not a provider (auto, verbs, shm, fault)",
			 attr && attr->provider ? "rcx_ctx_attr.provider "
						: "RCX_PROVIDER=",
			 ctx->cfg.provider);
		goto err;
	}
	ret = pick_device(ctx, devname, sizeof(devname));
	if (ret == -ENODEV)
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "provider %s: no device to use (RCX_DEVICE not set)",
			 ctx->ops->name);
	if (ret)
		goto err;
	if (ctx->cfg.device[0] && !strcmp(ctx->ops->name, "shm") &&
	    strcmp(ctx->cfg.device, "shm")) {
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "device %s (RCX_DEVICE or rcx_ctx_attr.device): "
			 "provider shm uses no RDMA device; leave it unset or "
			 "use RCX_PROVIDER=verbs or auto",
			 ctx->cfg.device);
		ret = -ENODEV;
		goto err;
	}
	da.name = devname;
	da.addr = ctx->cfg.ifaddr[0] ? ctx->cfg.ifaddr : NULL;
	da.cq_size = (int)ctx->cfg.cq_size;
	ret = rcx__boot_node(node, sizeof(node), &from);
	if (ret) {
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "node name from %s: longer than %zu characters", from,
			 sizeof(node) - 1);
		goto err;
	}
	da.node = node;
	snprintf(ctx->node, sizeof(ctx->node), "%s", node);
	rcx__log(RCX__LOG_DEBUG, "ctx", "node %s (from %s)", node, from);
	ret = ctx->ops->dev_open(&da, &ctx->dev);
	if (ret == -ENODEV)
		rcx__dev_log_missing(ctx->ops, devname, ctx->cfg.device[0]);
	if (ret)
		goto err;
	ctx->cq_poll = ctx->ops->cq_poll;
	if (rcx__log_level < RCX__LOG_TRACE &&
	    ctx->ops->cq_poll_min(ctx->dev, NULL, 0) == 0)
		ctx->cq_poll = ctx->ops->cq_poll_min;
	ctx->cq_dispatch = rcx__poll_dispatch;
	if (rcx__log_level < RCX__LOG_TRACE &&
	    ctx->ops->cq_dispatch != rcx__stub_cq_dispatch)
		ctx->cq_dispatch = ctx->ops->cq_dispatch;
	/* the direct poll stands for cq_dispatch: only where that is used */
	ctx->peek_ok = ctx->cq_dispatch == ctx->ops->cq_dispatch &&
		       ctx->ops->cq_peek(ctx->dev, &ctx->peek) == 0;
	/* a provider with no found_test gets the core's (found, then the
	 * report): rcx_test calls it with no test */
	if (ctx->peek_ok && !ctx->peek.found_test)
		ctx->peek.found_test = rcx__peek_found;
	ctx->req_peek = ctx->peek_ok && !ctx->mt ? &ctx->peek : NULL;
	ret = ctx->ops->dev_query(ctx->dev, &ctx->info);
	if (!ret)
		ret = rcx__conn_depth_check(ctx);
	if (!ret)
		ret = order_fence_mode(ctx);
	if (!ret)
		ret = ctx->ops->listen(ctx->dev, (uint16_t)ctx->cfg.port,
				       ctx->addr, sizeof(ctx->addr));
	if (ret && ctx->cfg.port)
		rcx__log(RCX__LOG_ERROR, "ctx",
			 "RCX_PORT=%lu: cannot listen on it (%s)",
			 ctx->cfg.port, rcx_strerror(ret));
	if (!ret)
		ret = rcx__tx_init(ctx);
	if (ret)
		goto err;
	ctx->am[RCX__CID_FAIL] = rcx__fail_am;
	*out = ctx;
	return 0;
err:
	ctx_free(ctx);
	return ret;
}

RCX_API int rcx_ctx_destroy(struct rcx_ctx *ctx)
{
	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	rcx__stats_report(ctx);
	ctx_free(ctx);
	return 0;
}

static int copy_out(const char *s, char *buf, size_t len)
{
	if (!buf)
		return -EINVAL;
	if (strlen(s) >= len)
		return -ENAMETOOLONG;
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

RCX_API int rcx_ctx_device(struct rcx_ctx *ctx, char *name, size_t len)
{
	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	return copy_out(ctx->info.name, name, len);
}

RCX_API int rcx_ctx_address(struct rcx_ctx *ctx, char *addr, size_t len)
{
	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	return copy_out(ctx->addr, addr, len);
}

/* rcx_progress on a RCX_THREAD_MULTIPLE context */
static __attribute__((noinline)) int progress_locked(struct rcx_ctx *ctx)
{
	int n;

	pthread_mutex_lock(&ctx->lock);
	n = rcx__progress(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return n;
}

RCX_API int rcx_progress(struct rcx_ctx *ctx)
{
	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	/* one thread: the pass inlined, no lock (no frame of its own) */
	if (RCX__LIKELY(!ctx->mt))
		return progress(ctx, NULL);
	return progress_locked(ctx);
}

RCX_API int rcx_ctx_event_fd(struct rcx_ctx *ctx)
{
	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	return ctx->ops->event_fd(ctx->dev);
}

RCX_API int rcx_ctx_arm(struct rcx_ctx *ctx)
{
	int ret;

	if (!rcx__ctx_live(ctx))
		return -EINVAL;
	rcx__lock(ctx);
	ctx->ops->ack(ctx->dev);
	ret = ctx->ops->arm(ctx->dev);
	if (!ret && (rcx__progress(ctx) > 0 || rcx__cm_progress(ctx) > 0))
		ret = -EAGAIN;
	rcx__unlock(ctx);
	return ret;
}

RCX_API int rcx_ctx_wait(struct rcx_ctx *ctx, int timeout_ms)
{
	struct rcx__spin sp = { 0 };
	long long now, end = (long long)1 << 62;
	int n, ran;

	if (!rcx__ctx_live(ctx) || timeout_ms < -1)
		return -EINVAL;
	rcx__lock(ctx);
	if (timeout_ms >= 0) {
		/* the spin ends by the deadline too */
		now = rcx__now_us();
		end = now + timeout_ms * 1000LL;
		sp.end = now + (long long)ctx->cfg.spin_us;
		if (sp.end > end)
			sp.end = end;
	}
	for (;;) {
		ran = 0;
		n = progress(ctx, &ran) + ran;
		if (n > 0)
			break;
		if (timeout_ms != 0 && !rcx__spin_over(ctx, &sp))
			continue;
		now = rcx__now_us();
		if (now >= end) {
			n = -ETIMEDOUT;
			break;
		}
		/*
		 * Continuations can become ready without a completion event
		 * (registration, another thread, a signal handler): the
		 * continuation wait sleeps on their eventfd too, and counts
		 * the ones it ran.
		 */
		n = rcx__block(ctx, timeout_ms < 0
					    ? -1
					    : (int)((end - now + 999) / 1000));
		if (n > 0)
			break;
	}
	rcx__unlock(ctx);
	return n;
}
