/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The bootstrap client (boot_local.c, both the local and the env backend)
 * reading what the server says: the input, after one byte choosing rank
 * and backend, is the server's side of the stream. The client joins,
 * then runs allgathers and takes failure notices until the stream ends.
 * Oracles: results are written only on success, and a failed rank is
 * reported once and within the job.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "fz.h"
#include "lib/boot/boot_wire.h"

#define SIZE 2

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	setenv("RCX_BOOT_TIMEOUT_MS", "100", 1);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t in[8], out[8 * SIZE], seen[SIZE] = { 0 };
	struct rcx__boot *b;
	int sv[2], rank, env, round, r, ret;

	if (size < 1 || size > 65536)
		return 0;
	rank = data[0] & 1;
	env = !!(data[0] & 2);
	FZ_ASSERT(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	FZ_ASSERT(write(sv[1], data + 1, size - 1) == (ssize_t)size - 1);
	shutdown(sv[1], SHUT_WR);
	ret = rcx__boot_client_open(sv[0], rank, SIZE, 0, env, 100, &b);
	if (ret) {
		close(sv[1]);
		return 0;
	}
	FZ_ASSERT(b->rank == rank && b->size == SIZE);
	for (round = 0; round < 4; round++) {
		memset(in, rank + 1, sizeof(in));
		memset(out, 0xee, sizeof(out));
		ret = b->ops->allgather(b, in, sizeof(in), out);
		FZ_ASSERT(ret <= 0);
		for (r = 0; ret && r < (int)sizeof(out); r++)
			FZ_ASSERT(out[r] == 0xee); /* untouched on error */
		while ((ret = b->ops->poll_failed(b, &r)) == 1) {
			FZ_ASSERT(r >= 0 && r < SIZE && !seen[r]);
			seen[r] = 1;
		}
		FZ_ASSERT(ret <= 0);
		if (ret)
			break;
	}
	rcx__boot_close(b);
	close(sv[1]);
	return 0;
}
