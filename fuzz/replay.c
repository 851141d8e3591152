/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A fuzz target without libFuzzer: runs LLVMFuzzerTestOneInput once on
 * each file named, or on each file of each directory named (the seed
 * corpus). The ordinary build makes one per target so the test suite
 * replays the committed seeds on every run (a crash or a failed oracle
 * aborts); RCX_BUILD_FUZZ builds the real fuzzers.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order; the number run, or -1. */
static int run_dir(const char *dir)
{
	char **names = NULL, path[4096];
	struct dirent *e;
	int n = 0, i, ret = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char **nn;

		if (e->d_name[0] == '.')
			continue;
		nn = realloc(names, (size_t)(n + 1) * sizeof(*names));
		if (!nn || !(nn[n] = strdup(e->d_name))) {
			names = nn ? nn : names;
			ret = -1;
			break;
		}
		names = nn;
		n++;
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof(*names), cmp);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!ret && run_file(path))
			ret = -1;
		free(names[i]);
	}
	free(names);
	return ret ? -1 : n;
}

int main(int argc, char **argv)
{
	struct stat st;
	int i, n, total = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: not found\n", argv[i]);
			return 1;
		}
		n = S_ISDIR(st.st_mode) ? run_dir(argv[i])
					: (run_file(argv[i]) ? -1 : 1);
		if (n < 0)
			return 1;
		total += n;
	}
	/* an empty corpus replays nothing: that is no pass */
	if (!total) {
		fprintf(stderr, "replay: no inputs\n");
		return 1;
	}
	printf("replay: %d inputs, every one passed\n", total);
	return 0;
}
