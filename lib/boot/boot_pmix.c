/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The "pmix" backend: the process was started by a PMIx server (Open MPI's
 * mpirun, prterun, Slurm's srun --mpi=pmix), which sets PMIX_NAMESPACE and
 * PMIX_RANK. Rank and size come from PMIx; the jobid is a hash of the
 * namespace. allgather: each rank Puts its blob under a key named after
 * the round, Commits, Fences collecting the data, and Gets every other
 * rank's blob; barrier is a plain Fence.
 *
 * Failure notices arrive as PMIx events on PMIx's own progress thread.
 * The handler queues the failed rank and writes a byte into a pipe whose
 * read end is event_fd, so waits in rcx wake up; poll_failed drains both.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <pmix.h>
#include <rcx/errors.h>
#include "lib/boot/boot.h"

#define KEY_PREFIX "rcx.ag."
/* first byte of a blob: a contribution, or "this rank has none" */
#define BLOB_OK	   'R'
#define BLOB_NONE  'E'
#define BLOB_STACK 256

struct pmix_boot {
	struct rcx__boot b;
	pmix_proc_t me;
	int pipe[2];   /* event_fd is pipe[0] */
	size_t ev_ref; /* the event handler's registration */
	int ev_on;     /* ev_ref is valid */
	int inited;    /* PMIx_Init succeeded */
	/* the rest is shared with the event handler, under ev_lock */
	int dead; /* 0, or -ECONNRESET: the PMIx server is gone */
	int *q;	  /* failed ranks not taken by poll_failed yet */
	int qh, qn;
	uint8_t *seen; /* each rank is reported once */
	struct pmix_boot *next;
};

/*
 * Event handlers run on PMIx's thread, and one may still run after its
 * backend was closed: they reach the open backends only through this list.
 */
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pmix_boot *ev_open;
/*
 * allgather rounds of this process. Fences over one namespace match in
 * call order, so two backends in one process (two contexts) share one
 * sequence of keys, the same on every rank.
 */
static uint32_t ev_round;

/* Events that mean "a process ended" (those this PMIx version defines). */
static const pmix_status_t ev_codes[] = {
	PMIX_ERR_PROC_ABORTED,
	PMIX_ERR_PROC_ABORTING,
	PMIX_PROC_TERMINATED,
#ifdef PMIX_ERR_PROC_REQUESTED_ABORT
	PMIX_ERR_PROC_REQUESTED_ABORT,
#endif
#ifdef PMIX_EVENT_PROC_TERMINATED
	PMIX_EVENT_PROC_TERMINATED,
	PMIX_ERR_PROC_TERM_WO_SYNC,
	PMIX_ERR_PROC_KILLED_BY_CMD,
	PMIX_ERR_PROC_ABORTED_BY_SIG,
	PMIX_ERR_PROC_SENSOR_BOUND_EXCEEDED,
	PMIX_ERR_EXIT_NONZERO_TERM,
#endif
#ifdef PMIX_ERR_LOST_CONNECTION
	PMIX_ERR_LOST_CONNECTION,
#endif
	PMIX_ERR_LOST_CONNECTION_TO_SERVER,
	PMIX_ERR_UNREACH,
};

static struct pmix_boot *to_pmix(struct rcx__boot *b)
{
	return (struct pmix_boot *)((char *)b - offsetof(struct pmix_boot, b));
}

/* A PMIx status as the error a bootstrap call returns. */
static int pmix_err(pmix_status_t rc)
{
	switch (rc) {
	case PMIX_SUCCESS:
		return 0;
	case PMIX_ERR_NOMEM:
	case PMIX_ERR_OUT_OF_RESOURCE:
		return -ENOMEM;
	case PMIX_ERR_TIMEOUT:
		return -ETIMEDOUT;
	case PMIX_ERR_BAD_PARAM:
		return -EINVAL;
	case PMIX_ERR_UNREACH:
	case PMIX_ERR_COMM_FAILURE:
	case PMIX_ERR_LOST_CONNECTION_TO_SERVER:
#ifdef PMIX_ERR_LOST_CONNECTION
	case PMIX_ERR_LOST_CONNECTION:
#endif
		return -ECONNRESET;
	case PMIX_ERR_PROC_ABORTED:
	case PMIX_ERR_PROC_ABORTING:
	case PMIX_ERR_PARTIAL_SUCCESS:
		return RCX_ERR_PROC_FAILED;
	default:
		return -EIO;
	}
}

/* Under ev_lock: queue rank as failed unless it is known already. */
static int note_failed(struct pmix_boot *p, pmix_rank_t rank)
{
	if (rank >= (pmix_rank_t)p->b.size || rank == p->me.rank ||
	    p->seen[rank])
		return 0;
	p->seen[rank] = 1;
	p->q[(p->qh + p->qn++) % p->b.size] = (int)rank;
	return 1;
}

static void wake(struct pmix_boot *p)
{
	char c = 1;

	/* a full pipe is readable already */
	if (write(p->pipe[1], &c, 1) < 0)
		return;
}

/* What an event says: the processes it names, and a clean exit. */
struct ev_what {
	const pmix_proc_t *procs;
	size_t n;
	int clean;
};

static void ev_parse(const pmix_proc_t *source, const pmix_info_t *info,
		     size_t ninfo, struct ev_what *w)
{
	const pmix_value_t *v;
	size_t i;

	w->procs = NULL;
	w->n = 0;
	w->clean = 0;
	for (i = 0; i < ninfo; i++) {
		v = &info[i].value;
		if (!strcmp(info[i].key, PMIX_EVENT_AFFECTED_PROC) &&
		    v->type == PMIX_PROC && v->data.proc) {
			w->procs = v->data.proc;
			w->n = 1;
		} else if (!strcmp(info[i].key, PMIX_EVENT_AFFECTED_PROCS) &&
			   v->type == PMIX_DATA_ARRAY && v->data.darray &&
			   v->data.darray->type == PMIX_PROC) {
			w->procs = v->data.darray->array;
			w->n = v->data.darray->size;
		} else if (!strcmp(info[i].key, PMIX_EXIT_CODE) &&
			   v->type == PMIX_INT) {
			w->clean = v->data.integer == 0;
		}
	}
	/* without a named process, the source is the one that ended */
	if (!w->procs && source) {
		w->procs = source;
		w->n = 1;
	}
}

static void on_event(size_t ref, pmix_status_t status,
		     const pmix_proc_t *source, pmix_info_t info[],
		     size_t ninfo, pmix_info_t *results, size_t nresults,
		     pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
	struct pmix_boot *p;
	struct ev_what w;
	int lost = pmix_err(status) == -ECONNRESET, news;
	size_t i;

	ev_parse(source, info, ninfo, &w);
	pthread_mutex_lock(&ev_lock);
	for (p = ev_open; p; p = p->next) {
		news = 0;
		if (lost && !p->dead) {
			p->dead = -ECONNRESET;
			news = 1;
		}
		/* a process that exited with status 0 left; it did not fail */
		for (i = 0; !lost && !w.clean && i < w.n; i++)
			if (PMIX_CHECK_NSPACE(w.procs[i].nspace, p->me.nspace))
				news |= note_failed(p, w.procs[i].rank);
		if (news)
			wake(p);
	}
	pthread_mutex_unlock(&ev_lock);
	/* let other handlers (an MPI library's) see the event too */
	if (cbfunc)
		cbfunc(PMIX_SUCCESS, NULL, 0, NULL, NULL, cbdata);
}

/* The blob of rank r for this round into out; r's failure if it has none. */
static int get_blob(struct pmix_boot *p, const char *key, pmix_rank_t r,
		    size_t len, void *out)
{
	pmix_info_t opt;
	pmix_value_t *v = NULL;
	pmix_proc_t peer;
	pmix_status_t rc;
	bool yes = true;
	int ret = -EPROTO;

	/* after a collecting fence the data is here: never ask the server */
	PMIX_INFO_CONSTRUCT(&opt);
	PMIX_INFO_LOAD(&opt, PMIX_OPTIONAL, &yes, PMIX_BOOL);
	PMIX_LOAD_PROCID(&peer, p->me.nspace, r);
	rc = PMIx_Get(&peer, key, &opt, 1, &v);
	PMIX_INFO_DESTRUCT(&opt);
	if (rc == PMIX_ERR_NOT_FOUND) {
		/* it did not take part in the fence: it is gone */
		pthread_mutex_lock(&ev_lock);
		if (note_failed(p, r))
			wake(p);
		pthread_mutex_unlock(&ev_lock);
		return RCX_ERR_PROC_FAILED;
	}
	if (rc != PMIX_SUCCESS)
		return pmix_err(rc);
	if (v->type == PMIX_BYTE_OBJECT && v->data.bo.size == len + 1 &&
	    v->data.bo.bytes[0] == BLOB_OK) {
		memcpy(out, v->data.bo.bytes + 1, len);
		ret = 0;
	}
	PMIX_VALUE_RELEASE(v);
	return ret;
}

/*
 * Errors: -EINVAL; -ENOMEM (this rank could not contribute; the others
 * get -EPROTO); -EPROTO a rank gave another length; RCX_ERR_PROC_FAILED a
 * rank did not take part (failed); -ECONNRESET the PMIx server is gone;
 * -ETIMEDOUT, -EIO other PMIx failures.
 */
static int pmix_allgather(struct rcx__boot *b, const void *in, size_t len,
			  void *out)
{
	struct pmix_boot *p = to_pmix(b);
	char key[sizeof(KEY_PREFIX) + 10], stack[BLOB_STACK], none = BLOB_NONE;
	char *blob = stack;
	pmix_info_t coll;
	pmix_value_t v;
	pmix_status_t rc;
	uint32_t round;
	bool yes = true;
	int r, ret = 0, err;

	if (len && (!in || !out))
		return -EINVAL;
	if (len >= sizeof(stack)) {
		blob = len < SIZE_MAX ? malloc(len + 1) : NULL;
		if (!blob)
			ret = -ENOMEM;
	}
	pthread_mutex_lock(&ev_lock);
	round = ev_round++;
	pthread_mutex_unlock(&ev_lock);
	snprintf(key, sizeof(key), KEY_PREFIX "%u", round);

	/* a rank that has no contribution still takes part */
	v.type = PMIX_BYTE_OBJECT;
	v.data.bo.bytes = ret ? &none : blob;
	v.data.bo.size = ret ? 1 : len + 1;
	if (!ret) {
		blob[0] = BLOB_OK;
		if (len)
			memcpy(blob + 1, in, len);
	}
	rc = PMIx_Put(PMIX_GLOBAL, key, &v);
	if (blob != stack)
		free(blob);
	if (rc == PMIX_SUCCESS)
		rc = PMIx_Commit();
	if (rc != PMIX_SUCCESS)
		return pmix_err(rc);

	PMIX_INFO_CONSTRUCT(&coll);
	PMIX_INFO_LOAD(&coll, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	rc = PMIx_Fence(NULL, 0, &coll, 1);
	PMIX_INFO_DESTRUCT(&coll);
	if (rc != PMIX_SUCCESS)
		return pmix_err(rc);
	if (ret)
		return ret;

	for (r = 0; r < b->size; r++) {
		if (r == b->rank) {
			if (len)
				memmove((char *)out + r * len, in, len);
			continue;
		}
		err = get_blob(p, key, (pmix_rank_t)r, len,
			       (char *)out + r * len);
		/* every rank reads every blob: all see a mismatch */
		if (err && (!ret || err == RCX_ERR_PROC_FAILED))
			ret = err;
	}
	return ret;
}

/* Errors: -ECONNRESET the PMIx server is gone; -ETIMEDOUT, -EIO. */
static int pmix_barrier(struct rcx__boot *b)
{
	return pmix_err(PMIx_Fence(NULL, 0, NULL, 0));
}

static int pmix_event_fd(struct rcx__boot *b)
{
	return to_pmix(b)->pipe[0];
}

/* 1 and *rank, 0, or -ECONNRESET once the PMIx server is gone. */
static int pmix_poll_failed(struct rcx__boot *b, int *rank)
{
	struct pmix_boot *p = to_pmix(b);
	char buf[64];
	int ret;

	while (read(p->pipe[0], buf, sizeof(buf)) > 0)
		;
	pthread_mutex_lock(&ev_lock);
	if (p->qn) {
		*rank = p->q[p->qh];
		p->qh = (p->qh + 1) % b->size;
		p->qn--;
		ret = 1;
	} else {
		ret = p->dead;
	}
	pthread_mutex_unlock(&ev_lock);
	return ret;
}

static void pmix_fini(struct rcx__boot *b)
{
	struct pmix_boot *p = to_pmix(b), **pp;

	pthread_mutex_lock(&ev_lock);
	for (pp = &ev_open; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	}
	pthread_mutex_unlock(&ev_lock);
	if (p->ev_on)
		PMIx_Deregister_event_handler(p->ev_ref, NULL, NULL);
	if (p->inited)
		PMIx_Finalize(NULL, 0);
	if (p->pipe[0] >= 0) {
		close(p->pipe[0]);
		close(p->pipe[1]);
	}
	free(p->q);
	free(p->seen);
	free(p);
}

static const struct rcx__boot_ops pmix_ops = {
	.name = "pmix",
	.allgather = pmix_allgather,
	.barrier = pmix_barrier,
	.event_fd = pmix_event_fd,
	.poll_failed = pmix_poll_failed,
	.fini = pmix_fini,
};

/* FNV-1a of the namespace: one nonzero id per job, the same on every rank */
static uint64_t nspace_jobid(const char *ns)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*ns) {
		h ^= (uint8_t)*ns++;
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

/* The job's size from PMIx: 0 and *size, or an error. */
static int job_size(const pmix_proc_t *me, int *size)
{
	pmix_value_t *v = NULL;
	pmix_proc_t job;
	pmix_status_t rc;
	int ret = -EPROTO;

	PMIX_LOAD_PROCID(&job, me->nspace, PMIX_RANK_WILDCARD);
	rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v);
	if (rc != PMIX_SUCCESS)
		return pmix_err(rc);
	if (v->type == PMIX_UINT32 && v->data.uint32 > 0 &&
	    v->data.uint32 <= INT32_MAX && me->rank < v->data.uint32) {
		*size = (int)v->data.uint32;
		ret = 0;
	}
	PMIX_VALUE_RELEASE(v);
	return ret;
}

/*
 * The caller saw PMIX_RANK and PMIX_NAMESPACE. Errors: -ECONNREFUSED the
 * PMIx server cannot be reached; -EPROTO PMIx gave no usable job size;
 * -ENOMEM; -errno (pipe); -EIO another PMIx failure.
 */
int rcx__boot_pmix_open(struct rcx__boot **out)
{
	pmix_status_t rc;
	struct pmix_boot *p;
	int ret;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pipe[0] = p->pipe[1] = -1;
	if (pipe2(p->pipe, O_CLOEXEC | O_NONBLOCK)) {
		ret = -errno;
		p->pipe[0] = p->pipe[1] = -1;
		goto err;
	}
	rc = PMIx_Init(&p->me, NULL, 0);
	if (rc != PMIX_SUCCESS) {
		ret = pmix_err(rc) == -ENOMEM ? -ENOMEM : -ECONNREFUSED;
		goto err;
	}
	p->inited = 1;
	ret = job_size(&p->me, &p->b.size);
	if (ret)
		goto err;
	p->b.ops = &pmix_ops;
	p->b.rank = (int)p->me.rank;
	p->b.jobid = nspace_jobid(p->me.nspace);
	p->q = calloc((size_t)p->b.size, sizeof(*p->q));
	p->seen = calloc((size_t)p->b.size, 1);
	if (!p->q || !p->seen) {
		ret = -ENOMEM;
		goto err;
	}
	pthread_mutex_lock(&ev_lock);
	p->next = ev_open;
	ev_open = p;
	pthread_mutex_unlock(&ev_lock);
	/* blocking registration: the result is the handler's reference */
	rc = PMIx_Register_event_handler((pmix_status_t *)ev_codes,
					 sizeof(ev_codes) / sizeof(*ev_codes),
					 NULL, 0, on_event, NULL, NULL);
	if (rc < 0) {
		ret = pmix_err(rc);
		goto err;
	}
	p->ev_ref = (size_t)rc;
	p->ev_on = 1;
	*out = &p->b;
	return 0;

err:
	pmix_fini(&p->b);
	return ret;
}
