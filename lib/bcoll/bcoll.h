/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_LIB_BCOLL_H
#define RCX_LIB_BCOLL_H

/* Bound collectives, as the rest of lib/ sees them (lib/bcoll/README.md). */
#include "lib/core/core.h"

/* what the core drives of the bound collectives (lib/features.c) */
extern const struct rcx__feat_ops rcx__bcoll_feat;

#endif
