/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared-memory windows (MPI_Win_allocate_shared, MPI_Win_shared_query).
 * Every member must be on one node (equal node keys, lib/boot/boot_node.c).
 * The lowest rank makes one POSIX shared-memory segment for all the parts,
 * every other member maps it, and the name goes once all have: the
 * segment lives as long as a mapping does. The parts follow each other
 * in rank order with no gap (MPI's default), or each starts on a page of
 * its own with info alloc_shared_noncontig=true.
 *
 * The segment is the library's, not a provider's, so it serves whatever
 * provider the context has (shm, auto, or verbs with every member on one
 * host). The window made over each part keeps everything else of a
 * window (epochs, lock words, order); its operations are plain copies
 * into the mapped parts and its accumulates CPU atomics (win.c and
 * win_acc.c ask rcx__win_tptr where a part is), so they are atomic with
 * respect to the same CPU atomics a program runs through the pointers.
 * A process forked after the window was made shares the segment with its
 * parent (unlike the memory of other windows).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "lib/win/win_int.h"

struct shr_wire {
	int32_t status;
	uint32_t disp_unit;
	uint64_t size;
	char node[sizeof(((struct rcx_ctx *)0)->node)];
};

struct shr_name {
	int32_t status;
	uint32_t pad;
	uint64_t len;
	char name[64];
};

static uint32_t seg_next;

/* The lowest rank's segment: new, zeroed, len bytes. */
static int seg_create(struct shr_name *nm, size_t len, uint8_t **out)
{
	void *p;
	int fd, ret = 0;

	snprintf(nm->name, sizeof(nm->name), "/rcx-wsh.%d.%u", (int)getpid(),
		 __atomic_add_fetch(&seg_next, 1, __ATOMIC_RELAXED));
	fd = shm_open(nm->name, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)len))
		ret = -errno;
	p = ret ? MAP_FAILED
		: mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (!ret && p == MAP_FAILED)
		ret = -errno;
	close(fd);
	if (ret) {
		shm_unlink(nm->name);
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_allocate_shared: segment %s of %zu bytes: "
			 "%s",
			 nm->name, len, strerror(-ret));
		return ret;
	}
	*out = p;
	return 0;
}

/* Another member's view of the lowest rank's segment. */
static int seg_open(const struct shr_name *nm, uint8_t **out)
{
	void *p;
	int fd, ret = 0;

	fd = shm_open(nm->name, O_RDWR, 0);
	if (fd < 0)
		ret = -errno;
	p = ret ? MAP_FAILED
		: mmap(NULL, nm->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       0);
	if (!ret && p == MAP_FAILED)
		ret = -errno;
	if (fd >= 0)
		close(fd);
	if (ret) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_allocate_shared: cannot map segment %s: %s",
			 nm->name, strerror(-ret));
		return ret;
	}
	*out = p;
	return 0;
}

static void shr_free(struct rcx__win_shr *s)
{
	if (!s)
		return;
	if (s->seg)
		munmap(s->seg, s->seg_len);
	free(s->part);
	free(s);
}

void rcx__win_shared_free(struct rcx_win *w)
{
	shr_free(w->shr);
	w->shr = NULL;
}

/*
 * What every rank sent, checked the same way everywhere (so all fail
 * alike): a rank's own error, members on different nodes. 0 or the
 * error, this rank's own where it has one.
 */
static int shr_agreed(const struct rcx_group *g, const struct shr_wire *all,
		      int local)
{
	int i;

	for (i = 0; i < g->size; i++)
		if (all[i].status)
			return local ? local : RCX_ERR_REMOTE_OP;
	for (i = 1; i < g->size; i++)
		if (strcmp(all[i].node, all[0].node)) {
			rcx__log(RCX__LOG_ERROR, "win",
				 "rcx_win_allocate_shared: rank %d is on node "
				 "%s, rank 0 on %s: a shared window needs "
				 "every member on one node",
				 i, all[i].node, all[0].node);
			return -EXDEV;
		}
	return 0;
}

/* Where each part starts in the segment; the segment's length. */
static int shr_layout(const struct rcx_group *g, const struct shr_wire *all,
		      bool noncontig, uint64_t *off, uint64_t *total)
{
	const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t o = 0;
	int i;

	for (i = 0; i < g->size; i++) {
		if (noncontig)
			o = (o + pg - 1) / pg * pg;
		off[i] = o;
		if (all[i].size > UINT64_MAX - o - 2 * pg)
			goto big;
		o += all[i].size;
	}
	*total = o ? (o + pg - 1) / pg * pg : pg;
	if (*total > SIZE_MAX)
		goto big;
	return 0;
big:
	rcx__log(RCX__LOG_ERROR, "win",
		 "rcx_win_allocate_shared: the parts add up to more than "
		 "this process can map");
	return -ENOMEM;
}

/*
 * This rank's view of the segment, which the lowest rank makes and
 * names in *nm. 0 (then *out is set) or an error; the others learn of
 * it in the window's creation that follows.
 */
static int shr_map(struct rcx_group *g, uint64_t total, struct shr_name *nm,
		   struct rcx__win_shr **out)
{
	struct rcx__win_shr *s = calloc(1, sizeof(*s));
	int err = 0, ret;

	memset(nm, 0, sizeof(*nm));
	nm->len = total;
	if (!s || !(s->part = calloc(g->size, sizeof(*s->part))))
		err = -ENOMEM;
	if (g->rank == 0)
		nm->status = err ? err : seg_create(nm, total, &s->seg);
	ret = rcx_group_bcast(g, nm, sizeof(*nm), 0);
	if (!ret && nm->status)
		ret = g->rank == 0 ? nm->status : RCX_ERR_REMOTE_OP;
	if (!ret && g->rank != 0)
		ret = err ? err : seg_open(nm, &s->seg);
	if (!ret) {
		s->seg_len = total;
		*out = s;
	} else {
		if (g->rank == 0 && s && s->seg)
			shm_unlink(nm->name);
		shr_free(s);
	}
	return ret;
}

RCX_API int rcx_win_allocate_shared(struct rcx_group *g, size_t size,
				    size_t disp_unit,
				    const struct rcx_info *info, void **base,
				    struct rcx_win **out)
{
	struct shr_wire me, *all = NULL;
	struct rcx__win_shr *s = NULL;
	struct shr_name nm;
	struct rcx_win *w;
	uint64_t *off = NULL, total = 0;
	bool noncontig = false;
	int i, local = 0, ret;

	if (!rcx__group_live(g) || !out || !base)
		return -EINVAL;
	memset(&me, 0, sizeof(me));
	if (!disp_unit || disp_unit > UINT32_MAX) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_allocate_shared: disp_unit %zu: it must be "
			 "1 to %u",
			 disp_unit, UINT32_MAX);
		local = -EINVAL;
	}
	if (!local)
		local = rcx__info_bool(info, RCX_ALLOC_SHARED_NONCONTIG, false,
				       &noncontig);
	all = calloc(g->size, sizeof(*all));
	off = calloc(g->size, sizeof(*off));
	if (!local && (!all || !off))
		local = -ENOMEM;
	me.status = local;
	me.disp_unit = (uint32_t)disp_unit;
	me.size = size;
	snprintf(me.node, sizeof(me.node), "%s", g->ctx->node);
	/* every rank takes part: a rank's error fails them all */
	ret = all ? rcx_group_allgather(g, &me, sizeof(me), all) : -ENOMEM;
	if (!ret)
		ret = shr_agreed(g, all, local);
	if (!ret)
		ret = shr_layout(g, all, noncontig, off, &total);
	if (ret)
		goto out;
	/* a failed mapping still takes part in the creation, and fails it */
	local = shr_map(g, total, &nm, &s);
	for (i = 0; s && i < g->size; i++)
		s->part[i] = s->seg + off[i];
	ret = rcx__win_create(g, s ? s->part[g->rank] : NULL, s ? size : 0,
			      disp_unit, info, false, local, &w);
	/* every member has mapped it (or failed): the name can go */
	if (g->rank == 0 && s)
		shm_unlink(nm.name);
	if (ret) {
		shr_free(s);
		goto out;
	}
	rcx__lock(g->ctx);
	w->shr = s;
	rcx__unlock(g->ctx);
	*base = s->part[g->rank];
	*out = w;
out:
	free(all);
	free(off);
	return ret;
}

RCX_API int rcx_win_shared_query(struct rcx_win *w, int rank, size_t *size,
				 size_t *disp_unit, void **base)
{
	int r, ret = 0;

	if (!rcx__win_live(w) || !size || !disp_unit || !base)
		return -EINVAL;
	rcx__lock(w->ctx);
	if (!w->shr) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_shared_query: window %u was not made by "
			 "rcx_win_allocate_shared",
			 w->id);
		ret = -EINVAL;
	} else if (rank != RCX_PROC_NULL && (rank < 0 || rank >= w->size)) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_shared_query: rank %d: the window has %d "
			 "members",
			 rank, w->size);
		ret = -EINVAL;
	}
	if (!ret) {
		/* PROC_NULL: the lowest rank with memory, as MPI */
		r = rank;
		if (r == RCX_PROC_NULL)
			for (r = 0; r < w->size && !w->peer[r].size; r++)
				;
		if (r == w->size) {
			*size = 0;
			*disp_unit = w->peer[0].disp_unit;
			*base = NULL;
		} else {
			*size = w->peer[r].size;
			*disp_unit = w->peer[r].disp_unit;
			*base = w->shr->part[r];
		}
	}
	rcx__unlock(w->ctx);
	return ret;
}

/* One element as a CPU atomic: compare-and-swap until it holds. */
#define SHR_ELEM(T)                                                            \
	do {                                                                   \
		T *p = (T *)t, cur = __atomic_load_n(p, __ATOMIC_ACQUIRE), nv; \
		do {                                                           \
			nv = cur;                                              \
			rcx__win_apply(op, dtype, (uint8_t *)&nv, o, cmp,      \
				       NULL, 1);                               \
		} while (!__atomic_compare_exchange_n(p, &cur, nv, false,      \
						      __ATOMIC_ACQ_REL,        \
						      __ATOMIC_ACQUIRE));      \
		if (old)                                                       \
			memcpy(old, &cur, sizeof(cur));                        \
	} while (0)

static void shr_elem(int op, int dtype, uint8_t *t, const uint8_t *o,
		     const uint8_t *cmp, uint8_t *old)
{
	switch (rcx__dtype_size(dtype)) {
	case 1:
		SHR_ELEM(uint8_t);
		break;
	case 2:
		SHR_ELEM(uint16_t);
		break;
	case 4:
		SHR_ELEM(uint32_t);
		break;
	default:
		SHR_ELEM(uint64_t);
		break;
	}
}

int rcx__win_shared_apply(int op, int dtype, uint8_t *t, const uint8_t *o,
			  const uint8_t *cmp, uint8_t *old, size_t count)
{
	size_t es = rcx__dtype_size(dtype), i;

	/* a CPU compare-and-swap takes at most 8 bytes */
	if (es > 8) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "accumulate of %s on a shared window: %zu-byte "
			 "elements have no CPU atomic",
			 rcx__dtype_name(dtype), es);
		return -ENOTSUP;
	}
	if ((uintptr_t)t % es) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "accumulate on a shared window at %p: not aligned "
			 "to its %zu-byte elements",
			 (void *)t, es);
		return -EINVAL;
	}
	for (i = 0; i < count; i++)
		shr_elem(op, dtype, t + i * es, o ? o + i * es : NULL,
			 cmp ? cmp + i * es : NULL, old ? old + i * es : NULL);
	return 0;
}
