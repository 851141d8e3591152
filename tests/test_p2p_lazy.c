/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Lazy connections (RCX_CONNECT=lazy), part of the "p2p" suite: a world
 * whose pairs connect on their first message. The checks look at the
 * connections themselves (state, endpoint, receive ring), so they prove
 * what was connected when, not only that messages arrive.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "providers/provider.h"
#include "lib/boot/boot.h"
#include "lib/core/core.h"
#include "test_p2p.h"
#include "tu.h"

enum { LZ_TAG = 31, LZ_LEN = 4096 };

void sc_lazy_setup(void)
{
	setenv("RCX_CONNECT", "lazy", 1);
}

void sc_eager_setup(void)
{
	setenv("RCX_CONNECT", "eager", 1);
}

/* Connection to peer: nothing made (no endpoint, no ring) or up. */
static bool conn_idle(struct tp_job *j, int peer)
{
	const struct rcx__conn *c = j->g->conns[peer];

	return c && c->state == RCX__CONN_IDLE && !c->ep && !c->rx;
}

static bool conn_up(struct tp_job *j, int peer)
{
	const struct rcx__conn *c = j->g->conns[peer];

	return c && c->state == RCX__CONN_UP && c->ep && c->rx;
}

/*
 * An ask's endpoint goes when its answer (the rejection) comes, which may
 * be after the connection it asked for is up: progress until every ask of
 * this rank is answered, for at most 10 s.
 */
static void asks_answered(struct tp_job *j)
{
	long long end = tu_now_ms() + 10000;
	int i, left;

	do {
		rcx_progress(j->ctx);
		for (i = 0, left = 0; i < j->size; i++)
			left += i != j->rank && j->g->conns[i]->ask_ep;
	} while (left && tu_now_ms() < end);
	if (left)
		TP_FAIL("rank %d: %d ask endpoint(s) never answered", j->rank,
			left);
}

/*
 * A barrier beside rcx (files in /dev/shm): any message through rcx would
 * connect the ranks the checks expect unconnected.
 */
static void oob_name(struct tp_job *j, int phase, int rank, char *buf,
		     size_t len)
{
	snprintf(buf, len, "/dev/shm/rcx-test-lazy.%llx.%d.%d",
		 (unsigned long long)j->ctx->boot->jobid, phase, rank);
}

static void oob_barrier(struct tp_job *j, int phase)
{
	struct timespec ts = { 0, 1000000 };
	char name[96];
	int i, fd, tries;

	oob_name(j, phase, j->rank, name, sizeof(name));
	fd = open(name, O_CREAT | O_WRONLY, 0600);
	if (!TP_CHECK(fd >= 0))
		return;
	close(fd);
	for (i = 0; i < j->size; i++) {
		oob_name(j, phase, i, name, sizeof(name));
		for (tries = 0; access(name, F_OK) && tries < 60000; tries++)
			nanosleep(&ts, NULL);
		if (tries == 60000)
			TP_FAIL("rank %d: rank %d never reached phase %d",
				j->rank, i, phase);
	}
}

/* After an rcx barrier: everyone is past the files. */
static void oob_clean(struct tp_job *j, int phases)
{
	char name[96];
	int p;

	for (p = 0; p < phases; p++) {
		oob_name(j, p, j->rank, name, sizeof(name));
		unlink(name);
	}
}

/* Send a patterned message to dst and receive one from src (-1: none). */
static void exchange(struct tp_job *j, int dst, int src, int salt,
		     const char *what)
{
	struct rcx_req *r[2] = { NULL, NULL };
	struct rcx_status st[2];
	uint8_t *sbuf = malloc(LZ_LEN), *rb = rbuf_new(LZ_LEN);
	int n = 0;

	if (!TP_CHECK(sbuf && rb))
		goto out;
	if (src >= 0)
		TP_CHECK_OK(rcx_irecv(j->g, rb, LZ_LEN, src, LZ_TAG, &r[n++]));
	if (dst >= 0) {
		fill(sbuf, LZ_LEN, j->rank, dst, salt);
		TP_CHECK_OK(
			rcx_isend(j->g, sbuf, LZ_LEN, dst, LZ_TAG, &r[n++]));
	}
	if (!n || wait_all(j, n, r, st, what))
		goto out;
	if (src >= 0) {
		check_status(&st[0], src, LZ_TAG, LZ_LEN, 0, what);
		check_data(rb, LZ_LEN, true, src, j->rank, salt, what);
	}
out:
	free(sbuf);
	free(rb);
}

/*
 * 4 ranks. Phase 1: 0 -> 3 (the lower rank speaks first: it asks 3 to
 * connect) and 2 -> 1 (the higher rank connects at once); the other pairs
 * stay unconnected. Phase 2: 1 and 3 send to each other at the same time
 * (both start the pair: one connection comes out). Phase 3: everyone
 * with everyone.
 */
void sc_lazy(struct tp_job *j)
{
	static const int peer1[4] = { 3, 2, 1, 0 };
	int i, p = peer1[j->rank];

	for (i = 0; i < j->size; i++)
		if (i != j->rank && !conn_idle(j, i))
			TP_FAIL("rank %d: connection to %d made before use",
				j->rank, i);
	oob_barrier(j, 0);
	if (j->rank == 0 || j->rank == 2)
		exchange(j, p, -1, 1, "first message");
	else
		exchange(j, -1, p, 1, "first message");
	TP_CHECK(conn_up(j, p));
	for (i = 0; i < j->size; i++)
		if (i != j->rank && i != p && !conn_idle(j, i))
			TP_FAIL("rank %d: connection to %d made, never used",
				j->rank, i);
	printf("rank %d: after the first message only the pair %d-%d is "
	       "connected\n",
	       j->rank, j->rank, p);
	oob_barrier(j, 1);

	if (j->rank == 1 || j->rank == 3) {
		exchange(j, 4 - j->rank, 4 - j->rank, 2, "crossing first");
		TP_CHECK(conn_up(j, 4 - j->rank));
	}

	for (i = 1; i < j->size; i++)
		exchange(j, (j->rank + i) % j->size,
			 (j->rank - i + j->size) % j->size, 3 + i, "all");
	for (i = 0; i < j->size; i++)
		if (i != j->rank && !conn_up(j, i))
			TP_FAIL("rank %d: connection to %d not up after use",
				j->rank, i);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	asks_answered(j);
	oob_clean(j, 2);
}

/*
 * Window creation connects the whole group at once: a put to every rank
 * right after it, with no message sent before.
 */
void sc_lazy_win(struct tp_job *j)
{
	struct rcx_win *w = NULL;
	uint64_t *base = NULL, v;
	int i;

	if (!TP_CHECK_OK(rcx_win_allocate(j->g, 8 * (size_t)j->size, 8, NULL,
					  (void **)&base, &w)))
		return;
	for (i = 0; i < j->size; i++)
		if (i != j->rank && !conn_up(j, i))
			TP_FAIL("rank %d: window made, connection to %d not up",
				j->rank, i);
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (i = 0; i < j->size; i++) {
		v = 1000u * (unsigned)j->rank + (unsigned)i;
		TP_CHECK_OK(rcx_put(w, &v, 8, i, (size_t)j->rank));
	}
	TP_CHECK_OK(rcx_win_fence(w, 0));
	for (i = 0; i < j->size; i++)
		TP_CHECK_EQ(base[i], 1000u * (unsigned)i + (unsigned)j->rank);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* RCX_CONNECT=eager: every pair is up when the world is made. */
void sc_eager(struct tp_job *j)
{
	int i;

	for (i = 0; i < j->size; i++)
		if (i != j->rank && !conn_up(j, i))
			TP_FAIL("rank %d: eager world, connection to %d not up",
				j->rank, i);
	for (i = 1; i < j->size; i++)
		exchange(j, (j->rank + i) % j->size,
			 (j->rank - i + j->size) % j->size, 9 + i, "eager");
}
