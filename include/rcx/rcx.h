/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_RCX_H
#define RCX_RCX_H

/*
 * rcx: bound channels, RMA windows with order, continuations and
 * fault-tolerant windows on RDMA verbs. Include this one header.
 */
#include <rcx/version.h>
#include <rcx/errors.h>
#include <rcx/ctx.h>
#include <rcx/req.h>
#include <rcx/group.h>
#include <rcx/p2p.h>
#include <rcx/info.h>
#include <rcx/chan.h>
#include <rcx/cont.h>
#include <rcx/win.h>
#include <rcx/coll.h>
#include <rcx/bcoll.h>
#include <rcx/stats.h>

#endif
