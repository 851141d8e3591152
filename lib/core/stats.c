/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Counters of a context (include/rcx/stats.h). The paths keep them in
 * ctx->st by plain increments where they are off the fast path; what the
 * fast paths already count in their own state (a bound channel's starts)
 * the features add here, at query time. RCX_STATS=1 prints them when the
 * context is destroyed; RCX_LOG_LEVEL=trace logs every completion.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "lib/core/core.h"

/*
 * The counters as printed: every field after version, in the order of the
 * struct (all uint64_t).
 */
static const char *const stat_names[] = {
	"eager_tx_msgs",     "eager_tx_bytes",
	"eager_rx_msgs",     "eager_rx_bytes",
	"rndv_tx_msgs",	     "rndv_tx_bytes",
	"rndv_rx_msgs",	     "rndv_rx_bytes",
	"chan_send_tx_msgs", "chan_send_tx_bytes",
	"chan_send_rx_msgs", "chan_send_rx_bytes",
	"chan_wimm_tx_msgs", "chan_wimm_tx_bytes",
	"chan_wimm_rx_msgs", "chan_wimm_rx_bytes",
	"rma_put_ops",	     "rma_put_bytes",
	"rma_get_ops",	     "rma_get_bytes",
	"rma_atomic_ops",    "wrs_posted",
	"wrs_fenced",	     "order_calls",
	"order_fenced",	     "order_waited",
	"order_nothing",     "flushes",
	"cqe_errors",	     "cqe_flushed",
	"connects",	     "empty_polls",
	"cont_run_app",	     "cont_run_thread",
};
_Static_assert(sizeof(stat_names) / sizeof(stat_names[0]) ==
		       (sizeof(struct rcx_stats) -
			offsetof(struct rcx_stats, eager_tx_msgs)) /
			       sizeof(uint64_t),
	       "a name for every counter");

/* lock held: the whole struct, derived counts added */
static void collect(struct rcx_ctx *ctx, struct rcx_stats *st)
{
	int id;

	*st = ctx->st;
	st->empty_polls = rcx__empty_polls(ctx);
	st->size = sizeof(*st);
	st->version = RCX_STATS_VERSION;
	for (id = 0; id < RCX__FEAT_MAX; id++)
		if (rcx__feats[id]->stats)
			rcx__feats[id]->stats(ctx, st);
}

RCX_API int rcx_ctx_stats(struct rcx_ctx *ctx, struct rcx_stats *stats)
{
	struct rcx_stats st;
	size_t n;

	if (!rcx__ctx_live(ctx) || !stats) {
		rcx__log(RCX__LOG_ERROR, "stats", "rcx_ctx_stats: %s is NULL",
			 stats ? "ctx (or not a live context)" : "stats");
		return -EINVAL;
	}
	/* the first two fields are the minimum every version has */
	if (stats->size < offsetof(struct rcx_stats, eager_tx_msgs)) {
		rcx__log(RCX__LOG_ERROR, "stats",
			 "rcx_ctx_stats: stats->size %u is too small (set it "
			 "to sizeof(struct rcx_stats), %zu here)",
			 stats->size, sizeof(st));
		return -EINVAL;
	}
	rcx__lock(ctx);
	collect(ctx, &st);
	rcx__unlock(ctx);
	n = stats->size < sizeof(st) ? stats->size : sizeof(st);
	/* size stays the caller's: the part beyond ours is not touched */
	st.size = stats->size;
	memcpy(stats, &st, n);
	return 0;
}

void rcx__stats_report(struct rcx_ctx *ctx)
{
	struct rcx_stats st;
	char name[512];
	FILE *fp = stderr;
	uint64_t v;
	size_t i;

	if (!ctx->cfg.stats)
		return;
	collect(ctx, &st);
	if (ctx->cfg.stats_file[0]) {
		rcx__log_expand(name, sizeof(name), ctx->cfg.stats_file);
		fp = fopen(name, "a");
		if (!fp) {
			rcx__log(RCX__LOG_ERROR, "stats",
				 "RCX_STATS_FILE=%s: cannot open %s (%s); "
				 "printing to stderr",
				 ctx->cfg.stats_file, name, strerror(errno));
			fp = stderr;
		}
	}
	fprintf(fp, "rcx stats: pid %d rank %d provider %s device %s\n",
		(int)getpid(), ctx->world ? ctx->world->rank : -1,
		ctx->ops->name, ctx->info.name);
	for (i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++) {
		memcpy(&v,
		       (const char *)&st +
			       offsetof(struct rcx_stats, eager_tx_msgs) +
			       i * sizeof(v),
		       sizeof(v));
		fprintf(fp, "rcx stats: %s %llu\n", stat_names[i],
			(unsigned long long)v);
	}
	if (fp != stderr)
		fclose(fp);
	else
		fflush(fp);
}

static const char *const op_names[] = {
	[RCX_OP_SEND] = "SEND",		[RCX_OP_SEND_IMM] = "SEND_IMM",
	[RCX_OP_WRITE] = "WRITE",	[RCX_OP_WRITE_IMM] = "WRITE_IMM",
	[RCX_OP_READ] = "READ",		[RCX_OP_FADD] = "FADD",
	[RCX_OP_CSWAP] = "CSWAP",	[RCX_OP_RECV] = "RECV",
	[RCX_OP_RECV_IMM] = "RECV_IMM",
};

static const char *op_name(unsigned int op)
{
	return op < sizeof(op_names) / sizeof(op_names[0]) && op_names[op]
		       ? op_names[op]
		       : "?";
}

void rcx__stats_trace_cqes(struct rcx_ctx *ctx, const struct rcx_cqe *cqe,
			   int n)
{
	int i;

	(void)ctx;
	for (i = 0; i < n; i++)
		rcx__log(RCX__LOG_TRACE, "cq",
			 "completion %s len %u ep %p wr_id 0x%llx status %d "
			 "(%s) vendor %u%s",
			 op_name(cqe[i].op), cqe[i].byte_len, cqe[i].ep_ctx,
			 (unsigned long long)cqe[i].wr_id, cqe[i].status,
			 cqe[i].status ? rcx_strerror(cqe[i].status) : "ok",
			 cqe[i].vendor, cqe[i].has_imm ? " imm" : "");
}

/*
 * RCX_LOG_LEVEL=trace: the provider's table with its posts wrapped, so
 * each WR posted is logged; the fast paths call through ctx->ops (or
 * take their post functions from it), so at any other level the posts
 * pay nothing. The wrapped table sends each post to the endpoint's maker
 * (rcx__obj_ops), as a provider over others (auto) does. One table per
 * provider, for the process's life.
 */
#define TRACED_MAX 8
static pthread_mutex_t traced_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	const struct rcx_provider_ops *real;
	struct rcx_provider_ops ops;
} traced[TRACED_MAX];

static void trace_wr(const struct rcx_ep *ep, const struct rcx_wr *wr, int ret)
{
	rcx__log(RCX__LOG_TRACE, "wr",
		 "post %s len %u ep %p wr_id 0x%llx raddr 0x%llx flags 0x%x%s: "
		 "%d",
		 op_name(wr->op), wr->length, (const void *)ep,
		 (unsigned long long)wr->wr_id,
		 (unsigned long long)wr->remote_addr, wr->flags,
		 wr->flags & RCX_WR_FENCE ? " fence" : "", ret);
}

static int trace_post_send(struct rcx_ep *ep, struct rcx_wr *wr,
			   struct rcx_wr **bad)
{
	int ret = rcx__obj_ops(ep)->post_send(ep, wr, bad);

	for (; wr; wr = wr->next)
		trace_wr(ep, wr, ret);
	return ret;
}

static int trace_post_recv(struct rcx_ep *ep, struct rcx_wr *wr,
			   struct rcx_wr **bad)
{
	int ret = rcx__obj_ops(ep)->post_recv(ep, wr, bad);

	for (; wr; wr = wr->next)
		rcx__log(RCX__LOG_TRACE, "wr",
			 "post RECV len %u ep %p wr_id 0x%llx: %d", wr->length,
			 (const void *)ep, (unsigned long long)wr->wr_id, ret);
	return ret;
}

static void trace_pwrs(const struct rcx_ep *ep, struct rcx_pwr **pwr, int n,
		       bool recv, int ret)
{
	int i;

	for (i = 0; i < n; i++)
		rcx__log(RCX__LOG_TRACE, "wr",
			 "post prepared %s len %u ep %p wr_id 0x%llx addr "
			 "0x%llx raddr 0x%llx: %d",
			 recv ? "receive" : "send", *pwr[i]->length,
			 (const void *)ep, (unsigned long long)*pwr[i]->wr_id,
			 (unsigned long long)*pwr[i]->addr,
			 (unsigned long long)*pwr[i]->remote_addr, ret);
}

static int trace_pwr_post(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	int ret = rcx__obj_ops(ep)->pwr_post(ep, pwr, n);

	trace_pwrs(ep, pwr, n, false, ret);
	return ret;
}

static int trace_pwr_post_recv(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	int ret = rcx__obj_ops(ep)->pwr_post_recv(ep, pwr, n);

	trace_pwrs(ep, pwr, n, true, ret);
	return ret;
}

static int trace_pwr_post_list(struct rcx_ep *ep, struct rcx_pwr **pwr, int n,
			       int recv, int *posted)
{
	int ret = rcx__obj_ops(ep)->pwr_post_list(ep, pwr, n, recv, posted);

	/* those that went, then the refused one and the rest */
	trace_pwrs(ep, pwr, *posted, recv != 0, 0);
	trace_pwrs(ep, pwr + *posted, n - *posted, recv != 0, ret);
	return ret;
}

const struct rcx_provider_ops *rcx__stats_ops(const struct rcx_provider_ops *o)
{
	const struct rcx_provider_ops *ret = o;
	int i;

	if (!o || rcx__log_level < RCX__LOG_TRACE)
		return o;
	pthread_mutex_lock(&traced_lock);
	for (i = 0; i < TRACED_MAX && traced[i].real; i++)
		if (traced[i].real == o)
			break;
	if (i < TRACED_MAX) {
		if (!traced[i].real) {
			traced[i].ops = *o;
			traced[i].ops.post_send = trace_post_send;
			traced[i].ops.post_recv = trace_post_recv;
			traced[i].ops.pwr_post = trace_pwr_post;
			traced[i].ops.pwr_post_recv = trace_pwr_post_recv;
			traced[i].ops.pwr_post_list = trace_pwr_post_list;
			traced[i].real = o;
		}
		ret = &traced[i].ops;
	}
	pthread_mutex_unlock(&traced_lock);
	return ret;
}
