/* SPDX-License-Identifier: BSD-2-Clause */
/* Continuations: not yet implemented; the core's hooks are no-ops. */
#include "core.h"

void rcx__cont_complete(struct rcx_req *r)
{
	if (r->user_freed && !r->persistent)
		rcx__req_put(r);
}

void rcx__cont_start(struct rcx_req *r)
{
}

void rcx__cont_detach(struct rcx_req *r)
{
}

int rcx__cont_block(struct rcx_ctx *ctx, int timeout_ms)
{
	return rcx__wait_events(ctx, timeout_ms);
}

int rcx__cont_progress(struct rcx_ctx *ctx)
{
	return 0;
}

void rcx__cont_fini(struct rcx_ctx *ctx)
{
}
