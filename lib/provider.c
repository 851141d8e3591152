/* SPDX-License-Identifier: BSD-2-Clause */
/* Provider registry and the typed stubs for ops a provider lacks. */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include "../providers/provider.h"

#ifdef RCX_HAVE_VERBS
extern const struct rcx_provider_ops rcx__verbs_ops;
#endif
extern const struct rcx_provider_ops rcx__fault_ops; /* records WRs */
extern const struct rcx_provider_ops rcx__shm_ops;   /* same host */

const struct rcx_provider_ops *const rcx__providers[] = {
#ifdef RCX_HAVE_VERBS
	&rcx__verbs_ops,
#endif
	&rcx__fault_ops,
	&rcx__shm_ops,
	NULL,
};

const struct rcx_provider_ops *rcx__provider_find(const char *name)
{
	const struct rcx_provider_ops *const *p;

	for (p = rcx__providers; *p; p++)
		if (!name || !strcmp((*p)->name, name))
			return *p;
	return NULL;
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
