/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RCX_BOOT_H
#define RCX_BOOT_H

/*
 * Bootstrap: who am I, how many are we, and an out-of-band allgather to
 * exchange connection addresses before any RDMA connection exists.
 * Backends: "pmix" (a PMIx server started the job: mpirun, prterun,
 * srun --mpi=pmix; PMIX_RANK and PMIX_NAMESPACE; built when libpmix is
 * found), "local" (the rcx-run launcher: unix socket, RCX_RUN_SOCK),
 * "env" (RCX_RANK/RCX_SIZE/RCX_ROOT=host:port, rank 0 serves over TCP),
 * "singleton" (rank 0 of 1).
 * Chosen by RCX_BOOTSTRAP, else by what the environment shows, in the
 * order pmix, local, env, singleton; a task of a multi-task srun step
 * without PMIx (SLURM_STEP_NUM_TASKS > 1) gets -EPROTO, not a singleton.
 */
#include <stddef.h>
#include <stdint.h>

struct rcx__boot;

struct rcx__boot_ops {
	const char *name;
	/* collective: every rank's len bytes of in, rank order, into out */
	int (*allgather)(struct rcx__boot *b, const void *in, size_t len,
			 void *out);
	int (*barrier)(struct rcx__boot *b);
	/*
	 * Readable when the launcher has something to say (a failed rank);
	 * -1 when the backend never reports failures.
	 */
	int (*event_fd)(struct rcx__boot *b);
	/*
	 * Non-blocking: 1 and *rank when a rank failure was reported, 0 when
	 * nothing is pending, or a negative error (the launcher is gone).
	 */
	int (*poll_failed)(struct rcx__boot *b, int *rank);
	/*
	 * Optional (NULL: the launcher cannot be told): this process declared
	 * rank failed without a sign of its death (cut off past
	 * RCX_FT_TIMEOUT_MS). The launcher fails it for every rank, as a
	 * death, and kills it (rcx-run), so it cannot go on as a zombie.
	 * 0 or a negative error (the launcher is gone).
	 */
	int (*declare_failed)(struct rcx__boot *b, int rank);
	void (*fini)(struct rcx__boot *b);
};

struct rcx__boot {
	const struct rcx__boot_ops *ops;
	int rank;
	int size;
	uint64_t jobid; /* same on every rank of one job */
};

/*
 * Open the bootstrap. force: a backend name, or NULL for RCX_BOOTSTRAP /
 * automatic choice. Errors: -EINVAL unknown backend; -EOPNOTSUPP pmix is
 * asked for or detected but rcx was built without PMIx; -EPROTO malformed
 * RCX_* variables, PMIx gave no usable job size, or srun started several
 * tasks without PMIx; -ECONNREFUSED/
 * -ETIMEDOUT the launcher or root cannot be reached (RCX_BOOT_TIMEOUT_MS),
 * or pmix without a PMIx server; -ENOMEM; -EIO another PMIx failure.
 */
int rcx__boot_open(const char *force, struct rcx__boot **out);

/*
 * This process's node key (boot_node.c): RCX_NODE, else the launcher's
 * node name (SLURMD_NODENAME, PMIX_HOSTNAME) or the host name, with the
 * kernel's boot id. *from (may be NULL) names where it came from.
 * Errors: -EINVAL; -ENAMETOOLONG len too small.
 */
int rcx__boot_node(char *out, size_t len, const char **from);

/*
 * How many ranks the launcher started on this node (boot_node.c):
 * RCX_LOCAL_SIZE (rcx-run), OMPI_COMM_WORLD_LOCAL_SIZE (Open MPI's
 * mpirun), MPI_LOCALNRANKS (MPICH's hydra); 0 when none says. *from (may
 * be NULL) names the variable.
 */
int rcx__boot_local_size(const char **from);

#ifdef RCX_HAVE_PMIX
/*
 * The pmix backend (boot_pmix.c), once PMIX_RANK and PMIX_NAMESPACE are
 * known to be set; errors as rcx__boot_open.
 */
int rcx__boot_pmix_open(struct rcx__boot **out);
#endif

static inline void rcx__boot_close(struct rcx__boot *b)
{
	if (b)
		b->ops->fini(b);
}

#endif
