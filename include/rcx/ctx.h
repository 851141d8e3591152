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
 * Create a context: read the configuration (attr, then the RCX_*
 * variables), open the provider and its device, and start listening for
 * connections. attr may be NULL (all defaults); it is read during the call
 * only. Blocks only for the device's set-up; no other process takes
 * part. *out is written on success only; the context belongs to the
 * caller until rcx_ctx_destroy. Several contexts may exist in a process,
 * each with its own device and progress.
 * Errors: -EINVAL out NULL, an attribute out of range (thread_level,
 * connect, an unknown provider) or a malformed RCX_* variable (logged
 * with its value); -ENODEV no usable device (or the named one does not
 * exist); -ENETDOWN its port is down; -EADDRNOTAVAIL the device has no IP
 * address for connections; -EADDRINUSE the port RCX_PORT names is taken;
 * -ENOMEM the context could not be allocated; other negative errno from
 * the device. -ENODEV and a failed listen are logged with the device (and
 * those present) or the port.
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
 * Destroy a context and everything it still owns (groups, channels,
 * windows, requests, registrations), closing its connections; peers see
 * them go. Pending requests are completed with -ECANCELED first, and
 * outstanding continuations run once (rcx_continue_init). Handles made
 * from the context must not be used afterwards. Blocks for at most a few
 * seconds, to deliver sends that were still waiting for their connection.
 * Errors: -EINVAL ctx is NULL or not a live context (already destroyed).
 */
RCX_API int rcx_ctx_destroy(struct rcx_ctx *ctx);

/*
 * The device's name and the context's address.
 * rcx_ctx_device copies the name of the device the context uses ("rxe0",
 * "mlx5_0"; the provider's name, such as "shm", when it has no RDMA
 * device) into name, a buffer of len bytes, NUL included. rcx_ctx_address
 * copies the address this context listens at, which a peer passes to
 * rcx_group_connect, into addr (128 bytes always suffice). Neither blocks.
 * Errors: -EINVAL ctx not a live context, or name (addr) NULL;
 * -ENAMETOOLONG the string and its NUL do not fit in len bytes (nothing
 * written).
 */
RCX_API int rcx_ctx_device(struct rcx_ctx *ctx, char *name, size_t len);
RCX_API int rcx_ctx_address(struct rcx_ctx *ctx, char *addr, size_t len);

/*
 * Make progress without blocking: poll the completion queue in batches,
 * complete the
 * requests they finish, advance protocols (rendezvous, software
 * accumulates at this target, connection events) and run ready
 * continuations. Never blocks. A program that does not wait in rcx calls
 * it from its own loop, so that peers depending on this process advance.
 * Returns the number of completions handled (>= 0).
 * Errors: -EINVAL ctx is NULL or not a live context; negative errno from
 * the device when polling fails.
 */
RCX_API int rcx_progress(struct rcx_ctx *ctx);

/*
 * A file descriptor that becomes readable when the context has work after
 * rcx_ctx_arm(): put it in an epoll set or a libuv poll handle, and call
 * rcx_progress when it fires, then rcx_ctx_arm again before sleeping. The
 * fd belongs to the context and stays the same for its life; do not close
 * or read it. Continuations that become ready without a completion signal
 * another fd (rcx_cont_event_fd).
 * Errors: -EINVAL ctx is NULL or not a live context; negative errno when
 * the provider has no such fd.
 */
RCX_API int rcx_ctx_event_fd(struct rcx_ctx *ctx);

/*
 * Prepare to sleep on the event fd: acknowledge the events already read,
 * request a notification for the next completion, then poll once more so
 * that a completion that raced with the request is not missed. Never
 * blocks. Returns 0 when it is safe to block on the fd.
 * Errors: -EAGAIN completions were found (and handled) while arming: test
 * the requests and arm again before sleeping; -EINVAL ctx is NULL or not
 * a live context; negative errno from the device.
 */
RCX_API int rcx_ctx_arm(struct rcx_ctx *ctx);

/*
 * Wait for something to happen: spin on progress for a short while
 * (RCX_SPIN_US; yielding the cpu between polls where RCX_YIELD says so,
 * by default when the node runs more ranks than cpus), then block on
 * the completion channel (and the continuation eventfd) until something
 * completes or timeout_ms milliseconds pass (-1: no limit; 0: one poll, no sleep). Returns the
 * number of completions handled and continuations run (> 0).
 * Errors: -ETIMEDOUT nothing happened within timeout_ms; -EINTR a signal
 * interrupted the sleep; -EINVAL ctx is not a live context or timeout_ms
 * is below -1.
 */
RCX_API int rcx_ctx_wait(struct rcx_ctx *ctx, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
