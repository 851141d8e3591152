/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The socket client of the bootstrap (a rank talking to the gather server),
 * and the "local" backend: the rcx-run launcher's unix socket, named by
 * RCX_RUN_SOCK, with RCX_RANK, RCX_SIZE and RCX_JOBID.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <rcx/errors.h>
#include "lib/boot/boot_wire.h"

struct client {
	struct rcx__boot b;
	int fd;
	int env;	/* the server is rank 0 (env backend) */
	int dead;	/* 0, or why the connection is gone */
	int io_ms;	/* limit for sending one frame */
	uint32_t round; /* the next round */
	struct rcx__boot_rx rx;
	/* failure notices not taken by poll_failed yet; each rank once */
	int *q;
	int qh, qn;
	uint8_t *seen;
};

static struct client *to_client(struct rcx__boot *b)
{
	return (struct client *)((char *)b - offsetof(struct client, b));
}

static void note_failed(struct client *c, uint32_t rank)
{
	if (rank >= (uint32_t)c->b.size || c->seen[rank])
		return;
	c->seen[rank] = 1;
	c->q[(c->qh + c->qn++) % c->b.size] = (int)rank;
}

static void conn_lost(struct client *c, int err)
{
	if (c->dead)
		return;
	c->dead = err;
	/* in the env backend the server is rank 0: losing it is its failure */
	if (c->env && err == -ECONNRESET)
		note_failed(c, 0);
}

/* What a collective returns once the connection is gone. */
static int lost_err(struct client *c)
{
	if (!c->env || (c->dead != -ECONNRESET && c->dead != -ESHUTDOWN))
		return c->dead;
	/* rank 0 died, or left and so will not join this round */
	note_failed(c, 0);
	return RCX_ERR_PROC_FAILED;
}

/* A frame that is not the answer being waited for. */
static void on_notice(struct client *c, const struct rcx__boot_frame *f)
{
	if (f->type == RCX__BOOT_FAILED)
		note_failed(c, f->rank);
	else if (f->type == RCX__BOOT_ABORT)
		conn_lost(c, f->status == RCX__BOOT_OK ? -ESHUTDOWN
						       : -ECONNABORTED);
	else
		conn_lost(c, -EPROTO);
}

static void rx_error(struct client *c, int err)
{
	conn_lost(c, err == -EPROTO || err == -ENOMEM ? err : -ECONNRESET);
}

/* Take every frame already there (notices only, outside a round). */
static void drain(struct client *c)
{
	struct rcx__boot_frame f;
	int ret;

	while (!c->dead) {
		ret = rcx__boot_rx_next(c->fd, &c->rx, &f);
		if (!ret)
			return;
		if (ret < 0)
			rx_error(c, ret);
		else
			on_notice(c, &f);
	}
}

static int client_allgather(struct rcx__boot *b, const void *in, size_t len,
			    void *out)
{
	struct client *c = to_client(b);
	struct rcx__boot_frame f = {
		.type = RCX__BOOT_GATHER,
		.rank = b->rank,
		.round = c->round,
		.len = (uint32_t)len,
		.payload = in,
	};
	int ret;

	if (len && (!in || !out))
		return -EINVAL;
	if (c->dead)
		return lost_err(c);
	/* still a collective: the server tells every rank it was too big */
	if ((uint64_t)len * b->size > RCX__BOOT_MAX_PAYLOAD) {
		f.status = RCX__BOOT_TOOBIG;
		f.len = 0;
		f.payload = NULL;
	}
	ret = rcx__boot_send(c->fd, &f, c->io_ms);
	if (ret) {
		/* the server may have said why it went away */
		drain(c);
		conn_lost(c, -ECONNRESET);
		return lost_err(c);
	}
	c->round++;
	while (!c->dead) {
		ret = rcx__boot_recv(c->fd, &c->rx, &f, -1);
		if (ret) {
			rx_error(c, ret);
			break;
		}
		if (f.type != RCX__BOOT_GATHER_ALL) {
			on_notice(c, &f);
			continue;
		}
		if (f.round != c->round - 1 ||
		    (f.status == RCX__BOOT_OK && f.len != len * b->size)) {
			conn_lost(c, -EPROTO);
			break;
		}
		if (f.len)
			memcpy(out, f.payload, f.len);
		return rcx__boot_status_err(f.status);
	}
	return lost_err(c);
}

static int client_barrier(struct rcx__boot *b)
{
	return client_allgather(b, NULL, 0, NULL);
}

static int client_event_fd(struct rcx__boot *b)
{
	return to_client(b)->fd;
}

static int client_poll_failed(struct rcx__boot *b, int *rank)
{
	struct client *c = to_client(b);

	drain(c);
	if (c->qn) {
		*rank = c->q[c->qh];
		c->qh = (c->qh + 1) % b->size;
		c->qn--;
		return 1;
	}
	return c->dead;
}

static int client_declare_failed(struct rcx__boot *b, int rank)
{
	struct client *c = to_client(b);
	struct rcx__boot_frame f = {
		.type = RCX__BOOT_DECLARE,
		.rank = (uint32_t)rank,
	};
	int ret;

	if (rank < 0 || rank >= b->size)
		return -EINVAL;
	if (c->dead)
		return c->dead;
	ret = rcx__boot_send(c->fd, &f, c->io_ms);
	if (ret)
		conn_lost(c, ret);
	return ret;
}

static void client_fini(struct rcx__boot *b)
{
	struct client *c = to_client(b);

	close(c->fd);
	rcx__boot_rx_free(&c->rx);
	free(c->q);
	free(c->seen);
	free(c);
}

static const struct rcx__boot_ops local_ops = {
	.name = "local",
	.allgather = client_allgather,
	.barrier = client_barrier,
	.event_fd = client_event_fd,
	.poll_failed = client_poll_failed,
	.declare_failed = client_declare_failed,
	.fini = client_fini,
};

static const struct rcx__boot_ops env_ops = {
	.name = "env",
	.allgather = client_allgather,
	.barrier = client_barrier,
	.event_fd = client_event_fd,
	.poll_failed = client_poll_failed,
	.declare_failed = client_declare_failed,
	.fini = client_fini,
};

static void put_be(uint8_t *p, uint64_t v, int n)
{
	while (n--) {
		p[n] = v & 0xff;
		v >>= 8;
	}
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

/* HELLO and its answer: the server's jobid into *jobid. */
static int client_join(struct client *c, uint64_t *jobid, int timeout_ms)
{
	uint8_t pl[RCX__BOOT_HELLO_LEN];
	struct rcx__boot_frame f = {
		.type = RCX__BOOT_HELLO,
		.rank = c->b.rank,
		.len = sizeof(pl),
		.payload = pl,
	};
	long long end = rcx__boot_now_ms() + timeout_ms;
	uint64_t got;
	int ret;

	put_be(pl, *jobid, 8);
	put_be(pl + 8, (uint64_t)c->b.size, 4);
	ret = rcx__boot_send(c->fd, &f, timeout_ms);
	if (ret)
		return ret == -ETIMEDOUT ? ret : -ECONNREFUSED;
	ret = rcx__boot_recv(c->fd, &c->rx, &f, rcx__boot_left_ms(end));
	if (ret == -ECONNRESET)
		return -ECONNREFUSED;
	if (ret)
		return ret;
	if (f.type == RCX__BOOT_ABORT)
		return f.status == RCX__BOOT_PROTOCOL ? -EPROTO : -ECONNREFUSED;
	if (f.type != RCX__BOOT_HELLO || f.rank != (uint32_t)c->b.rank)
		return -EPROTO;
	got = get_be(f.payload, 8);
	if (get_be((const uint8_t *)f.payload + 8, 4) != (uint64_t)c->b.size ||
	    (*jobid && got != *jobid))
		return -EPROTO;
	*jobid = got;
	return 0;
}

int rcx__boot_client_open(int fd, int rank, int size, uint64_t jobid, int env,
			  int timeout_ms, struct rcx__boot **out)
{
	struct client *c;
	int ret;

	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->env = env;
	c->io_ms = rcx__boot_timeout_ms();
	c->b.ops = env ? &env_ops : &local_ops;
	c->b.rank = rank;
	c->b.size = size;
	rcx__boot_rx_init(&c->rx);
	c->q = calloc((size_t)size, sizeof(*c->q));
	c->seen = calloc((size_t)size, 1);
	if (!c->q || !c->seen) {
		ret = -ENOMEM;
		goto err;
	}
	ret = rcx__boot_set_nonblock(fd);
	if (ret)
		goto err;
	ret = client_join(c, &jobid, timeout_ms);
	if (ret)
		goto err;
	c->b.jobid = jobid;
	*out = &c->b;
	return 0;

err:
	client_fini(&c->b);
	return ret;
}

static int local_connect(const char *path, int timeout_ms, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	long long end = rcx__boot_now_ms() + timeout_ms;
	int fd = -1, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -EPROTO;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* a full backlog is EAGAIN on a non-blocking unix socket: retry */
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		if (ret == -EINTR)
			continue;
		if (ret != -EAGAIN) {
			close(fd);
			if (ret == -ENOENT || ret == -ECONNREFUSED)
				return -ECONNREFUSED;
			return ret;
		}
		if (!rcx__boot_left_ms(end)) {
			close(fd);
			return -ETIMEDOUT;
		}
		usleep(5000);
	}
	*out = fd;
	return 0;
}

int rcx__boot_local_open(struct rcx__boot **out)
{
	const char *path = getenv("RCX_RUN_SOCK");
	int tmo = rcx__boot_timeout_ms();
	long long end = rcx__boot_now_ms() + tmo;
	uint64_t jobid;
	long rank, size;
	int fd = -1, ret;

	if (!path || !*path ||
	    rcx__boot_env_int("RCX_SIZE", 1, RCX__BOOT_MAX_SIZE, &size) ||
	    rcx__boot_env_int("RCX_RANK", 0, size - 1, &rank) ||
	    rcx__boot_env_jobid(&jobid))
		return -EPROTO;
	ret = local_connect(path, tmo, &fd);
	if (ret)
		return ret;
	return rcx__boot_client_open(fd, (int)rank, (int)size, jobid, 0,
				     rcx__boot_left_ms(end), out);
}
