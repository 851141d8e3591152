/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_LIB_CHAN_H
#define RCX_LIB_CHAN_H

/* Bound channels, as the rest of lib/ sees them (lib/chan/README.md). */
#include "lib/core/core.h"

/* what the core drives of the channels (lib/features.c) */
extern const struct rcx__feat_ops rcx__chan_feat;

#endif
