/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The "env" backend: RCX_RANK, RCX_SIZE and RCX_ROOT=host:port (and
 * optionally RCX_JOBID). Rank 0 listens on RCX_ROOT and runs the gather
 * server inside its own process; the server only moves while rank 0 is in
 * a bootstrap call (open waits for every rank to join). The other ranks
 * connect over TCP, retrying until RCX_BOOT_TIMEOUT_MS.
 */
#include <errno.h>
#include <stdbool.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "lib/boot/boot_wire.h"
#include "lib/log/log.h"

#define ROOT_BACKLOG_EXTRA 8
#define RETRY_MIN_MS	   10
#define RETRY_MAX_MS	   250

struct env_root {
	struct rcx__boot b;
	struct rcx__boot_srv *srv;
};

static struct env_root *to_root(struct rcx__boot *b)
{
	return (struct env_root *)((char *)b - offsetof(struct env_root, b));
}

static int root_allgather(struct rcx__boot *b, const void *in, size_t len,
			  void *out)
{
	if (len && (!in || !out))
		return -EINVAL;
	return rcx__boot_srv_self_gather(to_root(b)->srv, in, len, out);
}

static int root_barrier(struct rcx__boot *b)
{
	return rcx__boot_srv_self_gather(to_root(b)->srv, NULL, 0, NULL);
}

static int root_event_fd(struct rcx__boot *b)
{
	return rcx__boot_srv_fd(to_root(b)->srv);
}

static int root_poll_failed(struct rcx__boot *b, int *rank)
{
	struct rcx__boot_srv *s = to_root(b)->srv;
	int ret = rcx__boot_srv_run(s, 0);

	if (ret)
		return ret;
	return rcx__boot_srv_self_failed(s, rank);
}

static int root_declare_failed(struct rcx__boot *b, int rank)
{
	rcx__boot_srv_self_declare(to_root(b)->srv, rank);
	return 0;
}

static void root_fini(struct rcx__boot *b)
{
	struct env_root *r = to_root(b);

	rcx__boot_srv_close(r->srv);
	free(r);
}

static const struct rcx__boot_ops root_ops = {
	.name = "env",
	.allgather = root_allgather,
	.barrier = root_barrier,
	.event_fd = root_event_fd,
	.poll_failed = root_poll_failed,
	.declare_failed = root_declare_failed,
	.fini = root_fini,
};

/* "host:port" or "[v6addr]:port" */
static int parse_root(const char *root, char *host, size_t hlen, char *port,
		      size_t plen)
{
	const char *colon = strrchr(root, ':');
	size_t n;
	long p;
	char *end;

	if (!colon || colon == root || !colon[1])
		return -EPROTO;
	n = (size_t)(colon - root);
	if (root[0] == '[' && colon[-1] == ']') {
		root++;
		n -= 2;
	}
	p = strtol(colon + 1, &end, 10);
	if (!n || n >= hlen || *end || p < 1 || p > 65535 ||
	    strlen(colon + 1) >= plen)
		return -EPROTO;
	memcpy(host, root, n);
	host[n] = 0;
	strcpy(port, colon + 1);
	return 0;
}

static int resolve(const char *root, struct addrinfo **out)
{
	struct addrinfo hints = {
		.ai_family = AF_UNSPEC,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_NUMERICSERV,
	};
	char host[256], port[8];
	int ret;

	ret = parse_root(root, host, sizeof(host), port, sizeof(port));
	if (ret) {
		rcx__log(RCX__LOG_ERROR, "boot",
			 "RCX_ROOT=%s is not host:port (port 1-65535; an IPv6 "
			 "host in brackets)",
			 root);
		return ret;
	}
	ret = getaddrinfo(host, port, &hints, out);
	if (ret) {
		rcx__log(RCX__LOG_ERROR, "boot",
			 "RCX_ROOT=%s: cannot resolve %s (%s)", root, host,
			 gai_strerror(ret));
		return ret == EAI_MEMORY ? -ENOMEM : -EPROTO;
	}
	return 0;
}

/*
 * The address rank 0 binds: RCX_ROOT's own when it is a loopback one (a
 * job on one host), else the wildcard of its family, since a host name
 * may resolve to another address locally than on the other nodes.
 */
static void bind_addr(const struct addrinfo *ai, struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	if (ai->ai_family == AF_INET &&
	    (ntohl(in4->sin_addr.s_addr) >> 24) != 127)
		in4->sin_addr.s_addr = htonl(INADDR_ANY);
	else if (ai->ai_family == AF_INET6 &&
		 !IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
		in6->sin6_addr = in6addr_any;
}

static int root_listen(const struct addrinfo *ai, int size, int *out)
{
	struct sockaddr_storage ss;
	int fd, one = 1, ret = -EADDRNOTAVAIL;

	for (; ai; ai = ai->ai_next) {
		if (ai->ai_addrlen > sizeof(ss))
			continue;
		fd = socket(ai->ai_family,
			    ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			ret = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		bind_addr(ai, &ss);
		if (!bind(fd, (struct sockaddr *)&ss, ai->ai_addrlen) &&
		    !listen(fd, size + ROOT_BACKLOG_EXTRA)) {
			*out = fd;
			return 0;
		}
		ret = -errno;
		close(fd);
	}
	return ret;
}

static int root_open(const struct addrinfo *ai, int size, uint64_t jobid,
		     int timeout_ms, struct rcx__boot **out)
{
	long long end = rcx__boot_now_ms() + timeout_ms;
	struct env_root *r;
	int lfd = -1, ret;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ret = root_listen(ai, size, &lfd);
	if (ret)
		goto err_free;
	ret = rcx__boot_srv_open(lfd, size, jobid, 0, &r->srv);
	if (ret) {
		close(lfd);
		goto err_free;
	}
	while (rcx__boot_srv_joined(r->srv) < size) {
		if (!rcx__boot_left_ms(end)) {
			ret = -ETIMEDOUT;
			goto err_srv;
		}
		ret = rcx__boot_srv_run(r->srv, rcx__boot_left_ms(end));
		if (ret)
			goto err_srv;
	}
	r->b.ops = &root_ops;
	r->b.rank = 0;
	r->b.size = size;
	r->b.jobid = jobid;
	*out = &r->b;
	return 0;

err_srv:
	rcx__boot_srv_close(r->srv);
err_free:
	free(r);
	return ret;
}

/* One attempt on one address, bounded by timeout_ms: 0 and *out, -errno. */
static int try_connect(const struct addrinfo *ai, int timeout_ms, int *out)
{
	socklen_t sl = sizeof(int);
	int fd, err = 0, ret;

	fd = socket(ai->ai_family,
		    ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) && errno != EINPROGRESS) {
		ret = -errno;
		goto err;
	}
	ret = rcx__boot_poll1(fd, POLLOUT, timeout_ms);
	if (ret <= 0) {
		ret = ret ? ret : -ETIMEDOUT;
		goto err;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) || err) {
		ret = err ? -err : -errno;
		goto err;
	}
	*out = fd;
	return 0;

err:
	close(fd);
	return ret;
}

/* Rank 0 may not listen yet: retry with backoff until the deadline. */
static int leaf_connect(const char *root, const struct addrinfo *res,
			long long end, int tmo, int *out)
{
	const struct addrinfo *ai;
	int wait_ms = RETRY_MIN_MS, left, ret = -ETIMEDOUT;
	bool told = false;

	for (;;) {
		for (ai = res; ai; ai = ai->ai_next) {
			left = rcx__boot_left_ms(end);
			ret = try_connect(ai, left < 1000 ? left : 1000, out);
			if (!ret)
				return 0;
		}
		left = rcx__boot_left_ms(end);
		/* said at once, so the wait is not silent, and at the end */
		if (!told && left)
			rcx__log(RCX__LOG_WARN, "boot",
				 "cannot reach rank 0 at RCX_ROOT=%s (%s); "
				 "trying again for up to %d ms "
				 "(RCX_BOOT_TIMEOUT_MS)",
				 root, strerror(-ret), tmo);
		else if (!left)
			rcx__log(RCX__LOG_ERROR, "boot",
				 "cannot reach rank 0 at RCX_ROOT=%s (%s) in "
				 "%d ms (RCX_BOOT_TIMEOUT_MS)",
				 root, strerror(-ret), tmo);
		told = true;
		if (!left)
			return ret == -ECONNREFUSED ? ret : -ETIMEDOUT;
		usleep(1000 * (unsigned int)(wait_ms < left ? wait_ms : left));
		wait_ms =
			wait_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : wait_ms * 2;
	}
}

int rcx__boot_env_open(struct rcx__boot **out)
{
	const char *root = getenv("RCX_ROOT");
	int tmo = rcx__boot_timeout_ms();
	long long end = rcx__boot_now_ms() + tmo;
	struct addrinfo *ai;
	uint64_t jobid;
	long rank, size;
	int fd = -1, ret;

	if (!root ||
	    rcx__boot_env_int("RCX_SIZE", 1, RCX__BOOT_MAX_SIZE, &size) ||
	    rcx__boot_env_int("RCX_RANK", 0, size - 1, &rank) ||
	    rcx__boot_env_jobid(&jobid)) {
		rcx__log(RCX__LOG_ERROR, "boot",
			 "the env bootstrap needs RCX_ROOT=host:port, "
			 "RCX_SIZE=1-%d and RCX_RANK=0-(RCX_SIZE-1) "
			 "(RCX_ROOT=%s "
			 "RCX_SIZE=%s RCX_RANK=%s RCX_JOBID=%s)",
			 RCX__BOOT_MAX_SIZE, root ? root : "(unset)",
			 getenv("RCX_SIZE") ? getenv("RCX_SIZE") : "(unset)",
			 getenv("RCX_RANK") ? getenv("RCX_RANK") : "(unset)",
			 getenv("RCX_JOBID") ? getenv("RCX_JOBID") : "(unset)");
		return -EPROTO;
	}
	ret = resolve(root, &ai);
	if (ret)
		return ret;
	if (rank == 0) {
		if (!jobid)
			jobid = rcx__boot_random_jobid();
		ret = root_open(ai, (int)size, jobid, tmo, out);
	} else {
		ret = leaf_connect(root, ai, end, tmo, &fd);
		if (!ret)
			ret = rcx__boot_client_open(
				fd, (int)rank, (int)size, jobid, 1,
				rcx__boot_left_ms(end), out);
	}
	freeaddrinfo(ai);
	return ret;
}
