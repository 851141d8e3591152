/* SPDX-License-Identifier: BSD-2-Clause */
/* Bootstrap frames: strict parsing, whole-frame send and receive. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <rcx/errors.h>
#include "lib/boot/boot_wire.h"

#define RX_MIN_CAP  4096
#define RX_KEEP_CAP (256u << 10) /* larger idle buffers are given back */

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

/* Header fields and the rules that need no payload. */
static int hdr_parse(const uint8_t *p, struct rcx__boot_frame *f)
{
	if (get32(p) != RCX__BOOT_MAGIC || get16(p + 4) != RCX__BOOT_VERSION)
		return -EPROTO;
	f->type = get16(p + 6);
	f->rank = get32(p + 8);
	f->round = get32(p + 12);
	f->status = get32(p + 16);
	f->len = get32(p + 20);
	f->payload = NULL;
	if (f->rank >= RCX__BOOT_MAX_SIZE || f->len > RCX__BOOT_MAX_PAYLOAD ||
	    f->status > RCX__BOOT_STATUS_MAX)
		return -EPROTO;
	switch (f->type) {
	case RCX__BOOT_HELLO:
		if (f->len != RCX__BOOT_HELLO_LEN || f->status != RCX__BOOT_OK)
			return -EPROTO;
		return 0;
	case RCX__BOOT_GATHER:
		if (f->status != RCX__BOOT_OK &&
		    (f->status != RCX__BOOT_TOOBIG || f->len))
			return -EPROTO;
		return 0;
	case RCX__BOOT_GATHER_ALL:
		if (f->status != RCX__BOOT_OK && f->len)
			return -EPROTO;
		return 0;
	case RCX__BOOT_FAILED:
	case RCX__BOOT_DECLARE:
		if (f->len || f->status != RCX__BOOT_OK)
			return -EPROTO;
		return 0;
	case RCX__BOOT_ABORT:
		return f->len ? -EPROTO : 0;
	default:
		return -EPROTO;
	}
}

int rcx__boot_frame_parse(const void *buf, size_t len,
			  struct rcx__boot_frame *out)
{
	const uint8_t *p = buf;
	struct rcx__boot_frame f;
	uint32_t size;

	if (!p || len < RCX__BOOT_HDR_LEN || hdr_parse(p, &f))
		return -EPROTO;
	if (len - RCX__BOOT_HDR_LEN != f.len)
		return -EPROTO;
	f.payload = p + RCX__BOOT_HDR_LEN;
	if (f.type == RCX__BOOT_HELLO) {
		/* jobid u64 (any value), then size */
		size = get32(p + RCX__BOOT_HDR_LEN + 8);
		if (!size || size > RCX__BOOT_MAX_SIZE || f.rank >= size)
			return -EPROTO;
	}
	*out = f;
	return 0;
}

void rcx__boot_hdr_encode(const struct rcx__boot_frame *f,
			  uint8_t hdr[RCX__BOOT_HDR_LEN])
{
	put32(hdr, RCX__BOOT_MAGIC);
	put16(hdr + 4, RCX__BOOT_VERSION);
	put16(hdr + 6, f->type);
	put32(hdr + 8, f->rank);
	put32(hdr + 12, f->round);
	put32(hdr + 16, f->status);
	put32(hdr + 20, f->len);
}

int rcx__boot_status_err(uint32_t status)
{
	switch (status) {
	case RCX__BOOT_OK:
		return 0;
	case RCX__BOOT_PROC_FAILED:
		return RCX_ERR_PROC_FAILED;
	case RCX__BOOT_TOOBIG:
		return -EMSGSIZE;
	case RCX__BOOT_REJECTED:
		return -ECONNREFUSED;
	default:
		return -EPROTO;
	}
}

long long rcx__boot_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

int rcx__boot_left_ms(long long deadline)
{
	long long left;

	if (deadline < 0)
		return -1;
	left = deadline - rcx__boot_now_ms();
	if (left <= 0)
		return 0;
	return left > 1000000000 ? 1000000000 : (int)left;
}

int rcx__boot_poll1(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int ret = poll(&pfd, 1, timeout_ms);

	/* an interrupted wait looks like a wakeup: callers re-check and loop */
	if (ret < 0)
		return errno == EINTR ? 1 : -errno;
	return ret;
}

int rcx__boot_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

int rcx__boot_send(int fd, const struct rcx__boot_frame *f, int timeout_ms)
{
	long long end = timeout_ms < 0 ? -1 : rcx__boot_now_ms() + timeout_ms;
	uint8_t hdr[RCX__BOOT_HDR_LEN];
	size_t total = RCX__BOOT_HDR_LEN + (size_t)f->len, done = 0;
	int ret;

	rcx__boot_hdr_encode(f, hdr);
	while (done < total) {
		struct iovec iov[2];
		struct msghdr mh = { .msg_iov = iov };
		ssize_t r;

		if (done < RCX__BOOT_HDR_LEN) {
			iov[0].iov_base = hdr + done;
			iov[0].iov_len = RCX__BOOT_HDR_LEN - done;
			iov[1].iov_base = (void *)f->payload;
			iov[1].iov_len = f->len;
			mh.msg_iovlen = f->len ? 2 : 1;
		} else {
			iov[0].iov_base = (uint8_t *)f->payload + done -
					  RCX__BOOT_HDR_LEN;
			iov[0].iov_len = total - done;
			mh.msg_iovlen = 1;
		}
		r = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r >= 0) {
			done += (size_t)r;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		ret = rcx__boot_poll1(fd, POLLOUT, rcx__boot_left_ms(end));
		if (ret < 0)
			return ret;
		if (!ret)
			return -ETIMEDOUT;
	}
	return 0;
}

void rcx__boot_rx_init(struct rcx__boot_rx *rx)
{
	memset(rx, 0, sizeof(*rx));
}

void rcx__boot_rx_free(struct rcx__boot_rx *rx)
{
	free(rx->buf);
	rcx__boot_rx_init(rx);
}

static int rx_reserve(struct rcx__boot_rx *rx, size_t need)
{
	uint8_t *nb;
	size_t cap = rx->cap ? rx->cap : RX_MIN_CAP;

	if (need <= rx->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	nb = realloc(rx->buf, cap);
	if (!nb)
		return -ENOMEM;
	rx->buf = nb;
	rx->cap = cap;
	return 0;
}

int rcx__boot_rx_next(int fd, struct rcx__boot_rx *rx,
		      struct rcx__boot_frame *f)
{
	struct rcx__boot_frame h;
	size_t need;
	ssize_t r;
	int ret;

	if (rx->used) {
		memmove(rx->buf, rx->buf + rx->used, rx->have - rx->used);
		rx->have -= rx->used;
		rx->used = 0;
	}
	if (!rx->have && rx->cap > RX_KEEP_CAP) {
		free(rx->buf);
		rx->buf = NULL;
		rx->cap = 0;
	}
	for (;;) {
		need = RCX__BOOT_HDR_LEN;
		if (rx->have >= RCX__BOOT_HDR_LEN) {
			/* the header bounds len before anything is allocated */
			if (hdr_parse(rx->buf, &h))
				return -EPROTO;
			need += h.len;
			if (rx->have >= need) {
				ret = rcx__boot_frame_parse(rx->buf, need, f);
				if (ret)
					return ret;
				rx->used = need;
				return 1;
			}
		}
		if (rx->eof)
			return -ECONNRESET;
		ret = rx_reserve(rx, need);
		if (ret)
			return ret;
		r = recv(fd, rx->buf + rx->have, rx->cap - rx->have,
			 MSG_DONTWAIT);
		if (r > 0) {
			rx->have += (size_t)r;
		} else if (!r) {
			rx->eof = 1;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			return 0;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
}

int rcx__boot_recv(int fd, struct rcx__boot_rx *rx, struct rcx__boot_frame *f,
		   int timeout_ms)
{
	long long end = timeout_ms < 0 ? -1 : rcx__boot_now_ms() + timeout_ms;
	int ret;

	for (;;) {
		ret = rcx__boot_rx_next(fd, rx, f);
		if (ret)
			return ret < 0 ? ret : 0;
		ret = rcx__boot_poll1(fd, POLLIN, rcx__boot_left_ms(end));
		if (ret < 0)
			return ret;
		if (!ret)
			return -ETIMEDOUT;
	}
}

int rcx__boot_timeout_ms(void)
{
	long v;

	if (rcx__boot_env_int("RCX_BOOT_TIMEOUT_MS", 0, 1000000000, &v))
		return RCX__BOOT_TIMEOUT_MS;
	return (int)v;
}

int rcx__boot_env_int(const char *name, long min, long max, long *out)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s)
		return -ENOENT;
	/* digits only: strtol alone would take spaces and a sign */
	if (!isdigit((unsigned char)*s))
		return -EPROTO;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < min || v > max)
		return -EPROTO;
	*out = v;
	return 0;
}

int rcx__boot_env_jobid(uint64_t *out)
{
	const char *s = getenv("RCX_JOBID");
	unsigned long long v;
	char *end;

	if (!s || !*s) {
		*out = 0;
		return 0;
	}
	if (!isxdigit((unsigned char)*s))
		return -EPROTO;
	errno = 0;
	v = strtoull(s, &end, 16);
	if (*end || errno)
		return -EPROTO;
	*out = v;
	return 0;
}

uint64_t rcx__boot_random_jobid(void)
{
	uint64_t v = 0;

	while (!v) {
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = (uint64_t)rcx__boot_now_ms() << 20 ^
			    (uint64_t)getpid();
	}
	return v;
}
