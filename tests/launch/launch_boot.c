/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One rank of a bootstrap check, started by a launcher: mpirun (the pmix
 * backend) or rcx-run (local). No RDMA device is needed.
 *
 *	launch_boot BACKEND NRANKS [notice]
 *
 * Checks the backend chosen automatically, rank and size, one jobid on
 * every rank, allgather rounds of several lengths (zero included), a
 * round in which one rank gives another length (every rank gets -EPROTO,
 * and the next round works), barriers, and that nothing is reported as
 * failed. Exits 0 when all hold, 1 with a message otherwise.
 *
 * With "notice", the last rank then kills itself (SIGKILL) and the others
 * wait up to NOTICE_MS for the launcher's failure notice (event_fd,
 * poll_failed) and print whether and when it came: what a launcher tells
 * (Slurm's PMIx server may tell nothing). Only a wrong notice fails.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <stdint.h>
#include <string.h>
#include "lib/boot/boot.h"
#include "launch.h"

#define BIG_BLOB  100000
#define NOTICE_MS 10000

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The last rank dies; the others report the launcher's notice, if any. */
static void notice(struct rcx__boot *b)
{
	int victim = b->size - 1, failed = -1, ret = 0;
	struct pollfd pfd = { .fd = b->ops->event_fd(b), .events = POLLIN };
	long long start;

	CHECK(b->size >= 2, "notice needs 2 ranks or more");
	if (b->rank == victim) {
		fflush(NULL);
		raise(SIGKILL);
	}
	start = now_ms();
	while (now_ms() - start < NOTICE_MS) {
		ret = b->ops->poll_failed(b, &failed);
		if (ret)
			break;
		poll(&pfd, 1, 100);
	}
	CHECK(ret >= 0, "poll_failed: %s", rcx_strerror(ret));
	if (!ret) {
		printf("launch_boot notice: rank %d: no failure notice from "
		       "the %s backend in %d ms\n",
		       b->rank, b->ops->name, NOTICE_MS);
		return;
	}
	CHECK(failed == victim, "rank %d reported failed", failed);
	printf("launch_boot notice: rank %d: the %s backend reported rank %d "
	       "failed after %lld ms\n",
	       b->rank, b->ops->name, failed, now_ms() - start);
}

static uint8_t pattern(int rank, size_t i, int round)
{
	return (uint8_t)(rank * 31 + i * 7 + round);
}

/* One round of len bytes per rank, checked. */
static void gather_round(struct rcx__boot *b, size_t len, int round)
{
	uint8_t *in = malloc(len + 1), *out = malloc(len * b->size + 1);
	size_t i;
	int r, ret;

	CHECK(in && out, "out of memory");
	for (i = 0; i < len; i++)
		in[i] = pattern(b->rank, i, round);
	ret = b->ops->allgather(b, in, len, out);
	CHECK(!ret, "allgather of %zu bytes: %s", len, rcx_strerror(ret));
	for (r = 0; r < b->size; r++)
		for (i = 0; i < len; i++)
			CHECK(out[r * len + i] == pattern(r, i, round),
			      "allgather of %zu bytes: rank %d byte %zu", len,
			      r, i);
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	struct rcx__boot *b = NULL;
	uint64_t *ids;
	int32_t *ranks;
	char odd[16] = { 0 }, *all;
	int want, r, ret, failed = -1;
	struct pollfd pfd;

	if (argc < 3 || argc > 4 || (want = atoi(argv[2])) < 1 ||
	    (argc == 4 && strcmp(argv[3], "notice"))) {
		fprintf(stderr, "usage: launch_boot BACKEND NRANKS [notice]\n");
		return 2;
	}
	ret = rcx__boot_open(NULL, &b);
	CHECK(!ret, "rcx__boot_open: %s", rcx_strerror(ret));
	launch_rank = b->rank;
	CHECK(!strcmp(b->ops->name, argv[1]), "backend %s, expected %s",
	      b->ops->name, argv[1]);
	CHECK(b->size == want && b->rank >= 0 && b->rank < want,
	      "rank %d of %d, expected %d ranks", b->rank, b->size, want);
	CHECK(b->jobid != 0, "jobid 0");

	/* distinct ranks, one jobid */
	ranks = calloc(want, sizeof(*ranks));
	ids = calloc(want, sizeof(*ids));
	all = calloc(want, sizeof(odd));
	CHECK(ranks && ids && all, "out of memory");
	ret = b->ops->allgather(b, &b->rank, sizeof(int32_t), ranks);
	CHECK(!ret, "allgather: %s", rcx_strerror(ret));
	for (r = 0; r < want; r++)
		CHECK(ranks[r] == r, "slot %d holds rank %d", r, ranks[r]);
	ret = b->ops->allgather(b, &b->jobid, sizeof(uint64_t), ids);
	CHECK(!ret, "allgather: %s", rcx_strerror(ret));
	for (r = 0; r < want; r++)
		CHECK(ids[r] == b->jobid, "rank %d has another jobid", r);

	gather_round(b, 0, 1);
	gather_round(b, 1, 2);
	gather_round(b, 300, 3); /* past any small inline buffer */
	gather_round(b, BIG_BLOB, 4);
	CHECK(!b->ops->barrier(b), "barrier");

	/* rank 1 gives one byte more: a collective error, then all is well */
	ret = b->ops->allgather(b, odd, 8 + (want > 1 && b->rank == 1), all);
	CHECK(want == 1 || ret == -EPROTO, "lengths differ: got %s",
	      rcx_strerror(ret));
	gather_round(b, 16, 5);

	/* nothing failed: event_fd quiet, poll_failed empty */
	pfd.fd = b->ops->event_fd(b);
	pfd.events = POLLIN;
	CHECK(pfd.fd >= 0, "event_fd %d", pfd.fd);
	CHECK(poll(&pfd, 1, 0) == 0, "event_fd readable with no failure");
	CHECK(b->ops->poll_failed(b, &failed) == 0, "rank %d reported failed",
	      failed);
	CHECK(!b->ops->barrier(b), "last barrier");
	if (argc == 4)
		notice(b);
	printf("launch_boot: rank %d of %d (%s) ok\n", b->rank, b->size,
	       b->ops->name);
	rcx__boot_close(b);
	free(ranks);
	free(ids);
	free(all);
	return 0;
}
