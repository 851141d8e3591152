/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device choice with hwloc: prefer an RDMA device whose locality (the
 * cpuset of its nearest non-I/O ancestor) overlaps the calling thread's
 * binding. A device hwloc shows no locality for (virtual ones such as rxe,
 * or not found at all) is usable from anywhere: it ranks below a local
 * device and above a remote one.
 */
#include <errno.h>
#include <string.h>
#include <hwloc.h>
#include "core.h"

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

static int score(hwloc_topology_t t, hwloc_const_bitmap_t where,
		 const char *name)
{
	hwloc_obj_t o = find_osdev(t, name), anc;

	if (!o)
		return SCORE_ANYWHERE;
	anc = hwloc_get_non_io_ancestor_obj(t, o);
	if (!anc || !anc->cpuset || anc == hwloc_get_root_obj(t) ||
	    hwloc_bitmap_isequal(anc->cpuset,
				 hwloc_topology_get_topology_cpuset(t)))
		return SCORE_ANYWHERE;
	return hwloc_bitmap_intersects(anc->cpuset, where) ? SCORE_LOCAL
							   : SCORE_REMOTE;
}

/*
 * names: n candidate device names in provider order. topo_xml: an hwloc
 * XML file to use instead of this machine (tests), NULL for the machine.
 * where: a cpuset list ("0-3") standing for the caller's binding, NULL for
 * the calling thread's real binding. Writes the chosen index.
 */
int rcx__topo_pick(const char (*names)[64], int n, const char *topo_xml,
		   const char *where_list, int *pick)
{
	hwloc_topology_t t;
	hwloc_bitmap_t where;
	int i, best = -1, best_score = -1, ret = 0;

	if (n <= 0)
		return -ENODEV;
	if (hwloc_topology_init(&t))
		return -ENOMEM;
	hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if ((topo_xml && hwloc_topology_set_xml(t, topo_xml)) ||
	    hwloc_topology_load(t)) {
		hwloc_topology_destroy(t);
		return -EINVAL;
	}
	where = hwloc_bitmap_alloc();
	if (!where) {
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
		int s = score(t, where, names[i]);

		if (s > best_score) {
			best_score = s;
			best = i;
		}
	}
	*pick = best;
out:
	hwloc_bitmap_free(where);
	hwloc_topology_destroy(t);
	return ret;
}
