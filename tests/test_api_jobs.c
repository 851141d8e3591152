/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The api suite's jobs (test_api.c holds the one-process checks): which
 * provider each connection of a world really uses, under auto and under
 * the launcher's node names, the counters of known traffic, and the
 * trace-level lines of WRs and completions.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "lib/core/core.h"
#include "lib/win/win_int.h"
#include "test_api.h"
#include "tu.h"
#include "tu_mp.h"

/* ---- the provider of each connection (a job) */

#define NODE_LEN 64

/* The provider a connection to a peer on the same node (or not) uses. */
static const struct rcx_provider_ops *want_ops(const char *prov, bool same)
{
	const char *lower = getenv("RCX_FAULT_LOWER");

	if (!strcmp(prov, "fault"))
		prov = lower && *lower ? lower : "auto";
	if (!strcmp(prov, "auto"))
		return rcx__provider_find(same ? "shm" : "verbs");
	return rcx__provider_find(prov);
}

/*
 * A window's WRs to each target (itself too) go through the NIC when the
 * context has two paths (nic_split: auto with a device), so that every
 * atomic on a window word is the NIC's; else the group's path (loopback:
 * the provider's own).
 */
static void check_win_paths(struct tp_job *j, const char *prov,
			    char (*nodes)[NODE_LEN])
{
	const struct rcx_provider_ops *ops, *want;
	struct rcx_win *w = NULL;
	struct rcx_ep *ep;
	uint32_t *sq;
	void *base;
	int t;

	if (!TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, &base, &w)))
		return;
	rcx__lock(j->ctx);
	for (t = 0; t < j->size; t++) {
		if (!TP_CHECK_OK(rcx__win_ep(w, t, &ep, &sq)))
			continue;
		ops = rcx__obj_ops(ep);
		want = j->ctx->info.nic_split
			       ? rcx__provider_find("verbs")
			       : want_ops(prov,
					  !strcmp(nodes[t], nodes[j->rank]));
		if (!TP_CHECK(ops == want))
			TP_FAIL("rank %d: window endpoint to %d is %s's",
				j->rank, t, ops->name);
	}
	rcx__unlock(j->ctx);
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * Every rank talks to every other, then looks at whom each connection's
 * endpoint belongs to (its maker's ops). Under auto: shm to the ranks of
 * its node (node: RCX_NODE from rcx-run --nodes, or the launcher's name),
 * verbs to the others; with two nodes and 4 ranks each rank has both
 * kinds. Under any other provider every endpoint is that provider's.
 */
static void check_paths(struct tp_job *j, const char *node, bool two_nodes)
{
	const char *prov = tu_provider();
	char(*nodes)[NODE_LEN] = calloc(j->size, NODE_LEN);
	struct rcx_req **reqs = calloc(2 * j->size, sizeof(*reqs));
	int *in = calloc(j->size, sizeof(int));
	char mine[NODE_LEN] = "";
	int i, n = 0, nshm = 0, nverbs = 0, same = 0;

	if (!TP_CHECK(nodes && reqs && in))
		goto out;
	snprintf(mine, sizeof(mine), "%s", node ? node : "");
	TP_CHECK_OK(rcx_group_allgather(j->g, mine, NODE_LEN, nodes));
	for (i = 0; i < j->size; i++) {
		if (i == j->rank)
			continue;
		TP_CHECK_OK(
			rcx_irecv(j->g, &in[i], sizeof(int), i, 7, &reqs[n++]));
		TP_CHECK_OK(rcx_isend(j->g, &j->rank, sizeof(int), i, 7,
				      &reqs[n++]));
	}
	TP_CHECK_OK(rcx_waitall(n, reqs, RCX_STATUS_IGNORE));
	for (i = 0; i < j->size; i++) {
		struct rcx__conn *c = j->g->conns[i];
		const struct rcx_provider_ops *ops;
		bool here = !strcmp(nodes[i], mine);

		if (i == j->rank)
			continue;
		TP_CHECK_EQ(in[i], i);
		if (!TP_CHECK(c && c->ep))
			continue;
		ops = rcx__obj_ops(c->ep);
		if (!TP_CHECK(ops == want_ops(prov, here)))
			TP_FAIL("rank %d: endpoint to %d is %s's", j->rank, i,
				ops->name);
		same += here;
		nshm += ops == rcx__provider_find("shm");
		nverbs += ops == rcx__provider_find("verbs");
	}
	if (!strcmp(prov, "auto")) {
		TP_CHECK_EQ(nshm, same);
		TP_CHECK_EQ(nverbs, j->size - 1 - same);
		/* two simulated nodes, four ranks: a mixed group for real */
		if (two_nodes && j->size == 4)
			TP_CHECK(nshm == 1 && nverbs == 2);
	}
	check_win_paths(j, prov, nodes);
out:
	free(nodes);
	free(reqs);
	free(in);
}

static void sc_paths(struct tp_job *j)
{
	const char *nodes = getenv("RCX_RUN_NODES");

	check_paths(j, getenv("RCX_NODE"), nodes && !strcmp(nodes, "2"));
}

/*
 * The node as the launcher names it: no RCX_NODE, and srun's
 * SLURMD_NODENAME set per rank, n0 and n1 alternating where there is a
 * device to reach another node (one name for all on shared memory only).
 * The paths must follow the launcher's names, though every rank has the
 * same host name and kernel.
 */
static bool launcher_two_nodes(void)
{
	const char *dev = getenv("RCX_DEVICE");

	return !strcmp(tu_provider(), "auto") && !(dev && !strcmp(dev, "shm"));
}

static void launcher_setup(void)
{
	const char *rank = getenv("RCX_RANK");
	char name[16];

	unsetenv("RCX_NODE");
	unsetenv("PMIX_HOSTNAME");
	snprintf(name, sizeof(name), "n%d",
		 launcher_two_nodes() && rank ? atoi(rank) % 2 : 0);
	setenv("SLURMD_NODENAME", name, 1);
}

static void sc_launcher_paths(struct tp_job *j)
{
	check_paths(j, getenv("SLURMD_NODENAME"), launcher_two_nodes());
}

static void stats_of(struct tp_job *j, struct rcx_stats *st)
{
	st->size = sizeof(*st);
	TP_CHECK_OK(rcx_ctx_stats(j->ctx, st));
}

/*
 * Counters of known traffic 0 -> 1: 5 eager messages of 100 bytes, one
 * rendezvous of 64 KiB, 7 starts of a bound channel of 32 bytes.
 */
static void sc_stats(struct tp_job *j)
{
	static char small[100], big[65536], cbuf[32];
	struct rcx_req *init = NULL, *ch = NULL;
	struct rcx_stats s0, s1;
	int i;

	if (j->rank > 1) {
		TP_CHECK_OK(rcx_group_barrier(j->g));
		TP_CHECK_OK(rcx_group_barrier(j->g));
		return;
	}
	stats_of(j, &s0);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0)
		stats_of(j, &s0); /* after the barrier's own messages */
	for (i = 0; i < 5; i++)
		TP_CHECK_OK(j->rank == 0
				    ? rcx_send(j->g, small, sizeof(small), 1, 3)
				    : rcx_recv(j->g, small, sizeof(small), 0, 3,
					       RCX_STATUS_IGNORE));
	TP_CHECK_OK(j->rank == 0 ? rcx_send(j->g, big, sizeof(big), 1, 4)
				 : rcx_recv(j->g, big, sizeof(big), 0, 4,
					    RCX_STATUS_IGNORE));
	stats_of(j, &s1);
	if (j->rank == 0) {
		TP_CHECK_EQ(s1.eager_tx_msgs - s0.eager_tx_msgs, 5);
		TP_CHECK_EQ(s1.eager_tx_bytes - s0.eager_tx_bytes, 500);
		TP_CHECK_EQ(s1.rndv_tx_msgs - s0.rndv_tx_msgs, 1);
		TP_CHECK_EQ(s1.rndv_tx_bytes - s0.rndv_tx_bytes, 65536);
		TP_CHECK(s1.wrs_posted - s0.wrs_posted >= 6);
	} else {
		/* the barrier's messages may come in the same polls */
		TP_CHECK(s1.eager_rx_msgs - s0.eager_rx_msgs >= 5);
		TP_CHECK(s1.eager_rx_bytes - s0.eager_rx_bytes >= 500);
		TP_CHECK_EQ(s1.rndv_rx_msgs - s0.rndv_rx_msgs, 1);
		TP_CHECK_EQ(s1.rndv_rx_bytes - s0.rndv_rx_bytes, 65536);
		/* the READ of the rendezvous is a WR of its own */
		TP_CHECK(s1.wrs_posted - s0.wrs_posted >= 1);
	}
	/* a bound channel: its starts, counted from its own state */
	TP_CHECK_OK(
		j->rank == 0
			? rcx_send_init(j->g, cbuf, sizeof(cbuf), 1, 5, &init)
			: rcx_recv_init(j->g, cbuf, sizeof(cbuf), 0, 5, &init));
	TP_CHECK_OK(rcx_bind(init, NULL, &ch));
	TP_CHECK_OK(rcx_req_free(&init));
	stats_of(j, &s0);
	for (i = 0; i < 7 && ch; i++) {
		TP_CHECK_OK(rcx_start(ch));
		TP_CHECK_OK(rcx_wait(&ch, RCX_STATUS_IGNORE));
	}
	stats_of(j, &s1);
	if (j->rank == 0) {
		TP_CHECK_EQ(s1.chan_send_tx_msgs - s0.chan_send_tx_msgs, 7);
		TP_CHECK_EQ(s1.chan_send_tx_bytes - s0.chan_send_tx_bytes,
			    7 * sizeof(cbuf));
	} else {
		TP_CHECK_EQ(s1.chan_send_rx_msgs - s0.chan_send_rx_msgs, 7);
		TP_CHECK_EQ(s1.chan_send_rx_bytes - s0.chan_send_rx_bytes,
			    7 * sizeof(cbuf));
	}
	/* freed: the counts stay with the context */
	TP_CHECK_OK(rcx_bind_free(&ch, 1));
	stats_of(j, &s0);
	TP_CHECK_EQ(s0.chan_send_tx_msgs + s0.chan_send_rx_msgs,
		    s1.chan_send_tx_msgs + s1.chan_send_rx_msgs);
	TP_CHECK_OK(rcx_group_barrier(j->g));
}

static void trace_setup(void)
{
	setenv("RCX_LOG_LEVEL", "trace", 1);
	setenv("RCX_LOG_FILE", "/tmp/rcx-test-trace.%p", 1);
}

/* RCX_LOG_LEVEL=trace: a line per WR posted and per completion */
static void sc_trace(struct tp_job *j)
{
	static char text[1 << 16];
	char buf[64] = "x", path[64], want[64];
	size_t len = sizeof(buf);

	if (j->rank == 0)
		TP_CHECK_OK(rcx_send(j->g, buf, sizeof(buf), 1, 9));
	else if (j->rank == 1)
		TP_CHECK_OK(rcx_recv(j->g, buf, sizeof(buf), 0, 9,
				     RCX_STATUS_IGNORE));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	snprintf(path, sizeof(path), "/tmp/rcx-test-trace.%d", (int)getpid());
	api_read_text(path, text, sizeof(text));
	unlink(path);
	/* the message: its 64 bytes, the header in the immediate (sent as
	 * a prepared WR) */
	snprintf(want, sizeof(want), "%s len %zu ",
		 j->rank ? "cq trace: completion RECV"
			 : "wr trace: post prepared send",
		 len);
	if (j->rank < 2)
		TP_CHECK(strstr(text, want) != NULL);
	/* both receive in the barrier */
	TP_CHECK(strstr(text, "cq trace: completion RECV ") != NULL);
	TP_CHECK(strstr(text, "status 0 (ok)") != NULL);
}

static const struct tp_scenario scenarios[] = {
	{ .name = "stats", .run = sc_stats },
	{ .name = "trace", .run = sc_trace, .setup = trace_setup },
	{ .name = "paths", .run = sc_paths },
	{ .name = "launcher_paths",
	  .run = sc_launcher_paths,
	  .setup = launcher_setup },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("api", scenarios, TP_COUNT(scenarios), argc, argv);
}

const struct tu_peer tu_peer_api = { "api", peer_main };

void api_provider_per_peer(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(4, "api", "paths", 120), 0);
}

/* Same-node peers from the launcher's node names (srun's). */
void api_launcher_nodes(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(4, "api", "launcher_paths", 120), 0);
}

/* Counters of known point-to-point and channel traffic. */
void api_stats_counts(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "api", "stats", 120), 0);
}

/* Trace-level lines of WRs and completions. */
void api_trace_lines(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "api", "trace", 120), 0);
}
