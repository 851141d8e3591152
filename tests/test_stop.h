/* SPDX-License-Identifier: BSD-2-Clause */
/* What the stop suite shares with the loss suite (test_loss.c). */
#ifndef RCX_TEST_STOP_H
#define RCX_TEST_STOP_H

#include <stddef.h>
#include <stdint.h>
#include "tu_mp.h"

struct rcx_win;

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

#endif
