/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider registry and the typed stubs for ops a provider lacks. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include "lib/core/core.h"
#include "providers/provider.h"

#ifdef RCX_HAVE_VERBS
extern const struct rcx_provider_ops rcx__verbs_ops;
#endif
extern const struct rcx_provider_ops rcx__auto_ops;  /* shm or verbs */
extern const struct rcx_provider_ops rcx__fault_ops; /* records WRs */
extern const struct rcx_provider_ops rcx__shm_ops;   /* same host */

const struct rcx_provider_ops *const rcx__providers[] = {
#ifdef RCX_HAVE_VERBS
	&rcx__verbs_ops,
#endif
	&rcx__auto_ops,	 &rcx__fault_ops, &rcx__shm_ops, NULL,
};

const struct rcx_provider_ops *rcx__provider_find(const char *name)
{
	const struct rcx_provider_ops *const *p;

	for (p = rcx__providers; *p; p++)
		if (!name || !strcmp((*p)->name, name))
			return *p;
	return NULL;
}

void rcx__dev_log_missing(const struct rcx_provider_ops *ops, const char *name,
			  int asked)
{
	char names[8][64], list[8 * 66] = "";
	size_t at = 0;
	int n, i;

	n = ops->dev_list(names, 8);
	for (i = 0; i < n && at < sizeof(list); i++)
		at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%s",
				       i ? ", " : "", names[i]);
	rcx__log(RCX__LOG_ERROR, "ctx",
		 "device %s%s: not found by provider %s (devices: %s)", name,
		 asked ? " (RCX_DEVICE or rcx_ctx_attr.device)" : "", ops->name,
		 n > 0 ? list : "none");
}

int rcx__stub_listen(struct rcx_dev *dev, uint16_t port, char *addr,
		     size_t addr_len)
{
	return -EOPNOTSUPP;
}

int rcx__stub_ep_set_error(struct rcx_ep *ep)
{
	return -EOPNOTSUPP;
}

int rcx__stub_event_fd(struct rcx_dev *dev)
{
	return -EOPNOTSUPP;
}

int rcx__stub_dev(struct rcx_dev *dev)
{
	return -EOPNOTSUPP;
}

int rcx__epoll_add(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

int rcx__stub_peer_split(struct rcx_dev *dev, const char *addr)
{
	return -EOPNOTSUPP;
}

int rcx__stub_ep_query(const struct rcx_ep *ep, struct rcx_ep_info *info)
{
	return -EOPNOTSUPP;
}

int rcx__stub_mem_alloc(struct rcx_dev *dev, size_t len, void **out)
{
	return -EOPNOTSUPP;
}

int rcx__stub_mem_free(struct rcx_dev *dev, void *addr)
{
	return -ENOENT;
}

int rcx__stub_cq_poll(struct rcx_dev *dev, struct rcx_cqe *cqe, int n)
{
	return -EOPNOTSUPP;
}

int rcx__stub_ep_rma_now(struct rcx_ep *ep, const struct rcx_wr *wr)
{
	return -EOPNOTSUPP;
}

int rcx__stub_cq_dispatch(struct rcx_dev *dev, struct rcx_ctx *ctx)
{
	return -EOPNOTSUPP;
}

int rcx__stub_cq_peek(struct rcx_dev *dev, struct rcx_cq_peek *pk)
{
	return -EOPNOTSUPP;
}

int rcx__stub_pwr_direct(struct rcx_ep *ep, struct rcx_pwr *pwr, int recv,
			 struct rcx_pwr_direct *d)
{
	return -EOPNOTSUPP;
}

int rcx__stub_mr_reg_keyed(struct rcx_dev *dev, void *addr, size_t len,
			   unsigned int access, uint32_t lkey, uint32_t rkey,
			   struct rcx_mr **out)
{
	return -EOPNOTSUPP;
}

/* "a.b.c.d" or "a.b.c.d:port" (IPv4) or "[v6]:port" */
int rcx__ip_addr_parse(const char *s, struct sockaddr_storage *ss)
{
	char host[64], *colon;
	const char *port = NULL;
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV },
			*res;
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, n + 1);
	if (host[0] == '[') {
		colon = strchr(host, ']');
		if (!colon)
			return -EINVAL;
		*colon = 0;
		if (colon[1] == ':')
			port = colon + 2;
		else if (colon[1])
			return -EINVAL;
		memmove(host, host + 1, strlen(host + 1) + 1);
	} else if ((colon = strchr(host, ':')) && !strchr(colon + 1, ':')) {
		*colon = 0;
		port = colon + 1;
	}
	if (getaddrinfo(host, port, &hints, &res))
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}
