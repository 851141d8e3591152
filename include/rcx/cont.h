/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_CONT_H
#define RCX_CONT_H

#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcx_ctx;
struct rcx_info;
struct rcx_req;
struct rcx_status;

/*
 * Continuations (the MPI Continuations proposal): a callback attached to
 * one request or to a set of requests, run by rcx once all of them have
 * completed. Every continuation is registered with a continuation request,
 * which is active while continuations registered with it are outstanding
 * and completes when all of them have run.
 *
 * Where callbacks run: in the progress engine of an application thread
 * that calls into rcx (test/wait on any request, rcx_progress,
 * rcx_ctx_wait, rcx_ctx_arm), in test/wait on the continuation request,
 * inside the registration call (RCX_CONT_IMMEDIATE), in the progress
 * thread (info "mpi_continue_thread" = "any"), or from a signal handler
 * through rcx_cont_progress_signal (info "mpi_continue_async_signal_safe").
 * On a RCX_THREAD_MULTIPLE context a callback runs without the context's
 * lock held, so it may call rcx: post operations, start requests, attach
 * continuations. It never runs another continuation itself: continuation
 * execution is not re-entered on a thread, so a callback that tests a
 * continuation request runs nothing, and one that waits on a continuation
 * request whose continuations only it could run waits forever. A callback
 * must not destroy the context.
 *
 * rcx_ctx_wait counts the continuations it ran with the completions it
 * handled, and sleeps on the continuation eventfd too: it returns (> 0)
 * for continuations that become ready without a completion event (queued
 * at registration, readied by another thread, attached to a continuation
 * request that completed, run by a signal handler), not only for
 * completions.
 *
 * Each continuation runs exactly once per completion of its requests.
 * rcx_ctx_destroy runs the outstanding ones once, with status.error =
 * -ECANCELED for the operations that had not completed; registrations made
 * by those callbacks fail with -ECANCELED.
 */

/*
 * statuses: the array (or single status) given at registration, written
 * before the call; NULL when RCX_STATUS(ES)_IGNORE was given.
 */
typedef void rcx_continue_cb(struct rcx_status *statuses, void *cb_data);

/*
 * Flags of rcx_continue and rcx_continueall.
 * RCX_CONT_IMMEDIATE: when every operation is already complete at
 * registration, run the callback inside the call (unless the continuation
 * request was created with mpi_continue_enqueue_complete or
 * mpi_continue_poll_only = "true", or the call is made from inside a
 * callback: then it is queued like any other).
 * RCX_CONT_PERSISTENT: stay attached to the persistent operations after
 * running. Each start of one of them re-arms the continuation; it runs
 * again once every operation still attached has completed or been freed.
 * It stays attached to a request until the request is freed or another
 * continuation is attached to it while it is inactive. Attaching to a
 * request that is active and already has a continuation is an error
 * (RCX_ERR_CONT_ATTACHED). Non-persistent operations are released after
 * the first run, as without the flag; over non-persistent operations only,
 * a persistent continuation behaves as a non-persistent one.
 */
#define RCX_CONT_IMMEDIATE  0x1
#define RCX_CONT_PERSISTENT 0x2

/*
 * Info keys of rcx_continue_init, named as in the proposal:
 * "mpi_continue_poll_only" ("false"|"true", default "false"): run the
 *     continuations only inside test/wait on the continuation request
 *     (rcx_test, rcx_wait and the -all/-any forms that include it).
 * "mpi_continue_thread" ("application"|"any", default "application"):
 *     "any" lets the context's progress thread run them; the thread is
 *     started with the first such continuation request and stopped by
 *     rcx_ctx_destroy. Needs a RCX_THREAD_MULTIPLE context. The thread
 *     binds itself to the cpus near the device (its local cpus in sysfs,
 *     the NUMA node's), or to those of RCX_PROGRESS_CPUS; it stays
 *     unbound for a device without locality (virtual ones such as rxe)
 *     or local to every cpu, and when binding fails.
 *     With "application" only threads of the application run them.
 * "mpi_continue_enqueue_complete" ("false"|"true", default "false"):
 *     "true" queues a continuation whose operations are all complete at
 *     registration even with RCX_CONT_IMMEDIATE.
 * "mpi_continue_max_poll" ("-1" or a positive count, default "-1"): the
 *     most continuations one test of the continuation request runs (-1:
 *     those ready when the test started).
 * "mpi_continue_async_signal_safe" ("false"|"true", default "false"): the
 *     callbacks are async-signal-safe; rcx_cont_progress_signal may run
 *     them from a signal handler.
 */
#define RCX_CONT_INFO_POLL_ONLY		"mpi_continue_poll_only"
#define RCX_CONT_INFO_THREAD		"mpi_continue_thread"
#define RCX_CONT_INFO_ENQUEUE_COMPLETE	"mpi_continue_enqueue_complete"
#define RCX_CONT_INFO_MAX_POLL		"mpi_continue_max_poll"
#define RCX_CONT_INFO_ASYNC_SIGNAL_SAFE "mpi_continue_async_signal_safe"

/*
 * Create a continuation request: persistent, inactive until the first
 * continuation is registered with it (after creation or after its previous
 * completion); then active until all registered continuations have run.
 * rcx_start on it returns -EOPNOTSUPP; rcx_test/rcx_wait run its ready
 * continuations; its status on completion has count = the continuations
 * run since it was started. A continuation may be attached to it.
 * rcx_req_free on an active one returns -EBUSY; freeing an inactive one
 * drops the persistent continuations still registered with it.
 * Errors: -EINVAL ctx or cont_req NULL, ctx not live, an info key above
 * with a malformed value, "mpi_continue_thread" = "any" on a
 * RCX_THREAD_SINGLE context; -ENOMEM no memory for the request; -EAGAIN
 * the progress thread could not be started; negative errno creating the wakeup eventfd.
 */
RCX_API int rcx_continue_init(struct rcx_ctx *ctx, const struct rcx_info *info,
			      struct rcx_req **cont_req);

/*
 * Attach a continuation to *op_req, registered with cont_req. A
 * non-persistent request passes to rcx: *op_req is set to NULL, and rcx
 * frees it after it completes. A persistent request stays valid (it may be
 * restarted once it is inactive; a test on it reports it inactive once the
 * continuation has taken its completion). *op_req may be NULL (complete,
 * empty status). An inactive persistent request counts as complete only
 * after its next start has completed. status (or RCX_STATUS_IGNORE) is
 * written before cb runs and passed to it with cb_data; status.error
 * carries the operation's error.
 * Errors (nothing attached, cb never called): -EINVAL op_req or cb NULL,
 * *op_req or cont_req not a live request, cont_req not a continuation
 * request, flags other than RCX_CONT_*, *op_req of another context than
 * cont_req, or attaching would make continuation requests wait on each
 * other in a cycle; RCX_ERR_CONT_ATTACHED *op_req already has a
 * continuation that has not run, or a persistent one while *op_req is
 * active; -ECANCELED the context is being destroyed; -ENOMEM no memory
 * for the continuation.
 */
RCX_API int rcx_continue(struct rcx_req **op_req, rcx_continue_cb *cb,
			 void *cb_data, int flags, struct rcx_status *status,
			 struct rcx_req *cont_req);

/*
 * Attach one continuation to all of n requests; it runs once all have
 * completed. statuses: n entries (entry i for op_reqs[i]) or
 * RCX_STATUSES_IGNORE. NULL handles count as complete. n = 0 registers a
 * continuation with nothing to wait for.
 * Errors: as rcx_continue; -EINVAL n < 0, op_reqs NULL with n > 0, or a
 * request given twice.
 */
RCX_API int rcx_continueall(int n, struct rcx_req **op_reqs,
			    rcx_continue_cb *cb, void *cb_data, int flags,
			    struct rcx_status *statuses,
			    struct rcx_req *cont_req);

/*
 * An eventfd that becomes readable when continuations become ready
 * without a completion event on rcx_ctx_event_fd(): queued by
 * registration (no RCX_CONT_IMMEDIATE, enqueue_complete), made ready by
 * another thread, or run from a signal handler. Put it in the same epoll
 * set as rcx_ctx_event_fd() and call rcx_progress (or test the
 * continuation request) after every wakeup: that runs them and drains the
 * fd. Before the first call the fd is not signalled for queued work.
 * The fd belongs to the context. Errors: -EINVAL ctx is NULL or not a
 * live context; negative errno creating it.
 */
RCX_API int rcx_cont_event_fd(struct rcx_ctx *ctx);

/*
 * Run ready continuations from a signal handler (async-signal-safe).
 * It runs the callbacks of ready continuations registered
 * with continuation requests created with
 * "mpi_continue_async_signal_safe" = "true" (and not poll-only), from a
 * signal handler or anywhere else. It takes no lock, allocates nothing and
 * never touches the device: it does not detect completions (ordinary
 * progress does) and runs nothing else; the bookkeeping after the
 * callbacks (completing the continuation request, releasing requests) is
 * done by the next ordinary progress on the context. Nested in a callback
 * it runs nothing. The context must stay alive while a handler may call
 * it. Returns the number of callbacks run, or -EINVAL ctx is not a live
 * context.
 */
RCX_API int rcx_cont_progress_signal(struct rcx_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif
