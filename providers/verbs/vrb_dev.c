/* SPDX-License-Identifier: BSD-2-Clause */
/* Device open/close, registration, event fd: the rdma-core provider. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/epoll.h>
#include "vrb.h"

#define VRB_CQ_SIZE 4096
/* the vendor id rxe reports (drivers/infiniband/sw/rxe) */
#define VRB_RXE_VENDOR_ID 0xffffff

int vrb_errno(void)
{
	return errno > 0 ? -errno : -EIO;
}

int vrb_wc_status(enum ibv_wc_status st)
{
	switch (st) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_WR_FLUSH_ERR:
		return RCX_ERR_FLUSHED;
	case IBV_WC_REM_ACCESS_ERR:
		return RCX_ERR_REMOTE_ACCESS;
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
		return RCX_ERR_REMOTE_OP;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return RCX_ERR_RNR;
	case IBV_WC_LOC_LEN_ERR:
	case IBV_WC_LOC_QP_OP_ERR:
	case IBV_WC_LOC_EEC_OP_ERR:
	case IBV_WC_LOC_PROT_ERR:
	case IBV_WC_MW_BIND_ERR:
	case IBV_WC_LOC_ACCESS_ERR:
	case IBV_WC_LOC_RDD_VIOL_ERR:
		return RCX_ERR_LOCAL;
	default:
		/* RETRY_EXC, BAD_RESP, FATAL, RESP_TIMEOUT, GENERAL ... */
		return RCX_ERR_TRANSPORT;
	}
}

static unsigned int qp_hash(uint32_t qpn)
{
	return (qpn * 2654435761u) >> (32 - VRB_QPMAP_BITS);
}

int vrb_qpmap_add(struct vrb_dev *dev, struct vrb_ep *ep)
{
	unsigned int mask = (1u << VRB_QPMAP_BITS) - 1, i;

	/* keep the table at most 3/4 full so probes stay short */
	if (dev->nqp >= (3u << VRB_QPMAP_BITS) / 4)
		return -ENOSPC;
	for (i = qp_hash(ep->qp->qp_num); dev->qpmap[i]; i = (i + 1) & mask)
		;
	dev->qpmap[i] = ep;
	dev->nqp++;
	return 0;
}

void vrb_qpmap_del(struct vrb_dev *dev, struct vrb_ep *ep)
{
	unsigned int mask = (1u << VRB_QPMAP_BITS) - 1, i, j;

	for (i = qp_hash(ep->qp->qp_num); dev->qpmap[i] != ep;
	     i = (i + 1) & mask)
		if (!dev->qpmap[i])
			return;
	dev->qpmap[i] = NULL;
	dev->nqp--;
	if (dev->last_ep == ep)
		dev->last_ep = NULL;
	/* re-insert the rest of the probe run (deletion with linear probing) */
	for (j = (i + 1) & mask; dev->qpmap[j]; j = (j + 1) & mask) {
		struct vrb_ep *e = dev->qpmap[j];

		dev->qpmap[j] = NULL;
		dev->nqp--;
		vrb_qpmap_add(dev, e);
	}
}

struct vrb_ep *vrb_qpmap_find(struct vrb_dev *dev, uint32_t qpn)
{
	unsigned int mask = (1u << VRB_QPMAP_BITS) - 1, i;

	for (i = qp_hash(qpn); dev->qpmap[i]; i = (i + 1) & mask)
		if (dev->qpmap[i]->qp->qp_num == qpn)
			return dev->qpmap[i];
	return NULL;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return vrb_errno();
	return 0;
}

/*
 * The device's IP address: the first IPv4-mapped GID that is not loopback
 * (RoCE); rdma_cm cannot route over 127/8, so that is never chosen.
 */
static int find_addr(struct vrb_dev *dev, int gid_tbl_len)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&dev->addr;
	static const uint8_t v4map[12] = { 0, 0, 0, 0, 0,    0,
					   0, 0, 0, 0, 0xff, 0xff };
	union ibv_gid gid;
	int i;

	for (i = 0; i < gid_tbl_len; i++) {
		if (ibv_query_gid(dev->ctx, dev->port, i, &gid))
			continue;
		if (memcmp(gid.raw, v4map, 12) || gid.raw[12] == 127)
			continue;
		memset(sin, 0, sizeof(*sin));
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, gid.raw + 12, 4);
		return 0;
	}
	return -EADDRNOTAVAIL;
}

static int port_usable(struct ibv_context *ctx, struct ibv_port_attr *pa)
{
	return !ibv_query_port(ctx, 1, pa) && pa->state == IBV_PORT_ACTIVE;
}

static int dev_list(char (*names)[64], int max)
{
	struct ibv_context **list;
	int n = 0, i, k = 0;

	list = rdma_get_devices(&n);
	if (!list)
		return n ? vrb_errno() : 0;
	for (i = 0; i < n && k < max; i++)
		snprintf(names[k++], 64, "%s",
			 ibv_get_device_name(list[i]->device));
	rdma_free_devices(list);
	return k;
}

static void dev_close(struct rcx_dev *d)
{
	struct vrb_dev *dev = to_vdev(d);

	if (!dev)
		return;
	if (dev->listen_id)
		rdma_destroy_id(dev->listen_id);
	if (dev->cm_chan)
		rdma_destroy_event_channel(dev->cm_chan);
	if (dev->ncq) {
		/* drain what the channel still holds, then acknowledge all */
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		unsigned int i;

		while (!ibv_get_cq_event(dev->chan, &ev_cq, &ev_ctx))
			dev->cqs[(uintptr_t)ev_ctx].unacked++;
		for (i = 0; i < dev->ncq; i++) {
			if (dev->cqs[i].unacked)
				ibv_ack_cq_events(dev->cqs[i].cq,
						  dev->cqs[i].unacked);
			ibv_destroy_cq(dev->cqs[i].cq);
		}
	}
	free(dev->cqs);
	if (dev->chan)
		ibv_destroy_comp_channel(dev->chan);
	if (dev->pd)
		ibv_dealloc_pd(dev->pd);
	if (dev->epfd >= 0)
		close(dev->epfd);
	free(dev);
}

static int dev_open(const struct rcx_dev_attr *attr, struct rcx_dev **out)
{
	struct ibv_context **list, *ctx = NULL;
	struct ibv_port_attr pa;
	struct epoll_event ev = { .events = EPOLLIN };
	struct vrb_dev *dev;
	int n = 0, i, ret;

	list = rdma_get_devices(&n);
	if (!list)
		return n ? vrb_errno() : -ENODEV;
	/* librdmacm owns these contexts: cm ids resolve to the same ones */
	for (i = 0; i < n && !ctx; i++) {
		const char *nm = ibv_get_device_name(list[i]->device);

		if (attr && attr->name && *attr->name) {
			if (!strcmp(nm, attr->name))
				ctx = list[i];
		} else if (port_usable(list[i], &pa)) {
			ctx = list[i];
		}
	}
	rdma_free_devices(list);
	if (!ctx)
		return -ENODEV;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->epfd = -1;
	dev->ctx = ctx;
	dev->port = 1;
	snprintf(dev->name, sizeof(dev->name), "%s",
		 ibv_get_device_name(ctx->device));
	ret = -ENODEV;
	if (ibv_query_device(ctx, &dev->attr) || ibv_query_port(ctx, 1, &pa))
		goto err;
	ret = -ENETDOWN;
	if (pa.state != IBV_PORT_ACTIVE)
		goto err;
	dev->mtu = 128u << pa.active_mtu;
	if (attr && attr->addr && *attr->addr)
		ret = rcx__ip_addr_parse(attr->addr, &dev->addr);
	else
		ret = find_addr(dev, pa.gid_tbl_len);
	if (ret)
		goto err;

	ret = -ENOMEM;
	dev->pd = ibv_alloc_pd(ctx);
	if (!dev->pd)
		goto err;
	dev->chan = ibv_create_comp_channel(ctx);
	if (!dev->chan)
		goto err_errno;
	dev->cq_size = attr && attr->cq_size > 0 ? attr->cq_size : VRB_CQ_SIZE;
	if (dev->cq_size > dev->attr.max_cqe)
		dev->cq_size = dev->attr.max_cqe;
	if ((ret = set_nonblock(dev->chan->fd)) ||
	    (ret = vrb_cq_add(dev, dev->cq_size)) < 0)
		goto err;
	dev->cm_chan = rdma_create_event_channel();
	if (!dev->cm_chan)
		goto err_errno;
	if ((ret = set_nonblock(dev->cm_chan->fd)))
		goto err;
	dev->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dev->epfd < 0)
		goto err_errno;
	ev.data.fd = dev->chan->fd;
	if (epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->chan->fd, &ev))
		goto err_errno;
	ev.data.fd = dev->cm_chan->fd;
	if (epoll_ctl(dev->epfd, EPOLL_CTL_ADD, dev->cm_chan->fd, &ev))
		goto err_errno;
	*out = (struct rcx_dev *)dev;
	return 0;

err_errno:
	ret = vrb_errno();
err:
	dev_close((struct rcx_dev *)dev);
	return ret;
}

static int dev_query(struct rcx_dev *d, struct rcx_dev_info *info)
{
	struct vrb_dev *dev = to_vdev(d);
	struct ibv_port_attr pa;
	const struct sockaddr_in *sin = (const void *)&dev->addr;
	unsigned int i;

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", dev->name);
	info->max_mr_size = dev->attr.max_mr_size;
	info->max_qp_wr = dev->attr.max_qp_wr;
	info->max_cqe = dev->attr.max_cqe;
	for (i = 0; i < dev->ncq; i++) {
		info->cq_size += (uint32_t)dev->cqs[i].cq->cqe;
		info->cq_reserved += (uint32_t)dev->cqs[i].reserved;
	}
	info->max_rd_atomic = dev->attr.max_qp_init_rd_atom;
	info->atomics = dev->attr.atomic_cap != IBV_ATOMIC_NONE;
	if (ibv_query_port(dev->ctx, dev->port, &pa))
		memset(&pa, 0, sizeof(pa));
	info->port_active = pa.state == IBV_PORT_ACTIVE;
	snprintf(info->link_layer, sizeof(info->link_layer), "%s",
		 pa.link_layer == IBV_LINK_LAYER_ETHERNET     ? "Ethernet"
		 : pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand"
							      : "unspecified");
	info->max_msg_sz = pa.max_msg_sz;
	/* rxe: the kernel's software RoCE (its vendor id, 0xffffff) */
	info->fence_stalls = dev->attr.vendor_id == VRB_RXE_VENDOR_ID;
	info->mtu = dev->mtu;
	inet_ntop(AF_INET, &sin->sin_addr, info->addr, sizeof(info->addr));
	return 0;
}

static int mr_reg(struct rcx_dev *d, void *addr, size_t len,
		  unsigned int access, struct rcx_mr **out)
{
	struct vrb_dev *dev = to_vdev(d);
	struct vrb_mr *m;
	int acc = 0;

	if (access & ~(RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_READ |
		       RCX_ACCESS_REMOTE_WRITE | RCX_ACCESS_REMOTE_ATOMIC))
		return -EINVAL;
	if (access & RCX_ACCESS_LOCAL_WRITE)
		acc |= IBV_ACCESS_LOCAL_WRITE;
	if (access & RCX_ACCESS_REMOTE_READ)
		acc |= IBV_ACCESS_REMOTE_READ;
	/* IBA: remote write and atomic access require local write */
	if (access & RCX_ACCESS_REMOTE_WRITE)
		acc |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (access & RCX_ACCESS_REMOTE_ATOMIC)
		acc |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->mr = ibv_reg_mr(dev->pd, addr, len, acc);
	if (!m->mr) {
		int ret = vrb_errno();

		free(m);
		return ret;
	}
	*out = (struct rcx_mr *)m;
	return 0;
}

static int mr_dereg(struct rcx_mr *mr)
{
	struct vrb_mr *m = to_vmr(mr);
	int ret = ibv_dereg_mr(m->mr);

	if (ret)
		return -ret;
	free(m);
	return 0;
}

static uint32_t mr_lkey(const struct rcx_mr *mr)
{
	return to_vmr(mr)->mr->lkey;
}

static uint32_t mr_rkey(const struct rcx_mr *mr)
{
	return to_vmr(mr)->mr->rkey;
}

static int event_fd(struct rcx_dev *d)
{
	return to_vdev(d)->epfd;
}

static int watch_fd(struct rcx_dev *d, int fd)
{
	return rcx__epoll_add(to_vdev(d)->epfd, fd);
}

/* Every CQ: a completion on any of them makes the channel readable. */
static int arm(struct rcx_dev *d)
{
	struct vrb_dev *dev = to_vdev(d);
	unsigned int i;
	int ret;

	for (i = 0; i < dev->ncq; i++) {
		ret = ibv_req_notify_cq(dev->cqs[i].cq, 0);
		if (ret)
			return -ret;
	}
	return 0;
}

/* Consume pending CQ events; acknowledge them in batches (ack takes a lock). */
static int ack(struct rcx_dev *d)
{
	struct vrb_dev *dev = to_vdev(d);
	struct vrb_cq *c;
	struct ibv_cq *cq;
	void *cq_ctx;
	int got = 0;

	while (!ibv_get_cq_event(dev->chan, &cq, &cq_ctx)) {
		c = &dev->cqs[(uintptr_t)cq_ctx];
		if (++c->unacked >= VRB_ACK_BATCH) {
			ibv_ack_cq_events(c->cq, c->unacked);
			c->unacked = 0;
		}
		got++;
	}
	if (errno != EAGAIN)
		return vrb_errno();
	return got;
}

int vrb_cq_add(struct vrb_dev *dev, int size)
{
	struct vrb_cq *cqs;
	struct ibv_cq *cq;
	int ret;

	if (dev->ncq >= (unsigned int)dev->attr.max_cq)
		return -ENOSPC;
	cqs = realloc(dev->cqs, (dev->ncq + 1) * sizeof(*cqs));
	if (!cqs)
		return -ENOMEM;
	dev->cqs = cqs;
	cq = ibv_create_cq(dev->ctx, size, (void *)(uintptr_t)dev->ncq,
			   dev->chan, 0);
	if (!cq)
		return vrb_errno();
	/* a waiter may sleep on the channel already: this CQ wakes it too */
	ret = ibv_req_notify_cq(cq, 0);
	if (ret) {
		ibv_destroy_cq(cq);
		return -ret;
	}
	cqs[dev->ncq].cq = cq;
	cqs[dev->ncq].reserved = 0;
	cqs[dev->ncq].unacked = 0;
	ret = (int)dev->ncq++;
	vrb_cq_peek_update(dev);
	return ret;
}

const struct rcx_provider_ops rcx__verbs_ops = {
	.name = "verbs",
	.dev_list = dev_list,
	.dev_open = dev_open,
	.dev_close = dev_close,
	.dev_query = dev_query,
	.mr_reg = mr_reg,
	.mr_dereg = mr_dereg,
	.mr_reg_keyed = rcx__stub_mr_reg_keyed,
	.mr_lkey = mr_lkey,
	.mr_rkey = mr_rkey,
	.listen = vrb_listen,
	.ep_connect = vrb_ep_connect,
	.ep_accept = vrb_ep_accept,
	.ep_reject = vrb_ep_reject,
	.peer_split = rcx__stub_peer_split,
	.ep_disconnect = vrb_ep_disconnect,
	.ep_destroy = vrb_ep_destroy,
	.ep_set_error = vrb_ep_set_error,
	.ep_max_inline = vrb_ep_max_inline,
	.ep_query = vrb_ep_query,
	.pwr_create = vrb_pwr_create,
	.pwr_destroy = vrb_pwr_destroy,
	.pwr_post = vrb_pwr_post,
	.pwr_post_recv = vrb_pwr_post_recv,
	.pwr_post_list = vrb_pwr_post_list,
	.pwr_direct = vrb_pwr_direct,
	.cm_poll = vrb_cm_poll,
	.post_send = vrb_post_send,
	.ep_rma_now = rcx__stub_ep_rma_now,
	.post_recv = vrb_post_recv,
	.cq_poll = vrb_cq_poll,
	.cq_poll_min = vrb_cq_poll_min,
	.cq_dispatch = vrb_cq_dispatch,
	.cq_peek = vrb_cq_peek,
	.event_fd = event_fd,
	.watch_fd = watch_fd,
	.arm = arm,
	.ack = ack,
	.mem_alloc = rcx__stub_mem_alloc,
	.mem_free = rcx__stub_mem_free,
};
