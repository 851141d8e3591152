/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_LIB_CHAN_H
#define RCX_LIB_CHAN_H

/* Bound channels, as the rest of lib/ sees them (lib/chan/README.md). */
#include "lib/core/core.h"

/* what the core drives of the channels (lib/features.c) */
extern const struct rcx__feat_ops rcx__chan_feat;

/*
 * Fail the set of channel r (a live channel) with err, as a failure of
 * its peer would: its active channels complete with err, later starts
 * return it, and its free waits for nobody (lib/bcoll: a collective that
 * lost a member). Lock held.
 */
void rcx__chan_abort(struct rcx_req *r, int err);

/*
 * Is started channel r's message still waiting to be posted (for the
 * peer's credit, or for its set to be remade)? Posted, the transport
 * carries it with no further call of this process. Lock held.
 */
bool rcx__chan_unposted(struct rcx_req *r);

/*
 * chan_bc.c, for lib/bcoll: start write_imm receiver r (a live channel
 * with no continuation) as rcx_start would; where no credit is due this
 * start, only its count, slot and credit word move on, and a message
 * there already is taken with no hook run: 1, r inactive again with its
 * status. Else 0 (or the start's error), r completing as any start does.
 * Lock held.
 */
int rcx__chan_recv_bump(struct rcx_req *r);

#endif
