/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Log lines: RCX_LOG_LEVEL (error, warn, info, debug, trace; default warn)
 * and RCX_LOG_FILE (default stderr; %p is the pid, %r the rank). Each line
 * says when, where and who: time, host, pid, rank, subsystem, level. A
 * line below the level costs one compare of a global (RCX__LOG).
 *
 * The lowest layer of lib/: everything may log, this calls nothing above.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "lib/log/log.h"

int rcx__log_level = RCX__LOG_WARN;

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *log_fp;	       /* NULL: stderr */
static char log_pattern[256];  /* RCX_LOG_FILE as given */
static bool log_pattern_rank;  /* it has %r */
static bool log_opened_ranked; /* opened with the rank known */
static int log_rank = -1;

static const char *const level_names[] = { "error", "warn",  "info",
					   "debug", "trace", NULL };

int rcx__log_parse_level(const char *s)
{
	int i;

	for (i = 0; level_names[i]; i++)
		if (!strcmp(s, level_names[i]))
			return i;
	return -EINVAL;
}

void rcx__log_expand(char *out, size_t len, const char *pat)
{
	size_t o = 0;
	int n;

	for (; *pat && o + 1 < len; pat++) {
		if (pat[0] == '%' && (pat[1] == 'p' || pat[1] == 'r')) {
			if (pat[1] == 'p')
				n = snprintf(out + o, len - o, "%d",
					     (int)getpid());
			else if (log_rank >= 0)
				n = snprintf(out + o, len - o, "%d", log_rank);
			else
				n = snprintf(out + o, len - o, "-");
			if (n < 0 || (size_t)n >= len - o)
				break;
			o += (size_t)n;
			pat++;
			continue;
		}
		out[o++] = *pat;
	}
	out[o] = 0;
}

/* log_lock held: the stream lines go to */
static FILE *stream(void)
{
	char name[512];

	if (!log_pattern[0])
		return stderr;
	if (log_fp && log_pattern_rank && !log_opened_ranked && log_rank >= 0) {
		fclose(log_fp); /* reopened under the rank's own name */
		log_fp = NULL;
	}
	if (!log_fp) {
		rcx__log_expand(name, sizeof(name), log_pattern);
		log_fp = fopen(name, "a");
		log_opened_ranked = log_rank >= 0;
		if (!log_fp) {
			fprintf(stderr,
				"rcx: RCX_LOG_FILE=%s: cannot open %s "
				"(%s); logging to stderr\n",
				log_pattern, name, strerror(errno));
			log_pattern[0] = 0;
			return stderr;
		}
		setvbuf(log_fp, NULL, _IOLBF, 0);
	}
	return log_fp;
}

int rcx__log_setup(const char *level, const char *file)
{
	int lvl = rcx__log_parse_level(level);

	if (lvl < 0)
		return lvl;
	pthread_mutex_lock(&log_lock);
	rcx__log_level = lvl;
	if (strcmp(log_pattern, file)) {
		if (log_fp)
			fclose(log_fp);
		log_fp = NULL;
		snprintf(log_pattern, sizeof(log_pattern), "%s", file);
		log_pattern_rank = strstr(log_pattern, "%r") != NULL;
	}
	pthread_mutex_unlock(&log_lock);
	return 0;
}

void rcx__log_set_rank(int rank)
{
	pthread_mutex_lock(&log_lock);
	log_rank = rank;
	pthread_mutex_unlock(&log_lock);
}

void rcx__log(int level, const char *subsys, const char *fmt, ...)
{
	char host[64] = "?", when[32], line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	size_t n;
	int k;

	if (level > rcx__log_level)
		return;
	gethostname(host, sizeof(host) - 1);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	if (log_rank >= 0)
		k = snprintf(line, sizeof(line),
			     "rcx %s.%03ldZ %s pid %d rank %d %s %s: ", when,
			     ts.tv_nsec / 1000000, host, (int)getpid(),
			     log_rank, subsys, level_names[level]);
	else
		k = snprintf(line, sizeof(line),
			     "rcx %s.%03ldZ %s pid %d rank - %s %s: ", when,
			     ts.tv_nsec / 1000000, host, (int)getpid(), subsys,
			     level_names[level]);
	n = k > 0 && (size_t)k < sizeof(line) ? (size_t)k : 0;
	va_start(ap, fmt);
	k = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (k > 0)
		n += (size_t)k < sizeof(line) - n - 1 ? (size_t)k
						      : sizeof(line) - n - 2;
	line[n++] = '\n';
	/* one write a line: processes sharing the stream do not mix */
	fwrite(line, 1, n, stream());
	fflush(stream());
	pthread_mutex_unlock(&log_lock);
}
