/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Options of the tools: every letter perftest uses means what it means in
 * perftest (ib_send_lat, ib_send_bw --help); rcx's own options are long
 * ones. Each tool accepts, and lists, only the options that apply to it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "pt.h"

#define MAX_SIZE  (1UL << 30)
#define MAX_ITERS 100000000L

enum {
	O_LOOPBACK = 256,
	O_JSON,
	O_PROVIDER,
	O_WARMUP,
	O_MAX_SIZE,
	O_SIZES,
	O_OUT_JSON,
	O_OUT_JSON_FILE,
	O_OUTPUT,
	O_GBITS,
	O_PROTO,
	O_SLOTS,
	O_BUNDLE,
	O_SEPARATE,
	O_COUNT,
	O_MODE,
};

/* one option: its getopt entry, the tools it applies to, its help */
struct opt {
	struct option lo;
	int letter;	/* short form, 0: none */
	unsigned flags; /* 0: every tool; else one of the tool's PT_* */
	const char *arg, *help;
};

#define ARG   required_argument
#define NOARG no_argument
static const struct opt opts[] = {
	{ { "all", NOARG, NULL, 'a' },
	  'a',
	  0,
	  NULL,
	  "sizes 2 .. 2^23, doubling (see --max-size)" },
	{ { "bidirectional", NOARG, NULL, 'b' },
	  'b',
	  PT_BW,
	  NULL,
	  "both directions at once; rates count both" },
	{ { "connection", ARG, NULL, 'c' },
	  'c',
	  0,
	  "RC",
	  "connection type: RC only (rcx's queue pairs are RC)" },
	{ { "ib-dev", ARG, NULL, 'd' },
	  'd',
	  0,
	  "DEV",
	  "RDMA device: the verbs provider on DEV (an explicit\n"
	  "RCX_PROVIDER or --provider wins; shm with DEV is an error)" },
	{ { "duration", ARG, NULL, 'D' },
	  'D',
	  0,
	  "SECS",
	  "accepted, no effect: rcx's tools run -n iterations" },
	{ { "events", NOARG, NULL, 'e' },
	  'e',
	  0,
	  NULL,
	  "sleep on completion events instead of polling\n"
	  "(RCX_SPIN_US=0)" },
	{ { "CPU-freq", NOARG, NULL, 'F' },
	  'F',
	  0,
	  NULL,
	  "accepted, no effect: rcx prints no cpufreq warning" },
	{ { "help", NOARG, NULL, 'h' }, 'h', 0, NULL, "this text" },
	{ { "ib-port", ARG, NULL, 'i' },
	  'i',
	  0,
	  "PORT",
	  "accepted, no effect: rdma_cm uses the port that holds\n"
	  "the device's IP address (the header shows it)" },
	{ { "inline_size", ARG, NULL, 'I' },
	  'I',
	  0,
	  "SIZE",
	  "largest send posted inline, 0..1024 (RCX_INLINE)" },
	{ { "mtu", ARG, NULL, 'm' },
	  'm',
	  0,
	  "MTU",
	  "accepted (256..4096), no effect: the path MTU is the\n"
	  "port's (the header shows it)" },
	{ { "iters", ARG, NULL, 'n' },
	  'n',
	  0,
	  "N",
	  "iterations measured (default 1000)" },
	{ { "port", ARG, NULL, 'p' },
	  'p',
	  0,
	  "PORT",
	  "server port (RCX_PORT; default: any free one)" },
	{ { "rdma_cm", NOARG, NULL, 'R' },
	  'R',
	  0,
	  NULL,
	  "accepted: rcx always connects with rdma_cm" },
	{ { "size", ARG, NULL, 's' },
	  's',
	  0,
	  "SIZE",
	  "message size in bytes (default 8)" },
	{ { "version", NOARG, NULL, 'V' }, 'V', 0, NULL, "rcx's version" },
	{ { "limit_bw", ARG, NULL, 'w' },
	  'w',
	  PT_BW,
	  "MIBPS",
	  "exit 1 if the bandwidth is below MIBPS MiB/s" },
	{ { "gid-index", ARG, NULL, 'x' },
	  'x',
	  0,
	  "N",
	  "accepted, no effect: rdma_cm picks the GID of the\n"
	  "device's IP address (the header shows it)" },
	{ { "limit_msgrate", ARG, NULL, 'y' },
	  'y',
	  PT_BW,
	  "MPPS",
	  "exit 1 if the message rate is below MPPS Mpps" },
	{ { "output", ARG, NULL, O_OUTPUT },
	  0,
	  0,
	  "WHAT",
	  NULL /* latency, or bandwidth | message_rate */ },
	{ { "out_json", NOARG, NULL, O_OUT_JSON },
	  0,
	  0,
	  NULL,
	  "write perftest's JSON report to perftest_out.json" },
	{ { "out_json_file", ARG, NULL, O_OUT_JSON_FILE },
	  0,
	  0,
	  "FILE",
	  "... to FILE (as in perftest, the last size's report)" },
	{ { "report_gbits", NOARG, NULL, O_GBITS },
	  0,
	  PT_BW,
	  NULL,
	  "bandwidth in Gbit/s instead of MiB/s" },
	/* rcx's own */
	{ { "provider", ARG, NULL, O_PROVIDER },
	  0,
	  0,
	  "P",
	  "auto, verbs or shm (RCX_PROVIDER; default auto, or\n"
	  "verbs with -d)" },
	{ { "loopback", NOARG, NULL, O_LOOPBACK },
	  0,
	  0,
	  NULL,
	  "run both ends from this one command" },
	{ { "json", NOARG, NULL, O_JSON },
	  0,
	  0,
	  NULL,
	  "one JSON object per size on stdout" },
	{ { "warmup", ARG, NULL, O_WARMUP },
	  0,
	  0,
	  "N",
	  "iterations run before measuring (default 100)" },
	{ { "max-size", ARG, NULL, O_MAX_SIZE },
	  0,
	  0,
	  "SIZE",
	  "largest size with -a (default 8388608)" },
	{ { "sizes", ARG, NULL, O_SIZES },
	  0,
	  0,
	  "LIST",
	  "comma-separated sizes, one after the other" },
	{ { "proto", ARG, NULL, O_PROTO },
	  0,
	  PT_CHAN,
	  "P",
	  "channel protocol: send, write_imm or auto (default)" },
	{ { "slots", ARG, NULL, O_SLOTS },
	  0,
	  PT_CHAN,
	  "N",
	  "circular slots of a channel (default: the tool's)" },
	{ { "bundle", ARG, NULL, O_BUNDLE },
	  0,
	  PT_BUNDLE,
	  "N",
	  "channels in a bundle, 1..255 (default 1)" },
	{ { "separate", NOARG, NULL, O_SEPARATE },
	  0,
	  PT_BUNDLE,
	  NULL,
	  "start a bundle's channels one by one" },
	{ { "count", NOARG, NULL, O_COUNT },
	  0,
	  PT_COUNT,
	  NULL,
	  "count instructions under callgrind (perftest/compare\n"
	  "--callgrind): a sleep before each wait, each part of\n"
	  "the path collected in a phase of its own" },
	{ { "mode", ARG, NULL, O_MODE },
	  0,
	  ~0U,
	  "M",
	  NULL /* the tool's own text */ },
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))
/* the first of rcx's own options, for --help */
#define FIRST_OWN O_PROVIDER

static bool applies(const struct opt *p, const struct pt_tool *t)
{
	if (p->lo.val == O_MODE)
		return t->modes != NULL;
	return !p->flags || (p->flags & t->flags);
}

static void help_line(const struct opt *p)
{
	char left[40];
	const char *h = p->help, *nl;

	if (p->letter)
		snprintf(left, sizeof(left), "-%c, --%s%s%s", p->letter,
			 p->lo.name, p->arg ? "=" : "", p->arg ? p->arg : "");
	else
		snprintf(left, sizeof(left), "    --%s%s%s", p->lo.name,
			 p->arg ? "=" : "", p->arg ? p->arg : "");
	printf("  %-28s", left);
	for (;;) {
		nl = strchr(h, '\n');
		printf("%.*s\n", nl ? (int)(nl - h) : (int)strlen(h), h);
		if (!nl)
			break;
		h = nl + 1;
		printf("  %-28s", "");
	}
}

static void usage(const struct pt_opts *o)
{
	const struct pt_tool *t = o->t;
	size_t i;

	printf("usage: %s [options]          start a server, wait for a "
	       "client\n"
	       "       %s [options] ADDR     connect to the server at ADDR "
	       "(ip[:port])\n"
	       "       %s --loopback [options]  both ends from one "
	       "command\n"
	       "       rcx-run -n 2 %s [options]  rank 0 is the server\n\n"
	       "%s\n"
	       "Both ends print the header and the results; with "
	       "--loopback or\nunder rcx-run, the server alone (one "
	       "terminal).\n\nperftest's options, with perftest's "
	       "meaning:\n",
	       o->tool, o->tool, o->tool, o->tool, t->what);
	for (i = 0; i < NOPTS; i++) {
		if (opts[i].lo.val == FIRST_OWN)
			printf("\nrcx's options:\n");
		if (!applies(&opts[i], t))
			continue;
		if (opts[i].lo.val == O_MODE)
			printf("      --mode=M                %s", t->help);
		else if (opts[i].lo.val == O_OUTPUT)
			printf("      --output=WHAT           print the result "
			       "alone: %s\n",
			       t->flags & PT_BW ? "bandwidth or message_rate"
						: "latency (t_avg)");
		else
			help_line(&opts[i]);
	}
	printf("\nOptions of perftest not listed here are not accepted.\n");
}

static void __attribute__((noreturn, format(printf, 2, 3)))
bad(const struct pt_opts *o, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", o->tool);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", o->tool);
	exit(2);
}

/* an unsigned number in [lo, hi], the whole of s */
static unsigned long long number(const struct pt_opts *o, const char *what,
				 const char *s, unsigned long long lo,
				 unsigned long long hi)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || strchr(s, '-') || v < lo || v > hi)
		bad(o, "%s %s: not a number from %llu to %llu", what, s, lo,
		    hi);
	return v;
}

static double positive(const struct pt_opts *o, const char *what, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0))
		bad(o, "%s %s: not a positive number", what, s);
	return v;
}

/* --sizes: checks every size */
static void size_list(const struct pt_opts *o, const char *p)
{
	char buf[32];
	size_t n;
	int k = 0;

	do {
		n = strcspn(p, ",");
		if (++k > PT_MAX_SIZES)
			bad(o, "--sizes: more than %d sizes", PT_MAX_SIZES);
		if (n == 0 || n >= sizeof(buf))
			bad(o,
			    "--sizes %s: not a comma-separated list of "
			    "sizes",
			    o->sizes);
		memcpy(buf, p, n);
		buf[n] = 0;
		number(o, "--sizes", buf, o->t->min_size, MAX_SIZE);
		p += n;
	} while (*p++);
}

static bool one_of(const char *v, const char *list)
{
	size_t n = strlen(v);

	while (*list) {
		if (!strncmp(list, v, n) && (list[n] == '|' || !list[n]))
			return n > 0;
		list += strcspn(list, "|");
		list += *list == '|';
	}
	return false;
}

/* getopt's tables for this tool */
static void tables(const struct pt_tool *t, char *shorts, struct option *lo)
{
	size_t i;
	int k = 0;

	*shorts++ = ':'; /* a missing argument is reported as ':' */
	for (i = 0; i < NOPTS; i++) {
		if (!applies(&opts[i], t))
			continue;
		lo[k++] = opts[i].lo;
		if (opts[i].letter) {
			*shorts++ = (char)opts[i].letter;
			if (opts[i].lo.has_arg == required_argument)
				*shorts++ = ':';
		}
	}
	*shorts = 0;
	memset(&lo[k], 0, sizeof(lo[k]));
}

static void option(struct pt_opts *o, int c, const char *arg)
{
	switch (c) {
	case 's':
		o->size = number(o, "-s", arg, o->t->min_size, MAX_SIZE);
		break;
	case 'n':
		o->iters = (long)number(o, "-n", arg, 1, MAX_ITERS);
		break;
	case 'a':
		o->all_sizes = true;
		break;
	case 'b':
		o->bidir = true;
		break;
	case 'c':
		if (strcasecmp(arg, "RC"))
			bad(o,
			    "-c %s: rcx's queue pairs are RC; no other "
			    "connection type",
			    arg);
		break;
	case 'd':
		if (!*arg)
			bad(o, "-d: an empty device name");
		o->dev = arg;
		break;
	case 'D':
		number(o, "-D", arg, 1, 1000000);
		fprintf(stderr,
			"%s: -D has no effect: rcx's tools run -n "
			"iterations\n",
			o->tool);
		break;
	case 'e':
		o->events = true;
		break;
	case 'i':
		number(o, "-i", arg, 1, 255);
		break;
	case 'I':
		o->inline_size = (int)number(o, "-I", arg, 0, 1024);
		break;
	case 'm':
		if (!one_of(arg, "256|512|1024|2048|4096"))
			bad(o,
			    "-m %s: not an MTU (256, 512, 1024, 2048, "
			    "4096)",
			    arg);
		break;
	case 'p':
		o->port = (int)number(o, "-p", arg, 1, 65535);
		break;
	case 'w':
		o->limit_bw = positive(o, "-w", arg);
		break;
	case 'x':
		number(o, "-x", arg, 0, 65535);
		break;
	case 'y':
		o->limit_rate = positive(o, "-y", arg);
		break;
	case O_OUTPUT:
		if (!(o->t->flags & PT_BW) && !strcmp(arg, "latency"))
			o->output = PT_OUT_LAT;
		else if ((o->t->flags & PT_BW) && !strcmp(arg, "bandwidth"))
			o->output = PT_OUT_BW;
		else if ((o->t->flags & PT_BW) && !strcmp(arg, "message_rate"))
			o->output = PT_OUT_RATE;
		else
			bad(o, "--output %s: this tool reports %s", arg,
			    o->t->flags & PT_BW ? "bandwidth or message_rate"
						: "latency");
		break;
	case O_OUT_JSON:
		if (!o->out_json)
			o->out_json = "perftest_out.json";
		break;
	case O_OUT_JSON_FILE:
		if (!*arg)
			bad(o, "--out_json_file: an empty file name");
		o->out_json = arg;
		break;
	case O_GBITS:
		o->gbits = true;
		break;
	case O_PROVIDER:
		if (!one_of(arg, "auto|verbs|shm|fault"))
			bad(o, "--provider %s: not auto, verbs, shm or fault",
			    arg);
		o->provider = arg;
		break;
	case O_LOOPBACK:
		o->loopback = true;
		break;
	case O_JSON:
		o->json = true;
		break;
	case O_WARMUP:
		o->warmup = (long)number(o, "--warmup", arg, 0, MAX_ITERS);
		break;
	case O_MAX_SIZE:
		o->max_size = number(o, "--max-size", arg, 2, MAX_SIZE);
		break;
	case O_SIZES:
		o->sizes = arg;
		size_list(o, arg);
		break;
	case O_PROTO:
		if (!one_of(arg, "send|write_imm|auto"))
			bad(o, "--proto %s: not send, write_imm or auto", arg);
		o->proto = arg;
		break;
	case O_SLOTS:
		o->slots = (int)number(o, "--slots", arg, 0, 65536);
		break;
	case O_BUNDLE:
		o->bundle = (int)number(o, "--bundle", arg, 1, 255);
		break;
	case O_SEPARATE:
		o->separate = true;
		break;
	case O_COUNT:
		o->count = true;
		break;
	case O_MODE:
		if (!one_of(arg, o->t->modes))
			bad(o, "--mode %s: not one of %s", arg, o->t->modes);
		o->extra = arg;
		break;
	}
}

/*
 * -d DEV picks the verbs provider on DEV, unless the provider was named
 * (--provider, then RCX_PROVIDER); naming shm and an RDMA device is a
 * contradiction, not a choice.
 */
static void pick_provider(struct pt_opts *o)
{
	const char *env = getenv("RCX_PROVIDER");
	const char *who = o->provider ? "--provider" : "RCX_PROVIDER";

	if (!o->provider && env && *env)
		o->provider = env;
	if (o->dev) {
		if (!o->provider)
			o->provider = strcmp(o->dev, "shm") ? "verbs" : "shm";
		else if (!strcmp(o->provider, "shm") && strcmp(o->dev, "shm"))
			bad(o,
			    "-d %s names an RDMA device, but %s=shm uses "
			    "none; drop one of them",
			    o->dev, who);
		setenv("RCX_DEVICE", o->dev, 1);
	}
	if (!o->provider)
		o->provider = "auto";
	setenv("RCX_PROVIDER", o->provider, 1);
}

void pt_parse(int argc, char **argv, const struct pt_tool *t, struct pt_opts *o)
{
	struct option lo[NOPTS + 1];
	char shorts[2 * NOPTS + 2], buf[32];
	int c;

	memset(o, 0, sizeof(*o));
	o->t = t;
	o->tool = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	o->size = 8;
	o->iters = 1000;
	o->max_size = 1 << 23;
	o->warmup = 100;
	o->inline_size = -1;
	o->bundle = 1;
	o->proto = "auto";
	tables(t, shorts, lo);
	opterr = 0;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == 'h') {
			usage(o);
			exit(0);
		}
		if (c == 'V') {
			printf("%s (rcx) %s\n", o->tool, RCX_VERSION_STRING);
			exit(0);
		}
		if (c == ':')
			bad(o, "%s needs a value", argv[optind - 1]);
		if (c == '?') {
			if (optopt)
				bad(o, "-%c is not an option of this tool",
				    optopt);
			bad(o, "%s is not an option of this tool",
			    argv[optind - 1]);
		}
		option(o, c, optarg);
	}
	if (optind < argc)
		o->server = argv[optind++];
	if (optind < argc)
		bad(o, "one server address only (%s, then %s)", o->server,
		    argv[optind]);
	if (o->server && o->loopback)
		bad(o, "--loopback starts its own server: no address (%s)",
		    o->server);
	if (o->separate && o->bundle < 2)
		bad(o, "--separate needs a bundle (--bundle N, N > 1)");
	pick_provider(o);
	/* options that map onto the configuration table */
	if (o->inline_size >= 0) {
		snprintf(buf, sizeof(buf), "%d", o->inline_size);
		setenv("RCX_INLINE", buf, 1);
	}
	/* latency tools poll: never sleep in the kernel between messages,
	 * unless -e asks for events */
	setenv("RCX_SPIN_US", o->events ? "0" : "10000000", o->events);
	pt_clock_init();
}
