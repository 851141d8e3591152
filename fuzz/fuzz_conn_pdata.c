/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Private data of incoming connection requests (conn.c queues them,
 * group.c parses them in rcx_group_accept): each record is the private
 * data of one request (at most the 56 bytes rdma_cm carries). Oracle: a
 * pair is accepted exactly when a request is well formed ("RCX1", kind
 * 2), and it is the first such request.
 */
#include <errno.h>
#include <string.h>
#include <rcx/rcx.h>
#include "fz.h"

#define PDATA_MAX 56

/* The layout group.c sends: magic, kind, 3 pad, rank, size, jobid. */
static int is_pair(const uint8_t *p, size_t len)
{
	return len >= 24 && !memcmp(p, "RCX1", 4) && p[4] == 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_script s = { data, size };
	struct rcx_ctx *ctx;
	struct rcx_group *g = NULL;
	const uint8_t *rec;
	size_t len;
	int want = 0, n = 0, ret;

	if (size > 8192)
		return 0;
	ctx = fz_ctx_new();
	while (fz_next(&s, &rec, &len) && n < 64) {
		if (len > PDATA_MAX)
			len = PDATA_MAX;
		fz_conn_request(rec, len);
		want |= is_pair(rec, len);
		n++;
	}
	FZ_ASSERT(rcx__cm_progress(ctx) == n);
	ret = rcx_group_accept(ctx, 0, &g);
	if (want) {
		FZ_ASSERT(!ret && g);
		FZ_ASSERT(rcx_group_rank(g) == 0 && rcx_group_size(g) == 2);
		FZ_ASSERT(!rcx_group_free(&g));
	} else {
		FZ_ASSERT(ret == -ETIMEDOUT && !g);
	}
	/* the requests nobody took are rejected with the context */
	fz_ctx_destroy(ctx);
	return 0;
}
