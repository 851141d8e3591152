/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_PT_H
#define RCX_PT_H

/*
 * The shared part of rcx's perftest-style tools: options (perftest's
 * letters with perftest's meaning, rcx's own as long options), set-up of
 * a two-process group (server/client, --loopback, or under rcx-run), a
 * perftest-style header, a monotonic clock, statistics and output in
 * perftest's columns, --json lines and perftest's --out_json file.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <rcx/rcx.h>

/* what a tool is, for its options, --help and the header */
enum {
	PT_BW = 1 << 0,	    /* a bandwidth tool: -b -w -y --report_gbits */
	PT_CHAN = 1 << 1,   /* bound channels: --proto --slots */
	PT_BUNDLE = 1 << 2, /* channel bundles: --bundle --separate */
	PT_COUNT = 1 << 3,  /* --count (pt_count.h) */
	PT_GROUP = 1 << 4,  /* collectives: any number of ranks >= 2 */
};

enum pt_output { PT_OUT_FULL, PT_OUT_LAT, PT_OUT_BW, PT_OUT_RATE };

struct pt_opts;
struct pt_tool;
typedef void pt_run_fn(const struct pt_opts *o, struct rcx_group *g,
		       size_t size);

struct pt_tool {
	const char *title; /* the header's title: "Send Latency Test" */
	const char *what;  /* one line for --help */
	unsigned flags;	   /* PT_* */
	const char *proto; /* the header's protocol; NULL: --proto */
	const char *modes; /* --mode values, '|'-separated, default first */
	const char *help;  /* --mode lines for --help */
	size_t min_size;   /* smallest message the tool can time */
	pt_run_fn *run;
};

struct pt_opts {
	const struct pt_tool *t;
	const char *tool;      /* argv[0]'s base name */
	size_t size;	       /* -s */
	long iters;	       /* -n */
	bool all_sizes;	       /* -a: 2 .. --max-size */
	size_t max_size;       /* --max-size */
	const char *sizes;     /* --sizes: comma-separated list */
	int inline_size;       /* -I (RCX_INLINE); -1: the default */
	const char *dev;       /* -d */
	const char *provider;  /* --provider, RCX_PROVIDER or from -d */
	int port;	       /* -p */
	const char *server;    /* client: the server's ip[:port] */
	bool loopback;	       /* --loopback: both ends from one command */
	bool json;	       /* --json: one JSON object per size */
	const char *out_json;  /* --out_json[_file]: perftest's file */
	enum pt_output output; /* --output */
	bool events;	       /* -e: sleep on completion events */
	long warmup;	       /* --warmup: iterations not measured */
	const char *proto;     /* --proto (channels) */
	int bundle;	       /* --bundle (channels in a bundle) */
	bool separate;	       /* --separate: start them one by one */
	bool count;	       /* --count: callgrind phases (pt_count.h) */
	bool bidir;	       /* -b: both directions (bandwidth) */
	double limit_bw;       /* -w: fail below this MiB/s */
	double limit_rate;     /* -y: fail below this Mpps */
	bool gbits;	       /* --report_gbits */
	int slots;	       /* --slots (0: the tool's) */
	const char *extra;     /* --mode (tool specific) */
};

/* Parse argv; --help and -V print and exit 0, bad options exit 2. */
void pt_parse(int argc, char **argv, const struct pt_tool *t,
	      struct pt_opts *o);

/*
 * The two ends: rank 0 is the server. Under rcx-run the world group;
 * otherwise server (no address) and client (address), or both forked by
 * --loopback. Prints the header (pt_report.c). Exits with a message on
 * failure.
 */
void pt_setup(struct pt_opts *o, struct rcx_ctx **ctx, struct rcx_group **g);
void pt_teardown(struct rcx_ctx *ctx, struct rcx_group *g);

/* the context pt_main set up (for calls that take one: progress,
 * continuation requests) */
struct rcx_ctx *pt_ctx(void);

/* a monotonic clock in microseconds, cheap to read (see pt.c) */
double pt_now_us(void);
void pt_clock_init(void);
/* this process is the server (rank 0): it measures */
bool pt_is_server(void);
/* this process prints: both ends in server/client mode, otherwise the
 * server (one terminal) */
bool pt_prints(void);
bool pt_both_print(void);

struct pt_stats {
	double min, max, median, avg, stdev, p99, p999;
};

/* samples are sorted in place */
void pt_stats(double *samples, long n, struct pt_stats *st);

/*
 * Results. Rank 0 writes them to pt_out() (and perftest's JSON to
 * pt_json_out()); after each size pt_publish prints them on every
 * printing end, the client's copy sent to it over the group.
 */
FILE *pt_out(void);
FILE *pt_json_out(void);
void pt_fail(void); /* a limit (-w, -y) was missed: exit status 1 */
bool pt_failed(void);
void pt_publish(const struct pt_opts *o, struct rcx_group *g);
/* latency line (perftest columns), or JSON; rank 0 only */
void pt_report_lat(const struct pt_opts *o, size_t size, long iters,
		   const struct pt_stats *st);
/* bandwidth line: bytes moved in usec, messages; rank 0 only */
void pt_report_bw(const struct pt_opts *o, size_t size, long msgs, double usec);
/* one end's facts for the header, exchanged between the ends */
struct pt_facts {
	char provider[16]; /* asked for: auto, verbs, shm */
	char device[64];   /* rcx_ctx_device */
	char addr[128];	   /* rcx_ctx_address */
	char link[16];	   /* the port's link layer; "" unknown */
	char gid_type[16]; /* "RoCE v2", "IB/RoCE v1" */
	char ndev[32];	   /* the netdev under the GID (RoCE) */
	unsigned char gid[16];
	int port, gid_index, mtu, inline_size; /* 0 (-1 index): unknown */
	unsigned qpn, rqpn;		       /* 0: unknown */
	char via[16]; /* the provider carrying the connection; "" unknown */
};
/* pi: rcx_group_peer_info's answer, or NULL (then sysfs and netlink) */
void pt_facts_get(const struct pt_opts *o, struct rcx_ctx *ctx,
		  const struct rcx_peer_info *pi, struct pt_facts *f);
/* the header: both ends' facts exchanged over g (pt_report.c) */
void pt_header(const struct pt_opts *o, struct rcx_ctx *ctx,
	       struct rcx_group *g);

/* the sizes to run: --sizes the list, -a 2..max, else just -s */
#define PT_MAX_SIZES 32
int pt_sizes(const struct pt_opts *o, size_t *sizes, int max);

/* calloc, or exit with a message */
void *pt_calloc(size_t n, size_t size);

/* parse, set up, run(size) for each size, tear down */
int pt_main(int argc, char **argv, const struct pt_tool *t);

#define PT_CHECK(call)                                              \
	do {                                                        \
		int pt_ret_ = (call);                               \
		if (pt_ret_)                                        \
			pt_die(__FILE__, __LINE__, #call, pt_ret_); \
	} while (0)
void pt_die(const char *file, int line, const char *what, int err)
	__attribute__((noreturn));

#endif
