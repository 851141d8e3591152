/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory provider: device, registrations, completion queue,
 * wakeups (see shm.h for the model).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include "shm.h"

static _Atomic uint32_t dev_count;

void shm_name_addr(pid_t pid, uint32_t dev, bool kick, struct sockaddr_un *a,
		   socklen_t *len)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* abstract name: sun_path[0] is 0, the name is not terminated */
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
		     "rcx-shm.%d.%u%s", (int)pid, dev, kick ? ".k" : "");
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

unsigned long shm_pid_ns(void)
{
	static unsigned long ns;
	struct stat st;

	if (!ns && !stat("/proc/self/ns/pid", &st))
		ns = (unsigned long)st.st_ino;
	return ns;
}

void shm_seg_name(char *buf, size_t len, pid_t pid, uint32_t dev,
		  const char *suffix, uint32_t v)
{
	int n = snprintf(buf, len, "/rcx-shm.%lu-%d.%u", shm_pid_ns(), (int)pid,
			 dev);

	if (suffix && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, suffix, v);
}

/* Map a named segment of len bytes; create: new, zeroed, owner only. */
void *shm_map(const char *name, size_t len, bool create)
{
	int fd, flags = create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR;
	void *p;

	fd = shm_open(name, flags | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (create && ftruncate(fd, (off_t)len)) {
		close(fd);
		shm_unlink(name);
		return NULL;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		if (create)
			shm_unlink(name);
		return NULL;
	}
	return p;
}

long long shm_coarse_ms(void)
{
	struct timespec ts;

	/* the coarse clock is read without a system call, whatever the
	 * clock source */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void shm_unwatch(struct shm_dev *dev, struct shm_ep *ep)
{
	uint32_t i;

	if (!ep->watched)
		return;
	i = ep->wslot;
	dev->nwatch--;
	if (i != dev->nwatch) {
		dev->watch[i] = dev->watch[dev->nwatch];
		dev->wseq[i] = dev->wseq[dev->nwatch];
		dev->wwant[i] = dev->wwant[dev->nwatch];
		dev->watch[i].ep->wslot = i;
	}
	shm_watch_none(dev, dev->nwatch);
	ep->watched = false;
	atomic_store_explicit(&ep->cseg->watch[ep->side].on, 0,
			      memory_order_relaxed);
	shm_work_again(dev, shm_work_bit(ep->id));
}

void shm_watch_expire(struct shm_dev *dev)
{
	struct shm_ep *ep;
	uint32_t i;
	bool gone = false;

	for (i = 0; i < dev->nwatch;) {
		ep = dev->watch[i].ep;
		if (dev->wpass - ep->watch_pass >= SHM_WATCH_IDLE) {
			shm_unwatch(dev, ep); /* dev->watch[i]: another */
			gone = true;
			continue;
		}
		i++;
	}
	/* before the next pass's loads (see SHM_WATCH) */
	if (gone)
		atomic_thread_fence(memory_order_seq_cst);
}

void shm_idle(struct shm_dev *dev)
{
	const struct shm_ep *ep;
	uint32_t cpu;
	int c;

	/* the watch's clock: these empty polls (see shm_watch_expire) */
	if (dev->nwatch) {
		dev->wpass += SHM_YIELD_EVERY;
		shm_watch_expire(dev);
	}
	if (dev->pause) {
		dev->pause -= dev->pause < SHM_YIELD_EVERY ? dev->pause
							   : SHM_YIELD_EVERY;
		return;
	}
	/* rseq or the vDSO: no system call */
	c = sched_getcpu();
	if (c < 0)
		return;
	cpu = (uint32_t)c + 1;
	if (atomic_load_explicit(&dev->seg->idle_cpu, memory_order_relaxed) !=
	    cpu)
		atomic_store_explicit(&dev->seg->idle_cpu, cpu,
				      memory_order_relaxed);
	for (ep = dev->eps; ep; ep = ep->next) {
		if (!ep->peer_seg || ep->peer_pid == dev->pid ||
		    atomic_load_explicit(&ep->peer_seg->idle_cpu,
					 memory_order_relaxed) != cpu)
			continue;
		/* it waits behind us: it gets the CPU now, not at the tick */
		sched_yield();
		if (++dev->yields == dev->streak) {
			dev->yields = 0;
			dev->pause = SHM_YIELD_PAUSE;
			if (dev->streak < SHM_YIELD_STREAK_MAX)
				dev->streak *= 2;
		}
		return;
	}
}

/*
 * The doorbell rings after the message is in the socket: a receiver that
 * sees it move finds the message there.
 */
static void bell(struct shm_dev_seg *to_seg)
{
	if (to_seg)
		atomic_fetch_add(&to_seg->cm_bell, 1);
}

int shm_send_msg(struct shm_dev *dev, const struct sockaddr_un *to,
		 socklen_t to_len, const struct shm_msg *m,
		 struct shm_dev_seg *to_seg)
{
	struct shm_out *o;

	if (!dev->out && sendto(dev->sock, m, sizeof(*m), MSG_DONTWAIT,
				(const struct sockaddr *)to,
				to_len) == (ssize_t)sizeof(*m)) {
		bell(to_seg);
		return 0;
	}
	if (!dev->out && errno != EAGAIN && errno != ENOBUFS)
		return errno == ENOENT ? -ECONNREFUSED : -errno;
	/* the peer's socket is full: keep it, in order, for cm_poll */
	o = malloc(sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->next = NULL;
	o->to = *to;
	o->to_len = to_len;
	o->msg = *m;
	if (!dev->out) {
		dev->out = o;
	} else {
		struct shm_out *t = dev->out;

		while (t->next)
			t = t->next;
		t->next = o;
	}
	return 0;
}

/*
 * Ring the doorbell of the device whose socket is at to: its segment has
 * the socket's name ("rcx-shm.PID.N"). Mapped for the moment only: a
 * message that met a full socket is rare.
 */
static void bell_at(const struct sockaddr_un *to, socklen_t to_len)
{
	size_t n = to_len - offsetof(struct sockaddr_un, sun_path) - 1;
	struct shm_dev_seg *seg;
	char name[48];

	if (n + 2 > sizeof(name))
		return;
	name[0] = '/';
	memcpy(name + 1, to->sun_path + 1, n);
	name[n + 1] = 0;
	seg = shm_map(name, sizeof(*seg), false);
	if (!seg)
		return; /* gone: the message is lost with it */
	bell(seg);
	munmap(seg, sizeof(*seg));
}

/* Send what met a full socket; a peer that went away loses it. */
void shm_flush_out(struct shm_dev *dev)
{
	struct shm_out *o;
	ssize_t r;

	while ((o = dev->out)) {
		r = sendto(dev->sock, &o->msg, sizeof(o->msg), MSG_DONTWAIT,
			   (const struct sockaddr *)&o->to, o->to_len);
		if (r < 0 && (errno == EAGAIN || errno == ENOBUFS))
			return;
		if (r >= 0)
			bell_at(&o->to, o->to_len);
		dev->out = o->next;
		free(o);
	}
}

/*
 * Wake a device that armed (its "armed" word set, it may be about to
 * sleep). The store before this (an entry, a completion) and the load of
 * armed are ordered by the seq_cst exchange against the sleeper's store
 * of armed and its poll after it: either it sees our work or we see it
 * armed.
 */
void shm_kick(struct shm_dev *dev, struct shm_dev_seg *seg,
	      const struct sockaddr_un *to, socklen_t to_len)
{
	atomic_thread_fence(memory_order_seq_cst);
	shm_kick_fenced(dev, seg, to, to_len);
}

void shm_kick_fenced(struct shm_dev *dev, struct shm_dev_seg *seg,
		     const struct sockaddr_un *to, socklen_t to_len)
{
	static const struct shm_msg kick = { .type = SHM_MSG_KICK };

	if (!atomic_load_explicit(&seg->armed, memory_order_relaxed) ||
	    !atomic_exchange(&seg->armed, 0))
		return;
	/* a full socket is readable already: the kick is not needed */
	sendto(dev->ksock, &kick, sizeof(kick), MSG_DONTWAIT,
	       (const struct sockaddr *)to, to_len);
}

int shm_cq_push(struct shm_dev *dev, const struct shm_ep *ep,
		const struct rcx_cqe *c)
{
	int ret = shm_cq_add(dev, ep, c);

	shm_cq_kick(dev);
	return ret;
}

void shm_cq_kick_now(struct shm_dev *dev)
{
	dev->cq_added = false;
	/* no fence: see shm_cq_add in shm.h */
	shm_kick_fenced(dev, dev->seg, &dev->kaddr, dev->kaddr_len);
}

int shm_cq_grow(struct shm_dev *dev)
{
	uint32_t cap = dev->cq_cap * 2, i;
	struct shm_cq_ent *n = malloc(cap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (i = 0; i < dev->cq_cap; i++)
		n[i] = dev->cq[(dev->cq_head + i) & (dev->cq_cap - 1)];
	free(dev->cq);
	dev->cq = n;
	dev->cq_tail = dev->cq_cap;
	dev->cq_head = 0;
	dev->cq_cap = cap;
	return 0;
}

int shm_cq_add(struct shm_dev *dev, const struct shm_ep *ep,
	       const struct rcx_cqe *c)
{
	struct rcx_cqe *q = shm_cq_next(dev, ep);

	if (!q)
		return -ENOMEM;
	*q = *c;
	return 0;
}

void shm_cm_push(struct shm_dev *dev, const struct rcx_cm_event *ev)
{
	struct shm_cm_node *n = malloc(sizeof(*n));

	if (!n)
		return; /* the peer's failure is found again by its pidfd */
	n->next = NULL;
	n->ev = *ev;
	if (dev->cm_tail)
		dev->cm_tail->next = n;
	else
		dev->cm_head = n;
	dev->cm_tail = n;
	shm_kick(dev, dev->seg, &dev->kaddr, dev->kaddr_len);
}

static int dev_list(char (*names)[64], int max)
{
	if (max < 1)
		return 0;
	snprintf(names[0], 64, "shm");
	return 1;
}

static void dev_close(struct rcx_dev *d)
{
	struct shm_dev *dev = to_sdev(d);
	struct shm_cm_node *n;
	struct shm_out *o;

	if (!dev)
		return;
	while (dev->eps)
		shm_ep_destroy((struct rcx_ep *)dev->eps);
	while ((n = dev->cm_head)) {
		dev->cm_head = n->next;
		free(n->ev.req);
		free(n);
	}
	while ((o = dev->out)) {
		dev->out = o->next;
		free(o);
	}
	shm_mem_close(dev);
	free(dev->pfd);
	if (dev->seg) {
		munmap(dev->seg, sizeof(*dev->seg));
		shm_unlink(dev->seg_name);
	}
	if (dev->sock >= 0)
		close(dev->sock);
	if (dev->ksock >= 0)
		close(dev->ksock);
	if (dev->epfd >= 0)
		close(dev->epfd);
	free(dev->cq);
	free(dev);
}

static int dev_open(const struct rcx_dev_attr *attr, struct rcx_dev **out)
{
	struct shm_dev *dev;
	int ret = -ENOMEM;
	uint32_t i;

	if (attr && attr->name && *attr->name && strcmp(attr->name, "shm"))
		return -ENODEV;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->sock = dev->ksock = dev->epfd = -1;
	dev->pid = getpid();
	dev->num = atomic_fetch_add(&dev_count, 1);
	dev->cq_cap = SHM_CQ_MIN;
	for (i = 0; i < SHM_WATCH; i++)
		shm_watch_none(dev, i);
	dev->streak = SHM_YIELD_STREAK;
	if (attr && attr->cq_size > SHM_CQ_MIN)
		while (dev->cq_cap < (uint32_t)attr->cq_size)
			dev->cq_cap *= 2;
	dev->cq = malloc(dev->cq_cap * sizeof(*dev->cq));
	if (!dev->cq)
		goto err;
	/*
	 * Peers read and write our memory with process_vm_readv/writev,
	 * which needs ptrace access: under Yama's ptrace_scope 1 only
	 * ancestors have it unless we say so. (Scope 2 or 3 refuses it:
	 * transfers then fail with -EPERM.)
	 */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	if (dev->num == 0)
		shm_sweep();
	shm_seg_name(dev->seg_name, sizeof(dev->seg_name), dev->pid, dev->num,
		     NULL, 0);
	dev->seg = shm_map(dev->seg_name, sizeof(*dev->seg), true);
	if (!dev->seg) {
		ret = -errno;
		goto err;
	}
	dev->seg->magic = SHM_MAGIC;
	dev->seg->pid = dev->pid;
	dev->sock =
		socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	dev->ksock =
		socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (dev->sock < 0 || dev->ksock < 0)
		goto err_errno;
	shm_name_addr(dev->pid, dev->num, false, &dev->addr, &dev->addr_len);
	shm_name_addr(dev->pid, dev->num, true, &dev->kaddr, &dev->kaddr_len);
	if (bind(dev->sock, (struct sockaddr *)&dev->addr, dev->addr_len) ||
	    bind(dev->ksock, (struct sockaddr *)&dev->kaddr, dev->kaddr_len))
		goto err_errno;
	dev->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (dev->epfd < 0)
		goto err_errno;
	if ((ret = rcx__epoll_add(dev->epfd, dev->sock)) ||
	    (ret = rcx__epoll_add(dev->epfd, dev->ksock)))
		goto err;
	dev->next_ep = 1;
	*out = (struct rcx_dev *)dev;
	return 0;
err_errno:
	ret = -errno;
err:
	dev_close((struct rcx_dev *)dev);
	return ret;
}

static int dev_query(struct rcx_dev *d, struct rcx_dev_info *info)
{
	struct shm_dev *dev = to_sdev(d);

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "shm");
	info->max_mr_size = (uint64_t)1 << 47;
	info->max_qp_wr = SHM_MAX_WR;
	info->max_cqe = 1 << 22;
	info->cq_size = dev->cq_cap; /* grows when full: nothing reserved */
	info->max_inline = SHM_INLINE;
	info->max_rd_atomic = 16;
	info->atomics = 1;
	info->ordered = 1; /* one executor at a time, in order */
	info->port_active = 1;
	snprintf(info->link_layer, sizeof(info->link_layer), "shared memory");
	info->mtu = SHM_INLINE;
	info->max_msg_sz = UINT32_MAX; /* a WR's length */
	snprintf(info->addr, sizeof(info->addr), "shm:%d:%u", (int)dev->pid,
		 dev->num);
	return 0;
}

/*
 * A registration is an entry in the device segment's table that peers
 * check before they touch our memory. Key k lives in one of the
 * SHM_MR_PROBE slots from k & (SHM_MR_MAX - 1) on (so keys chosen by
 * another provider fit too); a freed entry's key is 0. Keys of our own
 * are (generation << 13) | index, never 0, so an old key never matches
 * again until its generation comes round (2^19 registrations of that
 * entry).
 */
static struct shm_mr_ent *mr_find(struct shm_dev_seg *seg, uint32_t key)
{
	struct shm_mr_ent *e;
	uint32_t i;

	for (i = 0; i < SHM_MR_PROBE; i++) {
		e = &seg->mr[(key + i) & (SHM_MR_MAX - 1)];
		if (atomic_load_explicit(&e->key, memory_order_acquire) == key)
			return e;
	}
	return NULL;
}

static int mr_check(void *addr, size_t len, unsigned int access)
{
	if (access & ~(RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_READ |
		       RCX_ACCESS_REMOTE_WRITE | RCX_ACCESS_REMOTE_ATOMIC))
		return -EINVAL;
	return !addr && len ? -EFAULT : 0;
}

/* Fill slot idx under key and hand out the registration. */
static int mr_set(struct shm_dev *dev, uint32_t idx, uint32_t key, void *addr,
		  size_t len, unsigned int access, struct rcx_mr **out)
{
	struct shm_mr *m = malloc(sizeof(*m));
	struct shm_mem *s = shm_mem_find(dev, addr, len);

	if (!m)
		return -ENOMEM;
	dev->seg->mr[idx].addr = (uint64_t)(uintptr_t)addr;
	dev->seg->mr[idx].len = len;
	dev->seg->mr[idx].access = access;
	dev->seg->mr[idx].mem = s ? s->id : 0;
	dev->seg->mr[idx].mem_base = s ? (uint64_t)(uintptr_t)s->base : 0;
	dev->seg->mr[idx].mem_len = s ? s->len : 0;
	/* before the key: a peer that sees the key sees the new gen */
	atomic_fetch_add_explicit(&dev->seg->mr[idx].gen, 1,
				  memory_order_relaxed);
	atomic_store_explicit(&dev->seg->mr[idx].key, key,
			      memory_order_release);
	dev->mr_changes++;
	m->dev = dev;
	m->idx = idx;
	m->key = key;
	*out = (struct rcx_mr *)m;
	return 0;
}

static int mr_reg(struct rcx_dev *d, void *addr, size_t len,
		  unsigned int access, struct rcx_mr **out)
{
	struct shm_dev *dev = to_sdev(d);
	uint32_t i, idx, key;
	int ret = mr_check(addr, len, access);

	if (ret)
		return ret;
	for (i = 0; i < SHM_MR_MAX; i++) {
		idx = (dev->mr_next + i) % SHM_MR_MAX;
		if (!atomic_load_explicit(&dev->seg->mr[idx].key,
					  memory_order_relaxed))
			break;
	}
	if (i == SHM_MR_MAX)
		return -ENOMEM;
	/* the generation lives in the caller-visible key only; a key given
	 * by mr_reg_keyed may hold it already */
	do {
		dev->mr_gen = dev->mr_gen % 0x7ffffu + 1;
		key = dev->mr_gen << 13 | idx;
	} while (mr_find(dev->seg, key));
	ret = mr_set(dev, idx, key, addr, len, access, out);
	if (!ret)
		dev->mr_next = idx + 1;
	return ret;
}

/* lkey: our lkeys are our rkeys, and nobody checks them. */
static int mr_reg_keyed(struct rcx_dev *d, void *addr, size_t len,
			unsigned int access, uint32_t lkey, uint32_t rkey,
			struct rcx_mr **out)
{
	struct shm_dev *dev = to_sdev(d);
	uint32_t i, idx;
	int ret = mr_check(addr, len, access);

	(void)lkey;
	if (ret)
		return ret;
	if (!rkey)
		return -EINVAL;
	if (mr_find(dev->seg, rkey))
		return -EEXIST;
	for (i = 0; i < SHM_MR_PROBE; i++) {
		idx = (rkey + i) & (SHM_MR_MAX - 1);
		if (!atomic_load_explicit(&dev->seg->mr[idx].key,
					  memory_order_relaxed))
			return mr_set(dev, idx, rkey, addr, len, access, out);
	}
	return -ENOMEM;
}

static int mr_dereg(struct rcx_mr *mr)
{
	struct shm_mr *m = (struct shm_mr *)mr;

	atomic_store_explicit(&m->dev->seg->mr[m->idx].key, 0,
			      memory_order_release);
	m->dev->mr_changes++;
	free(m);
	return 0;
}

static uint32_t mr_key(const struct rcx_mr *mr)
{
	return ((const struct shm_mr *)mr)->key;
}

static int event_fd(struct rcx_dev *d)
{
	return to_sdev(d)->epfd;
}

static int watch_fd(struct rcx_dev *d, int fd)
{
	return rcx__epoll_add(to_sdev(d)->epfd, fd);
}

/*
 * Connection events already taken off the socket (by ack) keep the event
 * fd readable, as a pending rdma_cm event keeps its channel readable: a
 * kick to ourselves stands for them.
 */
static int arm(struct rcx_dev *d)
{
	struct shm_dev *dev = to_sdev(d);

	atomic_store(&dev->seg->armed, 1);
	/*
	 * Asleep, it is queued behind nobody: no peer yields for it (and
	 * the poll before the sleep does not say otherwise: the count of
	 * empty polls starts again).
	 */
	dev->idle = 0;
	if (atomic_load_explicit(&dev->seg->idle_cpu, memory_order_relaxed))
		atomic_store_explicit(&dev->seg->idle_cpu, 0,
				      memory_order_relaxed);
	/*
	 * The poll before the sleep looks at every endpoint: what a peer did
	 * before it found us unarmed is in their words, ordered by the
	 * exchange on armed (shm_kick), whatever became of its mark.
	 */
	shm_work_again(dev, 0);
	if (dev->cm_head || dev->out)
		shm_kick(dev, dev->seg, &dev->kaddr, dev->kaddr_len);
	return 0;
}

/* Read key's registration in seg into *s: false, *s untouched, if none. */
static bool mr_read(struct shm_dev_seg *seg, uint32_t key,
		    struct shm_mr_seen *s)
{
	struct shm_mr_ent *e = key ? mr_find(seg, key) : NULL;
	struct shm_mr_seen r;

	if (!e)
		return false;
	r.e = e;
	r.key = key;
	r.gen = atomic_load_explicit(&e->gen, memory_order_relaxed);
	r.addr = e->addr;
	r.len = e->len;
	r.access = e->access;
	r.ref.id = e->mem;
	r.ref.base = e->mem_base;
	r.ref.len = e->mem_len;
	/* the content only is new: shm_own_key_ok's count stays */
	r.changes = s->changes;
	/* still the same registration after the reads (seqlock-like) */
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&e->key, memory_order_relaxed) != key ||
	    atomic_load_explicit(&e->gen, memory_order_relaxed) != r.gen)
		return false;
	*s = r;
	return true;
}

static bool mr_covers(const struct shm_mr_seen *s, uint64_t addr, uint64_t len,
		      unsigned int access)
{
	return (s->access & access) == access && addr >= s->addr &&
	       len <= s->len && addr - s->addr <= s->len - len;
}

bool shm_mr_look(struct shm_mr_seen *seen, struct shm_dev_seg *seg,
		 uint32_t key, uint64_t addr, uint64_t len, unsigned int access,
		 struct shm_mem_ref *ref)
{
	if (!mr_read(seg, key, seen)) {
		seen->e = NULL;
		return false;
	}
	*ref = seen->ref;
	return mr_covers(seen, addr, len, access);
}

/* Take the connection messages off their socket. */
int shm_drain_sock(struct shm_dev *dev)
{
	struct shm_msg m;
	ssize_t r;
	int got = 0;

	for (;;) {
		r = recv(dev->sock, &m, sizeof(m), MSG_DONTWAIT);
		if (r < 0)
			return errno == EAGAIN ? got : -errno;
		got++;
		if (r == (ssize_t)sizeof(m) && m.type != SHM_MSG_KICK)
			shm_cm_msg(dev, &m);
	}
}

/*
 * Drain the wakeups; connection messages wait for cm_poll. A wait is
 * about to sleep, or woke up (perhaps for a pidfd): the next cm_poll
 * looks at the peers.
 */
static int ack(struct rcx_dev *d)
{
	struct shm_dev *dev = to_sdev(d);
	struct shm_msg m;
	int got = 0;

	dev->live_now = true;
	/* a wait sleeps, or woke: its next pass looks at every endpoint */
	shm_work_again(dev, 0);
	while (recv(dev->ksock, &m, sizeof(m), MSG_DONTWAIT) >= 0)
		got++;
	return errno == EAGAIN ? got : -errno;
}

const struct rcx_provider_ops rcx__shm_ops = {
	.name = "shm",
	/* a WRITE runs as a store by a process that kicks an armed peer */
	.caps = RCX_PROV_WRITE_WAKES,
	.dev_list = dev_list,
	.dev_open = dev_open,
	.dev_close = dev_close,
	.dev_query = dev_query,
	.mr_reg = mr_reg,
	.mr_dereg = mr_dereg,
	.mr_reg_keyed = mr_reg_keyed,
	.mr_lkey = mr_key,
	.mr_rkey = mr_key,
	.listen = shm_listen,
	.ep_connect = shm_ep_connect,
	.ep_accept = shm_ep_accept,
	.ep_reject = shm_ep_reject,
	.peer_split = rcx__stub_peer_split,
	.ep_disconnect = shm_ep_disconnect,
	.ep_destroy = shm_ep_destroy,
	.ep_set_error = shm_ep_set_error,
	.ep_max_inline = shm_ep_max_inline,
	.ep_query = shm_ep_query,
	.pwr_create = shm_pwr_create,
	.pwr_destroy = shm_pwr_destroy,
	.pwr_post = shm_pwr_post,
	.pwr_post_recv = shm_pwr_post_recv,
	.pwr_post_list = shm_pwr_post_list,
	.cm_poll = shm_cm_poll,
	.post_send = shm_post_send,
	.ep_rma_now = shm_ep_rma_now,
	.post_recv = shm_post_recv,
	.cq_poll = shm_cq_poll,
	.cq_poll_min = shm_cq_poll,
	.cq_dispatch = shm_cq_dispatch,
	.cq_peek = shm_cq_peek,
	.pwr_direct = shm_pwr_direct,
	.event_fd = event_fd,
	.watch_fd = watch_fd,
	.arm = arm,
	.ack = ack,
	.mem_alloc = shm_mem_alloc,
	.mem_free = shm_mem_free,
	.ep_mem_map = shm_ep_mem_map,
	.mem_unmap = shm_mem_unmap_range,
};
