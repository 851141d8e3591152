/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Remake of a channel set whose queue pair the transport gave up on
 * (retries exhausted) while the peer may well live: a slow peer looks the
 * same. Instead of failing, both ends flush their queue pair, wait until
 * every completion of it came back, and tell each other over the group's
 * connection (cid CHAN, a remake notice) how many messages each channel
 * completed. The receiver then connects a new queue pair naming the set's
 * cookie, as at bind; the sender takes it. Once it is up the slot
 * positions are set again from the start counts, and the sender sends
 * again only the messages the receiver did not complete: of write_imm,
 * one at most per channel (it has one message in flight); of the send
 * protocol, those of the set's ring (chan.c: inline starts complete at
 * the post, so a channel may have several), in order, from their copies.
 * One it completed completes at the sender. So every message arrives
 * once, in order, and
 * the starts under way complete normally. Starts made meanwhile are held
 * and made once the set is up.
 *
 * A peer found dead meanwhile fails the set with RCX_ERR_PROC_FAILED as
 * before (rcx__chan_peer_failed); a remake that cannot be made (the new
 * connection fails, the notice cannot go, RCX_FT_TIMEOUT_MS passes)
 * fails the set with RCX_ERR_TRANSPORT at both ends. RCX_FT_TIMEOUT_MS=0
 * makes no remake: a break fails the set at both ends at once.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/chan/chan_int.h"

struct chremake {
	long long by_us;  /* the remake fails after this */
	bool drained;	  /* every WR of the broken queue pair came back */
	bool peer_in;	  /* the peer's notice of this remake came */
	bool connecting;  /* receiver: the new connection was asked for */
	bool established; /* the new queue pair is up, before peer_in */
	bool giving_up;	  /* rcx__chan_remake_fail: the set fails */
	uint64_t cnt[];	  /* the peer's: completed[n], then started[n] */
};

/* The notice: the set and the counts of each channel at the drain. */
struct remake_msg {
	uint32_t magic;	    /* CH_MAGIC */
	uint32_t kind;	    /* CH_KIND_REMAKE */
	uint32_t gen;	    /* the remake's number (rcx_gen at both ends) */
	uint32_t n;	    /* channels */
	uint32_t from_send; /* the teller is the set's sender */
	uint32_t pad;
	uint64_t cookie;
	uint64_t cnt[]; /* completed[n], started[n] */
};

static size_t msg_len(int n)
{
	return sizeof(struct remake_msg) + 16 * (size_t)n;
}

static bool remake_ok(struct chset *s)
{
	struct rcx__conn *c = rcx__chan_set_conn(s);

	return s->ctx->cfg.ft_timeout_ms && s->ep && c &&
	       c->state != RCX__CONN_FAILED && c->state != RCX__CONN_CLOSED &&
	       msg_len(s->n) <= s->ctx->cfg.eager_size;
}

/* Take the set's WRs back: everything on the queue pair flushes. */
static int begin(struct chset *s, int err)
{
	struct rcx_ctx *ctx = s->ctx;
	struct chremake *rm;
	int i, t, m;

	rm = calloc(1, sizeof(*rm) + 16 * (size_t)s->n);
	if (!rm)
		return -ENOMEM;
	s->rm = rm;
	s->rm_gen++;
	s->state = SET_REMAKE;
	rm->by_us = rcx__now_us() + (long long)ctx->cfg.ft_timeout_ms * 1000;
	if (!s->conn_by_us)
		ctx->chan_conn_due++;
	s->conn_by_us = rm->by_us;
	for (i = 0; i < s->n; i++) {
		struct chan *c = &s->ch[i];

		c->held = false;
		c->rm_posted = c->mode == CH_RECV && c->req &&
			       c->req->state == RCX__REQ_ACTIVE;
	}
	/* senders waiting for credit posted nothing: started again at up */
	for (i = 0; i < s->n; i++) {
		struct chan *c = &s->ch[i];

		if (!c->deferred)
			continue;
		m = c->fuse_m ? c->fuse_m : 1;
		if (c->fuse_m)
			s->fuse_busy = false;
		for (t = 0; t < m && i + t < s->n; t++)
			c[t].held = true;
	}
	rcx__chan_undefer(s);
	s->zmin = -1; /* no receive is posted again on the broken one */
	rcx__log(RCX__LOG_INFO, "chan",
		 "%s set of %d to rank %d: queue pair broke (%s): remaking",
		 s->is_send ? "sending" : "receiving", s->n, s->ch[0].peer,
		 rcx_strerror(err));
	ctx->ops->ep_set_error(s->ep);
	/* the sends' unsignaled tail: the mark flushes after it */
	rcx__chan_mark(s);
	return 0;
}

/* A CH_RECV receive's flush is being reaped (on_chan_wc marks it). */
static void reaped(struct chset *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->ch[i].flushing)
			s->ch[i].rm_posted = false;
}

static bool drained(const struct chset *s)
{
	int i;

	if (s->inflight > 0 || s->zposted > 0 || s->fuse_busy)
		return false;
	for (i = 0; i < s->n; i++) {
		const struct chan *c = &s->ch[i];

		if (c->rm_posted && !c->held && c->req &&
		    c->req->state == RCX__REQ_ACTIVE)
			return false;
	}
	return true;
}

/*
 * Messages channel c completed: a sender's starts; a receiver's starts
 * but the one waiting, and those that came before their start.
 */
static uint64_t completed(const struct chan *c)
{
	bool waits = c->req && c->req->state == RCX__REQ_ACTIVE && !c->held;

	if (c->is_send)
		return c->count;
	return c->count - (waits ? 1 : 0) + c->early;
}

static int notice_send(struct chset *s)
{
	struct rcx__conn *conn = rcx__chan_set_conn(s);
	struct remake_msg *m = calloc(1, msg_len(s->n));
	int i, ret;

	if (!m)
		return -ENOMEM;
	m->magic = CH_MAGIC;
	m->kind = CH_KIND_REMAKE;
	m->gen = s->rm_gen;
	m->n = (uint32_t)s->n;
	m->from_send = s->is_send;
	m->cookie = s->cookie;
	for (i = 0; i < s->n; i++) {
		m->cnt[i] = completed(&s->ch[i]);
		m->cnt[s->n + i] = s->ch[i].count;
	}
	ret = conn ? rcx__am_send(conn, RCX__CID_CHAN, 0, m, msg_len(s->n))
		   : -ENOTCONN;
	free(m);
	return ret;
}

/*
 * The next step of s's remake: once drained, the WRs go (made anew for
 * the new queue pair), the notice goes; the receiver connects once it
 * has the peer's notice (its queue pair is drained too: nothing old can
 * land in a slot after).
 */
static void step(struct chset *s, bool may_connect)
{
	struct chremake *rm = s->rm;
	int ret;

	if (!rm->drained) {
		if (!drained(s))
			return;
		rm->drained = true;
		rcx__chan_set_unprepare(s);
		s->old_ep = s->ep;
		s->ep = NULL;
		ret = notice_send(s);
		if (ret) {
			rcx__log(RCX__LOG_WARN, "chan",
				 "set of %d to rank %d: remake notice not "
				 "sent: %s",
				 s->n, s->ch[0].peer, rcx_strerror(ret));
			rcx__chan_remake_fail(s, RCX_ERR_TRANSPORT, false);
			return;
		}
	}
	if (!may_connect || s->is_send || !rm->peer_in || rm->connecting)
		return;
	rm->connecting = true;
	ret = rcx__chan_connect(s);
	if (ret)
		rcx__chan_remake_fail(s, RCX_ERR_TRANSPORT, false);
	else
		s->ctx->st.connects++; /* one made again, as a world's */
}

bool rcx__chan_remake(struct chset *s, int err)
{
	if (s->state == SET_REMAKE) {
		if (s->rm->giving_up)
			return false;
		/* what the flush brings; anything else ends the remake */
		if (err != RCX_ERR_PROC_FAILED && !rcx__err_transport(err)) {
			rcx__chan_remake_fail(s, err, false);
			return true;
		}
		reaped(s);
		step(s, false);
		return true;
	}
	if ((s->state != SET_UP && s->state != SET_FREEING) ||
	    !rcx__err_transport(err) || !remake_ok(s))
		return false;
	if (begin(s, err))
		return false;
	reaped(s);
	step(s, false);
	return true;
}

int rcx__chan_hold(struct rcx_req *r)
{
	struct chan *c = r->obj;

	r->state = RCX__REQ_ACTIVE;
	r->status.error = 0;
	c->held = true;
	c->rm_posted = false;
	return 0;
}

int rcx__chan_hold_many(struct rcx_req **reqs, int n)
{
	int i, ret;

	for (i = 0; i < n; i++) {
		ret = rcx__chan_ops.start(reqs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

void rcx__chan_remake_fail(struct chset *s, int err, bool told)
{
	struct chremake *rm = s->rm;
	int i;

	if (s->state != SET_REMAKE)
		return;
	rm->giving_up = true;
	if (told)
		s->peer_told = true;
	rcx__log(RCX__LOG_WARN, "chan",
		 "%s set of %d to rank %d: remake failed: %s",
		 s->is_send ? "sending" : "receiving", s->n, s->ch[0].peer,
		 rcx_strerror(err));
	/* a receive still to flush is waited for; no other is posted */
	for (i = 0; i < s->n; i++) {
		struct chan *c = &s->ch[i];

		if (c->mode == CH_RECV)
			c->flushing =
				!(c->rm_posted && !rm->drained && !c->held);
	}
	rcx__chan_set_fail(s, err);
	for (i = 0; i < s->n; i++)
		s->ch[i].held = false;
}

void rcx__chan_remake_am(struct rcx__conn *c, const struct rcx__hdr *h,
			 const uint8_t *payload)
{
	struct remake_msg m;
	struct chset *s;

	memset(&m, 0, sizeof(m));
	if (h->len >= sizeof(m))
		memcpy(&m, payload, sizeof(m));
	if (m.from_send > 1 || m.n < 1 || m.n > CH_MAX_BUNDLE ||
	    h->len != msg_len((int)m.n)) {
		rcx__log(RCX__LOG_WARN, "chan",
			 "remake notice from rank %d (%u bytes, %u channels): "
			 "malformed, dropped",
			 c->peer, h->len, m.n);
		return;
	}
	for (s = c->ctx->chan_sets; s; s = s->next)
		if (s->cookie == m.cookie && s->is_send != (bool)m.from_send &&
		    s->n == (int)m.n && s->state != SET_FAILED &&
		    rcx__chan_set_conn(s) == c)
			break;
	if (!s)
		return; /* freed or failed here already: the peer's fails */
	/* the peer found the queue pair broken: so it is */
	if ((s->state == SET_UP || s->state == SET_FREEING) &&
	    m.gen == s->rm_gen + 1) {
		if (!remake_ok(s) || begin(s, RCX_ERR_TRANSPORT)) {
			rcx__chan_set_fail(s, RCX_ERR_TRANSPORT);
			return;
		}
	}
	if (s->state != SET_REMAKE || m.gen != s->rm_gen || s->rm->peer_in) {
		RCX__LOG(RCX__LOG_DEBUG, "chan",
			 "remake notice %u from rank %d: not ours (%u), "
			 "dropped",
			 m.gen, c->peer, s->rm_gen);
		return;
	}
	memcpy(s->rm->cnt, payload + sizeof(m), 16 * (size_t)s->n);
	s->rm->peer_in = true;
	/* the connection is made, or the new queue pair taken into use,
	 * on the connection cadence (rcx__chan_remake_poll), not from
	 * inside the completion queue's poll */
	step(s, false);
}

void rcx__chan_remake_poll(struct chset *s, long long now)
{
	if (now > s->rm->by_us) {
		rcx__log(RCX__LOG_WARN, "chan",
			 "set of %d to rank %d: not remade within "
			 "RCX_FT_TIMEOUT_MS (%lu ms)",
			 s->n, s->ch[0].peer, s->ctx->cfg.ft_timeout_ms);
		rcx__chan_remake_fail(s, RCX_ERR_TRANSPORT, false);
		return;
	}
	step(s, true);
	if (s->state == SET_REMAKE && s->rm->established && s->rm->peer_in)
		rcx__chan_remake_up(s);
}

/* channel c's slots from its start count, as its starts left them */
static void slots_from_count(struct chan *c, int n)
{
	uint64_t sl = c->slots, k = c->count % sl, step = (uint64_t)n % sl;

	if (!c->multi)
		return;
	c->next_slot = (int)(((uint64_t)c->idx + k * step) % sl);
	c->next_off = (uint64_t)c->next_slot * c->stride;
	if (c->count)
		c->cur_slot =
			(int)(((uint64_t)c->idx + (k + sl - 1) % sl * step) %
			      sl);
}

/* sender: message c->count again, into the slot it went to */
static int replay(struct chset *s, struct chan *c)
{
	uint64_t off = c->multi ? (uint64_t)c->cur_slot * c->stride : 0;
	int ret;

	if (c->multi) {
		*c->wr_addr = (uintptr_t)c->buf + off;
		if (c->mode == CH_WSEND)
			*c->wr_raddr = s->peer_data + off;
	}
	if (c->mode == CH_WSEND)
		*c->wr_imm = ch_imm(c, c->count);
	s->inflight++;
	ret = s->ctx->ops->pwr_post(s->ep, &c->pwr, 1);
	if (ret)
		s->inflight--;
	return ret;
}

/* receiver, send protocol: the waiting start's receive again */
static int repost(struct chset *s, struct chan *c)
{
	if (c->multi)
		*c->wr_addr =
			(uintptr_t)c->buf + (uint64_t)c->cur_slot * c->stride;
	return s->ctx->ops->pwr_post_recv(s->ep, &c->pwr, 1);
}

/* channel i after the remake: its message again, done, or reposted */
static int resume(struct chset *s, int i)
{
	struct chan *c = &s->ch[i];
	struct rcx_req *r = c->req;

	if (!r || r->state != RCX__REQ_ACTIVE || c->held)
		return 0;
	if (c->mode == CH_RECV)
		return repost(s, c);
	if (!c->is_send)
		return 0; /* write_imm receiver: its message comes */
	if (s->ring)
		return 0; /* send protocol: rcx__chan_ring_replay */
	if (s->rm->cnt[i] < c->count)
		return replay(s, c);
	/* it arrived: the flush only took its completion */
	r->status.slot = c->cur_slot;
	r->status.count = c->len;
	rcx__req_complete(r, 0);
	return 0;
}

void rcx__chan_remake_up(struct chset *s)
{
	struct rcx_ctx *ctx = s->ctx;
	struct chremake *rm = s->rm;
	struct rcx_req *r;
	int i, ret = 0;

	if (!rm->peer_in || !s->free_wr) {
		rm->established = true;
		return;
	}
	ctx->ops->ep_destroy(s->old_ep);
	s->old_ep = NULL;
	s->state = SET_UP;
	if (s->conn_by_us) {
		s->conn_by_us = 0;
		ctx->chan_conn_due--;
	}
	s->inflight = 0;
	for (i = 0; i < s->n; i++) {
		slots_from_count(&s->ch[i], s->n);
		/* write_imm: the receiver's starts at the drain, whose
		 * credit writes the flush may have taken */
		if (s->is_send && s->proto == RCX_CHAN_WRITE_IMM &&
		    ready(s)[i] < rm->cnt[s->n + i])
			ready(s)[i] = rm->cnt[s->n + i];
	}
	ret = rcx__chan_ring_replay(s, rm->cnt);
	for (i = 0; i < s->n && !ret; i++)
		ret = resume(s, i);
	s->rm = NULL;
	rcx__log(RCX__LOG_INFO, "chan", "%s set of %d to rank %d: remade",
		 s->is_send ? "sending" : "receiving", s->n, s->ch[0].peer);
	free(rm);
	if (ret) {
		rcx__chan_set_fail(s, ret);
		return;
	}
	/* the starts made meanwhile */
	for (i = 0; i < s->n && s->state == SET_UP; i++) {
		if (!s->ch[i].held)
			continue;
		s->ch[i].held = false;
		r = s->ch[i].req;
		if (!r || r->state != RCX__REQ_ACTIVE)
			continue;
		r->state = RCX__REQ_INACTIVE;
		rcx__chan_ops.start(r);
	}
	/* freed meanwhile, or while freeing: the free word goes again */
	if (s->live == 0 && s->state == SET_UP) {
		s->state = SET_FREEING;
		if (ctx->ops->pwr_post(s->ep, &s->free_wr, 1))
			s->ctl->peer_free = 1;
		else
			rcx__chan_free_went(s);
	}
}
