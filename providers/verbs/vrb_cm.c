/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection management over librdmacm. Nothing here blocks: connect
 * starts address resolution, and cm_poll drives each endpoint through
 * ADDR_RESOLVED -> ROUTE_RESOLVED (QP created, connect sent) ->
 * ESTABLISHED, handing the caller only the events it must act on.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include "vrb.h"

#define VRB_RESOLVE_MS 5000

static int addr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];
	uint16_t port;
	int n;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		n = snprintf(buf, len, "%s:%u", host, port);
	} else {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
		n = snprintf(buf, len, "[%s]:%u", host, port);
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int vrb_listen(struct rcx_dev *d, uint16_t port, char *addr, size_t addr_len)
{
	struct vrb_dev *dev = to_vdev(d);
	struct sockaddr_storage ss = dev->addr;
	struct rdma_cm_id *id;
	int ret;

	if (dev->listen_id)
		return -EALREADY;
	((struct sockaddr_in *)&ss)->sin_port = htons(port);
	if (rdma_create_id(dev->cm_chan, &id, NULL, RDMA_PS_TCP))
		return vrb_errno();
	if (rdma_bind_addr(id, (struct sockaddr *)&ss) ||
	    rdma_listen(id, 128)) {
		ret = vrb_errno();
		goto err;
	}
	ret = addr_format(rdma_get_local_addr(id), addr, addr_len);
	if (ret)
		goto err;
	dev->listen_id = id;
	return 0;
err:
	rdma_destroy_id(id);
	return ret;
}

static struct vrb_ep *ep_new(struct vrb_dev *dev,
			     const struct rcx_ep_attr *attr)
{
	struct vrb_ep *ep;

	if (!attr->max_send_wr || !attr->max_recv_wr ||
	    attr->max_send_wr > (uint32_t)dev->attr.max_qp_wr ||
	    attr->max_recv_wr > (uint32_t)dev->attr.max_qp_wr ||
	    attr->timeout > 31 || attr->retry_cnt > 7 || attr->rnr_retry > 7)
		return NULL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->pub.ops = &rcx__verbs_ops;
	ep->dev = dev;
	ep->attr = *attr;
	return ep;
}

static int rd_atomic(const struct vrb_ep *ep)
{
	int max = ep->dev->attr.max_qp_init_rd_atom;
	int want = ep->attr.max_rd_atomic ? ep->attr.max_rd_atomic : max;

	if (want > ep->dev->attr.max_qp_rd_atom)
		want = ep->dev->attr.max_qp_rd_atom;
	return want < max ? want : max;
}

static void conn_param(const struct vrb_ep *ep, struct rdma_conn_param *cp,
		       const void *pdata, size_t pdata_len)
{
	memset(cp, 0, sizeof(*cp));
	cp->private_data = pdata;
	cp->private_data_len = pdata_len;
	cp->responder_resources = rd_atomic(ep);
	cp->initiator_depth = rd_atomic(ep);
	cp->retry_count = ep->attr.retry_cnt;
	cp->rnr_retry_count = ep->attr.rnr_retry;
}

int vrb_ep_connect(struct rcx_dev *d, const char *addr,
		   const struct rcx_ep_attr *attr, const void *pdata,
		   size_t pdata_len, struct rcx_ep **out)
{
	struct vrb_dev *dev = to_vdev(d);
	struct sockaddr_storage dst, src = dev->addr;
	struct vrb_ep *ep;
	int ret;

	if (pdata_len > sizeof(ep->pdata) || (pdata_len && !pdata))
		return -EINVAL;
	ret = rcx__ip_addr_parse(addr, &dst);
	if (ret)
		return ret;
	ep = ep_new(dev, attr);
	if (!ep)
		return -EINVAL;
	memcpy(ep->pdata, pdata, pdata_len);
	ep->pdata_len = pdata_len;
	if (rdma_create_id(dev->cm_chan, &ep->id, ep, RDMA_PS_TCP)) {
		ret = vrb_errno();
		free(ep);
		return ret;
	}
	/* the ACK timeout bounds failure detection: rdma_cm's RoCE default
	 * (about 2 s per try) would make it 16 s */
	if (attr->timeout) {
		uint8_t t = attr->timeout;

		rdma_set_option(ep->id, RDMA_OPTION_ID,
				RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t));
	}
	((struct sockaddr_in *)&src)->sin_port = 0;
	ep->state = VRB_EP_RESOLVING;
	if (rdma_resolve_addr(ep->id, (struct sockaddr *)&src,
			      (struct sockaddr *)&dst, VRB_RESOLVE_MS)) {
		ret = vrb_errno();
		rdma_destroy_id(ep->id);
		free(ep);
		return ret;
	}
	*out = (struct rcx_ep *)ep;
	return 0;
}

int vrb_ep_accept(struct rcx_dev *d, struct rcx_conn_req *r,
		  const struct rcx_ep_attr *attr, struct rcx_ep **out)
{
	struct vrb_dev *dev = to_vdev(d);
	struct vrb_conn_req *req = (struct vrb_conn_req *)r;
	struct rdma_conn_param cp;
	struct vrb_ep *ep;
	int ret;

	ep = ep_new(dev, attr);
	if (!ep)
		return -EINVAL;
	if (attr->timeout) {
		uint8_t t = attr->timeout;

		rdma_set_option(req->id, RDMA_OPTION_ID,
				RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t));
	}
	ret = vrb_qp_create(ep, req->id);
	if (ret) {
		free(ep);
		/* the caps fit the device (vrb_qp_create): rdma_cm refused
		 * a QP for the request, whose peer gave up on it (it died,
		 * or its connect was destroyed) */
		return ret == -EINVAL ? -ECONNABORTED : ret;
	}
	req->id->context = ep;
	ep->state = VRB_EP_CONNECTING;
	conn_param(ep, &cp, NULL, 0);
	if (rdma_accept(req->id, &cp)) {
		ret = vrb_errno();
		req->id->context = NULL;
		vrb_qp_destroy(ep);
		free(ep);
		return ret;
	}
	ep->rts = 1; /* rdma_accept took the QP through RTR to RTS */
	free(req);
	*out = (struct rcx_ep *)ep;
	return 0;
}

int vrb_ep_reject(struct rcx_dev *d, struct rcx_conn_req *r)
{
	struct vrb_conn_req *req = (struct vrb_conn_req *)r;

	rdma_reject(req->id, NULL, 0);
	rdma_destroy_id(req->id);
	free(req);
	return 0;
}

int vrb_ep_disconnect(struct rcx_ep *e)
{
	struct vrb_ep *ep = to_vep(e);

	if (ep->state != VRB_EP_CONNECTED)
		return -ENOTCONN;
	if (rdma_disconnect(ep->id))
		return vrb_errno();
	return 0;
}

void vrb_ep_destroy(struct rcx_ep *e)
{
	struct vrb_ep *ep = to_vep(e);

	if (!ep)
		return;
	vrb_qp_destroy(ep);
	if (ep->id)
		rdma_destroy_id(ep->id);
	free(ep);
}

/* IBA 12.6.7.2, table 112: REJ reason codes */
#define VRB_REJ_INVALID_SERVICE_ID 8
#define VRB_REJ_CONSUMER_DEFINED   28

static int fail(struct vrb_ep *ep, struct rcx_cm_event *ev, int status)
{
	ep->state = VRB_EP_FAILED;
	ev->type = RCX_CM_ERROR;
	ev->status = status;
	return 1;
}

/* One rdma_cm event on an endpoint we initiated or accepted. */
static int ep_event(struct vrb_ep *ep, struct rdma_cm_event *cme,
		    struct rcx_cm_event *ev)
{
	struct rdma_conn_param cp;
	int ret;

	ev->ep = (struct rcx_ep *)ep;
	ev->ep_ctx = ep->attr.ep_ctx;
	switch (cme->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(ep->id, VRB_RESOLVE_MS))
			return fail(ep, ev, vrb_errno());
		return 0;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = vrb_qp_create(ep, ep->id);
		if (ret)
			return fail(ep, ev, ret);
		conn_param(ep, &cp, ep->pdata, ep->pdata_len);
		ep->state = VRB_EP_CONNECTING;
		if (rdma_connect(ep->id, &cp))
			return fail(ep, ev, vrb_errno());
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		ep->state = VRB_EP_CONNECTED;
		ep->rts = 1;
		ev->type = RCX_CM_ESTABLISHED;
		if (ep->attr.min_rnr_timer) {
			/* rdma_cm sets no RNR timer: RTS->RTS may (IBA 11.2.4.2) */
			struct ibv_qp_attr qa = {
				.min_rnr_timer = ep->attr.min_rnr_timer,
			};

			ibv_modify_qp(ep->qp, &qa, IBV_QP_MIN_RNR_TIMER);
		}
		return 1;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		return fail(ep, ev,
			    cme->status ? -abs(cme->status) : -EHOSTUNREACH);
	case RDMA_CM_EVENT_UNREACHABLE:
		return fail(ep, ev, -EHOSTUNREACH);
	case RDMA_CM_EVENT_REJECTED:
		/* IB CM reject reason 8, invalid service ID: nothing listens
		 * on that port any more (the peer's context is gone); a
		 * peer's own rdma_reject is reason 28, consumer defined (so
		 * is its process's end with the request unanswered). Any
		 * other is the connection managers' own (a time-out, a stale
		 * connection: messages lost or late on the link) */
		return fail(ep, ev,
			    cme->status == VRB_REJ_INVALID_SERVICE_ID
				    ? -EHOSTDOWN
			    : cme->status == VRB_REJ_CONSUMER_DEFINED
				    ? -ECONNREFUSED
				    : -ECONNABORTED);
	case RDMA_CM_EVENT_CONNECT_ERROR:
		return fail(ep, ev, -ECONNABORTED);
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (ep->state == VRB_EP_DISCONNECTED)
			return 0;
		ep->state = VRB_EP_DISCONNECTED;
		ev->type = RCX_CM_DISCONNECTED;
		/* status 0: the peer's DREQ (its disconnect, its id
		 * destroyed, by it or by its kernel for a process that
		 * died) or its DREP to ours; else ours went unanswered
		 * (-ETIMEDOUT: the link or the peer, no sign of which) */
		if (cme->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
			ev->status = -ENODEV;
		else
			ev->status =
				cme->status ? -abs(cme->status) : -ECONNRESET;
		return 1;
	default: /* TIMEWAIT_EXIT, ADDR_CHANGE, ... */
		return 0;
	}
}

int vrb_cm_poll(struct rcx_dev *d, struct rcx_cm_event *ev)
{
	struct vrb_dev *dev = to_vdev(d);
	struct rdma_cm_event *cme;
	struct vrb_conn_req *req;
	int ret;

	for (;;) {
		if (rdma_get_cm_event(dev->cm_chan, &cme))
			return errno == EAGAIN ? 0 : vrb_errno();
		memset(ev, 0, sizeof(*ev));
		if (cme->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			/* a new id; its context stays NULL until accepted */
			req = malloc(sizeof(*req));
			if (!req) {
				rdma_reject(cme->id, NULL, 0);
				rdma_destroy_id(cme->id);
				rdma_ack_cm_event(cme);
				continue;
			}
			req->pub.ops = &rcx__verbs_ops;
			req->id = cme->id;
			ev->type = RCX_CM_CONNECT_REQUEST;
			ev->req = (struct rcx_conn_req *)req;
			ev->pdata_len = cme->param.conn.private_data_len;
			if (ev->pdata_len > sizeof(ev->pdata))
				ev->pdata_len = sizeof(ev->pdata);
			memcpy(ev->pdata, cme->param.conn.private_data,
			       ev->pdata_len);
			rdma_ack_cm_event(cme);
			return 1;
		}
		ret = 0;
		if (cme->id->context)
			ret = ep_event(cme->id->context, cme, ev);
		rdma_ack_cm_event(cme);
		if (ret)
			return ret;
	}
}
