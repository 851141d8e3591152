/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device choice with hwloc on a synthetic machine (tests/data): two
 * packages, each with a NUMA node, two PUs and an HCA behind its own PCI
 * bridge (mlx5_0 near PUs 0-1, mlx5_1 near PUs 2-3).
 */
#include <errno.h>
#include "lib/core.h"
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

static const CU_TestInfo tests[] = {
	{ "nearest", test_nearest },
	{ "reversed_list", test_reversed_list },
	{ "no_locality", test_no_locality },
	{ "spanning_binding", test_spanning_binding },
	{ "errors", test_errors },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_topo = { "topo", TU_HOST, NULL, NULL, tests };
