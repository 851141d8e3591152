/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_INFO_H
#define RCX_INFO_H

#include <stddef.h>
#include <rcx/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Key/value hints, like MPI_Info: the proposals' info keys (channel
 * protocol and circular buffers, continuation behaviour, window order
 * scope) are passed this way. Calls that take an info ignore keys they do
 * not know and reject malformed values of keys they do know (-EINVAL).
 * An info may be NULL wherever one is taken: all defaults. A handle that
 * is not an info (freed, or not made by rcx_info_create) is refused with
 * -EINVAL by every call that takes one.
 */
struct rcx_info;

#define RCX_INFO_KEY_MAX 63
#define RCX_INFO_VAL_MAX 255

/* Errors: -EINVAL out is NULL; -ENOMEM. */
RCX_API int rcx_info_create(struct rcx_info **out);

/*
 * Set (or replace) key. Errors: -EINVAL NULL argument, empty key, key
 * longer than RCX_INFO_KEY_MAX or value longer than RCX_INFO_VAL_MAX;
 * -ENOMEM.
 */
RCX_API int rcx_info_set(struct rcx_info *info, const char *key,
			 const char *value);

/*
 * Copy the value of key into value (len bytes). *flag = 1 if the key is
 * set, 0 if not (value untouched). Errors: -EINVAL NULL argument;
 * -ENAMETOOLONG the value does not fit (nothing written).
 */
RCX_API int rcx_info_get(const struct rcx_info *info, const char *key,
			 char *value, size_t len, int *flag);

/* Remove key. Errors: -EINVAL NULL argument; -ENOENT not set. */
RCX_API int rcx_info_delete(struct rcx_info *info, const char *key);

/* Free the info; *info = NULL. Errors: -EINVAL. */
RCX_API int rcx_info_free(struct rcx_info **info);

#ifdef __cplusplus
}
#endif

#endif
