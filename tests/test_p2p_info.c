/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rcx_group_peer_info, part of the "p2p" suite: what a connection got,
 * checked against the other end (each end's queue pair is the other's
 * remote one) and against the provider the context runs, and the errors
 * of a bad rank, version or handle, which change nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "providers/provider.h"
#include "lib/core/core.h"
#include "test_p2p.h"
#include "tu.h"

/*
 * The provider that made the endpoint of the connection to peer: under
 * auto shm for a peer of this node, verbs for one of another (rcx-run
 * --nodes), and the lower provider under fault.
 */
static const char *expected_provider(struct tp_job *j, int peer)
{
	const struct rcx__conn *c = j->g->conns[peer];

	return c && c->ep ? rcx__obj_ops(c->ep)->name : "(no endpoint)";
}

static void bad_calls(struct tp_job *j, int peer)
{
	struct rcx_peer_info info, before;

	memset(&info, 0x5a, sizeof(info));
	info.version = RCX_PEER_INFO_VERSION;
	before = info;
	TP_CHECK_EQ(rcx_group_peer_info(j->g, -1, &info), -EINVAL);
	TP_CHECK_EQ(rcx_group_peer_info(j->g, j->size, &info), -EINVAL);
	TP_CHECK_EQ(rcx_group_peer_info(j->g, j->rank, &info), -ENOTCONN);
	TP_CHECK_EQ(rcx_group_peer_info(NULL, peer, &info), -EINVAL);
	TP_CHECK_EQ(rcx_group_peer_info(j->g, peer, NULL), -EINVAL);
	TP_CHECK(!memcmp(&info, &before, sizeof(info)));
	info.version = 0;
	TP_CHECK_EQ(rcx_group_peer_info(j->g, peer, &info), -EINVAL);
	info.version = RCX_PEER_INFO_VERSION + 1;
	TP_CHECK_EQ(rcx_group_peer_info(j->g, peer, &info), -EINVAL);
}

void sc_peer_info(struct tp_job *j)
{
	struct rcx_peer_info info = { .version = RCX_PEER_INFO_VERSION };
	unsigned int qpn[2][2];
	char dev[64];
	int peer = 1 - j->rank;

	/* lazy: no connection before the first message */
	TP_CHECK_EQ(rcx_group_peer_info(j->g, peer, &info), -ENOTCONN);
	bad_calls(j, peer);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_group_peer_info(j->g, peer, &info));
	TP_CHECK_EQ(info.version, RCX_PEER_INFO_VERSION);
	if (strcmp(info.provider, expected_provider(j, peer)))
		TP_FAIL("rank %d: provider %s, expected %s", j->rank,
			info.provider, expected_provider(j, peer));
	TP_CHECK(info.max_inline > 0);
	if (!strcmp(info.provider, "shm")) {
		TP_CHECK(!strcmp(info.device, "shm"));
		TP_CHECK_EQ(info.local_qpn, 0);
		TP_CHECK_EQ(info.remote_qpn, 0);
		TP_CHECK_EQ(info.path_mtu, 0);
	} else {
		TP_CHECK_OK(rcx_ctx_device(j->ctx, dev, sizeof(dev)));
		if (strcmp(info.device, dev))
			TP_FAIL("rank %d: device %s, the context's %s", j->rank,
				info.device, dev);
		TP_CHECK(info.local_qpn != 0 && info.remote_qpn != 0);
		TP_CHECK(info.path_mtu >= 256 && info.path_mtu <= 4096 &&
			 !(info.path_mtu & (info.path_mtu - 1)));
		/* not more than RCX_INLINE asked for (default 64) */
		TP_CHECK(info.max_inline <=
			 (unsigned int)j->ctx->cfg.inline_size);
	}
	/* each end's queue pair is the other's remote one */
	TP_CHECK_OK(rcx_group_allgather(
		j->g, (unsigned int[2]){ info.local_qpn, info.remote_qpn },
		sizeof(qpn[0]), qpn));
	TP_CHECK_EQ(qpn[j->rank][0], qpn[peer][1]);
	TP_CHECK_EQ(qpn[j->rank][1], qpn[peer][0]);
	printf("rank %d: peer %d over %s on %s, QPN %#x -> %#x, MTU %u, "
	       "inline %u\n",
	       j->rank, peer, info.provider, info.device, info.local_qpn,
	       info.remote_qpn, info.path_mtu, info.max_inline);
	TP_CHECK_OK(rcx_group_barrier(j->g));
}
