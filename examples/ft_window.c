/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A window that survives a killed rank: every rank puts into everyone's
 * window in a lock_all epoch, the last rank dies (SIGKILL, as kill -9
 * would), the survivors see the window invalid, agree on who failed with
 * rcx_win_validate, and go on with the rebuilt window. Run as
 *	rcx-run -n 3 --ft ft_window
 * (--ft: a killed rank is a failure the others survive, not the end of
 * the job).
 */
#include <signal.h>
#include <stdint.h>
#include "example.h"

int main(void)
{
	struct rcx_ctx *ctx;
	struct rcx_group *g;
	struct rcx_win *w;
	uint64_t *base, v;
	int me, n, t, victim, failed[8], nfailed = 0, ret = 0;

	CHECK(rcx_ctx_create(NULL, &ctx));
	CHECK(rcx_group_world(ctx, &g));
	me = rcx_group_rank(g);
	n = rcx_group_size(g);
	if (n < 2 || n > 8) {
		fprintf(stderr, "needs 2 to 8 ranks: rcx-run -n 3 --ft\n");
		return 2;
	}
	victim = n - 1;
	CHECK(rcx_win_allocate(g, 8 * (size_t)n, 8, NULL, (void **)&base, &w));
	CHECK(rcx_win_lock_all(w));
	v = (uint64_t)me;
	for (t = 0; t < n; t++)
		CHECK(rcx_put(w, &v, 8, t, (size_t)me));
	CHECK(rcx_win_flush_all(w));
	/* the victim may leave the barrier and die before a survivor is
	 * through: then the survivor's barrier reports the failure */
	ret = rcx_group_barrier(g);
	if (ret != RCX_ERR_PROC_FAILED)
		CHECK(ret);
	if (me == victim) {
		fflush(NULL);
		raise(SIGKILL);
	}

	/* keep working until the failure shows: then every call says so */
	while (!ret) {
		ret = rcx_put(w, &v, 8, (me + 1) % n, (size_t)me);
		if (!ret)
			ret = rcx_win_flush_all(w);
	}
	printf("rank %d: %s\n", me, rcx_strerror(ret));
	CHECK(rcx_win_get_failed(w, failed, 8, &nfailed));
	printf("rank %d: %d failed, first %d\n", me, nfailed, failed[0]);

	/* agree, re-register, rebuild: same handle, the survivors only */
	CHECK(rcx_win_validate(w));
	CHECK(rcx_win_fence(w, 0));
	v = 100 + (uint64_t)me;
	for (t = 0; t < n; t++)
		if (t != victim)
			CHECK(rcx_put(w, &v, 8, t, (size_t)me));
	CHECK(rcx_win_fence(w, 0));
	for (t = 0; t < n; t++) {
		if (t != victim && base[t] != 100 + (uint64_t)t) {
			fprintf(stderr, "rank %d: slot %d holds %llu\n", me, t,
				(unsigned long long)base[t]);
			return 1;
		}
	}
	printf("rank %d: the window survived rank %d\n", me, victim);
	/* no barrier at the end: the group has lost a member */
	CHECK(rcx_win_free(&w));
	CHECK(rcx_group_free(&g));
	CHECK(rcx_ctx_destroy(ctx));
	return 0;
}
