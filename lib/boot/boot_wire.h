/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_BOOT_WIRE_H
#define RCX_BOOT_WIRE_H

/*
 * Bootstrap wire protocol between rank clients and the gather server (the
 * rcx-run launcher, or rank 0 of the env backend), and the internal
 * interfaces the bootstrap backends share.
 *
 * A frame is a fixed 24-byte header, big-endian:
 *   magic u32 | version u16 | type u16 | rank u32 | round u32 |
 *   status u32 | len u32
 * followed by len bytes of payload.
 *
 *   HELLO       rank -> server: joins; payload jobid u64, size u32. The
 *               server answers with a HELLO carrying its own jobid and size.
 *               A jobid of 0 from a rank means "not known": any is taken.
 *   GATHER      rank -> server: the rank's contribution to round `round`.
 *               status TOOBIG (no payload): its data could not be sent.
 *   GATHER_ALL  server -> rank: every contribution of round `round` in rank
 *               order, or a non-OK status and no payload.
 *   FAILED      server -> rank: rank `rank` failed.
 *   DECLARE     rank -> server: the sender declared rank `rank` failed
 *               (cut off by the transport for RCX_FT_TIMEOUT_MS, no sign
 *               of death): the server fails it as after a death (FAILED to
 *               every other rank, its connection dropped) and the launcher
 *               kills it, so that it cannot go on as a zombie.
 *   ABORT       either way: the sender drops the connection; status says
 *               why, OK when the server closes normally (env rank 0 done).
 */
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/boot/boot.h"

#define RCX__BOOT_MAGIC	      0x52435842u /* "RCXB" */
#define RCX__BOOT_VERSION     1
#define RCX__BOOT_HDR_LEN     24
#define RCX__BOOT_MAX_PAYLOAD (64u << 20)
#define RCX__BOOT_MAX_SIZE    65536
#define RCX__BOOT_HELLO_LEN   12
/* default for RCX_BOOT_TIMEOUT_MS: connecting and joining */
#define RCX__BOOT_TIMEOUT_MS 30000

enum rcx__boot_type {
	RCX__BOOT_HELLO = 1,
	RCX__BOOT_GATHER = 2,
	RCX__BOOT_GATHER_ALL = 3,
	RCX__BOOT_FAILED = 4,
	RCX__BOOT_ABORT = 5,
	RCX__BOOT_DECLARE = 6,
};

enum rcx__boot_status {
	RCX__BOOT_OK = 0,
	RCX__BOOT_MISMATCH = 1, /* ranks gave different lengths */
	RCX__BOOT_PROC_FAILED = 2,
	RCX__BOOT_TOOBIG = 3,	/* size * len over RCX__BOOT_MAX_PAYLOAD */
	RCX__BOOT_REJECTED = 4, /* HELLO refused: jobid, size or rank */
	RCX__BOOT_PROTOCOL = 5, /* the peer broke the protocol */
	RCX__BOOT_STATUS_MAX = RCX__BOOT_PROTOCOL,
};

struct rcx__boot_frame {
	uint16_t type;
	uint32_t rank;
	uint32_t round;
	uint32_t status;
	uint32_t len;
	const void *payload; /* len bytes, inside the parsed buffer */
};

/*
 * Parse exactly one frame filling buf: header checks (magic, version, known
 * type and status, rank below RCX__BOOT_MAX_SIZE, len at most
 * RCX__BOOT_MAX_PAYLOAD), len == buf size minus the header, and per-type
 * payload rules. 0, or -EPROTO for anything malformed. Reads only buf.
 */
int rcx__boot_frame_parse(const void *buf, size_t len,
			  struct rcx__boot_frame *out);
/* Write f's header (f->len included) into hdr. */
void rcx__boot_hdr_encode(const struct rcx__boot_frame *f,
			  uint8_t hdr[RCX__BOOT_HDR_LEN]);
/* Map a non-OK wire status to the error a caller sees. */
int rcx__boot_status_err(uint32_t status);

/*
 * Send one whole frame on a non-blocking stream socket within timeout_ms
 * (< 0: no limit). 0, -ETIMEDOUT, or -errno (-EPIPE when the peer is gone;
 * never SIGPIPE). After an error the stream is unusable.
 */
int rcx__boot_send(int fd, const struct rcx__boot_frame *f, int timeout_ms);

/* Receive side: a growable buffer assembling frames from a stream. */
struct rcx__boot_rx {
	uint8_t *buf;
	size_t have; /* bytes buffered */
	size_t used; /* bytes of the frame last returned, dropped next call */
	size_t cap;
	int eof;
};

void rcx__boot_rx_init(struct rcx__boot_rx *rx);
void rcx__boot_rx_free(struct rcx__boot_rx *rx);
/*
 * Next frame, reading only what fd has ready (never blocks). 1 and *f
 * (valid until the next call), 0 when no whole frame is there yet,
 * -ECONNRESET once the peer closed and every frame was taken, -EPROTO,
 * -ENOMEM or -errno.
 */
int rcx__boot_rx_next(int fd, struct rcx__boot_rx *rx,
		      struct rcx__boot_frame *f);
/* Same, waiting up to timeout_ms (< 0: no limit); -ETIMEDOUT. */
int rcx__boot_recv(int fd, struct rcx__boot_rx *rx, struct rcx__boot_frame *f,
		   int timeout_ms);

/* Small shared helpers. */
long long rcx__boot_now_ms(void);
/* ms left until deadline (a rcx__boot_now_ms() value), >= 0; -1 if none */
int rcx__boot_left_ms(long long deadline);
/* Poll one fd for events within timeout_ms; EINTR-safe. 1, 0, -errno. */
int rcx__boot_poll1(int fd, short events, int timeout_ms);
int rcx__boot_set_nonblock(int fd);
/* RCX_BOOT_TIMEOUT_MS, or the default */
int rcx__boot_timeout_ms(void);
/* Parse env var name as an integer in [min, max]: 0, -ENOENT, -EPROTO. */
int rcx__boot_env_int(const char *name, long min, long max, long *out);
/* RCX_JOBID (hex): 0 and *out, 0 and 0 when unset, -EPROTO. */
int rcx__boot_env_jobid(uint64_t *out);
/* A random nonzero 64-bit job id. */
uint64_t rcx__boot_random_jobid(void);

/*
 * The gather server (see boot_server.c for its failure rules). Once open it
 * owns the listening socket lfd (made non-blocking; the caller's on error)
 * and every rank connection, all watched by one epoll fd. self: the rank
 * living in this process, which takes part through srv_self_gather (env
 * backend rank 0), or -1 (the launcher). 0, -EINVAL, -ENOMEM, -errno.
 */
struct rcx__boot_srv;

int rcx__boot_srv_open(int lfd, int size, uint64_t jobid, int self,
		       struct rcx__boot_srv **out);
/* Tells connected ranks it closes normally (ABORT, status OK). */
void rcx__boot_srv_close(struct rcx__boot_srv *s);
/* Readable when the server has work: poll it, then call srv_run. */
int rcx__boot_srv_fd(const struct rcx__boot_srv *s);
/* Handle events for up to timeout_ms (0: only what is ready). 0 or -errno. */
int rcx__boot_srv_run(struct rcx__boot_srv *s, int timeout_ms);
/* Ranks that joined (HELLO accepted), self included. */
int rcx__boot_srv_joined(const struct rcx__boot_srv *s);
/*
 * The launcher saw rank exit: abnormal (non-zero status, signal) makes it
 * failed; a clean exit is a departure (failed only if others wait on it).
 */
void rcx__boot_srv_rank_gone(struct rcx__boot_srv *s, int rank, int abnormal);
/*
 * self's part of the next round; blocks driving the server until done.
 * 0, -EPROTO (lengths differ), -EMSGSIZE, RCX_ERR_PROC_FAILED, -errno.
 */
int rcx__boot_srv_self_gather(struct rcx__boot_srv *s, const void *in,
			      size_t len, void *out);
/* self's failure notices: 1 and *rank, or 0 */
int rcx__boot_srv_self_failed(struct rcx__boot_srv *s, int *rank);
/* self declares rank failed (DECLARE from the in-process rank). */
void rcx__boot_srv_self_declare(struct rcx__boot_srv *s, int rank);
/*
 * Ranks declared failed by another (DECLARE), for the launcher to kill:
 * 1, *rank and *by (who declared it), each rank once; 0 when none is left.
 */
int rcx__boot_srv_declared(struct rcx__boot_srv *s, int *rank, int *by);

/*
 * Socket client shared by the local and env backends: joins over the
 * connected fd (HELLO answered within timeout_ms) and owns fd from then on,
 * also on error. env: the "env" backend, where the connection is to rank 0
 * and losing it means rank 0 failed; otherwise "local", where it means the
 * launcher is gone.
 */
int rcx__boot_client_open(int fd, int rank, int size, uint64_t jobid, int env,
			  int timeout_ms, struct rcx__boot **out);

/* Backends, chosen by rcx__boot_open. */
int rcx__boot_local_open(struct rcx__boot **out);
int rcx__boot_env_open(struct rcx__boot **out);

#endif
