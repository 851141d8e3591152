/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_STATS_H
#define RCX_STATS_H

/*
 * Counters of a context: what went out and came in by which path, what
 * the windows' rcx_win_order decided, what failed. RCX_STATS=1 prints
 * them at rcx_ctx_destroy (to stderr, or to RCX_STATS_FILE: %p the pid,
 * %r the rank).
 */
#include <stdint.h>
#include <rcx/ctx.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the version of struct rcx_stats this header describes */
#define RCX_STATS_VERSION 1

/*
 * Versioned: the caller sets size = sizeof(struct rcx_stats) of the
 * header it was built with; the library fills the fields both know,
 * never writes past size, and sets version to the library's. Fields are
 * only ever added at the end. Message counts of bound channels are
 * starts (a start whose message is still in flight counts).
 */
struct rcx_stats {
	uint32_t size;	  /* in: sizeof(struct rcx_stats) */
	uint32_t version; /* out: RCX_STATS_VERSION of the library */
	/* point-to-point, eager (through bounce buffers) */
	uint64_t eager_tx_msgs, eager_tx_bytes;
	uint64_t eager_rx_msgs, eager_rx_bytes;
	/* point-to-point, rendezvous (the receiver's RDMA READ) */
	uint64_t rndv_tx_msgs, rndv_tx_bytes;
	uint64_t rndv_rx_msgs, rndv_rx_bytes;
	/* bound channels, send protocol and write_imm protocol */
	uint64_t chan_send_tx_msgs, chan_send_tx_bytes;
	uint64_t chan_send_rx_msgs, chan_send_rx_bytes;
	uint64_t chan_wimm_tx_msgs, chan_wimm_tx_bytes;
	uint64_t chan_wimm_rx_msgs, chan_wimm_rx_bytes;
	/* RMA operations posted on windows (an accumulate done by the NIC
	 * counts as an atomic) */
	uint64_t rma_put_ops, rma_put_bytes;
	uint64_t rma_get_ops, rma_get_bytes;
	uint64_t rma_atomic_ops;
	/* send-queue work requests posted, and of them with a fence */
	uint64_t wrs_posted, wrs_fenced;
	/* rcx_win_order: calls, and what later operations needed because
	 * of one: a fence on their WR, a wait for earlier ones, nothing */
	uint64_t order_calls, order_fenced, order_waited, order_nothing;
	/* rcx_win_flush* calls */
	uint64_t flushes;
	/* completions with an error status, and of them those flushed (the
	 * endpoint went to error: the posted receives of a connection whose
	 * peer left or failed end this way) */
	uint64_t cqe_errors, cqe_flushed;
	/* connections set up (connect or accept), a world connection or a
	 * channel set's queue pair made again after the transport gave up on
	 * it included */
	uint64_t connects;
	/* progress polls that found no completion */
	uint64_t empty_polls;
	/* continuation callbacks run by application threads (in test/wait
	 * or rcx_progress) and by the progress thread */
	uint64_t cont_run_app, cont_run_thread;
};

/*
 * The counters of ctx so far, in *stats: set stats->size to
 * sizeof(struct rcx_stats) first; rcx fills the fields both it and the
 * caller's struct know (never past size) and sets stats->version to
 * RCX_STATS_VERSION. Local, no communication; counts derived from the
 * channels are summed at the call. RCX_STATS=1 prints the same at
 * rcx_ctx_destroy. Errors: -EINVAL ctx not a live context, stats NULL, or stats->size
 * smaller than the first two fields (logged); nothing is written then.
 */
RCX_API int rcx_ctx_stats(struct rcx_ctx *ctx, struct rcx_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
