/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Window queries: its group, the info keys in force, its name
 * (MPI_Win_get_group, MPI_Win_get_info, MPI_Win_set_name/get_name).
 * Local: none of them communicates. And what an operation to
 * RCX_PROC_NULL comes to.
 */
#include <errno.h>
#include <string.h>
#include "lib/win/win_int.h"

static int bad(const char *fn, const char *what)
{
	rcx__log(RCX__LOG_ERROR, "win", "%s: %s", fn, what);
	return -EINVAL;
}

RCX_API int rcx_win_get_group(struct rcx_win *win, struct rcx_group **group)
{
	if (!rcx__win_live(win))
		return bad(__func__, "not a live window");
	if (!group)
		return bad(__func__, "group NULL");
	rcx__lock(win->ctx);
	rcx__group_user_hold(win->g);
	*group = win->g;
	rcx__unlock(win->ctx);
	return 0;
}

RCX_API int rcx_win_get_info(struct rcx_win *win, struct rcx_info **info)
{
	struct rcx_info *i = NULL;
	int ret;

	if (!rcx__win_live(win))
		return bad(__func__, "not a live window");
	if (!info)
		return bad(__func__, "info NULL");
	ret = rcx_info_create(&i);
	if (!ret)
		ret = rcx_info_set(i, RCX_ORDER_SCOPE,
				   win->scope_process ? "process" : "thread");
	if (!ret)
		ret = rcx_info_set(i, RCX_ACC_ORDERING,
				   win->acc_order ? "rar,raw,war,waw" : "none");
	if (!ret)
		ret = rcx_info_set(i, RCX_ACCUMULATE_NIC,
				   win->nic_acc ? "true" : "false");
	if (ret) {
		if (i)
			rcx_info_free(&i);
		return ret;
	}
	*info = i;
	return 0;
}

RCX_API int rcx_win_set_name(struct rcx_win *win, const char *name)
{
	size_t n;

	if (!rcx__win_live(win))
		return bad(__func__, "not a live window");
	if (!name)
		return bad(__func__, "name NULL");
	n = strnlen(name, RCX_MAX_OBJECT_NAME - 1);
	rcx__lock(win->ctx);
	memcpy(win->name, name, n);
	win->name[n] = '\0';
	rcx__unlock(win->ctx);
	return 0;
}

RCX_API int rcx_win_get_name(struct rcx_win *win, char *name, int *len)
{
	size_t n;

	if (!rcx__win_live(win))
		return bad(__func__, "not a live window");
	if (!name || !len)
		return bad(__func__, "name or len NULL");
	rcx__lock(win->ctx);
	n = strlen(win->name);
	memcpy(name, win->name, n + 1);
	rcx__unlock(win->ctx);
	*len = (int)n;
	return 0;
}

int rcx__win_null(struct rcx_win *w, struct rcx_req **req)
{
	struct rcx_req *r;

	if (!req)
		return 0;
	r = rcx__win_req_new(w);
	if (!r)
		return -ENOMEM;
	r->status.source = RCX_PROC_NULL;
	return rcx__win_req_finish(r, 0, req);
}
