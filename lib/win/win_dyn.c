/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Dynamic windows (MPI_Win_create_dynamic, MPI_Win_attach/detach). The
 * window is made with no memory; each process attaches regions later,
 * each registered on its own. A target displacement is an address at the
 * target (disp_unit 1, base 0), so the operations of win.c and
 * win_acc.c run unchanged once the origin knows the key of the region
 * that holds the address.
 *
 * Each process keeps a table of its regions that its peers read with one
 * RDMA READ (the table is the memory the window is created over: its
 * address and key go round with the window's). An origin keeps a copy
 * of each target's table:
 *   - an address its copy does not cover reads the table again (a miss:
 *     the target may have attached since);
 *   - the first access to a target after a synchronisation call of this
 *     process on the window (lock, lock_all, flush*, unlock*, fence)
 *     reads the target's generation word (8 bytes) first and the whole
 *     table again when it moved (the target detached or attached since).
 * An address still not covered gives RCX_ERR_REMOTE_ACCESS and nothing
 * is sent. Detach deregisters the region: an origin that did not
 * synchronise since, and so still uses the old key, is refused by the
 * target's NIC (or the shm provider's registration check) and its
 * operation completes with an error (the connection may break with it,
 * as an RC queue pair does); freed memory is never written.
 *
 * A table entry is written while peers may read it: the writer stores
 * s_end, the fields, then s_start (with release fences between); a READ
 * copies in ascending address order (DMA engines, rxe and
 * process_vm_readv do), so a copy with s_start != s_end was torn and is
 * read again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/win/win_int.h"

/* READs of a table that keep finding it torn before giving up */
#define DYN_TRIES 1000

struct dyn_ent {
	uint64_t s_start;
	uint64_t base;
	uint64_t size; /* 0: a free slot */
	uint32_t rkey;
	uint32_t pad;
	uint64_t s_end;
};

struct dyn_tab {
	uint64_t gen; /* bumped after every attach and detach */
	uint64_t pad[7];
	struct dyn_ent e[RCX_WIN_ATTACH_MAX];
};

struct rcx__win_dyn {
	struct dyn_tab *tab; /* this process's: its peers read it */
	struct rcx__reg *tab_reg;
	struct rcx__reg *reg[RCX_WIN_ATTACH_MAX]; /* each region's */
	uint64_t *tab_addr;    /* [size]: the peers' tables */
	uint32_t *tab_rkey;    /* [size] */
	struct dyn_tab *cache; /* [size]: copies of them */
	struct rcx__reg *cache_reg;
	uint8_t *have;	/* [size]: cache[t] was read */
	uint8_t *check; /* [size]: check its generation first */
	uint64_t reads; /* tables read (rcx__win_dyn_reads) */
};

static const struct dyn_ent *find(const struct dyn_tab *tab, uint64_t a,
				  uint64_t len)
{
	const struct dyn_ent *e;
	int i;

	for (i = 0; i < RCX_WIN_ATTACH_MAX; i++) {
		e = &tab->e[i];
		if (e->size && a >= e->base && len <= e->size &&
		    a - e->base <= e->size - len)
			return e;
	}
	return NULL;
}

static bool torn(const struct dyn_tab *tab)
{
	int i;

	for (i = 0; i < RCX_WIN_ATTACH_MAX; i++)
		if (tab->e[i].s_start != tab->e[i].s_end)
			return true;
	return false;
}

/* Peers may READ the entry meanwhile: see the top of this file. */
static void ent_write(struct dyn_tab *tab, int i, uint64_t base, uint64_t size,
		      uint32_t rkey)
{
	struct dyn_ent *e = &tab->e[i];
	uint64_t s = e->s_end + 1;

	__atomic_store_n(&e->s_end, s, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e->base = base;
	e->size = size;
	e->rkey = rkey;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&e->s_start, s, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&tab->gen, tab->gen + 1, __ATOMIC_RELAXED);
}

/* Read target's table into the copy. Lock held. */
static int tab_read(struct rcx_win *w, int t)
{
	struct rcx__win_dyn *d = w->dyn;
	struct dyn_tab *c = &d->cache[t];
	struct rcx_wr wr;
	int i, ret;

	for (i = 0;; i++) {
		memset(&wr, 0, sizeof(wr));
		wr.op = RCX_OP_READ;
		wr.addr = (uintptr_t)c;
		wr.lkey = d->cache_reg->lkey;
		wr.length = sizeof(*c);
		wr.remote_addr = d->tab_addr[t];
		wr.rkey = d->tab_rkey[t];
		ret = rcx__win_waited(w, t, &wr, NULL, 0);
		if (ret)
			return ret;
		d->reads++;
		if (!torn(c))
			break;
		if (i == DYN_TRIES) {
			rcx__log(RCX__LOG_ERROR, "win",
				 "dynamic window: the region table of rank %d "
				 "changed during each of %d reads",
				 t, DYN_TRIES);
			return -EAGAIN;
		}
		rcx__progress(w->ctx);
	}
	d->have[t] = 1;
	d->check[t] = 0;
	return 0;
}

/* Is the copy of target's table current? Read it again if not. */
static int gen_check(struct rcx_win *w, int t)
{
	struct rcx__win_dyn *d = w->dyn;
	struct rcx_wr wr;
	uint64_t gen;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.op = RCX_OP_READ;
	wr.length = 8;
	wr.remote_addr = d->tab_addr[t];
	wr.rkey = d->tab_rkey[t];
	ret = rcx__win_waited(w, t, &wr, &gen, sizeof(gen));
	if (ret)
		return ret;
	if (gen != d->cache[t].gen)
		return tab_read(w, t);
	d->check[t] = 0;
	return 0;
}

int rcx__win_dyn_range(struct rcx_win *w, int target, size_t addr, size_t len,
		       uint64_t *off)
{
	struct rcx__win_dyn *d = w->dyn;
	const struct dyn_ent *e;
	int ret = 0;

	/* nothing is accessed: nothing to look up */
	if (!len) {
		*off = addr;
		return 0;
	}
	if (addr > UINT64_MAX - len)
		return -EINVAL;
	if (target == w->rank) {
		e = find(d->tab, addr, len);
	} else {
		uint64_t reads = d->reads;

		if (!d->have[target])
			ret = tab_read(w, target);
		else if (d->check[target])
			ret = gen_check(w, target);
		if (ret)
			return ret;
		e = find(&d->cache[target], addr, len);
		/* a miss: the target may have attached since the copy */
		if (!e && reads == d->reads && !(ret = tab_read(w, target)))
			e = find(&d->cache[target], addr, len);
		if (ret)
			return ret;
	}
	if (!e) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "dynamic window: address 0x%zx, %zu bytes: no region "
			 "attached at rank %d holds them",
			 addr, len, target);
		return RCX_ERR_REMOTE_ACCESS;
	}
	*off = addr;
	return 0;
}

uint32_t rcx__win_dyn_rkey(const struct rcx_win *w, int target, uint64_t addr)
{
	const struct rcx__win_dyn *d = w->dyn;
	const struct dyn_ent *e =
		find(target == w->rank ? d->tab : &d->cache[target], addr, 1);

	return e ? e->rkey : 0;
}

bool rcx__win_dyn_local(const struct rcx_win *w, uint64_t addr, uint64_t len)
{
	return addr <= UINT64_MAX - len && find(w->dyn->tab, addr, len);
}

void rcx__win_dyn_sync(struct rcx_win *w)
{
	if (w->dyn)
		memset(w->dyn->check, 1, (size_t)w->size);
}

/* Tables read so far (the tests count lookups with it). */
uint64_t rcx__win_dyn_reads(struct rcx_win *w)
{
	uint64_t n;

	if (!rcx__win_live(w) || !w->dyn)
		return 0;
	rcx__lock(w->ctx);
	n = w->dyn->reads;
	rcx__unlock(w->ctx);
	return n;
}

static void dyn_free(struct rcx_ctx *ctx, struct rcx__win_dyn *d)
{
	int i;

	if (!d)
		return;
	for (i = 0; i < RCX_WIN_ATTACH_MAX; i++)
		rcx__reg_put(ctx, d->reg[i]);
	rcx__reg_put(ctx, d->tab_reg);
	rcx__reg_put(ctx, d->cache_reg);
	free(d->tab);
	free(d->cache);
	free(d->tab_addr);
	free(d->tab_rkey);
	free(d->have);
	free(d->check);
	free(d);
}

void rcx__win_dyn_free(struct rcx_win *w)
{
	dyn_free(w->ctx, w->dyn);
	w->dyn = NULL;
}

/* The local part: table, copies of n peers' (registered). Lock held. */
static int dyn_new(struct rcx_ctx *ctx, int n, struct rcx__win_dyn **out)
{
	struct rcx__win_dyn *d = calloc(1, sizeof(*d));
	size_t clen = (size_t)n * sizeof(struct dyn_tab);

	if (!d)
		return -ENOMEM;
	d->tab_addr = calloc(n, sizeof(*d->tab_addr));
	d->tab_rkey = calloc(n, sizeof(*d->tab_rkey));
	d->have = calloc(n, 1);
	d->check = calloc(n, 1);
	if (!d->tab_addr || !d->tab_rkey || !d->have || !d->check ||
	    posix_memalign((void **)&d->tab, 64, sizeof(*d->tab)) ||
	    posix_memalign((void **)&d->cache, 64, clen)) {
		dyn_free(ctx, d);
		return -ENOMEM;
	}
	memset(d->tab, 0, sizeof(*d->tab));
	memset(d->cache, 0, clen);
	if (rcx__reg_get_private(ctx, d->cache, clen, RCX_ACCESS_LOCAL_WRITE,
				 &d->cache_reg)) {
		dyn_free(ctx, d);
		return -ENOMEM;
	}
	*out = d;
	return 0;
}

RCX_API int rcx_win_create_dynamic(struct rcx_group *g,
				   const struct rcx_info *info,
				   struct rcx_win **out)
{
	struct rcx__win_dyn *d = NULL;
	struct rcx_win *w;
	int i, err, ret;

	if (!rcx__group_live(g) || !out)
		return -EINVAL;
	rcx__lock(g->ctx);
	err = dyn_new(g->ctx, g->size, &d);
	rcx__unlock(g->ctx);
	/* the table is the window's memory: its address and key go round */
	ret = rcx__win_create(g, d ? d->tab : NULL, d ? sizeof(*d->tab) : 0, 1,
			      info, false, err, &w);
	rcx__lock(g->ctx);
	if (ret) {
		dyn_free(g->ctx, d);
		rcx__unlock(g->ctx);
		return ret;
	}
	for (i = 0; i < w->size; i++) {
		d->tab_addr[i] = w->peer[i].base;
		d->tab_rkey[i] = w->peer[i].rkey;
		w->peer[i].base = 0;
		w->peer[i].size = UINT64_MAX;
		w->peer[i].disp_unit = 1;
		w->peer[i].rkey = 0;
	}
	d->tab_reg = w->reg;
	w->reg = NULL;
	w->base = NULL;
	w->len = 0;
	w->dyn = d;
	rcx__unlock(g->ctx);
	*out = w;
	return 0;
}

/* Why base, size cannot be attached; 0 when they can (slot in *slot). */
static int attach_check(const struct rcx_win *w, const void *base, size_t size,
			int *slot)
{
	uintptr_t a = (uintptr_t)base;
	const struct dyn_ent *e;
	int i;

	*slot = -1;
	if (!base || !size || a > UINTPTR_MAX - size) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_attach: base %p size %zu: %s", base, size,
			 !base	 ? "base is NULL"
			 : !size ? "size is 0"
				 : "the range wraps around the address space");
		return -EINVAL;
	}
	for (i = 0; i < RCX_WIN_ATTACH_MAX; i++) {
		e = &w->dyn->tab->e[i];
		if (!e->size) {
			if (*slot < 0)
				*slot = i;
			continue;
		}
		if (a < e->base + e->size && e->base < a + size) {
			rcx__log(RCX__LOG_ERROR, "win",
				 "rcx_win_attach: base %p size %zu overlaps "
				 "the region at 0x%llx (%llu bytes) attached "
				 "already",
				 base, size, (unsigned long long)e->base,
				 (unsigned long long)e->size);
			return -EEXIST;
		}
	}
	if (*slot < 0) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_attach: base %p: %d regions are attached "
			 "already, the most a window takes "
			 "(RCX_WIN_ATTACH_MAX)",
			 base, RCX_WIN_ATTACH_MAX);
		return -ENOSPC;
	}
	return rcx__win_mem_check("rcx_win_attach", base, size);
}

/* The window is live and dynamic, and valid; lock held. */
static int dyn_usable(const struct rcx_win *w, const char *call)
{
	if (!w->dyn) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "%s: window %u was not made by "
			 "rcx_win_create_dynamic",
			 call, w->id);
		return -EINVAL;
	}
	return w->invalid ? RCX_ERR_WIN_INVALID : 0;
}

RCX_API int rcx_win_attach(struct rcx_win *w, void *base, size_t size)
{
	const unsigned int all =
		RCX_ACCESS_LOCAL_WRITE | RCX_ACCESS_REMOTE_READ |
		RCX_ACCESS_REMOTE_WRITE | RCX_ACCESS_REMOTE_ATOMIC;
	struct rcx__reg *reg;
	int slot, ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	rcx__lock(w->ctx);
	ret = dyn_usable(w, "rcx_win_attach");
	if (!ret)
		ret = attach_check(w, base, size, &slot);
	/* a registration of its own: detach revokes its key */
	if (!ret)
		ret = rcx__reg_get_private(w->ctx, base, size, all, &reg);
	if (!ret) {
		w->dyn->reg[slot] = reg;
		ent_write(w->dyn->tab, slot, (uintptr_t)base, size, reg->rkey);
	}
	rcx__unlock(w->ctx);
	return ret;
}

RCX_API int rcx_win_detach(struct rcx_win *w, const void *base)
{
	struct rcx__win_dyn *d;
	int i, ret;

	if (!rcx__win_live(w))
		return -EINVAL;
	rcx__lock(w->ctx);
	ret = dyn_usable(w, "rcx_win_detach");
	d = w->dyn;
	for (i = 0; !ret && i < RCX_WIN_ATTACH_MAX; i++)
		if (d->tab->e[i].size && d->tab->e[i].base == (uintptr_t)base)
			break;
	if (!ret && i == RCX_WIN_ATTACH_MAX) {
		rcx__log(RCX__LOG_ERROR, "win",
			 "rcx_win_detach: no region attached at base %p", base);
		ret = -ENOENT;
	}
	if (!ret) {
		ent_write(d->tab, i, 0, 0, 0);
		rcx__reg_put(w->ctx, d->reg[i]);
		d->reg[i] = NULL;
	}
	rcx__unlock(w->ctx);
	return ret;
}
