/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_TU_SCALE_H
#define RCX_TU_SCALE_H

/*
 * The size of a long case (many messages, many rounds). The default run
 * of tools/test runs the verbs suites on an emulated device (rxe under
 * qemu's TCG, on a shared host), where a message costs tens of
 * microseconds to milliseconds: there such a case runs a smaller count,
 * still many times what its subject needs (slots wrapped, credits
 * returned, rings turned). TEST_FULL_SIZE=1 runs every one at its full
 * count (tools/test --full and --part full); shared memory always does.
 * The suite and its peers decide alike, from the same environment.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tu.h"

/*
 * True where long cases run scaled down: TEST_FULL_SIZE is not 1, and the
 * provider reaches an RDMA device (not shm, nor auto with RCX_DEVICE=shm,
 * nor the fault provider over either). Any value of TEST_FULL_SIZE but
 * unset, empty, 0 or 1 is reported and taken as 0.
 */
static inline bool tu_scaled_down(void)
{
	const char *full = getenv("TEST_FULL_SIZE");
	const char *p = tu_provider(), *d = getenv("RCX_DEVICE");
	const char *lower = getenv("RCX_FAULT_LOWER");

	if (full && !strcmp(full, "1"))
		return false;
	if (full && *full && strcmp(full, "0"))
		fprintf(stderr,
			"TEST_FULL_SIZE=%s is neither 0 nor 1: taken as 0\n",
			full);
	if (!strcmp(p, "fault"))
		p = lower && *lower ? lower : "auto";
	return strcmp(p, "shm") &&
	       !(!strcmp(p, "auto") && d && !strcmp(d, "shm"));
}

/* full, or scaled where tu_scaled_down() */
static inline long tu_scale(long full, long scaled)
{
	return tu_scaled_down() ? scaled : full;
}

#endif
