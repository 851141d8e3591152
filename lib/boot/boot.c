/* SPDX-License-Identifier: BSD-2-Clause */
/* Bootstrap backend choice, and the singleton backend (rank 0 of 1). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/boot/boot_wire.h"
#include "lib/log/log.h"

static int single_allgather(struct rcx__boot *b, const void *in, size_t len,
			    void *out)
{
	if (len && (!in || !out))
		return -EINVAL;
	if (len)
		memmove(out, in, len);
	return 0;
}

static int single_barrier(struct rcx__boot *b)
{
	return 0;
}

static int single_event_fd(struct rcx__boot *b)
{
	return -1;
}

static int single_poll_failed(struct rcx__boot *b, int *rank)
{
	return 0;
}

static void single_fini(struct rcx__boot *b)
{
	free(b);
}

static const struct rcx__boot_ops single_ops = {
	.name = "singleton",
	.allgather = single_allgather,
	.barrier = single_barrier,
	.event_fd = single_event_fd,
	.poll_failed = single_poll_failed,
	.fini = single_fini,
};

static int single_open(struct rcx__boot **out)
{
	struct rcx__boot *b;
	uint64_t jobid;

	if (rcx__boot_env_jobid(&jobid))
		return -EPROTO;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->ops = &single_ops;
	b->rank = 0;
	b->size = 1;
	b->jobid = jobid ? jobid : rcx__boot_random_jobid();
	*out = b;
	return 0;
}

static int is_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

/* A PMIx server (mpirun, prterun, srun --mpi=pmix) started this process. */
static int pmix_launched(void)
{
	return is_set("PMIX_RANK") && is_set("PMIX_NAMESPACE");
}

static int pmix_open(struct rcx__boot **out)
{
#ifdef RCX_HAVE_PMIX
	/* forced, with no PMIx server to talk to */
	if (!pmix_launched())
		return -ECONNREFUSED;
	return rcx__boot_pmix_open(out);
#else
	/* not silently a singleton: say why the job cannot start */
	if (pmix_launched())
		rcx__log(RCX__LOG_ERROR, "boot",
			 "started by a PMIx launcher (PMIX_RANK), "
			 "but built without PMIx (libpmix-dev); "
			 "RCX_BOOTSTRAP names another bootstrap");
	else
		rcx__log(RCX__LOG_ERROR, "boot",
			 "the pmix bootstrap was asked for, but "
			 "rcx was built without PMIx (libpmix-dev)");
	return -EOPNOTSUPP;
#endif
}

/*
 * srun started this process as one task of several, without PMIx (srun
 * --mpi=none or pmi2): each task alone would be a singleton of its own, a
 * job of one rank N times over. Say how to launch instead.
 */
static int slurm_without_pmix(void)
{
	const char *n = getenv("SLURM_STEP_NUM_TASKS");

	if (!n || atoi(n) < 2 || !is_set("SLURM_PROCID"))
		return 0;
#ifdef RCX_HAVE_PMIX
	rcx__log(RCX__LOG_ERROR, "boot",
		 "started by srun as task %s of %s (SLURM_STEP_NUM_TASKS=%s) "
		 "without PMIx: launch with srun --mpi=pmix (or "
		 "MpiDefault=pmix in slurm.conf); RCX_BOOTSTRAP=singleton runs "
		 "each task alone",
		 getenv("SLURM_PROCID"), n, n);
#else
	rcx__log(RCX__LOG_ERROR, "boot",
		 "started by srun as task %s of %s (SLURM_STEP_NUM_TASKS=%s), "
		 "but built without PMIx (libpmix-dev), which srun "
		 "--mpi=pmix needs",
		 getenv("SLURM_PROCID"), n, n);
#endif
	return 1;
}

int rcx__boot_open(const char *force, struct rcx__boot **out)
{
	const char *name = force;

	if (!out)
		return -EINVAL;
	if (!name && is_set("RCX_BOOTSTRAP"))
		name = getenv("RCX_BOOTSTRAP");
	if (!name) {
		if (pmix_launched())
			name = "pmix";
		else if (is_set("RCX_RUN_SOCK"))
			name = "local";
		else if (is_set("RCX_RANK") && is_set("RCX_SIZE") &&
			 is_set("RCX_ROOT"))
			name = "env";
		else if (slurm_without_pmix())
			return -EPROTO;
		else
			name = "singleton";
	}
	if (!strcmp(name, "pmix"))
		return pmix_open(out);
	if (!strcmp(name, "local"))
		return rcx__boot_local_open(out);
	if (!strcmp(name, "env"))
		return rcx__boot_env_open(out);
	if (!strcmp(name, "singleton"))
		return single_open(out);
	return -EINVAL;
}
