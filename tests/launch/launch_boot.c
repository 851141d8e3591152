/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One rank of a bootstrap check, started by a launcher: mpirun (the pmix
 * backend) or rcx-run (local). No RDMA device is needed.
 *
 *	launch_boot BACKEND NRANKS
 *
 * Checks the backend chosen automatically, rank and size, one jobid on
 * every rank, allgather rounds of several lengths (zero included), a
 * round in which one rank gives another length (every rank gets -EPROTO,
 * and the next round works), barriers, and that nothing is reported as
 * failed. Exits 0 when all hold, 1 with a message otherwise.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include "lib/boot/boot.h"
#include "launch.h"

#define BIG_BLOB 100000

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

	if (argc != 3 || (want = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: launch_boot BACKEND NRANKS\n");
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
	printf("launch_boot: rank %d of %d (%s) ok\n", b->rank, b->size,
	       b->ops->name);
	rcx__boot_close(b);
	free(ranks);
	free(ids);
	free(all);
	return 0;
}
