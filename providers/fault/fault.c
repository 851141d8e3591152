/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The fault provider: every op goes to the lower provider named by
 * RCX_FAULT_LOWER (default "auto", as RCX_PROVIDER's), on the lower provider's own objects
 * (devices, endpoints and registrations are not wrapped). Posting also
 * records each WR that the lower provider accepted: endpoint, op, flags,
 * length, remote address. Prepared WRs are wrapped to be recorded when
 * posted.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "../provider.h"
#include "fault.h"

extern const struct rcx_provider_ops rcx__fault_ops;
static const struct rcx_provider_ops *flt_lower;
static pthread_mutex_t flt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcx_fault_wr flt_log[RCX_FAULT_LOG_MAX];
static size_t flt_count;

/* a completion held back (rcx__fault_hold_next): armed for the next WR
 * of flt_hold_op posted, then for that WR's completion, held, due */
enum {
	FLT_HOLD_OFF,
	FLT_HOLD_ARMED,
	FLT_HOLD_POSTED,
	FLT_HOLD_HELD,
	FLT_HOLD_DUE
};

static int flt_hstate = FLT_HOLD_OFF; /* flt_lock */
static int flt_hold_op;
static uint64_t flt_hold_wr_id;

/* ---- the record */

static void flt_record(const struct rcx_ep *ep, uint64_t wr_id, uint8_t op,
		       uint8_t flags, uint32_t length, uint64_t remote_addr)
{
	struct rcx_fault_wr *r;

	pthread_mutex_lock(&flt_lock);
	r = &flt_log[flt_count % RCX_FAULT_LOG_MAX];
	r->seq = flt_count++;
	r->ep = ep;
	r->wr_id = wr_id;
	r->op = op;
	r->flags = flags;
	r->length = length;
	r->remote_addr = remote_addr;
	if (flt_hstate == FLT_HOLD_ARMED && op == flt_hold_op) {
		flt_hstate = FLT_HOLD_POSTED;
		flt_hold_wr_id = wr_id;
	}
	pthread_mutex_unlock(&flt_lock);
}

size_t rcx__fault_log_count(void)
{
	size_t n;

	pthread_mutex_lock(&flt_lock);
	n = flt_count;
	pthread_mutex_unlock(&flt_lock);
	return n;
}

int rcx__fault_log_get(size_t seq, struct rcx_fault_wr *out)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&flt_lock);
	if (seq < flt_count && flt_count - seq <= RCX_FAULT_LOG_MAX) {
		*out = flt_log[seq % RCX_FAULT_LOG_MAX];
		ret = 0;
	}
	pthread_mutex_unlock(&flt_lock);
	return ret;
}

void rcx__fault_log_clear(void)
{
	pthread_mutex_lock(&flt_lock);
	flt_count = 0;
	pthread_mutex_unlock(&flt_lock);
}

/* ---- the lower provider */

static int flt_resolve(void)
{
	const char *name = getenv("RCX_FAULT_LOWER");

	if (flt_lower)
		return 0;
	if (!name || !*name)
		name = "auto";
	if (!strcmp(name, "fault"))
		return -EINVAL;
	flt_lower = rcx__provider_find(name);
	return flt_lower ? 0 : -ENODEV;
}

static int flt_dev_list(char (*names)[64], int max)
{
	int ret = flt_resolve();

	return ret ? ret : flt_lower->dev_list(names, max);
}

static int flt_dev_open(const struct rcx_dev_attr *attr, struct rcx_dev **out)
{
	int ret = flt_resolve();

	return ret ? ret : flt_lower->dev_open(attr, out);
}

/* Past dev_open everything below has a lower provider. */
static void flt_dev_close(struct rcx_dev *dev)
{
	flt_lower->dev_close(dev);
}

/*
 * The lower provider's facts, but never "ordered": what the recording is
 * for is the work-request mapping of the RC rules, flags included, on
 * whatever provider runs below.
 */
static int flt_dev_query(struct rcx_dev *dev, struct rcx_dev_info *info)
{
	int ret = flt_lower->dev_query(dev, info);

	if (!ret)
		info->ordered = 0;
	return ret;
}

static int flt_mr_reg(struct rcx_dev *dev, void *addr, size_t len,
		      unsigned int access, struct rcx_mr **out)
{
	return flt_lower->mr_reg(dev, addr, len, access, out);
}

static int flt_mr_reg_keyed(struct rcx_dev *dev, void *addr, size_t len,
			    unsigned int access, uint32_t lkey, uint32_t rkey,
			    struct rcx_mr **out)
{
	return flt_lower->mr_reg_keyed(dev, addr, len, access, lkey, rkey, out);
}

static int flt_mr_dereg(struct rcx_mr *mr)
{
	return flt_lower->mr_dereg(mr);
}

static uint32_t flt_mr_lkey(const struct rcx_mr *mr)
{
	return flt_lower->mr_lkey(mr);
}

static uint32_t flt_mr_rkey(const struct rcx_mr *mr)
{
	return flt_lower->mr_rkey(mr);
}

static int flt_listen(struct rcx_dev *dev, uint16_t port, char *addr,
		      size_t addr_len)
{
	return flt_lower->listen(dev, port, addr, addr_len);
}

static void flt_new_ep(const void *ep_ctx);

/* ---- endpoints and their contexts (a completion names the context) */

struct flt_epctx {
	struct flt_epctx *next;
	const struct rcx_ep *ep;
	const void *ep_ctx;
};

static struct flt_epctx *flt_eps; /* flt_lock */

/* Remember ep's context (ret: the lower's answer); ret */
static int flt_ep_made(int ret, const struct rcx_ep_attr *attr,
		       struct rcx_ep *const *out)
{
	struct flt_epctx *e;

	if (ret || !(e = malloc(sizeof(*e))))
		return ret; /* without an entry, no hold is released early */
	e->ep = *out;
	e->ep_ctx = attr->ep_ctx;
	pthread_mutex_lock(&flt_lock);
	e->next = flt_eps;
	flt_eps = e;
	pthread_mutex_unlock(&flt_lock);
	return 0;
}

/* ep's context, its entry taken off when forget; NULL unknown. flt_lock */
static const void *flt_ep_ctx(const struct rcx_ep *ep, bool forget)
{
	struct flt_epctx **pp, *e;
	const void *c;

	for (pp = &flt_eps; (e = *pp); pp = &e->next)
		if (e->ep == ep)
			break;
	if (!e)
		return NULL;
	c = e->ep_ctx;
	if (forget) {
		*pp = e->next;
		free(e);
	}
	return c;
}

static int flt_ep_connect(struct rcx_dev *dev, const char *addr,
			  const struct rcx_ep_attr *attr, const void *pdata,
			  size_t pdata_len, struct rcx_ep **out)
{
	flt_new_ep(attr->ep_ctx);
	return flt_ep_made(
		flt_lower->ep_connect(dev, addr, attr, pdata, pdata_len, out),
		attr, out);
}

static int flt_ep_accept(struct rcx_dev *dev, struct rcx_conn_req *req,
			 const struct rcx_ep_attr *attr, struct rcx_ep **out)
{
	flt_new_ep(attr->ep_ctx);
	return flt_ep_made(flt_lower->ep_accept(dev, req, attr, out), attr,
			   out);
}

static int flt_ep_reject(struct rcx_dev *dev, struct rcx_conn_req *req)
{
	return flt_lower->ep_reject(dev, req);
}

static int flt_peer_split(struct rcx_dev *dev, const char *addr)
{
	return flt_lower->peer_split(dev, addr);
}

static int flt_ep_disconnect(struct rcx_ep *ep)
{
	return flt_lower->ep_disconnect(ep);
}

/* ---- a stalled fence, on purpose */

/*
 * RCX_FAULT_STALL_FENCE=1: a WR posted with RCX_WR_FENCE, and what follows
 * it in its list, is held back until the next post on the same endpoint
 * (or until the endpoint is put in error or destroyed). That is what rxe
 * does when it loses the wakeup of a fenced WR (lib/win/win.c, kick()), made
 * to happen every time.
 */
struct flt_held {
	struct flt_held *next;
	struct rcx_ep *ep;
	struct rcx_wr wr;
};

static pthread_mutex_t flt_held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct flt_held *flt_held;
static int flt_stall = -1;

static bool flt_stalls(void)
{
	const char *v;

	if (flt_stall < 0) {
		v = getenv("RCX_FAULT_STALL_FENCE");
		flt_stall = v && *v == '1';
	}
	return flt_stall;
}

/* Post what was held back for ep, in order: 0 or the first error. */
static int flt_release(struct rcx_ep *ep)
{
	struct flt_held *h, **pp, *mine = NULL, **tail = &mine;
	struct rcx_wr *bad;
	int ret = 0;

	pthread_mutex_lock(&flt_held_lock);
	for (pp = &flt_held; (h = *pp);) {
		if (h->ep != ep) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		h->next = NULL;
		*tail = h;
		tail = &h->next;
	}
	pthread_mutex_unlock(&flt_held_lock);
	while ((h = mine)) {
		mine = h->next;
		h->wr.next = NULL;
		if (!ret)
			ret = flt_lower->post_send(ep, &h->wr, &bad);
		free(h);
	}
	return ret;
}

/* Hold wr and the rest of its list for ep. */
static int flt_hold(struct rcx_ep *ep, const struct rcx_wr *wr)
{
	struct flt_held *h, **tail;

	pthread_mutex_lock(&flt_held_lock);
	for (tail = &flt_held; *tail; tail = &(*tail)->next)
		;
	for (; wr; wr = wr->next) {
		h = calloc(1, sizeof(*h));
		if (!h) {
			pthread_mutex_unlock(&flt_held_lock);
			return -ENOMEM;
		}
		h->ep = ep;
		h->wr = *wr;
		*tail = h;
		tail = &h->next;
	}
	pthread_mutex_unlock(&flt_held_lock);
	return 0;
}

static void flt_hold_end(const struct rcx_ep *ep, bool destroyed);

static void flt_ep_destroy(struct rcx_ep *ep)
{
	if (flt_stalls())
		flt_release(ep);
	flt_hold_end(ep, true);
	flt_lower->ep_destroy(ep);
}

static int flt_ep_set_error(struct rcx_ep *ep)
{
	if (flt_stalls())
		flt_release(ep);
	flt_hold_end(ep, false);
	return flt_lower->ep_set_error(ep);
}

static uint32_t flt_ep_max_inline(const struct rcx_ep *ep)
{
	return flt_lower->ep_max_inline(ep);
}

static int flt_ep_query(const struct rcx_ep *ep, struct rcx_ep_info *info)
{
	return flt_lower->ep_query(ep, info);
}

static int flt_cm_poll(struct rcx_dev *dev, struct rcx_cm_event *ev)
{
	return flt_lower->cm_poll(dev, ev);
}

/* Record the WRs of a list up to bad (the first one not posted). */
static void flt_record_list(const struct rcx_ep *ep, const struct rcx_wr *wr,
			    const struct rcx_wr *bad, int ret, bool recv)
{
	for (; wr && !(ret && wr == bad); wr = wr->next)
		flt_record(ep, wr->wr_id, recv ? RCX_OP_RECV : wr->op,
			   wr->flags, wr->length, wr->remote_addr);
}

/* Post up to the first fenced WR and hold the rest (stalled fences). */
static int flt_post_stalled(struct rcx_ep *ep, struct rcx_wr *wr,
			    struct rcx_wr **bad)
{
	struct rcx_wr *w, *prev = NULL;
	int ret = flt_release(ep);

	if (ret) {
		*bad = wr;
		return ret;
	}
	for (w = wr; w && !(w->flags & RCX_WR_FENCE); w = w->next)
		prev = w;
	if (prev) {
		prev->next = NULL;
		ret = flt_lower->post_send(ep, wr, bad);
		prev->next = w;
		if (ret)
			return ret;
	}
	ret = w ? flt_hold(ep, w) : 0;
	if (ret)
		*bad = w;
	return ret;
}

/* ---- a post refused, on purpose (rcx__fault_post_fail) */

static const void *flt_pf_ctx; /* flt_lock */
static bool flt_pf_recv;
static unsigned int flt_pf_left;
static int flt_pf_err;

void rcx__fault_post_fail(const void *ep_ctx, int recv, unsigned int after,
			  int err)
{
	pthread_mutex_lock(&flt_lock);
	flt_pf_ctx = ep_ctx;
	flt_pf_recv = recv != 0;
	flt_pf_left = after;
	flt_pf_err = err;
	pthread_mutex_unlock(&flt_lock);
}

/* Of a list of n WRs posted on ep, how many go (the rest: *err). */
static int flt_post_cut(const struct rcx_ep *ep, bool recv, int n, int *err)
{
	int k = n;

	if (!flt_pf_ctx)
		return n;
	pthread_mutex_lock(&flt_lock);
	if (flt_pf_ctx && flt_pf_recv == recv &&
	    flt_ep_ctx(ep, false) == flt_pf_ctx) {
		if (flt_pf_left >= (unsigned int)n) {
			flt_pf_left -= (unsigned int)n;
		} else {
			k = (int)flt_pf_left;
			*err = flt_pf_err;
			flt_pf_ctx = NULL;
		}
	}
	pthread_mutex_unlock(&flt_lock);
	return k;
}

static int flt_post_lower(struct rcx_ep *ep, struct rcx_wr *wr,
			  struct rcx_wr **bad, bool recv)
{
	if (recv)
		return flt_lower->post_recv(ep, wr, bad);
	if (flt_stalls())
		return flt_post_stalled(ep, wr, bad);
	return flt_lower->post_send(ep, wr, bad);
}

/* Post wr's list up to the WR refused on purpose, if one is. */
static int flt_post_list(struct rcx_ep *ep, struct rcx_wr *wr,
			 struct rcx_wr **bad, bool recv)
{
	struct rcx_wr *w, *prev = NULL;
	int n = 0, k, err = 0, ret = 0;

	*bad = NULL;
	for (w = wr; w; w = w->next)
		n++;
	k = flt_post_cut(ep, recv, n, &err);
	if (k == n)
		ret = flt_post_lower(ep, wr, bad, recv);
	else {
		for (w = wr; k-- > 0; w = w->next)
			prev = w;
		if (prev) {
			prev->next = NULL;
			ret = flt_post_lower(ep, wr, bad, recv);
			prev->next = w;
		}
		if (!ret) {
			*bad = w;
			ret = err;
		}
	}
	flt_record_list(ep, wr, *bad, ret, recv);
	return ret;
}

static int flt_post_send(struct rcx_ep *ep, struct rcx_wr *wr,
			 struct rcx_wr **bad)
{
	return flt_post_list(ep, wr, bad, false);
}

static int flt_post_recv(struct rcx_ep *ep, struct rcx_wr *wr,
			 struct rcx_wr **bad)
{
	return flt_post_list(ep, wr, bad, true);
}

/* the completions to fail, then to flush (below) */
static const void *flt_fail_ctx;
static int flt_fail_status;
static const void *flt_flush_ctx;

/* ---- prepared WRs: the lower one, and what to record about it */

struct flt_pwr {
	struct rcx_pwr pub; /* first; the lower's patch pointers */
	struct rcx_pwr *low;
	/* an unsignaled send's lower twin, signaled: posted instead on an
	 * endpoint whose completion is to fail (or flush), as a queue pair
	 * reports a WR that fails, signaled or not */
	struct rcx_pwr *sig;
	uint8_t op;
	uint8_t flags;
};

static struct flt_pwr *to_fpwr(struct rcx_pwr *p)
{
	return (struct flt_pwr *)p;
}

static int flt_pwr_create(struct rcx_ep *ep, const struct rcx_wr *wr, int recv,
			  struct rcx_pwr **out)
{
	struct flt_pwr *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	ret = flt_lower->pwr_create(ep, wr, recv, &p->low);
	if (ret) {
		free(p);
		return ret;
	}
	if (!recv && !(wr->flags & RCX_WR_SIGNALED)) {
		struct rcx_wr w = *wr;

		w.flags |= RCX_WR_SIGNALED;
		ret = flt_lower->pwr_create(ep, &w, 0, &p->sig);
		if (ret) {
			flt_lower->pwr_destroy(p->low);
			free(p);
			return ret;
		}
	}
	p->pub = *p->low;
	p->pub.ops = &rcx__fault_ops; /* fault destroys and posts it */
	p->op = recv ? RCX_OP_RECV : wr->op;
	p->flags = wr->flags;
	*out = &p->pub;
	return 0;
}

static void flt_pwr_destroy(struct rcx_pwr *pwr)
{
	struct flt_pwr *p = to_fpwr(pwr);

	if (!p)
		return;
	flt_lower->pwr_destroy(p->low);
	if (p->sig)
		flt_lower->pwr_destroy(p->sig);
	free(p);
}

/* p's lower WR to post on ep: its signaled twin, patched alike, where a
 * completion is to fail or flush */
static struct rcx_pwr *flt_pwr_low(struct rcx_ep *ep, struct flt_pwr *p)
{
	const void *c;

	if (!p->sig)
		return p->low;
	pthread_mutex_lock(&flt_lock);
	c = flt_ep_ctx(ep, false);
	if (!c || (c != flt_fail_ctx && c != flt_flush_ctx)) {
		pthread_mutex_unlock(&flt_lock);
		return p->low;
	}
	pthread_mutex_unlock(&flt_lock);
	*p->sig->wr_id = *p->low->wr_id;
	*p->sig->addr = *p->low->addr;
	*p->sig->length = *p->low->length;
	*p->sig->remote_addr = *p->low->remote_addr;
	*p->sig->imm_be = *p->low->imm_be;
	return p->sig;
}

#define FLT_PWR_CHUNK 64

/*
 * Post pwr[0..n-1] up to the WR refused on purpose, if one is (at index
 * `after` of rcx__fault_post_fail, counted across posts): *posted went.
 */
static int flt_pwr_post_common(struct rcx_ep *ep, struct rcx_pwr **pwr, int n,
			       bool recv, int *posted)
{
	struct rcx_pwr *low[FLT_PWR_CHUNK];
	int i, k, got, done, ret = 0, err = 0, go;

	if (!recv && flt_stalls())
		ret = flt_release(ep);
	go = ret ? n : flt_post_cut(ep, recv, n, &err);

	for (done = 0; done < go && !ret; done += got) {
		k = go - done < FLT_PWR_CHUNK ? go - done : FLT_PWR_CHUNK;
		for (i = 0; i < k; i++)
			low[i] = recv ? to_fpwr(pwr[done + i])->low
				      : flt_pwr_low(ep, to_fpwr(pwr[done + i]));
		ret = flt_lower->pwr_post_list(ep, low, k, recv, &got);
		for (i = 0; i < got; i++) {
			struct flt_pwr *p = to_fpwr(pwr[done + i]);

			flt_record(ep, *p->pub.wr_id, p->op, p->flags,
				   *p->pub.length, *p->pub.remote_addr);
		}
	}
	*posted = done;
	return ret ? ret : err;
}

static int flt_pwr_post(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	int k;

	return flt_pwr_post_common(ep, pwr, n, false, &k);
}

static int flt_pwr_post_recv(struct rcx_ep *ep, struct rcx_pwr **pwr, int n)
{
	int k;

	return flt_pwr_post_common(ep, pwr, n, true, &k);
}

static int flt_pwr_post_list(struct rcx_ep *ep, struct rcx_pwr **pwr, int n,
			     int recv, int *posted)
{
	return flt_pwr_post_common(ep, pwr, n, recv != 0, posted);
}

/* ---- a completion that fails, on purpose */

/*
 * A queue pair whose retries ran out goes to the error state: the WRs
 * behind the one that failed complete flushed, whatever the peer did
 * with them. So after the failure the fault provider reports every later
 * send-side completion of the same ep_ctx as RCX_ERR_FLUSHED, until an
 * endpoint is made again with that ep_ctx (a reconnection makes its new
 * one only once the broken one drained).
 *
 * A READ's completion is never the one that fails: a READ whose data
 * came back completed, and a fenced WR behind it may have run already,
 * which a queue pair whose READ failed never lets happen.
 */

void rcx__fault_fail_next(const void *ep_ctx, int status)
{
	pthread_mutex_lock(&flt_lock);
	flt_fail_ctx = ep_ctx;
	flt_fail_status = status;
	pthread_mutex_unlock(&flt_lock);
}

static void flt_new_ep(const void *ep_ctx)
{
	pthread_mutex_lock(&flt_lock);
	if (ep_ctx && ep_ctx == flt_flush_ctx)
		flt_flush_ctx = NULL;
	pthread_mutex_unlock(&flt_lock);
}

/* ---- a completion held back, on purpose */

static struct rcx_cqe flt_hold_cqe;
static size_t flt_nheld, flt_nreturned;

void rcx__fault_hold_next(int op)
{
	pthread_mutex_lock(&flt_lock);
	flt_hstate = FLT_HOLD_ARMED;
	flt_hold_op = op;
	pthread_mutex_unlock(&flt_lock);
}

void rcx__fault_hold_counts(size_t *held, size_t *returned)
{
	pthread_mutex_lock(&flt_lock);
	*held = flt_nheld;
	*returned = flt_nreturned;
	pthread_mutex_unlock(&flt_lock);
}

/* ep goes to error (due: the next poll returns its held completion) or
 * is destroyed (the held completion goes with it) */
static void flt_hold_end(const struct rcx_ep *ep, bool destroyed)
{
	const void *c;

	pthread_mutex_lock(&flt_lock);
	c = flt_ep_ctx(ep, destroyed);
	if (c && flt_hstate >= FLT_HOLD_HELD && flt_hold_cqe.ep_ctx == c)
		flt_hstate = destroyed ? FLT_HOLD_OFF : FLT_HOLD_DUE;
	pthread_mutex_unlock(&flt_lock);
}

/* cqe[0..got-1] polled: the one to hold taken out; how many are left */
static int flt_hold_take(struct rcx_cqe *cqe, int got)
{
	int i;

	for (i = 0; i < got; i++)
		if (cqe[i].wr_id == flt_hold_wr_id &&
		    cqe[i].op != RCX_OP_RECV && cqe[i].op != RCX_OP_RECV_IMM)
			break;
	if (i == got)
		return got;
	if (cqe[i].status) { /* failed: nothing to hold */
		flt_hstate = FLT_HOLD_OFF;
		return got;
	}
	flt_hold_cqe = cqe[i];
	flt_hstate = FLT_HOLD_HELD;
	flt_nheld++;
	memmove(&cqe[i], &cqe[i + 1], (size_t)(got - i - 1) * sizeof(*cqe));
	return got - 1;
}

/* a held completion that is due first, then the lower's */
static int flt_poll_held(struct rcx_dev *dev, struct rcx_cqe *cqe, int n)
{
	int got, extra = 0;

	pthread_mutex_lock(&flt_lock);
	if (flt_hstate == FLT_HOLD_DUE && n > 0) {
		cqe[0] = flt_hold_cqe;
		flt_hstate = FLT_HOLD_OFF;
		flt_nreturned++;
		extra = 1;
	}
	pthread_mutex_unlock(&flt_lock);
	got = flt_lower->cq_poll(dev, cqe + extra, n - extra);
	if (got < 0)
		return extra ? extra : got;
	pthread_mutex_lock(&flt_lock);
	if (flt_hstate == FLT_HOLD_POSTED)
		got = flt_hold_take(cqe + extra, got);
	pthread_mutex_unlock(&flt_lock);
	return got + extra;
}

static int flt_cq_poll(struct rcx_dev *dev, struct rcx_cqe *cqe, int n)
{
	int got, i;

	got = flt_hstate != FLT_HOLD_OFF ? flt_poll_held(dev, cqe, n)
					 : flt_lower->cq_poll(dev, cqe, n);
	if (got <= 0 || (!flt_fail_ctx && !flt_flush_ctx))
		return got;
	pthread_mutex_lock(&flt_lock);
	for (i = 0; i < got; i++) {
		if (cqe[i].status || cqe[i].op == RCX_OP_RECV ||
		    cqe[i].op == RCX_OP_RECV_IMM)
			continue;
		if (cqe[i].ep_ctx == flt_flush_ctx) {
			cqe[i].status = RCX_ERR_FLUSHED;
		} else if (cqe[i].ep_ctx == flt_fail_ctx &&
			   cqe[i].op != RCX_OP_READ) {
			cqe[i].status = flt_fail_status;
			flt_flush_ctx = flt_fail_ctx;
			flt_fail_ctx = NULL;
		}
	}
	pthread_mutex_unlock(&flt_lock);
	return got;
}

static int flt_event_fd(struct rcx_dev *dev)
{
	return flt_lower->event_fd(dev);
}

static int flt_arm(struct rcx_dev *dev)
{
	return flt_lower->arm(dev);
}

static int flt_ack(struct rcx_dev *dev)
{
	return flt_lower->ack(dev);
}

static int flt_watch_fd(struct rcx_dev *dev, int fd)
{
	return flt_lower->watch_fd ? flt_lower->watch_fd(dev, fd) : -EOPNOTSUPP;
}

static int flt_mem_alloc(struct rcx_dev *dev, size_t len, void **out)
{
	return flt_lower->mem_alloc(dev, len, out);
}

static int flt_mem_free(struct rcx_dev *dev, void *addr)
{
	return flt_lower->mem_free(dev, addr);
}

const struct rcx_provider_ops rcx__fault_ops = {
	.name = "fault",
	.dev_list = flt_dev_list,
	.dev_open = flt_dev_open,
	.dev_close = flt_dev_close,
	.dev_query = flt_dev_query,
	.mr_reg = flt_mr_reg,
	.mr_dereg = flt_mr_dereg,
	.mr_reg_keyed = flt_mr_reg_keyed,
	.mr_lkey = flt_mr_lkey,
	.mr_rkey = flt_mr_rkey,
	.listen = flt_listen,
	.ep_connect = flt_ep_connect,
	.ep_accept = flt_ep_accept,
	.ep_reject = flt_ep_reject,
	.peer_split = flt_peer_split,
	.ep_disconnect = flt_ep_disconnect,
	.ep_destroy = flt_ep_destroy,
	.ep_set_error = flt_ep_set_error,
	.ep_max_inline = flt_ep_max_inline,
	.ep_query = flt_ep_query,
	.pwr_create = flt_pwr_create,
	.pwr_destroy = flt_pwr_destroy,
	.pwr_post = flt_pwr_post,
	.pwr_post_recv = flt_pwr_post_recv,
	.pwr_post_list = flt_pwr_post_list,
	.cm_poll = flt_cm_poll,
	.post_send = flt_post_send,
	/* every WR through post_send, where it is recorded or failed */
	.ep_rma_now = rcx__stub_ep_rma_now,
	.post_recv = flt_post_recv,
	.cq_poll = flt_cq_poll,
	.cq_poll_min = rcx__stub_cq_poll,
	.cq_dispatch = rcx__stub_cq_dispatch,
	.cq_peek = rcx__stub_cq_peek,
	.pwr_direct = rcx__stub_pwr_direct,
	.event_fd = flt_event_fd,
	.arm = flt_arm,
	.ack = flt_ack,
	.watch_fd = flt_watch_fd,
	.mem_alloc = flt_mem_alloc,
	.mem_free = flt_mem_free,
};
