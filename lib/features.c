/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The features the library is built with, by id: what the core drives of
 * each (lib/core/core.h, struct rcx__feat_ops). The one file that names
 * them all; the layer check (tools/layers) lets it.
 */
#include "lib/core/core.h"
#include "lib/bcoll/bcoll.h"
#include "lib/chan/chan.h"
#include "lib/cont/cont.h"
#include "lib/ft/ft.h"
#include "lib/win/win.h"

const struct rcx__feat_ops *const rcx__feats[RCX__FEAT_MAX] = {
	[RCX__FEAT_CONT] = &rcx__cont_feat,
	[RCX__FEAT_CHAN] = &rcx__chan_feat,
	[RCX__FEAT_WIN] = &rcx__win_feat,
	[RCX__FEAT_FT] = &rcx__ft_feat,
	[RCX__FEAT_BCOLL] = &rcx__bcoll_feat,
};

const struct rcx__req_hooks *const rcx__req_hooks = &rcx__cont_req_hooks;
