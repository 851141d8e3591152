/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Locality with hwloc. A device's locality is the cpuset of the nearest
 * non-I/O ancestor of its OpenFabrics OS device; hwloc shows none for
 * virtual devices such as rxe (no PCI parent), for a device it does not
 * find, and we count one local to every cpu as having none either.
 *
 * Device choice: prefer a device whose locality overlaps the calling
 * thread's binding. One without locality is usable from anywhere: it
 * ranks below a local device and above a remote one.
 *
 * Progress-thread placement: the device's locality, or RCX_PROGRESS_CPUS;
 * nothing (no binding) when there is none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hwloc.h>
#include <hwloc/linux.h>
#include "lib/core/core.h"

enum { SCORE_REMOTE = 0, SCORE_ANYWHERE = 1, SCORE_LOCAL = 2 };

static hwloc_obj_t find_osdev(hwloc_topology_t t, const char *name)
{
	hwloc_obj_t o = NULL;

	while ((o = hwloc_get_next_osdev(t, o)))
		if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS &&
		    o->name && !strcmp(o->name, name))
			return o;
	return NULL;
}

/* The device's locality; NULL: none (see the top of the file). */
static hwloc_const_cpuset_t dev_cpuset(hwloc_topology_t t, const char *name)
{
	hwloc_obj_t o = find_osdev(t, name), anc;

	if (!o)
		return NULL;
	anc = hwloc_get_non_io_ancestor_obj(t, o);
	if (!anc || !anc->cpuset || anc == hwloc_get_root_obj(t) ||
	    hwloc_bitmap_isequal(anc->cpuset,
				 hwloc_topology_get_topology_cpuset(t)))
		return NULL;
	return anc->cpuset;
}

/*
 * A device's local_cpus mask in sysfs (what hwloc's I/O discovery reads
 * too) into set; false: no such file or an empty mask.
 */
static bool sysfs_mask(const char *name, hwloc_bitmap_t set)
{
	char path[160];

	return name[0] &&
	       snprintf(path, sizeof(path),
			"/sys/class/infiniband/%s/device/local_cpus",
			name) < (int)sizeof(path) &&
	       !hwloc_linux_read_path_as_cpumask(path, set) &&
	       !hwloc_bitmap_iszero(set);
}

/*
 * A device's locality on this machine into set; false: none (see
 * sysfs_mask, or every cpu of the topology t).
 */
static bool sysfs_near(hwloc_topology_t t, const char *name, hwloc_bitmap_t set)
{
	if (!sysfs_mask(name, set))
		return false;
	hwloc_bitmap_and(set, set, hwloc_topology_get_topology_cpuset(t));
	return !hwloc_bitmap_iszero(set) &&
	       !hwloc_bitmap_isequal(set,
				     hwloc_topology_get_topology_cpuset(t));
}

/* xml: the topology came from an XML file, with its I/O objects */
static int score(hwloc_topology_t t, bool xml, hwloc_const_bitmap_t where,
		 const char *name, hwloc_bitmap_t tmp)
{
	hwloc_const_cpuset_t near;

	if (xml)
		near = dev_cpuset(t, name);
	else
		near = sysfs_near(t, name, tmp) ? tmp : NULL;
	if (!near)
		return SCORE_ANYWHERE;
	return hwloc_bitmap_intersects(near, where) ? SCORE_LOCAL
						    : SCORE_REMOTE;
}

/* topo_xml: a file, NULL for this machine; io: with I/O objects */
static int topo_load(const char *topo_xml, bool io, hwloc_topology_t *out)
{
	hwloc_topology_t t;

	if (hwloc_topology_init(&t))
		return -ENOMEM;
	if (io)
		hwloc_topology_set_io_types_filter(
			t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if ((topo_xml && hwloc_topology_set_xml(t, topo_xml)) ||
	    hwloc_topology_load(t)) {
		hwloc_topology_destroy(t);
		return -EINVAL;
	}
	*out = t;
	return 0;
}

/*
 * names: n candidate device names in provider order. topo_xml: an hwloc
 * XML file to use instead of this machine (tests), NULL for the machine.
 * where: a cpuset list ("0-3") standing for the caller's binding, NULL for
 * the calling thread's real binding. Writes the chosen index.
 *
 * On this machine one candidate is the choice, and several are told
 * apart by their sysfs masks over a topology without I/O discovery:
 * discovering PCI costs tens of milliseconds on a server (about 30
 * million instructions), paid by every rank at every rcx_ctx_create.
 */
int rcx__topo_pick(const char (*names)[64], int n, const char *topo_xml,
		   const char *where_list, int *pick)
{
	hwloc_topology_t t;
	hwloc_bitmap_t where, tmp;
	int i, best = -1, best_score = -1, ret;

	if (n <= 0)
		return -ENODEV;
	if (n == 1 && !topo_xml && !where_list) {
		*pick = 0;
		return 0;
	}
	ret = topo_load(topo_xml, topo_xml != NULL, &t);
	if (ret)
		return ret;
	where = hwloc_bitmap_alloc();
	tmp = hwloc_bitmap_alloc();
	if (!where || !tmp) {
		ret = -ENOMEM;
		goto out;
	}
	if (where_list) {
		if (hwloc_bitmap_list_sscanf(where, where_list)) {
			ret = -EINVAL;
			goto out;
		}
	} else if (hwloc_get_cpubind(t, where, HWLOC_CPUBIND_THREAD)) {
		hwloc_bitmap_copy(where, hwloc_topology_get_topology_cpuset(t));
	}
	for (i = 0; i < n; i++) {
		int s = score(t, topo_xml != NULL, where, names[i], tmp);

		if (s > best_score) {
			best_score = s;
			best = i;
		}
	}
	*pick = best;
out:
	hwloc_bitmap_free(tmp);
	hwloc_bitmap_free(where);
	hwloc_topology_destroy(t);
	return ret;
}

#define CPU_MAX 65535 /* the highest cpu number a list may name */

/* a cpu number at *p (decimal digits only), *p moved past it */
static bool cpu_num(const char **p, unsigned long *out)
{
	const char *s = *p;
	unsigned long u = 0;

	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		u = u * 10 + (unsigned long)(*s - '0');
		if (u > CPU_MAX)
			return false;
	}
	*p = s;
	*out = u;
	return true;
}

/*
 * Strict, before hwloc parses it: hwloc takes a reversed range ("5-2",
 * as no cpu), empty items, "1-2-3" and "-3". A list is items "N",
 * "N-M" with N <= M, or "N-" (to the last cpu), separated by single
 * commas.
 */
int rcx__topo_cpus_check(const char *list)
{
	unsigned long lo, hi;
	const char *p = list;

	for (;;) {
		if (!cpu_num(&p, &lo))
			return -EINVAL;
		if (*p == '-') {
			p++;
			if (*p && *p != ',' && (!cpu_num(&p, &hi) || hi < lo))
				return -EINVAL;
		}
		if (!*p)
			return 0;
		if (*p++ != ',')
			return -EINVAL;
	}
}

/*
 * Where a thread serving dev should run, into set (left empty: unbound),
 * and the topology it was decided on (*tp, NULL when nothing had to be
 * loaded). On this machine the device's locality comes from its
 * local_cpus mask in sysfs, which is what hwloc's I/O discovery reads
 * too (and hwloc_ibv_get_device_cpuset): loading a topology with I/O
 * discovery costs seconds, one without it milliseconds, and none at all
 * is loaded for a device without the file (virtual ones).
 */
static int near_set(const char *topo_xml, const char *dev, const char *override,
		    hwloc_bitmap_t set, hwloc_topology_t *tp)
{
	bool by_osdev = topo_xml && !(override && override[0]);
	hwloc_const_cpuset_t near, all;
	hwloc_topology_t t;
	int ret;

	*tp = NULL;
	hwloc_bitmap_zero(set);
	if (override && override[0]) {
		if (rcx__topo_cpus_check(override) ||
		    hwloc_bitmap_list_sscanf(set, override))
			return -EINVAL;
	} else if (!topo_xml && !sysfs_mask(dev, set)) {
		hwloc_bitmap_zero(set);
		return 0;
	}
	ret = topo_load(topo_xml, by_osdev, &t);
	if (ret)
		return ret;
	if (by_osdev && (near = dev_cpuset(t, dev)))
		hwloc_bitmap_copy(set, near);
	/* cpus the process may not use (cgroups) or that do not exist */
	all = hwloc_topology_get_topology_cpuset(t);
	hwloc_bitmap_and(set, set, all);
	if (hwloc_bitmap_isequal(set, all))
		hwloc_bitmap_zero(set);
	*tp = t;
	return 0;
}

/* set as a cpulist in cpus[len], "" when empty */
static int set_print(hwloc_const_bitmap_t set, char *cpus, size_t len)
{
	char *s = NULL;
	int ret = 0;

	if (hwloc_bitmap_iszero(set)) {
		if (!len)
			return -ENOSPC;
		cpus[0] = '\0';
		return 0;
	}
	if (hwloc_bitmap_list_asprintf(&s, set) < 0)
		return -ENOMEM;
	if (strlen(s) >= len)
		ret = -ENOSPC;
	else
		memcpy(cpus, s, strlen(s) + 1);
	free(s);
	return ret;
}

int rcx__topo_near_cpus(const char *topo_xml, const char *dev,
			const char *override, char *cpus, size_t len)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	hwloc_topology_t t = NULL;
	int ret;

	if (!set)
		return -ENOMEM;
	ret = near_set(topo_xml, dev, override, set, &t);
	if (!ret)
		ret = set_print(set, cpus, len);
	if (t)
		hwloc_topology_destroy(t);
	hwloc_bitmap_free(set);
	return ret;
}

int rcx__topo_bind_near(const char *dev, const char *override, char *cpus,
			size_t len)
{
	hwloc_bitmap_t set;
	hwloc_topology_t t = NULL;
	int ret = -ENOSPC;

	if (!len)
		return ret;
	cpus[0] = '\0';
	set = hwloc_bitmap_alloc();
	if (!set)
		return -ENOMEM;
	ret = near_set(NULL, dev, override, set, &t);
	if (!ret)
		ret = set_print(set, cpus, len);
	if (!ret && !hwloc_bitmap_iszero(set) &&
	    hwloc_set_cpubind(t, set, HWLOC_CPUBIND_THREAD))
		ret = errno ? -errno : -EINVAL;
	if (ret)
		cpus[0] = '\0';
	if (t)
		hwloc_topology_destroy(t);
	hwloc_bitmap_free(set);
	return ret;
}
