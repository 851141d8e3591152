/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_WIN_NEP_H
#define RCX_WIN_NEP_H

/*
 * What win.c and win_nep.c share: the creation's exchange and the
 * window's own endpoints (the loopback pair, the NIC endpoints to the
 * peers the group reaches without the NIC).
 */
#include <stdatomic.h>
#include "lib/win/win_int.h"

/* What each rank sends the others at creation (one allgather). */
struct rcx__win_wire {
	int32_t status;
	uint32_t disp_unit;
	uint64_t base;
	uint64_t size;
	uint64_t ctrl;
	uint32_t rkey;
	uint32_t ctrl_rkey;
	uint32_t id;
	uint8_t nic_split; /* the rank's dev_info.nic_split */
	uint8_t nic_acc;   /* its rcx_accumulate_nic */
	uint8_t pad[2];
	char addr[RCX__ADDR_LEN]; /* the rank's context address */
};

/* ---- win.c */
/* The attributes of the window's own endpoints (RDMA and atomics). */
struct rcx_ep_attr rcx__win_lep_attr(struct rcx_ctx *ctx);
/* Connection events of a window endpoint that is made once. */
void rcx__win_lep_on_cm(struct rcx__epobj *o, const struct rcx_cm_event *ev);

/* ---- win_nep.c */
/*
 * Make the window's NIC endpoints (lock held) from what each rank sent
 * (all[]). 0, or an error (then none is left).
 */
int rcx__win_nep_open(struct rcx_win *w, const struct rcx__win_wire *all);
void rcx__win_nep_close(struct rcx_win *w);
/* Peers that failed: their endpoints flush now, as the group's do. */
void rcx__win_nep_failed(struct rcx_win *w);
/*
 * An error completion (status) of a WR on the NIC endpoint to target:
 * a transport failure on a live peer starts the endpoint's remake; the
 * error the WR's operation reports (RCX_ERR_TRANSPORT while remade).
 */
int rcx__win_nep_wc_error(struct rcx_win *w, int target, int status);
/* Remakes under way in the process (a look that costs nothing). */
extern atomic_int rcx__win_nep_remaking;
/* The peers' requests to remake an endpoint of ours (cm cadence). */
void rcx__win_nep_reqs(struct rcx_ctx *ctx);
/* w's remakes: their next step, once due (cm cadence, wins lock held). */
void rcx__win_nep_step(struct rcx_win *w, long long now_us);
/* The longest sleep while remakes are under way (steps by the clock). */
int rcx__win_nep_sleep_limit(int timeout_ms);

#endif
