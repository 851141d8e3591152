/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_SHM_H
#define RCX_SHM_H

/*
 * The shared-memory provider ("shm", RCX_PROVIDER=shm): reliable
 * connected endpoints between processes of one host, with the semantics
 * of an RC queue pair and no NIC.
 *
 * - Device: one per process and open. A segment in /dev/shm that peers
 *   map (its registration table, the striped locks of the emulated
 *   atomics, the "armed" word), and a datagram socket with an abstract
 *   name (connection messages and wakeups). Address: "shm:PID:N".
 * - Endpoint: a segment made by the connecting side with one ring of
 *   fixed-size entries per direction (single producer, single consumer).
 *   SEND, SEND_IMM and WRITE_IMM are ring entries; a payload up to
 *   SHM_INLINE travels in the entry and is copied out of it by the
 *   receiver, a larger one is moved by cross-memory attach
 *   (process_vm_readv/writev) by whichever side executes. A SEND of
 *   SHM_DIRECT_MIN bytes or more whose receive is already posted, with
 *   nothing of the sender's before it left to run, in a segment of the
 *   receiver's mem_alloc, is copied by the sender into that buffer
 *   (shm_sq_direct): its entry, run by the receiver, carries no payload. WRITE, READ and
 *   the atomics run at post time on the peer's memory, after the rkey is
 *   checked in the target's registration table: memcpy and CPU atomics
 *   where the registration is in a segment of mem_alloc (shm_mem.c; the
 *   peer maps it), else process_vm_writev / readv (atomics under the
 *   target's striped lock). An endpoint remembers the registration its
 *   last check found (struct shm_mr_seen).
 * - Completions: a queue of the device's, filled in place; cq_dispatch
 *   hands each to the struct rcx_wct its wr_id points at, and so does
 *   the core's test through the direct poll (cq_peek).
 * - Connection messages: a datagram socket, read when the receiver's
 *   doorbell (cm_bell) moved; liveness once a tick (SHM_LIVE_MS): no
 *   system call per progress call.
 * - Order (IBA 9.5, what the RC rules give): the responder executes the
 *   requests of one endpoint in order. A ring entry is executed by the
 *   peer when it consumes it; a direct operation runs only once the peer
 *   has consumed every earlier entry, and otherwise waits in the sender's
 *   pending queue, as everything behind it does. A READ or an atomic is
 *   complete before the next WR starts, so RCX_WR_FENCE is always met.
 *   Send completions come in post order: a ring entry completes when the
 *   peer has consumed it (its receive is done), with the peer's status.
 * - A receive is taken from the receiver's own queue when it consumes an
 *   entry; with none posted the entry waits (receiver not ready, retried
 *   for ever, as rnr_retry 7), and so does everything behind it.
 * - Errors: a bad rkey or an access outside the registration completes
 *   with RCX_ERR_REMOTE_ACCESS and puts the endpoint in error; an
 *   endpoint in error completes everything outstanding with
 *   RCX_ERR_FLUSHED and tells the peer through the shared segment (the
 *   peer's next operation fails as a retry-exceeded one would). A peer
 *   that dies is seen through its pidfd: DISCONNECTED, then flushes.
 *   What the peer delivered before is reported first, ahead of the error
 *   of a send posted to it after it went (a NIC reports a message when
 *   it arrives).
 */
#include <stdatomic.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include "../provider.h"

#define SHM_MAGIC    0x72637873686d3038ull /* "rcxshm08" */
#define SHM_INLINE   4096
#define SHM_SQ	     128  /* send queue entries, a power of two */
#define SHM_SQ_LAZY  32	  /* entries left unreaped at most (sq_want) */
#define SHM_RQ	     4096 /* posted receives, a power of two */
#define SHM_MR_MAX   8192
#define SHM_MR_PROBE 8 /* slots a key may take, from key & (MAX-1) */
#define SHM_LOCKS    256
#define SHM_CQ_MIN   1024
#define SHM_DISPATCH 16 /* completions one cq_dispatch hands over */
#define SHM_PDATA    56
/*
 * A SEND of at least this many bytes into a receive of the peer's that
 * lies in a segment of its mem_alloc, posted with nothing of ours before
 * it left to run: the sender copies it into the receive's buffer itself
 * (shm_sq_direct). Below it, the payload in the entry costs the receiver
 * fewer lines than the sender's look at the receive (its queue's tail
 * and entry, written by the receiver) would.
 */
#define SHM_DIRECT_MIN 256
/* a segment's name: see shm_seg_name */
#define SHM_SEG_NAME_MAX 64
#define SHM_MAX_WR	 16384
/*
 * Peers' liveness (their pidfds) is looked at once in SHM_LIVE_MS of
 * progress, and whenever a wait is about to sleep: a spinning process
 * sees a peer's exit within that, a sleeping one is woken by the pidfd.
 */
#define SHM_LIVE_MS 250
#define SHM_MAPS    8 /* peer segments an endpoint keeps mapped */
/*
 * Work bits: a device with SHM_WORK_MIN endpoints or more says so in its
 * segment (work_on), and from then on a peer that leaves work for one of
 * its endpoints (an entry published, a WR run, a receive taken, a side
 * dead) sets that endpoint's bit in the device's work map, after the
 * change and before the wakeup (shm_work_mark); a poll takes the map
 * (one load when it is empty) and looks at those endpoints only, and at
 * those that had work in the last pass or were posted to since
 * (dev->again). Bit 0 (a peer that does not know our endpoint's number
 * yet, a connection event, a wait that sleeps) stands for all of them.
 * Endpoints share a bit beyond 63: a bit looks at each of its own.
 * Fewer endpoints: each poll looks at all, and no peer writes the map.
 */
#define SHM_WORK_BITS 64
#define SHM_WORK_MIN  3
/*
 * Watched endpoints: a mark is a read-modify-write of a line the peer
 * polls, and the peer then exchanges it back: two transfers of that line
 * between the CPUs, and the entry's line after them, on the path of
 * every message (a bound channel's pair of endpoints and the group's
 * connection make three: a channel's ping-pong took 1.3 to 1.6 times
 * p2p's, with one endpoint and no map). So a poll by the map looks, every
 * pass, besides what the map names, at up to SHM_WATCH endpoints of its
 * own that had work (the first to have it), and says so in the
 * connection segment (watch[side]); a peer that finds it set leaves no
 * mark for an entry it published: the entry's line is the one the waiter
 * polls, as without the map. That look is one load per endpoint, of the
 * seq of the peer's next entry (struct shm_watch, noted at each full look
 * of the endpoint), not the endpoint's whole state (an empty test looked
 * at every word of each: 220 instructions with three). What else the
 * peer changes is marked all the same (a WR of ours the peer ran that
 * wants a completion is looked for by us: a watched endpoint with one
 * outstanding, see sq_want, is looked at in full every pass until it is
 * reaped): a WR the peer ran itself into our queues (its entry's seq
 * is then behind us) and a side dead. An endpoint that had no work for
 * SHM_WATCH_IDLE passes (shm_watch_expire, looked for once in
 * SHM_WATCH_CHECK passes with work, and in shm_idle), or is destroyed,
 * is watched no more: cleared, then a seq_cst fence and a full look at
 * it in the next pass (shm_unwatch), so a peer either sees it cleared
 * and marks, or the look finds the change.
 */
#define SHM_WATCH	4
#define SHM_WATCH_IDLE	4096
#define SHM_WATCH_CHECK 512 /* a power of two */
/*
 * Peers of one host may share a CPU (more processes than CPUs, a busy
 * host): a waiter that spins there holds the CPU the peer it waits for
 * needs until the scheduler's tick, a time slice (milliseconds) per
 * message. So a process that polls and finds nothing says on which CPU
 * it waits (its device segment's idle_cpu; the CPU read through rseq,
 * stored only when it changed) at the SHM_YIELD_POLLS-th empty poll in a
 * row and once in SHM_YIELD_EVERY after, and gives the CPU away
 * (sched_yield) if a peer said it waits on the same CPU: that peer is
 * not running, it is queued behind us. A peer on a CPU of its own is left
 * alone: no system call while it computes or is preempted there. The
 * mark stays when the wait ends: no store per message into the line the
 * peers read (a peer that finds it stale, after we moved, yields with
 * nobody to switch to once in SHM_YIELD_EVERY polls until our next
 * wait); a wait that goes to sleep takes it back (arm). With 256 empty
 * polls before the first look, two ranks on one CPU spun about 10 us a
 * wait (a 2-cpu guest) where a peer on a CPU of its own answers in 1 us.
 * The first look (about 50 instructions with a few endpoints) is not at
 * the first or second empty poll: a wait that a peer on its own CPU ends
 * within a few polls pays nothing for it, nor does a test that finds
 * nothing twice in a row.
 */
#define SHM_YIELD_POLLS 4
#define SHM_YIELD_EVERY 16
/*
 * Two processes that hand a CPU to each other never look idle to the
 * scheduler's load balancer (a task that ran less than half a
 * millisecond ago is not moved): after a streak of yields (first
 * SHM_YIELD_STREAK) a waiter spins SHM_YIELD_PAUSE polls without
 * yielding, so that the peer, off the CPU that long, may be moved to
 * another one. Each pause doubles the next streak, up to
 * SHM_YIELD_STREAK_MAX: where no CPU has room (a busy host) the pair
 * stays, and a pause is a time slice lost (with yields from the first
 * empty polls, 512 yields are a few milliseconds of messages).
 */
#define SHM_YIELD_STREAK     512
#define SHM_YIELD_STREAK_MAX (1u << 15)
#define SHM_YIELD_PAUSE	     (1u << 16)

/*
 * A send queue entry (a WR), in the connection segment. Its first line
 * holds what the executor of a SEND or WRITE_IMM needs and the first 32
 * bytes of an inline payload; seq, written last (release), publishes it:
 * the receiver polls that word, so a small message costs it one line.
 */
struct shm_sqe {
	_Alignas(64) _Atomic uint32_t seq; /* its index + 1: published */
	uint8_t op;			   /* enum rcx_op */
	uint8_t signaled;		   /* a completion is wanted */
	uint8_t inl;			   /* the payload is in data[] */
	uint8_t notify; /* the sender wants a mark when it has run */
	uint32_t len;
	uint32_t imm; /* host order */
	/* written by the executor on error only (0 when posted) */
	int32_t status;
	uint32_t rkey;
	uint64_t raddr; /* in the receiver */
	uint8_t data[SHM_INLINE];
	uint64_t wr_id;
	uint64_t addr; /* in the sender */
	uint64_t compare_add, swap;
};

/* the bytes of an inline payload in the entry's first line */
#define SHM_SQE_HEAD (64 - offsetof(struct shm_sqe, data))

/*
 * A posted receive, filled in by the executor of the SEND it takes. mem:
 * the receiver's segment of mem_alloc that holds the buffer (0: none),
 * where the sender may deliver a SEND itself (shm_sq_direct); posted,
 * written last (release): its index + 1. A line each: the sender that
 * looks at one reads one line, and no other receive's.
 */
struct shm_rqe {
	_Alignas(64) _Atomic uint32_t posted;
	uint64_t addr;
	uint32_t len;
	uint8_t op; /* RCX_OP_RECV or RCX_OP_RECV_IMM */
	uint8_t has_imm;
	uint8_t pad[2];
	uint32_t byte_len;
	uint32_t imm;
	int32_t status;
	uint32_t mem;
	uint64_t mem_base, mem_len;
};

/* shm_sqe.inl of a SEND already in its receive's buffer (shm_sq_direct);
 * its raddr is that buffer's address */
#define SHM_INL_DONE 2

/*
 * One direction of a connection: side s's send queue and side !s's
 * receive queue. Whoever of the two processes runs progress executes
 * the send queue in order (the "HCA"), under lock; indices only grow.
 * An entry whose payload travels in it (SEND, SEND_IMM, WRITE_IMM up to
 * SHM_INLINE) is executed by the receiver: it copies the payload once,
 * from the entry to its buffer, and no line of the receiver's is written
 * by the sender. Each word sits with the others of its writer.
 */
struct shm_dir {
	_Alignas(64) _Atomic uint32_t sq_tail; /* sender: posted */
	_Alignas(64) _Atomic uint32_t sq_exec; /* executor: done */
	/* apart from sq_exec, which the sender polls: the receiver takes
	 * it once a message, a line the sender does not read */
	_Alignas(64) _Atomic int32_t lock;     /* pid of the executor, 0 */
	_Alignas(64) _Atomic uint32_t rq_tail; /* receiver: posted */
	_Atomic uint32_t rq_done;	       /* executor: taken */
	_Alignas(64) struct shm_sqe sq[SHM_SQ];
	struct shm_rqe rq[SHM_RQ];
};

/* The segment of one connection: dir[s] carries side s's sends. */
struct shm_conn_seg {
	uint64_t magic;
	/* a side whose endpoint went into error (index: 0 connector) */
	_Atomic uint32_t dead[2];
	/* side s polls its endpoint every pass: no mark (see SHM_WATCH);
	 * a line each, written by its side only, seldom */
	struct {
		_Alignas(64) _Atomic uint32_t on;
	} watch[2];
	struct shm_dir dir[2];
};

struct shm_mr_ent {
	_Atomic uint32_t key; /* 0: free */
	uint32_t access;      /* enum rcx_access */
	uint64_t addr;
	uint64_t len;
	/* in a segment of mem_alloc (mem, not 0): peers map it */
	uint32_t mem;
	/* bumped by each registration made in this entry, before its key
	 * is written: a key seen again with the same gen is the same
	 * registration (a keyed one may come back under the same key) */
	_Atomic uint32_t gen;
	uint64_t mem_base, mem_len;
};

/* Where a registration's memory is, for a peer: a segment, or not. */
struct shm_mem_ref {
	uint32_t id; /* 0: plain memory of the process */
	uint64_t base, len;
};

/*
 * The registration an endpoint's last key check found in one table (the
 * peer's, or ours for the WRITE_IMMs it runs): a channel or a window
 * names the same one message after message, and then one load of its
 * entry's key and gen stands for the look-up (shm_mr_seen_ok).
 */
struct shm_mr_seen {
	const struct shm_mr_ent *e; /* NULL: nothing seen */
	uint32_t key, gen;
	uint32_t access;
	uint64_t addr, len;
	struct shm_mem_ref ref;
	/* our own table: dev->mr_changes when it was last looked up */
	uint32_t changes;
};

/* A segment of mem_alloc: "/rcx-shm.PID.DEV.mID", mapped by peers. */
struct shm_mem {
	struct shm_mem *next, *all_next; /* the device's; the process's */
	uint32_t id;
	void *base;
	size_t len;
};

/* The device's segment, mapped by every peer. */
struct shm_dev_seg {
	uint64_t magic;
	int32_t pid;
	_Atomic uint32_t armed; /* a wakeup is wanted */
	/* bumped after each connection message sent to this device: the
	 * socket is read only when it moved (no empty recv per poll) */
	_Atomic uint32_t cm_bell;
	/* 1 + the CPU this process last polled idle on, 0: none, or it
	 * sleeps (see SHM_YIELD_POLLS) */
	_Atomic uint32_t idle_cpu;
	/* peers mark work (see SHM_WORK_MIN); in the line of armed, which
	 * the peer's wakeup reads anyway */
	_Atomic uint32_t work_on;
	_Alignas(64) _Atomic uint64_t work;
	_Alignas(64) _Atomic uint32_t lock[SHM_LOCKS];
	struct shm_mr_ent mr[SHM_MR_MAX];
};

enum shm_msg_type {
	SHM_MSG_KICK = 1, /* wakeup only */
	SHM_MSG_CONNECT,
	SHM_MSG_ACCEPT,
	SHM_MSG_REJECT,
	SHM_MSG_RTU, /* ready to use: the connector is established */
	SHM_MSG_DISC,
};

/* A datagram between devices. */
struct shm_msg {
	uint32_t type;
	int32_t pid;	 /* sender */
	uint32_t dev;	 /* sender's device number */
	uint32_t src_ep; /* sender's endpoint id */
	uint32_t dst_ep; /* receiver's endpoint id (0 on CONNECT) */
	uint32_t pdata_len;
	uint8_t pdata[SHM_PDATA];
	char seg[SHM_SEG_NAME_MAX]; /* CONNECT: the connection segment's name */
};

struct shm_cm_node {
	struct shm_cm_node *next;
	struct rcx_cm_event ev;
};

struct shm_conn_req {
	struct rcx_conn_req pub; /* first */
	struct shm_msg msg;
};

/* A send WR not started yet (behind others, or the ring is full). */
struct shm_pend {
	struct shm_pend *next;
	struct rcx_wr wr;
};

enum shm_ep_state {
	SHM_EP_CONNECTING,
	SHM_EP_ACCEPTING, /* accepted, waiting for RTU */
	SHM_EP_CONNECTED,
	SHM_EP_ERROR, /* flushed; disconnected or failed */
};

struct shm_dev;

struct shm_ep {
	struct rcx_ep pub; /* first */
	struct shm_dev *dev;
	struct rcx_ep_attr attr;
	uint32_t id; /* this side's number for the peer's messages */
	uint32_t peer_ep;
	/* 1 << the work bit of this endpoint, of the peer's (see
	 * SHM_WORK_MIN; bit 0 while peer_ep is not known) */
	uint64_t wmask, peer_wmask;
	int state;
	int side;	     /* 0 connector, 1 acceptor */
	bool disc_event;     /* DISCONNECTED already reported */
	bool watched;	     /* in dev->watch (see SHM_WATCH) */
	uint32_t wslot;	     /* its entry there */
	uint32_t watch_pass; /* dev->wpass when it last had work, watched */
	pid_t peer_pid;
	uint32_t peer_dev;
	int pidfd;
	struct sockaddr_un peer_addr, peer_kaddr; /* messages, wakeups */
	socklen_t peer_addr_len, peer_kaddr_len;
	struct shm_dev_seg *peer_seg; /* the peer device's segment */
	/* the peer's mem_alloc segments mapped here (round robin) */
	struct shm_map {
		uint32_t id;
		uint64_t base, len;
		uint8_t *ptr;
	} maps[SHM_MAPS];
	uint32_t map_next;
	uint32_t map_hit; /* the map the last look found */
	/* the last registration checked: [0] the peer's table, [1] ours */
	struct shm_mr_seen mr_seen[2];
	struct shm_conn_seg *cseg;
	char cseg_name[SHM_SEG_NAME_MAX];
	struct shm_dir *tx, *rx; /* dir[side], dir[!side] */
	uint32_t sq_reaped;	 /* tx: completions taken up to here */
	uint32_t rq_reaped;	 /* rx: receive completions taken */
	uint32_t sq_own;	 /* tx: 1 + the last WRITE, READ, atomic */
	/* tx: 1 + the last entry signaled or not rx_exec (sq_want) */
	uint32_t sq_note;
	uint32_t ran_now; /* WRs that run_now ran (a count) */
	/* SENDs delivered into the peer's receive buffer (a count) */
	uint32_t sent_direct;
	/* tx: entries put in the ring that take no receive (a WRITE, READ,
	 * atomic): the others took one each, so once all before entry t
	 * ran, t - sq_others is the receive the next takes */
	uint32_t sq_others;
	uint64_t *rq_wr_id; /* rx: wr_id of each posted receive */
	struct shm_pend *pend, *pend_tail;
	uint32_t npend;
	uint8_t pdata[SHM_PDATA];
	uint8_t pdata_len;
	struct shm_ep *next;	 /* device's list */
	struct shm_ep *bit_next; /* device's endpoints of the same work bit */
};

struct shm_dev {
	struct shm_dev_seg *seg;
	char seg_name[SHM_SEG_NAME_MAX];
	uint32_t num;
	pid_t pid;
	int sock;
	int epfd;
	struct sockaddr_un addr;
	socklen_t addr_len;
	/* wakeups have their own socket: taking connection messages off
	 * the other (cm_poll) must not take a wakeup with them */
	int ksock;
	struct sockaddr_un kaddr;
	socklen_t kaddr_len;
	struct shm_ep *eps;
	uint32_t next_ep;
	uint32_t neps;
	/* polls by the work map (seg->work_on set), the endpoints of each
	 * bit; again: bits to look at in the next pass (ours, bit 0: all) */
	bool work_on;
	uint64_t again;
	uint32_t looks; /* endpoints the map's passes looked at (a count) */
	/* looked at in every pass of the map's (see SHM_WATCH): the seq
	 * word of the peer's next entry, and its value when published; a
	 * slot not used, wnone and 1 (no loop: shm_watch_hit) */
	const _Atomic uint32_t *wseq[SHM_WATCH];
	uint32_t wwant[SHM_WATCH];
	struct shm_watch {
		uint64_t wmask;
		struct shm_ep *ep;
	} watch[SHM_WATCH];
	uint32_t nwatch;
	_Atomic uint32_t wnone; /* 0 */
	uint32_t wpass;		/* passes by the map (see shm_watch_expire) */
	struct shm_ep *by_bit[SHM_WORK_BITS];
	/* the completion queue: [cq_head, cq_tail), cq_cap a power of 2 */
	struct shm_cq_ent {
		struct rcx_cqe c;
		const struct shm_ep *ep; /* whose: its destroy forgets it */
	} * cq;
	uint32_t cq_cap, cq_head, cq_tail;
	bool cq_added; /* by shm_cq_add: a wakeup is owed (shm_cq_kick) */
	struct shm_cm_node *cm_head, *cm_tail;
	/* connection messages that met a full socket: sent again later */
	struct shm_out {
		struct shm_out *next;
		struct sockaddr_un to;
		socklen_t to_len;
		struct shm_msg msg;
	} * out;
	uint32_t mr_next, mr_gen;
	/* registrations made and removed in our table (shm_own_key_ok) */
	uint32_t mr_changes;
	uint32_t cm_seen;   /* cm_bell when the socket was last read */
	uint32_t idle;	    /* polls in a row that found nothing */
	uint32_t yields;    /* sched_yield calls since the last pause */
	uint32_t streak;    /* yields from one pause to the next */
	uint32_t pause;	    /* empty polls left without a yield */
	long long live_ms;  /* last look at the peers (coarse clock) */
	bool live_now;	    /* look at once: a wait is going to sleep */
	struct pollfd *pfd; /* one per peer with a pidfd */
	uint32_t pfd_cap;
	struct shm_mem *mems; /* segments of mem_alloc */
	/* the one shm_mem_find found last (a receive's buffer is looked
	 * up at each post) */
	struct shm_mem *mem_hit;
	uint32_t mem_next;
};

struct shm_mr {
	struct shm_dev *dev;
	uint32_t idx, key;
};

static inline struct shm_dev *to_sdev(struct rcx_dev *d)
{
	return (struct shm_dev *)d;
}

static inline struct shm_ep *to_sep(struct rcx_ep *e)
{
	return (struct shm_ep *)e;
}

extern const struct rcx_provider_ops rcx__shm_ops;

/* Endpoint number id's bit in its device's work map (0: every one). */
static inline uint32_t shm_work_bit(uint32_t id)
{
	return id ? 1 + (id - 1) % (SHM_WORK_BITS - 1) : 0;
}

/* Look at the endpoints of bit b in the next pass (0: at every one). */
static inline void shm_work_again(struct shm_dev *dev, uint32_t b)
{
	dev->again |= 1ull << b;
}

/* The peer's endpoint number is known: its bit. */
static inline void shm_set_peer_ep(struct shm_ep *ep, uint32_t peer_ep)
{
	ep->peer_ep = peer_ep;
	ep->peer_wmask = 1ull << shm_work_bit(peer_ep);
}

/*
 * The peer's endpoint has work: its bit in the peer's map, when the peer
 * polls by it. After the change and a seq_cst fence (the caller's, which
 * the wakeup after this needs too): either the peer's switch to the map
 * sees the change in the full pass that follows it, or this sees the
 * switch; the map's acquire orders the peer's loads after the change.
 * Only a change the peer's look at a watched endpoint finds (an entry
 * published, see SHM_WATCH) may go unmarked: all says whether this is
 * one of the others.
 */
static inline void shm_work_mark(struct shm_ep *ep, bool all)
{
	if (atomic_load_explicit(&ep->peer_seg->work_on,
				 memory_order_relaxed) &&
	    (all || !atomic_load_explicit(&ep->cseg->watch[!ep->side].on,
					  memory_order_relaxed)))
		atomic_fetch_or_explicit(&ep->peer_seg->work, ep->peer_wmask,
					 memory_order_release);
}

/*
 * After a full look at a watched ep: the seq word its next look loads,
 * that of the peer's next entry to run here (published: the endpoint is
 * looked at in full).
 */
static inline void shm_watch_note(struct shm_dev *dev, struct shm_ep *ep)
{
	uint32_t e =
		atomic_load_explicit(&ep->rx->sq_exec, memory_order_relaxed);

	dev->wseq[ep->wslot] = &ep->rx->sq[e % SHM_SQ].seq;
	dev->wwant[ep->wslot] = e + 1;
}

/* a slot of dev->watch not used: its load never finds a match */
static inline void shm_watch_none(struct shm_dev *dev, uint32_t i)
{
	dev->wseq[i] = &dev->wnone;
	dev->wwant[i] = 1;
	dev->watch[i] = (struct shm_watch){ 0 };
}

/* Did a peer publish the next entry of a watched endpoint? Loads only. */
static inline bool shm_watch_hit(const struct shm_dev *dev)
{
	_Static_assert(SHM_WATCH == 4, "one load per slot, no loop");
	return atomic_load_explicit(dev->wseq[0], memory_order_relaxed) ==
		       dev->wwant[0] ||
	       atomic_load_explicit(dev->wseq[1], memory_order_relaxed) ==
		       dev->wwant[1] ||
	       atomic_load_explicit(dev->wseq[2], memory_order_relaxed) ==
		       dev->wwant[2] ||
	       atomic_load_explicit(dev->wseq[3], memory_order_relaxed) ==
		       dev->wwant[3];
}

/* ep had work in a pass by the map: watch it, if there is room */
static inline void shm_watch(struct shm_dev *dev, struct shm_ep *ep)
{
	if (ep->watched || dev->nwatch == SHM_WATCH || !ep->cseg)
		return;
	ep->watched = true;
	ep->watch_pass = dev->wpass;
	ep->wslot = dev->nwatch++;
	dev->watch[ep->wslot].ep = ep;
	dev->watch[ep->wslot].wmask = ep->wmask;
	shm_watch_note(dev, ep);
	atomic_store_explicit(&ep->cseg->watch[ep->side].on, 1,
			      memory_order_relaxed);
}

/* shm_dev.c */
/* a completion, and a wakeup for a thread of ours that may sleep */
int shm_cq_push(struct shm_dev *dev, const struct shm_ep *ep,
		const struct rcx_cqe *c);
/*
 * A completion without the wakeup: the caller's provider call ends with
 * shm_cq_kick before it returns. That wakeup is for a thread of this
 * process, and needs no fence: a thread arms the device and polls once
 * more under the context's lock before it sleeps (rcx__wait_events,
 * rcx_ctx_arm, the continuations' block), and completions are added
 * under that lock, which orders the two. (A peer's wakeup needs one:
 * shm_kick.)
 */
int shm_cq_add(struct shm_dev *dev, const struct shm_ep *ep,
	       const struct rcx_cqe *c);
void shm_cq_kick_now(struct shm_dev *dev);
static inline void shm_cq_kick(struct shm_dev *dev)
{
	if (dev->cq_added)
		shm_cq_kick_now(dev);
}
/* double the completion queue (it is full): 0, or -ENOMEM */
int shm_cq_grow(struct shm_dev *dev);
/*
 * shm_cq_add's entry, for the caller to fill in place (no completion
 * built elsewhere and copied); NULL: the queue is full and cannot grow.
 */
static inline struct rcx_cqe *shm_cq_next(struct shm_dev *dev,
					  const struct shm_ep *ep)
{
	struct shm_cq_ent *q;

	if (__builtin_expect(dev->cq_tail - dev->cq_head == dev->cq_cap, 0) &&
	    shm_cq_grow(dev))
		return NULL;
	q = &dev->cq[dev->cq_tail++ & (dev->cq_cap - 1)];
	q->ep = ep;
	dev->cq_added = true;
	return &q->c;
}
void shm_kick(struct shm_dev *dev, struct shm_dev_seg *seg,
	      const struct sockaddr_un *to, socklen_t to_len);
/* shm_kick after a seq_cst fence of the caller's (one for several) */
void shm_kick_fenced(struct shm_dev *dev, struct shm_dev_seg *seg,
		     const struct sockaddr_un *to, socklen_t to_len);
/* to_seg: the receiver's device segment, whose doorbell is rung */
int shm_send_msg(struct shm_dev *dev, const struct sockaddr_un *to,
		 socklen_t to_len, const struct shm_msg *m,
		 struct shm_dev_seg *to_seg);
void shm_cm_push(struct shm_dev *dev, const struct rcx_cm_event *ev);
void shm_name_addr(pid_t pid, uint32_t dev, bool kick, struct sockaddr_un *a,
		   socklen_t *len);
void *shm_map(const char *name, size_t len, bool create);
/*
 * The name of a segment of process pid's device dev (peers share our PID
 * namespace: the node key says so), "/rcx-shm.NS-PID.DEV", with ".x" for
 * what the device holds when suffix is not NULL (its printf form and
 * value). NS, the PID namespace, keeps shm_sweep from taking a live
 * process of another namespace that shares /dev/shm for a dead one.
 */
/* Our PID namespace's inode, 0 when /proc does not say. */
unsigned long shm_pid_ns(void);
void shm_seg_name(char *buf, size_t len, pid_t pid, uint32_t dev,
		  const char *suffix, uint32_t v);
void shm_flush_out(struct shm_dev *dev);
int shm_drain_sock(struct shm_dev *dev);
/*
 * A registration of dev's segment seg covering [addr, addr+len) with
 * access: ref learns whether its memory is in a segment of mem_alloc,
 * and *seen remembers the registration (NULL entry: none found).
 */
bool shm_mr_look(struct shm_mr_seen *seen, struct shm_dev_seg *seg,
		 uint32_t key, uint64_t addr, uint64_t len, unsigned int access,
		 struct shm_mem_ref *ref);

/*
 * shm_mr_look, for an endpoint that checks the same key again and again:
 * when the entry seen last still holds that key under the same gen, it
 * is the same registration (the acquire orders the reads of its memory
 * after the check, as the look-up's does).
 */
static inline bool shm_mr_seen_ok(struct shm_mr_seen *seen,
				  struct shm_dev_seg *seg, uint32_t key,
				  uint64_t addr, uint64_t len,
				  unsigned int access, struct shm_mem_ref *ref)
{
	const struct shm_mr_ent *e = seen->e;

	if (e && seen->key == key &&
	    atomic_load_explicit(&e->key, memory_order_acquire) == key &&
	    atomic_load_explicit(&e->gen, memory_order_relaxed) == seen->gen &&
	    (seen->access & access) == access && addr >= seen->addr &&
	    len <= seen->len && addr - seen->addr <= seen->len - len) {
		*ref = seen->ref;
		return true;
	}
	return shm_mr_look(seen, seg, key, addr, len, access, ref);
}

/*
 * shm_mr_seen_ok for a key of our own table (the WRITE_IMMs the receiver
 * runs): only this process changes that table, and dev->mr_changes counts
 * each change, so while the count has not moved the registration the
 * last look found still stands, with no load of its shared entry.
 */
static inline bool shm_own_key_ok(struct shm_mr_seen *seen, struct shm_dev *dev,
				  uint32_t key, uint64_t addr, uint64_t len,
				  unsigned int access)
{
	struct shm_mem_ref ref;

	if (seen->e && seen->changes == dev->mr_changes && seen->key == key &&
	    (seen->access & access) == access && addr >= seen->addr &&
	    len <= seen->len && addr - seen->addr <= seen->len - len)
		return true;
	if (!shm_mr_look(seen, dev->seg, key, addr, len, access, &ref))
		return false;
	seen->changes = dev->mr_changes;
	return true;
}
void shm_mem_name(pid_t pid, uint32_t dev, uint32_t id, char *buf, size_t len);
long long shm_coarse_ms(void);
/* an empty poll (dev->idle of them in a row): perhaps yield the CPU */
void shm_idle(struct shm_dev *dev);
/*
 * ep watched no more (see SHM_WATCH): the next pass looks at it; before
 * that pass, a seq_cst fence of the caller's (one for several)
 */
void shm_unwatch(struct shm_dev *dev, struct shm_ep *ep);
/*
 * The watched endpoints with no work for SHM_WATCH_IDLE of dev->wpass, a
 * clock of passes (one for each pass that had work, SHM_YIELD_EVERY for
 * each shm_idle of the empty ones): watched no more, and looked at in
 * full in the next pass.
 */
void shm_watch_expire(struct shm_dev *dev);
/* is shm_idle due after this many empty polls in a row? */
static inline bool shm_idle_due(uint32_t idle)
{
	return idle == SHM_YIELD_POLLS || !(idle % SHM_YIELD_EVERY);
}
/* a poll found work after a stretch of empty ones (idle_cpu stays) */
static inline void shm_busy(struct shm_dev *dev)
{
	dev->idle = 0;
}

/* shm_cm.c */
int shm_listen(struct rcx_dev *dev, uint16_t port, char *addr, size_t len);
int shm_ep_connect(struct rcx_dev *dev, const char *addr,
		   const struct rcx_ep_attr *attr, const void *pdata,
		   size_t pdata_len, struct rcx_ep **out);
int shm_ep_accept(struct rcx_dev *dev, struct rcx_conn_req *req,
		  const struct rcx_ep_attr *attr, struct rcx_ep **out);
int shm_ep_reject(struct rcx_dev *dev, struct rcx_conn_req *req);
int shm_ep_disconnect(struct rcx_ep *ep);
void shm_ep_destroy(struct rcx_ep *ep);
int shm_cm_poll(struct rcx_dev *dev, struct rcx_cm_event *ev);
void shm_cm_msg(struct shm_dev *dev, const struct shm_msg *m);
void shm_check_peers(struct shm_dev *dev);
void shm_sweep(void);

/* shm_mem.c */
int shm_mem_alloc(struct rcx_dev *dev, size_t len, void **out);
int shm_mem_free(struct rcx_dev *dev, void *addr);
struct shm_mem *shm_mem_find(struct shm_dev *dev, const void *addr, size_t len);
/* does segment s hold [addr, addr+len)? */
static inline bool shm_mem_holds(const struct shm_mem *s, const void *addr,
				 size_t len)
{
	uintptr_t a = (uintptr_t)addr, b = (uintptr_t)s->base;

	return a >= b && len <= s->len && a - b <= s->len - len;
}
void shm_mem_close(struct shm_dev *dev);
/* shm_mem_peer past the map the last look found: the others, or a new one */
void *shm_mem_peer_find(struct shm_ep *ep, const struct shm_mem_ref *ref,
			uint64_t raddr);

/* the peer's segment memory at raddr, mapped here; NULL: not one */
static inline void *shm_mem_peer(struct shm_ep *ep,
				 const struct shm_mem_ref *ref, uint64_t raddr)
{
	const struct shm_map *m = &ep->maps[ep->map_hit];

	/* most reach one segment: the one found last time */
	if (ref->id && m->ptr && m->id == ref->id && m->base == ref->base)
		return m->ptr + (raddr - m->base);
	return shm_mem_peer_find(ep, ref, raddr);
}
void shm_mem_unmap(struct shm_ep *ep);
int shm_ep_mem_map(struct rcx_ep *ep, uint64_t raddr, uint64_t len,
		   uint32_t rkey, unsigned int access, void **out);
void shm_mem_unmap_range(struct rcx_dev *dev, void *addr, uint64_t len);

/* shm_ep.c */
int shm_post_send(struct rcx_ep *ep, struct rcx_wr *wr, struct rcx_wr **bad);
int shm_ep_rma_now(struct rcx_ep *ep, const struct rcx_wr *wr);
int shm_post_recv(struct rcx_ep *ep, struct rcx_wr *wr, struct rcx_wr **bad);
int shm_cq_poll(struct rcx_dev *dev, struct rcx_cqe *cqe, int n);
int shm_cq_dispatch(struct rcx_dev *dev, struct rcx_ctx *ctx);
/* ops.cq_peek: the core's tests poll with shm_cq_dispatch's pass */
int shm_cq_peek(struct rcx_dev *dev, struct rcx_cq_peek *pk);
int shm_ep_set_error(struct rcx_ep *ep);
uint32_t shm_ep_max_inline(const struct rcx_ep *ep);
int shm_ep_query(const struct rcx_ep *ep, struct rcx_ep_info *info);
int shm_pwr_create(struct rcx_ep *ep, const struct rcx_wr *wr, int recv,
		   struct rcx_pwr **out);
void shm_pwr_destroy(struct rcx_pwr *pwr);
int shm_pwr_post(struct rcx_ep *ep, struct rcx_pwr **pwr, int n);
int shm_pwr_post_recv(struct rcx_ep *ep, struct rcx_pwr **pwr, int n);
int shm_pwr_post_list(struct rcx_ep *ep, struct rcx_pwr **pwr, int n, int recv,
		      int *posted);
int shm_pwr_direct(struct rcx_ep *ep, struct rcx_pwr *pwr, int recv,
		   struct rcx_pwr_direct *d);
/* error state: flush everything, tell the peer; status of the cause */
void shm_ep_fail(struct shm_ep *ep);
/* mark this side dead in the connection segment, executors stopped */
void shm_ep_kill(struct shm_ep *ep);

#endif
