/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The span message of validate (win_ft.c): what an origin says it wrote
 * in a target's window during the failed epoch. The input is the window
 * length (u64, little-endian) and then the message. Oracles: at most
 * RCX__WIN_SPANS ranges, each non-empty, inside the window and in the
 * origin's name.
 */
#include <string.h>
#include "fz.h"
#include "lib/win/win_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rcx_win_range out[RCX__WIN_SPANS];
	uint64_t win_len;
	int n, k;

	if (size < sizeof(win_len))
		return 0;
	memcpy(&win_len, data, sizeof(win_len));
	n = rcx__win_spans_read(data + sizeof(win_len), size - sizeof(win_len),
				win_len, 7, out);
	FZ_ASSERT(n >= 0 && n <= RCX__WIN_SPANS);
	for (k = 0; k < n; k++) {
		FZ_ASSERT(out[k].origin == 7);
		FZ_ASSERT(out[k].len > 0);
		FZ_ASSERT(out[k].offset < win_len);
		FZ_ASSERT(out[k].len <= win_len - out[k].offset);
	}
	return 0;
}
