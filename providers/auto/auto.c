/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The auto provider: a provider per peer. A device is a shm device
 * (always) and a verbs device when one opens. Its address names this
 * node, then carries both lower addresses:
 *
 *	auto:NODE;SHM-ADDRESS;VERBS-ADDRESS	(VERBS-ADDRESS empty: none)
 *
 * ep_connect takes shm to a peer of the same node (unless the endpoint
 * asks for the NIC and both ends have verbs), verbs to the others. The
 * node is the key the core found (RCX_NODE, or the launcher's node name
 * or the host name, with the boot id: lib/boot/boot_node.c), hashed. Endpoints, connection requests and prepared WRs are the lower
 * provider's own objects; every op on one goes to its maker
 * (rcx__obj_ops). A registration is made on verbs first, then on shm
 * under the verbs keys, so one rkey serves both paths.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "../provider.h"

#define AUTO_PREFIX   "auto:"
#define AUTO_NODE_LEN 16 /* hex digits of the node's hash */

struct auto_dev {
	const struct rcx_provider_ops *sops, *vops; /* vops NULL: no verbs */
	struct rcx_dev *sdev, *vdev;
	int epfd; /* both lower event fds, and the watched ones */
	unsigned int cq_turn, cm_turn; /* which lower is polled first */
	char node[AUTO_NODE_LEN + 1];
};

struct auto_mr {
	struct auto_dev *dev;
	struct rcx_mr *v, *s; /* v NULL: shm only; s NULL: rkey 0 */
	uint32_t lkey, rkey;
};

static struct auto_dev *to_adev(struct rcx_dev *d)
{
	return (struct auto_dev *)d;
}

/* The lower device that made objects of ops. */
static struct rcx_dev *lower_dev(struct auto_dev *dev,
				 const struct rcx_provider_ops *ops)
{
	return ops == dev->sops ? dev->sdev : dev->vdev;
}

/* ---- node identity */

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The core's node key (NULL: one node for all), hashed. */
static void node_id(const char *key, char *out, size_t len)
{
	uint64_t h = fnv1a(0xcbf29ce484222325ull, key ? key : "");

	snprintf(out, len, "%016llx", (unsigned long long)h);
}

/* ---- devices */

/* The verbs devices; none (or no verbs): the shm device. */
static int auto_dev_list(char (*names)[64], int max)
{
	const struct rcx_provider_ops *v = rcx__provider_find("verbs");
	int n = v ? v->dev_list(names, max) : 0;

	if (n > 0 || max < 1)
		return n > 0 ? n : 0;
	snprintf(names[0], 64, "shm");
	return 1;
}

static void auto_dev_close(struct rcx_dev *d)
{
	struct auto_dev *dev = to_adev(d);

	if (!dev)
		return;
	if (dev->vdev)
		dev->vops->dev_close(dev->vdev);
	if (dev->sdev)
		dev->sops->dev_close(dev->sdev);
	if (dev->epfd >= 0)
		close(dev->epfd);
	free(dev);
}

/*
 * attr->name picks the verbs device ("shm" or none listed: shm only);
 * attr->addr is the verbs device's. A named verbs device that does not
 * open fails the open.
 */
static int auto_dev_open(const struct rcx_dev_attr *attr, struct rcx_dev **out)
{
	struct rcx_dev_attr sa = { .cq_size = attr ? attr->cq_size : 0 };
	const char *name = attr ? attr->name : NULL;
	struct auto_dev *dev;
	int ret;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->epfd = -1;
	node_id(attr ? attr->node : NULL, dev->node, sizeof(dev->node));
	dev->sops = rcx__provider_find("shm");
	if (!name || strcmp(name, "shm"))
		dev->vops = rcx__provider_find("verbs");
	if (dev->vops) {
		ret = dev->vops->dev_open(attr, &dev->vdev);
		if (ret && name && *name)
			goto err;
		if (ret)
			dev->vops = NULL;
	}
	ret = dev->sops->dev_open(&sa, &dev->sdev);
	if (ret)
		goto err;
	dev->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dev->epfd < 0) {
		ret = -errno;
		goto err;
	}
	ret = rcx__epoll_add(dev->epfd, dev->sops->event_fd(dev->sdev));
	if (!ret && dev->vdev)
		ret = rcx__epoll_add(dev->epfd, dev->vops->event_fd(dev->vdev));
	if (ret)
		goto err;
	*out = (struct rcx_dev *)dev;
	return 0;
err:
	auto_dev_close((struct rcx_dev *)dev);
	return ret;
}

/*
 * The verbs device's facts when there is one: its limits are the
 * smaller, and its work-request mapping must hold (shm runs WRs in order
 * and ignores RCX_WR_FENCE, so the fences verbs needs cost it nothing).
 */
static int auto_dev_query(struct rcx_dev *d, struct rcx_dev_info *info)
{
	struct auto_dev *dev = to_adev(d);
	struct rcx_dev_info si;
	int ret;

	if (!dev->vdev)
		return dev->sops->dev_query(dev->sdev, info);
	ret = dev->vops->dev_query(dev->vdev, info);
	if (!ret) {
		info->ordered = 0;
		info->nic_split = 1;
		/* shm's endpoints have their own limit (rxe's is larger) */
		if (!dev->sops->dev_query(dev->sdev, &si) &&
		    si.max_qp_wr < info->max_qp_wr)
			info->max_qp_wr = si.max_qp_wr;
	}
	return ret;
}

/* ---- registrations */

static int auto_mr_reg(struct rcx_dev *d, void *addr, size_t len,
		       unsigned int access, struct rcx_mr **out)
{
	struct auto_dev *dev = to_adev(d);
	struct auto_mr *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	m->dev = dev;
	if (!dev->vdev) {
		ret = dev->sops->mr_reg(dev->sdev, addr, len, access, &m->s);
		if (ret)
			goto err;
		m->lkey = dev->sops->mr_lkey(m->s);
		m->rkey = dev->sops->mr_rkey(m->s);
		*out = (struct rcx_mr *)m;
		return 0;
	}
	ret = dev->vops->mr_reg(dev->vdev, addr, len, access, &m->v);
	if (ret)
		goto err;
	m->lkey = dev->vops->mr_lkey(m->v);
	m->rkey = dev->vops->mr_rkey(m->v);
	/* no remote access (rkey 0 on some devices): shm has nothing to
	 * check, it takes no lkey */
	ret = m->rkey ? dev->sops->mr_reg_keyed(dev->sdev, addr, len, access,
						m->lkey, m->rkey, &m->s)
		      : 0;
	if (ret) {
		dev->vops->mr_dereg(m->v);
		goto err;
	}
	*out = (struct rcx_mr *)m;
	return 0;
err:
	free(m);
	return ret;
}

/* shm's entry goes first: the verbs key may be reused once it is free. */
static int auto_mr_dereg(struct rcx_mr *mr)
{
	struct auto_mr *m = (struct auto_mr *)mr;
	int ret = m->s ? m->dev->sops->mr_dereg(m->s) : 0;

	if (m->v) {
		int r = m->dev->vops->mr_dereg(m->v);

		ret = ret ? ret : r;
	}
	free(m);
	return ret;
}

static uint32_t auto_mr_lkey(const struct rcx_mr *mr)
{
	return ((const struct auto_mr *)mr)->lkey;
}

static uint32_t auto_mr_rkey(const struct rcx_mr *mr)
{
	return ((const struct auto_mr *)mr)->rkey;
}

/* ---- connections */

static int auto_listen(struct rcx_dev *d, uint16_t port, char *addr,
		       size_t addr_len)
{
	struct auto_dev *dev = to_adev(d);
	char sa[64], va[64] = "";
	int n, ret;

	ret = dev->sops->listen(dev->sdev, port, sa, sizeof(sa));
	if (!ret && dev->vdev)
		ret = dev->vops->listen(dev->vdev, port, va, sizeof(va));
	if (ret)
		return ret;
	n = snprintf(addr, addr_len, AUTO_PREFIX "%s;%s;%s", dev->node, sa, va);
	return n < 0 || (size_t)n >= addr_len ? -ENAMETOOLONG : 0;
}

/*
 * Split "auto:NODE;SHM;VERBS". Another provider's address stands for
 * itself: "shm:..." a shm peer, anything else a verbs peer (on no node
 * of ours).
 */
static int addr_split(const char *s, char *node, char *sa, char *va, size_t len)
{
	const char *a, *b;

	*node = *sa = *va = 0;
	if (strncmp(s, AUTO_PREFIX, strlen(AUTO_PREFIX))) {
		if (strlen(s) >= len)
			return -EINVAL;
		strcpy(!strncmp(s, "shm:", 4) ? sa : va, s);
		return 0;
	}
	s += strlen(AUTO_PREFIX);
	a = strchr(s, ';');
	b = a ? strchr(a + 1, ';') : NULL;
	if (!b || (size_t)(a - s) >= len || (size_t)(b - a - 1) >= len ||
	    strlen(b + 1) >= len || strchr(b + 1, ';'))
		return -EINVAL;
	memcpy(node, s, a - s);
	node[a - s] = 0;
	memcpy(sa, a + 1, b - a - 1);
	sa[b - a - 1] = 0;
	strcpy(va, b + 1);
	return 0;
}

/* The choice of auto_ep_connect: -1 unreachable, 0 shm, 1 verbs. */
static int path_of(struct auto_dev *dev, const char *node, const char *sa,
		   const char *va, bool nic)
{
	bool same = *sa && (!*node || !strcmp(node, dev->node));

	if (same && !(nic && dev->vdev && *va))
		return 0;
	return dev->vdev && *va ? 1 : -1;
}

static int auto_peer_split(struct rcx_dev *d, const char *addr)
{
	struct auto_dev *dev = to_adev(d);
	char node[64], sa[64], va[64];
	int ret = addr_split(addr, node, sa, va, sizeof(node));

	if (ret)
		return ret;
	return path_of(dev, node, sa, va, false) == 0 &&
	       path_of(dev, node, sa, va, true) == 1;
}

static int auto_ep_connect(struct rcx_dev *d, const char *addr,
			   const struct rcx_ep_attr *attr, const void *pdata,
			   size_t pdata_len, struct rcx_ep **out)
{
	struct auto_dev *dev = to_adev(d);
	char node[64], sa[64], va[64];
	struct sockaddr_storage ss;
	int ret;

	if (!addr)
		return -EINVAL;
	ret = addr_split(addr, node, sa, va, sizeof(node));
	if (ret)
		return ret;
	switch (path_of(dev, node, sa, va, attr->nic)) {
	case 0:
		return dev->sops->ep_connect(dev->sdev, sa, attr, pdata,
					     pdata_len, out);
	case 1:
		return dev->vops->ep_connect(dev->vdev, va, attr, pdata,
					     pdata_len, out);
	}
	return *va && rcx__ip_addr_parse(va, &ss) ? -EINVAL : -EHOSTUNREACH;
}

static int auto_ep_accept(struct rcx_dev *d, struct rcx_conn_req *req,
			  const struct rcx_ep_attr *attr, struct rcx_ep **out)
{
	const struct rcx_provider_ops *ops = rcx__obj_ops(req);

	return ops->ep_accept(lower_dev(to_adev(d), ops), req, attr, out);
}

static int auto_ep_reject(struct rcx_dev *d, struct rcx_conn_req *req)
{
	const struct rcx_provider_ops *ops = rcx__obj_ops(req);

	return ops->ep_reject(lower_dev(to_adev(d), ops), req);
}

static int auto_ep_disconnect(struct rcx_ep *ep)
{
	return rcx__obj_ops(ep)->ep_disconnect(ep);
}

static void auto_ep_destroy(struct rcx_ep *ep)
{
	if (ep)
		rcx__obj_ops(ep)->ep_destroy(ep);
}

static int auto_ep_set_error(struct rcx_ep *ep)
{
	return rcx__obj_ops(ep)->ep_set_error(ep);
}

static uint32_t auto_ep_max_inline(const struct rcx_ep *ep)
{
	return rcx__obj_ops(ep)->ep_max_inline(ep);
}

static int auto_ep_query(const struct rcx_ep *ep, struct rcx_ep_info *info)
{
	return rcx__obj_ops(ep)->ep_query(ep, info);
}

/* Connection events of both, in turn. */
static int auto_cm_poll(struct rcx_dev *d, struct rcx_cm_event *ev)
{
	struct auto_dev *dev = to_adev(d);
	const struct rcx_provider_ops *ops[2] = { dev->sops, dev->vops };
	struct rcx_dev *devs[2] = { dev->sdev, dev->vdev };
	int first = dev->vdev ? (int)(dev->cm_turn++ & 1) : 0;
	int ret = ops[first]->cm_poll(devs[first], ev);

	if (ret || !dev->vdev)
		return ret;
	return ops[!first]->cm_poll(devs[!first], ev);
}

/* ---- work requests */

static int auto_pwr_create(struct rcx_ep *ep, const struct rcx_wr *wr, int recv,
			   struct rcx_pwr **out)
{
	return rcx__obj_ops(ep)->pwr_create(ep, wr, recv, out);
}

static void auto_pwr_destroy(struct rcx_pwr *pwr)
{
	if (pwr)
		rcx__obj_ops(pwr)->pwr_destroy(pwr);
}

static int auto_pwr_post(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	return rcx__obj_ops(ep)->pwr_post(ep, pwr, n);
}

static int auto_pwr_post_recv(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	return rcx__obj_ops(ep)->pwr_post_recv(ep, pwr, n);
}

static int auto_pwr_post_list(struct rcx_ep *ep, struct rcx_pwr **pwr, int n,
			      int recv, int *posted)
{
	return rcx__obj_ops(ep)->pwr_post_list(ep, pwr, n, recv, posted);
}

static int auto_ep_rma_now(struct rcx_ep *ep, const struct rcx_wr *wr)
{
	return rcx__obj_ops(ep)->ep_rma_now(ep, wr);
}

static int auto_post_send(struct rcx_ep *ep, struct rcx_wr *wr,
			  struct rcx_wr **bad)
{
	return rcx__obj_ops(ep)->post_send(ep, wr, bad);
}

static int auto_post_recv(struct rcx_ep *ep, struct rcx_wr *wr,
			  struct rcx_wr **bad)
{
	return rcx__obj_ops(ep)->post_recv(ep, wr, bad);
}

/*
 * Both completion queues, the first in turn first (shm's poll also runs
 * its endpoints' send queues). An error of the second waits for the next
 * call when the first returned completions.
 */
static inline int auto_poll(struct rcx_dev *d, struct rcx_cqe *cqe, int n,
			    bool min)
{
	struct auto_dev *dev = to_adev(d);
	const struct rcx_provider_ops *ops[2] = { dev->sops, dev->vops };
	struct rcx_dev *devs[2] = { dev->sdev, dev->vdev };
	int first = dev->vdev ? (int)(dev->cq_turn++ & 1) : 0;
	int got, ret;

	got = min ? ops[first]->cq_poll_min(devs[first], cqe, n)
		  : ops[first]->cq_poll(devs[first], cqe, n);
	if (got < 0 || got == n || !dev->vdev)
		return got;
	ret = min ? ops[!first]->cq_poll_min(devs[!first], cqe + got, n - got)
		  : ops[!first]->cq_poll(devs[!first], cqe + got, n - got);
	if (ret < 0)
		return got ? got : ret;
	return got + ret;
}

static int auto_cq_poll(struct rcx_dev *d, struct rcx_cqe *cqe, int n)
{
	return auto_poll(d, cqe, n, false);
}

/* both makers have the fast path's poll (verbs, shm) */
static int auto_cq_poll_min(struct rcx_dev *d, struct rcx_cqe *cqe, int n)
{
	return auto_poll(d, cqe, n, true);
}

/*
 * Both makers' poll and dispatch (verbs, shm), the first in turn first,
 * as auto_poll. An error of the second waits for the next call when the
 * first handed over completions.
 */
static int auto_cq_dispatch(struct rcx_dev *d, struct rcx_ctx *ctx)
{
	struct auto_dev *dev = to_adev(d);
	const struct rcx_provider_ops *ops[2] = { dev->sops, dev->vops };
	struct rcx_dev *devs[2] = { dev->sdev, dev->vdev };
	int first = dev->vdev ? (int)(dev->cq_turn++ & 1) : 0;
	int got, ret;

	got = ops[first]->cq_dispatch(devs[first], ctx);
	if (got < 0 || !dev->vdev)
		return got;
	ret = ops[!first]->cq_dispatch(devs[!first], ctx);
	if (ret < 0)
		return got ? got : ret;
	return got + ret;
}

/* ---- events */

static int auto_event_fd(struct rcx_dev *d)
{
	return to_adev(d)->epfd;
}

static int auto_arm(struct rcx_dev *d)
{
	struct auto_dev *dev = to_adev(d);
	int ret = dev->sops->arm(dev->sdev);

	if (!ret && dev->vdev)
		ret = dev->vops->arm(dev->vdev);
	return ret;
}

static int auto_ack(struct rcx_dev *d)
{
	struct auto_dev *dev = to_adev(d);
	int s = dev->sops->ack(dev->sdev), v = 0;

	if (dev->vdev)
		v = dev->vops->ack(dev->vdev);
	if (s < 0 || v < 0)
		return s < 0 ? s : v;
	return s + v;
}

static int auto_watch_fd(struct rcx_dev *d, int fd)
{
	return rcx__epoll_add(to_adev(d)->epfd, fd);
}

/* shared memory serves peers on this node; the NIC registers it alike */
static int auto_mem_alloc(struct rcx_dev *d, size_t len, void **out)
{
	return to_adev(d)->sops->mem_alloc(to_adev(d)->sdev, len, out);
}

static int auto_mem_free(struct rcx_dev *d, void *addr)
{
	return to_adev(d)->sops->mem_free(to_adev(d)->sdev, addr);
}

/* only an endpoint of shared memory maps its peer's memory */
static int auto_ep_mem_map(struct rcx_ep *ep, uint64_t raddr, uint64_t len,
			   uint32_t rkey, unsigned int access, void **out)
{
	const struct rcx_provider_ops *o = rcx__obj_ops(ep);

	if (!o->ep_mem_map)
		return -EOPNOTSUPP;
	return o->ep_mem_map(ep, raddr, len, rkey, access, out);
}

static void auto_mem_unmap(struct rcx_dev *d, void *addr, uint64_t len)
{
	to_adev(d)->sops->mem_unmap(to_adev(d)->sdev, addr, len);
}

const struct rcx_provider_ops rcx__auto_ops = {
	.name = "auto",
	.dev_list = auto_dev_list,
	.dev_open = auto_dev_open,
	.dev_close = auto_dev_close,
	.dev_query = auto_dev_query,
	.mr_reg = auto_mr_reg,
	.mr_dereg = auto_mr_dereg,
	.mr_reg_keyed = rcx__stub_mr_reg_keyed,
	.mr_lkey = auto_mr_lkey,
	.mr_rkey = auto_mr_rkey,
	.listen = auto_listen,
	.ep_connect = auto_ep_connect,
	.ep_accept = auto_ep_accept,
	.ep_reject = auto_ep_reject,
	.peer_split = auto_peer_split,
	.ep_disconnect = auto_ep_disconnect,
	.ep_destroy = auto_ep_destroy,
	.ep_set_error = auto_ep_set_error,
	.ep_max_inline = auto_ep_max_inline,
	.ep_query = auto_ep_query,
	.pwr_create = auto_pwr_create,
	.pwr_destroy = auto_pwr_destroy,
	.pwr_post = auto_pwr_post,
	.pwr_post_recv = auto_pwr_post_recv,
	.pwr_post_list = auto_pwr_post_list,
	.cm_poll = auto_cm_poll,
	.post_send = auto_post_send,
	.ep_rma_now = auto_ep_rma_now,
	.post_recv = auto_post_recv,
	.cq_poll = auto_cq_poll,
	.cq_poll_min = auto_cq_poll_min,
	.cq_dispatch = auto_cq_dispatch,
	.cq_peek = rcx__stub_cq_peek,
	.pwr_direct = rcx__stub_pwr_direct,
	.event_fd = auto_event_fd,
	.arm = auto_arm,
	.ack = auto_ack,
	.watch_fd = auto_watch_fd,
	.mem_alloc = auto_mem_alloc,
	.mem_free = auto_mem_free,
	.ep_mem_map = auto_ep_mem_map,
	.mem_unmap = auto_mem_unmap,
};
