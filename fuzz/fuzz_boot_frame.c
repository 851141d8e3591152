/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bootstrap frames (boot_wire.c): the input parsed as one frame, then fed
 * as a byte stream through a socket to the frame assembler. Oracles: a
 * frame that parses re-encodes to the same header; every frame the
 * assembler returns parses on its own and lies inside what was sent.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include "fz.h"
#include "lib/boot/boot_wire.h"

static void one_frame(const uint8_t *data, size_t size)
{
	struct rcx__boot_frame f, f2;
	uint8_t hdr[RCX__BOOT_HDR_LEN];

	if (rcx__boot_frame_parse(data, size, &f))
		return;
	FZ_ASSERT(size == RCX__BOOT_HDR_LEN + (size_t)f.len);
	FZ_ASSERT(f.payload == data + RCX__BOOT_HDR_LEN);
	FZ_ASSERT(f.type >= RCX__BOOT_HELLO && f.type <= RCX__BOOT_DECLARE);
	FZ_ASSERT(f.status <= RCX__BOOT_STATUS_MAX);
	rcx__boot_hdr_encode(&f, hdr);
	FZ_ASSERT(!memcmp(hdr, data, sizeof(hdr)));
	FZ_ASSERT(!rcx__boot_frame_parse(data, size, &f2));
	FZ_ASSERT(!memcmp(&f, &f2, sizeof(f)));
	FZ_ASSERT(rcx__boot_status_err(f.status) <= 0);
}

static void stream(const uint8_t *data, size_t size)
{
	struct rcx__boot_rx rx;
	struct rcx__boot_frame f;
	size_t taken = 0;
	int sv[2], ret;

	FZ_ASSERT(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	FZ_ASSERT(!rcx__boot_set_nonblock(sv[0]));
	/* the whole input fits a socket buffer (-max_len is far below) */
	FZ_ASSERT(write(sv[1], data, size) == (ssize_t)size);
	close(sv[1]);
	rcx__boot_rx_init(&rx);
	while ((ret = rcx__boot_rx_next(sv[0], &rx, &f)) == 1) {
		size_t n = RCX__BOOT_HDR_LEN + (size_t)f.len;

		FZ_ASSERT(taken + n <= size);
		FZ_ASSERT(!memcmp(rx.buf, data + taken, n));
		FZ_ASSERT(f.payload == rx.buf + RCX__BOOT_HDR_LEN);
		taken += n;
	}
	/* the end is either a clean close after whole frames, or bad data */
	FZ_ASSERT(ret == -ECONNRESET || ret == -EPROTO);
	if (ret == -ECONNRESET)
		FZ_ASSERT(taken <= size);
	rcx__boot_rx_free(&rx);
	close(sv[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	one_frame(data, size);
	stream(data, size);
	return 0;
}
