/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The gather server: ranks join with HELLO, then every round collects one
 * GATHER per rank and answers all of them with one GATHER_ALL. Used by the
 * rcx-run launcher (unix socket, its own event loop) and by rank 0 of the
 * env backend (TCP, driven from inside rank 0's own calls).
 *
 * Failures: a rank fails when the launcher says it died, when it breaks
 * the protocol, or when its connection closes while another rank already
 * waits on it. A rank whose connection closes while nobody waits on it has
 * left; it becomes failed as soon as anyone starts a round it will never
 * join. Each failure is told to every other rank (FAILED) and ends the
 * round in progress with PROC_FAILED for the ranks waiting in it. From the
 * first failure on, no round can complete: each GATHER is answered at once
 * with PROC_FAILED. A rank may also declare another failed (DECLARE: it
 * was cut off past RCX_FT_TIMEOUT_MS): that fails it the same way, and
 * the launcher learns it from srv_declared to kill it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "lib/boot/boot_wire.h"

#define SRV_MAX_PENDING_EXTRA 8 /* connections not yet joined, over size */
#define SRV_BATCH	      64

struct srv_conn {
	int fd;
	int rank; /* -1 until its HELLO is accepted */
	int dead; /* closed, freed by srv_reap() */
	struct rcx__boot_rx rx;
	struct srv_conn *next;
};

struct srv_rank {
	struct srv_conn *conn;
	uint32_t next; /* the round it contributes to next */
	uint8_t joined;
	uint8_t waiting; /* contributed to the round being collected */
	uint8_t failed;
	uint8_t left;
	uint8_t lost;	  /* a send to it failed: handled by srv_settle() */
	uint8_t declared; /* failed by a DECLARE; 2 once srv_declared said so */
	int decl_by;
};

struct rcx__boot_srv {
	int epfd;
	int lfd;
	int size;
	int self;
	int io_ms; /* limit for one send to a rank */
	uint64_t jobid;
	struct srv_conn *conns;
	int npending;
	int njoined;
	int nfailed;
	int nleft;
	struct srv_rank *ranks;
	/* the round being collected (while no rank has failed) */
	uint32_t round;
	int nwait;
	int have_len;
	uint32_t len;
	uint32_t status;
	uint8_t *res;
	/* the in-process rank */
	void *self_out;
	int self_done;
	int self_err;
	int *self_q;
	int self_qh, self_qn;
};

static void srv_fail(struct rcx__boot_srv *s, int r);

static void conn_kill(struct rcx__boot_srv *s, struct srv_conn *c)
{
	if (c->dead)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	c->dead = 1;
	if (c->rank >= 0)
		s->ranks[c->rank].conn = NULL;
	else
		s->npending--;
}

static void srv_reap(struct rcx__boot_srv *s)
{
	struct srv_conn **pp = &s->conns, *c;

	while ((c = *pp)) {
		if (!c->dead) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		rcx__boot_rx_free(&c->rx);
		free(c);
	}
}

static void self_deliver(struct rcx__boot_srv *s,
			 const struct rcx__boot_frame *f)
{
	if (f->type == RCX__BOOT_FAILED) {
		s->self_q[(s->self_qh + s->self_qn++) % s->size] = (int)f->rank;
		return;
	}
	if (f->type != RCX__BOOT_GATHER_ALL || s->self_done)
		return;
	if (f->status == RCX__BOOT_OK && f->len)
		memcpy(s->self_out, f->payload, f->len);
	s->self_err = rcx__boot_status_err(f->status);
	s->self_done = 1;
}

/* A failed send marks the rank lost; srv_settle() deals with it later. */
static void send_to(struct rcx__boot_srv *s, int r,
		    const struct rcx__boot_frame *f)
{
	struct srv_rank *rk = &s->ranks[r];

	if (r == s->self) {
		self_deliver(s, f);
		return;
	}
	if (!rk->conn || rk->failed)
		return;
	if (rcx__boot_send(rk->conn->fd, f, s->io_ms)) {
		conn_kill(s, rk->conn);
		rk->lost = 1;
	}
}

static void send_conn(struct rcx__boot_srv *s, struct srv_conn *c,
		      uint16_t type, uint32_t rank, uint32_t status)
{
	struct rcx__boot_frame f = {
		.type = type,
		.rank = rank,
		.status = status,
	};

	/* best effort: the connection is dropped right after */
	rcx__boot_send(c->fd, &f, 100);
}

static void round_reset(struct rcx__boot_srv *s)
{
	free(s->res);
	s->res = NULL;
	s->nwait = 0;
	s->have_len = 0;
	s->len = 0;
	s->status = RCX__BOOT_OK;
	s->round++;
}

static void round_complete(struct rcx__boot_srv *s)
{
	struct rcx__boot_frame f = {
		.type = RCX__BOOT_GATHER_ALL,
		.round = s->round,
		.status = s->status,
	};
	uint8_t *res = s->res;
	int r;

	if (f.status == RCX__BOOT_OK) {
		f.len = (uint32_t)s->size * s->len;
		f.payload = res;
	}
	s->res = NULL;
	round_reset(s);
	for (r = 0; r < s->size; r++) {
		if (!s->ranks[r].waiting)
			continue;
		s->ranks[r].waiting = 0;
		send_to(s, r, &f);
	}
	free(res);
}

/* End the round in progress: its ranks wait on one that will never come. */
static void round_abort(struct rcx__boot_srv *s)
{
	struct rcx__boot_frame f = {
		.type = RCX__BOOT_GATHER_ALL,
		.round = s->round,
		.status = RCX__BOOT_PROC_FAILED,
	};
	int r;

	round_reset(s);
	for (r = 0; r < s->size; r++) {
		if (!s->ranks[r].waiting)
			continue;
		s->ranks[r].waiting = 0;
		send_to(s, r, &f);
	}
}

static void srv_fail(struct rcx__boot_srv *s, int r)
{
	struct rcx__boot_frame f = { .type = RCX__BOOT_FAILED, .rank = r };
	struct srv_rank *rk = &s->ranks[r];
	int q;

	if (rk->failed)
		return;
	rk->failed = 1;
	s->nfailed++;
	if (rk->left) {
		rk->left = 0;
		s->nleft--;
	}
	if (rk->waiting) {
		rk->waiting = 0;
		s->nwait--;
	}
	if (rk->conn)
		conn_kill(s, rk->conn);
	for (q = 0; q < s->size; q++)
		if (q != r && s->ranks[q].joined)
			send_to(s, q, &f);
	round_abort(s);
}

/* r's connection is gone, cause unknown: left, or failed if awaited. */
static void srv_depart(struct rcx__boot_srv *s, int r)
{
	struct srv_rank *rk = &s->ranks[r];
	int q;

	if (rk->conn)
		conn_kill(s, rk->conn);
	if (rk->failed || rk->left)
		return;
	for (q = 0; q < s->size; q++) {
		if (!s->ranks[q].failed && s->ranks[q].next > rk->next) {
			srv_fail(s, r);
			return;
		}
	}
	rk->left = 1;
	s->nleft++;
}

static void srv_settle(struct rcx__boot_srv *s)
{
	int r, again = 1;

	while (again) {
		again = 0;
		for (r = 0; r < s->size; r++) {
			if (!s->ranks[r].lost)
				continue;
			s->ranks[r].lost = 0;
			srv_depart(s, r);
			again = 1;
		}
	}
}

static void contribute(struct rcx__boot_srv *s, int r, uint32_t status,
		       const void *data, uint32_t len)
{
	struct srv_rank *rk = &s->ranks[r];
	struct rcx__boot_frame f = {
		.type = RCX__BOOT_GATHER_ALL,
		.round = rk->next,
		.status = RCX__BOOT_PROC_FAILED,
	};
	int q;

	rk->next++;
	/* ranks that left will never join this round */
	for (q = 0; s->nleft && q < s->size; q++)
		if (s->ranks[q].left)
			srv_fail(s, q);
	if (s->nfailed) {
		send_to(s, r, &f);
		return;
	}
	rk->waiting = 1;
	s->nwait++;
	if (status != RCX__BOOT_OK) {
		s->status = status;
	} else if (!s->have_len) {
		s->have_len = 1;
		s->len = len;
		if ((uint64_t)s->size * len > RCX__BOOT_MAX_PAYLOAD) {
			s->status = RCX__BOOT_TOOBIG;
		} else if (len) {
			s->res = malloc((size_t)s->size * len);
			/* no room to assemble it: as good as too big */
			if (!s->res)
				s->status = RCX__BOOT_TOOBIG;
		}
	} else if (len != s->len) {
		s->status = RCX__BOOT_MISMATCH;
	}
	if (s->status == RCX__BOOT_OK && len)
		memcpy(s->res + (size_t)r * len, data, len);
	if (s->nwait == s->size)
		round_complete(s);
}

static void on_hello(struct rcx__boot_srv *s, struct srv_conn *c,
		     const struct rcx__boot_frame *f)
{
	const uint8_t *p = f->payload;
	uint8_t reply[RCX__BOOT_HELLO_LEN];
	struct rcx__boot_frame ok = {
		.type = RCX__BOOT_HELLO,
		.rank = f->rank,
		.len = sizeof(reply),
		.payload = reply,
	};
	struct srv_rank *rk;
	uint64_t jobid = 0;
	uint32_t size = 0;
	int i, q;

	for (i = 0; i < 8; i++)
		jobid = jobid << 8 | p[i];
	for (i = 8; i < 12; i++)
		size = size << 8 | p[i];
	/* the parser saw f->rank < size */
	rk = size == (uint32_t)s->size ? &s->ranks[f->rank] : NULL;
	if (!rk || (jobid && jobid != s->jobid) || (int)f->rank == s->self ||
	    rk->joined || rk->failed || rk->left) {
		send_conn(s, c, RCX__BOOT_ABORT, f->rank, RCX__BOOT_REJECTED);
		conn_kill(s, c);
		return;
	}
	for (i = 0; i < 8; i++)
		reply[i] = (uint8_t)(s->jobid >> (56 - 8 * i));
	for (i = 8; i < 12; i++)
		reply[i] = (uint8_t)(size >> (88 - 8 * i));
	c->rank = (int)f->rank;
	s->npending--;
	rk->conn = c;
	rk->joined = 1;
	s->njoined++;
	send_to(s, c->rank, &ok);
	/* failures it missed */
	ok = (struct rcx__boot_frame){ .type = RCX__BOOT_FAILED };
	for (q = 0; q < s->size; q++) {
		if (!s->ranks[q].failed)
			continue;
		ok.rank = q;
		send_to(s, c->rank, &ok);
	}
}

/* by declared r failed: as a death, and the launcher is to kill it */
static void srv_declare(struct rcx__boot_srv *s, int r, int by)
{
	struct srv_rank *rk = &s->ranks[r];

	if (rk->failed)
		return;
	rk->declared = 1;
	rk->decl_by = by;
	srv_fail(s, r);
}

static void on_frame(struct rcx__boot_srv *s, struct srv_conn *c,
		     const struct rcx__boot_frame *f)
{
	struct srv_rank *rk;

	if (c->rank < 0) {
		if (f->type == RCX__BOOT_HELLO) {
			on_hello(s, c, f);
		} else {
			send_conn(s, c, RCX__BOOT_ABORT, 0, RCX__BOOT_PROTOCOL);
			conn_kill(s, c);
		}
		return;
	}
	rk = &s->ranks[c->rank];
	if (f->type == RCX__BOOT_GATHER && f->rank == (uint32_t)c->rank &&
	    f->round == rk->next && !rk->waiting) {
		contribute(s, c->rank, f->status, f->payload, f->len);
		return;
	}
	if (f->type == RCX__BOOT_DECLARE && f->rank < (uint32_t)s->size &&
	    f->rank != (uint32_t)c->rank) {
		srv_declare(s, (int)f->rank, c->rank);
		return;
	}
	/* an ABORT from a rank: it gives up, which fails it */
	if (f->type != RCX__BOOT_ABORT)
		send_conn(s, c, RCX__BOOT_ABORT, f->rank, RCX__BOOT_PROTOCOL);
	srv_fail(s, c->rank);
}

static void on_conn(struct rcx__boot_srv *s, struct srv_conn *c)
{
	struct rcx__boot_frame f;
	int ret;

	while (!c->dead) {
		ret = rcx__boot_rx_next(c->fd, &c->rx, &f);
		if (!ret)
			return;
		if (ret > 0) {
			on_frame(s, c, &f);
			continue;
		}
		if (ret == -EPROTO)
			send_conn(s, c, RCX__BOOT_ABORT, 0, RCX__BOOT_PROTOCOL);
		if (c->rank < 0)
			conn_kill(s, c);
		else if (ret == -EPROTO)
			srv_fail(s, c->rank);
		else
			srv_depart(s, c->rank);
	}
}

static int conn_add(struct rcx__boot_srv *s, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct srv_conn *c;
	int one = 1;

	if (s->npending >= s->size + SRV_MAX_PENDING_EXTRA)
		return -EBUSY;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->rank = -1;
	rcx__boot_rx_init(&c->rx);
	ev.data.ptr = c;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		free(c);
		return -errno;
	}
	/* fails harmlessly on unix sockets */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->next = s->conns;
	s->conns = c;
	s->npending++;
	return 0;
}

static void on_accept(struct rcx__boot_srv *s)
{
	int fd;

	for (;;) {
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		if (conn_add(s, fd))
			close(fd);
	}
}

int rcx__boot_srv_run(struct rcx__boot_srv *s, int timeout_ms)
{
	struct epoll_event ev;
	int n, i;

	for (i = 0; i < SRV_BATCH; i++) {
		/* one event at a time: handling it may close other conns */
		n = epoll_wait(s->epfd, &ev, 1, i ? 0 : timeout_ms);
		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		if (!n)
			return 0;
		if (ev.data.ptr)
			on_conn(s, ev.data.ptr);
		else
			on_accept(s);
		srv_settle(s);
		srv_reap(s);
	}
	return 0;
}

void rcx__boot_srv_rank_gone(struct rcx__boot_srv *s, int rank, int abnormal)
{
	struct srv_rank *rk;

	if (rank < 0 || rank >= s->size || rank == s->self)
		return;
	rk = &s->ranks[rank];
	/* take what it sent before exiting first */
	if (rk->conn)
		on_conn(s, rk->conn);
	if (abnormal)
		srv_fail(s, rank);
	else
		srv_depart(s, rank);
	srv_settle(s);
	srv_reap(s);
}

int rcx__boot_srv_self_gather(struct rcx__boot_srv *s, const void *in,
			      size_t len, void *out)
{
	uint32_t status = RCX__BOOT_OK;
	int ret;

	if (s->self < 0)
		return -EINVAL;
	if (len > RCX__BOOT_MAX_PAYLOAD) {
		status = RCX__BOOT_TOOBIG;
		len = 0;
	}
	s->self_out = out;
	s->self_done = 0;
	contribute(s, s->self, status, in, (uint32_t)len);
	srv_settle(s);
	srv_reap(s);
	while (!s->self_done) {
		ret = rcx__boot_srv_run(s, -1);
		if (ret)
			return ret;
	}
	return s->self_err;
}

int rcx__boot_srv_self_failed(struct rcx__boot_srv *s, int *rank)
{
	if (!s->self_qn)
		return 0;
	*rank = s->self_q[s->self_qh];
	s->self_qh = (s->self_qh + 1) % s->size;
	s->self_qn--;
	return 1;
}

void rcx__boot_srv_self_declare(struct rcx__boot_srv *s, int rank)
{
	if (s->self < 0 || rank < 0 || rank >= s->size || rank == s->self)
		return;
	srv_declare(s, rank, s->self);
	srv_settle(s);
	srv_reap(s);
}

int rcx__boot_srv_declared(struct rcx__boot_srv *s, int *rank, int *by)
{
	int r;

	for (r = 0; r < s->size; r++) {
		if (s->ranks[r].declared != 1)
			continue;
		s->ranks[r].declared = 2;
		*rank = r;
		*by = s->ranks[r].decl_by;
		return 1;
	}
	return 0;
}

int rcx__boot_srv_fd(const struct rcx__boot_srv *s)
{
	return s->epfd;
}

int rcx__boot_srv_joined(const struct rcx__boot_srv *s)
{
	return s->njoined;
}

int rcx__boot_srv_open(int lfd, int size, uint64_t jobid, int self,
		       struct rcx__boot_srv **out)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	struct rcx__boot_srv *s;
	int ret;

	if (lfd < 0 || size < 1 || size > RCX__BOOT_MAX_SIZE || self < -1 ||
	    self >= size)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ranks = calloc((size_t)size, sizeof(*s->ranks));
	s->self_q = calloc((size_t)size, sizeof(*s->self_q));
	if (!s->ranks || !s->self_q) {
		ret = -ENOMEM;
		goto err_free;
	}
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		ret = -errno;
		goto err_free;
	}
	ret = rcx__boot_set_nonblock(lfd);
	if (ret)
		goto err_epoll;
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, lfd, &ev)) {
		ret = -errno;
		goto err_epoll;
	}
	s->lfd = lfd;
	s->size = size;
	s->self = self;
	s->jobid = jobid;
	s->io_ms = rcx__boot_timeout_ms();
	if (self >= 0) {
		s->ranks[self].joined = 1;
		s->njoined = 1;
	}
	*out = s;
	return 0;

err_epoll:
	close(s->epfd);
err_free:
	free(s->self_q);
	free(s->ranks);
	free(s);
	return ret;
}

void rcx__boot_srv_close(struct rcx__boot_srv *s)
{
	struct srv_conn *c;

	if (!s)
		return;
	/* a clean end, not a crash (the env backend's rank 0 leaving) */
	for (c = s->conns; c; c = c->next) {
		send_conn(s, c, RCX__BOOT_ABORT, 0, RCX__BOOT_OK);
		conn_kill(s, c);
	}
	srv_reap(s);
	close(s->lfd);
	close(s->epfd);
	free(s->res);
	free(s->self_q);
	free(s->ranks);
	free(s);
}
