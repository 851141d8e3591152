/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Open MPI side of perftest/coll-record (not built by CMake, not
 * installed; coll-record compiles it with mpicc). Latency of one
 * collective on every rank of mpirun, as rcx_coll_lat measures it: rank
 * 0's time from the call (or MPI_Start) to its return (or MPI_Wait's),
 * the median of ITERS iterations after a warm-up, one line per size:
 * "SIZE MEDIAN" in microseconds.
 *
 *   mpirun -np 4 mpi_coll_lat MODE ITERS SIZE...
 *
 * MODE: allreduce       MPI_Allreduce, int64 MPI_SUM in place
 *       allreduce_init  MPIX_Allreduce_init (Open MPI's pcollreq
 *                       extension), MPI_Start/MPI_Wait
 *       bcast           MPI_Bcast from rank 0
 *       barrier         MPI_Barrier (size ignored)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) || __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#define WARMUP 100

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double run(const char *mode, int iters, int64_t *buf, int count)
{
	double *t = malloc((size_t)iters * sizeof(*t)), t0, med;
	MPI_Request req = MPI_REQUEST_NULL;
	int i, j, me;

	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (!strcmp(mode, "allreduce_init")) {
#ifdef OMPI_HAVE_MPI_EXT_PCOLLREQ
		MPIX_Allreduce_init(MPI_IN_PLACE, buf, count, MPI_INT64_T,
				    MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
				    &req);
#else
		fprintf(stderr, "no MPIX_Allreduce_init in this MPI\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
#endif
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (i = -WARMUP; i < iters; i++) {
		for (j = 0; j < count; j++)
			buf[j] = (int64_t)(me + 1) * i + j;
		t0 = MPI_Wtime();
		if (req != MPI_REQUEST_NULL) {
			MPI_Start(&req);
			MPI_Wait(&req, MPI_STATUS_IGNORE);
		} else if (!strcmp(mode, "allreduce")) {
			MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_INT64_T,
				      MPI_SUM, MPI_COMM_WORLD);
		} else if (!strcmp(mode, "bcast")) {
			MPI_Bcast(buf, count, MPI_INT64_T, 0, MPI_COMM_WORLD);
		} else {
			MPI_Barrier(MPI_COMM_WORLD);
		}
		if (i >= 0)
			t[i] = (MPI_Wtime() - t0) * 1e6;
	}
	if (req != MPI_REQUEST_NULL)
		MPI_Request_free(&req);
	qsort(t, (size_t)iters, sizeof(*t), cmp);
	med = t[iters / 2];
	free(t);
	return med;
}

int main(int argc, char **argv)
{
	int me, i, iters, size, count;
	int64_t *buf;
	double med;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	if (argc < 4) {
		if (!me)
			fprintf(stderr,
				"usage: mpi_coll_lat MODE ITERS SIZE...\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	iters = atoi(argv[2]);
	for (i = 3; i < argc; i++) {
		size = atoi(argv[i]);
		count = size / 8 > 0 ? size / 8 : 1;
		buf = calloc((size_t)count, sizeof(*buf));
		med = run(argv[1], iters, buf, count);
		if (!me)
			printf("%d %.3f\n", size, med);
		fflush(stdout);
		free(buf);
	}
	MPI_Finalize();
	return 0;
}
