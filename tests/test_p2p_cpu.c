/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Two ranks on one CPU (test_p2p.h): both pinned to the same CPU and
 * spinning in their waits (RCX_SPIN_US as large as the latency tools
 * set it), they ping-pong eager and rendezvous messages. A waiter that
 * kept the CPU its peer needs spun until the scheduler's tick, a time
 * slice per message; one that gives the CPU to a peer waiting behind it
 * polls a few times. Counted, not timed: each rank's empty polls
 * per round trip.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "test_p2p.h"
#include "tu_mp.h"

#define CPU_ROUNDS 200
#define CPU_TAG	   31
/*
 * Empty polls allowed per round trip (two waits): the shm provider
 * yields after 4 in a row (SHM_YIELD_POLLS; and now and then pauses its
 * yields, SHM_YIELD_PAUSE); a waiter that held the CPU for a time slice
 * polled tens of thousands of times.
 */
#define CPU_POLLS 4096

static const size_t cpu_sizes[] = { 8, 65536 };

void sc_cpu_setup(void)
{
	setenv("RCX_SPIN_US", "10000000", 1);
}

/* Is the peer reached through shared memory? */
static bool peer_on_shm(struct tp_job *j, int peer)
{
	struct rcx_peer_info pi = { .version = RCX_PEER_INFO_VERSION };

	return !rcx_group_peer_info(j->g, peer, &pi) &&
	       !strcmp(pi.provider, "shm");
}

static void ping_pong(struct tp_job *j, uint8_t *buf, size_t len, int peer)
{
	int i;

	for (i = 0; i < CPU_ROUNDS; i++) {
		if (j->rank == 0) {
			TP_CHECK_OK(rcx_send(j->g, buf, len, peer, CPU_TAG));
			TP_CHECK_OK(rcx_recv(j->g, buf, len, peer, CPU_TAG,
					     RCX_STATUS_IGNORE));
		} else {
			TP_CHECK_OK(rcx_recv(j->g, buf, len, peer, CPU_TAG,
					     RCX_STATUS_IGNORE));
			TP_CHECK_OK(rcx_send(j->g, buf, len, peer, CPU_TAG));
		}
	}
}

void sc_shared_cpu(struct tp_job *j)
{
	struct rcx_stats s0 = { .size = sizeof(s0) },
			 s1 = { .size = sizeof(s1) };
	int peer = 1 - j->rank, cpu;
	unsigned long long polls;
	uint8_t *buf;
	size_t k;

	buf = calloc(1, cpu_sizes[TP_COUNT(cpu_sizes) - 1]);
	if (!TP_CHECK(buf))
		return;
	/* connected first (a lazy connection): then its provider is known */
	ping_pong(j, buf, cpu_sizes[0], peer);
	if (!peer_on_shm(j, peer)) {
		/* a verbs peer's waits keep the CPU: not pinned, not counted */
		printf("rank %d: the peer is not on shared memory: not "
		       "counted\n",
		       j->rank);
		free(buf);
		return;
	}
	cpu = tp_pin_cpu(0);
	if (!TP_CHECK(cpu >= 0)) {
		free(buf);
		return;
	}
	for (k = 0; k < TP_COUNT(cpu_sizes); k++) {
		/* the rendezvous buffer registered, both ranks pinned */
		ping_pong(j, buf, cpu_sizes[k], peer);
		TP_CHECK_OK(rcx_ctx_stats(j->ctx, &s0));
		ping_pong(j, buf, cpu_sizes[k], peer);
		TP_CHECK_OK(rcx_ctx_stats(j->ctx, &s1));
		polls = s1.empty_polls - s0.empty_polls;
		printf("rank %d on cpu %d: %zu bytes: %llu empty polls in %d "
		       "round trips\n",
		       j->rank, cpu, cpu_sizes[k], polls, CPU_ROUNDS);
		if (!TP_CHECK(polls <
			      (unsigned long long)CPU_POLLS * CPU_ROUNDS))
			fprintf(stderr,
				"rank %d: %llu empty polls per round trip of "
				"%zu bytes on a shared CPU\n",
				j->rank, polls / CPU_ROUNDS, cpu_sizes[k]);
	}
	free(buf);
}
