/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_CORE_H
#define RCX_CORE_H

/* Core-private declarations shared by the files of lib/. */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <rcx/rcx.h>
#include "providers/provider.h"
#include "lib/boot/boot.h"
#include "lib/log/log.h"

#define RCX__LIKELY(x)	 __builtin_expect(!!(x), 1)
#define RCX__UNLIKELY(x) __builtin_expect(!!(x), 0)

/* a provider's address (listener), with its NUL */
#define RCX__ADDR_LEN 128

/* ---- configuration: one table, RCX_* environment variables (config.c) */
/* a cpulist ("0-3,8-11") as hwloc prints it, with its NUL */
#define RCX__CPULIST_LEN 256

struct rcx__config {
	char device[64];
	char provider[16];
	char bootstrap[16];
	char ifaddr[64];
	unsigned long port;
	unsigned long eager_size;
	unsigned long rndv_read_max;
	unsigned long rma_wr_max;
	unsigned long rx_depth;
	unsigned long tx_depth;
	unsigned long inline_size;
	unsigned long qp_timeout;
	unsigned long qp_retry;
	unsigned long rnr_retry;
	unsigned long spin_us;
	char yield[8];
	unsigned long connect_timeout_ms;
	unsigned long mr_cache;
	unsigned long heartbeat_ms;
	unsigned long ft_timeout_ms;
	char connect[8];
	char order_fence[8];
	unsigned long cq_size;
	char progress_cpus[RCX__CPULIST_LEN];
	char log_level[8];
	char log_file[256];
	unsigned long stats;
	char stats_file[256];
};

struct rcx__config_var {
	const char *name;
	const char *deflt;
	const char *help;
	size_t offset;
	size_t str_size; /* string field size, 0: unsigned long */
	unsigned long min, max;
};

extern const struct rcx__config_var rcx__config_vars[];
int rcx__config_load(struct rcx__config *cfg);

/* RCX_* variables rcx does not know: one warning each, once a process */
void rcx__env_check(void);
bool rcx__env_known(const char *name);
const char *rcx__env_nearest(const char *name);

/* ---- topology (topo.c) */
int rcx__topo_pick(const char (*names)[64], int n, const char *topo_xml,
		   const char *where_list, int *pick);
/* 0 when list is a cpulist ("0-3,8"; "0-": every cpu), else -EINVAL */
int rcx__topo_cpus_check(const char *list);
/*
 * Where a thread serving device dev (the continuation progress thread)
 * should run, as a cpulist in cpus[len]: the cpus of the device's
 * locality, or those of override (a cpulist, RCX_PROGRESS_CPUS; NULL or
 * "" for none), less the cpus the process may not use; "" (unbound) when
 * the device has no locality (virtual ones such as rxe, not found) or the
 * set holds every cpu. topo_xml: an hwloc XML file to use instead of this
 * machine (tests); NULL: this machine, where the locality is read from
 * sysfs without loading I/O discovery.
 * Errors: -EINVAL override malformed or topo_xml not loadable; -ENOSPC
 * len too short; -ENOMEM.
 */
int rcx__topo_near_cpus(const char *topo_xml, const char *dev,
			const char *override, char *cpus, size_t len);
/*
 * The same on this machine, and bind the calling thread there. cpus ends
 * holding where it is bound, "" when it stays unbound (errors included):
 * the errors above, or the negative errno of binding.
 */
int rcx__topo_bind_near(const char *dev, const char *override, char *cpus,
			size_t len);

/*
 * ---- completion dispatch: wr_id points at one of these, the provider
 * interface's struct rcx_wct under the core's name: cb takes every
 * completion, ok (when set) a successful one straight from the poll
 */
#define rcx__wrctx rcx_wct
typedef void rcx__wr_cb(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			const struct rcx_cqe *cqe);
typedef void rcx__wr_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			uint32_t byte_len, uint32_t imm, int has_imm);
/* An ok that takes the common case only: the rest goes to w->cb (ctx.c). */
void rcx__wc_ok_slow(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		     uint32_t byte_len, uint32_t imm, int has_imm);

/* ---- requests (req.c) */
enum rcx__req_kind {
	RCX__REQ_SEND = 1,
	RCX__REQ_RECV,
	RCX__REQ_INTERNAL,
	RCX__REQ_CHAN,
	RCX__REQ_BCOLL, /* a bound collective (lib/bcoll) */
};

enum rcx__req_state {
	RCX__REQ_INACTIVE, /* persistent, not started */
	RCX__REQ_ACTIVE,
	RCX__REQ_DONE, /* complete, not yet reported by test/wait */
};

#define RCX__REQ_MAGIC 0x52435852u /* live */
#define RCX__REQ_DEAD  0x0badf00du /* back in the pool */

struct rcx_group;
struct rcx__conn;
struct rcx__reg;

struct rcx__req_ops {
	int (*start)(struct rcx_req *req);
	void (*release)(struct rcx_req *req); /* before going to the pool */
	/* test/wait on this kind: run before the state is checked */
	void (*poll)(struct rcx_req *req);
	/* rcx_startall on a run of requests of this kind (one post list) */
	int (*start_many)(struct rcx_req **reqs, int n);
	/* rcx_bind_free on n requests of this kind (bound collectives) */
	int (*bind_free)(struct rcx_req **reqs, int n);
};

struct rcx__cont;

struct rcx_req {
	uint32_t magic;
	uint8_t kind;
	uint8_t state;
	uint8_t persistent;
	uint8_t user_freed; /* freed by the user while active */
	struct rcx_ctx *ctx;
	const struct rcx__req_ops *ops;
	struct rcx_status status;
	/*
	 * A test of this request, active and from one thread, is a poll
	 * through its context's peek (rcx__req_peek), then the progress
	 * pass's rest when due. NULL: the kind's poll or a progress pass.
	 */
	const struct rcx_cq_peek *peek;
	struct rcx__wrctx wrc; /* RDMA completion of this request */
	/* internal completion hook (handshakes, chains); NULL for most */
	void (*done)(struct rcx_req *req);
	void *done_arg;
	/* the object behind a request kind (a channel, a window op ...) */
	void *obj;
	/* attached continuation (cont.c), NULL when none */
	struct rcx__cont *cont;
	struct rcx_req *next; /* queue link: posted, backlog, pool */
	/* point-to-point */
	struct rcx_group *g;
	struct rcx__conn *conn;
	void *buf;
	size_t len;
	int peer;
	int tag;
	uint8_t cid;
	uint8_t sendop;	  /* backlog: which message to send */
	uint8_t keep_reg; /* reg held for the request's life */
	uint8_t mark;	  /* seen by an array call's check (req.c) */
	uint32_t rndv_id;
	struct rcx__reg *reg;
	/* rendezvous source seen by a receive, and the bytes of it not yet
	 * asked for: it is read in pieces (p2p.c) */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t rlen;
};

struct rcx_req *rcx__req_get(struct rcx_ctx *ctx, int kind,
			     const struct rcx__req_ops *ops);
void rcx__req_put(struct rcx_req *req);
/* done hook, continuation, release of a freed one (rcx__req_complete) */
void rcx__req_complete_hooks(struct rcx_req *req);
/* fn on every live request (teardown); fn gets and puts none */
void rcx__req_each(struct rcx_ctx *ctx,
		   void (*fn)(struct rcx_req *r, void *arg), void *arg);
/* -EINVAL (logged, naming fn) when a request is twice in reqs, else 0;
 * reqs: live requests or NULL, which may repeat */
int rcx__reqs_unique(const char *fn, int n, struct rcx_req *const *reqs);
/* wait for n requests and release them, lock held; first error */
int rcx__waitall_locked(struct rcx_ctx *ctx, int n, struct rcx_req **reqs);
static inline bool rcx__req_live(const struct rcx_req *r)
{
	return r && r->magic == RCX__REQ_MAGIC;
}

/* ---- memory registrations (mr.c) */
struct rcx__reg {
	struct rcx__reg *next;
	uintptr_t addr;
	size_t len;
	unsigned int access;
	unsigned int refs;
	bool priv; /* never shared: its key dies with its one user */
	struct rcx_mr *mr;
	uint32_t lkey, rkey;
};

int rcx__reg_get(struct rcx_ctx *ctx, const void *addr, size_t len,
		 unsigned int access, struct rcx__reg **out);
void rcx__reg_put(struct rcx_ctx *ctx, struct rcx__reg *reg);
/* A registration of its own, never shared (new keys for validate). */
int rcx__reg_get_private(struct rcx_ctx *ctx, const void *addr, size_t len,
			 unsigned int access, struct rcx__reg **out);
void rcx__reg_flush(struct rcx_ctx *ctx);
/*
 * Zeroed memory the library registers for peers to reach (a window of
 * rcx_win_allocate, channel control words): the provider's (shm: a
 * segment peers map) or, where it has none, posix_memalign'ed. Free it
 * with rcx__mem_free while the context lives. Errors: -ENOMEM.
 */
int rcx__mem_alloc(struct rcx_ctx *ctx, size_t len, void **out);
void rcx__mem_free(struct rcx_ctx *ctx, void *addr);

/* ---- wire header of eager/control messages (conn.c, p2p.c) */
enum rcx__msg_type {
	RCX__MSG_EAGER = 1,
	RCX__MSG_RTS,	 /* rendezvous: come and READ */
	RCX__MSG_FIN,	 /* rendezvous: READ done */
	RCX__MSG_CREDIT, /* receive credits only */
	RCX__MSG_BYE,	 /* the sender leaves: what follows is no failure */
};

enum rcx__cid {
	RCX__CID_USER = 0, /* rcx_isend/irecv */
	RCX__CID_COLL = 1, /* group barrier/allgather */
	RCX__CID_BIND = 2, /* channel bind handshakes (chan_bind.c) */
	RCX__CID_WIN = 3,  /* window control and software atomics (win*.c) */
	RCX__CID_BACK = 4, /* channel bind answers (chan_bind.c) */
	RCX__CID_FT = 5,   /* fault-tolerant agreement (ft.c) */
	RCX__CID_FAIL = 6, /* failure notices: tag names the rank (fail.c) */
	RCX__CID_CHAN = 7, /* a channel's queue pair broke (chan_bind.c) */
	RCX__CID_MAX = 8,
};

struct rcx__hdr {
	uint8_t type;
	uint8_t cid;
	uint16_t credits;
	int32_t tag;
	uint32_t len;
	uint32_t id;
	/* RTS only */
	uint64_t addr;
	uint64_t size;
	uint32_t rkey;
	/* EAGER and RTS: the sub-group of the connection's group the message
	 * is matched in (rcx_group_split), 0 for that group itself */
	uint32_t gid;
	/* EAGER, RTS, FIN: the connection's message number, kept across a
	 * reconnection; the receiver drops a number it has seen (conn.c) */
	uint32_t seq;
};

/*
 * Is a received message well formed: a whole header of a known type and
 * cid, and for EAGER a payload within eager_size that arrived whole
 * (byte_len: the bytes received)? A connection that receives anything
 * else fails with RCX_ERR_PROTO (conn.c).
 */
bool rcx__hdr_ok(const struct rcx__hdr *h, uint32_t byte_len,
		 size_t eager_size);

/*
 * Active messages: a cid with a handler bypasses matching; the handler
 * runs in progress for every eager message of that cid (payload of h->len
 * bytes, at most RCX_EAGER_SIZE). Send with rcx__am_send.
 */
typedef void rcx__am_cb(struct rcx__conn *c, const struct rcx__hdr *h,
			const uint8_t *payload);
int rcx__am_send(struct rcx__conn *c, uint8_t cid, int32_t tag, const void *buf,
		 size_t len);

/* ---- counters of the connection protocol (stats.c): off the channels'
 * fast path; a message that went out (type, of r: NULL for CREDIT/BYE) */
static inline void rcx__stats_tx(struct rcx_stats *st, uint8_t type,
				 const struct rcx_req *r)
{
	st->wrs_posted++;
	if (type == RCX__MSG_EAGER) {
		st->eager_tx_msgs++;
		st->eager_tx_bytes += r->len;
	} else if (type == RCX__MSG_RTS) {
		st->rndv_tx_msgs++;
		st->rndv_tx_bytes += r->len;
	}
}

/* window WRs posted: wr[0 .. n-1] */
static inline void rcx__stats_wrs(struct rcx_stats *st, const struct rcx_wr *wr,
				  int n)
{
	int i;

	for (i = 0; i < n; i++) {
		st->wrs_posted++;
		st->wrs_fenced += !!(wr[i].flags & RCX_WR_FENCE);
		if (wr[i].op == RCX_OP_WRITE) {
			st->rma_put_ops++;
			st->rma_put_bytes += wr[i].length;
		} else if (wr[i].op == RCX_OP_READ) {
			st->rma_get_ops++;
			st->rma_get_bytes += wr[i].length;
		} else {
			st->rma_atomic_ops++;
		}
	}
}

/* a completion's status (rcx_cqe.status): in error, flushed */
static inline void rcx__stats_cqe(struct rcx_stats *st, int status)
{
	if (status) {
		st->cqe_errors++;
		st->cqe_flushed += status == RCX_ERR_FLUSHED;
	}
}

/* a continuation callback run, by the progress thread or another */
static inline void rcx__stats_cont(struct rcx_stats *st, bool progress_thread)
{
	if (progress_thread)
		st->cont_run_thread++;
	else
		st->cont_run_app++;
}

/* a message that came in whole */
static inline void rcx__stats_rx(struct rcx_stats *st, const struct rcx__hdr *h)
{
	if (h->type == RCX__MSG_EAGER) {
		st->eager_rx_msgs++;
		st->eager_rx_bytes += h->len;
	} else if (h->type == RCX__MSG_RTS) {
		st->rndv_rx_msgs++;
		st->rndv_rx_bytes += h->size;
	}
}

/* ---- info (info.c) */
struct rcx_info;
/* i NULL: no keys. One that is not an info: lookup finds nothing, the
 * typed reads below return -EINVAL (callers read through one first). */
const char *rcx__info_lookup(const struct rcx_info *i, const char *key);
int rcx__info_ulong(const struct rcx_info *i, const char *key,
		    unsigned long dflt, unsigned long min, unsigned long max,
		    unsigned long *out);
/* names: NULL-terminated; *out = index; -EINVAL for other values */
int rcx__info_enum(const struct rcx_info *i, const char *key,
		   const char *const *names, int dflt, int *out);
int rcx__info_bool(const struct rcx_info *i, const char *key, bool dflt,
		   bool *out);

/* ---- counters (stats.c) */
/* RCX_STATS=1: print the counters (rcx_ctx_destroy, before teardown) */
void rcx__stats_report(struct rcx_ctx *ctx);
/* ops, or at RCX_LOG_LEVEL=trace ops with a line logged per WR posted */
const struct rcx_provider_ops *rcx__stats_ops(const struct rcx_provider_ops *o);
/* RCX_LOG_LEVEL=trace: a line per completion of cqe[n] (progress) */
void rcx__stats_trace_cqes(struct rcx_ctx *ctx, const struct rcx_cqe *cqe,
			   int n);

/* ---- features: what the core drives of lib/chan, lib/cont, lib/win, lib/ft */
/*
 * The core calls no feature by name. Each feature gives one const table
 * of the hooks below (NULL where it has nothing to do), listed by id in
 * lib/features.c; the core calls them at the points named. A feature
 * asks for a call on every progress pass by setting its bit in
 * ctx->feat_work (rcx__feat_work), and clears it when it has nothing
 * left: the fast path tests that one word.
 */
enum rcx__feat_id {
	RCX__FEAT_CONT,	 /* continuations (first: at teardown they run first) */
	RCX__FEAT_CHAN,	 /* bound channels */
	RCX__FEAT_WIN,	 /* windows with order */
	RCX__FEAT_FT,	 /* heartbeat detection, agreement */
	RCX__FEAT_BCOLL, /* bound collectives */
	RCX__FEAT_MAX,
};

struct rcx__feat_ops {
	const char *name;
	/* a progress pass while the feature's work bit is set: what it
	 * completed (> 0 counts as progress); *ran (when ran is not NULL)
	 * adds continuations run */
	int (*progress)(struct rcx_ctx *ctx, int *ran);
	/* connection cadence (rcx__cm_progress): clocks, probes, time-outs */
	void (*cm_poll)(struct rcx_ctx *ctx, long long now_us);
	/* the progress pass's connection cadence, after the connections */
	void (*idle)(struct rcx_ctx *ctx);
	/* the longest a blocking wait may sleep (timeout_ms -1: no limit) */
	int (*sleep_limit)(struct rcx_ctx *ctx, int timeout_ms);
	/* a blocking wait of the request calls (rcx_wait...) and
	 * rcx_ctx_wait, in place of rcx__wait_events: at most one feature */
	int (*block)(struct rcx_ctx *ctx, int timeout_ms);
	/* rank of g failed (rcx__group_failed) */
	void (*member_failed)(struct rcx_group *g, int rank, int err);
	/* a member of g failed or left (its BYE) */
	void (*member_gone)(struct rcx_group *g);
	/* context teardown, before the groups go */
	void (*fini)(struct rcx_ctx *ctx);
	/* rcx_ctx_stats: add the counts the feature derives from its state */
	void (*stats)(struct rcx_ctx *ctx, struct rcx_stats *st);
};

/* lib/features.c: the table of each feature, by id */
extern const struct rcx__feat_ops *const rcx__feats[RCX__FEAT_MAX];

static inline void rcx__feat_work(struct rcx_ctx *ctx, enum rcx__feat_id id,
				  bool on);

/*
 * Request hooks of the one feature that attaches to requests
 * (continuations: r->cont), lib/features.c. Called only for a request
 * whose cont is set, so only once that feature made one.
 */
struct rcx__req_hooks {
	/* r completed */
	void (*complete)(struct rcx_req *r);
	/* r was started and is active: re-arm (rcx_start[all]) */
	void (*start)(struct rcx_req *r);
	/* r goes back to the pool: detach (rcx__req_put) */
	void (*detach)(struct rcx_req *r);
	/* ctx->cont_now is set: run it (or queue it); 1 when it ran */
	int (*run_now)(struct rcx_ctx *ctx);
};
extern const struct rcx__req_hooks *const rcx__req_hooks;

/*
 * rcx__req_complete_hooks of a completed request that has one: a
 * continuation alone (the common case) goes straight to its hook.
 */
static inline void rcx__req_run_hooks(struct rcx_req *req)
{
	if (req->cont && !req->done)
		rcx__req_hooks->complete(req);
	else
		rcx__req_complete_hooks(req);
}
static inline void rcx__req_complete(struct rcx_req *req, int error)
{
	req->status.error = error;
	req->state = RCX__REQ_DONE;
	if (RCX__UNLIKELY(req->done || req->cont || req->user_freed))
		rcx__req_run_hooks(req);
}

/* the hooks of every feature that has one (features.c: the core's loops) */
void rcx__feats_cm_poll(struct rcx_ctx *ctx, long long now_us);
void rcx__feats_idle(struct rcx_ctx *ctx);
int rcx__feats_sleep_limit(struct rcx_ctx *ctx, int timeout_ms);
int rcx__block(struct rcx_ctx *ctx, int timeout_ms);
void rcx__feats_member_failed(struct rcx_group *g, int rank, int err);
void rcx__feats_member_gone(struct rcx_group *g);
void rcx__feats_fini(struct rcx_ctx *ctx);

/* ---- connections (conn.c) */
enum rcx__conn_state {
	RCX__CONN_CONNECTING,
	RCX__CONN_UP,
	RCX__CONN_FAILED,
	RCX__CONN_CLOSED,
	RCX__CONN_IDLE, /* lazy: not started; the first send starts it */
	/*
	 * The transport gave up on a peer that may be alive: the old
	 * endpoint drains, a new one is made (conn.c: reconnection); sends
	 * wait, what was in flight is sent again, the peer drops what it
	 * had already.
	 */
	RCX__CONN_RECONN,
};

/*
 * The ep_ctx of every endpoint rcx makes: connection events are handed to
 * the object that owns the endpoint.
 */
struct rcx__epobj {
	void (*on_cm)(struct rcx__epobj *o, const struct rcx_cm_event *ev);
};

struct rcx__rxbuf {
	struct rcx__wrctx wrc;
	struct rcx__conn *conn;
	uint8_t *data;
	struct rcx_pwr *pwr; /* its receive, prepared (conn.c) */
};

struct rcx__withdrawn {
	struct rcx__withdrawn *next;
	struct rcx__reg *reg;
	uint32_t id;
};

/*
 * receive buffers reposted in one call at most (conn.c, on_rx): the
 * call, the list's link and the credits' bookkeeping are paid once per
 * batch (at most half the peer's credits: conn.c)
 */
#define RCX__RX_BATCH 32

struct rcx__conn {
	struct rcx__epobj obj; /* first: the endpoint's ep_ctx */
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	int peer;
	int state;
	int error;
	struct rcx_ep *ep;
	int rx_posted;	 /* receives the endpoint holds */
	int tx_inflight; /* bounce-slot sends not completed */
	int credits;	 /* messages we may still send */
	int owed;	 /* receive buffers reposted, not yet announced */
	/* buffers of messages that spent a credit, reposted together once
	 * rx_batch of them are taken (conn.c, on_rx) */
	struct rcx_pwr *rx_hold[RCX__RX_BATCH];
	uint8_t nhold, rx_batch;
	/* owed credits due back in a CREDIT message (rcx__conn_credit_due) */
	int credit_at;
	uint32_t next_rndv;
	struct rcx__rxbuf *rx;
	uint8_t *rx_mem;
	struct rcx__reg *rx_reg;
	/* bounce-slot sends, prepared for the endpoint: the odd ones
	 * inline, up to tx_inline bytes; [2] to [5] eager messages whose
	 * header is the immediate, [4] and [5] unsignaled (conn.c) */
	struct rcx_pwr *tx_pwr[6];
	uint32_t tx_inline;
	/*
	 * Bounce-slot sends in flight, in the order posted (conn_tx.c): a
	 * completion returns its slot and every one posted before it
	 * (txq_end: the last one's next, or &txq). tx_unsig: posted
	 * unsignaled since the last signaled one (the tail no completion
	 * of its own returns unless it fails); mark: the signaled WRITE
	 * that returns that tail when nothing else will (mark_upto: the
	 * tail's last slot, until it is returned).
	 */
	struct rcx__txslot *txq, **txq_end, *mark_upto;
	uint8_t tx_unsig, mark_busy;
	/* slots posted on c so far: the next one's ord (rcx__txq_add) */
	uint32_t tx_ord;
	struct rcx__wrctx mark;
	struct rcx_req *backlog, *backlog_tail; /* waiting for credits */
	struct rcx_req *rndv;			/* sends waiting for FIN */
	/* rendezvous sends withdrawn before their FIN (a failure ended
	 * their collective): the peer may still READ, so their memory
	 * stays registered until the FIN or the connection's end */
	struct rcx__withdrawn *withdrawn;
	struct rcx__conn *next_pending;
	uint32_t win_wr;      /* window WRs in flight (win*.c) */
	struct rcx__wrctx hb; /* liveness probe (ft.c) */
	uint8_t hb_busy;
	/* lazy connection: where the peer listens and what to send it */
	char *lazy_addr;
	uint8_t lazy_pd[56], lazy_ask[56];
	uint8_t lazy_len;
	uint8_t lazy_connect;  /* we connect (else we ask) */
	struct rcx__epobj ask; /* the ask endpoint's ep_ctx */
	struct rcx_ep *ask_ep; /* asks the lower rank to connect */
	long long ask_us;      /* when a reconnection's ask went */
	/* the ask was answered: the peer's connection is due by then (0:
	 * none due); a dead peer never sends it (ft.c) */
	long long answer_by_us;
	/* the ask is asked again then (0: not), every reask_ms, doubled:
	 * a dying peer's listener refuses it as a live peer does, and
	 * asked again a dead peer's says nothing listens (fail.c) */
	long long reask_us;
	int reask_ms;
	/* nothing listens where the peer did (it left, or died): unless a
	 * failure notice comes by answer_by_us, it left (ft.c) */
	uint8_t gone;
	/* a clean exit waits for it to deliver what it owes and its BYE
	 * (rcx__conn_settle) */
	uint8_t settling;
	/* a pair group's (rcx_group_connect/accept): the token both ends
	 * took from the pairing, which a reconnection names; 0: none */
	uint64_t pair_token;
	/* a transport failure cut the peer off (fail.c): since when, 0 if
	 * not; it is declared failed after RCX_FT_TIMEOUT_MS unless a sign
	 * of its death comes first */
	long long suspect_us;
	/*
	 * Reconnection (RCX__CONN_RECONN): what it waits for (enum in
	 * conn.c), the endpoint that broke (kept, in error, until the new
	 * one is up: destroying it would tell the peer of a disconnect),
	 * the peer's request held until old_ep drained, and when to try
	 * again. Messages numbered tx_seq went out, rx_seq came in; replay:
	 * the slots whose delivery is not known, in number order; rereads:
	 * rendezvous receives whose READ broke (linked by next).
	 */
	uint8_t re_phase;
	struct rcx_ep *old_ep;
	struct rcx_conn_req *re_req;
	long long re_next_us;
	uint32_t tx_seq, rx_seq;
	struct rcx__txslot *replay;
	struct rcx_req *rereads;
	int rd_inflight; /* rendezvous READs on ep (p2p.c) */
};

/*
 * Send-queue entries each connection keeps for window operations (RMA
 * WRITE/READ/ATOMIC, win*.c), beyond what point-to-point can fill; the
 * windows keep win_wr at or below it.
 */
#define RCX__WIN_SQ_DEPTH 128

struct rcx__txslot {
	struct rcx__wrctx wrc;
	/* free list, a connection's replay list, or its sends in flight
	 * (rcx__conn.txq) */
	struct rcx__txslot *next;
	struct rcx__conn *conn; /* in flight on this connection */
	uint8_t *data;
	/*
	 * An eager message sent by rcx__conn_send_imm: its header is not
	 * written, only what makes it (the length, 0 when the header is
	 * written; the immediate's cid and tag; the number), should the
	 * message have to go again after a reconnection.
	 */
	uint32_t imm_len, imm_ctag, imm_seq;
	/* its place in the connection's posting order (rcx__conn.tx_ord) */
	uint32_t ord;
};

int rcx__conn_new(struct rcx_ctx *ctx, struct rcx_group *g, int peer,
		  struct rcx__conn **out);
int rcx__conn_connect(struct rcx__conn *c, const char *addr, const void *pdata,
		      size_t plen);
int rcx__conn_accept(struct rcx__conn *c, struct rcx_conn_req *req);
/*
 * Make c lazy (state IDLE): it starts on first use. One rank of the pair
 * (connects) connects to addr with pdata; the other connects with ask (a
 * request the first rejects, and answers by connecting), so requests of
 * the two never cross. Errors: -ENOMEM, -EINVAL (pdata too long).
 */
int rcx__conn_set_lazy(struct rcx__conn *c, const char *addr, bool connects,
		       const void *pdata, const void *ask, size_t plen);
/* Start an IDLE connection (no-op otherwise); 0 or an error. */
int rcx__conn_start(struct rcx__conn *c);
/* an ask answered, the peer's connection not come yet: ask again */
void rcx__conn_reask(struct rcx__conn *c);
struct rcx__pending_req;
/*
 * The longest a wait may sleep (timeout_ms, -1: for ever) while work that
 * raises no event is under way: a lazy connection's answer due, and what
 * the features ask (their sleep_limit: channel frees waiting for the
 * peer's remote write, fenced window WRs, the next heartbeat).
 */
int rcx__sleep_limit(struct rcx_ctx *ctx, int timeout_ms);
/* A lazy world's incoming request: true when taken (group.c). */
bool rcx__group_conn_req(struct rcx_ctx *ctx, struct rcx__pending_req *p);
/*
 * Start every lazy connection of g and wait until all are up or failed
 * (collective: window creation). Errors: the first connection's error,
 * -ETIMEDOUT after RCX_CONNECT_TIMEOUT_MS.
 */
int rcx__group_connect_all(struct rcx_group *g);
void rcx__conn_destroy(struct rcx__conn *c);
void rcx__conn_fail(struct rcx__conn *c, int error);
/*
 * An error completion (status) of a WR on c's endpoint: c fails with the
 * cause (a flush before anything else: the peer's side is gone). Returns
 * the error the WR's operation reports: c's error once it failed.
 */
int rcx__conn_wc_error(struct rcx__conn *c, int status);
/*
 * The peer's address and whether this side connects (the other asks it
 * to): what a reconnection needs. Errors: -ENOMEM.
 */
int rcx__conn_set_peer(struct rcx__conn *c, const char *addr, bool connects);
/*
 * The transport gave up on c (err: RCX_ERR_TRANSPORT, RCX_ERR_RNR):
 * remake it if it can be (a world connection whose peer's address is
 * known, RCX_FT_TIMEOUT_MS not 0), true then; false: it cannot.
 */
bool rcx__conn_reconnect(struct rcx__conn *c, int err);
/*
 * The peer asks for a new connection in place of c's (req: its
 * request; ask: it asks us to connect). Takes req (accepted or
 * rejected, now or once c's old endpoint drained).
 */
void rcx__conn_reconn_req(struct rcx__conn *c, struct rcx_conn_req *req,
			  bool ask);
/* reconnections whose next step is due, on the connection cadence */
void rcx__conn_reconn_poll(struct rcx_ctx *ctx);
/*
 * The private data of a reconnection request for c (ask: asking the
 * peer to connect), at most 56 bytes (group.c): its length.
 */
size_t rcx__group_reconn_pdata(const struct rcx__conn *c, bool ask,
			       uint8_t *pd);
/* A reconnection's request (from cm progress): true when taken. */
bool rcx__group_reconn_req(struct rcx_ctx *ctx, struct rcx__pending_req *p);
/*
 * Sends of g on cid still waiting on a connection of g (for credit, a
 * connection, a rendezvous FIN) complete with err.
 */
void rcx__conn_cancel_sends(struct rcx_group *g, int cid, int err);
/* The FIN of a withdrawn rendezvous send: its memory goes; false if none */
bool rcx__conn_withdrawn_fin(struct rcx__conn *c, uint32_t id);
/* The peer left on purpose: nothing more comes (-ECONNRESET for all) */
void rcx__conn_left(struct rcx__conn *c);
/*
 * A launcher's failure notice may follow a gone peer by this much (rcx-run
 * reaps, then tells: on a loaded host, under emulation, 200 ms was seen
 * to be too short, and a dead rank taken for one that left)
 */
#define RCX__GONE_GRACE_MS 1000
/* queue or send a message for req (sendop = RCX__MSG_EAGER/RTS/FIN) */
int rcx__conn_send(struct rcx__conn *c, struct rcx_req *req);
int rcx__cm_progress(struct rcx_ctx *ctx);
/* rcx__cm_progress ran (now_us: rcx__now_us): the next poll is due from
 * here (ctx.c) */
void rcx__cm_polled(struct rcx_ctx *ctx, long long now_us);
void rcx__conn_drain(struct rcx_ctx *ctx);
int rcx__tx_init(struct rcx_ctx *ctx);
/* the send slot pool ran empty: every unsignaled tail is marked */
void rcx__tx_starved(struct rcx_ctx *ctx);
/*
 * The connections' depths (RCX_TX_DEPTH, RCX_RX_DEPTH) fit the device
 * (ctx->info: max_qp_wr, max_cqe): 0, or -EINVAL and a line naming the
 * variables and the limit.
 */
int rcx__conn_depth_check(const struct rcx_ctx *ctx);
void rcx__tx_fini(struct rcx_ctx *ctx);

/* ---- point-to-point (p2p.c) */
void rcx__p2p_arrived(struct rcx_group *g, int peer, struct rcx__conn *c,
		      const struct rcx__hdr *h, const uint8_t *payload);
void rcx__p2p_fin(struct rcx__conn *c, uint32_t id);
/* c is up again: the READs that broke with it start over (rereads) */
void rcx__p2p_reread(struct rcx__conn *c);
/* c failed while remade: the receives whose READ broke complete (err) */
void rcx__p2p_rereads_fail(struct rcx__conn *c, int err);
int rcx__isend(struct rcx_group *g, const void *buf, size_t len, int dest,
	       int tag, uint8_t cid, struct rcx_req **out);
int rcx__irecv(struct rcx_group *g, void *buf, size_t len, int src, int tag,
	       uint8_t cid, struct rcx_req **out);
/*
 * Fire and forget: done(req) runs on completion, then req is released.
 * pending (may be NULL) holds the request while it is outstanding; the
 * done hook must clear it.
 */
int rcx__isend_cb(struct rcx_group *g, const void *buf, size_t len, int dest,
		  int tag, uint8_t cid, void (*done)(struct rcx_req *),
		  void *arg, struct rcx_req **pending);
int rcx__irecv_cb(struct rcx_group *g, void *buf, size_t len, int src, int tag,
		  uint8_t cid, void (*done)(struct rcx_req *), void *arg,
		  struct rcx_req **pending);
/* To or from RCX_PROC_NULL: nothing moves, r completes at once (0). */
int rcx__p2p_null_start(struct rcx_req *r);
/* take back a posted unmatched receive (completes with err) */
bool rcx__p2p_cancel(struct rcx_req *r, int err);
void rcx__p2p_peer_failed(struct rcx__conn *c, int error);
void rcx__p2p_cancel_group(struct rcx_group *g, int error);
/* complete the posted receives of one cid with error */
void rcx__p2p_cancel_cid(struct rcx_group *g, int cid, int error);
/* A member of g failed: posted RCX_ANY_SOURCE receives complete in error. */
void rcx__p2p_any_failed(struct rcx_group *g, int error);

/* ---- failures (fail.c) */
/*
 * rank of g is known failed here: its connection fails (QP to error, so
 * everything on it flushes), collectives on g stop, the features hear of
 * it (member_failed: windows of g become invalid, channels fail).
 * Idempotent. Lock held.
 */
void rcx__group_failed(struct rcx_group *g, int rank, int error);
/*
 * The transport to rank of g gave up (error: RCX_ERR_TRANSPORT or
 * RCX_ERR_RNR, e.g. QP retries exhausted) while nothing says the process
 * died: a slow peer looks the same. It is declared failed only on a sign
 * of death (rdma_cm DISCONNECTED, the launcher, the shm peer's exit) or
 * once RCX_FT_TIMEOUT_MS passed without one. Idempotent. Lock held.
 */
void rcx__group_suspect(struct rcx_group *g, int rank, int error);
/*
 * rank of g is suspect since since_us at the latest (a window's own
 * endpoint to it broke then and was not made again): failed on the next
 * poll once RCX_FT_TIMEOUT_MS passed since then, though its connection
 * was made again meanwhile. True when that moved its suspicion.
 */
bool rcx__group_suspect_since(struct rcx_group *g, int rank,
			      long long since_us);
/*
 * An error completion (status) of a WR on an endpoint of its own to rank
 * of g (a window's): a transport failure makes the rank suspect, any
 * other error failed, as rcx__conn_wc_error. Returns the error to report.
 */
int rcx__group_wc_error(struct rcx_group *g, int rank, int status);
/* c is no longer suspect (its peer failed, left, or c goes away) */
void rcx__conn_unsuspect(struct rcx__conn *c);
/* Is err a failure of the transport rather than of the peer process? */
static inline bool rcx__err_transport(int err)
{
	return err == RCX_ERR_TRANSPORT || err == RCX_ERR_RNR;
}
/* launcher notices and lazy answers that are due, on the connection
 * cadence (rcx__cm_progress) */
void rcx__fail_poll(struct rcx_ctx *ctx, long long now_us);
/*
 * c came up: tell its peer the failures of c's group known here (a rank
 * it has no connection to may be one of them). Lock held.
 */
void rcx__fail_tell(struct rcx__conn *c);
/* the handler of failure notices (RCX__CID_FAIL), set at context start */
void rcx__fail_am(struct rcx__conn *c, const struct rcx__hdr *h,
		  const uint8_t *payload);
/*
 * Does the bootstrap tell of every death (rcx-run, PMIx)? Not env's: a
 * member found gone is then taken for failed, not for one that left.
 */
bool rcx__deaths_told(const struct rcx_ctx *ctx);
/* the longest a wait sleeps before the next receive probe (fail.c) */
int rcx__fail_sleep_limit(const struct rcx_ctx *ctx, int timeout_ms);
/* rcx_group_get_failed without the user-handle check */
int rcx__group_get_failed(struct rcx_group *g, int *ranks, int max, int *n);

/* ---- groups (group.c) */
struct rcx__unexp {
	struct rcx__unexp *next;
	struct rcx__conn *conn;
	int peer;
	struct rcx__hdr hdr;
	uint8_t data[]; /* eager payload */
};

struct rcx_group {
	uint32_t magic;
	/*
	 * refs: every holder (user handles, persistent requests, windows);
	 * urefs: the user's handles only. rcx_group_free drops one of each;
	 * once the user holds none the handle is dead to the API, but the
	 * group and its connections live on for what was made from it.
	 */
	int refs;
	int urefs;
	struct rcx_ctx *ctx;
	int rank;
	int size;
	struct rcx__conn **conns; /* [size], NULL for self */
	struct rcx_req *posted[RCX__CID_MAX], *posted_tail[RCX__CID_MAX];
	struct rcx__unexp *unexp[RCX__CID_MAX], *unexp_tail[RCX__CID_MAX];
	uint32_t coll_seq;
	/* ranks known failed here (ft.c), and when the first was seen */
	uint8_t *failed; /* [size] */
	int nfailed;
	long long failed_at_us;
	/* failed ranks a validation agreed on (rcx_group_validate): the
	 * collectives go on without them; nacked of them */
	uint8_t *acked; /* [size] */
	int nacked;
	uint32_t agree_seq; /* agreements run on this group */
	/*
	 * A sub-group (rcx_group_split/incl/excl) has no connections of its
	 * own: conns[] are those of root, the group that owns them (held
	 * while the sub-group lives), and gid marks its messages on them.
	 * root_rank[i] is rank i's rank in root, of_root[r] the rank here of
	 * root rank r (-1: not a member). A root has gid 0, and next_gid is
	 * the smallest gid a new sub-group of it may take here.
	 */
	struct rcx_group *root;
	int *root_rank; /* [size] */
	int *of_root;	/* [root->size] */
	uint32_t gid;
	uint32_t next_gid;
	struct rcx_group *next;
};

void rcx__groups_destroy(struct rcx_ctx *ctx);
/* Is g a group of ctx that still exists? (compares pointers only) */
bool rcx__group_known(struct rcx_ctx *ctx, const struct rcx_group *g);
/*
 * Barrier, allgather and all-to-all (exchange: in + i * stride goes to
 * rank i, stride 0 is an allgather) among the ranks of g not in excl
 * ([size] flags, or NULL: all). RCX_ERR_PROC_FAILED at once when a needed rank is known
 * failed, or when one fails during the call. Lock held.
 */
int rcx__group_barrier_locked(struct rcx_group *g, const uint8_t *excl);
int rcx__group_exchange_locked(struct rcx_group *g, const void *in,
			       size_t stride, size_t len, void *out,
			       const uint8_t *excl);
int rcx__group_allgather_locked(struct rcx_group *g, const void *in, size_t len,
				void *out, const uint8_t *excl);

/*
 * The sub-group gid of root, and in *peer the rank there of root rank
 * *peer: where a message that came on root's connection is matched.
 * NULL when there is none here (freed) or the sender is not a member.
 */
struct rcx_group *rcx__group_sub(struct rcx_group *root, uint32_t gid,
				 int *peer);
/*
 * fn(sub, rank, err) for every sub-group of root that has root rank r,
 * with its rank there (nothing when root is itself a sub-group).
 */
void rcx__group_subs_each(struct rcx_group *root, int r,
			  void (*fn)(struct rcx_group *, int, int), int err);
/* The group whose connections g uses: g itself unless a sub-group. */
static inline struct rcx_group *rcx__group_root(struct rcx_group *g)
{
	return g->root ? g->root : g;
}

#define RCX__GROUP_MAGIC 0x52435847u
#define RCX__GROUP_HELD	 0x52435848u /* freed by the user, still held */

/* A holder other than the user (lock held); release may destroy g. */
static inline void rcx__group_hold(struct rcx_group *g)
{
	g->refs++;
}
void rcx__group_release(struct rcx_group *g);
/*
 * One more user handle to g (rcx_group_free releases it), live again
 * even if the user had freed every handle while something held it.
 */
void rcx__group_user_hold(struct rcx_group *g);
/* g exists for internal use: live, or freed by the user but held */
static inline bool rcx__group_exists(const struct rcx_group *g)
{
	return g &&
	       (g->magic == RCX__GROUP_MAGIC || g->magic == RCX__GROUP_HELD);
}
static inline bool rcx__group_live(const struct rcx_group *g)
{
	return g && g->magic == RCX__GROUP_MAGIC;
}
/*
 * Does a collective on g need a rank known failed that no validation
 * took out (rcx_group_validate)? Then it returns RCX_ERR_PROC_FAILED.
 */
static inline bool rcx__group_broken(const struct rcx_group *g)
{
	return g->nfailed > g->nacked;
}
/*
 * The members a collective on a validated g runs over: those not
 * validated out (g->acked), ascending, into map[g->size]; their number.
 * *me gets the index of g->rank among them, *vroot that of root (-1:
 * root is not one of them, or is -1).
 */
int rcx__group_survivors(const struct rcx_group *g, int root, int *map, int *me,
			 int *vroot);

/* ---- context (ctx.c) */
struct rcx__pending_req {
	struct rcx__pending_req *next;
	struct rcx_conn_req *req;
	uint8_t pdata[56];
	uint8_t len;
};

struct rcx_ctx {
	uint32_t magic;
	int mt;	  /* RCX_THREAD_MULTIPLE */
	int lazy; /* world connections on first use (RCX_CONNECT) */
	/*
	 * rcx_win_order waits where it would set RCX_WR_FENCE
	 * (RCX_ORDER_FENCE=wait, or auto on a device whose fenced WRs may
	 * stall: rcx_dev_info.fence_stalls)
	 */
	int fence_wait;
	/* a spinning wait yields its cpu between polls (RCX_YIELD) */
	int yield;
	/* features with work for every progress pass (rcx__feat_work) */
	uint32_t feat_work;
	pthread_mutex_t lock;
	struct rcx__config cfg;
	const struct rcx_provider_ops *ops;
	struct rcx_dev *dev;
	/*
	 * Progress's poll: ops->cq_poll_min, or ops->cq_poll where the
	 * provider has none or the trace prints every field of a completion
	 */
	int (*cq_poll)(struct rcx_dev *dev, struct rcx_cqe *cqe, int n);
	/*
	 * ... and its dispatch: ops->cq_dispatch, or the core's (cq_poll,
	 * then each completion's cb) where the provider has none or the
	 * trace is on
	 */
	int (*cq_dispatch)(struct rcx_dev *dev, struct rcx_ctx *ctx);
	/*
	 * Progress passes that may be only the poll and its dispatch: no
	 * connection waits to send, no feature asked for work, no connection
	 * poll due (ctx.c). rcx__progress_due ends them.
	 */
	int quick;
	int quick_grant; /* what quick was set to: passes = grant - quick */
	/*
	 * Progress passes before the last grant, and the passes whose poll
	 * found something: the rest are the empty polls (rcx__empty_polls),
	 * which no pass counts on its own.
	 */
	uint64_t passes, polls_found;
	/*
	 * The provider's direct poll (ops->cq_peek), for the requests that
	 * test with it (rcx__req_peek); peek_ok: it has one and may be used.
	 */
	struct rcx_cq_peek peek;
	bool peek_ok;
	/* what rcx__req_peek gives: &peek where usable, else NULL */
	const struct rcx_cq_peek *req_peek;
	/* the arguments of the rcx_test polling through peek (req.c) */
	struct rcx_req **peek_rp;
	int *peek_flag;
	struct rcx_status *peek_st;
	struct rcx_dev_info info;
	char addr[RCX__ADDR_LEN]; /* listener address */
	/* this process's node key (lib/boot/boot_node.c): equal keys share
	 * a host and can map each other's memory */
	char node[320];
	/* connection polls (ctx.c): progress passes since the last one;
	 * by the CPU's counter, the next one due, the latest one a pass
	 * with completions may put off, ticks between two, the counter and
	 * the clock at creation */
	unsigned int cm_passes;
	uint64_t cm_next, cm_late, cm_period, tick0;
	long long tick_us0;
	int in_cm; /* inside rcx__cm_progress */
	/*
	 * Bumped by whatever can end a wait outside the CQ poll (a failed
	 * connection or member): a wait that saw it move does not sleep.
	 */
	unsigned int wake_gen;
	/* requests */
	struct rcx_req *req_free;
	void **req_chunks;
	size_t nchunks;
	/* registrations */
	struct rcx__reg *regs;
	unsigned int nregs;
	/* send bounce slots */
	struct rcx__txslot *tx_free;
	struct rcx__txslot *tx_slots;
	uint8_t *tx_mem;
	struct rcx__reg *tx_reg;
	size_t tx_slot_size;
	/* connections waiting for credits or slots */
	struct rcx__conn *pending;
	/* connection requests nobody has claimed yet */
	struct rcx__pending_req *conn_reqs;
	/* claims a request at once (returns 1 and owns p), e.g. channels */
	int (*conn_req_hook)(struct rcx_ctx *ctx, struct rcx__pending_req *p);
	/* active-message handlers per cid */
	rcx__am_cb *am[RCX__CID_MAX];
	/* groups, bootstrap */
	struct rcx_group *groups;
	struct rcx_group *world;
	struct rcx__boot *boot;
	long long notice_next_us; /* launcher failure notices (fail.c) */
	int nanswer;		  /* connections with answer_by_us set */
	int nsuspect;		  /* connections with suspect_us set */
	int nreconn;		  /* connections in RCX__CONN_RECONN */
	long long probe_next_us;  /* receives on unmade connections */
	/*
	 * State the features keep per context; the core never reads it.
	 * Channels: bound sets (chan_bind.c), senders waiting for receiver
	 * credit (chan.c), receivers' credits the next pass writes (chan.c),
	 * nonblocking frees and rebinds under way.
	 */
	void *chan_sets;
	void *chan_deferred;
	void *chan_credits;
	void *chan_ops;
	uint32_t bind_seq;
	int chan_conn_due; /* senders answered, waiting for the connection */
	/* continuations: cont.c's state, and what is ready to run */
	void *cont_state;
	int cont_ready;
	/*
	 * A continuation whose request a completion made ready, to run as
	 * soon as the dispatch returns (no queue, no rest of the pass): by
	 * progress, or by the rest of a pass (a test's direct poll found it)
	 */
	void *cont_now;
	/* windows: WRs posted with a fence, not completed (win.c: kick) */
	uint32_t win_fenced;
	long long kick_at_us;
	/* heartbeat: next liveness probe round (lib/ft) */
	long long hb_next_us;
	/* bound collectives of the context (lib/bcoll) */
	void *bcolls;
	/* counters kept by plain increments off the fast paths (stats.c:
	 * rcx_ctx_stats adds what is derived from the objects' state) */
	struct rcx_stats st;
};

/* the passes made quick so far count: towards the connection poll, and
 * as passes (ctx->passes) */
static inline void rcx__passes_fold(struct rcx_ctx *ctx)
{
	unsigned int n = (unsigned int)(ctx->quick_grant - ctx->quick);

	ctx->cm_passes += n;
	ctx->passes += n;
	ctx->quick_grant = ctx->quick = 0;
}

/*
 * Something for the whole progress pass (a connection waits to send, a
 * feature has work): the next pass is whole, not only the poll. The
 * passes made quick so far still count towards the connection poll.
 */
static inline void rcx__progress_due(struct rcx_ctx *ctx)
{
	rcx__passes_fold(ctx);
}

static inline void rcx__feat_work(struct rcx_ctx *ctx, enum rcx__feat_id id,
				  bool on)
{
	uint32_t bit = 1u << id;

	ctx->feat_work = on ? ctx->feat_work | bit : ctx->feat_work & ~bit;
	if (on)
		rcx__progress_due(ctx);
}

/* the progress pass of the features whose work bit is set (ctx.c) */
static inline int rcx__feats_progress(struct rcx_ctx *ctx, int n, int *ran)
{
	uint32_t w = ctx->feat_work;
	int id;

	while (w) {
		id = __builtin_ctz(w);
		w &= w - 1;
		if (rcx__feats[id]->progress(ctx, ran) > 0 && n <= 0)
			n = 1;
	}
	return n;
}

#define RCX__CTX_MAGIC 0x52435843u
static inline bool rcx__ctx_live(const struct rcx_ctx *c)
{
	return c && c->magic == RCX__CTX_MAGIC;
}

static inline void rcx__lock(struct rcx_ctx *ctx)
{
	if (ctx->mt)
		pthread_mutex_lock(&ctx->lock);
}

static inline void rcx__unlock(struct rcx_ctx *ctx)
{
	if (ctx->mt)
		pthread_mutex_unlock(&ctx->lock);
}

/* r back to the pool, ops (r's, or NULL where it has nothing to
 * release) released first */
static inline void rcx__req_free_ops(struct rcx_req *r,
				     const struct rcx__req_ops *ops)
{
	struct rcx_ctx *ctx = r->ctx;

	if (ops && ops->release)
		ops->release(r);
	r->magic = RCX__REQ_DEAD;
	r->peek = NULL; /* a stale handle's test takes the checked path */
	r->next = ctx->req_free;
	ctx->req_free = r;
}

/* To the pool, r->cont NULL (rcx__req_put without the detach). */
static inline void rcx__req_release(struct rcx_req *r)
{
	rcx__req_free_ops(r, r->ops);
}

/*
 * A request zeroed in 16-byte stores (and one of 8 for an odd tail): a
 * memset of this size is a string instruction whose start-up costs more
 * than the stores, and a count sees one step per word.
 */
typedef uint64_t rcx__req_v2
	__attribute__((vector_size(16), aligned(8), may_alias));
typedef uint64_t rcx__req_w1 __attribute__((may_alias));

static inline void rcx__req_zero(struct rcx_req *r)
{
	rcx__req_v2 *w = (rcx__req_v2 *)(void *)r;
	size_t i;

#pragma GCC unroll 16
	for (i = 0; i < sizeof(*r) / sizeof(*w); i++)
		w[i] = (rcx__req_v2){ 0, 0 };
	if (sizeof(*r) % sizeof(*w))
		*(rcx__req_w1 *)(void *)&w[i] = 0;
}

/* rcx__req_get where the pool has one (else NULL): no call, no frame */
static inline struct rcx_req *rcx__req_take(struct rcx_ctx *ctx, int kind,
					    const struct rcx__req_ops *ops)
{
	struct rcx_req *r = ctx->req_free;

	if (RCX__UNLIKELY(!r))
		return NULL;
	ctx->req_free = r->next;
	rcx__req_zero(r);
	r->magic = RCX__REQ_MAGIC;
	r->kind = (uint8_t)kind;
	r->ctx = ctx;
	r->ops = ops;
	r->status.slot = -1;
	return r;
}

/* Does a receive of (r->peer, r->tag) match a message of (peer, tag)? */
static inline bool rcx__p2p_matches(const struct rcx_req *r, int peer, int tag)
{
	return (r->peer == RCX_ANY_SOURCE || r->peer == peer) &&
	       (r->tag == RCX_ANY_TAG || r->tag == tag);
}

/*
 * An eager message of len bytes (not 0) from peer on cid of g, sent with
 * its header in the immediate (gid 0): the head of the posted receives
 * takes it if it matches (true, the receive complete); else nothing
 * changed (false) and it goes through rcx__p2p_arrived. Receives are
 * matched in the order they were posted, so the head, when it matches,
 * is the one the walk would find; and no message that came before this
 * one waits for it (a receive looks at the unexpected ones before it is
 * posted).
 */
static inline bool rcx__p2p_eager_first(struct rcx_group *g, int peer,
					uint8_t cid, int32_t tag,
					const uint8_t *payload, uint32_t len)
{
	struct rcx_req *r = g->posted[cid];
	size_t n;

	if (!r || !rcx__p2p_matches(r, peer, tag))
		return false;
	g->posted[cid] = r->next;
	if (!r->next)
		g->posted_tail[cid] = NULL;
	r->next = NULL;
	r->status.source = peer;
	r->status.tag = tag;
	n = len < r->len ? len : r->len;
	if (n)
		memcpy(r->buf, payload, n);
	r->status.count = n;
	rcx__req_complete(r, len > r->len ? RCX_ERR_TRUNCATE : 0);
	return true;
}

/* progress with the lock held; returns completions handled */
int rcx__progress(struct rcx_ctx *ctx);
/* ctx->cq_dispatch of a provider without one: cq_poll, then each cb */
int rcx__poll_dispatch(struct rcx_dev *dev, struct rcx_ctx *ctx);
/* the rest of a pass after the poll found n (ctx.c) */
int rcx__progress_rest(struct rcx_ctx *ctx, int n, int *ran);
/* progress polls that found no completion so far (stats) */
uint64_t rcx__empty_polls(const struct rcx_ctx *ctx);
/*
 * rcx__progress inlined where a request is tested: the poll hands each
 * completion to its object; the rest of the pass (connections waiting,
 * features, the connection cadence) only once it is due.
 */
static inline __attribute__((always_inline)) int rcx__progress_inl(
	struct rcx_ctx *ctx)
{
	int n = ctx->cq_dispatch(ctx->dev, ctx);

	if (RCX__UNLIKELY(--ctx->quick < 0))
		return rcx__progress_rest(ctx, n, NULL);
	if (n > 0)
		ctx->polls_found++;
	return n > 0 ? n : 0;
}
/*
 * What a request whose test may be the direct poll sets as its peek:
 * where the provider has one and the context runs on one thread (the
 * test takes no lock), else NULL. A test through it is a whole progress
 * pass: the poll hands every completion on the queue to its object. A
 * persistent request that sets it has a start (rcx_start jumps to it).
 */
int rcx__peek_found(struct rcx_ctx *ctx, struct rcx_dev *dev, int got);
static inline const struct rcx_cq_peek *rcx__req_peek(struct rcx_ctx *ctx)
{
	return ctx->req_peek;
}
/*
 * An ok_test (rcx_wct) whose completion finished r, the request under
 * the test (r == *ctx->peek_rp, active, persistent, nothing attached,
 * its status written but for error, 0 since its start): the test's
 * report, what that rcx_test returns.
 */
static inline int rcx__peek_finish(struct rcx_ctx *ctx, struct rcx_req *r)
{
	struct rcx_status *st = ctx->peek_st;

	ctx->polls_found++;
	r->state = RCX__REQ_INACTIVE;
	*ctx->peek_flag = 1;
	if (st)
		*st = r->status;
	return 0;
}
/* block for events (lock held; dropped while sleeping) */
int rcx__wait_events(struct rcx_ctx *ctx, int timeout_ms);
/* the connection polls of a sleep (rcx__wait_events, and a feature's
 * block): before it (gen: wake_gen before the last pass; true: do not
 * sleep) and after it (n: the completions of the pass after the wake) */
bool rcx__wait_cm_before(struct rcx_ctx *ctx, unsigned int gen);
int rcx__wait_woken(struct rcx_ctx *ctx, int n);
/*
 * rcx_wait's sleeps for r: a wake-up whose completions left r active
 * sleeps again at once (the sleep's own pass before it is the poll)
 */
void rcx__block_req(struct rcx_ctx *ctx, struct rcx_req *r);
long long rcx__now_us(void);

/*
 * A wait's spin before it sleeps. The clock is read once in
 * RCX__SPIN_POLLS idle polls, never on a wait that the first polls end:
 * where the clock source is not the TSC (HPET or ACPI PM in many virtual
 * machines) clock_gettime is a system call, and reading it on every poll
 * made every ping-pong wait slower.
 */
#define RCX__SPIN_POLLS 64

struct rcx__spin {
	long long end; /* 0: not read yet */
	unsigned int polls;
	bool over;
};

/* rcx__spin_over where the wait yields (ctx->yield): a system call a poll */
bool rcx__spin_yield(const struct rcx_ctx *ctx, struct rcx__spin *sp);

/* true once the spin budget (RCX_SPIN_US) is spent: the caller may sleep */
static inline bool rcx__spin_over(const struct rcx_ctx *ctx,
				  struct rcx__spin *sp)
{
	long long now;

	if (sp->over)
		return true;
	if (RCX__UNLIKELY(ctx->yield) && ctx->cfg.spin_us)
		return rcx__spin_yield(ctx, sp);
	if (RCX__LIKELY(++sp->polls % RCX__SPIN_POLLS != 0) && ctx->cfg.spin_us)
		return false;
	now = rcx__now_us();
	if (!sp->end)
		sp->end = now + (long long)ctx->cfg.spin_us;
	sp->over = now >= sp->end;
	return sp->over;
}

#endif
