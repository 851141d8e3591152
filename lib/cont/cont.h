/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_LIB_CONT_H
#define RCX_LIB_CONT_H

/* Continuations, as the rest of lib/ sees them (lib/cont/README.md). */
#include "lib/core/core.h"

/* what the core drives of the continuations (lib/features.c) */
extern const struct rcx__feat_ops rcx__cont_feat;
extern const struct rcx__req_hooks rcx__cont_req_hooks;

#endif
