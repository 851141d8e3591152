/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_TEST_P2P_H
#define RCX_TEST_P2P_H

/*
 * The point-to-point suite ("p2p"), shared by its files: test_p2p.c
 * (helpers, matching and data: sizes, first messages, ANY_SOURCE/ANY_TAG,
 * order, truncation; the peer role and the suite's table),
 * test_p2p_storm.c (a storm, persistent requests, messages to self,
 * sleeping on the event fd), test_p2p_mt.c (threads on one context),
 * test_p2p_lazy.c (connections made on first use), test_p2p_big.c
 * (rendezvous read in pieces; messages past 2 GiB and 4 GiB),
 * test_p2p_cpu.c (two ranks on one CPU), test_p2p_bounds.c (the edges
 * of the eager formats), test_p2p_first.c (the fast paths of an eager
 * message: the posted head's match, rcx_isend's).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <rcx/rcx.h>
#include "tu_mp.h"

/* One wait inside a scenario; past it the request counts as lost. */
#ifndef WAIT_MS
#define WAIT_MS 120000
#endif
#define GUARD 64
#define FILL  0xee

/*
 * A byte pattern that differs between neighbouring bytes, 256-byte blocks
 * and 64 KiB blocks, and between senders, receivers and messages (salt).
 */
void fill(void *buf, size_t len, int src, int dst, int salt);
/* Pattern over len bytes, then GUARD bytes still FILL (no overrun). */
bool check_data(const void *buf, size_t len, bool guard, int src, int dst,
		int salt, const char *what);
/* A receive buffer of len bytes followed by a guard, all FILL. */
uint8_t *rbuf_new(size_t len);
bool check_status(const struct rcx_status *st, int source, int tag,
		  size_t count, int error, const char *what);
/* A completed send: no error, every byte transferred. */
bool check_sent(const struct rcx_status *st, size_t count, const char *what);
/* What test/wait report for a NULL or inactive request. */
bool check_empty(const struct rcx_status *st, const char *what);
/*
 * Complete one request (all n), sleeping on the context between tests: a
 * request that never completes is reported, not waited for until the
 * launcher's timeout.
 */
int wait_req(struct tp_job *j, struct rcx_req **r, struct rcx_status *st,
	     const char *what);
int wait_all(struct tp_job *j, int n, struct rcx_req **r,
	     struct rcx_status *sts, const char *what);
/* The other rank of this rank's pair (0-1, 2-3, ...), or -1. */
int partner(const struct tp_job *j);

/* Scenarios of the other files, listed in test_p2p.c's table. */
void sc_storm(struct tp_job *j);
void sc_persistent(struct tp_job *j);
void sc_self(struct tp_job *j);
void sc_eventfd(struct tp_job *j);
void sc_threads(struct tp_job *j);
void sc_lazy(struct tp_job *j);
void sc_lazy_win(struct tp_job *j);
void sc_lazy_setup(void);
void sc_eager(struct tp_job *j);
void sc_eager_setup(void);
void sc_split(struct tp_job *j);
void sc_split_setup(void);
void sc_split_dev(struct tp_job *j);
void sc_big4g(struct tp_job *j);
void sc_big2g(struct tp_job *j);
void sc_peer_info(struct tp_job *j);
void sc_shared_cpu(struct tp_job *j);
void sc_bounds(struct tp_job *j);
void sc_posted_first(struct tp_job *j);
void sc_cpu_setup(void);

#endif
