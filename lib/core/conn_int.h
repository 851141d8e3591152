/* SPDX-License-Identifier: BSD-2-Clause */
/* Connections' internals shared by conn.c and conn_reconn.c. */
#ifndef RCX_CORE_CONN_INT_H
#define RCX_CORE_CONN_INT_H

#include "lib/core/core.h"

/* credits kept back so CREDIT messages always find a receive posted */
#define RCX__CREDIT_RESERVE 2

/* a reconnection's steps (rcx__conn.re_phase) */
enum {
	RE_DRAIN = 1, /* the broken endpoint's completions are reaped */
	RE_READY,     /* drained: connect, ask, or accept the peer's */
	RE_NEW,	      /* a new endpoint is on its way */
};

/* a reconnection's attempt (connect or ask) is repeated this often */
#define RE_RETRY_US 200000

int rcx__conn_post_slot(struct rcx__conn *c, struct rcx__txslot *s);
struct rcx_ep_attr rcx__conn_ep_attr(struct rcx__conn *c);
void rcx__conn_pending_add(struct rcx__conn *c);

/* conn_reconn.c */
void rcx__conn_replay_add(struct rcx__conn *c, struct rcx__txslot *s);
void rcx__conn_replay_post(struct rcx__conn *c);
void rcx__conn_replay_drop(struct rcx__conn *c);
void rcx__conn_reconn_stop(struct rcx__conn *c);
void rcx__conn_reconn_up(struct rcx__conn *c);
void rcx__conn_reconn_on_cm(struct rcx__conn *c, const struct rcx_cm_event *ev);
void rcx__conn_settle(struct rcx__conn *c);

#endif
