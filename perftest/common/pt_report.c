/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the tools print: a header in perftest's layout (both ends' facts,
 * exchanged over the group), result lines in perftest's columns, --json
 * lines, --output's single number and perftest's --out_json file. Rank 0
 * measures and writes its results to memory; pt_publish hands them to
 * every end that prints (the client gets its copy over the group).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pt.h"

#define LINE                                                          \
	"-----------------------------------------------------------" \
	"----------------------------\n"
#define PUBLISH_TAG 0x7074

static struct pt_facts me, peer;
static bool have_facts, failed;
static FILE *out, *json;
static char *out_buf, *json_buf;
static size_t out_len, json_len;

static FILE *stream(FILE **f, char **buf, size_t *len)
{
	if (!*f) {
		*f = open_memstream(buf, len);
		if (!*f) {
			perror("open_memstream");
			exit(1);
		}
	}
	return *f;
}

FILE *pt_out(void)
{
	return stream(&out, &out_buf, &out_len);
}

FILE *pt_json_out(void)
{
	return stream(&json, &json_buf, &json_len);
}

void pt_fail(void)
{
	failed = true;
}

bool pt_failed(void)
{
	return failed;
}

/* auto reaches a peer of the same node through shm */
static bool same_node(const char *a, const char *b)
{
	size_t n = strcspn(a, ";");

	return !strncmp(a, "auto:", 5) && !strncmp(b, "auto:", 5) &&
	       n == strcspn(b, ";") && !strncmp(a, b, n);
}

/* the provider that carries the messages to the peer */
static const char *transport(void)
{
	if (me.via[0])
		return me.via;
	if (!strcmp(me.provider, "auto"))
		return same_node(me.addr, peer.addr) ||
				       !strcmp(me.device, "shm")
			       ? "shm"
			       : "verbs";
	return me.provider;
}

static void gid_line(const struct pt_facts *f)
{
	const unsigned char *g = f->gid;

	printf(" GID: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:"
	       "%02d:%02d:%02d:%02d:%02d\n",
	       g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9],
	       g[10], g[11], g[12], g[13], g[14], g[15]);
}

static void address_line(const char *side, const struct pt_facts *f, bool rdma)
{
	printf(" %s address:", side);
	if (rdma && f->qpn)
		printf(" QPN %#06x", f->qpn);
	else if (rdma)
		printf(" QPN n/a");
	printf(" %s\n", f->addr);
	if (rdma && f->gid_index >= 0)
		gid_line(f);
}

static const char *proto(const struct pt_opts *o)
{
	if (o->t->proto)
		return o->t->proto;
	if (!strcmp(o->proto, "auto"))
		return "auto (send or write_imm, per bind)";
	return o->proto;
}

static void print_header(const struct pt_opts *o)
{
	bool rdma = !strcmp(transport(), "verbs");
	char prov[64], num[32];

	if (!strcmp(me.provider, "auto"))
		snprintf(prov, sizeof(prov), "auto: %s to the peer",
			 transport());
	else
		snprintf(prov, sizeof(prov), "%s", me.provider);
	printf(LINE "                    %s%s (%s)\n",
	       o->bidir ? "Bidirectional " : "", o->t->title, o->tool);
	if (o->events)
		printf(" Test with events (RCX_SPIN_US=0)\n");
	printf(" Provider        : %s\n", prov);
	printf(" Device          : %s\n", me.device);
	if (rdma) {
		snprintf(num, sizeof(num), "%d", me.port);
		printf(" Port            : %s\t\tLink type      : %s\n",
		       me.port ? num : "n/a", me.link[0] ? me.link : "n/a");
		if (me.mtu && me.qpn && me.via[0])
			printf(" Mtu             : %d[B] (the queue pair's)\n",
			       me.mtu);
		else if (me.mtu)
			printf(" Mtu             : %d[B] (netdev %s)\n", me.mtu,
			       me.ndev);
		else
			printf(" Mtu             : n/a\n");
		if (me.gid_index >= 0)
			printf(" GID index       : %d (%s)\n", me.gid_index,
			       me.gid_type);
		printf(" Max inline data : %d[B]\t\tConnection type: RC\n",
		       me.inline_size);
	} else {
		printf(" Link type       : shared memory (no port, MTU or "
		       "GID)\n");
	}
	printf(" Protocol        : %s\n", proto(o));
	if (o->t->flags & PT_CHAN) {
		int slots = o->slots > 1 ? o->slots : 1;

		if ((o->t->flags & PT_BUNDLE) && o->bundle > slots)
			slots = o->bundle;
		printf(" Slots           : %d", slots);
		if (o->t->flags & PT_BUNDLE)
			printf("\t\tBundle         : %d%s", o->bundle,
			       o->separate ? ", started one by one" : "");
		printf("\n");
	}
	printf(" Data ex. method : %s\n" LINE, rdma ? "rdma_cm" : "shm");
	address_line("local", &me, rdma);
	address_line("remote", &peer, rdma);
	printf(LINE);
	fflush(stdout);
}

void pt_header(const struct pt_opts *o, struct rcx_ctx *ctx,
	       struct rcx_group *g)
{
	struct rcx_peer_info pi = { .version = RCX_PEER_INFO_VERSION };
	int r = rcx_group_rank(g);
	/* every rank's (a collective's group may have more than two) */
	struct pt_facts *all =
		pt_calloc((size_t)rcx_group_size(g), sizeof(*all));

	/* a lazy world connects here, so the queue pair exists */
	PT_CHECK(rcx_group_barrier(g));
	pt_facts_get(o, ctx,
		     rcx_group_peer_info(g, r ? 0 : 1, &pi) ? NULL : &pi, &me);
	PT_CHECK(rcx_group_allgather(g, &me, sizeof(me), all));
	peer = all[r ? 0 : 1];
	free(all);
	have_facts = true;
	if (pt_prints() && !o->json && o->output == PT_OUT_FULL)
		print_header(o);
}

/* perftest's test_info object, this end's */
static void test_info(FILE *f, const struct pt_opts *o)
{
	bool rdma = !strcmp(transport(), "verbs");
	const char *p;

	fprintf(f, "\"test_info\": {\n\"test\": \"%s",
		o->bidir ? "Bidirectional_" : "");
	for (p = o->t->title; *p; p++)
		fputc(*p == ' ' ? '_' : *p, f);
	fprintf(f,
		"\",\n\"Tool\": \"%s\",\n\"Provider\": \"%s\",\n"
		"\"Dual_port\": \"OFF\",\n\"Device\": \"%s\",\n"
		"\"Number_of_qps\": 1,\n\"Transport_type\": \"IB\",\n"
		"\"Connection_type\": \"RC\",\n\"Using_SRQ\": \"OFF\",\n"
		"\"Mtu\": %d,\n\"Link_type\": \"%s\",\n\"GID_index\": %d,\n"
		"\"Max_inline_data\": %d,\n\"rdma_cm_QPs\": \"%s\",\n"
		"\"Data_ex_method\": \"%s\"\n},\n",
		o->tool, transport(), me.device, me.mtu,
		me.link[0] ? me.link : "n/a", me.gid_index, me.inline_size,
		rdma ? "ON" : "OFF", rdma ? "rdma_cm" : "shm");
}

static void write_json_file(const struct pt_opts *o, const char *results)
{
	FILE *f = fopen(o->out_json, "w");

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", o->tool, o->out_json,
			strerror(errno));
		pt_fail();
		return;
	}
	fprintf(f, "{\n");
	test_info(f, o);
	fprintf(f, "\"results\": {\n%s}\n}\n", results);
	fclose(f);
}

struct published {
	uint64_t out_len, json_len;
	int failed;
};

/* rank 0's results to the client, when it prints too */
static void share(struct rcx_group *g, struct published *h)
{
	if (rcx_group_rank(g) == 0) {
		PT_CHECK(rcx_send(g, h, sizeof(*h), 1, PUBLISH_TAG));
		PT_CHECK(rcx_send(g, out_buf, h->out_len, 1, PUBLISH_TAG));
		PT_CHECK(rcx_send(g, json_buf, h->json_len, 1, PUBLISH_TAG));
		return;
	}
	PT_CHECK(rcx_recv(g, h, sizeof(*h), 0, PUBLISH_TAG, RCX_STATUS_IGNORE));
	out_buf = pt_calloc(1, h->out_len + 1);
	json_buf = pt_calloc(1, h->json_len + 1);
	PT_CHECK(rcx_recv(g, out_buf, h->out_len, 0, PUBLISH_TAG,
			  RCX_STATUS_IGNORE));
	PT_CHECK(rcx_recv(g, json_buf, h->json_len, 0, PUBLISH_TAG,
			  RCX_STATUS_IGNORE));
	if (h->failed)
		pt_fail();
}

void pt_publish(const struct pt_opts *o, struct rcx_group *g)
{
	struct published h = { 0 };

	if (rcx_group_rank(g) == 0) {
		pt_out();
		pt_json_out();
		fclose(out);
		fclose(json);
		h.out_len = out_len;
		h.json_len = json_len;
		h.failed = failed;
	}
	if (pt_both_print())
		share(g, &h);
	if (pt_prints() && out_buf) {
		fwrite(out_buf, 1, h.out_len, stdout);
		fflush(stdout);
		if (o->out_json && h.json_len)
			write_json_file(o, json_buf);
	}
	free(out_buf);
	free(json_buf);
	out = json = NULL;
	out_buf = json_buf = NULL;
}

void pt_report_lat(const struct pt_opts *o, size_t size, long iters,
		   const struct pt_stats *st)
{
	static bool header;
	FILE *f = pt_out();

	/* perftest's file holds one result: the first of a size */
	if (ftell(pt_json_out()) == 0)
		fprintf(pt_json_out(),
			"\"MsgSize\": %zu,\n\"n_iterations\": %ld,\n\"t_min\": "
			"%.2f,\n"
			"\"t_max\": %.2f,\n\"t_typical\": %.2f,\n\"t_avg\": "
			"%.2f,\n"
			"\"t_stdev\": %.2f,\n\"percentile_99\": %.2f,\n"
			"\"percentile_99.9\": %.2f\n",
			size, iters, st->min, st->max, st->median, st->avg,
			st->stdev, st->p99, st->p999);
	if (o->json) {
		fprintf(f,
			"{\"tool\":\"%s\",\"bytes\":%zu,\"iterations\":%ld,"
			"\"t_min\":%.2f,\"t_max\":%.2f,\"t_median\":%.2f,"
			"\"t_avg\":%.2f,\"t_stdev\":%.2f,\"p99\":%.2f,"
			"\"p99_9\":%.2f}\n",
			o->tool, size, iters, st->min, st->max, st->median,
			st->avg, st->stdev, st->p99, st->p999);
		return;
	}
	if (o->output == PT_OUT_LAT) {
		fprintf(f, "%lf\n", st->avg);
		return;
	}
	if (!header) {
		fprintf(f, " #bytes #iterations    t_min[usec]    "
			   "t_max[usec]  t_typical[usec]    t_avg[usec]    "
			   "t_stdev[usec]   99%% percentile[usec]   "
			   "99.9%% percentile[usec]\n");
		header = true;
	}
	fprintf(f,
		" %-7zu %-10ld %-14.2f %-14.2f %-16.2f %-14.2f "
		"%-15.2f %-22.2f %.2f\n",
		size, iters, st->min, st->max, st->median, st->avg, st->stdev,
		st->p99, st->p999);
}

/* -w and -y, in the units reported (perftest's rule) */
static void limits(const struct pt_opts *o, FILE *f, double bw, double rate)
{
	if (o->limit_bw > 0 && bw < o->limit_bw) {
		fprintf(f, " Error: BW %.2f %s is below the limit -w %.2f\n",
			bw, o->gbits ? "Gb/s" : "MiB/s", o->limit_bw);
		pt_fail();
	}
	if (o->limit_rate > 0 && rate < o->limit_rate) {
		fprintf(f,
			" Error: message rate %.6f Mpps is below the limit "
			"-y %.6f\n",
			rate, o->limit_rate);
		pt_fail();
	}
}

void pt_report_bw(const struct pt_opts *o, size_t size, long msgs, double usec)
{
	static bool header;
	double bytes = (double)size * msgs, mpps = msgs / usec;
	double bw = o->gbits ? bytes * 8 / usec / 1e3
			     : bytes / usec * 1e6 / (1 << 20);
	FILE *f = pt_out();

	fprintf(pt_json_out(),
		"\"MsgSize\": %zu,\n\"n_iterations\": %ld,\n"
		"\"BW_peak\": %.2f,\n\"BW_average\": %.2f,\n"
		"\"MsgRate\": %.6f\n",
		size, msgs, bw, bw, mpps);
	if (o->json) {
		fprintf(f,
			"{\"tool\":\"%s\",\"bytes\":%zu,\"messages\":%ld,"
			"\"bw_MBps\":%.2f,\"msg_rate_Mpps\":%.6f,"
			"\"bundle\":%d,\"separate\":%s,"
			"\"bidirectional\":%s}\n",
			o->tool, size, msgs, bytes / usec, mpps, o->bundle,
			o->separate ? "true" : "false",
			o->bidir ? "true" : "false");
	} else if (o->output == PT_OUT_BW) {
		fprintf(f, "%lf\n", bw);
	} else if (o->output == PT_OUT_RATE) {
		fprintf(f, "%lf\n", mpps);
	} else {
		if (!header) {
			fprintf(f,
				" #bytes     #iterations    BW peak[%s]    "
				"BW average[%s]   MsgRate[Mpps]\n",
				o->gbits ? "Gb/sec" : "MiB/sec",
				o->gbits ? "Gb/sec" : "MiB/sec");
			header = true;
		}
		fprintf(f,
			" %-7zu    %-10ld       %-7.2f            %-7.2f"
			"\t\t     %-7.6f\n",
			size, msgs, bw, bw, mpps);
	}
	limits(o, f, bw, mpps);
}
