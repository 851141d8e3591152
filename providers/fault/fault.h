/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_FAULT_H
#define RCX_FAULT_H

/*
 * The fault provider ("fault", RCX_PROVIDER=fault): a wrapper that
 * forwards every op to a lower provider (RCX_FAULT_LOWER, default
 * "verbs") and records each posted work request. Tests read the record
 * to see which WR went out with which flags. It also fails a completion
 * (rcx__fault_fail_next), holds one back (rcx__fault_hold_next) or
 * refuses a post (rcx__fault_post_fail) on purpose.
 */
#include <stddef.h>
#include <stdint.h>

struct rcx_ep;

/* One posted work request. */
struct rcx_fault_wr {
	uint64_t seq;		 /* 0, 1, 2 ... since the last clear */
	const struct rcx_ep *ep; /* endpoint it was posted on */
	uint64_t wr_id;
	uint64_t remote_addr; /* WRITE, READ, atomics */
	uint32_t length;
	uint8_t op;    /* enum rcx_op (RCX_OP_RECV for receives) */
	uint8_t flags; /* enum rcx_wr_flag */
};

/* Records kept; older ones are overwritten. */
#define RCX_FAULT_LOG_MAX 16384

/* Number of WRs recorded since the last clear (all, kept or not). */
size_t rcx__fault_log_count(void);

/*
 * Record number seq. Errors: -ENOENT not recorded yet, or already
 * overwritten (more than RCX_FAULT_LOG_MAX since).
 */
int rcx__fault_log_get(size_t seq, struct rcx_fault_wr *out);

/* Forget everything recorded; numbering starts at 0 again. */
void rcx__fault_log_clear(void);

/*
 * The next successful completion of a send, WRITE or atomic WR on an
 * endpoint made with ep_ctx reports status instead (once), as the WR of
 * a queue pair whose retries ran out (status RCX_ERR_TRANSPORT) would;
 * every later send-side completion of ep_ctx then reports
 * RCX_ERR_FLUSHED, as the WRs behind it on that queue pair would, until
 * an endpoint is made with ep_ctx again. The WRs themselves did their
 * work; only their completions lie. A READ's completion is passed by (a
 * WR fenced behind it may have run, which a failed READ never allows).
 */
void rcx__fault_fail_next(const void *ep_ctx, int status);

/*
 * The completion of the next WR of op (enum rcx_op, as posted: a
 * WRITE_IMM's completion says RCX_OP_WRITE on verbs) posted on any
 * endpoint is held back if it succeeds: cq_poll returns it only once
 * its endpoint was put in error (ep_set_error), as a completion the
 * program had not polled yet when it gave the endpoint up would come
 * (RC: the ACK came, the CQE waits in the CQ). Dropped if the endpoint
 * is destroyed first. One at a time: arming again replaces an armed one.
 */
void rcx__fault_hold_next(int op);

/*
 * A post refused, as a device refuses one (a full queue, a queue pair in
 * a state that takes none): of the receives (recv) or of the sends,
 * WRITEs, READs and atomics posted on an endpoint made with ep_ctx, the
 * first `after` from now go, and the next one is refused with err
 * (negative) together with the rest of its list, the ones before it in
 * the list posted, as ibv_post_send and ibv_post_recv do up to their
 * bad_wr. Once; arming again replaces an armed one.
 */
void rcx__fault_post_fail(const void *ep_ctx, int recv, unsigned int after,
			  int err);

/* Completions held back so far, and how many of them cq_poll returned. */
void rcx__fault_hold_counts(size_t *held, size_t *returned);

#endif
