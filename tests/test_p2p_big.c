/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Rendezvous messages read in several pieces, part of the "p2p" peer
 * role. "split" (suite p2p, every provider): RCX_RNDV_READ_MAX makes the
 * receiver read a message in pieces of an odd size; the recording
 * provider shows each READ within it and that they cover the message
 * once. "split_dev" (suite p2p): the same at the device's own limit,
 * where that is small enough (rxe: 8 MiB). "big4g", "big2g" (suite
 * p2p_big, shared memory, slow): one message past 4 GiB (beyond a 32-bit
 * length) and one past 2 GiB (beyond what one process_vm_readv moves),
 * every word checked at the receiver.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <rcx/rcx.h>
#include "providers/fault/fault.h"
#include "providers/provider.h"
#include "lib/core/core.h"
#include "test_p2p.h"
#include "tu.h"

/* ---- split: pieces of an odd size, pre-posted and unexpected */

#define PIECE	  12345
#define PIECE_STR "12345"

void sc_split_setup(void)
{
	setenv("RCX_RNDV_READ_MAX", PIECE_STR, 1);
}

/* message length, receive buffer length */
static const size_t split_cases[][2] = {
	{ PIECE + 1, PIECE + 1 },
	{ 2 * PIECE, 2 * PIECE },
	{ 2 * PIECE + 1, 2 * PIECE + 1 },
	{ 7 * PIECE - 3, 7 * PIECE - 3 },
	{ (1u << 20) + 5, (1u << 20) + 5 },
	{ 5 * PIECE + 3, 3 * PIECE + 1 }, /* truncated */
};
#define NSPLIT (int)(sizeof(split_cases) / sizeof(split_cases[0]))

/* The READs posted on ep since mark: each within piece, n bytes in all. */
static void check_reads(const struct rcx_ep *ep, size_t mark, size_t n,
			size_t piece, const char *what)
{
	size_t i, sum = 0, reads = 0, end = rcx__fault_log_count();
	size_t want = (n + piece - 1) / piece;
	struct rcx_fault_wr wr;

	for (i = mark; i < end; i++) {
		if (!TP_CHECK_OK(rcx__fault_log_get(i, &wr)))
			return;
		if (wr.ep != ep || wr.op != RCX_OP_READ)
			continue;
		if (wr.length > piece)
			TP_FAIL("%s: a READ of %u bytes, more than %zu", what,
				wr.length, piece);
		sum += wr.length;
		reads++;
	}
	if (sum != n || reads != want)
		TP_FAIL("%s: %zu READs of %zu bytes in all, want %zu of %zu",
			what, reads, sum, want, n);
}

/*
 * Rank 0 sends len bytes of sb, rank 1 receives them into rlen bytes,
 * its receive posted before the message comes or after (late); it must
 * have read them in pieces of at most piece bytes.
 */
static void split_one(struct tp_job *j, size_t len, size_t rlen, size_t piece,
		      int tag, bool late, uint8_t *sb)
{
	int peer = !j->rank;
	struct rcx_req *r = NULL;
	struct rcx_status st;
	uint8_t *rb;
	size_t mark;
	char what[64];

	snprintf(what, sizeof(what), "%zu bytes into %zu, %s", len, rlen,
		 late ? "unexpected" : "pre-posted");
	if (j->rank == 0) {
		fill(sb, len, 0, 1, tag);
		if (late)
			TP_CHECK_OK(rcx_isend(j->g, sb, len, peer, tag, &r));
		TP_CHECK_OK(rcx_group_barrier(j->g));
		if (!late)
			TP_CHECK_OK(rcx_isend(j->g, sb, len, peer, tag, &r));
		if (r && !wait_req(j, &r, &st, what))
			check_sent(&st, len, what);
		return;
	}
	rb = rbuf_new(rlen);
	if (!TP_CHECK(rb))
		return;
	mark = rcx__fault_log_count();
	if (!late)
		TP_CHECK_OK(rcx_irecv(j->g, rb, rlen, peer, tag, &r));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (late)
		TP_CHECK_OK(rcx_irecv(j->g, rb, rlen, peer, tag, &r));
	if (r && !wait_req(j, &r, &st, what)) {
		check_status(&st, peer, tag, rlen,
			     rlen < len ? RCX_ERR_TRUNCATE : 0, what);
		check_data(rb, rlen, true, 0, 1, tag, what);
		check_reads(j->g->conns[peer]->ep, mark, rlen, piece, what);
	}
	free(rb);
}

/*
 * 2 procs, the recording provider: rank 0 sends, rank 1 receives. A READ
 * completion that ended the receive early (or more than once) shows in
 * its data and status, or in a FIN the sender does not expect, which
 * fails the connection and so the job's closing barrier.
 */
void sc_split(struct tp_job *j)
{
	uint8_t *sb = malloc((1u << 20) + 5);
	int k;

	if (!TP_CHECK(sb))
		return;
	for (k = 0; k < NSPLIT; k++) {
		split_one(j, split_cases[k][0], split_cases[k][1], PIECE, 2 * k,
			  false, sb);
		split_one(j, split_cases[k][0], split_cases[k][1], PIECE,
			  2 * k + 1, true, sb);
	}
	free(sb);
}

/* Devices whose longest message is at most this get "split_dev". */
#define SPLIT_DEV_MAX (64u << 20)

/*
 * The same at the device's own limit, RCX_RNDV_READ_MAX unset: a message
 * of two pieces and 5 bytes. rxe takes messages of 8 MiB (its port's
 * max_msg_sz); a device whose limit is beyond SPLIT_DEV_MAX (shm: 4 GiB)
 * has suite p2p_big for it.
 */
void sc_split_dev(struct tp_job *j)
{
	uint64_t m = j->ctx->info.max_msg_sz;
	size_t len = 2 * (size_t)m + 5;
	uint8_t *sb;

	if (!TP_CHECK(m) || m > SPLIT_DEV_MAX) {
		printf("rank %d: split_dev: %s takes messages of %llu bytes, "
		       "more than this test sends: see suite p2p_big\n",
		       j->rank, j->ctx->info.name, (unsigned long long)m);
		return;
	}
	sb = malloc(len);
	if (!TP_CHECK(sb))
		return;
	split_one(j, len, len, (size_t)m, 1, false, sb);
	split_one(j, len, len, (size_t)m, 2, true, sb);
	free(sb);
}

/* ---- one message larger than 2 GiB or 4 GiB, shared memory */

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

void sc_big4g(struct tp_job *j)
{
	big_message(j, (4ull << 30) + 8192);
}

void sc_big2g(struct tp_job *j)
{
	big_message(j, (2ull << 30) + 4096);
}

/* ---- the suite p2p_big: the two large messages (slow) */

static void test_big4g(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "p2p", "big4g", 300), 0);
}

static void test_big2g(void)
{
	CU_ASSERT_EQUAL(tu_mp_run(2, "p2p", "big2g", 300), 0);
}

static const CU_TestInfo tests[] = {
	{ "message_4GiB_plus_8KiB", test_big4g },
	{ "message_2GiB_plus_4KiB", test_big2g },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_p2p_big = {
	"p2p_big", TU_DEVICE, NULL, NULL, tests,
};
