/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Ping-pong latency (half round trip) with the reply posted from a
 * continuation, comparable to ib_send_lat and rcx_send_lat: every receive
 * (rcx_irecv) gets a continuation (rcx_continue) registered with one
 * continuation request. On the client the callback posts the next
 * receive (with its continuation) and then the reply; on the server it
 * counts the pong. Sends are released at once (rcx_req_free): they
 * complete by themselves.
 *
 * --mode progress (default): both loops call rcx_progress until the
 * callback has run, so callbacks run only from the progress engine.
 * --mode wait: the server waits on the continuation request in every
 * iteration (it completes when the pong's callback has run), the client
 * waits on it once for the whole run (it stays active while every
 * callback registers the next continuation).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/pt.h"
#include "common/pt_count.h"

struct pingpong {
	struct rcx_group *g;
	struct rcx_req *cr;	 /* the continuation request */
	struct rcx_req *sc, *rc; /* --mode chan: the channels */
	bool chan, sent;
	struct rcx_status st;
	char *sb, *rb;
	size_t size;
	int peer;
	bool client;
	long n;	   /* messages to receive */
	long got;  /* callbacks run */
	long left; /* receives still to post */
};

static void cont_recv_cb(struct rcx_status *st, void *arg);

static void post_recv(struct pingpong *p)
{
	struct rcx_req *r;

	p->left--;
	pt_count_on(PT_RECV_START);
	if (p->chan) {
		r = p->rc;
		PT_CHECK(rcx_start(r));
	} else {
		PT_CHECK(rcx_irecv(p->g, p->rb, p->size, p->peer, 1, &r));
	}
	PT_CHECK(rcx_continue(&r, cont_recv_cb, p, 0, &p->st, p->cr));
	pt_count_off();
}

static void post_send(struct pingpong *p)
{
	struct rcx_req *s;

	if (p->chan) {
		/* the last start's completion, before the next start */
		if (p->sent)
			PT_CHECK(rcx_wait(&p->sc, RCX_STATUS_IGNORE));
		p->sent = true;
		pt_count_on(PT_SEND_START);
		PT_CHECK(rcx_start(p->sc));
		pt_count_off();
		pt_count_sent();
		return;
	}
	pt_count_on(PT_SEND_START);
	PT_CHECK(rcx_isend(p->g, p->sb, p->size, p->peer, 1, &s));
	PT_CHECK(rcx_req_free(&s));
	pt_count_off();
	pt_count_sent();
}

static void cont_recv_cb(struct rcx_status *st, void *arg)
{
	struct pingpong *p = arg;

	/* --count: the dispatch ends here, at the callback's entry */
	pt_count_off();
	PT_CHECK(st->error);
	p->got++;
	if (!p->client)
		return;
	if (p->left > 0)
		post_recv(p);
	post_send(p);
}

static void drive(struct pingpong *p, struct rcx_ctx *ctx, bool wait,
		  long until)
{
	int ret;

	if (wait) {
		PT_CHECK(rcx_wait(&p->cr, RCX_STATUS_IGNORE));
		return;
	}
	while (p->got < until) {
		ret = rcx_progress(ctx);
		if (ret < 0)
			PT_CHECK(ret);
	}
}

/*
 * --count: wait outside rcx until the peer has sent, then rcx_progress
 * until the callback has run; counted from the entry of the progress
 * call that finds the receive to the callback's entry.
 */
static void count_drive(struct pingpong *p, struct rcx_ctx *ctx)
{
	long until = p->got + 1;
	int polls = 0, ret;

	pt_count_ready(PT_RECV_DONE);
	while (p->got < until) {
		pt_count_on(PT_RECV_DONE);
		ret = rcx_progress(ctx);
		pt_count_off();
		if (ret < 0)
			PT_CHECK(ret);
		polls++;
		if (p->got < until)
			pt_count_settle(); /* not there yet: counted, waited for */
	}
	pt_count_polled(polls);
	pt_count_received();
}

#define CONT_PARTS                                         \
	(PT_PART(PT_SEND_START) | PT_PART(PT_RECV_START) | \
	 PT_PART(PT_RECV_DONE))

static void count_body(void *arg, long i)
{
	struct pingpong *p = arg;

	if (!p->client) {
		post_recv(p);
		post_send(p);
	}
	count_drive(p, pt_ctx());
}

/* --mode chan: a send and a receive channel to the peer */
static void chan_bind(struct pingpong *p, struct rcx_req **si,
		      struct rcx_req **ri)
{
	struct rcx_req *eph[2];
	struct rcx_info *info;

	PT_CHECK(rcx_info_create(&info));
	PT_CHECK(rcx_info_set(info, RCX_CHAN_PROTOCOL, "send"));
	PT_CHECK(rcx_send_init(p->g, p->sb, p->size, p->peer, 1, si));
	PT_CHECK(rcx_recv_init(p->g, p->rb, p->size, p->peer, 1, ri));
	PT_CHECK(rcx_ibind(*si, info, &p->sc, &eph[0]));
	PT_CHECK(rcx_ibind(*ri, info, &p->rc, &eph[1]));
	PT_CHECK(rcx_waitall(2, eph, RCX_STATUSES_IGNORE));
	rcx_info_free(&info);
}

static void chan_free(struct pingpong *p, struct rcx_req **si,
		      struct rcx_req **ri)
{
	struct rcx_req *ch[2] = { p->sc, p->rc };

	if (p->sent)
		PT_CHECK(rcx_wait(&p->sc, RCX_STATUS_IGNORE));
	PT_CHECK(rcx_bind_free(ch, 2));
	rcx_req_free(si);
	rcx_req_free(ri);
}

static void run(const struct pt_opts *o, struct rcx_group *g, size_t size)
{
	bool wait = o->extra && !strcmp(o->extra, "wait");
	struct rcx_req *si = NULL, *ri = NULL;
	struct pingpong p = { .g = g, .size = size };
	struct rcx_ctx *ctx = pt_ctx();
	double *t = pt_calloc(o->iters, sizeof(double)), t0;
	struct pt_stats st;
	long i;

	p.n = p.left = o->warmup + o->iters;
	p.peer = 1 - rcx_group_rank(g);
	p.client = rcx_group_rank(g) == 1;
	p.sb = pt_calloc(1, size + 1);
	p.rb = pt_calloc(1, size + 1);
	p.chan = o->extra && !strcmp(o->extra, "chan");
	if (p.chan)
		chan_bind(&p, &si, &ri);
	PT_CHECK(rcx_continue_init(ctx, NULL, &p.cr));
	PT_CHECK(rcx_group_barrier(g));
	if (o->count) {
		p.n = p.left = pt_count_iters(o, CONT_PARTS);
		if (p.client)
			post_recv(&p);
		pt_count_run(o, g, CONT_PARTS, count_body, &p);
	} else if (p.client) {
		post_recv(&p);
		drive(&p, ctx, wait, p.n);
	} else {
		for (i = 0; i < p.n; i++) {
			t0 = pt_now_us();
			post_recv(&p);
			post_send(&p);
			drive(&p, ctx, wait, i + 1);
			if (i >= o->warmup)
				t[i - o->warmup] = (pt_now_us() - t0) / 2;
		}
		pt_stats(t, o->iters, &st);
		pt_report_lat(o, size, o->iters, &st);
	}
	if (p.got != p.n)
		pt_die(__FILE__, __LINE__, "callbacks run", -EPROTO);
	/* the last continuation has run: the request is complete */
	PT_CHECK(rcx_wait(&p.cr, RCX_STATUS_IGNORE));
	PT_CHECK(rcx_req_free(&p.cr));
	PT_CHECK(rcx_group_barrier(g));
	if (p.chan)
		chan_free(&p, &si, &ri);
	free(p.sb);
	free(p.rb);
	free(t);
}

static const struct pt_tool tool = {
	.title = "Continuation Latency Test",
	.what = "Ping-pong latency (half round trip) with the reply posted "
		"from a\ncontinuation, against ib_send_lat and rcx_send_lat.",
	.proto = "eager up to RCX_EAGER_SIZE, replies from continuations",
	.modes = "progress|wait|chan",
	.help = "progress (default): loops call rcx_progress\n"
		"                              wait: loops wait on the "
		"continuation request\n"
		"                              chan: as progress, on bound "
		"channels\n",
	.flags = PT_COUNT,
	.min_size = 1,
	.run = run,
};

int main(int argc, char **argv)
{
	return pt_main(argc, argv, &tool);
}
