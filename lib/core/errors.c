/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <rcx/rcx.h>

static const char *const rcx_names[] = {
	[-RCX_ERR_PROC_FAILED - 1001] =
		"RCX_ERR_PROC_FAILED: a peer process failed",
	[-RCX_ERR_WIN_INVALID - 1001] =
		"RCX_ERR_WIN_INVALID: window invalidated by a process failure",
	[-RCX_ERR_TRUNCATE - 1001] =
		"RCX_ERR_TRUNCATE: message longer than the receive buffer",
	[-RCX_ERR_REMOTE_ACCESS - 1001] =
		"RCX_ERR_REMOTE_ACCESS: remote access rejected",
	[-RCX_ERR_REMOTE_OP - 1001] =
		"RCX_ERR_REMOTE_OP: remote operation failed",
	[-RCX_ERR_TRANSPORT - 1001] =
		"RCX_ERR_TRANSPORT: transport retries exhausted",
	[-RCX_ERR_RNR - 1001] =
		"RCX_ERR_RNR: receiver not ready, retries exhausted",
	[-RCX_ERR_LOCAL - 1001] =
		"RCX_ERR_LOCAL: local protection or length error",
	[-RCX_ERR_FLUSHED - 1001] = "RCX_ERR_FLUSHED: work request flushed",
	[-RCX_ERR_EPOCH - 1001] =
		"RCX_ERR_EPOCH: not allowed in this synchronisation state",
	[-RCX_ERR_CONT_ATTACHED - 1001] =
		"RCX_ERR_CONT_ATTACHED: request already has a continuation",
	[-RCX_ERR_PROTO - 1001] = "RCX_ERR_PROTO: malformed protocol message",
};

/* errno names for the codes rcx returns; strerror gives the meaning */
#define E(x)          \
	{             \
		x, #x \
	}
static const struct {
	int err;
	const char *name;
} errno_names[] = {
	E(EPERM),	 E(ENOENT),	  E(EINTR),	    E(EIO),
	E(E2BIG),	 E(EBADF),	  E(EAGAIN),	    E(ENOMEM),
	E(EACCES),	 E(EFAULT),	  E(EBUSY),	    E(EEXIST),
	E(ENODEV),	 E(EINVAL),	  E(ENOSPC),	    E(ERANGE),
	E(ENOSYS),	 E(ENAMETOOLONG), E(EPROTO),	    E(EOVERFLOW),
	E(EOPNOTSUPP),	 E(EADDRINUSE),	  E(EADDRNOTAVAIL), E(ENETDOWN),
	E(ECONNABORTED), E(ECONNRESET),	  E(ENOTCONN),	    E(ETIMEDOUT),
	E(ECONNREFUSED), E(EHOSTUNREACH), E(EALREADY),	    E(EINPROGRESS),
	E(ECANCELED),	 E(EPIPE),	  E(ESRCH),	    E(ECHILD),
	E(ENOTSOCK),	 E(EMSGSIZE),	  E(ENOBUFS),
};
#undef E

static const char *errno_name(int e)
{
	size_t i;

	for (i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].err == e)
			return errno_names[i].name;
	return NULL;
}

RCX_API const char *rcx_strerror(int err)
{
	static __thread char buf[96];
	const char *n;

	if (err == 0)
		return "success";
	if (err <= RCX_ERR_PROC_FAILED && err > RCX_ERR_LAST)
		return rcx_names[-err - 1001];
	if (err < 0 && err > -RCX_ERR_BASE) {
		n = errno_name(-err);
		snprintf(buf, sizeof(buf), "%s: %s", n ? n : "errno",
			 strerror(-err));
		return buf;
	}
	return "unknown error";
}

RCX_API const char *rcx_version(void)
{
	return RCX_VERSION_STRING;
}
