/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_EXAMPLE_H
#define RCX_EXAMPLE_H

/*
 * What every example does first and last: a context on the RDMA device,
 * the world group of the job (two ranks, started by rcx-run -n 2), and a
 * check that ends the program with rcx's name for an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <rcx/rcx.h>

/* Exit with a message when an rcx call returned a negative code. */
#define CHECK(call) ex_check((call), #call, __LINE__)

static inline int ex_check(int ret, const char *what, int line)
{
	if (ret < 0) {
		fprintf(stderr, "line %d: %s: %s\n", line, what,
			rcx_strerror(ret));
		exit(1);
	}
	return ret;
}

/* A context and the world group; returns this process's rank. */
static inline int ex_start(struct rcx_ctx **ctx, struct rcx_group **g)
{
	CHECK(rcx_ctx_create(NULL, ctx));
	CHECK(rcx_group_world(*ctx, g));
	if (rcx_group_size(*g) != 2) {
		fprintf(stderr, "needs two ranks: rcx-run -n 2 PROGRAM\n");
		exit(2);
	}
	return rcx_group_rank(*g);
}

/* Everyone is done before anyone tears down its connections. */
static inline void ex_finish(struct rcx_ctx *ctx, struct rcx_group **g)
{
	CHECK(rcx_group_barrier(*g));
	CHECK(rcx_group_free(g));
	CHECK(rcx_ctx_destroy(ctx));
}

#endif
