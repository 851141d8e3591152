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
 * (and the context has taken the connection events queued before) the
 * peer disconnects, as a process that died would, so every wait in rcx
 * ends. Sends complete at once (successfully), RDMA READ/WRITE and
 * atomics complete without touching memory: their remote addresses and
 * keys come from the input. Prepared WRs (pwr_*, bound channels) post
 * as ordinary ones; what the peer sends on an endpoint it does not
 * script comes from the target (fz_ep_recv).
 */
#include <stddef.h>
#include <stdint.h>
#include "lib/core/core.h"

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
 * peer: script records become its received messages. NULL/0: an empty
 * script, the peer disconnects at once.
 */
void fz_peer_script(const uint8_t *data, size_t len);
/* The scripted peer disconnects now (its receives flush). */
void fz_peer_close(void);
/* Is the scripted peer's endpoint gone (closed, or in error)? */
int fz_peer_down(void);
/* The peer disconnects endpoint ep (its receives flush). */
void fz_ep_close(struct rcx_ep *ep);

/*
 * The peer's next message on endpoint ep (one the peer does not script,
 * such as a channel's own QP) completes the oldest receive posted there:
 * a SEND of len bytes (written into the receive buffer; longer than it:
 * a local length error, and ep goes to the error state) or, with
 * has_imm, an RDMA WRITE with immediate imm whose len bytes went where
 * the peer wrote them. Returns 1, or 0 when no receive was posted.
 */
int fz_ep_recv(struct rcx_ep *ep, int has_imm, uint32_t imm, uint32_t len);

/*
 * Hooks of a target (NULL: none; a new context clears them). sent sees
 * each message the context sends to the scripted peer (its bytes when
 * posted); deliver may rewrite a record of the script in place, in the
 * receive buffer, before it completes: a peer that answers with what it
 * learned from our messages.
 */
void fz_hooks(void (*sent)(const uint8_t *buf, size_t len),
	      void (*deliver)(uint8_t *buf, size_t len));
/* Records still undelivered on the scripted endpoint. */
int fz_peer_pending(void);
/* Whether the scripted endpoint took every record it was given. */
int fz_peer_done(void);

/* A pair group (we are rank 0) accepted from a well-formed request. */
struct rcx_group *fz_pair_accept(struct rcx_ctx *ctx);

/* Next record of a script: 1 (*rec, *len set), or 0 at the end. */
int fz_next(struct fz_script *s, const uint8_t **rec, size_t *len);

/*
 * Building a script of wire messages from the records of an input:
 * fz_msgs_alloc(size) has room for every record of size bytes with a
 * header added; fz_msg writes one record at out, the header h (NULL:
 * none, the payload is a whole message) then len bytes of payload, and
 * returns the bytes it wrote; fz_eager is an EAGER header on cid with
 * tag, len bytes of payload and a credit.
 */
uint8_t *fz_msgs_alloc(size_t size);
size_t fz_msg(uint8_t *out, const struct rcx__hdr *h, const uint8_t *pl,
	      size_t len);
struct rcx__hdr fz_eager(uint8_t cid, int32_t tag, size_t len);

/* Count of messages the context sent (send and send-with-immediate). */
unsigned long fz_sent(void);

/* Abort with a message when cond is false (an oracle of a target). */
#define FZ_ASSERT(cond) ((cond) ? (void)0 : fz_fail(__FILE__, __LINE__, #cond))
void fz_fail(const char *file, int line, const char *what)
	__attribute__((noreturn));

#endif
