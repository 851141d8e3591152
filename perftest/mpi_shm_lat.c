/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The Open MPI side of perftest/shm-record (not built by CMake, not
 * installed; shm-record compiles it with mpicc). Two ranks of one host,
 * half round trip latency in microseconds, the median of -n iterations
 * after a warm-up, one line per size: "SIZE MEDIAN".
 *
 *   mpirun -np 2 mpi_shm_lat MODE ITERS SIZE...
 *
 * MODE: pingpong   MPI_Send/MPI_Recv (as rcx_send_lat)
 *       persistent MPI_Send_init/MPI_Recv_init, MPI_Start/MPI_Wait
 *                  (as rcx_chan_lat)
 *       put        MPI_Put + MPI_Win_flush into an MPI_Win_allocate
 *                  window under MPI_Win_lock_all, the arrival seen by
 *                  polling the window's last byte (as rcx_put_lat)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>

#define WARMUP 1000

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void pingpong(int me, char *sb, char *rb, int size)
{
	if (me == 0) {
		MPI_Send(sb, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
		MPI_Recv(rb, size, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(rb, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		MPI_Send(sb, size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
	}
}

static void persistent(int me, MPI_Request *s, MPI_Request *r)
{
	MPI_Start(r);
	if (me == 0) {
		MPI_Start(s);
		MPI_Wait(s, MPI_STATUS_IGNORE);
		MPI_Wait(r, MPI_STATUS_IGNORE);
	} else {
		MPI_Wait(r, MPI_STATUS_IGNORE);
		MPI_Start(s);
		MPI_Wait(s, MPI_STATUS_IGNORE);
	}
}

/* base: [0, size) written by the peer, [size, 2 size) the origin */
static void put(int me, MPI_Win w, uint8_t *base, int size, uint8_t v)
{
	volatile uint8_t *last = base + size - 1;
	uint8_t *out = base + size;

	if (me == 1)
		while (*last != v)
			MPI_Win_sync(w);
	out[size - 1] = v;
	MPI_Put(out, size, MPI_BYTE, 1 - me, 0, size, MPI_BYTE, w);
	MPI_Win_flush(1 - me, w);
	if (me == 0)
		while (*last != v)
			MPI_Win_sync(w);
}

static double run(const char *mode, int me, int iters, int size)
{
	char *sb = calloc(1, size + 1), *rb = calloc(1, size + 1);
	double *t = calloc(iters, sizeof(double)), t0, med;
	MPI_Request s = MPI_REQUEST_NULL, r = MPI_REQUEST_NULL;
	MPI_Win w = MPI_WIN_NULL;
	uint8_t *base = NULL;
	int i, n = WARMUP + iters;

	if (!strcmp(mode, "persistent")) {
		MPI_Send_init(sb, size, MPI_BYTE, 1 - me, 1, MPI_COMM_WORLD,
			      &s);
		MPI_Recv_init(rb, size, MPI_BYTE, 1 - me, 1, MPI_COMM_WORLD,
			      &r);
	} else if (!strcmp(mode, "put")) {
		MPI_Win_allocate(2 * size, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
				 &base, &w);
		memset(base, 0, 2 * size);
		MPI_Win_lock_all(0, w);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	for (i = 0; i < n; i++) {
		t0 = MPI_Wtime();
		if (!strcmp(mode, "pingpong"))
			pingpong(me, sb, rb, size);
		else if (!strcmp(mode, "persistent"))
			persistent(me, &s, &r);
		else
			put(me, w, base, size, (uint8_t)(i % 255 + 1));
		if (i >= WARMUP)
			t[i - WARMUP] = (MPI_Wtime() - t0) * 1e6 / 2;
	}
	if (s != MPI_REQUEST_NULL) {
		MPI_Request_free(&s);
		MPI_Request_free(&r);
	}
	if (w != MPI_WIN_NULL) {
		MPI_Win_unlock_all(w);
		MPI_Win_free(&w);
	}
	qsort(t, iters, sizeof(double), cmp);
	med = t[iters / 2];
	free(t);
	free(sb);
	free(rb);
	return med;
}

int main(int argc, char **argv)
{
	int me, np, i, iters;
	double med;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	MPI_Comm_size(MPI_COMM_WORLD, &np);
	if (np != 2 || argc < 4 || atoi(argv[2]) < 1) {
		if (me == 0)
			fprintf(stderr,
				"usage: mpirun -np 2 %s "
				"pingpong|persistent|put ITERS SIZE...\n",
				argv[0]);
		MPI_Finalize();
		return 2;
	}
	iters = atoi(argv[2]);
	for (i = 3; i < argc; i++) {
		med = run(argv[1], me, iters, atoi(argv[i]));
		if (me == 0)
			printf("%d %.3f\n", atoi(argv[i]), med);
	}
	MPI_Finalize();
	return 0;
}
