/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_LIB_FT_H
#define RCX_LIB_FT_H

/*
 * Fault tolerance, as the rest of lib/ sees it (lib/ft/README.md): the
 * agreement window creation and validation use, and the heartbeat
 * detector the core drives (rcx__ft_feat).
 */
#include <stdbool.h>
#include <stdint.h>
#include "lib/core/core.h"

/*
 * Fault-tolerant agreement among the live ranks of g: every rank that
 * returns 0 returns the same *ok and the same failed set (failed[size]):
 * the AND of the ok flags and the union of the failed sets proposed by
 * the ranks the agreement heard from, and of the failures each round's
 * leader knew when it decided. Survives the death of any rank,
 * coordinators included (a rotating coordinator, decided after every
 * rank's round; a rank's round is skipped once it is known failed).
 * Lock held. 0, -ENOMEM, or RCX_ERR_PROC_FAILED when this rank cannot
 * take part (its own connections are gone).
 */
int rcx__ft_agree(struct rcx_group *g, bool *ok, uint8_t *failed);
/* tests: called at points of an agreement (a test kills itself there) */
enum {
	RCX__FT_HOOK_GATHERED = 1, /* a leader heard every live rank */
	RCX__FT_HOOK_TOLD_ONE = 2, /* a leader told one rank its decision */
	RCX__FT_HOOK_START = 3,	   /* a rank enters the agreement */
	RCX__FT_HOOK_PROPOSED = 4, /* a follower's estimate has left */
};
extern void (*rcx__ft_hook)(struct rcx_group *g, int where);

/* what the core drives of fault tolerance (lib/features.c) */
extern const struct rcx__feat_ops rcx__ft_feat;

#endif
