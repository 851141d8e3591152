/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Bootstrap: the frame parser and stream, the gather server against raw
 * clients, backend choice and singleton, and whole jobs through rcx-run
 * (gather rounds, exit status, failure notices with --keep-going,
 * --timeout, signal forwarding) and through the env backend over TCP on
 * 127.0.0.1. The peer "boot MODE [ARG]" is one rank of such a job.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <rcx/errors.h>
#include "lib/boot/boot_wire.h"
#include "tu.h"
#include "tu_proc.h"

#ifndef RCX_RUN_PATH
#define RCX_RUN_PATH "rcx-run"
#endif

#define JOB_MS 30000

static char self_exe[PATH_MAX];

/* --- frames --- */

static size_t frame_build(uint8_t *buf, uint16_t type, uint32_t rank,
			  uint32_t round, uint32_t status, const void *pl,
			  uint32_t len)
{
	struct rcx__boot_frame f = {
		.type = type,
		.rank = rank,
		.round = round,
		.status = status,
		.len = len,
	};

	rcx__boot_hdr_encode(&f, buf);
	if (len)
		memcpy(buf + RCX__BOOT_HDR_LEN, pl, len);
	return RCX__BOOT_HDR_LEN + len;
}

static size_t hello_build(uint8_t *buf, uint32_t rank, uint64_t jobid,
			  uint32_t size)
{
	uint8_t pl[RCX__BOOT_HELLO_LEN];
	int i;

	for (i = 0; i < 8; i++)
		pl[i] = (uint8_t)(jobid >> (56 - 8 * i));
	for (i = 0; i < 4; i++)
		pl[8 + i] = (uint8_t)(size >> (24 - 8 * i));
	return frame_build(buf, RCX__BOOT_HELLO, rank, 0, 0, pl, sizeof(pl));
}

static void test_frame_valid(void)
{
	uint8_t buf[128];
	struct rcx__boot_frame f;
	size_t n;

	n = frame_build(buf, RCX__BOOT_GATHER, 3, 7, 0, "hello", 5);
	CU_ASSERT_EQUAL_FATAL(rcx__boot_frame_parse(buf, n, &f), 0);
	CU_ASSERT_EQUAL(f.type, RCX__BOOT_GATHER);
	CU_ASSERT_EQUAL(f.rank, 3);
	CU_ASSERT_EQUAL(f.round, 7);
	CU_ASSERT_EQUAL(f.status, 0);
	CU_ASSERT_EQUAL(f.len, 5);
	CU_ASSERT_PTR_EQUAL(f.payload, buf + RCX__BOOT_HDR_LEN);
	CU_ASSERT_EQUAL(memcmp(f.payload, "hello", 5), 0);

	n = hello_build(buf, 5, 0x1122334455667788ull, 6);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), 0);
	CU_ASSERT_EQUAL(f.type, RCX__BOOT_HELLO);
	n = frame_build(buf, RCX__BOOT_GATHER_ALL, 0, 1, RCX__BOOT_PROC_FAILED,
			NULL, 0);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), 0);
	CU_ASSERT_EQUAL(f.status, RCX__BOOT_PROC_FAILED);
	n = frame_build(buf, RCX__BOOT_FAILED, 9, 0, 0, NULL, 0);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), 0);
	CU_ASSERT_EQUAL(f.rank, 9);
	n = frame_build(buf, RCX__BOOT_ABORT, 0, 0, RCX__BOOT_REJECTED, NULL,
			0);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), 0);
	n = frame_build(buf, RCX__BOOT_GATHER, 0, 0, RCX__BOOT_TOOBIG, NULL, 0);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), 0);
}

static void test_frame_truncated(void)
{
	uint8_t buf[128];
	struct rcx__boot_frame f = { .type = 99 };
	size_t n, i;

	n = frame_build(buf, RCX__BOOT_GATHER, 1, 0, 0, "abcdefgh", 8);
	for (i = 0; i < n; i++)
		CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, i, &f), -EPROTO);
	/* one stray byte after the frame is no better */
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n + 1, &f), -EPROTO);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(NULL, n, &f), -EPROTO);
	CU_ASSERT_EQUAL(f.type, 99); /* untouched on error */
}

static void test_frame_magic_version(void)
{
	uint8_t buf[64];
	struct rcx__boot_frame f;
	size_t n;
	int i;

	n = frame_build(buf, RCX__BOOT_FAILED, 1, 0, 0, NULL, 0);
	for (i = 0; i < 4; i++) {
		buf[i] ^= 0x20;
		CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), -EPROTO);
		buf[i] ^= 0x20;
	}
	buf[5] = RCX__BOOT_VERSION + 1;
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), -EPROTO);
	buf[5] = 0;
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), -EPROTO);
	buf[5] = RCX__BOOT_VERSION;
	buf[4] = 1; /* version 0x0101 */
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), -EPROTO);
	buf[4] = 0;
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), 0);
}

static void test_frame_oversize(void)
{
	static uint8_t big[RCX__BOOT_HDR_LEN + 64];
	struct rcx__boot_frame f = {
		.type = RCX__BOOT_GATHER,
		.len = RCX__BOOT_MAX_PAYLOAD + 1,
	};

	rcx__boot_hdr_encode(&f, big);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(big, sizeof(big), &f), -EPROTO);
	/* a length that would wrap size_t arithmetic on 32 bits */
	f.len = 0xffffffffu;
	rcx__boot_hdr_encode(&f, big);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(big, sizeof(big), &f), -EPROTO);
	CU_ASSERT_EQUAL(rcx__boot_frame_parse(big, RCX__BOOT_HDR_LEN, &f),
			-EPROTO);
}

static void test_frame_rules(void)
{
	uint8_t buf[128];
	struct rcx__boot_frame f;
	size_t n;

#define BAD(expr)                                                            \
	do {                                                                 \
		n = (expr);                                                  \
		CU_ASSERT_EQUAL(rcx__boot_frame_parse(buf, n, &f), -EPROTO); \
	} while (0)
	BAD(frame_build(buf, 0, 0, 0, 0, NULL, 0));
	BAD(frame_build(buf, RCX__BOOT_DECLARE + 1, 0, 0, 0, NULL, 0));
	BAD(frame_build(buf, RCX__BOOT_DECLARE, 1, 0, 0, "x", 1));
	BAD(frame_build(buf, RCX__BOOT_FAILED, 0, 0, RCX__BOOT_STATUS_MAX + 1,
			NULL, 0));
	BAD(frame_build(buf, RCX__BOOT_FAILED, RCX__BOOT_MAX_SIZE, 0, 0, NULL,
			0));
	BAD(frame_build(buf, RCX__BOOT_FAILED, 1, 0, 0, "x", 1));
	BAD(frame_build(buf, RCX__BOOT_ABORT, 1, 0, 0, "x", 1));
	BAD(frame_build(buf, RCX__BOOT_GATHER_ALL, 0, 0, RCX__BOOT_MISMATCH,
			"x", 1));
	BAD(frame_build(buf, RCX__BOOT_GATHER, 0, 0, RCX__BOOT_MISMATCH, NULL,
			0));
	BAD(frame_build(buf, RCX__BOOT_GATHER, 0, 0, RCX__BOOT_TOOBIG, "x", 1));
	BAD(frame_build(buf, RCX__BOOT_HELLO, 0, 0, 0, "short", 5));
	BAD(hello_build(buf, 0, 1, 0)); /* size 0 */
	BAD(hello_build(buf, 4, 1, 4)); /* rank >= size */
	BAD(hello_build(buf, 0, 1, RCX__BOOT_MAX_SIZE + 1));
#undef BAD
}

/* Mutated frames: never a crash, and success only when self-consistent. */
static void test_frame_mutations(void)
{
	uint8_t good[64], buf[64];
	struct rcx__boot_frame f;
	size_t n, len;
	int i, ok = 0;

	srand(1234);
	n = frame_build(good, RCX__BOOT_GATHER, 2, 5, 0, "0123456789", 10);
	for (i = 0; i < 200000; i++) {
		memcpy(buf, good, n);
		buf[rand() % n] ^= (uint8_t)(1u << (rand() % 8));
		if (rand() % 4 == 0)
			buf[rand() % n] = (uint8_t)rand();
		len = rand() % 8 ? n : (size_t)rand() % sizeof(buf);
		if (!rcx__boot_frame_parse(buf, len, &f)) {
			ok++;
			CU_ASSERT_EQUAL(RCX__BOOT_HDR_LEN + f.len, len);
		}
	}
	CU_ASSERT(ok > 0); /* payload-only flips still parse */
}

static uint8_t big_pl[300000];

static void *send_big(void *arg)
{
	struct rcx__boot_frame g = {
		.type = RCX__BOOT_GATHER,
		.rank = 1,
		.round = 2,
		.len = sizeof(big_pl),
		.payload = big_pl,
	};

	return rcx__boot_send(*(int *)arg, &g, 5000) ? arg : NULL;
}

static void test_stream(void)
{
	pthread_t th;
	void *res;
	uint8_t raw[64];
	struct rcx__boot_frame f = { .type = RCX__BOOT_GATHER, .rank = 1 };
	struct rcx__boot_rx rx;
	size_t i, n;
	int sv[2];

	CU_ASSERT_FATAL(!socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	rcx__boot_set_nonblock(sv[0]);
	rcx__boot_set_nonblock(sv[1]);
	rcx__boot_rx_init(&rx);
	/* byte by byte: nothing until the frame is whole */
	n = frame_build(raw, RCX__BOOT_FAILED, 4, 0, 0, NULL, 0);
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(rcx__boot_rx_next(sv[1], &rx, &f), 0);
		CU_ASSERT_EQUAL(write(sv[0], raw + i, 1), 1);
	}
	CU_ASSERT_EQUAL(rcx__boot_rx_next(sv[1], &rx, &f), 1);
	CU_ASSERT(f.type == RCX__BOOT_FAILED && f.rank == 4);
	/* bigger than the socket buffer: send and receive must interleave */
	for (i = 0; i < sizeof(big_pl); i++)
		big_pl[i] = (uint8_t)(i * 7);
	CU_ASSERT_FATAL(!pthread_create(&th, NULL, send_big, &sv[0]));
	CU_ASSERT_EQUAL(rcx__boot_recv(sv[1], &rx, &f, 5000), 0);
	CU_ASSERT(f.len == sizeof(big_pl) && f.round == 2);
	CU_ASSERT(f.len == sizeof(big_pl) && !memcmp(f.payload, big_pl, f.len));
	pthread_join(th, &res);
	CU_ASSERT_PTR_NULL(res);
	/* then garbage: -EPROTO, and no waiting for the rest of it */
	memset(raw, 0xab, sizeof(raw));
	CU_ASSERT_EQUAL(write(sv[0], raw, sizeof(raw)), (ssize_t)sizeof(raw));
	CU_ASSERT_EQUAL(rcx__boot_recv(sv[1], &rx, &f, 5000), -EPROTO);
	rcx__boot_rx_free(&rx);
	/* a closed peer after a whole frame: the frame, then -ECONNRESET */
	rcx__boot_rx_init(&rx);
	n = frame_build(raw, RCX__BOOT_ABORT, 0, 0, 0, NULL, 0);
	CU_ASSERT_EQUAL(write(sv[0], raw, n), (ssize_t)n);
	close(sv[0]);
	CU_ASSERT_EQUAL(rcx__boot_recv(sv[1], &rx, &f, 5000), 0);
	CU_ASSERT_EQUAL(f.type, RCX__BOOT_ABORT);
	CU_ASSERT_EQUAL(rcx__boot_recv(sv[1], &rx, &f, 5000), -ECONNRESET);
	CU_ASSERT_EQUAL(rcx__boot_send(sv[1], &f, 1000), -EPIPE);
	rcx__boot_rx_free(&rx);
	close(sv[1]);
}

/* --- the server, driven here against raw clients --- */

static struct rcx__boot_srv *srv;

static int srv_start(int size, uint64_t jobid, struct sockaddr_un *sa,
		     socklen_t *sl)
{
	static int seq;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* abstract name: nothing to clean up */
	snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
		 "rcx-boot-test-%d-%d", (int)getpid(), seq++);
	*sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			  strlen(sa->sun_path + 1));
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, *sl) || listen(fd, 8))
		return -errno;
	return rcx__boot_srv_open(fd, size, jobid, -1, &srv);
}

struct raw {
	int fd;
	struct rcx__boot_rx rx;
	struct rcx__boot_frame f; /* the last frame received */
};

static void raw_open(struct raw *c, const struct sockaddr_un *sa, socklen_t sl)
{
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(c->fd >= 0);
	CU_ASSERT_FATAL(!connect(c->fd, (const struct sockaddr *)sa, sl));
	rcx__boot_set_nonblock(c->fd);
	rcx__boot_rx_init(&c->rx);
}

static void raw_close(struct raw *c)
{
	close(c->fd);
	rcx__boot_rx_free(&c->rx);
}

static void raw_write(struct raw *c, const void *buf, size_t n)
{
	CU_ASSERT_EQUAL(write(c->fd, buf, n), (ssize_t)n);
}

static void raw_gather(struct raw *c, uint32_t rank, uint32_t round,
		       const char *data)
{
	uint8_t buf[64];

	raw_write(c, buf,
		  frame_build(buf, RCX__BOOT_GATHER, rank, round, 0, data,
			      (uint32_t)strlen(data)));
}

static void raw_hello(struct raw *c, uint32_t rank, uint64_t jobid,
		      uint32_t size)
{
	uint8_t buf[64];

	raw_write(c, buf, hello_build(buf, rank, jobid, size));
}

/* Let the server run, then the next frame: is it type/rank/status? */
static int raw_is(struct raw *c, uint16_t type, uint32_t rank, uint32_t status)
{
	int i;

	for (i = 0; i < 20; i++)
		rcx__boot_srv_run(srv, 2);
	if (rcx__boot_recv(c->fd, &c->rx, &c->f, 2000))
		return 0;
	return c->f.type == type && c->f.rank == rank && c->f.status == status;
}

static int raw_nothing(struct raw *c)
{
	int i;

	for (i = 0; i < 20; i++)
		rcx__boot_srv_run(srv, 2);
	return rcx__boot_rx_next(c->fd, &c->rx, &c->f) == 0;
}

static void test_server_join_rounds(void)
{
	struct sockaddr_un sa;
	struct raw c[3], bad;
	socklen_t sl;
	int r;

	CU_ASSERT_EQUAL_FATAL(srv_start(3, 0x77, &sa, &sl), 0);
	/* garbage, a wrong size, a wrong job: turned away */
	raw_open(&bad, &sa, sl);
	raw_write(&bad, "not a frame at all, clearly", 27);
	CU_ASSERT(raw_is(&bad, RCX__BOOT_ABORT, 0, RCX__BOOT_PROTOCOL));
	CU_ASSERT_EQUAL(rcx__boot_recv(bad.fd, &bad.rx, &bad.f, 2000),
			-ECONNRESET);
	raw_close(&bad);
	raw_open(&bad, &sa, sl);
	raw_hello(&bad, 0, 0x77, 4);
	CU_ASSERT(raw_is(&bad, RCX__BOOT_ABORT, 0, RCX__BOOT_REJECTED));
	raw_close(&bad);
	raw_open(&bad, &sa, sl);
	raw_hello(&bad, 0, 0x78, 3);
	CU_ASSERT(raw_is(&bad, RCX__BOOT_ABORT, 0, RCX__BOOT_REJECTED));
	raw_close(&bad);
	/* jobid 0: "not known", answered with the job's */
	for (r = 0; r < 3; r++) {
		raw_open(&c[r], &sa, sl);
		raw_hello(&c[r], r, r ? 0x77 : 0, 3);
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_HELLO, r, 0));
		CU_ASSERT(!memcmp(c[r].f.payload, "\0\0\0\0\0\0\0\x77", 8));
	}
	CU_ASSERT_EQUAL(rcx__boot_srv_joined(srv), 3);
	raw_open(&bad, &sa, sl);
	raw_hello(&bad, 1, 0x77, 3);
	CU_ASSERT(raw_is(&bad, RCX__BOOT_ABORT, 1, RCX__BOOT_REJECTED));
	raw_close(&bad);
	/* a round: every rank gets all data in rank order */
	raw_gather(&c[2], 2, 0, "cc");
	raw_gather(&c[0], 0, 0, "aa");
	CU_ASSERT(raw_nothing(&c[0]));
	raw_gather(&c[1], 1, 0, "bb");
	for (r = 0; r < 3; r++) {
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_GATHER_ALL, 0, 0));
		CU_ASSERT(c[r].f.round == 0 && c[r].f.len == 6 &&
			  !memcmp(c[r].f.payload, "aabbcc", 6));
	}
	/* lengths differ: an error for all, the round is over */
	raw_gather(&c[0], 0, 1, "a");
	raw_gather(&c[1], 1, 1, "bb");
	raw_gather(&c[2], 2, 1, "c");
	for (r = 0; r < 3; r++)
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_GATHER_ALL, 0,
				 RCX__BOOT_MISMATCH));
	/* a wrong round fails its sender; the others hear of it */
	raw_gather(&c[0], 0, 7, "a");
	CU_ASSERT(raw_is(&c[0], RCX__BOOT_ABORT, 0, RCX__BOOT_PROTOCOL));
	for (r = 1; r < 3; r++)
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_FAILED, 0, 0));
	/* from then on no round completes */
	raw_gather(&c[1], 1, 2, "b");
	CU_ASSERT(
		raw_is(&c[1], RCX__BOOT_GATHER_ALL, 0, RCX__BOOT_PROC_FAILED));
	rcx__boot_srv_rank_gone(srv, 2, 1);
	CU_ASSERT(raw_is(&c[1], RCX__BOOT_FAILED, 2, 0));
	CU_ASSERT(raw_nothing(&c[1]));
	rcx__boot_srv_close(srv);
	for (r = 0; r < 3; r++)
		raw_close(&c[r]);
}

static void test_server_departures(void)
{
	struct sockaddr_un sa;
	struct raw c[3];
	socklen_t sl;
	int r;

	/* the launcher saw rank 2 die before it joined */
	CU_ASSERT_EQUAL_FATAL(srv_start(3, 5, &sa, &sl), 0);
	rcx__boot_srv_rank_gone(srv, 2, 1);
	for (r = 0; r < 3; r++) {
		raw_open(&c[r], &sa, sl);
		raw_hello(&c[r], r, 5, 3);
	}
	CU_ASSERT(raw_is(&c[2], RCX__BOOT_ABORT, 2, RCX__BOOT_REJECTED));
	for (r = 0; r < 2; r++) {
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_HELLO, r, 0));
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_FAILED, 2, 0));
	}
	for (r = 0; r < 3; r++)
		raw_close(&c[r]);
	rcx__boot_srv_close(srv);

	/* gone while another waits on it: failed, the round ends */
	CU_ASSERT_EQUAL_FATAL(srv_start(2, 5, &sa, &sl), 0);
	for (r = 0; r < 2; r++) {
		raw_open(&c[r], &sa, sl);
		raw_hello(&c[r], r, 5, 2);
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_HELLO, r, 0));
	}
	raw_gather(&c[0], 0, 0, "x");
	CU_ASSERT(raw_nothing(&c[0]));
	raw_close(&c[1]);
	CU_ASSERT(raw_is(&c[0], RCX__BOOT_FAILED, 1, 0));
	CU_ASSERT(
		raw_is(&c[0], RCX__BOOT_GATHER_ALL, 0, RCX__BOOT_PROC_FAILED));
	raw_close(&c[0]);
	rcx__boot_srv_close(srv);

	/* gone while idle: left; failed once a round needs it */
	CU_ASSERT_EQUAL_FATAL(srv_start(2, 5, &sa, &sl), 0);
	for (r = 0; r < 2; r++) {
		raw_open(&c[r], &sa, sl);
		raw_hello(&c[r], r, 5, 2);
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_HELLO, r, 0));
	}
	raw_close(&c[1]);
	CU_ASSERT(raw_nothing(&c[0]));
	rcx__boot_srv_rank_gone(srv, 1, 0); /* exit status 0 */
	CU_ASSERT(raw_nothing(&c[0]));
	raw_gather(&c[0], 0, 0, "x");
	CU_ASSERT(raw_is(&c[0], RCX__BOOT_FAILED, 1, 0));
	CU_ASSERT(
		raw_is(&c[0], RCX__BOOT_GATHER_ALL, 0, RCX__BOOT_PROC_FAILED));
	/* closing the server says so: a clean end, not a crash */
	rcx__boot_srv_close(srv);
	CU_ASSERT_EQUAL(rcx__boot_recv(c[0].fd, &c[0].rx, &c[0].f, 2000), 0);
	CU_ASSERT(c[0].f.type == RCX__BOOT_ABORT &&
		  c[0].f.status == RCX__BOOT_OK);
	raw_close(&c[0]);
}

/*
 * A rank declares another failed (cut off past RCX_FT_TIMEOUT_MS): the
 * others hear FAILED as after a death, the declared one is dropped, and
 * the launcher learns whom to kill, once. A rank declaring itself breaks
 * the protocol.
 */
static void test_server_declare(void)
{
	struct sockaddr_un sa;
	struct raw c[3];
	uint8_t buf[64];
	socklen_t sl;
	int r, rank = -1, by = -1;

	CU_ASSERT_EQUAL_FATAL(srv_start(3, 9, &sa, &sl), 0);
	for (r = 0; r < 3; r++) {
		raw_open(&c[r], &sa, sl);
		raw_hello(&c[r], r, 9, 3);
		CU_ASSERT(raw_is(&c[r], RCX__BOOT_HELLO, r, 0));
	}
	CU_ASSERT_EQUAL(rcx__boot_srv_declared(srv, &rank, &by), 0);
	raw_write(&c[0], buf,
		  frame_build(buf, RCX__BOOT_DECLARE, 2, 0, 0, NULL, 0));
	CU_ASSERT(raw_is(&c[0], RCX__BOOT_FAILED, 2, 0));
	CU_ASSERT(raw_is(&c[1], RCX__BOOT_FAILED, 2, 0));
	CU_ASSERT_EQUAL(rcx__boot_recv(c[2].fd, &c[2].rx, &c[2].f, 2000),
			-ECONNRESET);
	CU_ASSERT_EQUAL(rcx__boot_srv_declared(srv, &rank, &by), 1);
	CU_ASSERT(rank == 2 && by == 0);
	/* once, and not again when another declares it too */
	raw_write(&c[1], buf,
		  frame_build(buf, RCX__BOOT_DECLARE, 2, 0, 0, NULL, 0));
	CU_ASSERT(raw_nothing(&c[1]));
	CU_ASSERT_EQUAL(rcx__boot_srv_declared(srv, &rank, &by), 0);
	/* the launcher's exit report of it changes nothing more */
	rcx__boot_srv_rank_gone(srv, 2, 1);
	CU_ASSERT(raw_nothing(&c[0]));
	/* declaring oneself is not the protocol */
	raw_write(&c[1], buf,
		  frame_build(buf, RCX__BOOT_DECLARE, 1, 0, 0, NULL, 0));
	CU_ASSERT(raw_is(&c[1], RCX__BOOT_ABORT, 1, RCX__BOOT_PROTOCOL));
	CU_ASSERT(raw_is(&c[0], RCX__BOOT_FAILED, 1, 0));
	CU_ASSERT_EQUAL(rcx__boot_srv_declared(srv, &rank, &by), 0);
	rcx__boot_srv_close(srv);
	for (r = 0; r < 3; r++)
		raw_close(&c[r]);
}

/* --- backend choice and singleton --- */

static const char *const boot_vars[] = {
	"RCX_BOOTSTRAP",
	"RCX_RUN_SOCK",
	"RCX_RANK",
	"RCX_SIZE",
	"RCX_ROOT",
	"RCX_JOBID",
	"RCX_BOOT_TIMEOUT_MS",
	"PMIX_RANK",
	"PMIX_NAMESPACE",
	"SLURM_STEP_NUM_TASKS",
	"SLURM_PROCID",
	NULL,
};

static void clear_boot_env(void)
{
	int i;

	for (i = 0; boot_vars[i]; i++)
		unsetenv(boot_vars[i]);
}

static void test_singleton(void)
{
	struct rcx__boot *b = NULL;
	char in[16] = "fifteen bytes..", out[16] = { 0 };
	int rank = -1;

	clear_boot_env();
	CU_ASSERT_EQUAL_FATAL(rcx__boot_open(NULL, &b), 0);
	CU_ASSERT_STRING_EQUAL(b->ops->name, "singleton");
	CU_ASSERT(b->rank == 0 && b->size == 1 && b->jobid != 0);
	CU_ASSERT_EQUAL(b->ops->allgather(b, in, sizeof(in), out), 0);
	CU_ASSERT_EQUAL(memcmp(in, out, sizeof(in)), 0);
	CU_ASSERT_EQUAL(b->ops->allgather(b, NULL, 4, out), -EINVAL);
	CU_ASSERT_EQUAL(b->ops->barrier(b), 0);
	CU_ASSERT_EQUAL(b->ops->event_fd(b), -1);
	CU_ASSERT_EQUAL(b->ops->poll_failed(b, &rank), 0);
	CU_ASSERT_EQUAL(rank, -1);
	rcx__boot_close(b);

	setenv("RCX_JOBID", "00000000deadbeef", 1);
	CU_ASSERT_EQUAL_FATAL(rcx__boot_open("singleton", &b), 0);
	CU_ASSERT_EQUAL(b->jobid, 0xdeadbeefull);
	rcx__boot_close(b);
	setenv("RCX_JOBID", "xyz", 1);
	CU_ASSERT_EQUAL(rcx__boot_open("singleton", &b), -EPROTO);
	clear_boot_env();
}

static void test_choice(void)
{
	struct rcx__boot *b = NULL;

	clear_boot_env();
#ifdef RCX_HAVE_PMIX
	/* built in, but no PMIx server launched us */
	CU_ASSERT_EQUAL(rcx__boot_open("pmix", &b), -ECONNREFUSED);
#else
	CU_ASSERT_EQUAL(rcx__boot_open("pmix", &b), -EOPNOTSUPP);
#endif
	CU_ASSERT_EQUAL(rcx__boot_open("bogus", &b), -EINVAL);
	setenv("RCX_BOOTSTRAP", "pmix", 1);
#ifdef RCX_HAVE_PMIX
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -ECONNREFUSED);
#else
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -EOPNOTSUPP);
#endif
	/* RCX_BOOTSTRAP wins over what the environment shows */
	setenv("RCX_BOOTSTRAP", "singleton", 1);
	setenv("RCX_RUN_SOCK", "/nonexistent/sock", 1);
	CU_ASSERT_EQUAL_FATAL(rcx__boot_open(NULL, &b), 0);
	CU_ASSERT_STRING_EQUAL(b->ops->name, "singleton");
	rcx__boot_close(b);
	/* automatic: RCX_RUN_SOCK means local, which needs rank and size */
	unsetenv("RCX_BOOTSTRAP");
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -EPROTO);
	setenv("RCX_RANK", "0", 1);
	setenv("RCX_SIZE", "2", 1);
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -ECONNREFUSED);
	setenv("RCX_RANK", "2", 1);
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -EPROTO);
	/* then env, when rank, size and root are all there */
	unsetenv("RCX_RUN_SOCK");
	setenv("RCX_RANK", "1", 1);
	setenv("RCX_ROOT", "no-port-here", 1);
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -EPROTO);
	setenv("RCX_ROOT", "127.0.0.1:99999", 1);
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -EPROTO);
	setenv("RCX_BOOT_TIMEOUT_MS", "300", 1);
	setenv("RCX_ROOT", "127.0.0.1:1", 1);
	CU_ASSERT(rcx__boot_open(NULL, &b) < 0); /* nobody at the root */
	clear_boot_env();
}

/* The automatic choice is the singleton backend. */
static void expect_singleton(void)
{
	struct rcx__boot *b = NULL;

	CU_ASSERT_EQUAL_FATAL(rcx__boot_open(NULL, &b), 0);
	CU_ASSERT_STRING_EQUAL(b->ops->name, "singleton");
	rcx__boot_close(b);
}

/* A task of a multi-task srun step with no bootstrap of its own. */
static void test_choice_slurm(void)
{
	struct rcx__boot *b = NULL;

	clear_boot_env();
	/* srun --mpi=none -n 4: not four singletons, an error */
	setenv("SLURM_STEP_NUM_TASKS", "4", 1);
	setenv("SLURM_PROCID", "2", 1);
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -EPROTO);
	/* a step of one task, or a batch script (no step size): singleton */
	setenv("SLURM_STEP_NUM_TASKS", "1", 1);
	expect_singleton();
	unsetenv("SLURM_STEP_NUM_TASKS");
	expect_singleton();
	/* asked for by name, a singleton is what the user wants */
	setenv("SLURM_STEP_NUM_TASKS", "4", 1);
	setenv("RCX_BOOTSTRAP", "singleton", 1);
	expect_singleton();
	unsetenv("RCX_BOOTSTRAP");
	/* srun --mpi=pmix: the pmix backend is chosen (no server here) */
	setenv("PMIX_RANK", "2", 1);
	setenv("PMIX_NAMESPACE", "slurm.pmix.1.0", 1);
#ifdef RCX_HAVE_PMIX
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -ECONNREFUSED);
#else
	CU_ASSERT_EQUAL(rcx__boot_open(NULL, &b), -EOPNOTSUPP);
#endif
	clear_boot_env();
}

/*
 * The node key: RCX_NODE, then the launcher's node name (srun's, then a
 * PMIx launcher's), then the host name; each followed by the same kernel
 * identity, so two launcher names on one kernel are two nodes and one
 * name is one node.
 */
static void test_node_key(void)
{
	static const char *const vars[] = { "RCX_NODE", "SLURMD_NODENAME",
					    "PMIX_HOSTNAME" };
	char a[320], b[320], host[256] = "", small[8];
	const char *from = NULL;
	size_t i;

	for (i = 0; i < 3; i++)
		unsetenv(vars[i]);
	gethostname(host, sizeof(host) - 1);
	CU_ASSERT_EQUAL_FATAL(rcx__boot_node(a, sizeof(a), &from), 0);
	CU_ASSERT_STRING_EQUAL(from, "host name");
	CU_ASSERT_EQUAL(strncmp(a, host, strlen(host)), 0);
	CU_ASSERT_EQUAL(a[strlen(host)], ':');
	/* each source in turn, the higher ones winning */
	setenv("PMIX_HOSTNAME", "pmixnode", 1);
	CU_ASSERT_EQUAL(rcx__boot_node(b, sizeof(b), &from), 0);
	CU_ASSERT_STRING_EQUAL(from, "PMIX_HOSTNAME");
	CU_ASSERT_EQUAL(strncmp(b, "pmixnode:", 9), 0);
	/* the same kernel identity follows every name */
	CU_ASSERT_STRING_EQUAL(strchr(a, ':'), strchr(b, ':'));
	setenv("SLURMD_NODENAME", "n1", 1);
	CU_ASSERT_EQUAL(rcx__boot_node(b, sizeof(b), &from), 0);
	CU_ASSERT_STRING_EQUAL(from, "SLURMD_NODENAME");
	CU_ASSERT_EQUAL(strncmp(b, "n1:", 3), 0);
	setenv("SLURMD_NODENAME", "", 1); /* empty: not set */
	CU_ASSERT_EQUAL(rcx__boot_node(b, sizeof(b), &from), 0);
	CU_ASSERT_STRING_EQUAL(from, "PMIX_HOSTNAME");
	setenv("RCX_NODE", "sim/1", 1);
	CU_ASSERT_EQUAL(rcx__boot_node(b, sizeof(b), NULL), 0);
	CU_ASSERT_EQUAL(strncmp(b, "sim/1:", 6), 0);
	/* two launcher names on one kernel: two nodes */
	unsetenv("RCX_NODE");
	setenv("SLURMD_NODENAME", "n0", 1);
	CU_ASSERT_EQUAL(rcx__boot_node(a, sizeof(a), NULL), 0);
	setenv("SLURMD_NODENAME", "n1", 1);
	CU_ASSERT_EQUAL(rcx__boot_node(b, sizeof(b), NULL), 0);
	CU_ASSERT_NOT_EQUAL(strcmp(a, b), 0);
	/* bad arguments */
	CU_ASSERT_EQUAL(rcx__boot_node(small, sizeof(small), NULL),
			-ENAMETOOLONG);
	CU_ASSERT_EQUAL(rcx__boot_node(NULL, 8, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx__boot_node(a, 0, NULL), -EINVAL);
	for (i = 0; i < 3; i++)
		unsetenv(vars[i]);
}

/*
 * The ranks on this node: rcx-run's RCX_LOCAL_SIZE first, then Open MPI's
 * and MPICH's; a value that is not a count is passed over; 0 when none
 * says.
 */
static void test_local_size(void)
{
	static const char *const vars[] = { "RCX_LOCAL_SIZE",
					    "OMPI_COMM_WORLD_LOCAL_SIZE",
					    "MPI_LOCALNRANKS" };
	const char *from = NULL;
	size_t i;

	for (i = 0; i < 3; i++)
		unsetenv(vars[i]);
	CU_ASSERT_EQUAL(rcx__boot_local_size(&from), 0);
	setenv("MPI_LOCALNRANKS", "3", 1);
	CU_ASSERT_EQUAL(rcx__boot_local_size(&from), 3);
	CU_ASSERT_STRING_EQUAL(from, "MPI_LOCALNRANKS");
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "5", 1);
	CU_ASSERT_EQUAL(rcx__boot_local_size(&from), 5);
	CU_ASSERT_STRING_EQUAL(from, "OMPI_COMM_WORLD_LOCAL_SIZE");
	setenv("RCX_LOCAL_SIZE", "7", 1);
	CU_ASSERT_EQUAL(rcx__boot_local_size(NULL), 7);
	/* not a count: the next one's word */
	setenv("RCX_LOCAL_SIZE", "7x", 1);
	CU_ASSERT_EQUAL(rcx__boot_local_size(&from), 5);
	setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "0", 1);
	CU_ASSERT_EQUAL(rcx__boot_local_size(&from), 3);
	for (i = 0; i < 3; i++)
		unsetenv(vars[i]);
}

/* --- processes --- */

/* rcx-run -n n [opts] -- <runner> --peer boot mode: its exit status */
static int run_job(struct tu_job *j, const char *opts, int n, const char *mode,
		   int want)
{
	char nbuf[16], *argv[16];
	char *o = strdup(opts ? opts : ""), *save = NULL, *t;
	int k = 0, ret;

	snprintf(nbuf, sizeof(nbuf), "%d", n);
	argv[k++] = RCX_RUN_PATH;
	argv[k++] = "-n";
	argv[k++] = nbuf;
	for (t = strtok_r(o, " ", &save); t && k < 10;
	     t = strtok_r(NULL, " ", &save))
		argv[k++] = t;
	argv[k++] = "--";
	argv[k++] = self_exe;
	argv[k++] = "--peer";
	argv[k++] = "boot";
	argv[k++] = (char *)mode;
	argv[k] = NULL;
	ret = tu_job_start(j, argv);
	free(o);
	if (ret)
		return ret;
	return tu_job_finish(j, JOB_MS, want);
}

static int suite_init(void)
{
	snprintf(self_exe, sizeof(self_exe), "%s", tu_self_exe());
	clear_boot_env();
	if (access(RCX_RUN_PATH, X_OK)) {
		fprintf(stderr, "rcx-run not found at %s\n", RCX_RUN_PATH);
		return -1;
	}
	return 0;
}

/* --- jobs through rcx-run --- */

static void test_run_gather(void)
{
	struct tu_job j;

	CU_ASSERT_EQUAL(run_job(&j, NULL, 4, "gather", 0), 0);
	CU_ASSERT_EQUAL(tu_count(j.out, "gather ok"), 4);
	CU_ASSERT_PTR_NULL(strstr(j.out, "rcx-run:"));
}

static void test_run_mismatch(void)
{
	struct tu_job j;

	CU_ASSERT_EQUAL(run_job(&j, NULL, 3, "mismatch", 0), 0);
	CU_ASSERT_EQUAL(tu_count(j.out, "mismatch ok"), 3);
}

static void test_run_jobid(void)
{
	struct tu_job j;

	CU_ASSERT_EQUAL(run_job(&j, NULL, 2, "badjob", 0), 0);
	CU_ASSERT_EQUAL(tu_count(j.out, "badjob ok"), 2);
}

/* Rank 1 exits 3: rcx-run exits 3 at once, the others (asleep) killed. */
static void test_run_exit_status(void)
{
	struct tu_job j;

	CU_ASSERT_EQUAL(run_job(&j, NULL, 3, "exit3", 3), 3);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(j.out, "rcx-run: rank 1 exited with status 3\n"));
	CU_ASSERT_EQUAL(tu_count(j.out, "rcx-run: rank"), 1);
	CU_ASSERT(tu_now_ms() - j.start < 10000);
}

/* A rank SIGKILLed mid-job: every survivor hears of it, within seconds. */
static void test_run_keep_going(void)
{
	struct tu_job j;

	CU_ASSERT_EQUAL(run_job(&j, "--keep-going", 4, "ft", 128 + SIGKILL),
			128 + SIGKILL);
	CU_ASSERT_PTR_NOT_NULL(
		strstr(j.out, "rcx-run: rank 2 killed by signal SIGKILL\n"));
	CU_ASSERT_EQUAL(tu_count(j.out, "ft ok"), 3);
	CU_ASSERT(tu_now_ms() - j.start < 5000);
}

/* Exiting 0 while the others wait in a round fails that round. */
static void test_run_early_exit(void)
{
	struct tu_job j;

	CU_ASSERT_EQUAL(run_job(&j, NULL, 4, "early", 0), 0);
	CU_ASSERT_EQUAL(tu_count(j.out, "early ok"), 3);
	CU_ASSERT_PTR_NULL(strstr(j.out, "rcx-run:"));
}

static void test_run_timeout(void)
{
	struct tu_job j;
	long long ms;

	CU_ASSERT_EQUAL(run_job(&j, "--timeout 1", 2, "sleep", 124), 124);
	ms = tu_now_ms() - j.start;
	CU_ASSERT(ms >= 900 && ms < 5000);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.out, "rcx-run: timeout"));
}

static void test_run_signal(void)
{
	char *argv[] = { RCX_RUN_PATH, "-n",   "2",	"--", self_exe,
			 "--peer",     "boot", "sleep", NULL };
	struct tu_job j;

	CU_ASSERT_EQUAL_FATAL(tu_job_start(&j, argv), 0);
	CU_ASSERT_EQUAL(tu_job_expect(&j, "sleep up", 2, JOB_MS), 2);
	kill(j.pid, SIGTERM);
	CU_ASSERT_EQUAL(tu_job_finish(&j, JOB_MS, 128 + SIGTERM),
			128 + SIGTERM);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.out, "killed by signal SIGTERM"));
}

static void test_run_usage(void)
{
	char *none[] = { RCX_RUN_PATH, NULL };
	char *zero[] = { RCX_RUN_PATH, "-n", "0", "true", NULL };
	char *noexec[] = { RCX_RUN_PATH, "-n", "2", "/nonexistent/prog", NULL };
	char *ok[] = { RCX_RUN_PATH, "-n", "3", "true", NULL };
	struct tu_job j;

	CU_ASSERT_EQUAL_FATAL(tu_job_start(&j, none), 0);
	CU_ASSERT_EQUAL(tu_job_finish(&j, JOB_MS, 125), 125);
	CU_ASSERT_EQUAL_FATAL(tu_job_start(&j, zero), 0);
	CU_ASSERT_EQUAL(tu_job_finish(&j, JOB_MS, 125), 125);
	CU_ASSERT_EQUAL_FATAL(tu_job_start(&j, noexec), 0);
	CU_ASSERT_EQUAL(tu_job_finish(&j, JOB_MS, 127), 127);
	CU_ASSERT_PTR_NOT_NULL(strstr(j.out, "/nonexistent/prog"));
	/* ranks that never use the bootstrap are fine */
	CU_ASSERT_EQUAL_FATAL(tu_job_start(&j, ok), 0);
	CU_ASSERT_EQUAL(tu_job_finish(&j, JOB_MS, 0), 0);
}

/* --- the env backend: three processes over TCP --- */

/* n ranks of mode, highest rank first (the others must wait for 0). */
static void env_job(const char *mode, const char *arg, int n, int victim)
{
	char line[128], want[64];
	char *args[] = { (char *)mode, (char *)arg, NULL };
	pid_t pid[8];
	int fd[8], r;

	CU_ASSERT_FATAL(n <= 8);
	clear_boot_env();
	CU_ASSERT_EQUAL_FATAL(tu_spawn_env_job("boot", args, n, pid, fd), 0);
	clear_boot_env();
	snprintf(want, sizeof(want), "%s ok", mode);
	for (r = 0; r < n; r++) {
		if (r == victim)
			continue;
		line[0] = 0; /* a failed read leaves it as it was */
		CU_ASSERT_EQUAL(tu_read_line(fd[r], line, sizeof(line), JOB_MS),
				0);
		CU_ASSERT_PTR_NOT_NULL(strstr(line, want));
	}
	for (r = 0; r < n; r++) {
		CU_ASSERT_EQUAL(tu_wait_peer(pid[r], JOB_MS),
				r == victim ? 128 + SIGKILL : 0);
		close(fd[r]);
	}
}

static void test_env_gather(void)
{
	env_job("gather", NULL, 3, -1);
}

static void test_env_rank_dies(void)
{
	env_job("ft", "2", 3, 2);
}

static void test_env_root_dies(void)
{
	env_job("ft", "0", 3, 0);
}

/* --- the peer: one rank --- */

static struct rcx__boot *pb;

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "boot peer rank %d: ", pb ? pb->rank : -1);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

#define CHECK(c, ...)                     \
	do {                              \
		if (!(c))                 \
			die(__VA_ARGS__); \
	} while (0)

static uint8_t pattern(int round, int rank, size_t i)
{
	return (uint8_t)(round * 31 + rank * 7 + i * 13);
}

/* Rounds of distinct sizes, each checked for every rank's data. */
static void peer_rounds(struct rcx__boot *b)
{
	static const size_t lens[] = { 1, 100, 70000 };
	uint8_t *in, *out;
	size_t i, len;
	int k, r, ret;

	for (k = 0; k < 3; k++) {
		len = lens[k];
		in = malloc(len);
		out = malloc(len * (size_t)b->size);
		CHECK(in && out, "out of memory");
		for (i = 0; i < len; i++)
			in[i] = pattern(k, b->rank, i);
		if (len >= 8)
			memcpy(in, &b->jobid, 8);
		ret = b->ops->allgather(b, in, len, out);
		CHECK(!ret, "allgather %d: %d", k, ret);
		for (r = 0; r < b->size; r++) {
			const uint8_t *p = out + (size_t)r * len;

			CHECK(len < 8 || !memcmp(p, &b->jobid, 8),
			      "round %d: rank %d has another jobid", k, r);
			for (i = len >= 8 ? 8 : 0; i < len; i++)
				CHECK(p[i] == pattern(k, r, i),
				      "round %d: rank %d byte %zu", k, r, i);
		}
		free(in);
		free(out);
		/* before the last barrier: then env rank 0 may be gone */
		CHECK(!b->ops->poll_failed(b, &r), "poll_failed");
		ret = b->ops->barrier(b);
		CHECK(!ret, "barrier %d: %d", k, ret);
	}
}

/* The next failure notice, waiting on event_fd up to 5 s. */
static int peer_wait_failed(struct rcx__boot *b)
{
	long long end = tu_now_ms() + 5000;
	int ret, rank = -1;

	for (;;) {
		struct pollfd pfd = { .fd = b->ops->event_fd(b),
				      .events = POLLIN };

		ret = b->ops->poll_failed(b, &rank);
		if (ret == 1)
			return rank;
		CHECK(!ret, "poll_failed: %d", ret);
		CHECK(tu_now_ms() < end, "no failure notice");
		poll(&pfd, 1, 100);
	}
}

/* Every survivor: its next collectives fail, and it hears who died. */
static void peer_survive(struct rcx__boot *b, int victim, const char *what)
{
	uint64_t x = 1, all[64];
	long long t0 = tu_now_ms();
	int ret;

	ret = b->ops->allgather(b, &x, sizeof(x), all);
	CHECK(ret == RCX_ERR_PROC_FAILED, "allgather after failure: %d", ret);
	ret = peer_wait_failed(b);
	CHECK(ret == victim, "failure of %d reported, not %d", ret, victim);
	ret = b->ops->barrier(b);
	CHECK(ret == RCX_ERR_PROC_FAILED, "barrier after failure: %d", ret);
	printf("%s ok %d %lld ms\n", what, b->rank, tu_now_ms() - t0);
}

static void peer_mismatch(struct rcx__boot *b)
{
	uint8_t in[8] = { 0 }, out[8 * 64];
	size_t big = RCX__BOOT_MAX_PAYLOAD / (size_t)b->size + 1;
	void *p = calloc(1, big);
	int ret;

	CHECK(p && b->size <= 64, "setup");
	ret = b->ops->allgather(b, in, (size_t)b->rank + 1, out);
	CHECK(ret == -EPROTO, "lengths differ: %d", ret);
	ret = b->ops->allgather(b, p, big, out);
	CHECK(ret == -EMSGSIZE, "too big: %d", ret);
	free(p);
	/* neither error is sticky */
	CHECK(!b->ops->barrier(b), "barrier");
	in[0] = (uint8_t)b->rank;
	CHECK(!b->ops->allgather(b, in, 1, out), "allgather");
	CHECK(out[b->size - 1] == b->size - 1, "allgather data");
	printf("mismatch ok %d\n", b->rank);
}

static int peer_main(int argc, char **argv)
{
	const char *mode = argc > 0 ? argv[0] : "";
	int victim = argc > 1 ? atoi(argv[1]) : 2; /* for "ft" */
	char *jobid = getenv("RCX_JOBID");
	long rank = -1, size = -1;
	int ret;

	rcx__boot_env_int("RCX_RANK", 0, INT_MAX, &rank);
	rcx__boot_env_int("RCX_SIZE", 0, INT_MAX, &size);
	if (!strcmp(mode, "badjob")) {
		/* a HELLO from another job is refused, the slot stays free */
		jobid = strdup(jobid ? jobid : "");
		setenv("RCX_JOBID", "1234", 1);
		ret = rcx__boot_open(NULL, &pb);
		CHECK(ret == -ECONNREFUSED, "wrong jobid accepted: %d", ret);
		setenv("RCX_JOBID", jobid, 1);
		free(jobid);
	}
	ret = rcx__boot_open(NULL, &pb);
	CHECK(!ret, "open: %d", ret);
	CHECK(pb->rank == rank && pb->size == size && pb->jobid,
	      "rank %d size %d", pb->rank, pb->size);
	if (!strcmp(mode, "gather")) {
		peer_rounds(pb);
		CHECK(pb->ops->event_fd(pb) >= 0, "event_fd");
		printf("gather ok %d\n", pb->rank);
	} else if (!strcmp(mode, "mismatch")) {
		peer_mismatch(pb);
	} else if (!strcmp(mode, "badjob")) {
		CHECK(!pb->ops->barrier(pb), "barrier");
		printf("badjob ok %d\n", pb->rank);
	} else if (!strcmp(mode, "exit3") || !strcmp(mode, "sleep")) {
		CHECK(!pb->ops->barrier(pb), "barrier");
		if (!strcmp(mode, "exit3") && pb->rank == 1)
			exit(3);
		printf("%s up %d\n", mode, pb->rank);
		sleep(30);
	} else if (!strcmp(mode, "ft")) {
		/* the victim dies by SIGKILL once everyone is up */
		CHECK(!pb->ops->barrier(pb), "barrier");
		if (pb->rank == victim)
			raise(SIGKILL);
		peer_survive(pb, victim, mode);
	} else if (!strcmp(mode, "early")) {
		/* the last rank exits 0 while the others start a round */
		CHECK(!pb->ops->barrier(pb), "barrier");
		if (pb->rank == pb->size - 1)
			exit(0);
		peer_survive(pb, pb->size - 1, mode);
	} else {
		die("unknown mode %s", mode);
	}
	rcx__boot_close(pb);
	return 0;
}

static const CU_TestInfo tests[] = {
	{ "frame_valid", test_frame_valid },
	{ "frame_truncated", test_frame_truncated },
	{ "frame_magic_version", test_frame_magic_version },
	{ "frame_oversize", test_frame_oversize },
	{ "frame_rules", test_frame_rules },
	{ "frame_mutations", test_frame_mutations },
	{ "stream", test_stream },
	{ "server_join_rounds", test_server_join_rounds },
	{ "server_departures", test_server_departures },
	{ "server_declare", test_server_declare },
	{ "singleton", test_singleton },
	{ "choice", test_choice },
	{ "choice_slurm", test_choice_slurm },
	{ "node_key", test_node_key },
	{ "local_size", test_local_size },
	{ "run_gather", test_run_gather },
	{ "run_mismatch", test_run_mismatch },
	{ "run_jobid", test_run_jobid },
	{ "run_exit_status", test_run_exit_status },
	{ "run_keep_going", test_run_keep_going },
	{ "run_early_exit", test_run_early_exit },
	{ "run_timeout", test_run_timeout },
	{ "run_signal", test_run_signal },
	{ "run_usage", test_run_usage },
	{ "env_gather", test_env_gather },
	{ "env_rank_dies", test_env_rank_dies },
	{ "env_root_dies", test_env_root_dies },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_boot = {
	"boot", TU_HOST, suite_init, NULL, tests,
};

const struct tu_peer tu_peer_boot = { "boot", peer_main };
