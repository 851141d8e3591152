/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_CHAN_INT_H
#define RCX_CHAN_INT_H

/*
 * Channel internals shared by chan.c (the fast path: start, startall,
 * completions, set failure) and chan_bind.c (bind handshake, set
 * construction and connection, free, rebind, nonblocking frees and
 * rebinds).
 */
#include <stdbool.h>
#include <endian.h>
#include <stdint.h>
#include <rcx/chan.h>
#include "lib/core/core.h"
#include "lib/chan/chan.h"

#define CH_MAX_BUNDLE	 255
#define CH_CREDIT_SIGNAL 16 /* signal one credit write in this many */
/*
 * write_imm receiver of a companion pair: its late credit is written by
 * this progress pass after its start if no companion message carried it
 * by then (the program may test its receive a few times before it
 * replies; a wait spins through them: chan_credit.c)
 */
#define CH_CREDIT_PASSES 4
/* write_imm receiver: zero-length receives reposted this many at a time */
#define CH_ZBATCH 16
/*
 * write_imm: a sender may run up to window - 1 messages ahead of the
 * receiver's starts when each channel has that many slots of its own
 * (at most CH_WINDOW, and CH_WINDOW_WRS messages for the whole set)
 */
#define CH_WINDOW     16
#define CH_WINDOW_WRS 256
/* most bytes one fused WRITE_IMM carries */
#define CH_FUSE_MAX (1u << 20)
/*
 * sender (send protocol; write_imm once its credit is there, where the
 * set fuses no bundle): a message that goes inline completes its start
 * at the post (the buffer is the program's again), posted unsignaled but
 * one in CH_SIG_EVERY; a copy of it is kept until a signaled completion
 * retires it (a remake sends it again from there). At most CH_UNACK such
 * messages per set are not known to have arrived: a start past that goes
 * signaled and completes on its completion. So a sender runs at most
 * CH_UNACK messages (and a start per channel) ahead of the receiver (of
 * write_imm, its credit bounds it first).
 */
#define CH_UNACK     16
#define CH_SIG_EVERY 8
/*
 * the immediate: channel index, channels carried - 1, and 16 low bits:
 * the start count (15 bits, read by no receiver), or, CH_IMM_RIDE set,
 * the 15 low bits of the companion receiver's credit (chan_credit.c)
 */
#define CH_IMM_COUNT 0x7fffu
#define CH_IMM_RIDE  0x8000u
#define CH_IMM(idx, m, count)                              \
	((uint32_t)(idx) << 24 | (uint32_t)((m)-1) << 16 | \
	 (uint32_t)((count)&CH_IMM_COUNT))

enum set_state {
	SET_HANDSHAKE, /* sender: waiting for answer and connection */
	SET_UP,
	SET_FREEING, /* told the peer; waiting for its free */
	SET_FAILED,
	SET_REMAKE, /* its queue pair broke: being made again (chan_remake.c) */
};

/* Remote-writable control words of a set. */
struct chctl {
	volatile uint64_t peer_free; /* the peer freed its end */
	uint64_t free_src;	     /* source of our free write: 1 */
	uint64_t words[];	     /* ready[n] (written by peer), then
					 * credit_src[n] (our source) */
};

struct chset;
struct chan;

/* sender with a ring: one message posted, not known to have arrived */
struct chtx {
	struct chan *c;
	uint64_t count; /* c's start count of it */
	int slot;	/* the slot it went to */
	uint16_t prev;	/* the ring's unsig before it (a post undone) */
	uint8_t sig;	/* posted signaled: a completion comes for it */
	uint8_t early;	/* its start completed at the post: a copy */
};

/*
 * sender with a ring (every send protocol sender; a write_imm sender whose
 * messages go inline and which fuses no bundle): the set's messages in
 * flight, in the order posted (the queue pair's send queue completes in that order, IBA
 * 10.8.6: a signaled completion retires every WR posted before it)
 */
struct chring {
	uint32_t head, tail; /* [head, tail) in flight */
	uint32_t mask;	     /* entries - 1 (a power of two) */
	uint32_t early;	     /* entries of early starts (copies) */
	uint32_t unsig;	     /* posted unsignaled since the last signaled */
	uint32_t dlen;	     /* bytes of one copy */
	struct chtx *e;
	uint8_t *data; /* the copies: dlen bytes per entry */
};

/* What a start does, fixed when the set's WRs are prepared. */
enum chan_mode {
	CH_SEND,  /* sender, send protocol: post the SEND */
	CH_WSEND, /* sender, write_imm: post the WRITE_IMM once ready */
	CH_RECV,  /* receiver, send protocol: post the receive */
	CH_WRECV, /* receiver, write_imm: write the credit */
};

struct chan {
	struct rcx__wrctx wrc; /* completion of this channel's WR */
	struct rcx_req *req;
	struct chset *set;
	/* the fast path's, set once the WRs are prepared (chan.c) */
	uint8_t mode;	    /* enum chan_mode */
	bool multi;	    /* more than one slot: addresses are patched */
	bool is_send;	    /* the set's */
	uint32_t imm_hi;    /* write_imm sender: idx << 24 */
	uint32_t lag;	    /* write_imm: the set's window - 1 */
	uint32_t early;	    /* write_imm receiver: arrived before their start */
	uint32_t credit_in; /* write_imm receiver: starts to the next credit */
	/* write_imm sender of a companion pair: the receiver whose credit
	 * its immediates carry (chan_credit.c) */
	struct chan *ride;
	/* ... that receiver: the credit its companion's last message
	 * carried (its late credit is then not written) */
	uint64_t rode;
	/* write_imm sender: the credit companion messages brought (the
	 * receiver's credit is the larger of it and ready[idx]) */
	uint64_t ride_ready;
	int (*post)(struct rcx_ep *ep, struct rcx_pwr **pwr, int n);
	/* pwr posted alone by the driver (zero: none; chan.c post_one) */
	struct rcx_pwr_direct d;
	/* where the driver's post names a WR it refused (never read): the
	 * fast path keeps no frame for it */
	union {
		struct ibv_send_wr *send;
		struct ibv_recv_wr *recv;
	} bad;
	/* sender with a ring whose message goes inline: the same SEND or
	 * WRITE_IMM unsignaled (its completion comes only if it fails), and
	 * how the driver posts it alone */
	struct rcx_pwr *upwr;
	struct rcx_pwr_direct ud;
	uint64_t *uwr_addr;  /* upwr->addr */
	uint64_t *uwr_raddr; /* upwr->remote_addr */
	uint32_t *uwr_imm;   /* upwr->imm_be */
	uint64_t *wr_addr;   /* pwr->addr */
	uint64_t *wr_raddr;  /* pwr->remote_addr */
	uint32_t *wr_imm;    /* pwr->imm_be */
	uint64_t *ready;     /* write_imm sender: ready[idx] */
	uint64_t *credit_w;  /* write_imm receiver: credit_src[idx] */
	int idx;
	uint8_t *buf;
	size_t len; /* this end's length */
	size_t stride;
	unsigned long slots;
	uint64_t count;	     /* starts so far */
	int cur_slot;	     /* slot of the message in flight */
	int next_slot;	     /* (idx + count * n) mod slots, no division */
	uint64_t next_off;   /* next_slot * stride */
	int slot_step;	     /* n mod slots: a bundle goes round robin */
	uint64_t step_off;   /* slot_step * stride */
	uint64_t wrap_off;   /* slots * stride */
	struct rcx_pwr *pwr; /* send: SEND/WRITE_IMM; recv: RECV (send) */
	/* recv: WRITE of credit_src[idx] to the peer's ready[idx] */
	struct rcx_pwr *credit;	    /* unsignaled */
	struct rcx_pwr *credit_sig; /* the same, signaled */
	struct chan *next_deferred;
	bool deferred;
	/* write_imm receiver: its credit waits for the next progress pass
	 * (on ctx->chan_credits, linked by next_credit; chan.c credit_later) */
	bool credit_late;
	/* ... paired: passes that leave it to the next (CH_CREDIT_PASSES) */
	uint8_t credit_grace;
	struct chan *next_credit;
	uint8_t fuse_m; /* deferred: first of this many started as one */
	bool freed;
	/* CH_RECV: its receive was still posted when the set failed (no
	 * completion ended it): counted in inflight until it flushes */
	bool flushing;
	/* remake: started while the set is remade, or deferred (not
	 * posted) when it broke: started again once it is up */
	bool held;
	/* remake, CH_RECV: its receive is posted on the broken queue pair */
	bool rm_posted;
	/* for rebind: where it was bound */
	struct rcx_group *g;
	int peer;
	int tag;
};

#define CH_MAGIC 0x52434842u /* "RCHB": a bind_msg */

struct bind_msg {
	uint32_t magic;
	uint32_t kind; /* 1 request, 2 answer */
	int32_t status;
	uint32_t n;
	uint32_t proto;
	uint32_t slots;
	uint64_t len;
	uint64_t stride;
	uint64_t cookie;
	uint64_t data_addr;
	uint64_t ctl_addr;
	uint32_t data_rkey;
	uint32_t ctl_rkey;
	uint32_t ack_tag;
	uint32_t companion; /* rcx_chan_companion (0: none) */
	char addr[RCX__ADDR_LEN];
};

struct chset {
	struct rcx__epobj obj; /* first: ep_ctx of the QP */
	struct rcx_ctx *ctx;
	/*
	 * the group bound on, held while the set lives (the user may free
	 * it first): its connection to the peer carries the set's notices
	 */
	struct rcx_group *g;
	struct chset *next;
	bool is_send;
	int n, live;
	int proto; /* RCX_CHAN_SEND or RCX_CHAN_WRITE_IMM */
	int state;
	int error;
	bool answered; /* sender: got the receiver's answer */
	/* sender answered before the connection came: it is due by then */
	long long conn_by_us;
	bool established;
	uint64_t cookie;
	size_t peer_len; /* the sender's len (what arrives) */
	struct rcx_ep *ep;
	/* sender, write_imm: the receiver's credit write wakes a sleeping
	 * wait (the endpoint's provider has RCX_PROV_WRITE_WAKES) */
	bool credit_wakes;
	/*
	 * write_imm, where the provider's write does not wake (verbs): the
	 * receiver's credit goes as an RDMA WRITE with immediate into one of
	 * the zero-length receives the sender keeps posted (zrecv), so the
	 * sender's completion queue gets an entry, and credit_wakes is set
	 */
	bool credit_imm;
	/* write_imm receiver: a start's credit is written by the next
	 * progress pass, after what the program posts meanwhile (chan.c
	 * credit_later): where credit_imm, and credits come early */
	bool credit_later;
	/*
	 * write_imm, one channel: the rcx_chan_companion both ends gave
	 * (0: none or they differ; fixed once the handshake agreed), the
	 * set of the other direction to the same peer it is paired with
	 * (mate), and whether it left the pair for good (chan_credit.c)
	 */
	uint32_t companion;
	struct chset *mate;
	bool mate_gone;
	struct rcx__reg *reg; /* the slot region */
	struct chctl *ctl;
	struct rcx__reg *ctl_reg;
	uint64_t peer_data;
	uint32_t peer_data_rkey;
	uint64_t peer_ctl;
	uint32_t peer_ctl_rkey;
	/* receiver, write_imm: zero-length receives that take immediates */
	struct rcx__wrctx zwrc;
	struct rcx_pwr *zrecv[CH_ZBATCH]; /* one post list */
	int zposted;
	int window;	  /* write_imm: see CH_WINDOW */
	int credit_every; /* write_imm receiver: see ch_credit_every */
	int zmin;	  /* keep more than this many posted: n * window */
	int inflight;	  /* signaled sends not completed */
	/* sender: its messages in flight (NULL: none yet, or a write_imm
	 * set without one: each start completes on its completion) */
	struct chring *ring;
	/* their unsignaled WRs' completions (only a failure's comes) */
	struct rcx__wrctx uwrc;
	/* the mark: a zero-length signaled WRITE that retires the ring's
	 * unsignaled tail where something waits for all (rcx__chan_mark) */
	struct rcx__wrctx mark_wrc;
	uint32_t mark_upto; /* ring tail when it went */
	bool mark_busy;
	/*
	 * write_imm sender whose slots are contiguous (stride == len): one
	 * WRITE_IMM carries consecutive channels started together
	 */
	struct rcx_pwr *fuse_pwr;
	struct rcx__wrctx fuse_wrc;
	bool fuse_busy; /* fuse_pwr is in flight, for channels fuse_lo.. */
	int fuse_lo, fuse_m;
	unsigned int credits_sent;
	struct rcx__wrctx credit_wrc, free_wrc;
	struct rcx_pwr *free_wr;
	struct rcx_req *eph;	 /* bind in progress */
	struct rcx_req *hs_recv; /* handshake receive still posted */
	int hs_sends;		 /* handshake sends not yet out */
	bool peer_told;		 /* the peer said its queue pair broke */
	bool peer_gone;		 /* its connection says the peer left */
	struct chremake *rm;	 /* remake under way (chan_remake.c) */
	struct rcx_ep *old_ep;	 /* remake: the broken one, until up */
	uint32_t rm_gen;	 /* remakes begun */
	struct bind_msg msg;	 /* handshake buffer */
	struct bind_msg peer_msg;
	struct chan ch[];
};

/* counters (chan_stats.c): the starts of s added to st; every live set */
void rcx__chan_stats_add(const struct chset *s, struct rcx_stats *st);
void rcx__chan_stats(struct rcx_ctx *ctx, struct rcx_stats *st);

static inline uint64_t *ready(struct chset *s)
{
	return (uint64_t *)s->ctl->words;
}

static inline uint64_t *credit_src(struct chset *s)
{
	return (uint64_t *)s->ctl->words + s->n;
}

/*
 * The window of a write_imm set of n channels on slots circular slots:
 * channel i cycles through slots / gcd(slots, n) slots of its own.
 */
static inline int ch_window(unsigned long slots, int n)
{
	unsigned long a = slots, b = (unsigned long)n, t, p;

	while (b) {
		t = a % b;
		a = b;
		b = t;
	}
	p = slots / a;
	if (p > CH_WINDOW)
		p = CH_WINDOW;
	if (p * (unsigned long)n > CH_WINDOW_WRS)
		p = CH_WINDOW_WRS / (unsigned long)n;
	return p < 1 ? 1 : (int)p;
}

/*
 * write_imm: the receiver writes its credit at its 1st start and every
 * this many after: once in the window (the credit of start k lets
 * message k go), or, where the next pass writes it (late: verbs, whose
 * post does the packet's work on rxe) and the window is 8 or more, once
 * in half of it, so each credit comes window / 2 messages before the
 * sender needs it and may follow the receiver's reply (credit_later).
 * Smaller windows (a bound collective's 2 or 4 slots) keep their credit
 * in the start.
 */
static inline int ch_credit_every(int window, bool late)
{
	return late && window >= 8 ? window / 2 : window;
}

static inline struct chan *to_chan(struct rcx_req *r)
{
	return r->obj;
}

static inline bool is_chan(const struct rcx_req *r)
{
	return rcx__req_live(r) && r->kind == RCX__REQ_CHAN && r->obj;
}

/* chan.c */
/* what lib/features.c hooks to the core (chan_bind.c: rcx__chan_feat) */
void rcx__chan_progress(struct rcx_ctx *ctx);
/* Carry on nonblocking frees and rebinds (ctx->chan_ops): how many ended. */
int rcx__chan_ops_progress(struct rcx_ctx *ctx);
void rcx__chan_fini(struct rcx_ctx *ctx);
/*
 * Binds whose sender got its answer but not the receiver's connection:
 * those with peer of g fail (it failed), those past
 * RCX_CONNECT_TIMEOUT_MS too (ctx->chan_conn_due counts them).
 */
void rcx__chan_peer_failed(struct rcx_group *g, int peer, int err);
void rcx__chan_conn_due(struct rcx_ctx *ctx, long long now);
/* a member of g failed or left: binds nobody can answer any more fail */
void rcx__chan_member_gone(struct rcx_group *g);

/* progress calls the channels while senders wait or frees are under way */
static inline void rcx__chan_work(struct rcx_ctx *ctx)
{
	rcx__feat_work(ctx, RCX__FEAT_CHAN,
		       ctx->chan_deferred != NULL || ctx->chan_ops != NULL ||
			       ctx->chan_credits != NULL);
}

extern const struct rcx__req_ops rcx__chan_ops;
/* complete the set's bind or free (its ephemeral request) with err */
void rcx__chan_eph_done(struct chset *s, int err);
/*
 * the set failed: active channels and the bind complete with err (a
 * transport failure on a peer known dead is RCX_ERR_PROC_FAILED)
 */
void rcx__chan_set_fail(struct chset *s, int err);
/* is s's peer known dead here (failed in the group, or its end gone)? */
bool rcx__chan_peer_dead(const struct chset *s);
/*
 * The error an error completion (status) of s's reports. A flush only
 * says the queue pair went to error first; on a set still up nothing of
 * ours put it there (a remake or a failure would have): the transport
 * did, or the peer's end, which is a death only when known to be one
 * (a transport failure is not a process failure by itself).
 */
static inline int wc_err(const struct chset *s, int status)
{
	if (status != RCX_ERR_FLUSHED)
		return status;
	return rcx__chan_peer_dead(s) ? RCX_ERR_PROC_FAILED : RCX_ERR_TRANSPORT;
}
/*
 * s failed with err (set_fail): a failure of the transport (the queue
 * pair's retries ran out) on a peer that may well live goes to the peer
 * too, over the group's connection, so that its end of the set fails
 * with err as well instead of waiting for what cannot come (chan_bind.c)
 */
void rcx__chan_tell_broken(struct chset *s, int err);
/* point the completions of s and its channels at their handlers */
void rcx__chan_set_wire(struct chset *s);
/* s's WRs are prepared: set its channels' fast path */
void rcx__chan_set_fast(struct chset *s);
/* take s's channels off the context's deferred list (and their late
 * credits off its credit list: a remake or a failure has them no more) */
void rcx__chan_undefer(struct chset *s);
/* chan_credit.c: write the late credits: every one (progress), or s's
 * (post: before its free write; else dropped) */
void rcx__chan_credits_post(struct rcx_ctx *ctx);
void rcx__chan_credits_of(struct chset *s, bool post);
/* c's credit goes at the next progress pass (unless a companion message
 * carried it by then) */
void rcx__chan_credit_later(struct chan *c);
/* the credits of channels [lo, hi) of s as one WR */
int rcx__chan_credit_range(struct chset *s, int lo, int hi);
int rcx__chan_credit_post_sig(struct chan *c);

/*
 * The credit write of one channel, prepared whole at bind: unsignaled,
 * except one in CH_CREDIT_SIGNAL to retire the send queue.
 */
static inline int ch_credit_post(struct chan *c)
{
	struct chset *s = c->set;

	if (RCX__LIKELY(++s->credits_sent % CH_CREDIT_SIGNAL))
		return c->post(s->ep, &c->credit, 1);
	return rcx__chan_credit_post_sig(c);
}

/*
 * companion pairs (chan_credit.c): s is up, paired with its companion if
 * that is up too; s leaves its pair for good (it fails, is freed or
 * goes); receiver s: an immediate with CH_IMM_RIDE came
 */
void rcx__chan_pair(struct chset *s);
void rcx__chan_unpair(struct chset *s);
void rcx__chan_ride_in(struct chset *s, uint32_t imm);
/* receiver c's late credit was carried: off the late list */
void rcx__chan_credit_rode(struct chan *c);

/*
 * write_imm sender c: the immediate (big-endian) of its message count.
 * Paired: the mate receiver's credit rides in it (then counted as
 * carried: its late credit is not written).
 */
static inline uint32_t ch_imm(struct chan *c, uint64_t count)
{
	struct chan *m = c->ride;
	uint32_t lo = (uint32_t)count & CH_IMM_COUNT;

	if (m) {
		m->rode = *m->credit_w;
		lo = CH_IMM_RIDE | ((uint32_t)m->rode & CH_IMM_COUNT);
		/* carried: the passes after have nothing to write for it */
		if (m->credit_late)
			rcx__chan_credit_rode(m);
	}
	return htobe32(c->imm_hi | lo);
}
/*
 * sender with a ring: s's unsignaled tail is wanted back (a free, a
 * drain, a remake): a zero-length signaled RDMA WRITE follows it, counted
 * in inflight (it takes no receive of the peer's; on an endpoint in error
 * it flushes, after what was posted before it)
 */
void rcx__chan_mark(struct chset *s);
/* s's free write went: signaled, after all, it retires the unsignaled tail */
static inline void rcx__chan_free_went(struct chset *s)
{
	s->inflight++;
	if (s->ring)
		s->ring->unsig = 0;
}
/* the ring's entries from head up to (not) upto are retired: arrived */
void rcx__chan_ring_retire(struct chset *s, uint32_t upto);
/* make s's ring if it has none (copies of dlen bytes): 0 or -ENOMEM */
int rcx__chan_ring_make(struct chset *s, uint32_t dlen);
void rcx__chan_ring_free(struct chset *s);
/*
 * s remade: the ring's messages that channel i's receiver did not
 * complete (cnt[i] of them) go again, in order; the others are retired
 */
int rcx__chan_ring_replay(struct chset *s, const uint64_t *cnt);
/* chan_imm.c: post s's zero-length receives (CH_ZBATCH: those posted
 * are counted) */
int rcx__chan_zrecv_post(struct chset *s);
/* ... their completions: any (cb), a successful one of a receiver (ok) */
void rcx__chan_on_imm(struct rcx_ctx *ctx, struct rcx__wrctx *w,
		      const struct rcx_cqe *cqe);
void rcx__chan_on_imm_ok(struct rcx_ctx *ctx, struct rcx__wrctx *w,
			 uint32_t byte_len, uint32_t imm, int has_imm);

/* the set of a zero-length receive's completion */
static inline struct chset *zwrc_set(struct rcx__wrctx *w)
{
	return (struct chset *)((char *)w - offsetof(struct chset, zwrc));
}

/*
 * chan_remake.c: a set whose queue pair the transport gave up on while
 * the peer may well live is made again, exactly once for every message.
 * Called first by rcx__chan_set_fail: true when err is taken by a remake
 * (one begins, or one is under way), false when the set fails.
 */
bool rcx__chan_remake(struct chset *s, int err);
/* a start of a channel of a set being remade: posted once it is up */
int rcx__chan_hold(struct rcx_req *r);
/* rcx_startall of channels one of whose sets is being remade */
int rcx__chan_hold_many(struct rcx_req **reqs, int n);
/* the remake of s cannot be made: it fails with err (told: the peer
 * said so; else the peer is told) */
void rcx__chan_remake_fail(struct chset *s, int err, bool told);
/* a remake notice of the peer (cid CHAN, kind CH_KIND_REMAKE) */
#define CH_KIND_REMAKE 4
void rcx__chan_remake_am(struct rcx__conn *c, const struct rcx__hdr *h,
			 const uint8_t *payload);
/* progress of the remakes under way and their time limit (cm cadence) */
void rcx__chan_remake_poll(struct chset *s, long long now);
/* s's new queue pair is up (its ESTABLISHED event) */
void rcx__chan_remake_up(struct chset *s);
/* free s's prepared WRs (set_prepare makes them anew) */
void rcx__chan_set_unprepare(struct chset *s);
/* the group connection to s's peer (NULL: none) */
struct rcx__conn *rcx__chan_set_conn(const struct chset *s);
/* the queue pair attributes of s, and the connection that names its
 * cookie (a receiver's, to its sender) */
int rcx__chan_connect(struct chset *s);

/* chan_bind.c: the arguments of a bind (or rebind) */
struct bind_args {
	struct rcx_group *g;
	uint8_t *buf;
	size_t len;
	int peer;
	int tag;
	bool is_send;
	int proto;
	unsigned long slots, stride;
	uint32_t companion; /* rcx_chan_companion (0: none) */
};

/* info keys of a bind into a: 0 or -EINVAL */
int rcx__chan_parse_info(const struct rcx_info *info, struct bind_args *a);
/*
 * Make a set, its channel requests and the ephemeral request, and start
 * the handshake. Lock held. chans[i] get the channel handles (or reuse
 * the handles in reuse[], rebind).
 */
int rcx__chan_bind_start(struct rcx_ctx *ctx, const struct bind_args *a, int n,
			 struct rcx_req **reuse, struct rcx_req **chans,
			 struct rcx_req **eph_out);
/* wait for a bind's or free's ephemeral request. Lock held. */
int rcx__chan_wait_eph(struct rcx_ctx *ctx, struct rcx_req *eph);
/* unlink s, reap its WRs and free it */
void rcx__chan_set_destroy(struct chset *s);

#endif
