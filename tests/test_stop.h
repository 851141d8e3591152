/* SPDX-License-Identifier: BSD-2-Clause */
/* What the stop suite shares with the loss suite (test_loss.c). */
#ifndef RCX_TEST_STOP_H
#define RCX_TEST_STOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <rcx/rcx.h>
#include "tu_mp.h"

struct rcx_win;
struct rcx_req;
struct rcx_info;
struct rcx_group;
struct rcx_status;

#define TS_NWORD 1024 /* uint64 words of a rank's window (ts_make) */

/* Word i of what rank from writes in round. */
uint64_t ts_word(int from, int round, size_t i);
void ts_fill(uint64_t *buf, int from, int round, size_t n);
/* Words of buf that are not what from wrote in round. */
size_t ts_wrong(const uint64_t *buf, int from, int round, size_t n);
/* Nobody of the world was declared failed here. */
void ts_none_failed(struct tp_job *j);
/* A window of TS_NWORD zeroed words on each rank, after a barrier. */
struct rcx_win *ts_make(struct tp_job *j, uint64_t **base);
/*
 * In a lock_all epoch of 2 ranks: a quarter of the window put to the
 * peer at this rank's quarter, flushed, read back and checked.
 */
void ts_put_get_back(struct tp_job *j, struct rcx_win *w, int round);
/*
 * A bound channel from rank 0 to rank 1 of g: 8 bytes of buf, protocol
 * proto, slots (info values); *info and *init for the caller to free
 * (ts_chan_close), whether or not the bind (*ch) worked.
 */
bool ts_chan_open(struct rcx_group *g, const char *proto, const char *slots,
		  uint64_t *buf, struct rcx_info **info, struct rcx_req **init,
		  struct rcx_req **ch);
/* Test *ch until done or 30 s: its outcome, -ETIMEDOUT for a hang. */
int ts_chan_outcome(struct rcx_req **ch, struct rcx_status *st);
/*
 * A sender whose message goes inline completes its start at the post
 * (lib/chan/chan.c; write_imm: when its credit is there): a break reaches
 * it once a progress call has polled it. ts_chan_early: *ch is such a
 * sender;
 * ts_chan_start_broken: progress until *ch's set failed (30 s at most),
 * then start *ch: its outcome (RCX_ERR_TRANSPORT once it failed).
 */
bool ts_chan_early(struct rcx_req *ch);
int ts_chan_start_broken(struct tp_job *j, struct rcx_req **ch);
/* Nobody of the world was declared failed (j->g may be freed). */
void ts_world_none_failed(struct tp_job *j);
/*
 * A job of 2 ranks running scenario of role under rcx-run --ft (the
 * launcher's failure notices on), the heartbeat on, RCX_FT_TIMEOUT_MS as
 * the scenario's setup leaves it: a CUnit check of its exit.
 */
void ts_ft_job(const char *role, const char *scenario);
/* a scenario of 2 ranks on the fault provider */
#define TS_FAULT_SC(n, f, env)                                       \
	{                                                            \
		.name = n, .run = f, .provider = "fault", .size = 2, \
		.setup = env                                         \
	}
/* rank 0's sleep while rank 1 issues (ts_nap_then_hear) */
#define TS_NAP_S 2

/* Rank 0 sleeps TS_NAP_S (no progress), then hears (tag) that rank 1 is
 * done. */
static inline void ts_nap_then_hear(struct tp_job *j, int tag)
{
	uint64_t in = 0;

	sleep(TS_NAP_S);
	TP_CHECK_OK(rcx_recv(j->g, &in, sizeof(in), 1, tag, NULL));
	TP_CHECK_EQ(in, 1);
}

/* Rank 1 tells rank 0 (tag) that it is done. */
static inline void ts_tell(struct tp_job *j, int tag)
{
	uint64_t v = 1;

	TP_CHECK_OK(rcx_send(j->g, &v, sizeof(v), 0, tag));
}

/* Nobody failed; then the channel and what ts_chan_open made go. */
void ts_chan_close(struct tp_job *j, struct rcx_req **ch, struct rcx_req **init,
		   struct rcx_info **info);

#endif
