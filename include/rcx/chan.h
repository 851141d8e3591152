/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_CHAN_H
#define RCX_CHAN_H

#include <stddef.h>
#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rcx_req;
struct rcx_info;

/*
 * Bound channels (the persistent-channels proposal: MPI_Bind, MPI_Ibind,
 * MPI_Mbind, MPI_Rebind, MPI_Bind_free).
 *
 * A persistent send or receive request from rcx_send_init/rcx_recv_init is
 * bound into a channel: a private RC queue pair between the two processes
 * with memory registered once, work requests built once and the remote
 * slot address known. Binding matches exactly as the original send and
 * receive would (same group, peer and tag; post order per process) but
 * out of band: afterwards the channel has no ordering relation with other
 * traffic on the group, and the group may be freed before the channel.
 * The input request is not changed and can be reused.
 *
 * A channel is a persistent request: rcx_start / rcx_startall /
 * rcx_test / rcx_wait. One message in flight: starting an active channel
 * returns -EBUSY and posts nothing. A receiving channel's buffer (slot)
 * belongs to the program between completion and the next start: data never
 * lands in it before the receiver's next start (send protocol: the receive
 * is posted by the start and an early message is retried by the hardware;
 * write_imm: the sender waits for a credit the receiver's starts write
 * into its memory). With write_imm and more than one slot per channel, the
 * sender may run ahead of the receiver's starts by up to (slots the
 * channel cycles through, at most 8) - 1 messages, each into a slot the
 * receiver has given back; the receiver's start then completes at once
 * with the message already there, and the receiver writes its credit only
 * once in that many starts. The receiver's first start hands the channel
 * its slots. For the lowest latency start the receive before sending the
 * message it answers. status.slot is the slot of the message; status.count
 * its size.
 *
 * A channel whose peer failed completes its active start with
 * RCX_ERR_PROC_FAILED. One whose queue pair's transport gave up (its
 * retries ran out: the peer may only be slow, or the link lossy) is
 * remade: both ends agree on the messages each channel completed, a new
 * queue pair replaces the broken one and a message the receiver did not
 * complete is sent again, so every message arrives once and in order and
 * nobody is declared failed. A remake not made within RCX_FT_TIMEOUT_MS
 * (0: none is tried) ends the active start with RCX_ERR_TRANSPORT at
 * both ends: the end that saw it tells the other over the group's
 * connection, so a receiver or a sender waiting for its credit does not
 * wait forever. Later starts return the error; free the channel and bind
 * again.
 * A channel holds its group's connections until it is freed, so the
 * notice reaches the peer even when the program freed the group first
 * (at either end or both).
 *
 * Info keys (unknown keys are ignored; malformed values give -EINVAL):
 *   rcx_chan_protocol  "send" (receive posted by each start), "write_imm"
 *                      (RDMA WRITE into the peer's slot with immediate
 *                      data), "auto" (default). Both ends must agree or
 *                      one must say auto. Both auto: write_imm for a
 *                      bundle (n > 1) with more than one slot and the
 *                      sender's slots contiguous (stride == its len), whose
 *                      channels started together then go as one RDMA
 *                      write; send otherwise.
 *   rcx_chan_slots     N >= 1 circular slots (default 1); start k uses
 *                      buf + (k mod N) * stride at both ends (channel i of
 *                      a bundle of n: buf + ((i + k * n) mod N) * stride).
 *                      N and stride must be equal at both ends.
 *   rcx_chan_stride    bytes from one slot to the next (default: len;
 *                      must be >= len when N > 1).
 *   rcx_chan_companion N in 1 .. 2^32 - 1 (default 0: none): names a
 *                      companion pair, one channel (not a bundle) each
 *                      way between the same two ranks of a group (a
 *                      ping-pong), bound with the same N at all four
 *                      ends. Where both run write_imm, each rank's
 *                      receiving channel gives its credit in the
 *                      immediate of its sending channel's next message
 *                      instead of an RDMA write of its own (half the
 *                      packets of a one-slot round trip). A credit no
 *                      message carried is written by the receiver's
 *                      fourth progress call after its start (a test of
 *                      any request; a wait makes them all, with no
 *                      sleep before): a one-way stream needs those
 *                      calls, as it makes them anyway to see its
 *                      messages. A pair whose sending set fails or
 *                      is freed goes back to written credits; a set
 *                      bound later with the same N pairs anew. Ends
 *                      that give different values, or the send
 *                      protocol, ignore it. -EINVAL (logged, nothing
 *                      bound) for a bundle, a receive from
 *                      RCX_ANY_SOURCE, or N given to another live set
 *                      of the same direction to the same peer.
 * The buffer spans (N - 1) * stride + len bytes. The sender's len must not
 * exceed the receiver's.
 */
#define RCX_CHAN_PROTOCOL  "rcx_chan_protocol"
#define RCX_CHAN_SLOTS	   "rcx_chan_slots"
#define RCX_CHAN_STRIDE	   "rcx_chan_stride"
#define RCX_CHAN_COMPANION "rcx_chan_companion"

enum rcx_chan_protocol {
	RCX_CHAN_AUTO = 0,
	RCX_CHAN_SEND = 1,
	RCX_CHAN_WRITE_IMM = 2,
};

/*
 * Bind (MPI_Bind): make a bound channel from a persistent request.
 * The persistent send or receive init_req becomes a channel, *chan, with
 * the peer that binds the matching request (same group, peer and tag; the
 * binds of one process match in the order they are posted). Both ends must bind within a bounded time of each
 * other (RCX_CONNECT_TIMEOUT_MS). Blocking: it returns when the channel's
 * queue pair is connected, its memory registered and, for a receive, the
 * first receive ready to be posted. init_req is not changed or consumed:
 * it stays the caller's, and may be started for ordinary traffic or bound
 * again. The buffer of init_req now also belongs to the channel, until
 * rcx_bind_free. info (may be NULL) gives the protocol and the circular
 * slots (the info keys of rcx_chan(7)); it is read during the call only. *chan is
 * written on success only; start it with rcx_start, complete it with
 * rcx_test or rcx_wait, free it with rcx_bind_free (not rcx_req_free).
 * The channel holds the group's connections until it is freed: the
 * group may be freed first. A channel whose queue pair's transport gives
 * up is remade, each message arriving once; if that cannot be done within
 * RCX_FT_TIMEOUT_MS its active start completes with RCX_ERR_TRANSPORT at
 * both ends (the peer is told over the group's connection, also after the
 * group was freed); later starts return it too: free it and bind again
 * (rcx_chan(7)).
 * Errors: -EINVAL init_req is not a live persistent send/recv request of
 * a point-to-point group, or is a channel, or ANY_SOURCE/ANY_TAG on a
 * send, or a malformed info value, or the two ends disagree (protocol,
 * slots, stride, bundle size, sender len > receiver len) — then both ends
 * fail; -EBUSY init_req is active; RCX_ERR_PROC_FAILED the peer failed;
 * -ETIMEDOUT (sender) the receiver answered but its connection did not
 * come within RCX_CONNECT_TIMEOUT_MS; -ENOMEM no memory for the channel
 * or its queue pair; negative errno from the device (registration,
 * connection).
 */
RCX_API int rcx_bind(struct rcx_req *init_req, const struct rcx_info *info,
		     struct rcx_req **chan);

/*
 * Nonblocking bind: *chan is usable (startable) once *eph completes
 * without error; until then rcx_start on it returns -EAGAIN. *eph is an
 * ordinary request: test or wait on it. Blocking and nonblocking binds
 * match each other. Errors: as rcx_bind, for what can be checked locally;
 * the rest is reported in eph's status.
 */
RCX_API int rcx_ibind(struct rcx_req *init_req, const struct rcx_info *info,
		      struct rcx_req **chan, struct rcx_req **eph);

/*
 * Bundle: n channels from one handshake over one queue pair; n must be
 * equal at both ends (else -EINVAL at both). Channel i of the sender pairs
 * with channel i of the receiver. The channels share init_req's buffer
 * and take its slots round robin: channel i's k-th start uses slot
 * (i + k * n) mod N, so with N a multiple of n no two channels share a
 * slot (N = n: channel i always uses slot i; with one slot all share it).
 * rcx_startall over channels of one bundle posts one work-request list
 * (one doorbell). With write_imm and stride == len, consecutive channels
 * of a bundle started together by one rcx_startall at the same start
 * count, on slots that do not wrap, travel as one RDMA write; each still
 * completes as its own message at both ends. chans: n entries, written on
 * success.
 * Errors: as rcx_bind; -EINVAL n < 1 or n > 255 or chans NULL.
 */
RCX_API int rcx_mbind(struct rcx_req *init_req, int n,
		      const struct rcx_info *info, struct rcx_req **chans);
RCX_API int rcx_imbind(struct rcx_req *init_req, int n,
		       const struct rcx_info *info, struct rcx_req **chans,
		       struct rcx_req **eph);

/*
 * Rebind (MPI_Rebind): give a channel a new buffer, peer or protocol.
 * The channel takes a new buffer, length, peer, tag and protocol
 * (enum rcx_chan_protocol), matched like a bind on the same group it was
 * bound on (both ends rebind). The handle stays the same. Rebinding a
 * channel of a bundle takes it out of the bundle. Implemented as a free of
 * the old binding (loosely collective with the old peer) and a new bind.
 * rcx_irebind returns at once: *eph completes when the old peer has freed
 * its end and the new bind is made (with the bind's error, or -ETIMEDOUT
 * when the old peer never freed); the channel must not be started before.
 * The group may be freed once rcx_irebind has returned.
 * Errors: -EINVAL not a channel, group freed, or as rcx_bind; -EBUSY the
 * channel is active; others as rcx_bind.
 */
RCX_API int rcx_rebind(struct rcx_req *chan, void *buf, size_t len, int peer,
		       int tag, int protocol, const struct rcx_info *info);
RCX_API int rcx_irebind(struct rcx_req *chan, void *buf, size_t len, int peer,
			int tag, int protocol, const struct rcx_info *info,
			struct rcx_req **eph);
/*
 * Rebind n channels (any subset of a bundle) into one new bundle.
 * Errors: as rcx_rebind; -EINVAL a channel given twice (nothing changed).
 */
RCX_API int rcx_mrebind(int n, struct rcx_req **chans, void *buf, size_t len,
			int peer, int tag, int protocol,
			const struct rcx_info *info);

/*
 * Free n channels (any groups, any peers). Loosely collective between the
 * two ends of each channel only: returns when the peer has freed its end
 * too (or is known to have failed). The handles are set to NULL.
 * rcx_ibind_free returns at once (handles set to NULL); *eph completes when
 * every peer has freed its end (-ETIMEDOUT after 30 s without).
 * Errors: -EINVAL a handle is not a channel, or a channel is given twice
 * (nothing freed); -EBUSY a channel is active (nothing freed).
 */
RCX_API int rcx_bind_free(struct rcx_req **chans, int n);
RCX_API int rcx_ibind_free(struct rcx_req **chans, int n, struct rcx_req **eph);

#ifdef __cplusplus
}
#endif

#endif
