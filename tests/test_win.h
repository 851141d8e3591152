/* SPDX-License-Identifier: BSD-2-Clause */
/* What the win suite's two files share (test_win.c, test_win_acc.c). */
#ifndef RCX_TEST_WIN_H
#define RCX_TEST_WIN_H

struct rcx_win;
struct tp_job;

/* rcx_win_fence(w, 0), checked */
void tw_fence(struct rcx_win *w);
/* the scenarios of test_win_acc.c */
void tw_sc_acc(struct tp_job *j);
void tw_sc_acc_bulk(struct tp_job *j);
void tw_sc_atomic(struct tp_job *j);

#endif
