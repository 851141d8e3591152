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

static void fence(struct rcx_win *w)
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
	fence(w);
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
	fence(w);
	TP_CHECK_EQ(rcx_put(w, &v, 1, 1, 0), -EINVAL);
	TP_CHECK_OK(rcx_put(w, &v, 0, 1, 0));
	v = 0x1122334455667788ull;
	TP_CHECK_OK(rcx_put(w, &v, 8, 0, 248 - (size_t)j->rank * 8));
	TP_CHECK_EQ(rcx_put(w, &v, 8, 0, 249), -EINVAL);
	fence(w);
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
		fence(w);
		/* every rank writes region `rank` of every rank, self too */
		for (t = 0; t < j->size; t++) {
			for (i = 0; i < len; i++)
				src[t][i] = pat(i, j->rank, t, s);
			TP_CHECK_OK(rcx_put(w, src[t], len, t,
					    (size_t)j->rank * PG_REGION));
		}
		fence(w);
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
		fence(w);
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

/* ---- accumulates against a reference */

union elem {
	int32_t i32;
	int64_t i64;
	uint64_t u64;
	float f32;
	double f64;
	uint8_t b[8];
};

static const int dtypes[] = { RCX_INT32, RCX_INT64, RCX_UINT64, RCX_FLOAT,
			      RCX_DOUBLE };
static const char *const dt_names[] = { "",	  "int32", "int64",
					"uint64", "float", "double" };
static const char *const op_names[] = { "",	   "SUM",  "PROD", "MIN",
					"MAX",	   "BAND", "BOR",  "BXOR",
					"REPLACE", "NO_OP" };

static size_t esize(int dt)
{
	return dt == RCX_INT32 || dt == RCX_FLOAT ? 4 : 8;
}

static bool bitwise(int op)
{
	return op == RCX_BAND || op == RCX_BOR || op == RCX_BXOR;
}

static bool is_fp(int dt)
{
	return dt == RCX_FLOAT || dt == RCX_DOUBLE;
}

/*
 * Small values (products and sums stay exact and in range) for
 * arithmetic; wider bit patterns for the bitwise ops. a: 0 initial
 * value, 1 operand.
 */
static union elem val(int dt, int op, int which, int owner, int origin, int k)
{
	long v = ((owner * 7 + origin * 3 + k * 5 + which * 11) % 9) - 4;
	union elem e;

	memset(&e, 0, sizeof(e));
	if (bitwise(op))
		v = (long)(0x5a3c96e1L ^ (owner * 0x1111L) ^
			   (origin * 0x10101L) ^ (k * 0x3f0L) ^ (which << 20));
	switch (dt) {
	case RCX_INT32:
		e.i32 = (int32_t)v;
		break;
	case RCX_INT64:
		e.i64 = bitwise(op) ? (int64_t)v << 24 | v : v;
		break;
	case RCX_UINT64:
		e.u64 = bitwise(op) ? (uint64_t)v << 28 | (uint64_t)v
				    : (uint64_t)(v + 4);
		break;
	case RCX_FLOAT:
		e.f32 = (float)v / 2;
		break;
	case RCX_DOUBLE:
		e.f64 = (double)v / 4;
		break;
	}
	return e;
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

/* The reference: a op b, written independently of the library. */
static union elem ref(int dt, int op, union elem a, union elem b)
{
	union elem r = a;

	if (op == RCX_NO_OP)
		return a;
	if (op == RCX_REPLACE)
		return b;
	switch (dt) {
	case RCX_INT32:
		if (op == RCX_SUM)
			r.i32 = a.i32 + b.i32;
		if (op == RCX_PROD)
			r.i32 = a.i32 * b.i32;
		if (op == RCX_MIN)
			r.i32 = a.i32 < b.i32 ? a.i32 : b.i32;
		if (op == RCX_MAX)
			r.i32 = a.i32 > b.i32 ? a.i32 : b.i32;
		if (op == RCX_BAND)
			r.i32 = a.i32 & b.i32;
		if (op == RCX_BOR)
			r.i32 = a.i32 | b.i32;
		if (op == RCX_BXOR)
			r.i32 = a.i32 ^ b.i32;
		break;
	case RCX_INT64:
		if (op == RCX_SUM)
			r.i64 = a.i64 + b.i64;
		if (op == RCX_PROD)
			r.i64 = a.i64 * b.i64;
		if (op == RCX_MIN)
			r.i64 = a.i64 < b.i64 ? a.i64 : b.i64;
		if (op == RCX_MAX)
			r.i64 = a.i64 > b.i64 ? a.i64 : b.i64;
		if (op == RCX_BAND)
			r.i64 = a.i64 & b.i64;
		if (op == RCX_BOR)
			r.i64 = a.i64 | b.i64;
		if (op == RCX_BXOR)
			r.i64 = a.i64 ^ b.i64;
		break;
	case RCX_UINT64:
		if (op == RCX_SUM)
			r.u64 = a.u64 + b.u64;
		if (op == RCX_PROD)
			r.u64 = a.u64 * b.u64;
		if (op == RCX_MIN)
			r.u64 = a.u64 < b.u64 ? a.u64 : b.u64;
		if (op == RCX_MAX)
			r.u64 = a.u64 > b.u64 ? a.u64 : b.u64;
		if (op == RCX_BAND)
			r.u64 = a.u64 & b.u64;
		if (op == RCX_BOR)
			r.u64 = a.u64 | b.u64;
		if (op == RCX_BXOR)
			r.u64 = a.u64 ^ b.u64;
		break;
	case RCX_FLOAT:
		if (op == RCX_SUM)
			r.f32 = a.f32 + b.f32;
		if (op == RCX_PROD)
			r.f32 = a.f32 * b.f32;
		if (op == RCX_MIN)
			r.f32 = a.f32 < b.f32 ? a.f32 : b.f32;
		if (op == RCX_MAX)
			r.f32 = a.f32 > b.f32 ? a.f32 : b.f32;
		break;
	case RCX_DOUBLE:
		if (op == RCX_SUM)
			r.f64 = a.f64 + b.f64;
		if (op == RCX_PROD)
			r.f64 = a.f64 * b.f64;
		if (op == RCX_MIN)
			r.f64 = a.f64 < b.f64 ? a.f64 : b.f64;
		if (op == RCX_MAX)
			r.f64 = a.f64 > b.f64 ? a.f64 : b.f64;
		break;
	}
	return r;
}

/*
 * Layout of one rank's window: per origin a slot of AC_STRIDE bytes
 * holding AC_N accumulate elements, AC_N get_accumulate elements (each
 * contiguous), one fetch_and_op element and one compare_and_swap element,
 * fields 8-byte aligned. shift moves it all by 4 bytes, so
 * 8-byte elements are misaligned and cannot use NIC atomics.
 */
#define AC_N	  6
#define AC_ACC	  0
#define AC_GACC	  (AC_N * 8)
#define AC_FOP	  (2 * AC_N * 8)
#define AC_CAS	  (2 * AC_N * 8 + 8)
#define AC_STRIDE (2 * AC_N * 8 + 16)

struct ac_ctx {
	struct tp_job *j;
	struct rcx_win *w;
	uint8_t *base;
	size_t shift;
	const char *what;
};

static uint8_t *ac_at(struct ac_ctx *c, int dt, int origin, size_t field, int k)
{
	return c->base + c->shift + (size_t)origin * AC_STRIDE + field +
	       (size_t)k * esize(dt);
}

static size_t ac_disp(struct ac_ctx *c, int origin, size_t field)
{
	return c->shift + (size_t)origin * AC_STRIDE + field;
}

static bool elem_eq(int dt, const void *a, const void *b)
{
	return !memcmp(a, b, esize(dt));
}

static void ac_fail(struct ac_ctx *c, int dt, int op, const char *call,
		    int other, int k, const void *got, const void *want)
{
	union elem g, w;

	memcpy(&g, got, 8);
	memcpy(&w, want, 8);
	TP_FAIL("%s %s %s %s with %d, element %d: got 0x%llx, want 0x%llx",
		c->what, call, dt_names[dt], op_names[op], other, k,
		(unsigned long long)(esize(dt) == 4 ? g.u64 & 0xffffffffu
						    : g.u64),
		(unsigned long long)(esize(dt) == 4 ? w.u64 & 0xffffffffu
						    : w.u64));
}

/* One (datatype, op) round: every rank with every rank, self included. */
static void ac_round(struct ac_ctx *c, int dt, int op)
{
	struct tp_job *j = c->j;
	size_t es = esize(dt);
	union elem v[AC_N], e, want, *res, *fres, *cres, cmp;
	int t, o, k;

	res = calloc((size_t)j->size * AC_N, sizeof(*res));
	fres = calloc(j->size, sizeof(*fres));
	cres = calloc(j->size, sizeof(*cres));
	for (o = 0; o < j->size; o++) {
		for (k = 0; k < AC_N; k++) {
			e = val(dt, op, 0, j->rank, o, k);
			memcpy(ac_at(c, dt, o, AC_ACC, k), &e, es);
			memcpy(ac_at(c, dt, o, AC_GACC, k), &e, es);
		}
		e = val(dt, op, 0, j->rank, o, AC_N);
		memcpy(ac_at(c, dt, o, AC_FOP, 0), &e, es);
		memcpy(ac_at(c, dt, o, AC_CAS, 0), &e, es);
	}
	fence(c->w);
	for (t = 0; t < j->size; t++) {
		uint8_t ops[AC_N * 8];

		for (k = 0; k < AC_N; k++) {
			v[k] = val(dt, op, 1, t, j->rank, k);
			memcpy(ops + k * es, &v[k], es);
		}
		TP_CHECK_OK(rcx_accumulate(c->w, ops, AC_N, dt, t,
					   ac_disp(c, j->rank, AC_ACC), op));
		TP_CHECK_OK(rcx_get_accumulate(
			c->w, ops, (uint8_t *)&res[t * AC_N], AC_N, dt, t,
			ac_disp(c, j->rank, AC_GACC), op));
		e = val(dt, op, 1, t, j->rank, AC_N);
		TP_CHECK_OK(rcx_fetch_and_op(c->w, &e, &fres[t], dt, t,
					     ac_disp(c, j->rank, AC_FOP), op));
		if (!is_fp(dt) && op == RCX_SUM) {
			/* swaps where the compare value matches: even t */
			cmp = val(dt, op, 0, t, j->rank, AC_N);
			if (t & 1)
				cmp.u64 ^= 1;
			TP_CHECK_OK(rcx_compare_and_swap(
				c->w, &e, &cmp, &cres[t], dt, t,
				ac_disp(c, j->rank, AC_CAS)));
		}
	}
	fence(c->w);
	/* the results are in a contiguous array of es-byte elements */
	for (t = 0; t < j->size; t++) {
		for (k = 0; k < AC_N; k++) {
			want = val(dt, op, 0, t, j->rank, k);
			if (!elem_eq(dt, (uint8_t *)&res[t * AC_N] + k * es,
				     &want))
				ac_fail(c, dt, op, "get_accumulate result", t,
					k, (uint8_t *)&res[t * AC_N] + k * es,
					&want);
		}
		want = val(dt, op, 0, t, j->rank, AC_N);
		if (!elem_eq(dt, &fres[t], &want))
			ac_fail(c, dt, op, "fetch_and_op result", t, 0,
				&fres[t], &want);
		if (!is_fp(dt) && op == RCX_SUM &&
		    !elem_eq(dt, &cres[t], &want))
			ac_fail(c, dt, op, "compare_and_swap result", t, 0,
				&cres[t], &want);
	}
	/* what every origin did to this rank's memory */
	for (o = 0; o < j->size; o++) {
		for (k = 0; k < AC_N; k++) {
			want = ref(dt, op, val(dt, op, 0, j->rank, o, k),
				   val(dt, op, 1, j->rank, o, k));
			if (!elem_eq(dt, ac_at(c, dt, o, AC_ACC, k), &want))
				ac_fail(c, dt, op, "accumulate", o, k,
					ac_at(c, dt, o, AC_ACC, k), &want);
			if (!elem_eq(dt, ac_at(c, dt, o, AC_GACC, k), &want))
				ac_fail(c, dt, op, "get_accumulate", o, k,
					ac_at(c, dt, o, AC_GACC, k), &want);
		}
		e = val(dt, op, 0, j->rank, o, AC_N);
		want = ref(dt, op, e, val(dt, op, 1, j->rank, o, AC_N));
		if (!elem_eq(dt, ac_at(c, dt, o, AC_FOP, 0), &want))
			ac_fail(c, dt, op, "fetch_and_op", o, 0,
				ac_at(c, dt, o, AC_FOP, 0), &want);
		if (!is_fp(dt) && op == RCX_SUM) {
			/* swapped at even targets (see above) */
			want = (j->rank & 1) ? e
					     : val(dt, op, 1, j->rank, o, AC_N);
			if (!elem_eq(dt, ac_at(c, dt, o, AC_CAS, 0), &want))
				ac_fail(c, dt, op, "compare_and_swap", o, 0,
					ac_at(c, dt, o, AC_CAS, 0), &want);
		}
	}
	free(res);
	free(fres);
	free(cres);
}

static void ac_window(struct tp_job *j, const char *what, bool nic,
		      size_t shift)
{
	struct ac_ctx c = { .j = j, .shift = shift, .what = what };
	struct rcx__win_stats st;
	struct rcx_info *info;
	size_t d;
	int op;

	TP_CHECK_OK(rcx_info_create(&info));
	TP_CHECK_OK(
		rcx_info_set(info, RCX_ACCUMULATE_NIC, nic ? "true" : "false"));
	TP_CHECK_OK(rcx_win_allocate(j->g, (size_t)j->size * AC_STRIDE + 8, 1,
				     info, (void **)&c.base, &c.w));
	rcx_info_free(&info);
	fence(c.w);
	for (d = 0; d < sizeof(dtypes) / sizeof(dtypes[0]); d++) {
		for (op = RCX_SUM; op <= RCX_NO_OP; op++) {
			if (is_fp(dtypes[d]) && bitwise(op)) {
				/* refused, nothing sent */
				TP_CHECK_EQ(rcx_accumulate(c.w, c.base, 1,
							   dtypes[d], 0, 0, op),
					    -EINVAL);
				continue;
			}
			ac_round(&c, dtypes[d], op);
		}
	}
	TP_CHECK_OK(rcx__win_stats(c.w, &st));
	/* which path ran: NIC atomics only for aligned 64-bit SUM, NO_OP
	 * and CAS with the NIC allowed; the software path otherwise */
	if (nic && !shift)
		TP_CHECK(st.nic > 0);
	else
		TP_CHECK_EQ(st.nic, 0);
	TP_CHECK(st.sw > 0);
	printf("rank %d: %s: %llu NIC atomics, %llu software accumulates\n",
	       j->rank, what, (unsigned long long)st.nic,
	       (unsigned long long)st.sw);
	TP_CHECK_OK(rcx_win_fence(c.w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&c.w));
}

static void sc_acc(struct tp_job *j)
{
	ac_window(j, "nic", true, 0);
	ac_window(j, "software", false, 0);
	ac_window(j, "misaligned", true, 4);
}

/* ---- atomicity under contention, same-location order */

#define AT_K 100

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Every rank fetch-adds 1 AT_K times to one word at rank 0 (rank 0
 * included, through its loopback): the old values seen by all must be
 * 0 .. size*AT_K-1, each once.
 */
static void at_fetch_add(struct tp_job *j, struct rcx_win *w, int dt,
			 int64_t *word)
{
	int64_t *seen = calloc(AT_K, sizeof(*seen));
	int64_t *all = calloc((size_t)j->size * AT_K, sizeof(*all));
	union elem one, old;
	int k, n = j->size * AT_K, bad = 0;

	memset(&one, 0, sizeof(one));
	if (dt == RCX_INT32)
		one.i32 = 1;
	else if (dt == RCX_DOUBLE)
		one.f64 = 1;
	else
		one.i64 = 1;
	if (j->rank == 0)
		*word = 0;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (k = 0; k < AT_K; k++) {
		memset(&old, 0, sizeof(old));
		TP_CHECK_OK(rcx_fetch_and_op(w, &one, &old, dt, 0, 0, RCX_SUM));
		TP_CHECK_OK(rcx_win_flush(w, 0));
		seen[k] = dt == RCX_INT32    ? old.i32
			  : dt == RCX_DOUBLE ? (int64_t)old.f64
					     : old.i64;
	}
	TP_CHECK_OK(rcx_group_allgather(j->g, seen, AT_K * sizeof(*seen), all));
	qsort(all, n, sizeof(*all), cmp_i64);
	for (k = 0; k < n; k++)
		bad += all[k] != k;
	if (bad)
		TP_FAIL("%s fetch_and_op from %d ranks: %d old values wrong",
			dt_names[dt], j->size, bad);
	free(seen);
	free(all);
}

/* Compare-and-swap increments: the total must come out exact. */
static void at_cas(struct tp_job *j, struct rcx_win *w, int dt, int64_t *word)
{
	union elem cur, nv, got;
	int k, tries = 0;

	if (j->rank == 0)
		*word = 0;
	TP_CHECK_OK(rcx_group_barrier(j->g));
	for (k = 0; k < AT_K; k++) {
		do {
			memset(&cur, 0, sizeof(cur));
			TP_CHECK_OK(rcx_fetch_and_op(w, NULL, &cur, dt, 0, 0,
						     RCX_NO_OP));
			TP_CHECK_OK(rcx_win_flush(w, 0));
			nv = cur;
			if (dt == RCX_INT32)
				nv.i32++;
			else
				nv.i64++;
			memset(&got, 0xff, sizeof(got));
			TP_CHECK_OK(rcx_compare_and_swap(w, &nv, &cur, &got, dt,
							 0, 0));
			TP_CHECK_OK(rcx_win_flush(w, 0));
			tries++;
		} while (!elem_eq(dt, &got, &cur) && !tp_failures());
	}
	TP_CHECK_OK(rcx_group_barrier(j->g));
	if (j->rank == 0)
		TP_CHECK_EQ(dt == RCX_INT32 ? *(int32_t *)word : *word,
			    j->size * AT_K);
	printf("rank %d: %s CAS: %d increments in %d tries\n", j->rank,
	       dt_names[dt], AT_K, tries);
}

/*
 * One origin, one location, both paths, no flush between: NIC
 * fetch-add, software REPLACE, NIC fetch-add, NIC atomic read, software
 * MAX, software get_accumulate: each sees the one before.
 */
static void at_mixed(struct tp_job *j, struct rcx_win *w, int64_t *base)
{
	int t = (j->rank + 1) % j->size;
	int64_t ten = 10, hundred = 100, one = 1, seven = 7, five = 5;
	int64_t r1 = -1, r2 = -1, r3 = -1, r4 = -1;

	TP_CHECK_OK(rcx_win_lock(w, RCX_LOCK_EXCLUSIVE, t));
	TP_CHECK_OK(rcx_put(w, &five, 8, t, 1));
	TP_CHECK_OK(rcx_win_flush(w, t));
	TP_CHECK_OK(rcx_fetch_and_op(w, &ten, &r1, RCX_INT64, t, 1, RCX_SUM));
	TP_CHECK_OK(
		rcx_accumulate(w, &hundred, 1, RCX_INT64, t, 1, RCX_REPLACE));
	TP_CHECK_OK(rcx_fetch_and_op(w, &one, &r2, RCX_INT64, t, 1, RCX_SUM));
	TP_CHECK_OK(rcx_get_accumulate(w, NULL, &r3, 1, RCX_INT64, t, 1,
				       RCX_NO_OP));
	TP_CHECK_OK(rcx_accumulate(w, &seven, 1, RCX_INT64, t, 1, RCX_MAX));
	TP_CHECK_OK(rcx_get_accumulate(w, &seven, &r4, 1, RCX_INT64, t, 1,
				       RCX_PROD));
	TP_CHECK_OK(rcx_win_unlock(w, t));
	TP_CHECK_EQ(r1, 5);
	TP_CHECK_EQ(r2, 100);
	TP_CHECK_EQ(r3, 101);
	TP_CHECK_EQ(r4, 101);
	TP_CHECK_OK(rcx_group_barrier(j->g));
	TP_CHECK_EQ(base[1], 707);
}

/* ---- many 64-bit elements in one accumulate */

#define BK_N	  1000
#define BK_ROUNDS 4

/* WRs of op rank j posted since mark, on any endpoint. */
static size_t bk_count(size_t mark, uint8_t op)
{
	struct rcx_fault_wr r;
	size_t i, n = 0;

	for (i = mark; i < rcx__fault_log_count(); i++)
		n += !rcx__fault_log_get(i, &r) && r.op == op;
	return n;
}

/*
 * An int64 SUM get_accumulate of BK_N elements from rank 0 to rank 1 is
 * one message, not one NIC atomic per element: the recording provider
 * shows no atomic posted by rank 0, the window's counters one software
 * message; rank 1 applies the elements with its NIC atomics (so they
 * still exclude single fetch-adds from others). Then, with three ranks,
 * rank 0's bulk SUMs and rank 2's single fetch_and_ops hit the same
 * words at the same time: every increment must land.
 */
static void sc_acc_bulk(struct tp_job *j)
{
	static int64_t add[BK_N], old[BK_N];
	struct rcx__win_stats s0, s1;
	struct rcx_win *w;
	int64_t *base, one = 1, got;
	size_t k, mark, bad = 0;
	int r;

	TP_CHECK_OK(
		rcx_win_allocate(j->g, BK_N * 8, 8, NULL, (void **)&base, &w));
	for (k = 0; k < BK_N; k++) {
		base[k] = 3 * (int64_t)k;
		add[k] = (int64_t)k + 1;
	}
	/* before the fence: rank 0's message may come while rank 1 is in it */
	mark = rcx__fault_log_count();
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	fence(w);
	if (j->rank == 0)
		TP_CHECK_OK(rcx_get_accumulate(w, add, old, BK_N, RCX_INT64, 1,
					       0, RCX_SUM));
	fence(w);
	TP_CHECK_OK(rcx__win_stats(w, &s1));
	if (j->rank == 0) {
		TP_CHECK_EQ(s1.sw - s0.sw, 1);
		TP_CHECK_EQ(s1.bulk - s0.bulk, 1);
		TP_CHECK_EQ(s1.nic - s0.nic, 0);
		TP_CHECK_EQ(bk_count(mark, RCX_OP_FADD), 0);
		for (k = 0; k < BK_N; k++)
			bad += old[k] != 3 * (int64_t)k;
		TP_CHECK_EQ(bad, 0);
		printf("rank 0: get_accumulate of %d int64: %llu message, "
		       "%zu atomics posted here\n",
		       BK_N, (unsigned long long)(s1.sw - s0.sw),
		       bk_count(mark, RCX_OP_FADD));
	} else if (j->rank == 1) {
		/* applied here, by the NIC */
		TP_CHECK_EQ(bk_count(mark, RCX_OP_FADD), BK_N);
		for (k = 0; k < BK_N; k++)
			if (base[k] != 4 * (int64_t)k + 1 && !bad++)
				TP_FAIL("word %zu is %lld, not %lld", k,
					(long long)base[k],
					(long long)(4 * (int64_t)k + 1));
		TP_CHECK_EQ(bad, 0);
	}
	/* nothing of the next part before rank 1 has checked */
	fence(w);
	/* an atomic read of them all, as uint64: one message as well */
	TP_CHECK_OK(rcx__win_stats(w, &s0));
	if (j->rank == 0)
		TP_CHECK_OK(rcx_get_accumulate(w, NULL, old, BK_N, RCX_UINT64,
					       1, 0, RCX_NO_OP));
	fence(w);
	TP_CHECK_OK(rcx__win_stats(w, &s1));
	if (j->rank == 0) {
		TP_CHECK_EQ(s1.bulk - s0.bulk, 1);
		for (k = 0, bad = 0; k < BK_N; k++)
			bad += old[k] != 4 * (int64_t)k + 1;
		TP_CHECK_EQ(bad, 0);
	}
	/* bulk and single atomics on the same words at once */
	for (r = 0; r < BK_ROUNDS && j->size > 2; r++) {
		if (j->rank == 0)
			TP_CHECK_OK(rcx_accumulate(w, add, BK_N, RCX_INT64, 1,
						   0, RCX_SUM));
		else if (j->rank == 2)
			for (k = 0; k < BK_N; k++)
				TP_CHECK_OK(rcx_fetch_and_op(w, &one, &got,
							     RCX_INT64, 1, k,
							     RCX_SUM));
		fence(w);
	}
	if (j->rank == 1 && j->size > 2) {
		for (k = 0, bad = 0; k < BK_N; k++)
			if (base[k] != 4 * (int64_t)k + 1 +
					       BK_ROUNDS * ((int64_t)k + 2) &&
			    !bad++)
				TP_FAIL("word %zu is %lld, %lld short", k,
					(long long)base[k],
					(long long)(4 * (int64_t)k + 1 +
						    BK_ROUNDS *
							    ((int64_t)k + 2) -
						    base[k]));
		TP_CHECK_EQ(bad, 0);
	}
	TP_CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	TP_CHECK_OK(rcx_win_free(&w));
}

static void sc_atomic(struct tp_job *j)
{
	struct rcx_win *w;
	int64_t *base;

	TP_CHECK_OK(rcx_win_allocate(j->g, 64, 8, NULL, (void **)&base, &w));
	TP_CHECK_OK(rcx_win_lock_all(w));
	at_fetch_add(j, w, RCX_INT64, base); /* NIC */
	at_fetch_add(j, w, RCX_UINT64, base);
	at_fetch_add(j, w, RCX_INT32, base); /* software */
	at_fetch_add(j, w, RCX_DOUBLE, base);
	at_cas(j, w, RCX_INT64, base); /* NIC */
	at_cas(j, w, RCX_INT32, base); /* software */
	TP_CHECK_OK(rcx_win_unlock_all(w));
	at_mixed(j, w, base);
	TP_CHECK_OK(rcx_win_free(&w));
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

/* ---- the peer role */

static const struct tp_scenario scenarios[] = {
	{ .name = "create", .run = sc_create },
	{ .name = "putget", .run = sc_putget },
	{ .name = "acc", .run = sc_acc },
	{ .name = "atomic", .run = sc_atomic },
	{ .name = "lock", .run = sc_lock },
	{ .name = "rreq", .run = sc_rreq },
	{ .name = "epoch", .run = sc_epoch },
	{ .name = "bounds", .run = sc_bounds, .provider = "fault" },
	{ .name = "fork", .run = sc_fork, .size = 2 },
	{ .name = "big", .run = sc_big, .provider = "fault", .size = 2 },
	{ .name = "acc_bulk", .run = sc_acc_bulk, .provider = "fault" },
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
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_win = {
	"win", TU_DEVICE, NULL, NULL, tests,
};
