/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One rank of a job started by a launcher (mpirun, rcx-run), through the
 * public API only, as an application would be:
 *
 *	launch_check win NRANKS    window: put, get, accumulates in fence
 *	                           epochs; fetch-and-add, put, get in lock_all
 *	launch_check p2p NRANKS    isend/irecv rings (eager and rendezvous
 *	                           sizes) and an any-source exchange
 *	launch_check order NRANKS  window: each rank puts data, rcx_win_order,
 *	                           a flag into its right neighbour; each
 *	                           watches its memory for the flag, then the
 *	                           data (no rcx call while it waits)
 *	launch_check chan NRANKS   bound channels around the ring (ibind,
 *	                           start/wait rounds, bind_free)
 *	launch_check cont NRANKS   ring messages completed by continuations
 *	                           (rcx_continueall), one wait on the
 *	                           continuation request
 *	launch_check fail NRANKS   the last rank kills itself (SIGKILL); the
 *	                           others must see RCX_ERR_PROC_FAILED, agree
 *	                           with rcx_win_validate, and go on
 *
 * NRANKS is the size the launcher was asked for: a rank that finds another
 * (a launcher whose bootstrap was not detected makes singletons) fails.
 * Exits 0 when every check holds, 1 with a message otherwise.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <rcx/rcx.h>
#include "launch.h"

#define MAX_RANKS    64
#define BLK_WORDS    512 /* 4 KiB put and read back in lock_all */
#define FAA_ROUNDS   16
#define P2P_ITERS    8
#define FAIL_MS	     60000
#define ORDER_ROUNDS 8
#define ORDER_WORDS  1024 /* 8 KiB of data before each flag */
#define CHAN_ROUNDS  16
#define CONT_MSGS    16
#define CONT_BIG     65536 /* every fourth message: rendezvous */

/* The window of every rank, in 8-byte units (disp_unit 8). */
struct layout {
	uint64_t slot[MAX_RANKS]; /* slot[r]: written by rank r */
	int64_t sum;		  /* every rank adds rank + 1 */
	int64_t max;		  /* every rank offers its rank */
	int64_t count;		  /* rank 0's: fetch-and-add target */
	uint64_t blk[BLK_WORDS];  /* written by the left neighbour */
};

#define DISP(field) (offsetof(struct layout, field) / 8)

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static uint64_t word(int from, int k)
{
	return (uint64_t)from << 40 | (uint64_t)k << 8 | 0x5a;
}

static void win_fence_epochs(struct rcx_win *w, struct layout *mine, int me,
			     int n)
{
	uint64_t val[MAX_RANKS], got[MAX_RANKS];
	int64_t add = me + 1, offer = me;
	int t, r;

	CHECK_OK(rcx_win_fence(w, RCX_MODE_NOPRECEDE));
	for (t = 0; t < n; t++) {
		val[t] = 1000u * (uint64_t)me + (uint64_t)t;
		CHECK_OK(rcx_put(w, &val[t], 8, t, DISP(slot) + me));
		CHECK_OK(rcx_accumulate(w, &add, 1, RCX_INT64, t, DISP(sum),
					RCX_SUM));
		CHECK_OK(rcx_accumulate(w, &offer, 1, RCX_INT64, t, DISP(max),
					RCX_MAX));
	}
	CHECK_OK(rcx_win_fence(w, 0));
	for (r = 0; r < n; r++)
		CHECK(mine->slot[r] == 1000u * (uint64_t)r + (uint64_t)me,
		      "slot %d holds %llu", r,
		      (unsigned long long)mine->slot[r]);
	CHECK(mine->sum == (int64_t)n * (n + 1) / 2, "sum %lld",
	      (long long)mine->sum);
	CHECK(mine->max == n - 1, "max %lld", (long long)mine->max);

	/* read back what this rank wrote everywhere */
	for (t = 0; t < n; t++)
		CHECK_OK(rcx_get(w, &got[t], 8, t, DISP(slot) + me));
	CHECK_OK(rcx_win_fence(w, RCX_MODE_NOSUCCEED));
	for (t = 0; t < n; t++)
		CHECK(got[t] == val[t], "get from %d: %llu", t,
		      (unsigned long long)got[t]);
}

static void win_lock_all_epochs(struct rcx_group *g, struct rcx_win *w,
				struct layout *mine, int me, int n)
{
	static uint64_t src[BLK_WORDS], back[BLK_WORDS];
	int64_t one = 1, old[FAA_ROUNDS];
	int right = (me + 1) % n, left = (me + n - 1) % n, k;

	for (k = 0; k < BLK_WORDS; k++)
		src[k] = word(me, k);
	CHECK_OK(rcx_win_lock_all(w));
	for (k = 0; k < FAA_ROUNDS; k++) {
		CHECK_OK(rcx_fetch_and_op(w, &one, &old[k], RCX_INT64, 0,
					  DISP(count), RCX_SUM));
		CHECK_OK(rcx_win_flush_local(w, 0));
	}
	CHECK_OK(rcx_put(w, src, sizeof(src), right, DISP(blk)));
	CHECK_OK(rcx_win_flush(w, right));
	CHECK_OK(rcx_win_unlock_all(w));
	/* each fetch saw a larger count than the one before */
	for (k = 1; k < FAA_ROUNDS; k++)
		CHECK(old[k] > old[k - 1], "fetch-and-add went %lld -> %lld",
		      (long long)old[k - 1], (long long)old[k]);

	CHECK_OK(rcx_group_barrier(g));
	for (k = 0; k < BLK_WORDS; k++)
		CHECK(mine->blk[k] == word(left, k), "block word %d", k);
	if (me == 0)
		CHECK(mine->count == (int64_t)n * FAA_ROUNDS, "count %lld",
		      (long long)mine->count);

	/* the right neighbour holds this rank's block: read it back */
	CHECK_OK(rcx_win_lock_all(w));
	CHECK_OK(rcx_get(w, back, sizeof(back), right, DISP(blk)));
	CHECK_OK(rcx_win_unlock_all(w));
	CHECK(!memcmp(back, src, sizeof(src)), "block read back differs");
}

static int run_win(struct rcx_group *g, int me, int n)
{
	struct layout *mine;
	struct rcx_win *w;

	CHECK_OK(rcx_win_allocate(g, sizeof(*mine), 8, NULL, (void **)&mine,
				  &w));
	win_fence_epochs(w, mine, me, n);
	win_lock_all_epochs(g, w, mine, me, n);
	CHECK_OK(rcx_win_free(&w));
	return 0;
}

/* Byte i of the message from rank `from` in iteration it. */
static uint8_t byte_of(int from, int it, size_t i)
{
	return (uint8_t)(from * 131 + it * 17 + i * 7 + (i >> 8));
}

static void p2p_ring(struct rcx_group *g, int me, int n, size_t len, int it,
		     int tag, uint8_t *sbuf, uint8_t *rbuf)
{
	struct rcx_req *req[2];
	struct rcx_status st[2];
	int right = (me + 1) % n, left = (me + n - 1) % n;
	size_t i;

	for (i = 0; i < len; i++)
		sbuf[i] = byte_of(me, it, i);
	memset(rbuf, 0, len + 1);
	CHECK_OK(rcx_irecv(g, rbuf, len + 1, left, tag, &req[0]));
	CHECK_OK(rcx_isend(g, sbuf, len, right, tag, &req[1]));
	CHECK_OK(rcx_waitall(2, req, st));
	CHECK(st[0].source == left && st[0].tag == tag && !st[0].error &&
		      st[0].count == len,
	      "receive of %zu bytes: source %d tag %d count %zu error %d", len,
	      st[0].source, st[0].tag, st[0].count, st[0].error);
	for (i = 0; i < len; i++)
		CHECK(rbuf[i] == byte_of(left, it, i),
		      "%zu-byte message from %d, iteration %d: byte %zu", len,
		      left, it, i);
}

/* Every rank sends one word to every other; receives use ANY_SOURCE. */
static void p2p_any_source(struct rcx_group *g, int me, int n)
{
	struct rcx_req *req[2 * MAX_RANKS];
	struct rcx_status st[2 * MAX_RANKS];
	uint64_t out = word(me, 0), in[MAX_RANKS];
	int seen[MAX_RANKS] = { 0 }, k = 0, t, i;

	for (i = 0; i < n - 1; i++)
		CHECK_OK(
			rcx_irecv(g, &in[i], 8, RCX_ANY_SOURCE, 77, &req[k++]));
	for (t = 0; t < n; t++)
		if (t != me)
			CHECK_OK(rcx_isend(g, &out, 8, t, 77, &req[k++]));
	CHECK_OK(rcx_waitall(k, req, st));
	for (i = 0; i < n - 1; i++) {
		CHECK(st[i].source >= 0 && st[i].source < n &&
			      st[i].source != me && !seen[st[i].source],
		      "any-source receive from %d", st[i].source);
		seen[st[i].source] = 1;
		CHECK(in[i] == word(st[i].source, 0), "word from %d",
		      st[i].source);
	}
}

static int run_p2p(struct rcx_group *g, int me, int n)
{
	/* 65536 is past RCX_EAGER_SIZE's default: rendezvous */
	static const size_t lens[] = { 0, 8, 4096, 65536 };
	uint8_t *sbuf = malloc(65536), *rbuf = malloc(65536 + 1);
	size_t l;
	int it;

	CHECK(sbuf && rbuf, "out of memory");
	for (it = 0; it < P2P_ITERS; it++)
		for (l = 0; l < sizeof(lens) / sizeof(*lens); l++)
			p2p_ring(g, me, n, lens[l], it, it * 8 + (int)l, sbuf,
				 rbuf);
	p2p_any_source(g, me, n);
	CHECK_OK(rcx_group_barrier(g));
	free(sbuf);
	free(rbuf);
	return 0;
}

/* One round of run_order in every rank's window: data, then its flag. */
struct order_slot {
	uint64_t data[ORDER_WORDS];
	uint64_t flag; /* round + 1, written after rcx_win_order */
};

static int run_order(struct rcx_group *g, int me, int n)
{
	int right = (me + 1) % n, left = (me + n - 1) % n, r, k;
	struct order_slot *mine, *src;
	struct rcx_win *w;
	long long start;

	CHECK_OK(rcx_win_allocate(g, ORDER_ROUNDS * sizeof(*mine), 1, NULL,
				  (void **)&mine, &w));
	src = calloc(ORDER_ROUNDS, sizeof(*src));
	CHECK(src, "out of memory");
	CHECK_OK(rcx_win_lock_all(w));
	for (r = 0; r < ORDER_ROUNDS; r++) {
		for (k = 0; k < ORDER_WORDS; k++)
			src[r].data[k] = word(me, r * ORDER_WORDS + k);
		src[r].flag = (uint64_t)r + 1;
		CHECK_OK(rcx_put(w, src[r].data, sizeof(src[r].data), right,
				 r * sizeof(*src)));
		CHECK_OK(rcx_win_order(w, RCX_ORDER_WRITE));
		CHECK_OK(rcx_put(w, &src[r].flag, sizeof(src[r].flag), right,
				 r * sizeof(*src) +
					 offsetof(struct order_slot, flag)));
	}
	/* the left neighbour's puts may still be under way */
	start = now_ms();
	for (r = 0; r < ORDER_ROUNDS; r++) {
		volatile uint64_t *flag = &mine[r].flag;

		while (*flag != (uint64_t)r + 1) {
			CHECK(now_ms() - start < FAIL_MS, "no flag %d", r);
			sched_yield();
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		for (k = 0; k < ORDER_WORDS; k++)
			CHECK(mine[r].data[k] ==
				      word(left, r * ORDER_WORDS + k),
			      "round %d: word %d before its flag", r, k);
	}
	CHECK_OK(rcx_win_unlock_all(w));
	CHECK_OK(rcx_group_barrier(g));
	CHECK_OK(rcx_win_free(&w));
	free(src);
	return 0;
}

static int run_chan(struct rcx_group *g, int me, int n)
{
	int right = (me + 1) % n, left = (me + n - 1) % n, i, k;
	struct rcx_req *si, *ri, *ch[2], *eph[2];
	uint64_t out[8], in[8];
	struct rcx_status st[2];

	CHECK_OK(rcx_send_init(g, out, sizeof(out), right, 5, &si));
	CHECK_OK(rcx_recv_init(g, in, sizeof(in), left, 5, &ri));
	/* around a ring blocking binds would wait for each other */
	CHECK_OK(rcx_ibind(si, NULL, &ch[0], &eph[0]));
	CHECK_OK(rcx_ibind(ri, NULL, &ch[1], &eph[1]));
	CHECK_OK(rcx_waitall(2, eph, st));
	CHECK(!st[0].error && !st[1].error, "bind: %s, %s",
	      rcx_strerror(st[0].error), rcx_strerror(st[1].error));
	CHECK_OK(rcx_req_free(&si));
	CHECK_OK(rcx_req_free(&ri));
	for (i = 0; i < CHAN_ROUNDS; i++) {
		for (k = 0; k < 8; k++)
			out[k] = word(me, i * 8 + k);
		/* the receive first: the send it answers may come at once */
		CHECK_OK(rcx_start(ch[1]));
		CHECK_OK(rcx_start(ch[0]));
		CHECK_OK(rcx_wait(&ch[0], RCX_STATUS_IGNORE));
		CHECK_OK(rcx_wait(&ch[1], &st[1]));
		CHECK(!st[1].error && st[1].count == sizeof(in),
		      "round %d: error %d, %zu bytes", i, st[1].error,
		      st[1].count);
		for (k = 0; k < 8; k++)
			CHECK(in[k] == word(left, i * 8 + k),
			      "round %d: word %d", i, k);
	}
	CHECK_OK(rcx_bind_free(ch, 2));
	return 0;
}

/* One message of run_cont: its buffers and what its callback found. */
struct cont_msg {
	uint8_t *out, *in;
	size_t len;
	int from, k, ok;
	struct rcx_status st[2];
};

static void cont_done(struct rcx_status *st, void *cb_data)
{
	struct cont_msg *m = cb_data;
	size_t i;

	if (st[0].error || st[1].error || st[0].count != m->len)
		return;
	for (i = 0; i < m->len; i++)
		if (m->in[i] != byte_of(m->from, m->k, i))
			return;
	m->ok = 1;
}

static int run_cont(struct rcx_ctx *ctx, struct rcx_group *g, int me, int n)
{
	int right = (me + 1) % n, left = (me + n - 1) % n, k, ok = 0;
	struct cont_msg m[CONT_MSGS];
	struct rcx_req *cont, *req[2];
	struct rcx_status st;
	size_t i;

	CHECK_OK(rcx_continue_init(ctx, NULL, &cont));
	for (k = 0; k < CONT_MSGS; k++) {
		m[k].len = k % 4 == 3 ? CONT_BIG : 64;
		m[k].out = malloc(m[k].len);
		m[k].in = malloc(m[k].len);
		CHECK(m[k].out && m[k].in, "out of memory");
		m[k].from = left;
		m[k].k = k;
		m[k].ok = 0;
		for (i = 0; i < m[k].len; i++)
			m[k].out[i] = byte_of(me, k, i);
		CHECK_OK(rcx_irecv(g, m[k].in, m[k].len, left, k, &req[0]));
		CHECK_OK(rcx_isend(g, m[k].out, m[k].len, right, k, &req[1]));
		CHECK_OK(rcx_continueall(2, req, cont_done, &m[k], 0, m[k].st,
					 cont));
	}
	/* progress runs the callbacks; done when every one has run */
	CHECK_OK(rcx_wait(&cont, &st));
	CHECK(st.count == CONT_MSGS, "%zu continuations ran", st.count);
	for (k = 0; k < CONT_MSGS; k++) {
		ok += m[k].ok;
		free(m[k].out);
		free(m[k].in);
	}
	CHECK(ok == CONT_MSGS, "%d of %d messages arrived intact", ok,
	      CONT_MSGS);
	CHECK_OK(rcx_req_free(&cont));
	return 0;
}

/*
 * The victim (the last rank) dies after a barrier; the survivors keep
 * putting to it until the failure shows, then agree and carry on.
 */
static int run_fail(struct rcx_group *g, int me, int n)
{
	int victim = n - 1, failed[MAX_RANKS], nfailed = 0, t, ret;
	struct layout *mine;
	struct rcx_win *w;
	uint64_t v = (uint64_t)me;
	long long start;

	CHECK(n >= 3, "fail needs 3 ranks or more");
	CHECK_OK(rcx_win_allocate(g, sizeof(*mine), 8, NULL, (void **)&mine,
				  &w));
	CHECK_OK(rcx_win_lock_all(w));
	/* the victim may die before a survivor leaves the barrier */
	ret = rcx_group_barrier(g);
	CHECK(!ret || ret == RCX_ERR_PROC_FAILED, "barrier: %s",
	      rcx_strerror(ret));
	if (me == victim) {
		fflush(NULL);
		raise(SIGKILL);
	}
	start = now_ms();
	while (!ret) {
		CHECK(now_ms() - start < FAIL_MS, "no failure seen in %d ms",
		      FAIL_MS);
		ret = rcx_put(w, &v, 8, victim, DISP(slot) + me);
		if (!ret)
			ret = rcx_win_flush_all(w);
	}
	/* a dying process's memory can go before its queue pairs: then an
	 * access error is the first sign of its failure */
	CHECK(ret == RCX_ERR_PROC_FAILED || ret == RCX_ERR_WIN_INVALID ||
		      ret == RCX_ERR_REMOTE_ACCESS,
	      "after the kill: %s", rcx_strerror(ret));
	do {
		CHECK(now_ms() - start < FAIL_MS, "failure not known in %d ms",
		      FAIL_MS);
		CHECK_OK(rcx_win_get_failed(w, failed, MAX_RANKS, &nfailed));
	} while (!nfailed);
	CHECK(nfailed == 1 && failed[0] == victim, "%d failed, first %d",
	      nfailed, nfailed ? failed[0] : -1);
	printf("launch_check fail: rank %d saw rank %d fail after %lld ms\n",
	       me, victim, now_ms() - start);

	CHECK_OK(rcx_win_validate(w));
	CHECK_OK(rcx_win_fence(w, 0));
	v = 100 + (uint64_t)me;
	for (t = 0; t < n; t++)
		if (t != victim)
			CHECK_OK(rcx_put(w, &v, 8, t, DISP(slot) + me));
	CHECK(rcx_put(w, &v, 8, victim, 0) == RCX_ERR_PROC_FAILED,
	      "put to the failed rank");
	CHECK_OK(rcx_win_fence(w, 0));
	for (t = 0; t < n; t++)
		CHECK(t == victim || mine->slot[t] == 100 + (uint64_t)t,
		      "slot %d after validate", t);
	/* no barrier at the end: the group has lost a member */
	CHECK_OK(rcx_win_free(&w));
	return 0;
}

int main(int argc, char **argv)
{
	struct rcx_group *g;
	struct rcx_ctx *ctx;
	int want, me, n, ret;

	if (argc != 3 || (want = atoi(argv[2])) < 1 || want > MAX_RANKS) {
		fprintf(stderr,
			"usage: launch_check win|p2p|order|chan|cont|fail "
			"NRANKS "
			"(1 to 64)\n");
		return 2;
	}
	CHECK_OK(rcx_ctx_create(NULL, &ctx));
	CHECK_OK(rcx_group_world(ctx, &g));
	me = launch_rank = rcx_group_rank(g);
	n = rcx_group_size(g);
	CHECK(n == want, "a job of %d ranks, expected %d", n, want);
	if (!strcmp(argv[1], "win"))
		ret = run_win(g, me, n);
	else if (!strcmp(argv[1], "p2p"))
		ret = run_p2p(g, me, n);
	else if (!strcmp(argv[1], "order"))
		ret = run_order(g, me, n);
	else if (!strcmp(argv[1], "chan"))
		ret = run_chan(g, me, n);
	else if (!strcmp(argv[1], "cont"))
		ret = run_cont(ctx, g, me, n);
	else if (!strcmp(argv[1], "fail"))
		ret = run_fail(g, me, n);
	else
		launch_fail(__LINE__, "unknown mode %s", argv[1]);
	if (strcmp(argv[1], "fail"))
		CHECK_OK(rcx_group_barrier(g));
	printf("launch_check %s: rank %d of %d ok\n", argv[1], me, n);
	CHECK_OK(rcx_group_free(&g));
	CHECK_OK(rcx_ctx_destroy(ctx));
	return ret;
}
