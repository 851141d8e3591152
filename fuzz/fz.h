/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_FZ_H
#define RCX_FZ_H

/*
 * The fuzz harness: an in-memory provider that stands in for the NIC, so
 * that bytes from the fuzzer reach rcx the way a peer's messages do (a
 * receive completion on a posted receive buffer, a connection request
 * with private data), and a context made on it without a device.
 *
 * The peer is a script: records of the fuzz input, each delivered as one
 * received message when the context polls its completion queue and a
 * receive is posted on the scripted endpoint. When the script runs out
 * the peer disconnects (as a process that died would), so every wait in
 * rcx ends. Sends complete at once (successfully), RDMA READ/WRITE and
 * atomics complete without touching memory: their remote addresses and
 * keys come from the input.
 */
#include <stddef.h>
#include <stdint.h>
#include "lib/core.h"

/* Record format of a script: u16 length (little-endian), then the bytes. */
struct fz_script {
	const uint8_t *p;
	size_t left;
};

/* The entry points of a target (libFuzzer). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A context on the in-memory provider (bootstrap: singleton), with small
 * rings (RCX_RX_DEPTH 8, RCX_TX_DEPTH 16, RCX_EAGER_SIZE 1024 unless set).
 * Aborts when it cannot be made: that is a harness failure, not a finding.
 */
struct rcx_ctx *fz_ctx_new(void);
/* Destroy it through rcx_ctx_destroy; checks nothing is left behind. */
void fz_ctx_destroy(struct rcx_ctx *ctx);

/* Queue a connection request carrying pdata (len <= 56). */
void fz_conn_request(const void *pdata, size_t len);

/*
 * Make the next endpoint the context connects or accepts the scripted
 * peer: script records become its received messages. NULL/0: no script,
 * the peer stays silent until fz_peer_close.
 */
void fz_peer_script(const uint8_t *data, size_t len);
/* The scripted peer disconnects now (its receives flush). */
void fz_peer_close(void);
/* Records still undelivered on the scripted endpoint. */
int fz_peer_pending(void);
/* Whether the scripted endpoint took every record it was given. */
int fz_peer_done(void);

/* A pair group (we are rank 0) accepted from a well-formed request. */
struct rcx_group *fz_pair_accept(struct rcx_ctx *ctx);

/* Next record of a script: 1 (*rec, *len set), or 0 at the end. */
int fz_next(struct fz_script *s, const uint8_t **rec, size_t *len);

/* Count of messages the context sent (send and send-with-immediate). */
unsigned long fz_sent(void);

/* Abort with a message when cond is false (an oracle of a target). */
#define FZ_ASSERT(cond) ((cond) ? (void)0 : fz_fail(__FILE__, __LINE__, #cond))
void fz_fail(const char *file, int line, const char *what)
	__attribute__((noreturn));

#endif
