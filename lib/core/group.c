/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Groups: the world from the bootstrap (addresses exchanged out of band,
 * then every rank connects to each lower rank and accepts the higher
 * ones: on first use by default, at once with RCX_CONNECT=eager),
 * perftest-style pairs (connect/accept), and the barrier and
 * allgather that windows and channels use, over point-to-point on the
 * group's collective tag space.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/core/core.h"

/*
 * As eagerly, a lazy connection is made by the higher rank of the pair.
 * PD_ASK: a lower rank that wants one asks the higher rank to connect;
 * the request is rejected and answered with a PD_WORLD one.
 * PD_RECONN: a broken world connection is remade by the rank that made
 * it (conn.c), in place of the old one; PD_REASK: the other rank asks
 * it to (rejected, answered with a PD_RECONN). PD_PAIR_RE: a pair's
 * connector remakes it, naming the token it sent in its PD_PAIR (jobid);
 * the acceptor has no address to ask: it waits for it.
 */
enum { PD_WORLD = 1, PD_PAIR = 2, PD_ASK = 3 };
enum { PD_RECONN = 4, PD_REASK = 5, PD_PAIR_RE = 6 };

/* Private data of a connection request (at most 56 bytes on the wire). */
struct conn_pdata {
	char magic[4];
	uint8_t kind;
	uint8_t pad[3];
	uint32_t rank;
	uint32_t size;
	uint64_t jobid;
};

#define ADDR_LEN 128

static int group_new(struct rcx_ctx *ctx, int rank, int size,
		     struct rcx_group **out)
{
	struct rcx_group *g = calloc(1, sizeof(*g));

	if (!g)
		return -ENOMEM;
	g->conns = calloc(size, sizeof(*g->conns));
	g->failed = calloc(size, 1);
	g->acked = calloc(size, 1);
	if (!g->conns || !g->failed || !g->acked) {
		free(g->conns);
		free(g->failed);
		free(g->acked);
		free(g);
		return -ENOMEM;
	}
	g->magic = RCX__GROUP_MAGIC;
	g->refs = 1;
	g->urefs = 1;
	g->ctx = ctx;
	g->rank = rank;
	g->size = size;
	g->next = ctx->groups;
	ctx->groups = g;
	*out = g;
	return 0;
}

static void group_destroy(struct rcx_group *g)
{
	struct rcx_ctx *ctx = g->ctx;
	struct rcx_group **pp;
	int i;

	/* what ends now may let go of g (a collective's request): moot */
	g->refs = -1;
	rcx__p2p_cancel_group(g, -ECANCELED);
	/* a sub-group's connections are its root's: they stay */
	for (i = 0; !g->root && i < g->size; i++)
		rcx__conn_destroy(g->conns[i]);
	/* what arrived while the connections drained is dropped too */
	rcx__p2p_cancel_group(g, -ECANCELED);
	for (pp = &ctx->groups; *pp; pp = &(*pp)->next)
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	if (ctx->world == g)
		ctx->world = NULL;
	g->magic = 0;
	/* a sub-group is newer than its root: at teardown (groups newest
	 * first) it goes first, and may take the root with it */
	if (g->root)
		rcx__group_release(g->root);
	free(g->root_rank);
	free(g->of_root);
	free(g->conns);
	free(g->failed);
	free(g->acked);
	free(g);
}

static bool pdata_ok(const struct rcx__pending_req *p, uint8_t kind,
		     struct conn_pdata *pd)
{
	if (p->len < sizeof(*pd))
		return false;
	memcpy(pd, p->pdata, sizeof(*pd));
	return !memcmp(pd->magic, "RCX1", 4) && pd->kind == kind;
}

/* Take the first queued request accepted by want(); NULL if none. */
static struct rcx__pending_req *take_req(struct rcx_ctx *ctx, uint8_t kind,
					 bool (*want)(const struct conn_pdata *,
						      void *),
					 void *arg, struct conn_pdata *pd)
{
	struct rcx__pending_req *p, **pp;

	for (pp = &ctx->conn_reqs; (p = *pp); pp = &p->next) {
		if (pdata_ok(p, kind, pd) && want(pd, arg)) {
			*pp = p->next;
			return p;
		}
	}
	return NULL;
}

static bool want_world(const struct conn_pdata *pd, void *arg)
{
	struct rcx_group *g = arg;

	return pd->jobid == g->ctx->boot->jobid && (int)pd->size == g->size &&
	       (int)pd->rank > g->rank && (int)pd->rank < g->size &&
	       !g->conns[pd->rank]->ep;
}

static bool want_any(const struct conn_pdata *pd, void *arg)
{
	return true;
}

/* Drive connection events until every connection of g is up. */
static int wait_up(struct rcx_group *g, long long deadline_us, bool world)
{
	struct rcx_ctx *ctx = g->ctx;
	struct rcx__pending_req *p;
	struct conn_pdata pd;
	int i, up, ret;

	for (;;) {
		ret = rcx__cm_progress(ctx);
		if (ret < 0)
			return ret;
		while (world &&
		       (p = take_req(ctx, PD_WORLD, want_world, g, &pd))) {
			ret = rcx__conn_accept(g->conns[pd.rank], p->req);
			free(p);
			if (ret)
				return ret;
		}
		for (i = 0, up = 0; i < g->size; i++) {
			struct rcx__conn *c = g->conns[i];

			if (!c)
				continue;
			if (g->acked[i]) { /* validated out: not needed */
				up++;
				continue;
			}
			if (c->state == RCX__CONN_FAILED)
				return c->error ? c->error : -ECONNABORTED;
			if (c->state == RCX__CONN_CLOSED)
				return -ECONNRESET; /* it left */
			up += c->state == RCX__CONN_UP;
		}
		if (up == g->size - 1)
			return 0;
		if (rcx__now_us() > deadline_us)
			return -ETIMEDOUT;
		rcx__wait_events(ctx, 10);
	}
}

static void pdata_fill(struct conn_pdata *pd, uint8_t kind, int rank, int size,
		       uint64_t jobid)
{
	memset(pd, 0, sizeof(*pd));
	memcpy(pd->magic, "RCX1", 4);
	pd->kind = kind;
	pd->rank = rank;
	pd->size = size;
	pd->jobid = jobid;
}

/* Waits wake up for the launcher's failure notices too (ft.c). */
static void watch_boot(struct rcx_ctx *ctx)
{
	int fd;

	if (!ctx->ops->watch_fd || !ctx->boot->ops->event_fd)
		return;
	fd = ctx->boot->ops->event_fd(ctx->boot);
	if (fd >= 0)
		ctx->ops->watch_fd(ctx->dev, fd);
}

/*
 * A lazy world's connection request (from cm progress): PD_WORLD from a
 * higher rank is accepted, PD_ASK from a lower rank is rejected and
 * answered by connecting. false: not the world's (left queued).
 */
static bool world_req(struct rcx_group *g, struct rcx__pending_req *p)
{
	struct rcx_ctx *ctx = g->ctx;
	struct conn_pdata pd;
	struct rcx__conn *c;
	bool ask;

	if (p->len < sizeof(pd))
		return false;
	memcpy(&pd, p->pdata, sizeof(pd));
	ask = pd.kind == PD_ASK;
	if (memcmp(pd.magic, "RCX1", 4) || (pd.kind != PD_WORLD && !ask) ||
	    pd.jobid != ctx->boot->jobid || (int)pd.size != g->size ||
	    (int)pd.rank >= g->size || (int)pd.rank == g->rank ||
	    ask != ((int)pd.rank < g->rank))
		return false;
	/* a member that just asked or connected and cannot be answered or
	 * accepted now died in between */
	c = g->conns[pd.rank];
	if (ask || !c || c->ep ||
	    (c->state != RCX__CONN_IDLE && c->state != RCX__CONN_CONNECTING)) {
		ctx->ops->ep_reject(ctx->dev, p->req);
		if (ask && c && c->state == RCX__CONN_IDLE &&
		    rcx__conn_start(c))
			rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
	} else if (rcx__conn_accept(c, p->req)) {
		ctx->ops->ep_reject(ctx->dev, p->req);
		rcx__conn_fail(c, RCX_ERR_PROC_FAILED);
	}
	free(p);
	return true;
}

size_t rcx__group_reconn_pdata(const struct rcx__conn *c, bool ask, uint8_t *pd)
{
	const struct rcx__boot *b = c->ctx->boot;
	struct conn_pdata d;

	if (c->pair_token)
		pdata_fill(&d, PD_PAIR_RE, c->g->rank, c->g->size,
			   c->pair_token);
	else
		pdata_fill(&d, ask ? PD_REASK : PD_RECONN, c->g->rank,
			   c->g->size, b ? b->jobid : 0);
	memcpy(pd, &d, sizeof(d));
	return sizeof(d);
}

/* The pair group whose acceptor's connection took token; NULL: none. */
static struct rcx__conn *pair_of(struct rcx_ctx *ctx, uint64_t token)
{
	struct rcx_group *g;

	for (g = ctx->groups; g; g = g->next)
		if (!g->root && g != ctx->world && g->size == 2 &&
		    g->rank == 0 && g->conns[1] &&
		    g->conns[1]->pair_token == token)
			return g->conns[1];
	return NULL;
}

/* A pair's connector remakes the connection: in place of the old one. */
static void pair_reconn_req(struct rcx_ctx *ctx, struct rcx__pending_req *p,
			    const struct conn_pdata *pd)
{
	struct rcx__conn *c = pd->jobid ? pair_of(ctx, pd->jobid) : NULL;

	if (!c || pd->rank != 1 || pd->size != 2) {
		rcx__log(RCX__LOG_WARN, "conn",
			 "pair reconnection request (token %#llx, rank %u "
			 "of %u): no such pair here, rejected",
			 (unsigned long long)pd->jobid, pd->rank, pd->size);
		ctx->ops->ep_reject(ctx->dev, p->req);
	} else {
		rcx__conn_reconn_req(c, p->req, false);
	}
	free(p);
}

bool rcx__group_reconn_req(struct rcx_ctx *ctx, struct rcx__pending_req *p)
{
	struct rcx_group *g = ctx->world;
	struct conn_pdata pd;
	bool ask;

	if (p->len < sizeof(pd))
		return false;
	memcpy(&pd, p->pdata, sizeof(pd));
	if (!memcmp(pd.magic, "RCX1", 4) && pd.kind == PD_PAIR_RE) {
		pair_reconn_req(ctx, p, &pd);
		return true;
	}
	if (!g || memcmp(pd.magic, "RCX1", 4) ||
	    (pd.kind != PD_RECONN && pd.kind != PD_REASK))
		return false;
	ask = pd.kind == PD_REASK;
	/* the higher rank of a pair made the connection, and remakes it */
	if (pd.jobid != ctx->boot->jobid || (int)pd.size != g->size ||
	    (int)pd.rank >= g->size || (int)pd.rank == g->rank ||
	    ask != ((int)pd.rank < g->rank) || !g->conns[pd.rank]) {
		rcx__log(RCX__LOG_WARN, "conn",
			 "reconnection request from rank %u of %u: not ours, "
			 "rejected",
			 pd.rank, pd.size);
		ctx->ops->ep_reject(ctx->dev, p->req);
	} else {
		rcx__conn_reconn_req(g->conns[pd.rank], p->req, ask);
	}
	free(p);
	return true;
}

bool rcx__group_conn_req(struct rcx_ctx *ctx, struct rcx__pending_req *p)
{
	return ctx->world && ctx->lazy && world_req(ctx->world, p);
}

/* Every connection lazy, and the requests that came before the world. */
static int world_lazy(struct rcx_group *g, const char *addrs,
		      const struct conn_pdata *pd)
{
	struct rcx_ctx *ctx = g->ctx;
	struct rcx__pending_req *p, **pp;
	struct conn_pdata ask = *pd;
	int i, ret;

	ask.kind = PD_ASK;
	for (i = 0; i < g->size; i++) {
		if (i == g->rank)
			continue;
		ret = rcx__conn_set_lazy(g->conns[i], addrs + i * ADDR_LEN,
					 i < g->rank, pd, &ask, sizeof(*pd));
		if (ret)
			return ret;
	}
	for (pp = &ctx->conn_reqs; (p = *pp);) {
		*pp = p->next;
		if (world_req(g, p))
			continue;
		*pp = p;
		pp = &p->next;
	}
	return 0;
}

int rcx__group_connect_all(struct rcx_group *g)
{
	long long deadline;
	int i, ret;

	for (i = 0; i < g->size; i++) {
		if (!g->conns[i] || g->conns[i]->state != RCX__CONN_IDLE ||
		    g->acked[i])
			continue;
		ret = rcx__conn_start(g->conns[i]);
		if (ret)
			rcx__conn_fail(g->conns[i], ret);
	}
	deadline = rcx__now_us() + g->ctx->cfg.connect_timeout_ms * 1000LL;
	return wait_up(g, deadline, false);
}

static int world_create(struct rcx_ctx *ctx, struct rcx_group **out)
{
	struct rcx__boot *b;
	struct rcx_group *g;
	struct conn_pdata pd;
	char *addrs = NULL, me[ADDR_LEN] = { 0 };
	long long deadline;
	int i, ret;

	if (!ctx->boot) {
		ret = rcx__boot_open(ctx->cfg.bootstrap[0] ? ctx->cfg.bootstrap
							   : NULL,
				     &ctx->boot);
		if (ret)
			return ret;
		watch_boot(ctx);
	}
	b = ctx->boot;
	rcx__log_set_rank(b->rank);
	ret = group_new(ctx, b->rank, b->size, &g);
	if (ret)
		return ret;
	addrs = calloc(b->size, ADDR_LEN);
	if (!addrs) {
		ret = -ENOMEM;
		goto err;
	}
	snprintf(me, sizeof(me), "%s", ctx->addr);
	ret = b->ops->allgather(b, me, ADDR_LEN, addrs);
	if (ret)
		goto err;
	for (i = 0; i < b->size; i++)
		addrs[i * ADDR_LEN + ADDR_LEN - 1] = 0;
	for (i = 0; i < b->size; i++) {
		if (i == b->rank)
			continue;
		ret = rcx__conn_new(ctx, g, i, &g->conns[i]);
		if (ret)
			goto err;
	}
	pdata_fill(&pd, PD_WORLD, b->rank, b->size, b->jobid);
	if (ctx->lazy) {
		ret = world_lazy(g, addrs, &pd);
		if (ret)
			goto err;
		free(addrs);
		*out = g;
		return 0;
	}
	for (i = 0; i < b->size; i++) {
		if (i == b->rank)
			continue;
		/* where to remake it if it breaks (conn.c) */
		ret = rcx__conn_set_peer(g->conns[i], addrs + i * ADDR_LEN,
					 i < b->rank);
		if (!ret && i < b->rank)
			ret = rcx__conn_connect(g->conns[i],
						addrs + i * ADDR_LEN, &pd,
						sizeof(pd));
		if (ret)
			goto err;
	}
	deadline = rcx__now_us() + ctx->cfg.connect_timeout_ms * 1000LL;
	ret = wait_up(g, deadline, true);
	if (ret)
		goto err;
	free(addrs);
	*out = g;
	return 0;
err:
	free(addrs);
	group_destroy(g);
	return ret;
}

RCX_API int rcx_group_world(struct rcx_ctx *ctx, struct rcx_group **out)
{
	int ret = 0;

	if (!rcx__ctx_live(ctx) || !out)
		return -EINVAL;
	rcx__lock(ctx);
	if (ctx->world) {
		/* the world again, perhaps after the user freed it while
		 * a window or a persistent request held it */
		rcx__group_user_hold(ctx->world);
	} else {
		ret = world_create(ctx, &ctx->world);
	}
	if (!ret)
		*out = ctx->world;
	rcx__unlock(ctx);
	return ret;
}

static long long deadline_of(int timeout_ms)
{
	return timeout_ms < 0 ? (long long)1 << 62
			      : rcx__now_us() + timeout_ms * 1000LL;
}

/* -1 is no limit; below it is a mistake (as for rcx_ctx_wait) */
static bool timeout_bad(const char *fn, int timeout_ms)
{
	if (timeout_ms >= -1)
		return false;
	rcx__log(RCX__LOG_ERROR, "group", "%s: timeout_ms %d (-1 is no limit)",
		 fn, timeout_ms);
	return true;
}

RCX_API int rcx_group_connect(struct rcx_ctx *ctx, const char *addr,
			      int timeout_ms, struct rcx_group **out)
{
	struct rcx_group *g;
	struct conn_pdata pd;
	int ret;

	if (!rcx__ctx_live(ctx) || !addr || !*addr || !out ||
	    timeout_bad(__func__, timeout_ms))
		return -EINVAL;
	rcx__lock(ctx);
	ret = group_new(ctx, 1, 2, &g);
	if (ret)
		goto out;
	/* the pair's token: what a reconnection names to the acceptor */
	pdata_fill(&pd, PD_PAIR, 1, 2,
		   ((uint64_t)rcx__now_us() << 16) ^ (uintptr_t)g ^
			   ((uint64_t)getpid() << 40));
	ret = rcx__conn_new(ctx, g, 0, &g->conns[0]);
	if (!ret)
		ret = rcx__conn_set_peer(g->conns[0], addr, true);
	if (!ret) {
		g->conns[0]->pair_token = pd.jobid;
		ret = rcx__conn_connect(g->conns[0], addr, &pd, sizeof(pd));
	}
	if (!ret)
		ret = wait_up(g, deadline_of(timeout_ms), false);
	if (ret)
		group_destroy(g);
	else
		*out = g;
out:
	rcx__unlock(ctx);
	return ret;
}

RCX_API int rcx_group_accept(struct rcx_ctx *ctx, int timeout_ms,
			     struct rcx_group **out)
{
	long long deadline = deadline_of(timeout_ms);
	struct rcx__pending_req *p;
	struct rcx_group *g;
	struct conn_pdata pd;
	int ret;

	if (!rcx__ctx_live(ctx) || !out || timeout_bad(__func__, timeout_ms))
		return -EINVAL;
	rcx__lock(ctx);
	while (!(p = take_req(ctx, PD_PAIR, want_any, NULL, &pd))) {
		ret = rcx__cm_progress(ctx);
		if (ret < 0)
			goto out;
		if (rcx__now_us() > deadline) {
			ret = -ETIMEDOUT;
			goto out;
		}
		rcx__wait_events(ctx, 10);
	}
	ret = group_new(ctx, 0, 2, &g);
	if (!ret) {
		ret = rcx__conn_new(ctx, g, 1, &g->conns[1]);
		if (!ret) {
			/* a connector that sent no token is not remade */
			g->conns[1]->pair_token = pd.jobid;
			ret = rcx__conn_accept(g->conns[1], p->req);
		} else
			ctx->ops->ep_reject(ctx->dev, p->req);
		if (!ret)
			ret = wait_up(g, deadline, false);
		if (ret)
			group_destroy(g);
		else
			*out = g;
	} else {
		ctx->ops->ep_reject(ctx->dev, p->req);
	}
	free(p);
out:
	rcx__unlock(ctx);
	return ret;
}

RCX_API int rcx_group_rank(const struct rcx_group *g)
{
	return rcx__group_live(g) ? g->rank : -EINVAL;
}

RCX_API int rcx_group_size(const struct rcx_group *g)
{
	return rcx__group_live(g) ? g->size : -EINVAL;
}

static int peer_info_locked(struct rcx_group *g, int rank,
			    struct rcx_peer_info *info)
{
	const struct rcx_provider_ops *ops;
	struct rcx__conn *c = g->conns[rank];
	struct rcx_ep_info ei;
	int ret;

	if (g->failed[rank])
		return RCX_ERR_PROC_FAILED;
	if (!c || c->state != RCX__CONN_UP || !c->ep)
		return -ENOTCONN;
	/* the endpoint's maker: auto's choice for this peer */
	ops = rcx__obj_ops(c->ep);
	ret = ops->ep_query(c->ep, &ei);
	if (ret)
		return ret;
	memset(info, 0, sizeof(*info));
	info->version = RCX_PEER_INFO_VERSION;
	snprintf(info->provider, sizeof(info->provider), "%s", ops->name);
	snprintf(info->device, sizeof(info->device), "%s", ei.device);
	info->local_qpn = ei.qpn;
	info->remote_qpn = ei.remote_qpn;
	info->path_mtu = ei.path_mtu;
	info->max_inline = ei.max_inline;
	return 0;
}

RCX_API int rcx_group_peer_info(struct rcx_group *g, int rank,
				struct rcx_peer_info *info)
{
	struct rcx_peer_info out;
	int ret;

	if (!rcx__group_live(g) || !info)
		return -EINVAL;
	if (info->version != RCX_PEER_INFO_VERSION) {
		rcx__log(RCX__LOG_ERROR, "group",
			 "rcx_group_peer_info: info version %u (this rcx knows "
			 "%d)",
			 info->version, RCX_PEER_INFO_VERSION);
		return -EINVAL;
	}
	if (rank < 0 || rank >= g->size) {
		rcx__log(RCX__LOG_ERROR, "group",
			 "rcx_group_peer_info: rank %d out of range (group of "
			 "%d)",
			 rank, g->size);
		return -EINVAL;
	}
	if (rank == g->rank)
		return -ENOTCONN;
	rcx__lock(g->ctx);
	ret = peer_info_locked(g, rank, &out);
	rcx__unlock(g->ctx);
	if (!ret)
		*info = out;
	return ret;
}

static int coll_tag(struct rcx_group *g, int round)
{
	return (int)((g->coll_seq & 0xffffff) << 6) | round;
}

int rcx__group_survivors(const struct rcx_group *g, int root, int *map, int *me,
			 int *vroot)
{
	int i, n = 0;

	*me = *vroot = -1;
	for (i = 0; i < g->size; i++) {
		if (g->acked[i])
			continue;
		if (i == g->rank)
			*me = n;
		if (i == root)
			*vroot = n;
		map[n++] = i;
	}
	return n;
}

/* Does the collective leave rank i out: in excl, or validated out? */
static bool left_out(const struct rcx_group *g, const uint8_t *excl, int i)
{
	return (excl && excl[i]) || g->acked[i];
}

/* Has a rank failed that the collective needs (not left out)? */
static bool lost_member(const struct rcx_group *g, const uint8_t *excl)
{
	int i;

	if (!g->nfailed)
		return false;
	for (i = 0; i < g->size; i++)
		if (g->failed[i] && !left_out(g, excl, i))
			return true;
	return false;
}

/*
 * A collective that ended in error (a connection refused or reset by a
 * member that died, a message cancelled) while a member it needs is
 * known failed reports the failure.
 */
static int failed_instead(const struct rcx_group *g, const uint8_t *excl,
			  int ret)
{
	return ret && lost_member(g, excl) ? RCX_ERR_PROC_FAILED : ret;
}

/*
 * Dissemination barrier: log2(n) rounds of zero-byte messages among the
 * ranks not in excl (NULL: all).
 */
int rcx__group_barrier_locked(struct rcx_group *g, const uint8_t *excl)
{
	struct rcx_req *r[2];
	int *m, n = 0, me = 0, i, k, round = 0, ret = 0;

	if (lost_member(g, excl)) /* it cannot complete: ft.c */
		return RCX_ERR_PROC_FAILED;
	m = malloc(sizeof(*m) * (size_t)g->size);
	if (!m)
		return -ENOMEM;
	for (i = 0; i < g->size; i++) {
		if (left_out(g, excl, i))
			continue;
		if (i == g->rank)
			me = n;
		m[n++] = i;
	}
	g->coll_seq++;
	for (k = 1; k < n && !ret; k <<= 1, round++) {
		int to = m[(me + k) % n];
		int from = m[(me - k + n) % n];

		/*
		 * A failure seen during an earlier round cancelled what was
		 * posted then, not what this round would post: a rank that
		 * saw it too has left, and would never send this round.
		 */
		if (lost_member(g, excl)) {
			ret = RCX_ERR_PROC_FAILED;
			break;
		}
		ret = rcx__irecv(g, NULL, 0, from, coll_tag(g, round),
				 RCX__CID_COLL, &r[0]);
		if (ret) {
			/* this round's message still goes: to waits for it */
			if (!rcx__isend(g, NULL, 0, to, coll_tag(g, round),
					RCX__CID_COLL, &r[1]))
				rcx__waitall_locked(g->ctx, 1, &r[1]);
			break;
		}
		ret = rcx__isend(g, NULL, 0, to, coll_tag(g, round),
				 RCX__CID_COLL, &r[1]);
		if (ret) {
			rcx__waitall_locked(g->ctx, 1, r);
			break;
		}
		ret = rcx__waitall_locked(g->ctx, 2, r);
	}
	free(m);
	return failed_instead(g, excl, ret);
}

RCX_API int rcx_group_barrier(struct rcx_group *g)
{
	int ret;

	if (!rcx__group_live(g))
		return -EINVAL;
	rcx__lock(g->ctx);
	ret = rcx__group_barrier_locked(g, NULL);
	rcx__unlock(g->ctx);
	return ret;
}

/*
 * Every rank not in excl sends len bytes to every other one: the same
 * in to all (stride 0, an allgather) or in + i * stride to rank i (an
 * all-to-all); rank i's bytes land at out + i * len.
 */
int rcx__group_exchange_locked(struct rcx_group *g, const void *in,
			       size_t stride, size_t len, void *out,
			       const uint8_t *excl)
{
	struct rcx_req **r;
	int i, n = 0, ret = 0, err, tag;

	if (len) /* out and in may be NULL when len is 0 */
		memcpy((char *)out + (size_t)g->rank * len,
		       (const char *)in + (size_t)g->rank * stride, len);
	if (g->size == 1)
		return 0;
	if (lost_member(g, excl))
		return RCX_ERR_PROC_FAILED;
	r = calloc(2 * (size_t)g->size, sizeof(*r));
	if (!r)
		return -ENOMEM;
	g->coll_seq++;
	tag = coll_tag(g, 0);
	/*
	 * Everything is posted even when a post fails (a peer that left, no
	 * memory): the others wait for our sends. The first error is the
	 * result; what was posted finishes or fails first.
	 */
	for (i = 0; i < g->size; i++) {
		if (i == g->rank || left_out(g, excl, i))
			continue;
		err = rcx__irecv(g, (char *)out + (size_t)i * len, len, i, tag,
				 RCX__CID_COLL, &r[n]);
		if (!err)
			n++;
		else if (!ret)
			ret = err;
	}
	for (i = 0; i < g->size; i++) {
		if (i == g->rank || left_out(g, excl, i))
			continue;
		err = rcx__isend(g, (const char *)in + (size_t)i * stride, len,
				 i, tag, RCX__CID_COLL, &r[n]);
		if (!err)
			n++;
		else if (!ret)
			ret = err;
	}
	err = rcx__waitall_locked(g->ctx, n, r);
	free(r);
	return failed_instead(g, excl, ret ? ret : err);
}

int rcx__group_allgather_locked(struct rcx_group *g, const void *in, size_t len,
				void *out, const uint8_t *excl)
{
	return rcx__group_exchange_locked(g, in, 0, len, out, excl);
}

RCX_API int rcx_group_allgather(struct rcx_group *g, const void *in, size_t len,
				void *out)
{
	int ret;

	if (!rcx__group_live(g) || (len && (!in || !out)))
		return -EINVAL;
	rcx__lock(g->ctx);
	ret = rcx__group_allgather_locked(g, in, len, out, NULL);
	rcx__unlock(g->ctx);
	return ret;
}

/*
 * Sub-groups: MPI_Comm_split, and MPI_Group_incl/excl with
 * MPI_Comm_create. Collective over the parent: an allgather of what
 * each rank asks, then a barrier, so that no member sends on the new
 * group before every member has made it (its messages would find no
 * group). The connections stay the root's; messages carry the gid.
 */
struct sub_wire {
	int32_t color;
	int32_t key;
	uint32_t gid; /* the smallest gid still free here */
	uint32_t bad; /* its own arguments were wrong */
	uint64_t sum; /* of the call and its rank list: every rank's alike */
};

struct sub_member {
	int key;
	int rank; /* in the parent */
};

static int member_cmp(const void *a, const void *b)
{
	const struct sub_member *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->rank - y->rank;
}

/* The sub-group of parent's ranks m[0..n-1], this one at m[me]. */
static int sub_new(struct rcx_group *parent, const struct sub_member *m, int n,
		   int me, uint32_t gid, struct rcx_group **out)
{
	struct rcx_group *root = rcx__group_root(parent), *g;
	int i, r, ret;

	ret = group_new(parent->ctx, me, n, &g);
	if (ret)
		return ret;
	g->root = root;
	rcx__group_hold(root);
	g->gid = gid;
	g->root_rank = malloc(sizeof(int) * (size_t)n);
	g->of_root = malloc(sizeof(int) * (size_t)root->size);
	if (!g->root_rank || !g->of_root) {
		group_destroy(g);
		return -ENOMEM;
	}
	for (i = 0; i < root->size; i++)
		g->of_root[i] = -1;
	for (i = 0; i < n; i++) {
		r = parent->root ? parent->root_rank[m[i].rank] : m[i].rank;
		g->root_rank[i] = r;
		g->of_root[r] = i;
		g->conns[i] = i == me ? NULL : root->conns[r];
		if (root->failed[r] && i != me) {
			g->failed[i] = 1;
			if (!g->nfailed++)
				g->failed_at_us = root->failed_at_us;
		}
		/* a member validated out of the parent stays out here */
		if (g->failed[i] && parent->acked[m[i].rank]) {
			g->acked[i] = 1;
			g->nacked++;
		}
	}
	*out = g;
	return 0;
}

/* Lock held. *out: the new group, or NULL for RCX_UNDEFINED. */
static int sub_split(struct rcx_group *parent, struct sub_wire *me,
		     struct rcx_group **out)
{
	struct rcx_group *root = rcx__group_root(parent), *g = NULL;
	struct sub_wire *all = calloc((size_t)parent->size, sizeof(*all));
	struct sub_member *m = calloc((size_t)parent->size, sizeof(*m));
	uint32_t gid = 0;
	int i, n = 0, mine = -1, ret, err;

	if (!all || !m) {
		ret = -ENOMEM;
		goto out;
	}
	me->gid = root->next_gid ? root->next_gid : 1;
	ret = rcx__group_allgather_locked(parent, me, sizeof(*me), all, NULL);
	if (ret)
		goto out;
	for (i = 0; i < parent->size; i++) {
		if (parent->acked[i]) /* validated out: sent nothing */
			continue;
		if (all[i].gid > gid)
			gid = all[i].gid;
		if (!ret && (all[i].bad || all[i].sum != me->sum)) {
			rcx__log(RCX__LOG_ERROR, "group",
				 "sub-group: rank %d of the parent %s", i,
				 all[i].bad ? "gave wrong arguments"
					    : "made another call");
			ret = -EINVAL;
		}
	}
	/* unique among this process's sub-groups of root, and the same at
	 * every member: the largest any rank of the parent had free */
	root->next_gid = gid + 1;
	for (i = 0; !ret && me->color != RCX_UNDEFINED && i < parent->size;
	     i++) {
		if (all[i].color != me->color || parent->acked[i])
			continue;
		m[n].key = all[i].key;
		m[n++].rank = i;
	}
	if (n) {
		qsort(m, (size_t)n, sizeof(*m), member_cmp);
		for (i = 0; i < n; i++)
			if (m[i].rank == parent->rank)
				mine = i;
		ret = sub_new(parent, m, n, mine, gid, &g);
	}
	err = rcx__group_barrier_locked(parent, NULL);
	if (!ret)
		ret = err;
	if (ret && g)
		group_destroy(g);
	else if (!ret)
		*out = g;
out:
	free(all);
	free(m);
	return ret;
}

static int sub_run(struct rcx_group *parent, struct sub_wire *me,
		   struct rcx_group **out)
{
	int ret;

	rcx__lock(parent->ctx);
	ret = sub_split(parent, me, out);
	rcx__unlock(parent->ctx);
	return ret;
}

RCX_API int rcx_group_split(struct rcx_group *parent, int color, int key,
			    struct rcx_group **out)
{
	struct sub_wire me = { .color = color, .key = key, .sum = 1 };

	if (!rcx__group_live(parent) || !out)
		return -EINVAL;
	if (color < 0 && color != RCX_UNDEFINED) {
		/* it still takes part: then every rank fails */
		rcx__log(RCX__LOG_ERROR, "group",
			 "rcx_group_split: color %d (>= 0 or RCX_UNDEFINED)",
			 color);
		me.bad = 1;
		me.color = RCX_UNDEFINED;
	}
	return sub_run(parent, &me, out);
}

/*
 * The rank list of incl/excl: each rank once, in range. Its sum (FNV-1a
 * of the call and the list) tells whether every rank gave the same.
 */
static bool ranks_ok(const char *fn, const struct rcx_group *parent, int n,
		     const int *ranks, uint64_t *sum)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint8_t *seen;
	const char *c;
	int i;

	for (c = fn; *c; c++) /* incl and excl differ */
		h = (h ^ (uint8_t)*c) * 0x100000001b3ull;

	if (n < 0 || n > parent->size || (n && !ranks)) {
		rcx__log(RCX__LOG_ERROR, "group",
			 "%s: n %d, ranks %p (group of %d)", fn, n,
			 (const void *)ranks, parent->size);
		return false;
	}
	seen = calloc((size_t)parent->size, 1);
	if (!seen)
		return false;
	for (i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= parent->size ||
		    seen[ranks[i]]) {
			rcx__log(RCX__LOG_ERROR, "group",
				 "%s: ranks[%d] = %d (out of 0..%d or twice)",
				 fn, i, ranks[i], parent->size - 1);
			free(seen);
			return false;
		}
		seen[ranks[i]] = 1;
		h = (h ^ (uint32_t)ranks[i]) * 0x100000001b3ull;
	}
	free(seen);
	*sum = (h ^ (uint32_t)n) * 0x100000001b3ull;
	return true;
}

/* Where parent's own rank is in ranks[0..n-1], or -1. */
static int index_of(const int *ranks, int n, int rank)
{
	int i;

	for (i = 0; i < n; i++)
		if (ranks[i] == rank)
			return i;
	return -1;
}

RCX_API int rcx_group_incl(struct rcx_group *parent, int n, const int *ranks,
			   struct rcx_group **out)
{
	struct sub_wire me = { .color = RCX_UNDEFINED };
	int at;

	if (!rcx__group_live(parent) || !out)
		return -EINVAL;
	if (!ranks_ok(__func__, parent, n, ranks, &me.sum)) {
		me.bad = 1;
	} else if ((at = index_of(ranks, n, parent->rank)) >= 0) {
		me.color = 0;
		me.key = at; /* in the order of the list */
	}
	return sub_run(parent, &me, out);
}

RCX_API int rcx_group_excl(struct rcx_group *parent, int n, const int *ranks,
			   struct rcx_group **out)
{
	struct sub_wire me = { .color = RCX_UNDEFINED };

	if (!rcx__group_live(parent) || !out)
		return -EINVAL;
	if (!ranks_ok(__func__, parent, n, ranks, &me.sum)) {
		me.bad = 1;
	} else if (index_of(ranks, n, parent->rank) < 0) {
		me.color = 0;
		me.key = parent->rank; /* in the parent's order */
	}
	return sub_run(parent, &me, out);
}

struct rcx_group *rcx__group_sub(struct rcx_group *root, uint32_t gid,
				 int *peer)
{
	struct rcx_group *g;

	for (g = root->ctx->groups; g; g = g->next) {
		if (g->root != root || g->gid != gid)
			continue;
		if (*peer < 0 || *peer >= root->size || g->of_root[*peer] < 0)
			break;
		*peer = g->of_root[*peer];
		return g;
	}
	RCX__LOG(RCX__LOG_DEBUG, "group",
		 "a message of sub-group %u from rank %d: not here, dropped",
		 gid, *peer);
	return NULL;
}

void rcx__group_subs_each(struct rcx_group *root, int r,
			  void (*fn)(struct rcx_group *, int, int), int err)
{
	struct rcx_group *g, *next;

	if (root->root || r < 0 || r >= root->size)
		return;
	for (g = root->ctx->groups; g; g = next) {
		next = g->next;
		if (g->root == root && g->of_root[r] >= 0)
			fn(g, g->of_root[r], err);
	}
}

RCX_API int rcx_group_free(struct rcx_group **gp)
{
	struct rcx_ctx *ctx;

	if (!gp || !rcx__group_live(*gp))
		return -EINVAL;
	ctx = (*gp)->ctx;
	rcx__lock(ctx);
	if (--(*gp)->urefs == 0)
		(*gp)->magic = RCX__GROUP_HELD;
	rcx__group_release(*gp);
	rcx__unlock(ctx);
	*gp = NULL;
	return 0;
}

void rcx__group_user_hold(struct rcx_group *g)
{
	g->refs++;
	g->urefs++;
	g->magic = RCX__GROUP_MAGIC;
}

void rcx__group_release(struct rcx_group *g)
{
	if (g->refs > 0 && --g->refs == 0)
		group_destroy(g);
}

void rcx__groups_destroy(struct rcx_ctx *ctx)
{
	while (ctx->groups)
		group_destroy(ctx->groups);
}

/* Is g a group of ctx that still exists? (compares pointers only) */
bool rcx__group_known(struct rcx_ctx *ctx, const struct rcx_group *g)
{
	const struct rcx_group *it;

	for (it = ctx->groups; it; it = it->next)
		if (it == g)
			return true;
	return false;
}
