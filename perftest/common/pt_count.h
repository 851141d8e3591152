/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_PT_COUNT_H
#define RCX_PT_COUNT_H

/*
 * --count: the whole path a user pays, counted by callgrind
 * (perftest/compare --callgrind runs the tools under
 * valgrind --tool=callgrind --collect-atstart=no).
 *
 * A tool's iteration is a body of parts: the start of the sending end,
 * the test that hands its completion back, the same two of the receiving
 * end, one rcx_test that finds nothing, and a second one right after it.
 * After the warm-up the body runs -n times once per part, and in each of
 * these phases collection is on only from the entry to the return of the
 * calls of that part; each phase ends with a dump ("part NAME") that
 * compare reads per object (librcx, libibverbs, the provider's library).
 * Before each phase the ends meet with nothing in flight and let rcx poll
 * its connections (not counted): progress polls them by its count of
 * passes, and a phase is shorter than that count, so no connection poll
 * falls in a phase however slowly it runs.
 *
 * A wait first waits outside rcx for what its completion depends on, so
 * that its first rcx_test finds the completion: with --loopback the ends
 * share counters of messages sent and received, and a wait for a
 * receive spins until the peer has sent it, a wait for a send until the
 * peer has received it; then it sleeps a little (the device's own work)
 * and tests. Without --loopback it only sleeps. The tests per message
 * are counted and printed (polls per message: 1.0 when the first test
 * found the completion; the sleep grows when it did not).
 */
#include <stdbool.h>
#include "common/pt.h"

enum pt_part {
	PT_SEND_START, /* rcx_start, rcx_isend, rcx_put ... */
	PT_SEND_DONE,  /* the test that hands the completion back */
	PT_RECV_START,
	PT_RECV_DONE,
	PT_EMPTY,      /* one rcx_test that finds nothing */
	PT_EMPTY_NEXT, /* the next, right after it */
	PT_NPARTS
};

#define PT_PART(p)   (1u << (p))
#define PT_PARTS_ALL (PT_PART(PT_NPARTS) - 1)

/* before pt_setup: the counters the ends share */
void pt_count_init(const struct pt_opts *o);

/* the body of one iteration; i counts every iteration run */
typedef void pt_count_body(void *arg, long i);

/* Warm-up, then one phase per part in parts; prints one line per end. */
void pt_count_run(const struct pt_opts *o, struct rcx_group *g,
		  unsigned int parts, pt_count_body *body, void *arg);
/* iterations pt_count_run runs in all (the last one may differ) */
long pt_count_iters(const struct pt_opts *o, unsigned int parts);

/* collect from here when the phase is p (and count a call of p) ... */
void pt_count_on(enum pt_part p);
/* ... to here */
void pt_count_off(void);
/* sleep before a wait: the completion is there when it looks */
void pt_count_settle(void);
/* a wait counted as p: settle, then rcx_test until it reports *r done;
 * PT_SEND_DONE waits for the peer's receive of what this end sent,
 * PT_RECV_DONE for the peer's send of what this end receives */
void pt_count_wait(enum pt_part p, struct rcx_req **r);
/* this end sent / received a message (pt_count_wait counts its own) */
void pt_count_sent(void);
void pt_count_received(void);
/*
 * Before a send that the peer's test of its own send may not see: wait
 * until the peer has tested every send it made (with --loopback), so that
 * its send's completion is the only one that test can find.
 */
void pt_count_peer_tested(void);
/* wait outside rcx as pt_count_wait does before its first test */
void pt_count_ready(enum pt_part p);
/* pt_count_wait for all n of reqs, with rcx_testall */
void pt_count_waitall(enum pt_part p, int n, struct rcx_req **reqs);
/* two rcx_test on *r that must find nothing (counted as PT_EMPTY and
 * PT_EMPTY_NEXT) */
void pt_count_empty(struct rcx_req **r);
/* the wait took this many polls (a tool's own wait loop) */
void pt_count_polled(int polls);

#endif
