/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_PROVIDER_H
#define RCX_PROVIDER_H

/*
 * The transport interface below lib/. A provider is one const ops table;
 * every op it lacks points at a typed stub that returns -EOPNOTSUPP, so
 * callers never test for NULL. Providers include only this header and the
 * public headers; lib/ never includes a provider's private header.
 *
 * Conventions: 0 or a negative rcx code (negative errno or RCX_ERR_*);
 * output arguments last, written only on success. Conversion from verbs
 * conventions (+errno, -1/errno, ibv_wc_status) happens inside the
 * provider; a completion keeps the raw transport status in `vendor`.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rcx/errors.h>

struct rcx_dev; /* an opened device: protection domain, CQ, events */
struct rcx_mr;	/* a memory registration */
struct rcx_provider_ops;

/*
 * Endpoints, connection requests and prepared WRs begin with the ops
 * table of the provider that made them (a provider embeds the struct
 * first and sets ops), so a provider over others (auto) hands each one
 * back to its maker: rcx__obj_ops.
 */
struct rcx_ep { /* a reliable connected endpoint (RC QP) */
	const struct rcx_provider_ops *ops;
};

struct rcx_conn_req { /* an incoming connection request */
	const struct rcx_provider_ops *ops;
};

/* The provider that made obj: a struct rcx_ep, rcx_conn_req or rcx_pwr. */
static inline const struct rcx_provider_ops *rcx__obj_ops(const void *obj)
{
	return *(const struct rcx_provider_ops *const *)obj;
}

enum rcx_op {
	RCX_OP_SEND,
	RCX_OP_SEND_IMM,
	RCX_OP_WRITE,
	RCX_OP_WRITE_IMM,
	RCX_OP_READ,
	RCX_OP_FADD,	 /* 64-bit fetch-and-add */
	RCX_OP_CSWAP,	 /* 64-bit compare-and-swap */
	RCX_OP_RECV,	 /* completion of a posted receive */
	RCX_OP_RECV_IMM, /* receive consumed by a WRITE_IMM */
};

enum rcx_wr_flag {
	RCX_WR_SIGNALED = 1 << 0,
	/* wait for prior READ/ATOMIC on the endpoint (IBA 9.7.1, 10.8.3.3) */
	RCX_WR_FENCE = 1 << 1,
	RCX_WR_INLINE = 1 << 2,
	RCX_WR_SOLICITED = 1 << 3,
};

enum rcx_access {
	RCX_ACCESS_LOCAL_WRITE = 1 << 0,
	RCX_ACCESS_REMOTE_READ = 1 << 1,
	RCX_ACCESS_REMOTE_WRITE = 1 << 2,
	RCX_ACCESS_REMOTE_ATOMIC = 1 << 3,
};

/* One work request: a single local segment (length 0 allowed). */
struct rcx_wr {
	struct rcx_wr *next;
	uint64_t wr_id;
	uint8_t op;    /* enum rcx_op */
	uint8_t flags; /* enum rcx_wr_flag */
	uint32_t imm;  /* SEND_IMM / WRITE_IMM, network order on wire */
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add; /* FADD: add; CSWAP: compare */
	uint64_t swap;	      /* CSWAP: swap */
};

/*
 * A prepared work request: built once by pwr_create, then patched through
 * these pointers and posted with pwr_post / pwr_post_recv (the fast path
 * of bound channels: no conversion, no allocation). A field the WR does
 * not have points at scratch space, never NULL.
 */
struct rcx_pwr {
	const struct rcx_provider_ops *ops; /* first: the maker */
	uint64_t *addr;			    /* local segment address */
	uint32_t *length;		    /* local segment length */
	uint64_t *remote_addr;		    /* WRITE/READ target */
	uint32_t *imm_be;		    /* immediate, network byte order */
	uint64_t *wr_id;		    /* what its completion carries */
};

struct rcx_cqe {
	uint64_t wr_id;
	void *ep_ctx;	 /* context given when the endpoint was made */
	int status;	 /* 0 or negative rcx code */
	uint32_t vendor; /* raw transport status (ibv_wc_status) */
	uint8_t op;	 /* enum rcx_op */
	uint8_t has_imm;
	uint32_t byte_len;
	uint32_t imm; /* host order */
};

/*
 * Where a completion goes: the wr_id of every WR the library posts points
 * at one of these, embedded in the object the WR belongs to, so a poll
 * hands each completion straight to its object (cq_dispatch): no lookup,
 * no table. ctx is the library's context, opaque here.
 */
struct rcx_ctx;
struct rcx_wct {
	/* any completion, as an rcx_cqe (the fields cq_poll_min writes) */
	void (*cb)(struct rcx_ctx *ctx, struct rcx_wct *t,
		   const struct rcx_cqe *cqe);
	/*
	 * A successful completion, as the poll found it: the bytes received,
	 * the immediate in host order and whether there was one. NULL: cb.
	 */
	void (*ok)(struct rcx_ctx *ctx, struct rcx_wct *t, uint32_t byte_len,
		   uint32_t imm, int has_imm);
	/*
	 * Optional: a successful completion without an immediate that the
	 * direct poll of an rcx_test found (rcx_cq_peek.found_test), the
	 * last one it hands over, the request under the test still active
	 * (rcx__peek_active): ok's work, and the test's report (where the
	 * completion is of another request: rcx__peek_report). Returns what
	 * that rcx_test returns. NULL: ok, then rcx__peek_report.
	 */
	int (*ok_test)(struct rcx_ctx *ctx, struct rcx_wct *t, size_t byte_len);
};

/*
 * The report of the rcx_test whose direct poll found got completions
 * (got < 0: the poll failed), all handed over: what that rcx_test
 * returns. For a provider's found_test and a target's ok_test.
 */
int rcx__peek_report(struct rcx_ctx *ctx, int got);
/*
 * Whether the request under that rcx_test is still active: a found_test
 * that handed over other completions first asks before an ok_test.
 */
bool rcx__peek_active(const struct rcx_ctx *ctx);

/*
 * The fastest poll: the core calls the driver's own poll of the device's
 * completion queue through poll (rdma-core's shape: ibv_poll_cq without
 * the hop through the CQ's context), so a test that finds nothing costs
 * librcx the call and a test of its result. The completions land in buf
 * (the provider's, n entries); found(dev, ctx, got) then hands each to
 * its rcx_wct as cq_dispatch does and returns got, or an error for a
 * failed poll (got < 0). The provider fills it and keeps it current for
 * the device's life (a device that grows more queues points poll at one
 * of its own that polls them all).
 */
struct ibv_cq;
struct ibv_wc;
struct rcx_cq_peek {
	int (*poll)(struct ibv_cq *cq, int n, struct ibv_wc *buf);
	struct ibv_cq *cq;
	struct ibv_wc *buf;
	int n;
	int (*found)(struct rcx_dev *dev, struct rcx_ctx *ctx, int got);
	/*
	 * Optional: found and the test's report in one, what the rcx_test
	 * that polled returns. A completion, a success without an
	 * immediate whose target has an ok_test, may go to that (a tail
	 * call: the target reports); anything else as found hands it over,
	 * then rcx__peek_report.
	 * NULL: the core's (found, then its report).
	 */
	int (*found_test)(struct rcx_ctx *ctx, struct rcx_dev *dev, int got);
};

/*
 * A prepared WR posted alone by the driver's own post (rdma-core's shape:
 * ibv_post_send or ibv_post_recv without the hop through the QP's
 * context; it returns 0 or a positive errno, as the driver does): send
 * and swr for a send WR, recv and rwr for a receive. Valid while the
 * endpoint and the WR live; the provider's list posts (pwr_post) leave no
 * WR linked to another, so one posted alone carries only itself.
 */
struct ibv_qp;
struct ibv_send_wr;
struct ibv_recv_wr;
struct rcx_pwr_direct {
	int (*send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad);
	int (*recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad);
	struct ibv_qp *qp;
	struct ibv_send_wr *swr;
	struct ibv_recv_wr *rwr;
};

enum rcx_cm_type {
	RCX_CM_CONNECT_REQUEST, /* req, pdata: answer with accept/reject */
	RCX_CM_ESTABLISHED,	/* ep is ready for traffic */
	RCX_CM_DISCONNECTED,	/* -ECONNRESET: the peer disconnected (or
				 * its process went); -ETIMEDOUT: a
				 * disconnect of ours went unanswered;
				 * -ENODEV: the device went away */
	RCX_CM_ERROR,		/* connect failed: status says why,
				 * -EHOSTDOWN: nothing listens at the
				 * address (the peer's context is gone),
				 * -ESRCH: the peer's process died (a
				 * provider that can tell: shm),
				 * -ECONNREFUSED: the peer refused,
				 * -ECONNABORTED: the connection
				 * managers gave up the handshake */
};

struct rcx_cm_event {
	uint8_t type; /* enum rcx_cm_type */
	int status;
	struct rcx_ep *ep; /* ESTABLISHED, DISCONNECTED, ERROR */
	void *ep_ctx;
	struct rcx_conn_req *req; /* CONNECT_REQUEST */
	uint8_t pdata[56];	  /* private data of the request */
	uint8_t pdata_len;
};

struct rcx_dev_attr {
	const char *name; /* device name, NULL: first usable one */
	const char *addr; /* address to listen on, NULL: the device's */
	int cq_size;	  /* 0: provider default */
	/*
	 * This process's node key (lib/boot/boot_node.c): processes with
	 * equal keys share a host. NULL: all share one (auto).
	 */
	const char *node;
};

struct rcx_ep_attr {
	void *ep_ctx; /* returned in every cqe and cm event */
	/*
	 * Called once the endpoint can take receives, before the connection
	 * is established (so the peer never finds no receive posted).
	 */
	int (*on_ready)(struct rcx_ep *ep, void *ep_ctx);
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_inline;   /* wanted inline size; see ep_query */
	uint8_t timeout;       /* local ACK timeout exponent, 1..31 */
	uint8_t retry_cnt;     /* 0..6 (7 retries forever on rxe) */
	uint8_t rnr_retry;     /* 0..7, 7 = forever */
	uint8_t max_rd_atomic; /* outstanding READ/ATOMIC, 0: device max */
	/* receiver-not-ready NAK delay code (IBA table 45), 0: default */
	uint8_t min_rnr_timer;
	/*
	 * Take the NIC path even to a peer on this host (auto: a verbs
	 * endpoint where shared memory would serve). Others ignore it.
	 */
	uint8_t nic;
};

struct rcx_dev_info {
	char name[64];
	uint64_t max_mr_size;
	uint32_t max_qp_wr;
	uint32_t max_cqe;
	/*
	 * The completion queue now: its entries, and those promised to
	 * endpoints (their send + receive depths; 0 where it grows on
	 * demand, shm). A provider keeps cq_size >= cq_reserved: no overrun.
	 */
	uint32_t cq_size, cq_reserved;
	uint32_t max_inline; /* largest inline a QP of this device got */
	uint32_t max_rd_atomic;
	uint8_t atomics; /* 64-bit FADD/CSWAP available */
	uint8_t port_active;
	uint32_t mtu; /* active path MTU in bytes */
	/* "InfiniBand", "Ethernet" (RoCE), "shared memory" */
	char link_layer[16];
	/*
	 * The longest message (the length of one WR) the device takes:
	 * a longer transfer is split by the caller (IBA: at least 2^31).
	 */
	uint64_t max_msg_sz;
	/*
	 * The WRs of one endpoint run one after another, each complete
	 * before the next begins (a CPU does them: shm). RC's order holds
	 * and RCX_WR_FENCE has nothing to wait for.
	 */
	uint8_t ordered;
	/*
	 * A WR posted with RCX_WR_FENCE may wait for good though every WR
	 * before it completed (rxe in Linux 6.1 loses the fenced WR's
	 * wake-up, and WRs posted behind it do not always bring it back):
	 * RCX_ORDER_FENCE=auto waits instead of fencing there.
	 */
	uint8_t fence_stalls;
	/*
	 * Endpoints do not all reach their peers the same way: one made
	 * without rcx_ep_attr.nic may bypass the NIC (auto with a verbs
	 * device: shared memory to peers on this host), and NIC atomics
	 * and those of the other path do not exclude each other.
	 */
	uint8_t nic_split;
	char addr[64]; /* address peers connect to ("ip") */
};

/* What an endpoint got (ep_query): rcx_group_peer_info. */
struct rcx_ep_info {
	char device[64];     /* the device the endpoint uses */
	uint32_t qpn;	     /* 0: no queue pair */
	uint32_t remote_qpn; /* 0: none, or not known yet */
	uint32_t path_mtu;   /* bytes; 0: none */
	uint32_t max_inline; /* as granted */
};

/* What a provider's transport does beyond the RC rules (ops->caps). */
enum rcx_prov_cap {
	/*
	 * An RDMA WRITE wakes the target's device if it is armed (its event
	 * fd becomes readable): a wait for a word the peer writes may sleep.
	 * A NIC raises no event for a WRITE; shared memory can.
	 */
	RCX_PROV_WRITE_WAKES = 1 << 0,
};

struct rcx_provider_ops {
	const char *name;
	unsigned int caps; /* enum rcx_prov_cap */

	/* names of the usable devices: up to max, returns the count */
	int (*dev_list)(char (*names)[64], int max);
	int (*dev_open)(const struct rcx_dev_attr *attr, struct rcx_dev **out);
	void (*dev_close)(struct rcx_dev *dev);
	int (*dev_query)(struct rcx_dev *dev, struct rcx_dev_info *info);

	int (*mr_reg)(struct rcx_dev *dev, void *addr, size_t len,
		      unsigned int access, struct rcx_mr **out);
	int (*mr_dereg)(struct rcx_mr *mr);
	/*
	 * Register under keys the caller chose (another provider's, so one
	 * rkey serves both). Optional: the stub returns -EOPNOTSUPP.
	 * Errors: -EEXIST a registration has that key; -ENOMEM no room for
	 * that key (or no memory); -EINVAL bad access flags or a key of 0;
	 * -EFAULT addr NULL with len; -EOPNOTSUPP not this provider's.
	 */
	int (*mr_reg_keyed)(struct rcx_dev *dev, void *addr, size_t len,
			    unsigned int access, uint32_t lkey, uint32_t rkey,
			    struct rcx_mr **out);
	uint32_t (*mr_lkey)(const struct rcx_mr *mr);
	uint32_t (*mr_rkey)(const struct rcx_mr *mr);

	/*
	 * Connections. listen binds the device's one listener (port 0: any)
	 * and writes the address peers pass to ep_connect. Both ends learn
	 * the result through cm_poll events; connect never blocks. A
	 * request that ep_accept fails on is still the caller's, to
	 * ep_reject; -ECONNABORTED: its peer gave up on it (it died, or
	 * destroyed its endpoint) before the accept.
	 */
	int (*listen)(struct rcx_dev *dev, uint16_t port, char *addr,
		      size_t addr_len);
	int (*ep_connect)(struct rcx_dev *dev, const char *addr,
			  const struct rcx_ep_attr *attr, const void *pdata,
			  size_t pdata_len, struct rcx_ep **out);
	int (*ep_accept)(struct rcx_dev *dev, struct rcx_conn_req *req,
			 const struct rcx_ep_attr *attr, struct rcx_ep **out);
	int (*ep_reject)(struct rcx_dev *dev, struct rcx_conn_req *req);
	/*
	 * 1 when an endpoint to addr made without rcx_ep_attr.nic would not
	 * go through the NIC although one with it would (dev_info.nic_split:
	 * auto, a peer on this node), else 0. Optional: the stub returns
	 * -EOPNOTSUPP. Errors: -EINVAL addr malformed.
	 */
	int (*peer_split)(struct rcx_dev *dev, const char *addr);
	int (*ep_disconnect)(struct rcx_ep *ep);
	void (*ep_destroy)(struct rcx_ep *ep);
	/* force the endpoint into the error state (fault tests) */
	int (*ep_set_error)(struct rcx_ep *ep);
	uint32_t (*ep_max_inline)(const struct rcx_ep *ep);
	/* Optional: the stub returns -EOPNOTSUPP. */
	int (*ep_query)(const struct rcx_ep *ep, struct rcx_ep_info *info);

	/* prepared WRs: recv != 0 makes a receive WR */
	int (*pwr_create)(struct rcx_ep *ep, const struct rcx_wr *wr, int recv,
			  struct rcx_pwr **out);
	void (*pwr_destroy)(struct rcx_pwr *pwr);
	/*
	 * Post n prepared WRs as one list: one doorbell. A list refused
	 * part-way returns the error without saying how far it went (one
	 * WR alone goes or does not): pwr_post_list says.
	 */
	int (*pwr_post)(struct rcx_ep *ep, struct rcx_pwr **pwr, int n);
	int (*pwr_post_recv)(struct rcx_ep *ep, struct rcx_pwr **pwr, int n);
	/*
	 * As pwr_post (recv 0) or pwr_post_recv (recv != 0, the WRs made
	 * so), n >= 1, and *posted is how many of the list went (always
	 * written): n when it returns 0; on an error the WRs before
	 * pwr[*posted] went (their completions come) and that one and the
	 * rest did not, as ibv_post_send's bad_wr says. A driver that names
	 * no refused WR counts all n: a WR counted short would complete
	 * into memory its caller freed.
	 */
	int (*pwr_post_list)(struct rcx_ep *ep, struct rcx_pwr **pwr, int n,
			     int recv, int *posted);
	/*
	 * Fill *d (struct rcx_pwr_direct) for pwr, made on ep (recv as at
	 * pwr_create). Optional: the stub returns -EOPNOTSUPP and the caller
	 * posts with pwr_post / pwr_post_recv.
	 */
	int (*pwr_direct)(struct rcx_ep *ep, struct rcx_pwr *pwr, int recv,
			  struct rcx_pwr_direct *d);
	/* returns 1 and fills ev, 0 when no event is pending, or an error */
	int (*cm_poll)(struct rcx_dev *dev, struct rcx_cm_event *ev);

	int (*post_send)(struct rcx_ep *ep, struct rcx_wr *wr,
			 struct rcx_wr **bad);
	/*
	 * Run one RDMA WRITE or READ (wr->next ignored) at once, from and
	 * into the caller's buffers, as post_send would run it next: after
	 * every WR posted before it, done at the target and at the origin
	 * when the call returns, with no completion entry (wr_id, flags and
	 * lkey unused). -EAGAIN: not now (an earlier WR of the endpoint's is
	 * not complete, the target memory is not mapped here, its key does
	 * not allow it): nothing done, post_send it. Optional: the stub
	 * returns -EOPNOTSUPP.
	 */
	int (*ep_rma_now)(struct rcx_ep *ep, const struct rcx_wr *wr);
	int (*post_recv)(struct rcx_ep *ep, struct rcx_wr *wr,
			 struct rcx_wr **bad);
	/* returns the number of entries written (0..n) or an error */
	int (*cq_poll)(struct rcx_dev *dev, struct rcx_cqe *cqe, int n);
	/*
	 * The fast path's poll: as cq_poll, but an entry has only wr_id,
	 * status, vendor, byte_len, has_imm and imm (ep_ctx and op are not
	 * written). The core dispatches on wr_id and needs nothing more.
	 * n == 0 polls nothing and returns 0. Optional: the stub returns
	 * -EOPNOTSUPP and the core polls with cq_poll.
	 */
	int (*cq_poll_min)(struct rcx_dev *dev, struct rcx_cqe *cqe, int n);
	/*
	 * The fast path's poll and dispatch in one: polls a batch and hands
	 * each completion to the struct rcx_wct its wr_id points at (ok for
	 * a success where it has one, else cb with the cq_poll_min fields),
	 * passing ctx. Returns the number handled, 0, or an error.
	 * Optional: a provider without it has rcx__stub_cq_dispatch, and the
	 * core polls with cq_poll_min and dispatches itself.
	 */
	int (*cq_dispatch)(struct rcx_dev *dev, struct rcx_ctx *ctx);
	/*
	 * Fill *pk (struct rcx_cq_peek) where the device can be polled that
	 * way, and keep it current until dev_close (pk must live as long).
	 * Optional: the stub returns -EOPNOTSUPP and the core's tests make a
	 * progress pass (cq_dispatch).
	 */
	int (*cq_peek)(struct rcx_dev *dev, struct rcx_cq_peek *pk);

	/*
	 * Blocking: event_fd becomes readable when a completion or a
	 * connection event arrives after arm. After wakeup call ack (drains
	 * and acknowledges the events, in batches), then poll, then arm again.
	 */
	int (*event_fd)(struct rcx_dev *dev);
	int (*arm)(struct rcx_dev *dev);
	int (*ack)(struct rcx_dev *dev);
	/*
	 * Also make event_fd readable while fd (not the provider's: the
	 * launcher's socket) is readable. Optional (NULL: not supported).
	 */
	int (*watch_fd)(struct rcx_dev *dev, int fd);

	/*
	 * Zeroed memory for a buffer the library allocates and registers
	 * (a window of rcx_win_allocate, channel control words), placed
	 * where this provider's peers reach it cheapest (shm: a segment
	 * they map, so their operations on it are plain loads and stores).
	 * Optional: the stub returns -EOPNOTSUPP and the caller allocates.
	 * mem_free returns 0 for memory of mem_alloc, else -ENOENT (the
	 * caller's own: it frees it).
	 */
	int (*mem_alloc)(struct rcx_dev *dev, size_t len, void **out);
	int (*mem_free)(struct rcx_dev *dev, void *addr);
	/*
	 * Map [raddr, raddr + len) of the peer's memory that rkey registers
	 * with access into this process, for the caller's own loads and
	 * stores (shm: memory of the peer's mem_alloc): *out is where raddr
	 * is. The mapping is the caller's until mem_unmap(dev, *out, len),
	 * whatever becomes of the endpoint, the key or the peer (the memory
	 * of a peer that died stays mapped here, and nobody else sees it).
	 * What the caller does there is not ordered with the endpoint's WRs:
	 * the caller keeps the order. Optional: NULL where a provider has
	 * none (as watch_fd). Errors: -EINVAL len 0; -ENOTCONN the endpoint
	 * is not connected; -EACCES the key does not cover the range with
	 * access; -ENOENT memory this provider does not map (post WRs);
	 * -EOPNOTSUPP not this endpoint's provider (auto); or the mapping's
	 * -errno.
	 */
	int (*ep_mem_map)(struct rcx_ep *ep, uint64_t raddr, uint64_t len,
			  uint32_t rkey, unsigned int access, void **out);
	void (*mem_unmap)(struct rcx_dev *dev, void *addr, uint64_t len);
};

/* Typed stubs for ops a provider does not have. */
int rcx__stub_listen(struct rcx_dev *dev, uint16_t port, char *addr,
		     size_t addr_len);
int rcx__stub_ep_set_error(struct rcx_ep *ep);
int rcx__stub_event_fd(struct rcx_dev *dev);
int rcx__stub_dev(struct rcx_dev *dev);
int rcx__stub_peer_split(struct rcx_dev *dev, const char *addr);
int rcx__stub_ep_query(const struct rcx_ep *ep, struct rcx_ep_info *info);
int rcx__stub_mem_alloc(struct rcx_dev *dev, size_t len, void **out);
int rcx__stub_mem_free(struct rcx_dev *dev, void *addr);
int rcx__stub_cq_poll(struct rcx_dev *dev, struct rcx_cqe *cqe, int n);
int rcx__stub_ep_rma_now(struct rcx_ep *ep, const struct rcx_wr *wr);
int rcx__stub_cq_dispatch(struct rcx_dev *dev, struct rcx_ctx *ctx);
int rcx__stub_cq_peek(struct rcx_dev *dev, struct rcx_cq_peek *pk);
int rcx__stub_pwr_direct(struct rcx_ep *ep, struct rcx_pwr *pwr, int recv,
			 struct rcx_pwr_direct *d);
int rcx__stub_mr_reg_keyed(struct rcx_dev *dev, void *addr, size_t len,
			   unsigned int access, uint32_t lkey, uint32_t rkey,
			   struct rcx_mr **out);

/*
 * Parse an IP address: "a.b.c.d", "a.b.c.d:port" or "[v6]:port", numeric
 * only. Errors: -EINVAL.
 */
struct sockaddr_storage;
int rcx__ip_addr_parse(const char *s, struct sockaddr_storage *ss);

/* Add fd to epoll set epfd for reading (watch_fd of the providers). */
int rcx__epoll_add(int epfd, int fd);

/* The registered providers, NULL-terminated. */
extern const struct rcx_provider_ops *const rcx__providers[];
const struct rcx_provider_ops *rcx__provider_find(const char *name);
/*
 * Log that ops->dev_open did not find device name (-ENODEV), with the
 * devices ops lists; asked: the name came from RCX_DEVICE (or the
 * context's attributes), else it was picked.
 */
void rcx__dev_log_missing(const struct rcx_provider_ops *ops, const char *name,
			  int asked);

#endif
