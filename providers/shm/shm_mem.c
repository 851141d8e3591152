/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory provider: memory peers map. A buffer the library
 * allocates through mem_alloc (a window of rcx_win_allocate, a channel's
 * control words) is a segment "/rcx-shm.NS-PID.DEV.mID"; a registration
 * inside one says so in the registration table, and a peer that reaches
 * it maps the segment once and then reads, writes and runs atomics on it
 * with plain loads and stores: no system call per operation. Other memory
 * is reached with process_vm_readv/writev (shm_ep.c). A caller that keeps
 * reaching one peer's memory (a window) maps its pages itself, once
 * (ep_mem_map): its copies then take no call into the provider at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "shm.h"

/*
 * fork(): a child gets the parent's registered memory as its own copy
 * (include/rcx/ctx.h), as the kernel gives it for a NIC's pages; a shared
 * mapping would let it write the parent's window. So the child replaces
 * each segment with a private copy. Every segment of the process is on
 * this list, under its lock (taken across the fork).
 */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;
static struct shm_mem *mem_all;

static void mem_prepare(void)
{
	pthread_mutex_lock(&mem_lock);
}

static void mem_parent(void)
{
	pthread_mutex_unlock(&mem_lock);
}

/* system calls and memcpy only: the child of a threaded parent */
static void mem_child(void)
{
	struct shm_mem *s;
	void *tmp;

	for (s = mem_all; s; s = s->all_next) {
		tmp = mmap(NULL, s->len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (tmp == MAP_FAILED)
			continue;
		memcpy(tmp, s->base, s->len);
		if (mmap(s->base, s->len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) != MAP_FAILED)
			memcpy(s->base, tmp, s->len);
		munmap(tmp, s->len);
	}
	pthread_mutex_unlock(&mem_lock);
}

static void mem_atfork(void)
{
	pthread_atfork(mem_prepare, mem_parent, mem_child);
}

static void mem_unlist(struct shm_mem *s)
{
	struct shm_mem **p;

	pthread_mutex_lock(&mem_lock);
	for (p = &mem_all; *p; p = &(*p)->all_next)
		if (*p == s) {
			*p = s->all_next;
			break;
		}
	pthread_mutex_unlock(&mem_lock);
}

void shm_mem_name(pid_t pid, uint32_t dev, uint32_t id, char *buf, size_t len)
{
	shm_seg_name(buf, len, pid, dev, ".m%u", id);
}

/* The segment of ours that holds [addr, addr+len), or NULL. */
struct shm_mem *shm_mem_find(struct shm_dev *dev, const void *addr, size_t len)
{
	struct shm_mem *s = dev->mem_hit;

	if (s && shm_mem_holds(s, addr, len))
		return s;
	for (s = dev->mems; s; s = s->next)
		if (shm_mem_holds(s, addr, len)) {
			dev->mem_hit = s;
			return s;
		}
	return NULL;
}

int shm_mem_alloc(struct rcx_dev *d, size_t len, void **out)
{
	struct shm_dev *dev = to_sdev(d);
	long pg = sysconf(_SC_PAGESIZE);
	struct shm_mem *s;
	char name[48];

	if (!len)
		len = 1;
	len = (len + (size_t)pg - 1) & ~((size_t)pg - 1);
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->id = ++dev->mem_next;
	s->len = len;
	shm_mem_name(dev->pid, dev->num, s->id, name, sizeof(name));
	/* new and zeroed; the name stays until mem_free for peers to map */
	s->base = shm_map(name, len, true);
	if (!s->base) {
		int ret = -errno;

		free(s);
		return ret ? ret : -ENOMEM;
	}
	s->next = dev->mems;
	dev->mems = s;
	pthread_once(&mem_once, mem_atfork);
	pthread_mutex_lock(&mem_lock);
	s->all_next = mem_all;
	mem_all = s;
	pthread_mutex_unlock(&mem_lock);
	*out = s->base;
	return 0;
}

int shm_mem_free(struct rcx_dev *d, void *addr)
{
	struct shm_dev *dev = to_sdev(d);
	struct shm_mem **p, *s;
	char name[48];

	for (p = &dev->mems; (s = *p); p = &s->next) {
		if (s->base != addr)
			continue;
		*p = s->next;
		if (dev->mem_hit == s)
			dev->mem_hit = NULL;
		mem_unlist(s);
		shm_mem_name(dev->pid, dev->num, s->id, name, sizeof(name));
		shm_unlink(name);
		munmap(s->base, s->len);
		free(s);
		return 0;
	}
	return -ENOENT; /* not ours: the caller's own allocation */
}

/*
 * The device closes: names go (nobody new maps them), the memory stays
 * mapped for whoever still holds a pointer into it.
 */
void shm_mem_close(struct shm_dev *dev)
{
	struct shm_mem *s;
	char name[48];

	dev->mem_hit = NULL;
	while ((s = dev->mems)) {
		dev->mems = s->next;
		mem_unlist(s);
		shm_mem_name(dev->pid, dev->num, s->id, name, sizeof(name));
		shm_unlink(name);
		free(s);
	}
}

/*
 * Where [raddr, raddr+len) of the peer's segment ref is mapped here, or
 * NULL (not a segment, or it cannot be mapped: gone already). The
 * caller checked the registration, so the range is inside the segment.
 */
void *shm_mem_peer_find(struct shm_ep *ep, const struct shm_mem_ref *ref,
			uint64_t raddr)
{
	struct shm_map *m;
	char name[48];
	uint32_t i;
	void *p;

	if (!ref->id)
		return NULL;
	for (i = 0; i < SHM_MAPS; i++) {
		m = &ep->maps[i];
		if (m->ptr && m->id == ref->id && m->base == ref->base) {
			ep->map_hit = i;
			return m->ptr + (raddr - m->base);
		}
	}
	shm_mem_name(ep->peer_pid, ep->peer_dev, ref->id, name, sizeof(name));
	p = shm_map(name, ref->len, false);
	if (!p)
		return NULL;
	ep->map_hit = ep->map_next++ % SHM_MAPS;
	m = &ep->maps[ep->map_hit];
	if (m->ptr)
		munmap(m->ptr, m->len);
	m->id = ref->id;
	m->base = ref->base;
	m->len = ref->len;
	m->ptr = p;
	return m->ptr + (raddr - m->base);
}

void shm_mem_unmap(struct shm_ep *ep)
{
	uint32_t i;

	for (i = 0; i < SHM_MAPS; i++)
		if (ep->maps[i].ptr)
			munmap(ep->maps[i].ptr, ep->maps[i].len);
}

/*
 * ops->ep_mem_map: the pages of the peer's segment that hold [raddr,
 * raddr + len), mapped anew for the caller (the endpoint's own maps come
 * and go, SHM_MAPS of them). The segment outlives its name and its
 * maker while a mapping of it is left.
 */
int shm_ep_mem_map(struct rcx_ep *e, uint64_t raddr, uint64_t len,
		   uint32_t rkey, unsigned int access, void **out)
{
	struct shm_ep *ep = to_sep(e);
	const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	struct shm_mr_seen seen = { 0 };
	struct shm_mem_ref ref;
	uint64_t at, lo;
	char name[48];
	void *p;
	int fd;

	if (!len)
		return -EINVAL;
	if (ep->state != SHM_EP_CONNECTED || !ep->peer_seg)
		return -ENOTCONN;
	if (!shm_mr_look(&seen, ep->peer_seg, rkey, raddr, len, access, &ref))
		return -EACCES;
	/* plain memory of the peer's: cross-memory attach only */
	if (!ref.id)
		return -ENOENT;
	if (raddr < ref.base || len > ref.len ||
	    raddr - ref.base > ref.len - len)
		return -EACCES;
	at = raddr - ref.base;
	lo = at / pg * pg;
	shm_mem_name(ep->peer_pid, ep->peer_dev, ref.id, name, sizeof(name));
	fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno; /* -ENOENT: freed, or its process is gone */
	p = mmap(NULL, at - lo + len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 (off_t)lo);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*out = (uint8_t *)p + (at - lo);
	return 0;
}

/* ops->mem_unmap: what shm_ep_mem_map gave for len bytes */
void shm_mem_unmap_range(struct rcx_dev *d, void *addr, uint64_t len)
{
	const uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)addr, lo = a & ~(pg - 1);

	(void)d;
	if (addr)
		munmap((void *)lo, a - lo + len);
}
