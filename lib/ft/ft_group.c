/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Groups after a failure: rcx_group_validate (MPI_Comm_validate of the
 * fault-tolerance notes) agrees on the failed set with the agreement of
 * ft.c and takes the failed out of the group's collectives, which go on
 * over the survivors with their ranks kept (lib/core: group.c, coll.c
 * skip the ranks in g->acked); rcx_group_shrink makes a group of the
 * survivors, renumbered.
 */
#include <errno.h>
#include <stdlib.h>
#include "lib/core/core.h"
#include "lib/ft/ft.h"

/* Lock held. The agreed set in fl[size]; its count in *n. */
static int validate_locked(struct rcx_group *g, uint8_t *fl, int *n)
{
	const struct rcx__conn *c;
	bool ok = true;
	int i, k = 0, ret;

	/* a member that left (its BYE, or nothing listens where it did,
	 * and nobody said it died) cannot take part either */
	for (i = 0; i < g->size; i++) {
		c = g->conns[i];
		fl[i] = g->failed[i] || (c && c->state == RCX__CONN_CLOSED);
	}
	ret = rcx__ft_agree(g, &ok, fl);
	if (ret)
		return ret;
	if (fl[g->rank]) {
		/* the others took this rank for failed: it is out */
		rcx__log(RCX__LOG_ERROR, "ft",
			 "rcx_group_validate: the survivors agreed that rank "
			 "%d (this one) failed",
			 g->rank);
		return RCX_ERR_PROC_FAILED;
	}
	for (i = 0; i < g->size; i++) {
		if (!fl[i])
			continue;
		rcx__group_failed(g, i, RCX_ERR_PROC_FAILED);
		k++;
	}
	/* a failure seen during the agreement is not in it: not yet */
	if (g->nfailed > k)
		return RCX_ERR_PROC_FAILED;
	for (i = 0; i < g->size; i++)
		g->acked[i] = fl[i];
	g->nacked = k;
	*n = k;
	return 0;
}

RCX_API int rcx_group_validate(struct rcx_group *g, int *nfailed)
{
	uint8_t *fl;
	int n = 0, ret;

	if (!rcx__group_live(g) || !nfailed) {
		rcx__log(RCX__LOG_ERROR, "ft",
			 "rcx_group_validate: group %p, nfailed %p", (void *)g,
			 (void *)nfailed);
		return -EINVAL;
	}
	fl = calloc((size_t)g->size, 1);
	if (!fl)
		return -ENOMEM;
	rcx__lock(g->ctx);
	ret = validate_locked(g, fl, &n);
	rcx__unlock(g->ctx);
	free(fl);
	if (!ret)
		*nfailed = n;
	return ret;
}

RCX_API int rcx_group_shrink(struct rcx_group *g, struct rcx_group **out)
{
	int *ranks, i, n = 0, nf, ret;

	if (!rcx__group_live(g) || !out) {
		rcx__log(RCX__LOG_ERROR, "ft",
			 "rcx_group_shrink: group %p, out %p", (void *)g,
			 (void *)out);
		return -EINVAL;
	}
	ret = rcx_group_validate(g, &nf);
	if (ret)
		return ret;
	ranks = malloc(sizeof(int) * (size_t)g->size);
	if (!ranks)
		return -ENOMEM;
	rcx__lock(g->ctx);
	for (i = 0; i < g->size; i++)
		if (!g->acked[i])
			ranks[n++] = i;
	rcx__unlock(g->ctx);
	/* every survivor holds the same list: the agreement's */
	ret = rcx_group_incl(g, n, ranks, out);
	free(ranks);
	return ret;
}
