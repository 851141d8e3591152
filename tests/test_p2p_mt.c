/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Threads on one RCX_THREAD_MULTIPLE context (test_p2p.h): MT_THREADS
 * threads in each of two processes exchange messages with the same thread
 * of the other process at once, each pair on its own tag, eager and
 * rendezvous sizes in turn. Each thread completes its requests its own
 * way (rcx_wait, rcx_waitall, rcx_testall with rcx_ctx_wait), so waits
 * sleep and wake next to each other; every status and payload is checked.
 * MT_ROUNDS round trips a thread, a fifth where long cases are scaled
 * down (tu_scale.h): each thread still sends every size ten times.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "test_p2p.h"
#include "tu_mp.h"
#include "tu_scale.h"

#define MT_THREADS 4
#define MT_ROUNDS  300
#define MT_SCALED  60
#define MT_TAG	   500 /* thread t's messages: tag MT_TAG + t */
#define MT_MAX	   65536

static const size_t mt_sizes[] = { 1, 64, 4096, 8192, 8193, MT_MAX };
#define MT_NSIZES (int)(sizeof(mt_sizes) / sizeof(mt_sizes[0]))

struct mt_thread {
	struct tp_job *j;
	atomic_int *go;
	int t;
	int rounds;
	int done; /* round trips checked */
};

/* Round k of thread t: both ends know its size and pattern. */
static bool mt_round(struct mt_thread *m, int k, uint8_t *sb, uint8_t *rb)
{
	struct tp_job *j = m->j;
	int peer = 1 - j->rank, tag = MT_TAG + m->t;
	int salt = k * MT_THREADS + m->t;
	size_t len = mt_sizes[(k + m->t) % MT_NSIZES];
	struct rcx_req *r[2];
	struct rcx_status st[2];
	char what[80];
	bool ok;

	snprintf(what, sizeof(what), "thread %d, round %d, %zu bytes", m->t, k,
		 len);
	fill(sb, len, j->rank, peer, salt);
	memset(rb, FILL, len + GUARD);
	if (!TP_CHECK_OK(rcx_irecv(j->g, rb, len, peer, tag, &r[0])) ||
	    !TP_CHECK_OK(rcx_isend(j->g, sb, len, peer, tag, &r[1])))
		return false;
	switch (m->t % 3) {
	case 0:
		ok = TP_CHECK_OK(rcx_wait(&r[0], &st[0])) &&
		     TP_CHECK_OK(rcx_wait(&r[1], &st[1]));
		break;
	case 1:
		ok = TP_CHECK_OK(rcx_waitall(2, r, st));
		break;
	default:
		ok = TP_CHECK_OK(wait_all(j, 2, r, st, what));
		break;
	}
	return ok && check_status(&st[0], peer, tag, len, 0, what) &&
	       check_sent(&st[1], len, what) &&
	       check_data(rb, len, true, peer, j->rank, salt, what);
}

static void *mt_main(void *arg)
{
	struct mt_thread *m = arg;
	uint8_t *sb = malloc(MT_MAX), *rb = rbuf_new(MT_MAX);
	int k;

	/* all threads start together */
	while (!atomic_load(m->go))
		usleep(100);
	for (k = 0; TP_CHECK(sb && rb) && k < m->rounds; k++) {
		if (!mt_round(m, k, sb, rb))
			break;
		m->done++;
	}
	free(sb);
	free(rb);
	return NULL;
}

void sc_threads(struct tp_job *j)
{
	struct mt_thread m[MT_THREADS];
	pthread_t th[MT_THREADS];
	atomic_int go = 0;
	int i, n, total = 0, rounds = (int)tu_scale(MT_ROUNDS, MT_SCALED);

	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (n = 0; n < MT_THREADS; n++) {
		m[n].j = j;
		m[n].go = &go;
		m[n].t = n;
		m[n].rounds = rounds;
		m[n].done = 0;
		if (!TP_CHECK_EQ(pthread_create(&th[n], NULL, mt_main, &m[n]),
				 0))
			break;
	}
	atomic_store(&go, 1);
	for (i = 0; i < n; i++) {
		pthread_join(th[i], NULL);
		TP_CHECK_EQ(m[i].done, rounds);
		total += m[i].done;
	}
	printf("rank %d: %d threads, %d round trips checked\n", j->rank, n,
	       total);
}
