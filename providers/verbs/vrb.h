/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_VRB_H
#define RCX_VRB_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include "../provider.h"

#define VRB_QPMAP_BITS 10
#define VRB_ACK_BATCH  64
/* completions the fast path's poll takes at once (vrb_cq_poll_min) */
#define VRB_WC_BATCH 16

struct vrb_cq {
	struct ibv_cq *cq;
	uint64_t reserved;    /* entries promised to its QPs (cq_reserve) */
	unsigned int unacked; /* events not yet acknowledged */
};

struct vrb_dev {
	struct ibv_context *ctx; /* owned by librdmacm, not closed here */
	struct ibv_device_attr attr;
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan; /* the events of every CQ */
	/*
	 * One CQ holds at most max_cqe entries (32,767 on rxe); QPs whose
	 * reservations pass that go on another. Each CQ's context is its
	 * index here.
	 */
	struct vrb_cq *cqs;
	unsigned int ncq;
	unsigned int cq_next; /* the CQ the next poll starts with */
	int cq_size;	      /* entries a new CQ starts with */
	struct rdma_event_channel *cm_chan;
	struct rdma_cm_id *listen_id;
	struct sockaddr_storage addr; /* this device's IP address */
	int epfd;		      /* comp channel + cm channel */
	uint8_t port;
	uint32_t mtu;
	/* inline data a QP of this device was made with / refused (0:
	 * none yet): vrb_qp_create asks for no more than it takes */
	uint32_t inline_ok, inline_bad;
	/* qp_num -> endpoint, open addressing (linear probing) */
	struct vrb_ep *qpmap[1 << VRB_QPMAP_BITS];
	unsigned int nqp;
	/* the QP of the last completion looked up (NULL: none) */
	uint32_t last_qpn;
	struct vrb_ep *last_ep;
	char name[64];
	/*
	 * vrb_cq_poll_min's completions: here rather than on its stack, so
	 * a poll that finds nothing sets up no frame. Polls of a device are
	 * serial (the context's lock, or one thread).
	 */
	struct ibv_wc wc[VRB_WC_BATCH];
	/* the core's direct poll (vrb_cq_peek), kept current by vrb_cq_add */
	struct rcx_cq_peek *peek;
};

enum vrb_ep_state {
	VRB_EP_RESOLVING,
	VRB_EP_CONNECTING,
	VRB_EP_CONNECTED,
	VRB_EP_DISCONNECTED,
	VRB_EP_FAILED,
};

struct vrb_ep {
	struct rcx_ep pub; /* first */
	struct vrb_dev *dev;
	struct rdma_cm_id *id;
	struct ibv_qp *qp;
	struct rcx_ep_attr attr;
	uint32_t max_inline;
	uint32_t cq_res; /* CQ entries reserved for the QP */
	unsigned int cq; /* on dev->cqs[cq] */
	int state;
	/*
	 * The QP reached RTS (accepted, or ESTABLISHED seen): sends before
	 * that are refused here, since rxe queues a send it then fails
	 * (-EINVAL) and flushes it later, as if it had been taken.
	 */
	uint8_t rts;
	uint8_t pdata[56];
	uint8_t pdata_len;
};

struct vrb_mr {
	struct ibv_mr *mr;
};

struct vrb_conn_req {
	struct rcx_conn_req pub; /* first */
	struct rdma_cm_id *id;
};

static inline struct vrb_dev *to_vdev(struct rcx_dev *d)
{
	return (struct vrb_dev *)d;
}

static inline struct vrb_ep *to_vep(struct rcx_ep *e)
{
	return (struct vrb_ep *)e;
}

static inline struct vrb_mr *to_vmr(const struct rcx_mr *m)
{
	return (struct vrb_mr *)m;
}

extern const struct rcx_provider_ops rcx__verbs_ops;

int vrb_errno(void);
int vrb_wc_status(enum ibv_wc_status st);

/* vrb_dev.c */
/* Add a CQ of size entries (armed); its index or a negative error. */
int vrb_cq_add(struct vrb_dev *dev, int size);
int vrb_qpmap_add(struct vrb_dev *dev, struct vrb_ep *ep);
void vrb_qpmap_del(struct vrb_dev *dev, struct vrb_ep *ep);
struct vrb_ep *vrb_qpmap_find(struct vrb_dev *dev, uint32_t qp_num);

/* vrb_cm.c */
int vrb_listen(struct rcx_dev *dev, uint16_t port, char *addr, size_t addr_len);
int vrb_ep_connect(struct rcx_dev *dev, const char *addr,
		   const struct rcx_ep_attr *attr, const void *pdata,
		   size_t pdata_len, struct rcx_ep **out);
int vrb_ep_accept(struct rcx_dev *dev, struct rcx_conn_req *req,
		  const struct rcx_ep_attr *attr, struct rcx_ep **out);
int vrb_ep_reject(struct rcx_dev *dev, struct rcx_conn_req *req);
int vrb_ep_disconnect(struct rcx_ep *ep);
void vrb_ep_destroy(struct rcx_ep *ep);
int vrb_cm_poll(struct rcx_dev *dev, struct rcx_cm_event *ev);

/* vrb_ep.c */
int vrb_post_send(struct rcx_ep *ep, struct rcx_wr *wr, struct rcx_wr **bad);
int vrb_post_recv(struct rcx_ep *ep, struct rcx_wr *wr, struct rcx_wr **bad);
int vrb_cq_poll(struct rcx_dev *dev, struct rcx_cqe *cqe, int n);
int vrb_cq_poll_min(struct rcx_dev *dev, struct rcx_cqe *cqe, int n);
int vrb_cq_dispatch(struct rcx_dev *dev, struct rcx_ctx *ctx);
int vrb_cq_peek(struct rcx_dev *dev, struct rcx_cq_peek *pk);
void vrb_cq_peek_update(struct vrb_dev *dev);
int vrb_ep_set_error(struct rcx_ep *ep);
uint32_t vrb_ep_max_inline(const struct rcx_ep *ep);
int vrb_ep_query(const struct rcx_ep *ep, struct rcx_ep_info *info);
int vrb_qp_create(struct vrb_ep *ep, struct rdma_cm_id *id);
/* Destroy ep's QP (if any) and give back its CQ entries. */
void vrb_qp_destroy(struct vrb_ep *ep);
int vrb_pwr_create(struct rcx_ep *ep, const struct rcx_wr *wr, int recv,
		   struct rcx_pwr **out);
void vrb_pwr_destroy(struct rcx_pwr *pwr);
int vrb_pwr_post(struct rcx_ep *ep, struct rcx_pwr **pwr, int n);
int vrb_pwr_post_recv(struct rcx_ep *ep, struct rcx_pwr **pwr, int n);
int vrb_pwr_post_list(struct rcx_ep *ep, struct rcx_pwr **pwr, int n, int recv,
		      int *posted);
int vrb_pwr_direct(struct rcx_ep *ep, struct rcx_pwr *pwr, int recv,
		   struct rcx_pwr_direct *d);

#endif
