/* SPDX-License-Identifier: BSD-2-Clause */
/* The api suite's jobs (test_api_jobs.c), in test_api.c's table. */
#ifndef RCX_TEST_API_H
#define RCX_TEST_API_H

void api_provider_per_peer(void);
void api_launcher_nodes(void);
void api_stats_counts(void);
void api_trace_lines(void);

/* A file's text (at most len - 1 bytes), "" when it cannot be read. */
void api_read_text(const char *path, char *buf, size_t len);

#endif
