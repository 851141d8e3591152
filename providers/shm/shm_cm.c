/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory provider: connections. The connecting side makes the
 * connection segment and sends CONNECT (its name, the private data) to
 * the listener's socket; the acceptor maps it and answers ACCEPT; the
 * connector is then established and sends RTU, which establishes the
 * acceptor (the order rdma_cm keeps). DISC, or the peer's pidfd becoming
 * readable (it exited), disconnects.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "shm.h"

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

/*
 * The peer's process has exited (a zombie not yet reaped included): what
 * refuses a connect to it is its death, not its answer.
 */
static bool peer_exited(const struct shm_ep *ep)
{
	struct pollfd p = { .fd = ep->pidfd, .events = POLLIN };

	if (ep->pidfd >= 0)
		return poll(&p, 1, 0) == 1;
	return ep->peer_pid > 0 && kill(ep->peer_pid, 0) && errno == ESRCH;
}

int shm_listen(struct rcx_dev *d, uint16_t port, char *addr, size_t len)
{
	struct shm_dev *dev = to_sdev(d);
	int n;

	(void)port; /* the socket is bound when the device opens */
	n = snprintf(addr, len, "shm:%d:%u", (int)dev->pid, dev->num);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int addr_parse(const char *s, pid_t *pid, uint32_t *dev)
{
	int p, used = 0;
	unsigned int d;

	if (sscanf(s, "shm:%d:%u%n", &p, &d, &used) != 2 || s[used] || p <= 0)
		return -EINVAL;
	*pid = p;
	*dev = d;
	return 0;
}

static void dev_seg_name(pid_t pid, uint32_t dev, char *buf, size_t len)
{
	shm_seg_name(buf, len, pid, dev, NULL, 0);
}

static struct shm_ep *ep_new(struct shm_dev *dev,
			     const struct rcx_ep_attr *attr)
{
	struct shm_ep *ep;

	if (!attr->max_send_wr || !attr->max_recv_wr ||
	    attr->max_send_wr > SHM_MAX_WR || attr->max_recv_wr > SHM_RQ)
		return NULL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->rq_wr_id = calloc(SHM_RQ, sizeof(*ep->rq_wr_id));
	if (!ep->rq_wr_id) {
		free(ep);
		return NULL;
	}
	ep->pub.ops = &rcx__shm_ops;
	ep->dev = dev;
	ep->attr = *attr;
	ep->pidfd = -1;
	ep->id = dev->next_ep++;
	ep->wmask = 1ull << shm_work_bit(ep->id);
	shm_set_peer_ep(ep, 0);
	return ep;
}

/* What both sides need of the peer: its device segment, pidfd, socket. */
static int ep_peer(struct shm_ep *ep, pid_t pid, uint32_t pdev)
{
	struct epoll_event ev = { .events = EPOLLIN };
	char name[48];

	ep->peer_pid = pid;
	ep->peer_dev = pdev;
	shm_name_addr(pid, pdev, false, &ep->peer_addr, &ep->peer_addr_len);
	shm_name_addr(pid, pdev, true, &ep->peer_kaddr, &ep->peer_kaddr_len);
	dev_seg_name(pid, pdev, name, sizeof(name));
	ep->peer_seg = shm_map(name, sizeof(*ep->peer_seg), false);
	/* a context that closes removes its segment: it is gone */
	if (!ep->peer_seg)
		return errno == ENOENT ? -EHOSTDOWN : -errno;
	if (ep->peer_seg->magic != SHM_MAGIC || ep->peer_seg->pid != pid)
		return -ECONNREFUSED;
	/* the peer's exit is its failure: the pidfd wakes a blocked wait */
	ep->pidfd = pidfd_open_(pid);
	if (ep->pidfd < 0 && errno == ENOSYS)
		return 0; /* no pidfds (before Linux 5.3; valgrind): polled */
	if (ep->pidfd < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	ev.data.fd = ep->pidfd;
	if (epoll_ctl(ep->dev->epfd, EPOLL_CTL_ADD, ep->pidfd, &ev))
		return -errno;
	return 0;
}

static void ep_link(struct shm_ep *ep)
{
	struct shm_dev *dev = ep->dev;
	uint32_t b = shm_work_bit(ep->id);

	ep->next = dev->eps;
	dev->eps = ep;
	ep->bit_next = dev->by_bit[b];
	dev->by_bit[b] = ep;
	shm_work_again(dev, 0);
	if (++dev->neps >= SHM_WORK_MIN && !dev->work_on) {
		/*
		 * Peers mark work from now on; the fence orders this before
		 * the full pass's loads (see shm_work_mark). Once on, it
		 * stays on.
		 */
		atomic_store(&dev->seg->work_on, 1);
		atomic_thread_fence(memory_order_seq_cst);
		dev->work_on = true;
	}
}

static void ep_unlink(struct shm_ep *ep)
{
	struct shm_ep **p;

	if (ep->watched)
		shm_unwatch(ep->dev, ep);
	for (p = &ep->dev->by_bit[shm_work_bit(ep->id)]; *p;
	     p = &(*p)->bit_next)
		if (*p == ep) {
			*p = ep->bit_next;
			break;
		}
	for (p = &ep->dev->eps; *p; p = &(*p)->next)
		if (*p == ep) {
			*p = ep->next;
			ep->dev->neps--;
			return;
		}
}

static void ep_free(struct shm_ep *ep)
{
	struct shm_pend *p;

	while ((p = ep->pend)) {
		ep->pend = p->next;
		free(p);
	}
	if (ep->pidfd >= 0)
		close(ep->pidfd); /* leaves the epoll set with it */
	if (ep->peer_seg)
		munmap(ep->peer_seg, sizeof(*ep->peer_seg));
	shm_mem_unmap(ep);
	if (ep->cseg)
		munmap(ep->cseg, sizeof(*ep->cseg));
	if (ep->side == 0 && ep->cseg_name[0])
		shm_unlink(ep->cseg_name); /* gone already once accepted */
	free(ep->rq_wr_id);
	free(ep);
}

static struct shm_ep *ep_find(struct shm_dev *dev, uint32_t id, pid_t pid)
{
	struct shm_ep *ep;

	for (ep = dev->eps; ep; ep = ep->next)
		if (ep->id == id && ep->peer_pid == pid)
			return ep;
	return NULL;
}

static void ev_push(struct shm_ep *ep, int type, int status)
{
	struct rcx_cm_event ev = { .type = (uint8_t)type, .status = status };

	ev.ep = (struct rcx_ep *)ep;
	ev.ep_ctx = ep->attr.ep_ctx;
	shm_cm_push(ep->dev, &ev);
}

static int msg_to_peer(struct shm_ep *ep, uint32_t type)
{
	struct shm_msg m = {
		.type = type,
		.pid = ep->dev->pid,
		.dev = ep->dev->num,
		.src_ep = ep->id,
		.dst_ep = ep->peer_ep,
	};

	return shm_send_msg(ep->dev, &ep->peer_addr, ep->peer_addr_len, &m,
			    ep->peer_seg);
}

int shm_ep_connect(struct rcx_dev *d, const char *addr,
		   const struct rcx_ep_attr *attr, const void *pdata,
		   size_t pdata_len, struct rcx_ep **out)
{
	struct shm_dev *dev = to_sdev(d);
	struct shm_msg m = { .type = SHM_MSG_CONNECT };
	struct shm_ep *ep;
	pid_t pid;
	uint32_t pdev;
	int ret;

	if (!addr || pdata_len > SHM_PDATA || (pdata_len && !pdata))
		return -EINVAL;
	ret = addr_parse(addr, &pid, &pdev);
	if (ret)
		return ret;
	ep = ep_new(dev, attr);
	if (!ep)
		return -EINVAL;
	ep->side = 0;
	ep->state = SHM_EP_CONNECTING;
	shm_seg_name(ep->cseg_name, sizeof(ep->cseg_name), dev->pid, dev->num,
		     ".%u", ep->id);
	ep->cseg = shm_map(ep->cseg_name, sizeof(*ep->cseg), true);
	if (!ep->cseg) {
		ret = -errno;
		ep->cseg_name[0] = 0;
		ep_free(ep);
		return ret;
	}
	ep->cseg->magic = SHM_MAGIC;
	ep->tx = &ep->cseg->dir[0];
	ep->rx = &ep->cseg->dir[1];
	if (attr->on_ready) {
		ret = attr->on_ready((struct rcx_ep *)ep, attr->ep_ctx);
		if (ret) {
			ep_free(ep);
			return ret;
		}
	}
	ep_link(ep);
	/* a peer that is not there is an error event, as with rdma_cm */
	ret = ep_peer(ep, pid, pdev);
	if (!ret) {
		m.pid = dev->pid;
		m.dev = dev->num;
		m.src_ep = ep->id;
		m.pdata_len = (uint32_t)pdata_len;
		if (pdata_len)
			memcpy(m.pdata, pdata, pdata_len);
		snprintf(m.seg, sizeof(m.seg), "%s", ep->cseg_name);
		ret = shm_send_msg(dev, &ep->peer_addr, ep->peer_addr_len, &m,
				   ep->peer_seg);
	}
	if (ret) {
		/* a socket that refuses: closed by a context that is
		 * closing (it left), or by the death of its process */
		if (ret == -ECONNREFUSED && peer_exited(ep))
			ret = -ESRCH;
		/* what was posted (the receive ring) flushes, as on a QP
		 * that never connects */
		shm_ep_fail(ep);
		ev_push(ep, RCX_CM_ERROR, ret);
	}
	*out = (struct rcx_ep *)ep;
	return 0;
}

int shm_ep_accept(struct rcx_dev *d, struct rcx_conn_req *r,
		  const struct rcx_ep_attr *attr, struct rcx_ep **out)
{
	struct shm_dev *dev = to_sdev(d);
	struct shm_conn_req *req = (struct shm_conn_req *)r;
	struct shm_ep *ep;
	int ret;

	ep = ep_new(dev, attr);
	if (!ep)
		return -EINVAL;
	ep->side = 1;
	shm_set_peer_ep(ep, req->msg.src_ep);
	req->msg.seg[sizeof(req->msg.seg) - 1] = 0;
	ep->cseg = shm_map(req->msg.seg, sizeof(*ep->cseg), false);
	if (!ep->cseg) {
		ret = -ECONNABORTED;
		goto err;
	}
	/* mapped by both now: nothing is left behind if either dies */
	shm_unlink(req->msg.seg);
	ret = -ECONNABORTED;
	if (ep->cseg->magic != SHM_MAGIC)
		goto err;
	ep->tx = &ep->cseg->dir[1];
	ep->rx = &ep->cseg->dir[0];
	ret = ep_peer(ep, req->msg.pid, req->msg.dev);
	if (ret)
		goto err;
	if (attr->on_ready) {
		ret = attr->on_ready((struct rcx_ep *)ep, attr->ep_ctx);
		if (ret)
			goto err;
	}
	ep->state = SHM_EP_ACCEPTING;
	ret = msg_to_peer(ep, SHM_MSG_ACCEPT);
	if (ret)
		goto err;
	ep_link(ep);
	free(req);
	*out = (struct rcx_ep *)ep;
	return 0;
err:
	ep_free(ep);
	return ret;
}

int shm_ep_reject(struct rcx_dev *d, struct rcx_conn_req *r)
{
	struct shm_conn_req *req = (struct shm_conn_req *)r;
	struct shm_msg m = {
		.type = SHM_MSG_REJECT,
		.pid = to_sdev(d)->pid,
		.dev = to_sdev(d)->num,
		.dst_ep = req->msg.src_ep,
	};
	struct shm_dev_seg *seg;
	struct sockaddr_un to;
	socklen_t to_len;
	char name[48];

	/* the connector's segment, for its doorbell (not kept: a refused
	 * connection needs it no more) */
	dev_seg_name(req->msg.pid, req->msg.dev, name, sizeof(name));
	seg = shm_map(name, sizeof(*seg), false);
	shm_name_addr(req->msg.pid, req->msg.dev, false, &to, &to_len);
	shm_send_msg(to_sdev(d), &to, to_len, &m, seg);
	if (seg)
		munmap(seg, sizeof(*seg));
	free(req);
	return 0;
}

/* Both ends see DISCONNECTED (as with rdma_disconnect); WRs flush. */
int shm_ep_disconnect(struct rcx_ep *e)
{
	struct shm_ep *ep = to_sep(e);

	if (ep->state != SHM_EP_CONNECTED)
		return -ENOTCONN;
	msg_to_peer(ep, SHM_MSG_DISC);
	shm_ep_fail(ep);
	ep->disc_event = true;
	ev_push(ep, RCX_CM_DISCONNECTED, -ECONNRESET);
	return 0;
}

void shm_ep_destroy(struct rcx_ep *e)
{
	struct shm_ep *ep = to_sep(e);
	struct shm_dev *dev;
	struct shm_cm_node **p, *n;
	uint32_t i;

	if (!ep)
		return;
	dev = ep->dev;
	if (ep->peer_seg && ep->state != SHM_EP_ERROR)
		msg_to_peer(ep, SHM_MSG_DISC);
	if (ep->cseg) /* the peer's next operation fails */
		shm_ep_kill(ep);
	ep_unlink(ep);
	/* completions and events still queued lose their endpoint */
	for (i = dev->cq_head; i != dev->cq_tail; i++)
		if (dev->cq[i & (dev->cq_cap - 1)].ep == ep)
			dev->cq[i & (dev->cq_cap - 1)].c.ep_ctx = NULL;
	for (p = &dev->cm_head; (n = *p);) {
		if (n->ev.ep == e) {
			*p = n->next;
			if (dev->cm_tail == n)
				dev->cm_tail = NULL;
			free(n);
			continue;
		}
		p = &n->next;
	}
	if (!dev->cm_tail)
		for (n = dev->cm_head; n; n = n->next)
			dev->cm_tail = n;
	ep_free(ep);
}

void shm_cm_msg(struct shm_dev *dev, const struct shm_msg *m)
{
	struct shm_conn_req *req;
	struct rcx_cm_event ev = { .type = RCX_CM_CONNECT_REQUEST };
	struct shm_ep *ep;

	/* an endpoint's state may change: the next pass looks at all */
	shm_work_again(dev, 0);
	if (m->type == SHM_MSG_CONNECT) {
		if (m->pdata_len > SHM_PDATA || m->pid <= 0)
			return;
		req = malloc(sizeof(*req));
		if (!req)
			return; /* the connector times out */
		req->pub.ops = &rcx__shm_ops;
		req->msg = *m;
		ev.req = (struct rcx_conn_req *)req;
		ev.pdata_len = (uint8_t)m->pdata_len;
		memcpy(ev.pdata, m->pdata, m->pdata_len);
		shm_cm_push(dev, &ev);
		return;
	}
	ep = ep_find(dev, m->dst_ep, m->pid);
	if (!ep)
		return;
	switch (m->type) {
	case SHM_MSG_ACCEPT:
		if (ep->state != SHM_EP_CONNECTING)
			return;
		shm_set_peer_ep(ep, m->src_ep);
		ep->state = SHM_EP_CONNECTED;
		msg_to_peer(ep, SHM_MSG_RTU);
		ev_push(ep, RCX_CM_ESTABLISHED, 0);
		break;
	case SHM_MSG_REJECT:
		if (ep->state != SHM_EP_CONNECTING)
			return;
		shm_ep_fail(ep);
		ev_push(ep, RCX_CM_ERROR, -ECONNREFUSED);
		break;
	case SHM_MSG_RTU:
		if (ep->state != SHM_EP_ACCEPTING || m->src_ep != ep->peer_ep)
			return;
		ep->state = SHM_EP_CONNECTED;
		ev_push(ep, RCX_CM_ESTABLISHED, 0);
		break;
	case SHM_MSG_DISC:
		if (ep->disc_event || m->src_ep != ep->peer_ep)
			return;
		shm_ep_fail(ep);
		ep->disc_event = true;
		ev_push(ep, RCX_CM_DISCONNECTED, -ECONNRESET);
		break;
	}
}

static bool seg_exists(const char *name)
{
	int fd = shm_open(name, O_RDONLY, 0);

	if (fd < 0)
		return errno != ENOENT;
	close(fd);
	return true;
}

/* ep's peer went away: fail it, say so, remove what it left behind. */
static void peer_gone(struct shm_dev *dev, struct shm_ep *ep)
{
	char name[48];
	bool connecting =
		ep->state == SHM_EP_CONNECTING || ep->state == SHM_EP_ACCEPTING;

	if (ep->pidfd >= 0)
		epoll_ctl(dev->epfd, EPOLL_CTL_DEL, ep->pidfd, NULL);
	shm_ep_fail(ep);
	ep->disc_event = true;
	/* a context that closed removed its segment: it left (what it said
	 * before, if anything, is no answer to a connect); one whose
	 * segment outlived it died */
	dev_seg_name(ep->peer_pid, ep->peer_dev, name, sizeof(name));
	ev_push(ep, connecting ? RCX_CM_ERROR : RCX_CM_DISCONNECTED,
		!connecting	   ? -ECONNRESET
		: seg_exists(name) ? -ESRCH
				   : -EHOSTDOWN);
	/* it cannot remove its segment any more: do it for it */
	shm_unlink(name);
}

static bool watched(const struct shm_ep *ep)
{
	return !ep->disc_event && ep->peer_pid > 0;
}

/*
 * A peer whose pidfd is readable has exited: one poll() looks at them
 * all. Without pidfds (ENOSYS) the peer's pid is probed instead (a
 * blocked wait is then not woken by the exit itself).
 */
void shm_check_peers(struct shm_dev *dev)
{
	struct shm_ep *ep, *next;
	uint32_t n = 0, i;

	for (ep = dev->eps; ep; ep = ep->next)
		n += watched(ep) && ep->pidfd >= 0;
	if (n > dev->pfd_cap) {
		struct pollfd *p = realloc(dev->pfd, n * sizeof(*p));

		if (!p)
			return; /* looked at again next time */
		dev->pfd = p;
		dev->pfd_cap = n;
	}
	i = 0;
	for (ep = dev->eps; ep; ep = ep->next)
		if (watched(ep) && ep->pidfd >= 0)
			dev->pfd[i++] = (struct pollfd){ .fd = ep->pidfd,
							 .events = POLLIN };
	if (n && poll(dev->pfd, n, 0) <= 0)
		n = 0; /* nobody left: only the pid probes below */
	i = 0;
	for (ep = dev->eps; ep; ep = next) {
		next = ep->next; /* peer_gone leaves the list alone */
		if (!watched(ep))
			continue;
		if (ep->pidfd >= 0) {
			if (n && dev->pfd[i++].revents)
				peer_gone(dev, ep);
		} else if (kill(ep->peer_pid, 0) && errno == ESRCH) {
			peer_gone(dev, ep);
		}
	}
}

int shm_cm_poll(struct rcx_dev *d, struct rcx_cm_event *ev)
{
	struct shm_dev *dev = to_sdev(d);
	struct shm_cm_node *n;
	int ret;

	uint32_t b;
	long long now;
	bool look;

	/*
	 * No system call unless there is something to take: the socket is
	 * read when the doorbell moved (and when a wait goes to sleep), the
	 * peers looked at once a tick.
	 */
	if (dev->out)
		shm_flush_out(dev);
	now = shm_coarse_ms();
	look = dev->live_now || now - dev->live_ms >= SHM_LIVE_MS;
	b = atomic_load_explicit(&dev->seg->cm_bell, memory_order_acquire);
	if (b != dev->cm_seen || dev->live_now) {
		dev->cm_seen = b;
		ret = shm_drain_sock(dev);
		if (ret < 0)
			return ret;
	}
	if (look) {
		dev->live_now = false;
		dev->live_ms = now;
		shm_check_peers(dev);
	}
	n = dev->cm_head;
	if (!n)
		return 0;
	dev->cm_head = n->next;
	if (!dev->cm_head)
		dev->cm_tail = NULL;
	*ev = n->ev;
	free(n);
	return 1;
}

/*
 * Segments of processes that died without closing (kill -9 of a whole
 * job leaves nobody to notice): removed when a device opens. Only those
 * of our PID namespace: a pid of another one (a container or a Slurm
 * step sharing /dev/shm) means nothing here, and its process may be
 * alive.
 */
void shm_sweep(void)
{
	DIR *d = opendir("/dev/shm");
	unsigned long ns = shm_pid_ns(), theirs;
	struct dirent *e;
	char path[300];
	int pid;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (sscanf(e->d_name, "rcx-shm.%lu-%d.", &theirs, &pid) == 2 &&
		    theirs == ns && pid > 0 && kill(pid, 0) && errno == ESRCH) {
			snprintf(path, sizeof(path), "/%s", e->d_name);
			shm_unlink(path);
		}
	closedir(d);
}
