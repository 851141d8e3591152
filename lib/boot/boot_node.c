/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which node this process runs on, as the launcher names it. Two
 * processes whose node keys are equal share a kernel and memory: the auto
 * provider connects them through shared memory, the others through the
 * NIC. In order:
 *
 *	RCX_NODE	the user's (or rcx-run --nodes') word, taken as is: it
 *			may split one host into simulated nodes
 *	SLURMD_NODENAME	srun's node name for the task (Slurm)
 *	PMIX_HOSTNAME	the PMIx launcher's node name (mpirun, prterun)
 *	host name	gethostname(), when no launcher says
 *
 * The name is followed by what shared memory needs besides: the kernel
 * (its boot id), the PID namespace (the shm provider watches its peers
 * through pidfds) and the /dev/shm the segments live in. So two machines
 * that share a name (cloned images) are not taken for one, and neither are
 * two containers of one node that Slurm calls local but which cannot map
 * each other's segments; a name the launcher gives can split one kernel
 * into several nodes (RCX_NODE, rcx-run --nodes), never join two.
 *
 * The launchers also say how many ranks they put on the node: a wait
 * yields its cpu when these outnumber the cpus (RCX_YIELD).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "lib/boot/boot.h"
#include "lib/log/log.h"

static const char *const launcher_vars[] = {
	"SLURMD_NODENAME",
	"PMIX_HOSTNAME",
};

static const char *const local_size_vars[] = {
	"RCX_LOCAL_SIZE",
	"OMPI_COMM_WORLD_LOCAL_SIZE",
	"MPI_LOCALNRANKS",
};

static void boot_id(char *out, size_t len)
{
	ssize_t n = -1;
	int fd;

	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, out, len - 1);
		close(fd);
	}
	out[n > 0 ? n : 0] = 0;
	out[strcspn(out, "\n")] = 0;
}

/* boot id, PID namespace and /dev/shm: equal where memory can be shared */
static void kernel_id(char *out, size_t len)
{
	struct stat ns = { 0 }, shm = { 0 };
	char boot[64];

	boot_id(boot, sizeof(boot));
	stat("/proc/self/ns/pid", &ns);
	stat("/dev/shm", &shm);
	snprintf(out, len, "%s/%llx/%llx:%llx", boot,
		 (unsigned long long)ns.st_ino, (unsigned long long)shm.st_dev,
		 (unsigned long long)shm.st_ino);
}

int rcx__boot_node(char *out, size_t len, const char **from)
{
	const char *name = getenv("RCX_NODE"), *src = "RCX_NODE";
	char host[256] = "", kern[160];
	size_t i;
	int n;

	if (!out || !len)
		return -EINVAL;
	if (!name || !*name)
		name = NULL;
	for (i = 0;
	     !name && i < sizeof(launcher_vars) / sizeof(launcher_vars[0]);
	     i++) {
		name = getenv(launcher_vars[i]);
		if (name && *name) {
			src = launcher_vars[i];
			break;
		}
		name = NULL;
	}
	if (!name) {
		gethostname(host, sizeof(host) - 1);
		name = host;
		src = "host name";
	}
	kernel_id(kern, sizeof(kern));
	n = snprintf(out, len, "%s:%s", name, kern);
	if (from)
		*from = src;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int rcx__boot_local_size(const char **from)
{
	const char *v;
	char *end;
	long n;
	size_t i;

	for (i = 0; i < sizeof(local_size_vars) / sizeof(local_size_vars[0]);
	     i++) {
		v = getenv(local_size_vars[i]);
		if (!v || !*v)
			continue;
		n = strtol(v, &end, 10);
		if (*end || n < 1 || n > 1 << 20) {
			rcx__log(RCX__LOG_WARN, "boot",
				 "%s=%s is not a count of ranks: ignored",
				 local_size_vars[i], v);
			continue; /* the next launcher's word */
		}
		if (from)
			*from = local_size_vars[i];
		return (int)n;
	}
	return 0;
}
