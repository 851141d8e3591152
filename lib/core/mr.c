/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registrations, shared by reference count: a buffer registered
 * once serves every operation that covers it (persistent requests,
 * windows and concurrent rendezvous on the same memory). With
 * RCX_MR_CACHE=1 unused registrations are kept for reuse, up to
 * RCX__REG_KEEP of them; that is only safe when the program does not free
 * cached memory and get the same addresses back for other pages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"

#define RCX__REG_KEEP 64

static int covers(const struct rcx__reg *r, uintptr_t a, size_t len,
		  unsigned int access)
{
	return !r->priv && a >= r->addr && a + len <= r->addr + r->len &&
	       (r->access & access) == access;
}

static int reg_new(struct rcx_ctx *ctx, const void *addr, size_t len,
		   unsigned int access, bool priv, struct rcx__reg **out);

int rcx__mem_alloc(struct rcx_ctx *ctx, size_t len, void **out)
{
	void *p = NULL;
	int ret = ctx->ops->mem_alloc(ctx->dev, len, out);

	if (ret != -EOPNOTSUPP)
		return ret;
	if (posix_memalign(&p, 64, len ? len : 64))
		return -ENOMEM;
	memset(p, 0, len ? len : 64);
	*out = p;
	return 0;
}

void rcx__mem_free(struct rcx_ctx *ctx, void *addr)
{
	if (addr && ctx->ops->mem_free(ctx->dev, addr))
		free(addr);
}

int rcx__reg_get(struct rcx_ctx *ctx, const void *addr, size_t len,
		 unsigned int access, struct rcx__reg **out)
{
	uintptr_t a = (uintptr_t)addr;
	struct rcx__reg *r, **pp;

	for (pp = &ctx->regs; (r = *pp); pp = &r->next) {
		if (covers(r, a, len, access)) {
			/* move to the front: recently used stay cheap to find */
			*pp = r->next;
			r->next = ctx->regs;
			ctx->regs = r;
			r->refs++;
			*out = r;
			return 0;
		}
	}
	return reg_new(ctx, addr, len, access, false, out);
}

int rcx__reg_get_private(struct rcx_ctx *ctx, const void *addr, size_t len,
			 unsigned int access, struct rcx__reg **out)
{
	return reg_new(ctx, addr, len, access, true, out);
}

static int reg_new(struct rcx_ctx *ctx, const void *addr, size_t len,
		   unsigned int access, bool priv, struct rcx__reg **out)
{
	struct rcx__reg *r;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* a zero-length buffer still needs a valid key: register one byte */
	ret = ctx->ops->mr_reg(ctx->dev, (void *)addr, len ? len : 1, access,
			       &r->mr);
	if (ret) {
		free(r);
		return ret;
	}
	r->addr = (uintptr_t)addr;
	r->priv = priv;
	r->len = len ? len : 1;
	r->access = access;
	r->refs = 1;
	r->lkey = ctx->ops->mr_lkey(r->mr);
	r->rkey = ctx->ops->mr_rkey(r->mr);
	r->next = ctx->regs;
	ctx->regs = r;
	ctx->nregs++;
	*out = r;
	return 0;
}

static void reg_drop(struct rcx_ctx *ctx, struct rcx__reg *r)
{
	struct rcx__reg **pp;

	for (pp = &ctx->regs; *pp && *pp != r; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = r->next;
	ctx->ops->mr_dereg(r->mr);
	ctx->nregs--;
	free(r);
}

void rcx__reg_put(struct rcx_ctx *ctx, struct rcx__reg *r)
{
	struct rcx__reg *it, *last = NULL;
	unsigned int unused = 0;

	if (!r || --r->refs)
		return;
	if (!ctx->cfg.mr_cache || r->priv) {
		reg_drop(ctx, r);
		return;
	}
	/* keep it; evict the least recently used unused one past the limit */
	for (it = ctx->regs; it; it = it->next)
		if (!it->refs) {
			unused++;
			last = it;
		}
	if (unused > RCX__REG_KEEP)
		reg_drop(ctx, last);
}

void rcx__reg_flush(struct rcx_ctx *ctx)
{
	while (ctx->regs)
		reg_drop(ctx, ctx->regs);
}
