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

/*
 * Create an empty info object; *out is written on success only. The info
 * belongs to the caller, who frees it with rcx_info_free. Calls that take
 * an info read it during the call and keep nothing of it, so it may be
 * changed or freed as soon as they return. An info is not locked: do not
 * change it in one thread while another passes it to a call.
 * Errors: -EINVAL out is NULL; -ENOMEM the object could not be
 * allocated.
 */
RCX_API int rcx_info_create(struct rcx_info **out);

/*
 * Set key to value, replacing the value key had. Both strings are copied:
 * the caller keeps them. Keys are kept in the order they were first set.
 * Values are not checked here: a call that knows the key checks its value
 * when the info is passed to it.
 * Errors: -EINVAL info, key or value NULL, info not an info, key empty,
 * key longer than RCX_INFO_KEY_MAX or value longer than RCX_INFO_VAL_MAX
 * bytes (nothing changed); -ENOMEM no memory for a new key (nothing
 * changed).
 */
RCX_API int rcx_info_set(struct rcx_info *info, const char *key,
			 const char *value);

/*
 * Copy the value of key, with its terminating NUL, into value, a buffer
 * of len bytes (RCX_INFO_VAL_MAX + 1 always suffices). *flag = 1 if the
 * key is set, 0 if not (value untouched).
 * Errors: -EINVAL info, key, value or flag NULL, or info not an info;
 * -ENAMETOOLONG the value and its NUL do not fit in len bytes (nothing
 * written, *flag untouched).
 */
RCX_API int rcx_info_get(const struct rcx_info *info, const char *key,
			 char *value, size_t len, int *flag);

/*
 * Remove key and its value from info; a later rcx_info_get of it reports
 * it unset. Other keys keep their order.
 * Errors: -EINVAL info or key NULL, or info not an info; -ENOENT key is
 * not set (nothing changed).
 */
RCX_API int rcx_info_delete(struct rcx_info *info, const char *key);

/*
 * Free the info and every key and value in it, and set *info to NULL.
 * Objects made with the info (channels, windows, continuation requests)
 * are not affected: they kept what they read from it.
 * Errors: -EINVAL info or *info NULL, or *info not an info (already
 * freed).
 */
RCX_API int rcx_info_free(struct rcx_info **info);

#ifdef __cplusplus
}
#endif

#endif
