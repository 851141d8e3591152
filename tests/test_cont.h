/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_TEST_CONT_H
#define RCX_TEST_CONT_H

/*
 * The continuations suite ("cont"), shared by its files: test_cont.c
 * (basics, flags, info keys, persistent continuations, the suite's table),
 * test_cont_compose.c (continueall, nesting, callbacks that post work,
 * teardown, bad input), test_cont_wait.c (threads, blocking waits, the
 * event fds), test_cont_wire.c (across processes, channels included).
 *
 * Most tests run in one process on a singleton world: a receive stays
 * active until the test sends to itself, which completes it inside the
 * send call, so the test decides when each operation completes.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <rcx/rcx.h>

#define WAIT_MS 20000 /* a wait for something that must happen */
#define MIXED	64    /* requests under one continueall */

struct env {
	struct rcx_ctx *ctx;
	struct rcx_group *g;
};

/* What a callback saw; cb_data of rec_cb. */
struct rec {
	atomic_int runs;
	int order; /* value of rec_seq when it ran */
	bool had_status;
	struct rcx_status st[4]; /* the first statuses it was given */
	pthread_t thr;
	int in_handler;
	int depth; /* callbacks running on this thread, itself included */
};

/* Order of rec_cb runs, and the deepest nesting of callbacks seen. */
extern atomic_int rec_seq;
extern atomic_int rec_max_depth;

void rec_cb(struct rcx_status *sts, void *arg);
/* cb_data: an atomic_int counting the runs */
void count_cb(struct rcx_status *sts, void *arg);
/* A callback's entry and exit: its nesting depth on this thread. */
int cb_enter(void);
void cb_leave(void);

/* Context (RCX_THREAD_MULTIPLE when mt) and world; false on failure. */
bool env_open(struct env *e, bool mt);
void env_close(struct env *e);
/* A continuation request with up to three info keys (NULL: none). */
int creq(struct env *e, struct rcx_req **out, const char *k1, const char *v1,
	 const char *k2, const char *v2, const char *k3, const char *v3);
/* A receive from self that stays active until send_self(tag). */
struct rcx_req *recv_self(struct env *e, int tag, void *buf, size_t len);
void send_self(struct env *e, int tag, const void *buf, size_t len);
/* A send to self with no receive: complete (unreported) at once. */
struct rcx_req *done_send(struct env *e, int tag);
/* Wait for the continuation request; false if it did not complete. */
bool wait_creq(struct env *e, struct rcx_req **cr, struct rcx_status *st);
/* Sleep until *runs reaches want, at most ms; whether it did. */
bool wait_runs(atomic_int *runs, int want, int ms);

/* The tests of the other files, listed in test_cont.c's table. */
void test_continueall_mixed(void);
void test_nesting(void);
void test_callback_posts(void);
void test_teardown(void);
void test_bad_input(void);
void test_threads(void);
void test_wait_wakeup(void);
void test_event_fd(void);
void test_ctx_wait_queued(void);
void test_ctx_wait_creq(void);
void test_ctx_wait_other_thread(void);
void test_wire_pingpong(void);
void test_wire_mixed(void);
void test_wire_thread(void);
void test_wire_chan(void);
void test_wire_chan_ibind(void);
void test_wire_now(void);

#endif
