/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_CTX_H
#define RCX_CTX_H

#include <stddef.h>
#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A context: one per process (or per thread domain). It owns the device,
 * the provider, the progress engine and the event fd. Configuration comes
 * from the attributes and from RCX_* environment variables (docs/config.md
 * lists them all; an attribute left 0/NULL takes the environment's value).
 */
struct rcx_ctx;

enum rcx_thread_level {
	/* one thread at a time calls into the context: no locks taken */
	RCX_THREAD_SINGLE = 0,
	/* any thread at any time: the context serialises internally */
	RCX_THREAD_MULTIPLE = 1,
};

struct rcx_ctx_attr {
	int thread_level;     /* enum rcx_thread_level */
	const char *device;   /* RDMA device name; NULL: RCX_DEVICE or the
				 * device nearest the calling thread (hwloc) */
	const char *provider; /* "auto", "verbs", "shm"; NULL: RCX_PROVIDER */
	/*
	 * enum rcx_connect: when the world's connections are made. 0:
	 * RCX_CONNECT (default lazy). EAGER: every pair at
	 * rcx_group_world; LAZY: a pair on its first message (or at window
	 * creation, which connects the whole group), so a process pays
	 * queue pairs and receive rings only for the peers it talks to.
	 */
	int connect;
};

enum rcx_connect {
	RCX_CONNECT_DEFAULT = 0,
	RCX_CONNECT_EAGER = 1,
	RCX_CONNECT_LAZY = 2,
};

/*
 * Create a context. attr may be NULL (all defaults).
 * Errors: -EINVAL bad attribute or malformed RCX_* variable; -ENODEV no
 * usable device (or the named one does not exist); -ENETDOWN its port is
 * down; -EADDRNOTAVAIL the device has no IP address for connections;
 * -EADDRINUSE the port RCX_PORT names is taken; -ENOMEM; other negative
 * errno from the device. -ENODEV and a failed listen are logged with the
 * device (and those present) or the port.
 *
 * fork(): the child must not use the parent's contexts or anything made
 * from them; it may exec or _exit. The parent carries on, its registered
 * memory its own, where the kernel copies DMA pages at fork (Linux 5.13
 * and later: ibv_is_fork_initialized() says IBV_FORK_UNNEEDED). On older
 * kernels set RDMAV_FORK_SAFE=1 before the first context is made, or
 * fork only before it.
 */
RCX_API int rcx_ctx_create(const struct rcx_ctx_attr *attr,
			   struct rcx_ctx **out);

/*
 * Destroy a context and everything it still owns (groups, requests,
 * registrations). Pending requests are completed with -ECANCELED first.
 * Errors: -EINVAL ctx is NULL or not a live context.
 */
RCX_API int rcx_ctx_destroy(struct rcx_ctx *ctx);

/*
 * Name of the device the context uses, and the address peers connect to
 * (for rcx_group_connect). Errors: -EINVAL NULL argument; -ENAMETOOLONG
 * the buffer is too small (nothing written).
 */
RCX_API int rcx_ctx_device(struct rcx_ctx *ctx, char *name, size_t len);
RCX_API int rcx_ctx_address(struct rcx_ctx *ctx, char *addr, size_t len);

/*
 * Make progress: poll completions in batches and run what they complete.
 * Returns the number of completions handled (>= 0), or -EINVAL.
 */
RCX_API int rcx_progress(struct rcx_ctx *ctx);

/*
 * A file descriptor that becomes readable when the context has work after
 * rcx_ctx_arm(): put it in an epoll set or a libuv poll handle. The fd
 * belongs to the context; do not close it. Errors: -EINVAL.
 */
RCX_API int rcx_ctx_event_fd(struct rcx_ctx *ctx);

/*
 * Prepare to sleep on the event fd. Returns 0 when it is safe to block
 * on the fd; -EAGAIN when completions were found (and handled) while
 * arming, so the caller should test its requests before sleeping.
 * Errors: -EINVAL; negative errno from the device.
 */
RCX_API int rcx_ctx_arm(struct rcx_ctx *ctx);

/*
 * Spin on progress for a short while (RCX_SPIN_US), then block on the
 * completion channel until something completes or timeout_ms passes
 * (-1: no limit). Returns the number of completions handled (> 0), or
 * -ETIMEDOUT, -EINTR, -EINVAL.
 */
RCX_API int rcx_ctx_wait(struct rcx_ctx *ctx, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
