/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_LIB_LOG_H
#define RCX_LIB_LOG_H

/*
 * Log lines (lib/log/README.md): RCX_LOG_LEVEL, RCX_LOG_FILE. The lowest
 * layer: every file of lib/ may include this, it includes nothing of lib/.
 */
#include <stdbool.h>

enum rcx__log_lvl {
	RCX__LOG_ERROR,
	RCX__LOG_WARN,
	RCX__LOG_INFO,
	RCX__LOG_DEBUG,
	RCX__LOG_TRACE,
};
extern int rcx__log_level;
/* one line: "rcx TIME HOST pid PID rank R SUBSYS LEVEL: message" */
void rcx__log(int level, const char *subsys, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* a line at level, when the level is on (one compare when it is not) */
#define RCX__LOG(level, subsys, ...)                                \
	do {                                                        \
		if (__builtin_expect((level) <= rcx__log_level, 0)) \
			rcx__log(level, subsys, __VA_ARGS__);       \
	} while (0)
/* "error" ... "trace": the level, or -EINVAL */
int rcx__log_parse_level(const char *s);
/* the level and file pattern (%p pid, %r rank; "" stderr) from now on */
int rcx__log_setup(const char *level, const char *file);
/* the file name of pattern pat: %p the pid, %r the rank ("-" unknown) */
void rcx__log_expand(char *out, size_t len, const char *pat);
/* lines name this rank from now on (the world's) */
void rcx__log_set_rank(int rank);

#endif
