/* SPDX-License-Identifier: BSD-2-Clause */
/* --count: callgrind phases, one per part of the path (pt_count.h). */
#include <errno.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
#include "common/pt_count.h"

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define PT_HAVE_CALLGRIND 1
#endif
#endif
#ifndef PT_HAVE_CALLGRIND
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(what) ((void)(what))
#define PT_HAVE_CALLGRIND	      0
#endif

#define SETTLE_US     2000
#define SETTLE_MAX_US 64000

/* messages each end has sent and received (shared with --loopback) */
struct shared {
	volatile long sent[2], received[2];
	volatile long met[2];	 /* phase_meet: the steps each end reached */
	volatile long tested[2]; /* PT_SEND_DONE waits ended */
};

static const char *const part_name[PT_NPARTS] = {
	"send_start", "send_done", "recv_start",
	"recv_done",  "empty",	   "empty_next",
};

static struct {
	int phase; /* the part collected now, -1: none */
	bool on;
	long calls[PT_NPARTS]; /* calls of the part in its phase */
	unsigned int settle_us;
	struct shared *sh; /* NULL: the ends do not share memory */
	int me;
} cnt = { .phase = -1, .settle_us = SETTLE_US };

void pt_count_init(const struct pt_opts *o)
{
	void *p;

	if (!o->loopback)
		return;
	p = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		pt_die(__FILE__, __LINE__, "mmap", -errno);
	cnt.sh = p;
}

void pt_count_sent(void)
{
	if (cnt.sh)
		cnt.sh->sent[cnt.me]++;
}

void pt_count_received(void)
{
	if (cnt.sh)
		cnt.sh->received[cnt.me]++;
}

/*
 * Not there in SPIN_MAX_US: what the completion waits for needs this
 * end's progress (a provider whose transfers the target's poll drives);
 * the tests that follow are counted and show it.
 */
#define SPIN_MAX_US 20000.0
/*
 * A receive's wait spins until the peer's send call has returned, which
 * needs nothing of this end: no cap but a safety one. (Under callgrind,
 * in an emulated guest or on a loaded host, the peer often took more
 * than SPIN_MAX_US to come to its send: the first test found nothing,
 * and the polls per message of a receiving end were 1.05 and more.)
 */
#define SPIN_SENT_MAX_US 10000000.0

void pt_count_ready(enum pt_part p)
{
	struct shared *sh = cnt.sh;
	int peer = 1 - cnt.me;
	double t0 = pt_now_us();

	/*
	 * Sleeping, not spinning: with Soft-RoCE in a guest whose CPUs both
	 * spin, the kernel's work for a packet waits for the next timer tick.
	 */
	if (sh && p == PT_RECV_DONE)
		while (sh->sent[peer] <= sh->received[cnt.me] &&
		       pt_now_us() - t0 < SPIN_SENT_MAX_US)
			usleep(20);
	if (sh && p == PT_SEND_DONE)
		while (sh->received[peer] < sh->sent[cnt.me] &&
		       pt_now_us() - t0 < SPIN_MAX_US)
			usleep(20);
	pt_count_settle();
}

void pt_count_on(enum pt_part p)
{
	if ((int)p != cnt.phase)
		return;
	cnt.calls[p]++;
	if (!cnt.on) {
		cnt.on = true;
		CALLGRIND_TOGGLE_COLLECT;
	}
}

void pt_count_off(void)
{
	if (cnt.on) {
		CALLGRIND_TOGGLE_COLLECT;
		cnt.on = false;
	}
}

void pt_count_settle(void)
{
	usleep(cnt.settle_us);
}

void pt_count_polled(int polls)
{
	/* it was not there yet: wait longer from now on */
	if (polls > 1 && cnt.settle_us < SETTLE_MAX_US)
		cnt.settle_us *= 2;
}

struct reqs {
	int n;
	struct rcx_req **r;
};

static int test_one(struct reqs *q, int *flag)
{
	return rcx_test(q->r, flag, RCX_STATUS_IGNORE);
}

static int test_all(struct reqs *q, int *flag)
{
	return rcx_testall(q->n, q->r, flag, RCX_STATUSES_IGNORE);
}

/* settle, then test until done, each test collected when the phase is p */
static void wait_with(enum pt_part p, int (*test)(struct reqs *, int *),
		      struct reqs *q)
{
	int flag = 0, polls = 0, ret;

	pt_count_ready(p);
	for (;;) {
		pt_count_on(p);
		ret = test(q, &flag);
		pt_count_off();
		PT_CHECK(ret);
		polls++;
		if (flag)
			break;
		pt_count_settle(); /* not there yet: counted, and waited for */
	}
	pt_count_polled(polls);
	if (p == PT_RECV_DONE)
		pt_count_received();
	if (p == PT_SEND_DONE && cnt.sh)
		cnt.sh->tested[cnt.me]++;
}

void pt_count_peer_tested(void)
{
	struct shared *sh = cnt.sh;
	int peer = 1 - cnt.me;
	double t0 = pt_now_us();

	if (sh)
		while (sh->tested[peer] < sh->sent[peer] &&
		       pt_now_us() - t0 < SPIN_MAX_US)
			usleep(20);
}

void pt_count_wait(enum pt_part p, struct rcx_req **r)
{
	struct reqs q = { 1, r };

	wait_with(p, test_one, &q);
}

void pt_count_waitall(enum pt_part p, int n, struct rcx_req **reqs)
{
	struct reqs q = { n, reqs };

	wait_with(p, test_all, &q);
}

void pt_count_empty(struct rcx_req **r)
{
	int flag = 0, ret, p;

	for (p = PT_EMPTY; p <= PT_EMPTY_NEXT; p++) {
		pt_count_on(p);
		ret = rcx_test(r, &flag, RCX_STATUS_IGNORE);
		pt_count_off();
		PT_CHECK(ret);
		if (flag)
			pt_die(__FILE__, __LINE__,
			       "an empty rcx_test found a completion", -EPROTO);
	}
}

/* with --loopback: wait until the peer has come this far too */
static void phase_meet(long step)
{
	struct shared *sh = cnt.sh;

	if (!sh)
		return;
	sh->met[cnt.me] = step;
	while (sh->met[1 - cnt.me] < step)
		usleep(20);
}

/*
 * Before a phase: the ends meet with nothing in flight, and each lets rcx
 * poll its connections (rcx_ctx_arm does, and finds no completion to take
 * from the phase); then they meet again. Progress polls connections by
 * its count of passes since the last poll (lib/core/ctx.c): none is due
 * in a phase shorter than that count, so a phase's instructions do not
 * depend on how slowly it ran (the cost of a poll is not in the parts).
 */
static void phase_start(long *step)
{
	int ret;

	phase_meet(++*step);
	ret = rcx_ctx_arm(pt_ctx());
	if (ret && ret != -EAGAIN)
		PT_CHECK(ret);
	phase_meet(++*step);
}

long pt_count_iters(const struct pt_opts *o, unsigned int parts)
{
	return o->warmup +
	       o->iters * (long)__builtin_popcount(parts & PT_PARTS_ALL);
}

void pt_count_run(const struct pt_opts *o, struct rcx_group *g,
		  unsigned int parts, pt_count_body *body, void *arg)
{
	long i, k = 0, step = 0;
	int p;

	cnt.me = rcx_group_rank(g);
	if (!PT_HAVE_CALLGRIND)
		fprintf(stderr,
			"%s: built without valgrind/callgrind.h: "
			"--count collects nothing\n",
			o->tool);
	for (i = 0; i < o->warmup; i++)
		body(arg, k++);
	CALLGRIND_ZERO_STATS;
	for (p = 0; p < PT_NPARTS; p++) {
		if (!(parts & PT_PART(p)))
			continue;
		phase_start(&step);
		cnt.phase = p;
		for (i = 0; i < o->iters; i++)
			body(arg, k++);
		pt_count_off();
		cnt.phase = -1;
		CALLGRIND_DUMP_STATS_AT(part_name[p]);
	}
	printf("PT_COUNT {\"rank\": %d, \"pid\": %d, \"iters\": %ld, "
	       "\"settle_us\": %u, \"calls\": {",
	       rcx_group_rank(g), (int)getpid(), o->iters, cnt.settle_us);
	for (p = 0, i = 0; p < PT_NPARTS; p++)
		if (parts & PT_PART(p))
			printf("%s\"%s\": %ld", i++ ? ", " : "", part_name[p],
			       cnt.calls[p]);
	printf("}}\n");
	fflush(stdout);
}
