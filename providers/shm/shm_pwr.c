/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The shared-memory provider: prepared WRs (ops->pwr_*), a WR kept whole
 * and posted through shm_post_send / shm_post_recv.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include "shm.h"

/* Prepared WRs: a WR kept whole, patched through the pointers. */
struct shm_pwr {
	struct rcx_pwr pub;
	struct rcx_wr wr;
	uint32_t imm_be;
	uint64_t scratch64;
	uint32_t scratch32;
};

int shm_pwr_create(struct rcx_ep *e, const struct rcx_wr *wr, int recv,
		   struct rcx_pwr **out)
{
	struct shm_pwr *p;

	(void)e;
	if (!recv && wr->op > RCX_OP_CSWAP)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pub.ops = &rcx__shm_ops;
	p->wr = *wr;
	p->wr.next = NULL;
	p->imm_be = htobe32(wr->imm);
	p->pub.addr = &p->wr.addr;
	p->pub.length = &p->wr.length;
	p->pub.remote_addr = &p->scratch64;
	p->pub.imm_be = &p->scratch32;
	p->pub.wr_id = &p->wr.wr_id;
	if (!recv && (wr->op == RCX_OP_WRITE || wr->op == RCX_OP_WRITE_IMM ||
		      wr->op == RCX_OP_READ))
		p->pub.remote_addr = &p->wr.remote_addr;
	if (!recv && (wr->op == RCX_OP_SEND_IMM || wr->op == RCX_OP_WRITE_IMM))
		p->pub.imm_be = &p->imm_be;
	*out = &p->pub;
	return 0;
}

void shm_pwr_destroy(struct rcx_pwr *p)
{
	free(p);
}

/*
 * n prepared WRs as one list: queued, then executed and reaped once;
 * *posted those before the one refused (n: all went, or none named)
 */
static inline __attribute__((always_inline)) int pwr_post(struct rcx_ep *e,
							  struct rcx_pwr **pp,
							  int n, bool recv,
							  int *posted)
{
	struct rcx_wr *bad = NULL, *next = NULL;
	int i, ret;

	for (i = n - 1; i >= 0; i--) {
		struct shm_pwr *p = (struct shm_pwr *)pp[i];

		p->wr.imm = be32toh(p->imm_be);
		p->wr.next = next;
		next = &p->wr;
	}
	ret = recv ? shm_post_recv(e, next, &bad)
		   : shm_post_send(e, next, &bad);
	for (i = 0; ret && i < n; i++)
		if (bad == &((struct shm_pwr *)pp[i])->wr)
			break;
	*posted = ret ? i : n;
	return ret;
}

int shm_pwr_post(struct rcx_ep *e, struct rcx_pwr **p, int n)
{
	int k;

	return pwr_post(e, p, n, false, &k);
}

int shm_pwr_post_recv(struct rcx_ep *e, struct rcx_pwr **p, int n)
{
	int k;

	return pwr_post(e, p, n, true, &k);
}

int shm_pwr_post_list(struct rcx_ep *e, struct rcx_pwr **p, int n, int recv,
		      int *posted)
{
	return pwr_post(e, p, n, recv, posted);
}
