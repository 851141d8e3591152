/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Agreement messages (ft.c): a pair runs rcx__ft_agree while the peer's
 * side of it comes from the input, one wire message per record (header
 * included: the seeds carry the proposal and the decision with their
 * tags on the agreement's cid). The peer then disconnects. Oracles: the
 * agreement ends (a dead peer cannot block it), and what it decides is a
 * flag per rank, each 0 or 1.
 */
#include <rcx/rcx.h>
#include "fz.h"
#include "lib/ft/ft.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rcx_ctx *ctx = fz_ctx_new();
	struct rcx_group *g;
	uint8_t failed[2];
	bool ok;
	int round, ret, k;

	fz_peer_script(data, size);
	g = fz_pair_accept(ctx);
	for (round = 0; round < 2; round++) {
		ok = true;
		failed[0] = failed[1] = 0;
		ret = rcx__ft_agree(g, &ok, failed);
		FZ_ASSERT(!ret || ret == RCX_ERR_PROC_FAILED);
		if (ret)
			break;
		for (k = 0; k < 2; k++)
			FZ_ASSERT(failed[k] <= 1);
		FZ_ASSERT(*(uint8_t *)&ok <= 1);
	}
	FZ_ASSERT(!rcx_group_free(&g));
	fz_ctx_destroy(ctx);
	return 0;
}
