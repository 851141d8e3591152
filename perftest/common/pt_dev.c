/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the header says about this end: the provider and device from the
 * options and the public API (rcx_ctx_device, rcx_ctx_address); for an
 * RDMA device, the port, link layer, GID and MTU from sysfs (the port and
 * GID that hold the address's IP, which is what rdma_cm uses), and the
 * queue pair numbers from the kernel's RDMA netlink resource dump (what
 * `rdma resource show qp` prints). No verbs call: the tools stay above
 * the library. What rcx_group_peer_info gives (queue pairs, path MTU,
 * inline size granted, the provider that carries the connection) is
 * taken from it instead.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#if __has_include(<rdma/rdma_netlink.h>)
#include <rdma/rdma_netlink.h>
#define HAVE_RDMA_NETLINK 1
#endif
#include "pt.h"

static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return -1;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* the IPv4 address of an rcx address: "ip:port", or auto's last field */
static int addr_ip(const char *addr, struct in_addr *ip)
{
	char buf[64];
	const char *p = strrchr(addr, ';');
	size_t n;

	p = p ? p + 1 : addr;
	n = strcspn(p, ":");
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, p, n);
	buf[n] = 0;
	return inet_pton(AF_INET, buf, ip) == 1 ? 0 : -1;
}

/* sysfs's "0000:...:ffff:a9fe:2c01" as 16 bytes */
static int gid_parse(const char *s, uint8_t *gid)
{
	unsigned g[8];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x:%x:%x", &g[0], &g[1], &g[2], &g[3],
		   &g[4], &g[5], &g[6], &g[7]) != 8)
		return -1;
	for (i = 0; i < 8; i++) {
		gid[2 * i] = (uint8_t)(g[i] >> 8);
		gid[2 * i + 1] = (uint8_t)g[i];
	}
	return 0;
}

/*
 * The path MTU rdma_cm takes on RoCE: the largest IB MTU that fits in the
 * netdev's MTU less the RoCE headers (the kernel's iboe_get_mtu).
 */
static int roce_mtu(int ndev_mtu)
{
	int m;

	for (m = 4096; m >= 256; m /= 2)
		if (m <= ndev_mtu - 96)
			return m;
	return 0;
}

/* the port and GID index whose GID is ip's IPv4-mapped address */
static int find_gid(struct pt_facts *f, struct in_addr ip)
{
	char path[256], val[64];
	uint8_t want[16] = { [10] = 0xff, [11] = 0xff }, gid[16];
	int port, i;

	memcpy(&want[12], &ip, 4);
	for (port = 1; port <= 2; port++) {
		for (i = 0; i < 256; i++) {
			snprintf(path, sizeof(path),
				 "/sys/class/infiniband/%s/ports/%d/gids/%d",
				 f->device, port, i);
			if (read_line(path, val, sizeof(val)))
				break;
			if (gid_parse(val, gid) || memcmp(gid, want, 16))
				continue;
			f->port = port;
			f->gid_index = i;
			memcpy(f->gid, gid, 16);
			return 0;
		}
	}
	return -1;
}

static void port_facts(struct pt_facts *f)
{
	char path[256], val[64];
	struct in_addr ip;

	if (addr_ip(f->addr, &ip) || find_gid(f, ip))
		return;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/",
		 f->device, f->port);
	if (!read_line(strcat(path, "link_layer"), val, sizeof(val)))
		snprintf(f->link, sizeof(f->link), "%.15s", val);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%d",
		 f->device, f->port, f->gid_index);
	if (!read_line(path, val, sizeof(val)))
		snprintf(f->gid_type, sizeof(f->gid_type), "%.15s", val);
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%d",
		 f->device, f->port, f->gid_index);
	if (read_line(path, f->ndev, sizeof(f->ndev)))
		return;
	snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", f->ndev);
	if (!read_line(path, val, sizeof(val)))
		f->mtu = roce_mtu(atoi(val));
}

#ifdef HAVE_RDMA_NETLINK
/* the attributes of a netlink attribute stream, by type (up to max) */
static void nl_attrs(void *p, size_t len, struct nlattr **tb, int max)
{
	struct nlattr *a = p;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	while (len >= sizeof(*a) && a->nla_len >= sizeof(*a) &&
	       a->nla_len <= len) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type <= max)
			tb[type] = a;
		len -= (size_t)NLA_ALIGN(a->nla_len) < len
			       ? (size_t)NLA_ALIGN(a->nla_len)
			       : len;
		a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len));
	}
}

static uint32_t nl_u32(const struct nlattr *a)
{
	uint32_t v;

	memcpy(&v, (const char *)a + NLA_HDRLEN, sizeof(v));
	return v;
}

static uint8_t nl_u8(const struct nlattr *a)
{
	return *((const uint8_t *)a + NLA_HDRLEN);
}

#define NL_MAX RDMA_NLDEV_ATTR_RES_PID

/* the RC queue pairs of this process in one message of the dump */
static void nl_qps(struct pt_facts *f, struct nlmsghdr *h, int *n)
{
	struct nlattr *tb[NL_MAX + 1], *e;
	size_t len;

	nl_attrs(NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN, tb, NL_MAX);
	if (!tb[RDMA_NLDEV_ATTR_DEV_NAME] || !tb[RDMA_NLDEV_ATTR_RES_QP] ||
	    strcmp((char *)tb[RDMA_NLDEV_ATTR_DEV_NAME] + NLA_HDRLEN,
		   f->device))
		return;
	e = (struct nlattr *)((char *)tb[RDMA_NLDEV_ATTR_RES_QP] + NLA_HDRLEN);
	len = tb[RDMA_NLDEV_ATTR_RES_QP]->nla_len - NLA_HDRLEN;
	while (len >= NLA_HDRLEN && e->nla_len >= NLA_HDRLEN &&
	       e->nla_len <= len) {
		struct nlattr *q[NL_MAX + 1];

		nl_attrs((char *)e + NLA_HDRLEN, e->nla_len - NLA_HDRLEN, q,
			 NL_MAX);
		if (q[RDMA_NLDEV_ATTR_RES_PID] && q[RDMA_NLDEV_ATTR_RES_LQPN] &&
		    nl_u32(q[RDMA_NLDEV_ATTR_RES_PID]) == (uint32_t)getpid() &&
		    q[RDMA_NLDEV_ATTR_RES_TYPE] &&
		    nl_u8(q[RDMA_NLDEV_ATTR_RES_TYPE]) == 2 /* RC */) {
			f->qpn = nl_u32(q[RDMA_NLDEV_ATTR_RES_LQPN]);
			f->rqpn = q[RDMA_NLDEV_ATTR_RES_RQPN]
					  ? nl_u32(q[RDMA_NLDEV_ATTR_RES_RQPN])
					  : 0;
			++*n;
		}
		len -= (size_t)NLA_ALIGN(e->nla_len) < len
			       ? (size_t)NLA_ALIGN(e->nla_len)
			       : len;
		e = (struct nlattr *)((char *)e + NLA_ALIGN(e->nla_len));
	}
}

/*
 * One device's queue pairs (the kernel dumps resources per device index,
 * which sysfs does not show: the caller tries the indexes in turn). -1
 * when there is no such index.
 */
static int dump_qps(int fd, uint32_t index, struct pt_facts *f, int *n)
{
	struct {
		struct nlmsghdr h;
		struct nlattr a;
		uint32_t index;
	} req = {
		.h = { .nlmsg_len = sizeof(req),
		       .nlmsg_type = RDMA_NL_GET_TYPE(
			       RDMA_NL_NLDEV, RDMA_NLDEV_CMD_RES_QP_GET),
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		       .nlmsg_seq = index + 1 },
		.a = { .nla_len = NLA_HDRLEN + sizeof(uint32_t),
		       .nla_type = RDMA_NLDEV_ATTR_DEV_INDEX },
		.index = index,
	};
	static char buf[65536] __attribute__((aligned(8)));
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	struct nlmsghdr *h;
	ssize_t len;

	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa,
		   sizeof(sa)) < 0)
		return -1;
	while ((len = recv(fd, buf, sizeof(buf), 0)) > 0) {
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR)
				return -1;
			nl_qps(f, h, n);
		}
	}
	return -1;
}

/* this process's queue pair on the device, when it has exactly one */
static void qp_numbers(struct pt_facts *f)
{
	uint32_t i;
	int fd, n = 0;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return;
	/* device indexes grow as devices come and go: try the first 64 */
	for (i = 0; i < 64; i++)
		dump_qps(fd, i, f, &n);
	close(fd);
	if (n != 1)
		f->qpn = f->rqpn = 0;
}
#else
static void qp_numbers(struct pt_facts *f)
{
}
#endif

void pt_facts_get(const struct pt_opts *o, struct rcx_ctx *ctx,
		  const struct rcx_peer_info *pi, struct pt_facts *f)
{
	const char *inl = getenv("RCX_INLINE");

	memset(f, 0, sizeof(*f));
	snprintf(f->provider, sizeof(f->provider), "%s", o->provider);
	if (rcx_ctx_device(ctx, f->device, sizeof(f->device)))
		snprintf(f->device, sizeof(f->device), "?");
	if (rcx_ctx_address(ctx, f->addr, sizeof(f->addr)))
		f->addr[0] = 0;
	f->inline_size = inl && *inl ? atoi(inl) : 64;
	f->gid_index = -1;
	if (pi) {
		snprintf(f->via, sizeof(f->via), "%s", pi->provider);
		f->inline_size = (int)pi->max_inline;
	}
	if (!strcmp(f->device, "shm") || (pi && !pi->local_qpn))
		return;
	port_facts(f);
	if (!pi) {
		qp_numbers(f);
		return;
	}
	f->qpn = pi->local_qpn;
	f->rqpn = pi->remote_qpn;
	f->mtu = (int)pi->path_mtu;
}
