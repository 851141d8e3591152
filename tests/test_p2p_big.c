/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Large rendezvous messages, part of the "p2p" peer role. "big2g" (suite
 * p2p_big, shared memory, slow): one message past 2 GiB (beyond what one
 * process_vm_readv moves), every word checked at the receiver.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <rcx/rcx.h>
#include "test_p2p.h"
#include "tu.h"

/* ---- one message larger than 2 GiB, shared memory */

#define BIG_SALT 0xa5a5a5a5a5a5a5a5ull
#define BIG_TAG	 77

/* Each 8-byte word holds its offset (salted: no word is 0). */
static uint64_t big_word(size_t off)
{
	return (uint64_t)off ^ BIG_SALT;
}

/* Anonymous memory, pages made on first touch; NULL on failure. */
static uint64_t *big_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static bool big_check(const uint64_t *w, size_t len)
{
	size_t i;

	for (i = 0; i < len / 8; i++) {
		if (w[i] != big_word(8 * i)) {
			TP_FAIL("word at offset %zu of %zu is 0x%llx, want "
				"0x%llx",
				8 * i, len, (unsigned long long)w[i],
				(unsigned long long)big_word(8 * i));
			return false;
		}
	}
	return true;
}

/* 2 procs: rank 0 sends len bytes (a multiple of 8), rank 1 checks. */
static void big_message(struct tp_job *j, size_t len)
{
	/* the receive buffer has a page more, that must stay untouched */
	size_t mlen = j->rank ? len + 4096 : len, i;
	uint64_t *b = big_map(mlen);
	struct rcx_req *r = NULL;
	struct rcx_status st;
	uint8_t *guard;

	if (!TP_CHECK(b))
		return;
	if (j->rank == 0) {
		for (i = 0; i < len / 8; i++)
			b[i] = big_word(8 * i);
		if (TP_CHECK_OK(rcx_isend(j->g, b, len, 1, BIG_TAG, &r)) &&
		    !wait_req(j, &r, &st, "big send"))
			check_sent(&st, len, "big send");
	} else {
		guard = (uint8_t *)b + len;
		memset(guard, FILL, 4096);
		if (TP_CHECK_OK(rcx_irecv(j->g, b, len, 0, BIG_TAG, &r)) &&
		    !wait_req(j, &r, &st, "big receive") &&
		    check_status(&st, 0, BIG_TAG, len, 0, "big receive") &&
		    big_check(b, len)) {
			for (i = 0; i < 4096; i++)
				if (guard[i] != FILL)
					break;
			if (i < 4096)
				TP_FAIL("byte %zu past the message written", i);
		}
	}
	munmap(b, mlen);
}

void sc_big2g(struct tp_job *j)
{
	big_message(j, (2ull << 30) + 4096);
}

/* ---- the suite p2p_big: large messages (slow) */

static void test_big2g(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "p2p", "big2g", 300), 0);
}

static const CU_TestInfo tests[] = {
	{ "message_2GiB_plus_4KiB", test_big2g },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_p2p_big = {
	"p2p_big", TU_DEVICE, NULL, NULL, tests,
};
