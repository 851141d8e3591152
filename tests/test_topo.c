/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device choice and progress-thread placement with hwloc on a synthetic
 * machine (tests/data): two packages, each with a NUMA node, two PUs and
 * an HCA behind its own PCI bridge (mlx5_0 near PUs 0-1, mlx5_1 near PUs
 * 2-3).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hwloc.h>
#include "lib/core/core.h"
#include "tu.h"

#define XML RCX_SOURCE_DIR "/tests/data/two-numa-two-hca.xml"

static const char names[][64] = { "mlx5_0", "mlx5_1" };

static int pick(const char (*n)[64], int count, const char *where)
{
	int i = -1, ret = rcx__topo_pick(n, count, XML, where, &i);

	return ret ? ret : i;
}

static void test_nearest(void)
{
	/* the HCA on the caller's package wins, whatever the list order */
	CU_ASSERT_EQUAL(pick(names, 2, "0"), 0);
	CU_ASSERT_EQUAL(pick(names, 2, "1"), 0);
	CU_ASSERT_EQUAL(pick(names, 2, "2"), 1);
	CU_ASSERT_EQUAL(pick(names, 2, "3"), 1);
}

static void test_reversed_list(void)
{
	static const char rev[][64] = { "mlx5_1", "mlx5_0" };

	CU_ASSERT_EQUAL(pick(rev, 2, "0"), 1);
	CU_ASSERT_EQUAL(pick(rev, 2, "3"), 0);
}

static void test_no_locality(void)
{
	/* rxe is virtual: hwloc shows no locality, but it is usable, and a
	 * local HCA still comes first; a remote one comes after it */
	static const char mix[][64] = { "rxe0", "mlx5_1" };

	CU_ASSERT_EQUAL(pick(mix, 2, "3"), 1);
	CU_ASSERT_EQUAL(pick(mix, 2, "0"), 0);
	CU_ASSERT_EQUAL(pick(mix, 1, "0"), 0);
}

static void test_spanning_binding(void)
{
	/* bound across both packages: both are local, the first listed wins */
	CU_ASSERT_EQUAL(pick(names, 2, "0-3"), 0);
}

static void test_errors(void)
{
	int i = 7;

	CU_ASSERT_EQUAL(rcx__topo_pick(names, 0, XML, "0", &i), -ENODEV);
	CU_ASSERT_EQUAL(rcx__topo_pick(names, 2, "/nonexistent.xml", "0", &i),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx__topo_pick(names, 2, XML, "not-a-cpuset", &i),
			-EINVAL);
	CU_ASSERT_EQUAL(i, 7); /* untouched on error */
	/* this machine, the calling thread's own binding */
	CU_ASSERT_EQUAL(rcx__topo_pick(names, 2, NULL, NULL, &i), 0);
	CU_ASSERT(i == 0 || i == 1);
}

/* ---- progress-thread placement */

static char cpus[RCX__CPULIST_LEN];

static const char *near(const char *xml, const char *dev, const char *ovr)
{
	int ret;

	strcpy(cpus, "untouched");
	ret = rcx__topo_near_cpus(xml, dev, ovr, cpus, sizeof(cpus));
	return ret == -EINVAL ? "EINVAL" : ret ? "error" : cpus;
}

static void test_progress_near(void)
{
	/* each HCA's progress thread goes to its NUMA node's cpus */
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", NULL), "0-1");
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_1", NULL), "2-3");
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_1", ""), "2-3");
}

/*
 * One package, one NUMA node, the HCA's bridge attached to the machine:
 * the device is local to every cpu.
 */
static const char flat_xml[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	"<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
	"<topology version=\"2.0\">\n"
	"<object type=\"Machine\" os_index=\"0\" cpuset=\"0x00000003\" "
	"complete_cpuset=\"0x00000003\" allowed_cpuset=\"0x00000003\" "
	"nodeset=\"0x00000001\" complete_nodeset=\"0x00000001\" "
	"allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
	"<object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x00000003\" "
	"complete_cpuset=\"0x00000003\" nodeset=\"0x00000001\" "
	"complete_nodeset=\"0x00000001\" gp_index=\"2\" "
	"local_memory=\"1073741824\"/>\n"
	"<object type=\"PU\" os_index=\"0\" cpuset=\"0x00000001\" "
	"complete_cpuset=\"0x00000001\" nodeset=\"0x00000001\" "
	"complete_nodeset=\"0x00000001\" gp_index=\"3\"/>\n"
	"<object type=\"PU\" os_index=\"1\" cpuset=\"0x00000002\" "
	"complete_cpuset=\"0x00000002\" nodeset=\"0x00000001\" "
	"complete_nodeset=\"0x00000001\" gp_index=\"4\"/>\n"
	"<object type=\"Bridge\" gp_index=\"5\" bridge_type=\"0-1\" "
	"depth=\"0\" bridge_pci=\"0000:[01-01]\">\n"
	"<object type=\"PCIDev\" gp_index=\"6\" "
	"pci_busid=\"0000:01:00.0\" "
	"pci_type=\"0207 [15b3:1017] [15b3:0020] 00\" "
	"pci_link_speed=\"0.000000\">\n"
	"<object type=\"OSDev\" gp_index=\"7\" name=\"mlx5_0\" "
	"osdev_type=\"3\"/>\n"
	"</object>\n</object>\n</object>\n</topology>\n";

static void test_progress_unbound(void)
{
	char path[] = "/tmp/rcx-topo-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;

	/* no locality: virtual (rxe), unknown, or no device name */
	CU_ASSERT_STRING_EQUAL(near(XML, "rxe0", NULL), "");
	CU_ASSERT_STRING_EQUAL(near(XML, "", NULL), "");
	/* local to every cpu */
	CU_ASSERT_FATAL(fd >= 0);
	f = fdopen(fd, "w");
	CU_ASSERT_FATAL(f && fputs(flat_xml, f) >= 0 && !fclose(f));
	CU_ASSERT_STRING_EQUAL(near(path, "mlx5_0", NULL), "");
	/* ... which device choice counts as usable from anywhere too */
	CU_ASSERT_EQUAL(rcx__topo_pick(names, 1, path, "1", &(int){ -1 }), 0);
	unlink(path);
	/* this machine, through sysfs: a device that does not exist */
	CU_ASSERT_STRING_EQUAL(near(NULL, "no-such-device", NULL), "");
	CU_ASSERT_STRING_EQUAL(near(NULL, "", NULL), "");
}

static void test_progress_override(void)
{
	struct rcx__config c;

	/* RCX_PROGRESS_CPUS wins over the device's locality, or its lack */
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", "3"), "3");
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_1", "0,1"), "0-1");
	CU_ASSERT_STRING_EQUAL(near(XML, "rxe0", "2"), "2");
	/* cpus the machine does not have are dropped; none left, or every
	 * cpu ("0-" is open-ended): unbound */
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", "1,8-9"), "1");
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", "8"), "");
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", "0-"), "");
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", "0-3"), "");
	/* malformed: an error, the output untouched */
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", "cpu0"), "EINVAL");
	CU_ASSERT_STRING_EQUAL(cpus, "untouched");
	CU_ASSERT_STRING_EQUAL(near(NULL, "mlx5_0", "1-x"), "EINVAL");
	/* from the environment, checked when the context is configured */
	setenv("RCX_PROGRESS_CPUS", "2-3", 1);
	CU_ASSERT_EQUAL(rcx__config_load(&c), 0);
	CU_ASSERT_STRING_EQUAL(c.progress_cpus, "2-3");
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", c.progress_cpus), "2-3");
	setenv("RCX_PROGRESS_CPUS", "two", 1);
	CU_ASSERT_EQUAL(rcx__config_load(&c), -EINVAL);
	CU_ASSERT_STRING_EQUAL(c.progress_cpus, "2-3"); /* untouched */
	unsetenv("RCX_PROGRESS_CPUS");
	CU_ASSERT_EQUAL(rcx__config_load(&c), 0);
	CU_ASSERT_STRING_EQUAL(c.progress_cpus, "");
}

/*
 * A cpulist is cpus and low-high ranges (high may be left open), comma
 * separated, nothing else: a reversed range, an empty item, a sign or a
 * second dash is refused, from RCX_PROGRESS_CPUS too.
 */
static void test_cpulist_strict(void)
{
	static const char *const bad[] = {
		"5-2",	 "7,5-2",
		"1-2-3", "1,,2",
		"1,",	 ",1",
		"",	 " 1",
		"1 ",	 "0x3",
		"+1",	 "1-+2",
		"-3",	 "99999999999999999999",
	};
	static const char *const good[] = { "0",  "2-5",   "3-3",
					    "0-", "0-3,8", "1,8-9" };
	struct rcx__config c;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rcx__topo_cpus_check(bad[i]) != -EINVAL)
			fprintf(stderr, "\n    accepted: \"%s\"", bad[i]);
		CU_ASSERT_EQUAL(rcx__topo_cpus_check(bad[i]), -EINVAL);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CU_ASSERT_EQUAL(rcx__topo_cpus_check(good[i]), 0);
	CU_ASSERT_STRING_EQUAL(near(XML, "mlx5_0", "5-2"), "EINVAL");
	setenv("RCX_PROGRESS_CPUS", "5-2", 1);
	CU_ASSERT_EQUAL(rcx__config_load(&c), -EINVAL);
	unsetenv("RCX_PROGRESS_CPUS");
}

static void test_progress_errors(void)
{
	char small[3] = "ab";

	CU_ASSERT_STRING_EQUAL(near("/nonexistent.xml", "mlx5_0", NULL),
			       "EINVAL");
	CU_ASSERT_EQUAL(
		rcx__topo_near_cpus(XML, "mlx5_0", NULL, small, sizeof(small)),
		-ENOSPC);
	CU_ASSERT_STRING_EQUAL(small, "ab");
	CU_ASSERT_EQUAL(rcx__topo_near_cpus(XML, "rxe0", NULL, small, 1), 0);
	CU_ASSERT_STRING_EQUAL(small, "");
	CU_ASSERT_EQUAL(rcx__topo_near_cpus(XML, "rxe0", NULL, small, 0),
			-ENOSPC);
}

/*
 * What the progress thread runs first, on a thread of this machine: bound
 * where the decision says (here by RCX_PROGRESS_CPUS, to its first usable
 * cpu), and left alone when there is nothing to bind to.
 */
struct bind_arg {
	const char *dev, *ovr;
	int ret;
	char cpus[RCX__CPULIST_LEN];
	hwloc_bitmap_t before, after;
};

static void *bind_main(void *p)
{
	struct bind_arg *a = p;
	hwloc_topology_t t;

	if (hwloc_topology_init(&t) || hwloc_topology_load(t)) {
		a->ret = -ENOMEM;
		return NULL;
	}
	hwloc_get_cpubind(t, a->before, HWLOC_CPUBIND_THREAD);
	a->ret = rcx__topo_bind_near(a->dev, a->ovr, a->cpus, sizeof(a->cpus));
	hwloc_get_cpubind(t, a->after, HWLOC_CPUBIND_THREAD);
	hwloc_topology_destroy(t);
	return NULL;
}

static void bind_run(struct bind_arg *a, const char *dev, const char *ovr)
{
	pthread_t th;

	memset(a, 0, sizeof(*a));
	a->dev = dev;
	a->ovr = ovr;
	a->before = hwloc_bitmap_alloc();
	a->after = hwloc_bitmap_alloc();
	CU_ASSERT_FATAL(a->before && a->after);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, bind_main, a), 0);
	pthread_join(th, NULL);
}

static void bind_done(struct bind_arg *a)
{
	hwloc_bitmap_free(a->before);
	hwloc_bitmap_free(a->after);
}

static void test_progress_bind(void)
{
	struct bind_arg a;
	hwloc_topology_t t;
	char one[16];
	int cpu;

	bind_run(&a, "no-such-device", NULL);
	CU_ASSERT_EQUAL(a.ret, 0);
	CU_ASSERT_STRING_EQUAL(a.cpus, "");
	CU_ASSERT(hwloc_bitmap_isequal(a.before, a.after));
	bind_done(&a);

	CU_ASSERT_FATAL(!hwloc_topology_init(&t) && !hwloc_topology_load(t));
	cpu = hwloc_bitmap_first(hwloc_topology_get_topology_cpuset(t));
	if (hwloc_bitmap_weight(hwloc_topology_get_topology_cpuset(t)) < 2) {
		printf("\n    one cpu: no binding to check\n");
		hwloc_topology_destroy(t);
		return;
	}
	snprintf(one, sizeof(one), "%d", cpu);
	bind_run(&a, "no-such-device", one);
	CU_ASSERT_EQUAL(a.ret, 0);
	CU_ASSERT_STRING_EQUAL(a.cpus, one);
	CU_ASSERT_EQUAL(hwloc_bitmap_weight(a.after), 1);
	CU_ASSERT(hwloc_bitmap_isset(a.after, cpu));
	bind_done(&a);
	hwloc_topology_destroy(t);
}

static const CU_TestInfo tests[] = {
	{ "nearest", test_nearest },
	{ "reversed_list", test_reversed_list },
	{ "no_locality", test_no_locality },
	{ "spanning_binding", test_spanning_binding },
	{ "errors", test_errors },
	{ "progress_near", test_progress_near },
	{ "progress_unbound", test_progress_unbound },
	{ "progress_override", test_progress_override },
	{ "progress_errors", test_progress_errors },
	{ "progress_bind", test_progress_bind },
	{ "cpulist_strict", test_cpulist_strict },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_topo = { "topo", TU_HOST, NULL, NULL, tests };
