/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The gather server (boot_server.c) of a 2-rank job, as the rcx-run
 * launcher runs it, with up to three client connections whose streams are
 * the input: byte 0 picks the number of clients, which of them close
 * their side, and which ranks the launcher then reports gone; records
 * (fz.h) are the clients' streams. Oracles: everything the server sends
 * is a well-formed frame; at most the job's ranks join.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "fz.h"
#include "lib/boot/boot_wire.h"

#define SIZE  2
#define NCONN 3

struct client {
	int fd;
	struct rcx__boot_rx rx;
	int bad; /* the server closed it */
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	setenv("RCX_BOOT_TIMEOUT_MS", "100", 1);
	return 0;
}

static int listener(struct sockaddr_un *sa)
{
	static unsigned int seq;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	FZ_ASSERT(fd >= 0);
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* abstract name: nothing on the file system */
	snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1, "rcx-fz-%d-%u",
		 (int)getpid(), seq++);
	FZ_ASSERT(!bind(fd, (struct sockaddr *)sa, sizeof(*sa)));
	FZ_ASSERT(!listen(fd, 16));
	return fd;
}

/* Read what the server sent; every frame must parse. */
static void drain(struct client *c)
{
	struct rcx__boot_frame f;
	int ret;

	while (!c->bad && (ret = rcx__boot_rx_next(c->fd, &c->rx, &f)) != 0) {
		FZ_ASSERT(ret != -EPROTO);
		if (ret < 0)
			c->bad = 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct client cl[NCONN];
	struct fz_script s;
	struct rcx__boot_srv *srv;
	struct sockaddr_un sa;
	const uint8_t *rec;
	size_t len;
	int n, i, k, flags;

	if (size < 1 || size > 65536)
		return 0;
	flags = data[0];
	n = 1 + flags % NCONN;
	s = (struct fz_script){ data + 1, size - 1 };
	FZ_ASSERT(!rcx__boot_srv_open(listener(&sa), SIZE, 0x1234, -1, &srv));
	for (i = 0; i < n; i++) {
		cl[i].fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		FZ_ASSERT(cl[i].fd >= 0);
		FZ_ASSERT(
			!connect(cl[i].fd, (struct sockaddr *)&sa, sizeof(sa)));
		FZ_ASSERT(!rcx__boot_set_nonblock(cl[i].fd));
		rcx__boot_rx_init(&cl[i].rx);
		cl[i].bad = 0;
		if (fz_next(&s, &rec, &len) && len)
			FZ_ASSERT(write(cl[i].fd, rec, len) == (ssize_t)len);
		if (flags & (4 << i))
			shutdown(cl[i].fd, SHUT_WR);
	}
	for (k = 0; k < 8; k++) {
		FZ_ASSERT(!rcx__boot_srv_run(srv, 0));
		for (i = 0; i < n; i++)
			drain(&cl[i]);
		FZ_ASSERT(rcx__boot_srv_joined(srv) <= SIZE);
		/* the launcher saw a rank exit (abnormally with bit 7) */
		if (k == 4 && (flags & 0x20))
			rcx__boot_srv_rank_gone(srv, 0, flags & 0x80);
		if (k == 5 && (flags & 0x40))
			rcx__boot_srv_rank_gone(srv, 1, flags & 0x80);
	}
	rcx__boot_srv_close(srv);
	for (i = 0; i < n; i++) {
		drain(&cl[i]);
		rcx__boot_rx_free(&cl[i].rx);
		close(cl[i].fd);
	}
	return 0;
}
