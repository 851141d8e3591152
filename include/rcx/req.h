/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_REQ_H
#define RCX_REQ_H

#include <stddef.h>
#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Every nonblocking operation is a request. Non-persistent requests are
 * freed by the test/wait call that completes them (the handle is set to
 * NULL). Persistent requests (rcx_send_init, rcx_recv_init, channels,
 * continuation requests) become inactive on completion and live until
 * rcx_req_free.
 */
struct rcx_req;

struct rcx_status {
	int source;   /* group rank of the sender (receives) */
	int tag;      /* tag of the message (receives) */
	int error;    /* 0 or the operation's negative error code */
	int slot;     /* circular-buffer slot of a channel, else -1 */
	size_t count; /* bytes received (receives) or transferred */
};

#define RCX_STATUS_IGNORE   ((struct rcx_status *)0)
#define RCX_STATUSES_IGNORE ((struct rcx_status *)0)
#define RCX_UNDEFINED	    (-32766)

/*
 * Start an inactive persistent request (rcx_send_init, rcx_recv_init, or
 * a bound channel): it becomes active and sends or receives one message
 * with the arguments it was made with; complete it with rcx_test or
 * rcx_wait, after which it is inactive again and may be restarted. Does
 * not block: on a channel it is one post to the device. The buffer
 * belongs to rcx while the request is active.
 * Errors: -EINVAL req NULL or not a live request; -EBUSY already active
 * (nothing is posted); -EAGAIN a channel from rcx_ibind whose bind has not
 * completed; -EOPNOTSUPP not a persistent request (or a continuation
 * request); RCX_ERR_PROC_FAILED the peer is known to have failed;
 * otherwise the error of the post (as rcx_isend), the request then
 * inactive.
 */
RCX_API int rcx_start(struct rcx_req *req);

/*
 * Start n persistent requests; requests of one channel bundle go out in
 * one post list. All are checked first: on an error none is started.
 * Errors: as rcx_start; -EINVAL n < 0, reqs NULL, or a request given
 * twice.
 */
RCX_API int rcx_startall(int n, struct rcx_req **reqs);

/*
 * Test: *flag = 1 and status written when the request is complete (a
 * non-persistent request is then freed and *req set to NULL); *flag = 0
 * otherwise. A NULL or inactive request tests complete with an empty
 * status. The return value is 0 even when the operation failed: its error
 * is in status->error (and is returned as well when status is IGNORE).
 * Errors: -EINVAL req/flag NULL or *req not a live request.
 */
RCX_API int rcx_test(struct rcx_req **req, int *flag,
		     struct rcx_status *status);

/*
 * Wait until complete; like rcx_test with flag = 1. Returns 0 or the
 * operation's error when status is IGNORE (the request is completed and
 * freed either way). Errors: -EINVAL req NULL or *req not a live request
 * (nothing waited for).
 */
RCX_API int rcx_wait(struct rcx_req **req, struct rcx_status *status);

/*
 * All of n: testall sets *flag only when all are complete (then each is
 * completed as by rcx_test); waitall waits for all. statuses: n entries or
 * RCX_STATUSES_IGNORE. Returns 0, or -EINVAL (n < 0, reqs NULL, a handle
 * not a live request, or a request given twice: NULL handles may repeat;
 * nothing is completed); when statuses is IGNORE, the first operation
 * error.
 */
RCX_API int rcx_testall(int n, struct rcx_req **reqs, int *flag,
			struct rcx_status *statuses);
RCX_API int rcx_waitall(int n, struct rcx_req **reqs,
			struct rcx_status *statuses);

/*
 * Any of n: *index = the completed one (its handle completed as by
 * rcx_test), or RCX_UNDEFINED when all handles are NULL/inactive.
 * testany sets *flag. Errors: -EINVAL as for rcx_testall, or index (or
 * flag) NULL.
 */
RCX_API int rcx_testany(int n, struct rcx_req **reqs, int *index, int *flag,
			struct rcx_status *status);
RCX_API int rcx_waitany(int n, struct rcx_req **reqs, int *index,
			struct rcx_status *status);

/*
 * Free a request; *req is set to NULL. An active non-persistent request is
 * marked and freed when it completes (its buffer stays in use until then).
 * Errors: -EINVAL NULL or not a live request, or a bound channel (those
 * end with rcx_bind_free); -EBUSY an active persistent request (wait for
 * it first).
 */
RCX_API int rcx_req_free(struct rcx_req **req);

#ifdef __cplusplus
}
#endif

#endif
