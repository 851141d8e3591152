/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_LAUNCH_H
#define RCX_LAUNCH_H

/*
 * Checks for the programs that launchers start (launch_boot, launch_check):
 * the first failed check ends the rank with status 1 and a message naming
 * the rank and the line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <rcx/errors.h>

/* this process's rank in messages; -1 until known */
static int launch_rank = -1;

static void launch_fail(int line, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

static void launch_fail(int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "rank %d, line %d: ", launch_rank, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* CHECK(cond, fmt, ...): fail with the message unless cond holds. */
#define CHECK(cond, ...)                                    \
	do {                                                \
		if (!(cond))                                \
			launch_fail(__LINE__, __VA_ARGS__); \
	} while (0)

/* CHECK_OK(call): fail with rcx's name for the error unless call gives 0. */
#define CHECK_OK(call)                                         \
	do {                                                   \
		int ret_ = (call);                             \
		if (ret_)                                      \
			launch_fail(__LINE__, "%s: %s", #call, \
				    rcx_strerror(ret_));       \
	} while (0)

#endif
