/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device's limits and what lies past them: more endpoints than one
 * completion queue holds (bound channels, deep point-to-point rings),
 * ring depths the provider cannot take, and connections that never come.
 * Whatever the limit, the answer is work done or a named error, never a
 * crash or a hang, and the context keeps working afterwards.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "lib/core.h"
#include "tu.h"
#include "tu_mp.h"

/* what a connection's send queue holds beyond the two rings (conn.c) */
#define CONN_SQ_EXTRA (RCX__WIN_SQ_DEPTH + 1)

/* ---- helpers of the single-process tests */

/* The limits a context of the provider under test gets. */
static int dev_limits(struct rcx_dev_info *info)
{
	struct rcx_ctx *ctx;
	int ret = rcx_ctx_create(NULL, &ctx);

	if (ret) {
		fprintf(stderr, "rcx_ctx_create: %s\n", rcx_strerror(ret));
		return ret;
	}
	*info = ctx->info;
	rcx_ctx_destroy(ctx);
	return 0;
}

/* send queue and completion entries one connection takes at these depths */
static unsigned long conn_sq(unsigned long tx, unsigned long rx)
{
	return tx + rx + CONN_SQ_EXTRA;
}

static bool depth_fits(const struct rcx_dev_info *info, unsigned long tx,
		       unsigned long rx)
{
	return conn_sq(tx, rx) <= info->max_qp_wr &&
	       conn_sq(tx, rx) + rx <= info->max_cqe;
}

/* ---- multi-process scenarios */

/*
 * More bound channels than one completion queue holds: each reserves its
 * queue pair's depths (59 entries for a one-slot send channel), so 547 of
 * them (with the world's connection) pass rxe's 32,767 entries. All 600
 * bind, carry a message each, and free.
 */
#define NCHAN 600
#define BATCH 50

static void sc_chans(struct tp_job *j)
{
	static uint64_t buf[NCHAN];
	static struct rcx_req *init[NCHAN], *ch[NCHAN], *eph[NCHAN];
	static struct rcx_status st[NCHAN];
	bool send = j->rank == 0;
	int peer = 1 - j->rank, i, k, bound = 0, fine = 0;
	struct rcx_dev_info info;

	for (i = 0; i < NCHAN; i++) {
		buf[i] = 0;
		if (!TP_CHECK_OK(send ? rcx_send_init(j->g, &buf[i], 8, peer, i,
						      &init[i])
				      : rcx_recv_init(j->g, &buf[i], 8, peer, i,
						      &init[i])))
			return;
	}
	for (i = 0; i < NCHAN; i += BATCH) {
		for (k = i; k < i + BATCH && k < NCHAN; k++)
			TP_CHECK_OK(rcx_ibind(init[k], NULL, &ch[k], &eph[k]));
		rcx_waitall(k - i, &eph[i], &st[i]);
		for (k = i; k < i + BATCH && k < NCHAN; k++) {
			TP_CHECK_OK(st[k].error);
			bound += !st[k].error;
		}
	}
	TP_CHECK_EQ(bound, NCHAN);
	if (!TP_CHECK_OK(j->ctx->ops->dev_query(j->ctx->dev, &info)))
		return;
	printf("rank %d: %d channels bound; CQ entries %u for %u reserved "
	       "(%u per CQ at most)\n",
	       j->rank, bound, info.cq_size, info.cq_reserved, info.max_cqe);
	TP_CHECK(info.cq_size >= info.cq_reserved);
	if (bound != NCHAN)
		return;
	if (!send)
		for (i = 0; i < NCHAN; i++)
			TP_CHECK_OK(rcx_start(ch[i]));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (send)
		for (i = 0; i < NCHAN; i++) {
			buf[i] = 0xc4a0000000000000ull | (uint64_t)i;
			TP_CHECK_OK(rcx_start(ch[i]));
		}
	TP_CHECK_OK(rcx_waitall(NCHAN, ch, st));
	for (i = 0; i < NCHAN; i++)
		fine += !st[i].error &&
			buf[i] == (0xc4a0000000000000ull | (uint64_t)i);
	TP_CHECK_EQ(fine, NCHAN);
	TP_CHECK_OK(rcx_bind_free(ch, NCHAN));
	for (i = 0; i < NCHAN; i++)
		TP_CHECK_OK(rcx_req_free(&init[i]));
}

/*
 * Point-to-point connections as deep as RCX_TX_DEPTH goes: each takes
 * 16,641 completion entries, so a rank's second connection passes rxe's
 * 32,767. Every rank sends to and receives from every other.
 */
#define DEEP_MSGS 100

static void sc_deep(struct tp_job *j)
{
	static uint64_t out[8][DEEP_MSGS], in[8][DEEP_MSGS];
	static struct rcx_req *r[2 * 8 * DEEP_MSGS];
	int p, i, n = 0, bad = 0;

	if (!TP_CHECK(j->size <= 8))
		return;
	for (p = 0; p < j->size; p++) {
		if (p == j->rank)
			continue;
		for (i = 0; i < DEEP_MSGS; i++) {
			out[p][i] = (uint64_t)j->rank << 32 | (uint64_t)i;
			in[p][i] = 0;
			TP_CHECK_OK(
				rcx_irecv(j->g, &in[p][i], 8, p, i, &r[n++]));
			TP_CHECK_OK(
				rcx_isend(j->g, &out[p][i], 8, p, i, &r[n++]));
		}
	}
	TP_CHECK_OK(rcx_waitall(n, r, RCX_STATUSES_IGNORE));
	for (p = 0; p < j->size; p++)
		for (i = 0; p != j->rank && i < DEEP_MSGS; i++)
			bad += in[p][i] != ((uint64_t)p << 32 | (uint64_t)i);
	TP_CHECK_EQ(bad, 0);
}

static void deep_env(void)
{
	setenv("RCX_TX_DEPTH", "16384", 1);
	setenv("RCX_EAGER_SIZE", "256", 1);
}

static void deep_lazy_setup(void)
{
	deep_env();
	setenv("RCX_CONNECT", "lazy", 1);
}

static void deep_eager_setup(void)
{
	deep_env();
	setenv("RCX_CONNECT", "eager", 1);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "chans", .run = sc_chans, .size = 2 },
	{ .name = "deep_lazy",
	  .run = sc_deep,
	  .size = 3,
	  .setup = deep_lazy_setup },
	{ .name = "deep_eager",
	  .run = sc_deep,
	  .size = 3,
	  .setup = deep_eager_setup },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("limits", scenarios, TP_COUNT(scenarios), argc,
			    argv);
}

const struct tu_peer tu_peer_limits = { "limits", peer_main };

static void test_many_chans(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "limits", "chans", 600), 0);
}

/*
 * The deep rings where the provider takes them (verbs); shm does not
 * (depth_check).
 */
static void deep(const char *scenario)
{
	struct rcx_dev_info info;

	CU_ASSERT_EQUAL_FATAL(dev_limits(&info), 0);
	if (!depth_fits(&info, 16384, 64)) {
		printf("\n    %s takes no RCX_TX_DEPTH=16384 (max_qp_wr %u): "
		       "not run\n",
		       info.name, info.max_qp_wr);
		return;
	}
	CU_ASSERT_EQUAL(tu_mp_run(3, "limits", scenario, 300), 0);
}

static void test_deep_lazy(void)
{
	deep("deep_lazy");
}

static void test_deep_eager(void)
{
	deep("deep_eager");
}

static const CU_TestInfo tests[] = {
	{ "many_chans", test_many_chans },
	{ "deep_lazy", test_deep_lazy },
	{ "deep_eager", test_deep_eager },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_limits = {
	"limits", TU_DEVICE, NULL, NULL, tests,
};
