/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA windows across processes (rcx-run, 2 or 4 ranks): creation and its
 * errors; put/get of many sizes to every rank including itself; every
 * accumulate call x datatype x operation against a reference computed
 * here, on the NIC path, the software path and misaligned memory;
 * atomicity under contention; same-location order across the two paths;
 * passive and active epochs; request-based operations; bounds and epoch
 * misuse, where the recording provider shows that nothing was sent; fork()
 * after registration.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <rcx/rcx.h>
#include "lib/win/win_int.h"
#include "providers/fault/fault.h"
#include "tu.h"
#include "tu_mp.h"
#include "test_win.h"

void tw_fence(struct rcx_win *w)
{
	TP_CHECK_OK(rcx_win_fence(w, 0));
}

static uint8_t pat(size_t i, int src, int dst, size_t salt)
{
	return (uint8_t)(i * 13 + (i >> 8) * 7 + src * 37 + dst * 11 +
			 salt * 101);
}

/* ---- creation */

static void sc_create(struct tp_job *j)
{
	struct rcx_win *w = NULL;
	struct rcx_info *info;
	size_t sz = 4096 + (size_t)j->rank * 64, tsz, i;
	uint64_t *base, v;
	uint8_t *mem;
	void *p = NULL;
	int t, bad = 0;

	/* allocate: 64-byte aligned, zeroed, sizes differ per rank */
	TP_CHECK_OK(rcx_win_allocate(j->g, sz, 8, NULL, (void **)&base, &w));
	TP_CHECK(((uintptr_t)base & 63) == 0);
	for (i = 0; i < sz / 8; i++)
		bad += base[i] != 0;
	TP_CHECK_EQ(bad, 0);
	for (i = 0; i < sz / 8; i++)
		base[i] = ((uint64_t)j->rank << 32) | i;
	tw_fence(w);
	for (t = 0; t < j->size; t++) {
		tsz = 4096 + (size_t)t * 64;
		/* the last unit of each rank's window, and one past it */
		TP_CHECK_OK(rcx_get(w, &v, 8, t, tsz / 8 - 1));
		TP_CHECK_EQ(rcx_get(w, &v, 8, t, tsz / 8), -EINVAL);
		TP_CHECK_EQ(rcx_get(w, &v, 1, t, tsz / 8), -EINVAL);
		TP_CHECK_OK(rcx_get(w, &v, 0, t, tsz / 8)); /* the end itself */
		TP_CHECK_OK(rcx_win_fence(w, 0));
		TP_CHECK_EQ(v, ((uint64_t)t << 32) | (tsz / 8 - 1));
	}
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&w));
	TP_CHECK(w == NULL);

	/* user memory, disp_unit 1; rank 1 exposes nothing */
	mem = calloc(1, 256);
	TP_CHECK_OK(rcx_win_create(j->g, j->rank == 1 ? NULL : mem,
				   j->rank == 1 ? 0 : 256, 1, NULL, &w));
	tw_fence(w);
	TP_CHECK_EQ(rcx_put(w, &v, 1, 1, 0), -EINVAL);
	TP_CHECK_OK(rcx_put(w, &v, 0, 1, 0));
	v = 0x1122334455667788ull;
	TP_CHECK_OK(rcx_put(w, &v, 8, 0, 248 - (size_t)j->rank * 8));
	TP_CHECK_EQ(rcx_put(w, &v, 8, 0, 249), -EINVAL);
	tw_fence(w);
	if (j->rank == 0)
		for (t = 0; t < j->size; t++)
			TP_CHECK_EQ(memcmp(mem + 248 - t * 8, &v, 8), 0);
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&w));
	free(mem);

	/* every info key, well formed */
	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_ORDER_SCOPE, "process"));
	TP_CHECK_OK(rcx_info_set(info, RCX_ACC_ORDERING, "rar,waw"));
	TP_CHECK_OK(rcx_info_set(info, RCX_ACCUMULATE_NIC, "false"));
	TP_CHECK_OK(rcx_info_set(info, "some_other_key", "ignored"));
	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 1, info, &p, &w));
	TP_CHECK_OK(rcx_win_free(&w));
	TP_CHECK_OK(rcx_info_set(info, RCX_ACC_ORDERING, "none"));
	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 1, info, &p, &w));
	TP_CHECK_OK(rcx_win_free(&w));

	/* a malformed value at rank 1 only: all fail, nothing is made */
	if (j->rank == 1)
		TP_CHECK_OK(rcx_info_set(info, RCX_ORDER_SCOPE, "galaxy"));
	w = NULL;
	p = NULL;
	TP_CHECK_EQ(rcx_win_allocate(j->g, 64, 1, info, &p, &w),
		    j->rank == 1 ? -EINVAL : RCX_ERR_REMOTE_OP);
	TP_CHECK(w == NULL && p == NULL);
	rcx_info_free(&info);
	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(rcx_info_set(info, RCX_ACC_ORDERING, "rar,bogus"));
	TP_CHECK_EQ(rcx_win_allocate(j->g, 64, 1, info, &p, &w), -EINVAL);
	rcx_info_set(info, RCX_ACC_ORDERING, "rar,raw,war,waw");
	rcx_info_set(info, RCX_ACCUMULATE_NIC, "maybe");
	TP_CHECK_EQ(rcx_win_allocate(j->g, 64, 1, info, &p, &w), -EINVAL);
	rcx_info_free(&info);
	/* rcx_accumulate_nic false at rank 1 only (true, the default,
	 * elsewhere): NIC and CPU would update the same words; refused at
	 * every rank, nothing made */
	TP_CHECK_OK(rcx_info_create(&info));
	if (j->rank == 1)
		TP_CHECK_OK(rcx_info_set(info, RCX_ACCUMULATE_NIC, "false"));
	w = NULL;
	p = NULL;
	TP_CHECK_EQ(rcx_win_allocate(j->g, 64, 1, info, &p, &w), -EINVAL);
	TP_CHECK(w == NULL && p == NULL);
	rcx_info_free(&info);
	/* memory that ends before size does (rank 1: its second page is
	 * unmapped): refused there, nothing made anywhere */
	mem = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	TP_CHECK(mem != MAP_FAILED);
	if (mem != MAP_FAILED && j->rank == 1)
		TP_CHECK_OK(munmap(mem + 4096, 4096));
	w = NULL;
	TP_CHECK_EQ(rcx_win_create(j->g, mem, 2 * 4096, 1, NULL, &w),
		    j->rank == 1 ? -EFAULT : RCX_ERR_REMOTE_OP);
	TP_CHECK(w == NULL);
	munmap(mem, j->rank == 1 ? 4096 : 2 * 4096);
	/* a size no device registers and no machine has: refused, logged */
	p = NULL;
	TP_CHECK_EQ(rcx_win_allocate(j->g, SIZE_MAX, 1, NULL, &p, &w),
		    j->ctx->info.max_mr_size < SIZE_MAX ? -EINVAL : -ENOMEM);
	TP_CHECK(w == NULL && p == NULL);
	/* disp_unit 0 everywhere; base NULL with a size */
	TP_CHECK_EQ(rcx_win_allocate(j->g, 64, 0, NULL, &p, &w), -EINVAL);
	TP_CHECK_EQ(rcx_win_create(j->g, NULL, 64, 1, NULL, &w), -EINVAL);
	TP_CHECK(w == NULL);
	/* bad handles: refused at once, no collective */
	TP_CHECK_EQ(rcx_win_create(NULL, &v, 8, 1, NULL, &w), -EINVAL);
	TP_CHECK_EQ(rcx_win_create(j->g, &v, 8, 1, NULL, NULL), -EINVAL);
	TP_CHECK_EQ(rcx_win_allocate(j->g, 64, 1, NULL, NULL, &w), -EINVAL);
	TP_CHECK_EQ(rcx_win_free(NULL), -EINVAL);
	TP_CHECK_EQ(rcx_win_free(&w), -EINVAL);
	TP_CHECK_EQ(rcx_put(NULL, &v, 8, 0, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_order(NULL, RCX_ORDER_ALL), -EINVAL);
	TP_CHECK_EQ(rcx_win_fence(NULL, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_lock_all(NULL), -EINVAL);
	/* the group is fine after all that */
	TP_CHECK_OK(rcx_group_barrier(j->g));
}

/* ---- put and get */

#define PG_REGION (320 * 1024)
#define PG_GUARD  64

static const size_t pg_sizes[] = { 0,	1,   7,	  8,	63,   64,    65,
				   511, 512, 513, 4095, 4096, 65537, 300000 };

static void sc_putget(struct tp_job *j)
{
	size_t n = sizeof(pg_sizes) / sizeof(pg_sizes[0]), s, len, i;
	size_t wlen = (size_t)j->size * PG_REGION;
	uint8_t *base, **src, **back;
	struct rcx_win *w;
	int t, o;

	src = calloc(j->size, sizeof(*src));
	back = calloc(j->size, sizeof(*back));
	for (t = 0; t < j->size; t++) {
		src[t] = malloc(PG_REGION);
		back[t] = malloc(PG_REGION);
	}
	TP_CHECK_OK(rcx_win_allocate(j->g, wlen, 1, NULL, (void **)&base, &w));
	for (s = 0; s < n; s++) {
		len = pg_sizes[s];
		memset(base, 0xee, wlen);
		tw_fence(w);
		/* every rank writes region `rank` of every rank, self too */
		for (t = 0; t < j->size; t++) {
			for (i = 0; i < len; i++)
				src[t][i] = pat(i, j->rank, t, s);
			TP_CHECK_OK(rcx_put(w, src[t], len, t,
					    (size_t)j->rank * PG_REGION));
		}
		tw_fence(w);
		for (o = 0; o < j->size; o++) {
			uint8_t *r = base + (size_t)o * PG_REGION;

			for (i = 0; i < len; i++)
				if (r[i] != pat(i, o, j->rank, s)) {
					TP_FAIL("size %zu: byte %zu from %d "
						"is 0x%02x",
						len, i, o, r[i]);
					break;
				}
			for (i = len; i < len + PG_GUARD && i < PG_REGION; i++)
				if (r[i] != 0xee) {
					TP_FAIL("size %zu from %d: byte %zu "
						"past the end overwritten",
						len, o, i);
					break;
				}
		}
		/* read it all back */
		for (t = 0; t < j->size; t++) {
			memset(back[t], 0, len + 1);
			TP_CHECK_OK(rcx_get(w, back[t], len, t,
					    (size_t)j->rank * PG_REGION));
		}
		tw_fence(w);
		for (t = 0; t < j->size; t++) {
			for (i = 0; i < len; i++)
				if (back[t][i] != pat(i, j->rank, t, s)) {
					TP_FAIL("get size %zu from %d: byte "
						"%zu is 0x%02x",
						len, t, i, back[t][i]);
					break;
				}
			TP_CHECK_EQ(back[t][len], 0);
		}
	}
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&w));
	for (t = 0; t < j->size; t++) {
		free(src[t]);
		free(back[t]);
	}
	free(src);
	free(back);
}

/* ---- put and get longer than one work request may be */

#define BIG_SIZE  (20u << 20) /* more than rxe's max_msg_sz (8 MiB) */
#define BIG_PIECE (1u << 20)  /* RCX_RMA_WR_MAX of the "big_split" run */

static uint64_t big_word(size_t k, bool back)
{
	uint64_t v = 0x9e3779b97f4a7c15ull * (k + 1);

	return back ? ~v : v;
}

/* Words of buf[0..n) that are not big_word(k, back); the first logged. */
static size_t big_wrong(const uint64_t *buf, size_t n, bool back,
			const char *what)
{
	size_t k, bad = 0;

	for (k = 0; k < n; k++)
		if (buf[k] != big_word(k, back) && !bad++)
			TP_FAIL("%s: word %zu of %zu is %#llx", what, k, n,
				(unsigned long long)buf[k]);
	return bad;
}

/* WRs of op longer than a word (not a lock word's, not a kick's) posted
 * since mark: how many, and the longest. */
static size_t big_wrs(size_t mark, uint8_t op, uint32_t *longest)
{
	struct rcx_fault_wr r;
	size_t i, n = 0;

	*longest = 0;
	for (i = mark; i < rcx__fault_log_count(); i++) {
		if (rcx__fault_log_get(i, &r) || r.op != op || r.length <= 8)
			continue;
		n++;
		if (r.length > *longest)
			*longest = r.length;
	}
	return n;
}

/*
 * Rank 0 puts BIG_SIZE bytes into rank 1's window, then gets them back
 * after rank 1 rewrote them; both check every word. The recording
 * provider shows that they went out in WRs of at most piece bytes: a put
 * or get longer than the device's max_msg_sz must be split (rxe takes a
 * longer one without an error; how much arrives is not defined).
 */
static void big_rma(struct tp_job *j, uint64_t piece)
{
	const size_t n = BIG_SIZE / 8;
	uint64_t *base, *buf = malloc(BIG_SIZE);
	uint64_t want = piece < BIG_SIZE ? piece : BIG_SIZE;
	uint32_t longest;
	struct rcx_win *w;
	size_t k, mark = 0;

	TP_CHECK(buf != NULL);
	TP_CHECK_OK(
		rcx_win_allocate(j->g, BIG_SIZE, 8, NULL, (void **)&base, &w));
	if (j->rank == 0 && buf) {
		for (k = 0; k < n; k++)
			buf[k] = big_word(k, false);
		mark = rcx__fault_log_count();
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 1));
		TP_CHECK_OK(rcx_put(w, buf, BIG_SIZE, 1, 0));
		TP_CHECK_OK(rcx_win_unlock(w, 1));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		TP_CHECK_EQ(big_wrong(base, n, false, "put"), 0);
		for (k = 0; k < n; k++)
			base[k] = big_word(k, true);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0 && buf) {
		memset(buf, 0, BIG_SIZE);
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, 1));
		TP_CHECK_OK(rcx_get(w, buf, BIG_SIZE, 1, 0));
		TP_CHECK_OK(rcx_win_unlock(w, 1));
		TP_CHECK_EQ(big_wrong(buf, n, true, "get"), 0);
		/* one WRITE and one READ per piece */
		TP_CHECK_EQ(big_wrs(mark, RCX_OP_WRITE, &longest),
			    (BIG_SIZE + want - 1) / want);
		TP_CHECK_EQ(longest, want);
		TP_CHECK_EQ(big_wrs(mark, RCX_OP_READ, &longest),
			    (BIG_SIZE + want - 1) / want);
		TP_CHECK_EQ(longest, want);
		printf("rank 0: put and get of %u bytes in WRs of %llu\n",
		       BIG_SIZE, (unsigned long long)want);
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
	free(buf);
}

/* At the device's own limit (20 MiB is more than rxe takes in one). */
static void sc_big(struct tp_job *j)
{
	uint64_t m = j->ctx->info.max_msg_sz;

	big_rma(j, m ? (m < UINT32_MAX ? m : UINT32_MAX) : 1ull << 31);
}

static void big_split_env(void)
{
	char v[16];

	snprintf(v, sizeof(v), "%u", BIG_PIECE);
	setenv("RCX_RMA_WR_MAX", v, 1);
}

/* At a limit set smaller (RCX_RMA_WR_MAX). */
static void sc_big_split(struct tp_job *j)
{
	big_rma(j, BIG_PIECE);
}

/* ---- passive target */

#define LK_K 40

static void sc_lock(struct tp_job *j)
{
	struct rcx_win *w;
	int64_t *base, v, one = 1, minus = -1, inside = -1;
	uint8_t *big, *back;
	int k, t;

	TP_CHECK_OK(rcx_win_allocate(j->g, 8192, 8, NULL, (void **)&base, &w));
	/* exclusive lock: a plain read-modify-write stays exact */
	for (k = 0; k < LK_K; k++) {
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 0));
		TP_CHECK_OK(rcx_get(w, &v, 8, 0, 0));
		TP_CHECK_OK(rcx_win_flush_local(w, 0));
		v++;
		TP_CHECK_OK(rcx_put(w, &v, 8, 0, 0));
		TP_CHECK_OK(rcx_win_unlock(w, 0));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0)
		TP_CHECK_EQ(base[0], j->size * LK_K);

	/* shared holders inside, then one exclusive: it finds none */
	if (j->rank != 1) {
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, 0));
		TP_CHECK_OK(
			rcx_accumulate(w, &one, 1, RCX_INT64, 0, 1, RCX_SUM));
		TP_CHECK_OK(rcx_win_flush(w, 0));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, 0));
		TP_CHECK_OK(rcx_get(w, &inside, 8, 0, 1));
		TP_CHECK_OK(rcx_win_unlock(w, 0));
		TP_CHECK_EQ(inside, 0);
	} else {
		usleep(200000); /* rank 1 is waiting for us to leave */
		TP_CHECK_OK(
			rcx_accumulate(w, &minus, 1, RCX_INT64, 0, 1, RCX_SUM));
		TP_CHECK_OK(rcx_win_unlock(w, 0));
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));

	/* lock_all: put to everyone; flush makes it visible at once */
	big = malloc(4096);
	back = malloc(4096);
	memset(big, j->rank + 1, 4096);
	TP_CHECK_OK(rcx_win_lock_all(w));
	t = (j->rank + 1) % j->size;
	TP_CHECK_OK(rcx_put(w, big, 4096, t, 512));
	/* flush_local: the source can change, the target keeps the data */
	TP_CHECK_OK(rcx_win_flush_local(w, t));
	memset(big, 0xff, 4096);
	TP_CHECK_OK(rcx_win_flush(w, t));
	v = 1;
	TP_CHECK_OK(rcx_send(j->g, &v, 8, t, 3));
	TP_CHECK_OK(rcx_recv(j->g, &v, 8, (j->rank + j->size - 1) % j->size, 3,
			     RCX_STATUS_IGNORE));
	/* the sender flushed before it sent: its data is here */
	TP_CHECK_OK(rcx_win_sync(w));
	for (k = 0; k < 4096; k++)
		if (((uint8_t *)base)[4096 + k] !=
		    (uint8_t)((j->rank + j->size - 1) % j->size + 1)) {
			TP_FAIL("byte %d not from the flushed put", k);
			break;
		}
	/* get, flush_local_all: the data is usable */
	TP_CHECK_OK(rcx_get(w, back, 4096, t, 512));
	TP_CHECK_OK(rcx_win_flush_local_all(w));
	TP_CHECK_EQ(back[0], j->rank + 1);
	TP_CHECK_EQ(back[4095], j->rank + 1);
	TP_CHECK_OK(rcx_win_flush_all(w));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	/* lock and unlock this process's own window */
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, j->rank));
	TP_CHECK_OK(rcx_put(w, &one, 8, j->rank, 2));
	TP_CHECK_OK(rcx_win_unlock(w, j->rank));
	TP_CHECK_EQ(base[2], 1);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_free(&w));
	free(big);
	free(back);
}

/* ---- request-based operations */

static void sc_rreq(struct tp_job *j)
{
	int t = (j->rank + 1) % j->size, k, flag = 0;
	struct rcx_req *r[6] = { 0 };
	struct rcx_status st[6];
	struct rcx_win *w;
	uint8_t *base, *big, *back;
	int64_t v = 40, two = 2, res = -1, res2[3];
	int64_t three[3] = { 1, 2, 3 };

	big = malloc(65536);
	back = calloc(1, 65536);
	for (k = 0; k < 65536; k++)
		big[k] = pat(k, j->rank, t, 9);
	TP_CHECK_OK(
		rcx_win_allocate(j->g, 131072, 1, NULL, (void **)&base, &w));
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_rput(w, big, 65536, t, 0, &r[0]));
	TP_CHECK_OK(rcx_wait(&r[0], &st[0]));
	TP_CHECK(r[0] == NULL);
	TP_CHECK_EQ(st[0].error, 0);
	TP_CHECK_EQ(st[0].count, 65536);
	TP_CHECK_OK(rcx_win_flush(w, t));
	TP_CHECK_OK(rcx_rget(w, back, 65536, t, 0, &r[1]));
	TP_CHECK_OK(rcx_rput(w, &v, 8, t, 65536, &r[2]));
	TP_CHECK_OK(rcx_win_flush(w, t));
	TP_CHECK_OK(rcx_raccumulate(w, &two, 1, RCX_INT64, t, 65536, RCX_SUM,
				    &r[3]));
	TP_CHECK_OK(rcx_raccumulate(w, three, 3, RCX_INT64, t, 65544,
				    RCX_REPLACE, &r[4]));
	TP_CHECK_OK(rcx_win_flush(w, t));
	TP_CHECK_OK(rcx_rget_accumulate(w, &two, &res, 1, RCX_INT64, t, 65536,
					RCX_PROD, &r[5]));
	TP_CHECK_OK(rcx_rget_accumulate(w, NULL, res2, 3, RCX_INT64, t, 65544,
					RCX_NO_OP, &r[0]));
	while (!flag)
		TP_CHECK_OK(rcx_testall(6, r, &flag, st));
	for (k = 0; k < 6; k++) {
		TP_CHECK(r[k] == NULL);
		TP_CHECK_EQ(st[k].error, 0);
	}
	TP_CHECK_EQ(st[1].count, 65536);
	TP_CHECK_EQ(memcmp(back, big, 65536), 0);
	TP_CHECK_EQ(res, 42);
	TP_CHECK_EQ(res2[0], 1);
	TP_CHECK_EQ(res2[2], 3);
	/* a request freed while active still completes its operation */
	TP_CHECK_OK(rcx_rput(w, &v, 8, t, 65560, &r[0]));
	TP_CHECK_OK(rcx_req_free(&r[0]));
	/* to this process: done in place */
	TP_CHECK_OK(rcx_rget(w, &v, 8, j->rank, 0, &r[0]));
	TP_CHECK_OK(rcx_wait(&r[0], RCX_STATUS_IGNORE));
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(*(int64_t *)(base + 65536), 84);
	TP_CHECK_EQ(*(int64_t *)(base + 65560), 40);
	TP_CHECK_OK(rcx_win_free(&w));
	free(big);
	free(back);
}

/* ---- epoch misuse */

static void sc_epoch(struct tp_job *j)
{
	int t = (j->rank + 1) % j->size, u = (j->rank + 2) % j->size;
	struct rcx_req *r = NULL;
	struct rcx_win *w;
	int64_t *base, v = 1, res;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	/* no epoch at all */
	TP_CHECK_EQ(rcx_put(w, &v, 8, t, 0), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_get(w, &v, 8, t, 0), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_accumulate(w, &v, 1, RCX_INT64, t, 0, RCX_SUM),
		    RCX_ERR_EPOCH);
	TP_CHECK_EQ(
		rcx_get_accumulate(w, &v, &res, 1, RCX_INT64, t, 0, RCX_SUM),
		RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_fetch_and_op(w, &v, &res, RCX_INT64, t, 0, RCX_SUM),
		    RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_compare_and_swap(w, &v, &v, &res, RCX_INT64, t, 0),
		    RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_rput(w, &v, 8, t, 0, &r), RCX_ERR_EPOCH);
	TP_CHECK(r == NULL);
	TP_CHECK_EQ(rcx_win_order(w, RCX_ORDER_ALL), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_flush(w, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_flush_all(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_flush_local(w, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_flush_local_all(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_unlock(w, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_unlock_all(w), RCX_ERR_EPOCH);
	/* lock one target */
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, t));
	TP_CHECK_EQ(rcx_win_lock(w, RCX_LOCK_SHARED, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_lock_all(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_fence(w, 0), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_free(&w), RCX_ERR_EPOCH);
	TP_CHECK(w != NULL);
	if (u != t) {
		TP_CHECK_EQ(rcx_put(w, &v, 8, u, 0), RCX_ERR_EPOCH);
		TP_CHECK_EQ(rcx_win_flush(w, u), RCX_ERR_EPOCH);
		TP_CHECK_EQ(rcx_win_unlock(w, u), RCX_ERR_EPOCH);
	}
	TP_CHECK_OK(rcx_put(w, &v, 8, t, 0));
	TP_CHECK_OK(rcx_rput(w, &v, 8, t, 0, &r));
	TP_CHECK_OK(rcx_wait(&r, RCX_STATUS_IGNORE));
	TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_DATA));
	TP_CHECK_OK(rcx_win_flush(w, t));
	TP_CHECK_OK(rcx_win_flush_all(w));
	TP_CHECK_OK(rcx_win_unlock(w, t));
	TP_CHECK_EQ(rcx_win_unlock(w, t), RCX_ERR_EPOCH);
	/* lock_all */
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_EQ(rcx_win_lock_all(w), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_lock(w, RCX_LOCK_SHARED, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_unlock(w, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_fence(w, 0), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_EQ(rcx_win_unlock_all(w), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	/* fence epochs */
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_OK(rcx_put(w, &v, 8, t, 0));
	TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
	TP_CHECK_EQ(rcx_rput(w, &v, 8, t, 0, &r), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_flush(w, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_lock(w, RCX_LOCK_SHARED, t), RCX_ERR_EPOCH);
	TP_CHECK_EQ(rcx_win_lock_all(w), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_fence(w, 0));
	/* a fence epoch without operations gives way to a lock */
	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_SHARED, t));
	TP_CHECK_OK(rcx_win_unlock(w, t));
	TP_CHECK_EQ(rcx_put(w, &v, 8, t, 0), RCX_ERR_EPOCH);
	TP_CHECK_OK(rcx_win_fence(w, 0));
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_EQ(rcx_put(w, &v, 8, t, 0), RCX_ERR_EPOCH);
	/* NOCHECK is post's and start's, not fence's; 64 is nobody's */
	TP_CHECK_EQ(rcx_win_fence(w, RCX_MODE_NOCHECK), -EINVAL);
	TP_CHECK_EQ(rcx_win_fence(w, 64), -EINVAL);
	TP_CHECK_OK(rcx_win_sync(w));
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- bounds and bad arguments: refused, and nothing sent */

static void sc_bounds(struct tp_job *j)
{
	int t = (j->rank + 1) % j->size;
	struct rcx_req *r = NULL;
	struct rcx_win *w;
	int64_t *base, v = 1, res;
	float f = 1;
	size_t mark;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	TP_CHECK_OK(rcx_win_lock_all(w));
	mark = rcx__fault_log_count();
	/* ranges: 8 units of 8 bytes */
	TP_CHECK_EQ(rcx_put(w, &v, 8, t, 8), -EINVAL);
	TP_CHECK_EQ(rcx_put(w, &v, 9, t, 7), -EINVAL);
	TP_CHECK_EQ(rcx_put(w, &v, 1, t, SIZE_MAX), -EINVAL);
	TP_CHECK_EQ(rcx_put(w, &v, SIZE_MAX, t, 0), -EINVAL);
	TP_CHECK_EQ(rcx_get(w, &v, 16, t, 7), -EINVAL);
	TP_CHECK_EQ(rcx_accumulate(w, &v, 2, RCX_INT64, t, 7, RCX_SUM),
		    -EINVAL);
	TP_CHECK_EQ(
		rcx_accumulate(w, &v, SIZE_MAX / 4, RCX_INT64, t, 0, RCX_SUM),
		-EINVAL);
	TP_CHECK_EQ(rcx_fetch_and_op(w, &v, &res, RCX_INT64, t, 8, RCX_SUM),
		    -EINVAL);
	TP_CHECK_EQ(rcx_compare_and_swap(w, &v, &v, &res, RCX_INT64, t, 8),
		    -EINVAL);
	TP_CHECK_EQ(rcx_rput(w, &v, 8, t, 8, &r), -EINVAL);
	TP_CHECK(r == NULL);
	/* targets */
	TP_CHECK_EQ(rcx_put(w, &v, 8, -1, 0), -EINVAL);
	TP_CHECK_EQ(rcx_put(w, &v, 8, j->size, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_flush(w, j->size), -EINVAL);
	TP_CHECK_EQ(rcx_win_flush_local(w, -1), -EINVAL);
	/* buffers */
	TP_CHECK_EQ(rcx_put(w, NULL, 8, t, 0), -EINVAL);
	TP_CHECK_EQ(rcx_get(w, NULL, 8, t, 0), -EINVAL);
	TP_CHECK_EQ(rcx_accumulate(w, NULL, 1, RCX_INT64, t, 0, RCX_SUM),
		    -EINVAL);
	TP_CHECK_EQ(
		rcx_get_accumulate(w, &v, NULL, 1, RCX_INT64, t, 0, RCX_SUM),
		-EINVAL);
	TP_CHECK_EQ(rcx_fetch_and_op(w, &v, NULL, RCX_INT64, t, 0, RCX_SUM),
		    -EINVAL);
	TP_CHECK_EQ(rcx_compare_and_swap(w, &v, NULL, &res, RCX_INT64, t, 0),
		    -EINVAL);
	TP_CHECK_EQ(rcx_rput(w, &v, 8, t, 0, NULL), -EINVAL);
	/* types and operations */
	TP_CHECK_EQ(rcx_accumulate(w, &v, 1, 0, t, 0, RCX_SUM), -EINVAL);
	TP_CHECK_EQ(rcx_accumulate(w, &v, 1, 99, t, 0, RCX_SUM), -EINVAL);
	TP_CHECK_EQ(rcx_accumulate(w, &v, 1, RCX_INT64, t, 0, 0), -EINVAL);
	TP_CHECK_EQ(rcx_accumulate(w, &v, 1, RCX_INT64, t, 0, 99), -EINVAL);
	TP_CHECK_EQ(rcx_accumulate(w, &f, 1, RCX_FLOAT, t, 0, RCX_BAND),
		    -EINVAL);
	TP_CHECK_EQ(rcx_accumulate(w, &v, 1, RCX_DOUBLE, t, 0, RCX_BXOR),
		    -EINVAL);
	TP_CHECK_EQ(rcx_fetch_and_op(w, &f, &res, RCX_FLOAT, t, 0, RCX_BOR),
		    -EINVAL);
	TP_CHECK_EQ(rcx_compare_and_swap(w, &v, &v, &res, RCX_DOUBLE, t, 0),
		    -EINVAL);
	TP_CHECK_EQ(rcx_compare_and_swap(w, &f, &f, &res, RCX_FLOAT, t, 0),
		    -EINVAL);
	/* synchronisation arguments */
	TP_CHECK_EQ(rcx_win_order(w, 0), -EINVAL);
	TP_CHECK_EQ(rcx_win_order(w, RCX_ORDER_ALL + 1), -EINVAL);
	TP_CHECK_EQ(rcx_win_lock(w, 3, t), -EINVAL);
	TP_CHECK_EQ(rcx_win_lock(w, RCX_LOCK_SHARED, j->size), -EINVAL);
	TP_CHECK_EQ(rcx_win_unlock(w, -1), -EINVAL);
	/* nothing of the above reached the wire */
	TP_CHECK_EQ(rcx__fault_log_count(), mark);
	/* valid edge cases do go out */
	TP_CHECK_OK(rcx_put(w, &v, 8, t, 7));
	TP_CHECK_OK(rcx_accumulate(w, NULL, 1, RCX_INT64, t, 0, RCX_NO_OP));
	TP_CHECK(rcx__fault_log_count() > mark);
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(base[7], 1);
	TP_CHECK_OK(rcx_win_free(&w));
}

/* ---- fork() after registration (include/rcx/ctx.h) */

static bool check_pat(const uint8_t *b, size_t len, int src, int dst,
		      size_t salt, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != pat(i, src, dst, salt)) {
			TP_FAIL("%s: byte %zu is 0x%02x", what, i, b[i]);
			return false;
		}
	return true;
}

/*
 * Rank 0 forks with its window, receive ring and send buffers registered,
 * keeps the child alive (it scribbles over its copies) and then writes
 * its window and sends. What rank 1 reads, and what it writes, must be
 * the parent's memory: copy-on-write after the fork must not leave the
 * NIC with pages the parent no longer has.
 */
static void sc_fork(struct tp_job *j)
{
	size_t len = 4 * 4096, half = len / 2, i;
	uint8_t *base, *buf = malloc(len), msg[300];
	struct rcx_win *w;
	int pfd[2] = { -1, -1 }, st = 0;
	pid_t pid = -1;
	char c;

	TP_CHECK_OK(rcx_win_allocate(j->g, len, 1, NULL, (void **)&base, &w));
	TP_CHECK_OK(rcx_win_lock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		TP_CHECK_EQ(pipe(pfd), 0);
		pid = fork();
		if (pid == 0) {
			/* the child: its own copies; no rcx call here */
			close(pfd[1]);
			memset(base, 0x55, len);
			memset(msg, 0x55, sizeof(msg));
			while (read(pfd[0], &c, 1) < 0)
				;
			_exit(base[0] == 0x55 ? 0 : 1);
		}
		TP_CHECK(pid > 0);
		close(pfd[0]);
		for (i = 0; i < half; i++)
			base[i] = pat(i, 0, 1, 1);
		for (i = 0; i < sizeof(msg); i++)
			msg[i] = pat(i, 0, 1, 3);
		TP_CHECK_OK(rcx_send(j->g, msg, sizeof(msg), 1, 5));
	} else {
		memset(msg, 0, sizeof(msg));
		TP_CHECK_OK(rcx_recv(j->g, msg, sizeof(msg), 0, 5,
				     RCX_STATUS_IGNORE));
		check_pat(msg, sizeof(msg), 0, 1, 3, "message after fork");
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		for (i = 0; i < half; i++)
			buf[half + i] = pat(i, 1, 0, 2);
		TP_CHECK_OK(rcx_get(w, buf, half, 0, 0));
		TP_CHECK_OK(rcx_put(w, buf + half, half, 0, half));
		TP_CHECK_OK(rcx_win_flush(w, 0));
		check_pat(buf, half, 0, 1, 1, "get after fork");
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0) {
		check_pat(base + half, half, 1, 0, 2, "put after fork");
		close(pfd[1]);
		TP_CHECK_EQ(waitpid(pid, &st, 0), pid);
		TP_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_win_free(&w));
	free(buf);
}

/* ---- puts and gets as copies (lib/win/win_direct.c) */

/* Does this run's provider map a peer's allocated window memory here? */
static bool direct_expected(void)
{
	const char *p = getenv("RCX_PROVIDER"), *d = getenv("RCX_DEVICE");

	return p && (!strcmp(p, "shm") ||
		     (!strcmp(p, "auto") && d && !strcmp(d, "shm")));
}

enum { DIRECT_N = 64 };

/*
 * On a window of rcx_win_allocate whose target memory the provider maps
 * (shm), every put and get of rank 0's to rank 1 is a copy: put, order,
 * put to the same place, order, get: the get reads the second put, and
 * so does rank 1 at the end. Then with an atomic outstanding before the
 * order (the put waits for it, or goes behind it), and refusals: past
 * the end of the target's part, a displacement whose bytes overflow, a
 * target outside the group; nothing of them lands.
 */
static void sc_direct(struct tp_job *j)
{
	struct rcx__win_stats s0, s1;
	uint64_t *base, v, back;
	struct rcx_win *w;
	int i, bad = 0;

	TP_CHECK_OK(rcx_win_allocate(j->g, DIRECT_N * 8, 8, NULL,
				     (void **)&base, &w));
	for (i = 0; i < DIRECT_N; i++)
		base[i] = 7;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_OK(rcx_win_lock_all(w));
	if (j->rank == 0) {
		TP_CHECK_OK(rcx__win_stats(w, &s0));
		for (i = 1; i < DIRECT_N; i++) {
			v = 100 + i;
			TP_CHECK_OK(rcx_put(w, &v, 8, 1, i));
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
			v = 200 + i;
			TP_CHECK_OK(rcx_put(w, &v, 8, 1, i));
			TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
			back = 0;
			TP_CHECK_OK(rcx_get(w, &back, 8, 1, i));
			TP_CHECK_OK(rcx_win_flush(w, 1));
			bad += back != (uint64_t)(200 + i);
		}
		TP_CHECK_OK(rcx__win_stats(w, &s1));
		TP_CHECK_EQ(bad, 0);
		TP_CHECK_EQ(s1.direct - s0.direct,
			    direct_expected() ? 3 * (DIRECT_N - 1) : 0);
		/* an atomic outstanding, then order, then a put there */
		v = 5;
		TP_CHECK_OK(rcx_fetch_and_op(w, &v, &back, RCX_UINT64, 1, 0,
					     RCX_SUM));
		TP_CHECK_OK(rcx_win_order(w, RCX_ORDER_ALL));
		v = 300;
		TP_CHECK_OK(rcx_put(w, &v, 8, 1, 0));
		TP_CHECK_OK(rcx_win_flush(w, 1));
		TP_CHECK_EQ(back, 7);
		TP_CHECK_OK(rcx_get(w, &back, 8, 1, 0));
		TP_CHECK_OK(rcx_win_flush(w, 1));
		TP_CHECK_EQ(back, 300);
		/* refused, nothing copied */
		v = 1;
		TP_CHECK_EQ(rcx_put(w, &v, 16, 1, DIRECT_N - 1), -EINVAL);
		TP_CHECK_EQ(rcx_put(w, &v, 8, 1, DIRECT_N), -EINVAL);
		TP_CHECK_EQ(rcx_put(w, &v, 8, 1, SIZE_MAX / 4), -EINVAL);
		TP_CHECK_EQ(rcx_get(w, &back, 16, 1, DIRECT_N - 1), -EINVAL);
		TP_CHECK_EQ(rcx_put(w, &v, 8, j->size, 0), -EINVAL);
		TP_CHECK_OK(rcx_win_flush(w, 1));
	}
	TP_CHECK_OK(rcx_win_unlock_all(w));
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 1) {
		TP_CHECK_EQ(base[0], 300);
		for (i = 1, bad = 0; i < DIRECT_N; i++)
			bad += base[i] != (uint64_t)(200 + i);
		TP_CHECK_EQ(bad, 0);
	}
	TP_CHECK_OK(rcx_win_free(&w));
}

/*
 * Rank 1 dies while rank 0 maps its window memory (shm; elsewhere puts
 * go to the NIC, with the same outcome): rank 0's puts and gets to it
 * are refused with the named error once the failure is seen (each put
 * makes progress, where it is seen), never a fault; the window is
 * invalid and can be freed.
 */
static void sc_direct_failed(struct tp_job *j)
{
	struct rcx__win_stats st;
	uint64_t *base, v = 1;
	struct rcx_win *w;
	int ret;

	TP_CHECK_OK(rcx_win_allocate(j->g, DIRECT_N * 8, 8, NULL,
				     (void **)&base, &w));
	TP_CHECK_OK(rcx_win_lock_all(w));
	if (j->rank == 0) {
		TP_CHECK_OK(rcx_put(w, &v, 8, 1, 0));
		TP_CHECK_OK(rcx_win_flush(w, 1));
		TP_CHECK_OK(rcx__win_stats(w, &st));
		TP_CHECK_EQ(st.direct, direct_expected() ? 1 : 0);
	}
	ret = rcx_group_barrier(j->g);
	TP_CHECK(ret == 0 || ret == RCX_ERR_PROC_FAILED);
	if (j->rank == 1) {
		fflush(NULL);
		raise(SIGKILL);
	}
	do
		ret = rcx_put(w, &v, 8, 1, 0);
	while (!ret);
	TP_CHECK(ret == RCX_ERR_WIN_INVALID || ret == RCX_ERR_PROC_FAILED);
	TP_CHECK_EQ(rcx_put(w, &v, 8, 1, 0), RCX_ERR_WIN_INVALID);
	TP_CHECK_EQ(rcx_get(w, &v, 8, 1, 0), RCX_ERR_WIN_INVALID);
	TP_CHECK_EQ(rcx_win_flush(w, 1), RCX_ERR_WIN_INVALID);
	TP_CHECK_OK(rcx_win_free(&w));
	/* no final barrier: the group lost a member */
	TP_CHECK_OK(rcx_group_free(&j->g));
}

/* ---- the peer role */

static const struct tp_scenario scenarios[] = {
	{ .name = "create", .run = sc_create },
	{ .name = "putget", .run = sc_putget },
	{ .name = "acc", .run = tw_sc_acc },
	{ .name = "atomic", .run = tw_sc_atomic },
	{ .name = "lock", .run = sc_lock },
	{ .name = "rreq", .run = sc_rreq },
	{ .name = "epoch", .run = sc_epoch },
	{ .name = "bounds", .run = sc_bounds, .provider = "fault" },
	{ .name = "fork", .run = sc_fork, .size = 2 },
	{ .name = "big", .run = sc_big, .provider = "fault", .size = 2 },
	{ .name = "acc_bulk", .run = tw_sc_acc_bulk, .provider = "fault" },
	{ .name = "direct", .run = sc_direct, .size = 2 },
	{ .name = "direct_failed", .run = sc_direct_failed, .size = 2 },
	{ .name = "big_split",
	  .run = sc_big_split,
	  .provider = "fault",
	  .size = 2,
	  .setup = big_split_env },
};

static int peer_main(int argc, char **argv)
{
	return tp_peer_main("win", scenarios, TP_COUNT(scenarios), argc, argv);
}

const struct tu_peer tu_peer_win = { "win", peer_main };

/* ---- the CUnit side: one job per test */

static void job(int n, const char *scenario, int timeout_s)
{
	CU_ASSERT_EQUAL(tu_mp_run(n, "win", scenario, timeout_s), 0);
}

static void test_create(void)
{
	job(3, "create", 180);
}

static void test_putget_2(void)
{
	job(2, "putget", 300);
}

static void test_putget_4(void)
{
	job(4, "putget", 300);
}

static void test_acc(void)
{
	job(3, "acc", 600);
}

static void test_atomic(void)
{
	job(4, "atomic", 300);
}

static void test_lock(void)
{
	job(4, "lock", 300);
}

static void test_rreq(void)
{
	job(2, "rreq", 180);
}

static void test_epoch(void)
{
	job(3, "epoch", 180);
}

static void test_bounds(void)
{
	job(2, "bounds", 180);
}

static void test_fork(void)
{
	job(2, "fork", 180);
}

static void test_big(void)
{
	job(2, "big", 300);
}

static void test_big_split(void)
{
	job(2, "big_split", 300);
}

static void test_acc_bulk(void)
{
	job(3, "acc_bulk", 300);
}

static void test_direct(void)
{
	job(2, "direct", 180);
}

static void test_direct_failed(void)
{
	setenv("RCX_RUN_FT", "1", 1);
	job(2, "direct_failed", 180);
	unsetenv("RCX_RUN_FT");
}

static const CU_TestInfo tests[] = {
	{ "create_allocate_free", test_create },
	{ "put_get_sizes_2procs", test_putget_2 },
	{ "put_get_sizes_4procs", test_putget_4 },
	{ "accumulate_every_type_and_op", test_acc },
	{ "atomicity_and_mixed_order", test_atomic },
	{ "passive_target", test_lock },
	{ "request_based", test_rreq },
	{ "epoch_misuse", test_epoch },
	{ "bounds_nothing_sent", test_bounds },
	{ "fork_after_registration", test_fork },
	{ "accumulate_many_int64_one_message", test_acc_bulk },
	{ "put_get_beyond_max_msg_sz", test_big },
	{ "put_get_split_rma_wr_max", test_big_split },
	{ "put_order_put_copies", test_direct },
	{ "put_get_to_a_failed_target", test_direct_failed },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_win = {
	"win", TU_DEVICE, NULL, NULL, tests,
};
