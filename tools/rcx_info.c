/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rcx_info: what rcx is built with, the devices it can use, its
 * configuration and the provider auto picks. Output fits scripts: -c
 * prints NAME=VALUE lines (a comment after each says its default and
 * where the value came from), the others "key: value" lines.
 *
 *	rcx_info [-v] [-d] [-c] [-p]      (no option: all of them)
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rcx/rcx.h>
#include "lib/core/core.h"

#define RCX__MAX_DEVS 32

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rcx_info [options]\n"
		"  -v, --version   version, build options, providers built in\n"
		"  -d, --devices   every device rcx can use, with its limits\n"
		"  -c, --config    every RCX_* variable as NAME=VALUE, with "
		"its\n"
		"                  default and where the value came from\n"
		"  -p, --provider  the provider auto picks for each kind of "
		"peer\n"
		"  -h, --help      this text\n"
		"No option: all of them. Exit status: 0, or 1 when something "
		"could not be read\n(its line says what).\n");
}

static void show_version(void)
{
	const struct rcx_provider_ops *const *p;

	printf("version: %s\n", rcx_version());
	printf("verbs: %s\n",
#ifdef RCX_HAVE_VERBS
	       "yes (rdma-core: libibverbs, librdmacm)"
#else
	       "no"
#endif
	);
	printf("pmix: %s\n",
#ifdef RCX_HAVE_PMIX
	       "yes (srun --mpi=pmix, mpirun)"
#else
	       "no"
#endif
	);
	printf("providers:");
	for (p = rcx__providers; *p; p++)
		printf(" %s", (*p)->name);
	printf("\n");
}

/* one device, through a context on it (what a program would get) */
static int show_device(const char *prov, const char *name)
{
	struct rcx_ctx_attr a = { .provider = prov, .device = name };
	struct rcx_ctx *ctx;
	char cpus[256];
	int ret;

	ret = rcx_ctx_create(&a, &ctx);
	if (ret) {
		printf("device: %s\n  error: %s\n", name, rcx_strerror(ret));
		return 1;
	}
	printf("device: %s\n", name);
	printf("  provider: %s\n", prov);
	printf("  port: %s\n", ctx->info.port_active ? "active" : "down");
	printf("  link layer: %s\n",
	       ctx->info.link_layer[0] ? ctx->info.link_layer : "-");
	printf("  address: %s\n", ctx->addr);
	printf("  mtu: %u\n", ctx->info.mtu);
	printf("  max inline: %u\n", ctx->info.max_inline);
	printf("  atomics: %s\n",
	       ctx->info.atomics ? "64-bit fetch-add, compare-swap" : "no");
	printf("  max message: %llu\n",
	       (unsigned long long)ctx->info.max_msg_sz);
	printf("  max qp wr: %u\n", ctx->info.max_qp_wr);
	printf("  max cqe: %u\n", ctx->info.max_cqe);
	ret = rcx__topo_near_cpus(NULL, name, NULL, cpus, sizeof(cpus));
	printf("  local cpus: %s\n",
	       ret	 ? rcx_strerror(ret)
	       : cpus[0] ? cpus
			 : "any (no locality: a virtual device, or every cpu)");
	printf("  taken by: %s\n",
	       strcmp(prov, "verbs") ? prov
				     : "verbs, and auto for peers on other "
				       "nodes");
	rcx_ctx_destroy(ctx);
	return 0;
}

static int show_devices(void)
{
	char names[RCX__MAX_DEVS][64];
	const struct rcx_provider_ops *v = rcx__provider_find("verbs");
	int n = 0, i, bad = 0;

	if (v)
		n = v->dev_list(names, RCX__MAX_DEVS);
	if (n <= 0)
		printf("verbs devices: none%s\n",
		       v ? "" : " (built without verbs)");
	for (i = 0; i < n; i++)
		bad |= show_device("verbs", names[i]);
	bad |= show_device("shm", "shm");
	return bad;
}

/* -c: NAME=VALUE # default ...; from ... */
static int show_config(void)
{
	const struct rcx__config_var *v;
	struct rcx__config cfg;
	const char *e;
	char val[300];
	int ret;

	ret = rcx__config_load(&cfg);
	if (ret) {
		fprintf(stderr,
			"rcx_info: the configuration is not valid: %s\n",
			rcx_strerror(ret));
		return 1;
	}
	for (v = rcx__config_vars; v->name; v++) {
		const char *p = (const char *)&cfg + v->offset;

		if (v->str_size)
			snprintf(val, sizeof(val), "%s", p);
		else
			snprintf(val, sizeof(val), "%lu",
				 *(const unsigned long *)(const void *)p);
		e = getenv(v->name);
		printf("%s=%s%s # default: %s%s; from: %s\n", v->name,
		       strpbrk(val, " \t#") ? "'" : "", val,
		       v->deflt[0] ? v->deflt : "(none)",
		       strpbrk(val, " \t#") ? "'" : "",
		       e && *e ? "environment" : "default");
	}
	return 0;
}

static int show_provider(void)
{
	const struct rcx_provider_ops *v = rcx__provider_find("verbs");
	char names[RCX__MAX_DEVS][64], key[320];
	const char *from = NULL;
	struct rcx__config cfg;
	int n = 0;

	if (rcx__config_load(&cfg))
		return 1;
	if (v && strcmp(cfg.device, "shm"))
		n = v->dev_list(names, RCX__MAX_DEVS);
	printf("RCX_PROVIDER: %s\n", cfg.provider);
	if (strcmp(cfg.provider, "auto")) {
		printf("every peer: %s\n", cfg.provider);
		return 0;
	}
	printf("same-node peers: shm (shared memory)\n");
	if (n > 0)
		printf("other nodes: verbs on %s\n",
		       cfg.device[0] ? cfg.device : "the nearest device");
	else
		printf("other nodes: none reachable (no RDMA device): auto "
		       "uses shm for every peer\n");
	printf("same node: equal node keys: RCX_NODE when set (rcx-run "
	       "--nodes), else the launcher's node name (SLURMD_NODENAME, "
	       "PMIX_HOSTNAME) or the host name; then the kernel's boot id, "
	       "PID namespace and /dev/shm\n");
	if (rcx__boot_node(key, sizeof(key), &from) == 0)
		printf("this process's node key: %s (from %s)\n", key, from);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "version", no_argument, NULL, 'v' },
		{ "devices", no_argument, NULL, 'd' },
		{ "config", no_argument, NULL, 'c' },
		{ "provider", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool vflag = false, dflag = false, cflag = false, pflag = false;
	int c, bad = 0;

	while ((c = getopt_long(argc, argv, "vdcph", opts, NULL)) != -1) {
		switch (c) {
		case 'v':
			vflag = true;
			break;
		case 'd':
			dflag = true;
			break;
		case 'c':
			cflag = true;
			break;
		case 'p':
			pflag = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rcx_info: unexpected argument %s\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}
	if (!vflag && !dflag && !cflag && !pflag)
		vflag = dflag = cflag = pflag = true;
	if (vflag)
		show_version();
	if (dflag)
		bad |= show_devices();
	if (cflag)
		bad |= show_config();
	if (pflag)
		bad |= show_provider();
	return bad ? 1 : 0;
}
