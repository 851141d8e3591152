/* SPDX-License-Identifier: BSD-2-Clause */
/* A header the man check must reject: see man/CMakeLists.txt. */
#ifndef RCX_THIN_H
#define RCX_THIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Thin: blocking.
 * Errors: -EINVAL x is negative.
 */
RCX_API int rcx_thin_one(int x);

/*
 * Copy len bytes of in to out. Neither buffer is kept after the call,
 * which never blocks; out must not overlap in.
 * Errors: -EINVAL in or out NULL with len > 0; -ENOMEM.
 */
RCX_API int rcx_thin_two(const void *in, size_t len, void *out);

#ifdef __cplusplus
}
#endif

#endif
