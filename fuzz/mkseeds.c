/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writes the seed corpus of the fuzz targets: well-formed messages of
 * each protocol, built with the same structures and encoders as rcx, and
 * a few broken ones. `rcx_fz_seeds DIR` writes DIR/<target>/<seed>; the
 * result is committed as fuzz/corpus/.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <rcx/rcx.h>
#include "fz.h"
#include "lib/boot/boot_wire.h"
#include "lib/chan/chan_int.h"
#include "lib/win/win_int.h"

/* A seed being built. */
struct seed {
	uint8_t b[8192];
	size_t n;
};

static const char *top;

static void put(struct seed *s, const void *p, size_t n)
{
	FZ_ASSERT(s->n + n <= sizeof(s->b));
	if (n)
		memcpy(s->b + s->n, p, n);
	s->n += n;
}

static void put8(struct seed *s, uint8_t v)
{
	put(s, &v, 1);
}

/* One record of a script (fz.h): u16 length, then the bytes. */
static void rec(struct seed *s, const void *p, size_t n)
{
	put8(s, (uint8_t)n);
	put8(s, (uint8_t)(n >> 8));
	put(s, p, n);
}

static void save(const char *target, const char *name, const struct seed *s)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", top, target);
	if (mkdir(path, 0755) && errno != EEXIST)
		FZ_ASSERT(0);
	snprintf(path, sizeof(path), "%s/%s/%s", top, target, name);
	f = fopen(path, "wb");
	FZ_ASSERT(f && fwrite(s->b, 1, s->n, f) == s->n && !fclose(f));
}

/* ---- bootstrap frames */

static void frame(struct seed *s, uint16_t type, uint32_t rank, uint32_t round,
		  uint32_t status, const void *pl, uint32_t len)
{
	struct rcx__boot_frame f = { type, rank, round, status, len, pl };
	uint8_t hdr[RCX__BOOT_HDR_LEN];

	rcx__boot_hdr_encode(&f, hdr);
	put(s, hdr, sizeof(hdr));
	put(s, pl, len);
}

static void hello_pl(uint8_t pl[RCX__BOOT_HELLO_LEN], uint64_t jobid,
		     uint32_t size)
{
	int i;

	for (i = 0; i < 8; i++)
		pl[i] = (uint8_t)(jobid >> (56 - 8 * i));
	for (i = 0; i < 4; i++)
		pl[8 + i] = (uint8_t)(size >> (24 - 8 * i));
}

static void seeds_boot(void)
{
	uint8_t hp[RCX__BOOT_HELLO_LEN], data[16] = "rank0...rank1...";
	struct seed s = { .n = 0 }, t;

	hello_pl(hp, 0x1234, 2);
	frame(&s, RCX__BOOT_HELLO, 1, 0, 0, hp, sizeof(hp));
	save("boot_frame", "hello", &s);
	s.n = 0;
	frame(&s, RCX__BOOT_GATHER, 1, 0, 0, data, 8);
	save("boot_frame", "gather", &s);
	s.n = 0;
	frame(&s, RCX__BOOT_GATHER_ALL, 0, 3, 0, data, 16);
	frame(&s, RCX__BOOT_FAILED, 1, 0, 0, NULL, 0);
	frame(&s, RCX__BOOT_ABORT, 0, 0, RCX__BOOT_PROTOCOL, NULL, 0);
	save("boot_frame", "stream", &s);
	s.n -= 5;
	save("boot_frame", "truncated", &s);

	/* the client: byte 0 (rank 0, local), then the server's stream */
	s.n = 0;
	put8(&s, 0);
	frame(&s, RCX__BOOT_HELLO, 0, 0, 0, hp, sizeof(hp));
	frame(&s, RCX__BOOT_GATHER_ALL, 0, 0, 0, data, 16);
	frame(&s, RCX__BOOT_FAILED, 1, 0, 0, NULL, 0);
	frame(&s, RCX__BOOT_GATHER_ALL, 0, 1, RCX__BOOT_PROC_FAILED, NULL, 0);
	frame(&s, RCX__BOOT_ABORT, 0, 0, RCX__BOOT_OK, NULL, 0);
	save("boot_client", "rounds", &s);
	s.b[0] = 3; /* rank 1 of the env backend */
	memcpy(s.b + 1 + 8, "\0\0\0\1", 4);
	save("boot_client", "env_rank1", &s);

	/* the server: byte 0 (2 clients, both keep their side open) */
	s.n = 0;
	put8(&s, 1);
	t.n = 0;
	hello_pl(hp, 0, 2);
	frame(&t, RCX__BOOT_HELLO, 0, 0, 0, hp, sizeof(hp));
	frame(&t, RCX__BOOT_GATHER, 0, 0, 0, data, 8);
	rec(&s, t.b, t.n);
	t.n = 0;
	frame(&t, RCX__BOOT_HELLO, 1, 0, 0, hp, sizeof(hp));
	frame(&t, RCX__BOOT_GATHER, 1, 0, 0, data + 8, 8);
	frame(&t, RCX__BOOT_GATHER, 1, 1, RCX__BOOT_TOOBIG, NULL, 0);
	rec(&s, t.b, t.n);
	save("boot_srv", "round", &s);
	s.b[0] = 1 | 0x08 | 0x20 | 0x80; /* client 1 closes, rank 0 dies */
	save("boot_srv", "failure", &s);
}

/* ---- connection private data */

static void seeds_pdata(void)
{
	uint8_t pair[24] = { 'R', 'C', 'X', '1', 2, 0, 0, 0, 1, 0, 0, 0, 2 };
	uint8_t world[24] = { 'R', 'C', 'X', '1', 1, 0, 0, 0, 3, 0, 0, 0, 4 };
	uint8_t chan[16] = { 'R', 'C', 'X', '1', 3, 0, 0, 0, 1, 2, 3, 4 };
	uint8_t loop[16] = { 'R', 'C', 'X', 'W', 1, 0, 0, 0, 9 };
	struct seed s = { .n = 0 };

	rec(&s, pair, sizeof(pair));
	save("conn_pdata", "pair", &s);
	s.n = 0;
	rec(&s, world, sizeof(world));
	rec(&s, chan, sizeof(chan));
	rec(&s, loop, sizeof(loop));
	rec(&s, pair, 20);
	save("conn_pdata", "others", &s);
}

/* ---- messages on a connection */

static void msg(struct seed *s, uint8_t type, uint8_t cid, int32_t tag,
		const void *pl, uint32_t len, uint32_t id, uint64_t size)
{
	uint8_t b[sizeof(struct rcx__hdr) + 256];
	struct rcx__hdr h = { .type = type,
			      .cid = cid,
			      .credits = 1,
			      .tag = tag,
			      .len = len,
			      .id = id };

	FZ_ASSERT(len <= 256);
	if (type == RCX__MSG_RTS) {
		h.addr = 0x10000;
		h.size = size;
		h.rkey = 0x77;
	}
	memcpy(b, &h, sizeof(h));
	if (len)
		memcpy(b + sizeof(h), pl, len);
	rec(s, b, sizeof(h) + (type == RCX__MSG_EAGER ? len : 0));
}

static void seeds_msg(void)
{
	uint8_t pl[256];
	struct seed s = { .n = 0 };
	int i;

	for (i = 0; i < 256; i++)
		pl[i] = (uint8_t)i;
	msg(&s, RCX__MSG_EAGER, RCX__CID_USER, 1, pl, 16, 0, 0);
	msg(&s, RCX__MSG_EAGER, RCX__CID_USER, 7, pl, 200, 0, 0);
	msg(&s, RCX__MSG_RTS, RCX__CID_USER, 7, NULL, 0, 0, 3000);
	msg(&s, RCX__MSG_FIN, RCX__CID_USER, 0, NULL, 0, 0, 0);
	msg(&s, RCX__MSG_CREDIT, RCX__CID_USER, 0, NULL, 0, 0, 0);
	save("msg_hdr", "traffic", &s);
	msg(&s, RCX__MSG_BYE, RCX__CID_USER, 0, NULL, 0, 0, 0);
	save("msg_hdr", "bye", &s);
	s.n = 0;
	msg(&s, RCX__MSG_EAGER, RCX__CID_COLL, 5, pl, 100, 0, 0);
	msg(&s, RCX__MSG_EAGER, RCX__CID_MAX, 5, pl, 4, 0, 0);
	save("msg_hdr", "bad_cid", &s);
	s.n = 0;
	msg(&s, RCX__MSG_FIN, RCX__CID_USER, 0, NULL, 0, 9, 0);
	save("msg_hdr", "stray_fin", &s);

	/* agreement: rank 1's proposal to round 0, its decision of round 1
	 * (tags: sequence << 16 | coordinator << 1 | decide) */
	s.n = 0;
	msg(&s, RCX__MSG_EAGER, RCX__CID_FT, 0, "\1\0\0", 3, 0, 0);
	msg(&s, RCX__MSG_EAGER, RCX__CID_FT, 3, "\1\0\0", 3, 0, 0);
	msg(&s, RCX__MSG_EAGER, RCX__CID_FT, 1 << 16, "\1\0\1", 3, 0, 0);
	msg(&s, RCX__MSG_EAGER, RCX__CID_FT, 1 << 16 | 3, "\1\0\1", 3, 0, 0);
	save("ft_agree", "two_rounds", &s);
	s.n = 0;
	msg(&s, RCX__MSG_EAGER, RCX__CID_FT, 0, "\7\0", 2, 0, 0);
	msg(&s, RCX__MSG_RTS, RCX__CID_FT, 3, NULL, 0, 0, 3);
	save("ft_agree", "malformed", &s);
}

/* ---- window active messages: win_acc.c's header, then data */

struct wam {
	uint8_t type, op, dtype, fetch;
	uint32_t win, from, slot, gen, count;
	int32_t status;
	uint32_t pad;
	uint64_t off;
};

static void wam(struct seed *s, uint8_t type, uint8_t op, uint8_t dtype,
		uint8_t fetch, uint32_t count, uint64_t off, size_t dlen)
{
	uint8_t b[1 + sizeof(struct wam) + 128];
	struct wam m = { type, op, dtype, fetch, 0, 1, 0, 1, count, 0, 0, off };
	size_t i;

	FZ_ASSERT(dlen <= 128);
	b[0] = 1; /* address the window */
	memcpy(b + 1, &m, sizeof(m));
	for (i = 0; i < dlen; i++)
		b[1 + sizeof(m) + i] = (uint8_t)(i + 1);
	rec(s, b, 1 + sizeof(m) + dlen);
}

static void seeds_win(void)
{
	struct seed s = { .n = 0 };

	wam(&s, 1, RCX_SUM, RCX_INT32, 0, 4, 8, 16);
	wam(&s, 1, RCX_MAX, RCX_DOUBLE, 1, 2, 64, 16);
	wam(&s, 1, RCX_NO_OP, RCX_INT64, 1, 3, 0, 0);
	wam(&s, 1, 0x40, RCX_UINT64, 1, 1, 16, 16); /* compare-and-swap */
	save("win_am", "ops", &s);
	s.n = 0;
	wam(&s, 2, 0, 0, 0, 1, 0, 8); /* a reply nobody waits for */
	wam(&s, 1, RCX_SUM, RCX_INT32, 0, 4, 996, 16); /* past the end */
	wam(&s, 1, RCX_BXOR, RCX_FLOAT, 0, 1, 0, 4);   /* invalid op */
	save("win_am", "edges", &s);
}

/* ---- validate's span message: window length, then the message */

static void spans(const char *name, uint64_t win_len, uint32_t n,
		  const uint64_t *lohi, uint32_t pairs)
{
	struct seed s = { .n = 0 };
	struct rcx__win_span_wire m;
	uint32_t k;

	memset(&m, 0, sizeof(m));
	m.n = n;
	for (k = 0; k < pairs && k < RCX__WIN_SPANS; k++) {
		m.s[k].lo = lohi[2 * k];
		m.s[k].hi = lohi[2 * k + 1];
	}
	put(&s, &win_len, sizeof(win_len));
	put(&s, &m, sizeof(m));
	save("win_spans", name, &s);
}

static void seeds_spans(void)
{
	static const uint64_t two[] = { 128, 144, 256, 264 };
	static const uint64_t edges[] = {
		0, 512, 500, 600, 700, 600, UINT64_MAX - 1, UINT64_MAX
	};

	spans("two", 512, 2, two, 2);
	spans("edges", 512, 4, edges, 4);
	spans("count_too_big", 512, 1000, two, 2);
}

/* ---- bound channels: setup bytes, handshake messages, set events */

/* A bind message as chan_bind.c fills it (the peer's addresses, keys). */
static struct bind_msg bmsg(uint32_t kind, uint32_t n, uint32_t proto,
			    uint32_t slots, uint64_t len, uint64_t stride)
{
	struct bind_msg m;

	memset(&m, 0, sizeof(m));
	m.magic = CH_MAGIC;
	m.kind = kind;
	m.n = n;
	m.proto = proto;
	m.slots = slots;
	m.len = len;
	m.stride = stride;
	m.cookie = 0x1234;
	m.data_addr = 0x100000;
	m.ctl_addr = 0x200000;
	m.data_rkey = 0x11;
	m.ctl_rkey = 0x12;
	m.ack_tag = 0x40000001;
	snprintf(m.addr, sizeof(m.addr), "fz0");
	return m;
}

/* A record of the target: kind byte, then data. */
static void krec(struct seed *s, uint8_t kind, const void *p, size_t n)
{
	uint8_t b[1 + sizeof(struct rcx__hdr) + sizeof(struct bind_msg)];

	FZ_ASSERT(n < sizeof(b));
	b[0] = kind;
	memcpy(b + 1, p, n);
	rec(s, b, 1 + n);
}

static void bind_rec(struct seed *s, uint8_t kind, struct bind_msg m)
{
	krec(s, kind, &m, sizeof(m));
}

/* An event on the bound set: op, a, v. */
static void ev(struct seed *s, uint8_t op, uint8_t a, uint64_t v)
{
	uint8_t b[10] = { op, a };

	memcpy(b + 2, &v, 8);
	krec(s, 3, b, sizeof(b));
}

/* an immediate for m channels from idx, with_imm; len in the top bits */
static uint64_t imm(unsigned int idx, unsigned int m, uint32_t len)
{
	return (uint64_t)len << 32 | CH_IMM(idx, m, 1);
}

/* CREDIT messages: the peer stays connected while we take them */
static void idle(struct seed *s, int k)
{
	struct rcx__hdr h = { .type = RCX__MSG_CREDIT };

	while (k-- > 0)
		krec(s, 2, &h, sizeof(h));
}

static void setup(struct seed *s, uint8_t s0, uint8_t s1, uint8_t s2)
{
	s->n = 0;
	put8(s, s0);
	put8(s, s1);
	put8(s, s2);
}

/* setup[0]: send, protocol << 1, (n - 1) << 3, blocking 0x20 ... */
#define S_SEND(p, n) (1 | (p) << 1 | ((n)-1) << 3)
#define S_RECV(p, n) ((p) << 1 | ((n)-1) << 3)

static void seeds_chan(void)
{
	struct rcx__hdr h = { .type = RCX__MSG_RTS,
			      .cid = RCX__CID_BIND,
			      .credits = 1,
			      .tag = 9,
			      .addr = 0x10000,
			      .size = sizeof(struct bind_msg),
			      .rkey = 0x77 };
	static const uint32_t lens[] = { 8, 4, 9 }; /* 9: past the slot */
	static struct seed s, t;
	int i;

	/* receiver, send protocol: the request before the bind; messages */
	setup(&s, S_RECV(RCX_CHAN_AUTO, 1), 0, 2 << 1);
	bind_rec(&s, 0, bmsg(1, 1, RCX_CHAN_SEND, 1, 8, 8));
	for (i = 0; i < 3; i++) {
		ev(&s, 0, 0, 0);
		ev(&s, 2, 1, imm(0, 1, lens[i]));
	}
	save("chan", "recv_send", &s);

	/* receiver, write_imm bundle of 2 on 4 slots: an immediate naming a
	 * channel past the bundle; fused and single ones, then a fused one
	 * for a channel not started */
	setup(&s, S_RECV(RCX_CHAN_WRITE_IMM, 2), 3, 1);
	bind_rec(&s, 0, bmsg(1, 2, RCX_CHAN_AUTO, 4, 8, 8));
	ev(&s, 1, 0, 0);
	t = s;
	ev(&t, 2, 0, imm(3, 1, 8));
	save("chan", "recv_wimm_bad", &t);
	ev(&s, 2, 0, imm(0, 2, 16));
	ev(&s, 0, 1, 0);
	ev(&s, 2, 0, imm(1, 1, 8));
	ev(&s, 0, 0, 0);
	ev(&s, 2, 0, imm(0, 2, 16));
	save("chan", "recv_wimm", &s);

	/* receiver: the ends disagree (bundle size), a blocking bind */
	setup(&s, S_RECV(RCX_CHAN_AUTO, 1) | 0x20, 0, 0);
	bind_rec(&s, 0, bmsg(1, 3, RCX_CHAN_SEND, 1, 8, 8));
	save("chan", "recv_disagree", &s);

	/* receiver from any source and tag; the sender's address is not
	 * the peer's listener: the connection is refused */
	setup(&s, S_RECV(RCX_CHAN_SEND, 1) | 0xc0, 1 << 2, 0);
	{
		struct bind_msg m = bmsg(1, 1, RCX_CHAN_AUTO, 1, 0, 0);

		snprintf(m.addr, sizeof(m.addr), "10.0.0.1:7471");
		bind_rec(&s, 0, m);
	}
	save("chan", "recv_refused", &s);

	/* receiver: the request came by rendezvous before the bind, which
	 * is freed at once */
	setup(&s, S_RECV(RCX_CHAN_AUTO, 1), 0x80, 2 << 1);
	krec(&s, 2, &h, sizeof(h));
	idle(&s, 2);
	save("chan", "recv_rts_free", &s);

	/* sender, write_imm bundle of 2 on 2 contiguous slots: one write
	 * carries both when both credits are in; credits one by one */
	setup(&s, S_SEND(RCX_CHAN_WRITE_IMM, 2), 1, 0);
	bind_rec(&s, 1, bmsg(2, 2, RCX_CHAN_WRITE_IMM, 2, 8, 8));
	idle(&s, 4);
	ev(&s, 3, 0, 1);
	ev(&s, 3, 1, 1);
	ev(&s, 1, 0, 0);
	ev(&s, 1, 0, 0);
	ev(&s, 3, 0, 2);
	ev(&s, 3, 1, 2);
	ev(&s, 0, 0, 0);
	ev(&s, 3, 0, 3);
	save("chan", "send_wimm", &s);

	/* sender, send protocol, connected after the answer; the peer frees
	 * its end */
	setup(&s, S_SEND(RCX_CHAN_AUTO, 1), 1 << 5, 0x10);
	bind_rec(&s, 1, bmsg(2, 1, RCX_CHAN_SEND, 1, 8, 8));
	idle(&s, 4);
	ev(&s, 0, 0, 0);
	ev(&s, 1, 0, 0);
	save("chan", "send_late", &s);

	/* sender: answered but never connected; a refusal */
	setup(&s, S_SEND(RCX_CHAN_AUTO, 1), 2 << 5, 0);
	bind_rec(&s, 1, bmsg(2, 1, RCX_CHAN_SEND, 1, 8, 8));
	save("chan", "send_noconn", &s);
	setup(&s, S_SEND(RCX_CHAN_AUTO, 1) | 0x20, 0, 0);
	{
		struct bind_msg m = bmsg(2, 1, RCX_CHAN_SEND, 1, 8, 8);

		m.status = -EINVAL;
		bind_rec(&s, 1, m);
	}
	save("chan", "send_refused", &s);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: rcx_fz_seeds DIR\n");
		return 2;
	}
	top = argv[1];
	seeds_boot();
	seeds_pdata();
	seeds_msg();
	seeds_win();
	seeds_spans();
	seeds_chan();
	return 0;
}
