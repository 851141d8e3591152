/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The core's side of the features (lib/chan, lib/cont, lib/win, lib/ft):
 * the points where it calls their hooks, through the table lib/features.c
 * fills (rcx__feats). The core never names a feature's function.
 */
#include "lib/core/core.h"

void rcx__feats_cm_poll(struct rcx_ctx *ctx, long long now_us)
{
	int id;

	for (id = 0; id < RCX__FEAT_MAX; id++)
		if (rcx__feats[id]->cm_poll)
			rcx__feats[id]->cm_poll(ctx, now_us);
}

void rcx__feats_idle(struct rcx_ctx *ctx)
{
	int id;

	for (id = 0; id < RCX__FEAT_MAX; id++)
		if (rcx__feats[id]->idle)
			rcx__feats[id]->idle(ctx);
}

int rcx__feats_sleep_limit(struct rcx_ctx *ctx, int timeout_ms)
{
	int id;

	for (id = 0; id < RCX__FEAT_MAX; id++)
		if (rcx__feats[id]->sleep_limit)
			timeout_ms =
				rcx__feats[id]->sleep_limit(ctx, timeout_ms);
	return timeout_ms;
}

int rcx__block(struct rcx_ctx *ctx, int timeout_ms)
{
	int id;

	for (id = 0; id < RCX__FEAT_MAX; id++)
		if (rcx__feats[id]->block)
			return rcx__feats[id]->block(ctx, timeout_ms);
	return rcx__wait_events(ctx, timeout_ms);
}

void rcx__feats_member_failed(struct rcx_group *g, int rank, int err)
{
	int id;

	for (id = 0; id < RCX__FEAT_MAX; id++)
		if (rcx__feats[id]->member_failed)
			rcx__feats[id]->member_failed(g, rank, err);
}

void rcx__feats_member_gone(struct rcx_group *g)
{
	int id;

	for (id = 0; id < RCX__FEAT_MAX; id++)
		if (rcx__feats[id]->member_gone)
			rcx__feats[id]->member_gone(g);
}

void rcx__feats_fini(struct rcx_ctx *ctx)
{
	int id;

	for (id = 0; id < RCX__FEAT_MAX; id++)
		if (rcx__feats[id]->fini)
			rcx__feats[id]->fini(ctx);
}
