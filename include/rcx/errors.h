/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_ERRORS_H
#define RCX_ERRORS_H

#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Every rcx call returns 0 on success or a negative code. Plain system
 * failures are negative errno values (-EINVAL, -ENOMEM, -EAGAIN, -EBUSY,
 * -ENODEV, -ETIMEDOUT, -EOPNOTSUPP ...). Failures that errno cannot name
 * are the codes below; rcx_strerror() names every one.
 */
enum rcx_error {
	RCX_ERR_BASE = 1000,
	/*
	 * a peer process failed (detected locally): a sign of its death
	 * (its connections closed by its exit, the launcher's notice), or
	 * it stayed cut off RCX_FT_TIMEOUT_MS after RCX_ERR_TRANSPORT
	 */
	RCX_ERR_PROC_FAILED = -1001,
	/* the window was invalidated by a process failure */
	RCX_ERR_WIN_INVALID = -1002,
	/* a received message was longer than the receive buffer */
	RCX_ERR_TRUNCATE = -1003,
	/* the remote side rejected an access (bad rkey, bounds, rights) */
	RCX_ERR_REMOTE_ACCESS = -1004,
	/* the remote side failed the operation (remote operation error) */
	RCX_ERR_REMOTE_OP = -1005,
	/*
	 * the transport gave up (retries exhausted, peer not reachable)
	 * with no sign that the peer died: it may be slow. A connection of
	 * the world is made again (messages delivered once); what reports
	 * this is RMA that was under way or started meanwhile, or anything
	 * on a connection that is not remade. The peer is reported failed
	 * only later (RCX_ERR_PROC_FAILED, docs/config.md RCX_FT_TIMEOUT_MS)
	 */
	RCX_ERR_TRANSPORT = -1006,
	/* the receiver had no buffer posted and retries ran out */
	RCX_ERR_RNR = -1007,
	/* local protection or length error on a work request */
	RCX_ERR_LOCAL = -1008,
	/* the work request was flushed: its endpoint went to error first */
	RCX_ERR_FLUSHED = -1009,
	/* call not allowed in the current epoch / synchronisation state */
	RCX_ERR_EPOCH = -1010,
	/* the request already has a continuation attached */
	RCX_ERR_CONT_ATTACHED = -1011,
	/* a message on the wire or from the launcher could not be parsed */
	RCX_ERR_PROTO = -1012,
	RCX_ERR_LAST = -1013,
};

/*
 * Name of an error code: "success" for 0, "EINVAL: Invalid argument" style
 * for negative errno, the rcx name and meaning for rcx codes, and
 * "unknown error" for anything else. Never returns NULL. The string is
 * static, or for errno codes a thread-local buffer valid until the same
 * thread's next call.
 */
RCX_API const char *rcx_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif
