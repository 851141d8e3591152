/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_P2P_H
#define RCX_P2P_H

#include <stddef.h>
#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcx_group;
struct rcx_req;
struct rcx_status;

#define RCX_ANY_SOURCE (-1)
#define RCX_ANY_TAG    (-1)
#define RCX_TAG_UB     0x3fffffff /* largest user tag */
/*
 * A peer that is no one (MPI_PROC_NULL): a send or receive to it, and a
 * channel bound to it, completes at once with status.source RCX_PROC_NULL,
 * tag RCX_ANY_TAG, count 0.
 */
#define RCX_PROC_NULL (-2)

/*
 * Point-to-point with MPI semantics: tag matching, RCX_ANY_SOURCE and
 * RCX_ANY_TAG on receives, non-overtaking order per sender. Small messages
 * go eagerly (copied; the send completes at once), large ones by RDMA-READ
 * rendezvous (RCX_EAGER_SIZE). A message longer than the receive buffer
 * delivers what fits and completes with status.error = RCX_ERR_TRUNCATE.
 * A failed peer ends the receives posted for it with status.error =
 * RCX_ERR_PROC_FAILED; so does any failure in the group for a posted
 * RCX_ANY_SOURCE receive (the failed process may have been the one it
 * waited for: post it again to go on receiving from the others). A
 * connection the transport gave up on (its retries ran out while the
 * peer may be alive, only slow) is made again for a group of the world:
 * messages under way are delivered once and in order, sends wait for the
 * new connection; on another group's connection what was under way ends
 * with RCX_ERR_TRANSPORT. The peer is reported failed later, on a sign of
 * its death or after RCX_FT_TIMEOUT_MS (docs/config.md). A send
 * that still waits for its connection when the context is destroyed or
 * the group freed is delivered first, within 2 s.
 *
 * Errors of all calls below: -EINVAL NULL group/req or buffer NULL with
 * len > 0, rank out of range (or ANY_SOURCE on a send), tag < 0 or >
 * RCX_TAG_UB (ANY_TAG allowed on receives); -ENOMEM no memory for the
 * request or its message; RCX_ERR_PROC_FAILED the peer is known to have
 * failed; RCX_ERR_TRANSPORT the connection to it broke and it is not
 * (yet) known failed. Nothing is posted on an error.
 */
RCX_API int rcx_isend(struct rcx_group *g, const void *buf, size_t len,
		      int dest, int tag, struct rcx_req **req);
RCX_API int rcx_irecv(struct rcx_group *g, void *buf, size_t len, int source,
		      int tag, struct rcx_req **req);

/*
 * Blocking forms of rcx_isend and rcx_irecv, with the same arguments:
 * they return once the operation is complete (a send: its buffer may be
 * reused, which for an eager message is at once; a receive: the message
 * is in buf and described by status, which may be RCX_STATUS_IGNORE).
 * Progress is made while they wait. They return 0 or the error of the
 * operation, as rcx_wait does with an ignored status.
 */
RCX_API int rcx_send(struct rcx_group *g, const void *buf, size_t len, int dest,
		     int tag);
RCX_API int rcx_recv(struct rcx_group *g, void *buf, size_t len, int source,
		     int tag, struct rcx_status *status);

/*
 * Persistent requests: inactive until rcx_start; each start sends or
 * receives one message with the same arguments. The input of channel
 * binding (rcx_bind).
 */
RCX_API int rcx_send_init(struct rcx_group *g, const void *buf, size_t len,
			  int dest, int tag, struct rcx_req **req);
RCX_API int rcx_recv_init(struct rcx_group *g, void *buf, size_t len,
			  int source, int tag, struct rcx_req **req);

#ifdef __cplusplus
}
#endif

#endif
