/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_LIB_WIN_H
#define RCX_LIB_WIN_H

/* Windows with order, as the rest of lib/ sees them (lib/win/README.md). */
#include "lib/core/core.h"

/* what the core drives of the windows (lib/features.c) */
extern const struct rcx__feat_ops rcx__win_feat;

#endif
