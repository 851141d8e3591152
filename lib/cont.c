/* SPDX-License-Identifier: BSD-2-Clause */
/* Continuations: not yet implemented; the core's hooks are no-ops. */
#include "core.h"

void rcx__cont_complete(struct rcx_req *r)
{
	if (r->user_freed && !r->persistent)
		rcx__req_put(r);
}

int rcx__cont_progress(struct rcx_ctx *ctx)
{
	return 0;
}

void rcx__cont_fini(struct rcx_ctx *ctx)
{
}
