/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rcx_strerror names every code, the provider registry holds, and the
 * info calls reject bad input without side effects.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <rcx/rcx.h>
#include <stdio.h>
#include <stdlib.h>
#include "providers/provider.h"
#include "lib/core/core.h"
#include "tu.h"

static void test_every_code_named(void)
{
	int e;

	CU_ASSERT_STRING_EQUAL(rcx_strerror(0), "success");
	for (e = RCX_ERR_PROC_FAILED; e > RCX_ERR_LAST; e--) {
		const char *s = rcx_strerror(e);

		CU_ASSERT_PTR_NOT_NULL_FATAL(s);
		CU_ASSERT_EQUAL(strncmp(s, "RCX_ERR_", 8), 0);
	}
	CU_ASSERT_STRING_EQUAL(rcx_strerror(RCX_ERR_LAST), "unknown error");
	CU_ASSERT_STRING_EQUAL(rcx_strerror(5), "unknown error");
	CU_ASSERT_STRING_EQUAL(rcx_strerror(-99999), "unknown error");
	CU_ASSERT_EQUAL(strncmp(rcx_strerror(-EINVAL), "EINVAL: ", 8), 0);
	CU_ASSERT_EQUAL(strncmp(rcx_strerror(-EBUSY), "EBUSY: ", 7), 0);
	CU_ASSERT_EQUAL(strncmp(rcx_strerror(-ETIMEDOUT), "ETIMEDOUT: ", 11),
			0);
}

static void test_codes_distinct_from_errno(void)
{
	/* rcx codes must never be mistaken for a negative errno */
	CU_ASSERT(-RCX_ERR_PROC_FAILED > EHWPOISON);
	CU_ASSERT(RCX_ERR_WIN_INVALID != RCX_ERR_PROC_FAILED);
}

static void test_version(void)
{
	CU_ASSERT_STRING_EQUAL(rcx_version(), RCX_VERSION_STRING);
}

static void test_provider_registry(void)
{
	const struct rcx_provider_ops *const *p;

	CU_ASSERT_PTR_NULL(rcx__provider_find("no-such-provider"));
	for (p = rcx__providers; *p; p++) {
		CU_ASSERT_PTR_EQUAL(rcx__provider_find((*p)->name), *p);
		/* every op is set: a missing one points at a typed stub */
		CU_ASSERT_PTR_NOT_NULL((*p)->dev_open);
		CU_ASSERT_PTR_NOT_NULL((*p)->post_send);
		CU_ASSERT_PTR_NOT_NULL((*p)->cq_poll);
		CU_ASSERT_PTR_NOT_NULL((*p)->cm_poll);
		CU_ASSERT_PTR_NOT_NULL((*p)->event_fd);
	}
#ifdef RCX_HAVE_VERBS
	CU_ASSERT_PTR_NOT_NULL(rcx__provider_find("verbs"));
#endif
}

/* every configuration variable is documented in docs/config.md */
static void test_config_documented(void)
{
	const struct rcx__config_var *v;
	char *doc, name[80];
	FILE *f = fopen(RCX_SOURCE_DIR "/docs/config.md", "r");
	long n;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	doc = calloc(1, n + 1);
	CU_ASSERT_FATAL(doc && fread(doc, 1, n, f) == (size_t)n);
	fclose(f);
	for (v = rcx__config_vars; v->name; v++) {
		snprintf(name, sizeof(name), "`%s`", v->name);
		if (!strstr(doc, name))
			fprintf(stderr, "undocumented: %s\n", v->name);
		CU_ASSERT_PTR_NOT_NULL(strstr(doc, name));
	}
	free(doc);
}

/* defaults load; bad values are refused by name */
static void test_config_parse(void)
{
	struct rcx__config c;

	unsetenv("RCX_EAGER_SIZE");
	CU_ASSERT_EQUAL_FATAL(rcx__config_load(&c), 0);
	CU_ASSERT_EQUAL(c.eager_size, 8192);
	CU_ASSERT_EQUAL(c.qp_retry, 6);
	setenv("RCX_EAGER_SIZE", "4096", 1);
	CU_ASSERT_EQUAL(rcx__config_load(&c), 0);
	CU_ASSERT_EQUAL(c.eager_size, 4096);
	setenv("RCX_EAGER_SIZE", "12abc", 1);
	CU_ASSERT_EQUAL(rcx__config_load(&c), -EINVAL);
	CU_ASSERT_EQUAL(c.eager_size, 4096); /* untouched on error */
	setenv("RCX_EAGER_SIZE", "-1", 1);
	CU_ASSERT_EQUAL(rcx__config_load(&c), -EINVAL);
	unsetenv("RCX_EAGER_SIZE");
	setenv("RCX_QP_RETRY", "7", 1);
	CU_ASSERT_EQUAL(rcx__config_load(&c), -EINVAL);
	unsetenv("RCX_QP_RETRY");
	setenv("RCX_DEVICE",
	       "a-device-name-that-is-far-too-long-for-the-field-"
	       "of-sixty-four-bytes",
	       1);
	CU_ASSERT_EQUAL(rcx__config_load(&c), -EINVAL);
	unsetenv("RCX_DEVICE");
}

/* Info objects: NULL, foreign and over-long input, each its named error. */
static void test_info_bad_input(void)
{
	uint64_t foreign[4] = { 0 }; /* not an info: no magic */
	struct rcx_info *i = NULL, *fi = (struct rcx_info *)foreign;
	char key[RCX_INFO_KEY_MAX + 2], val[RCX_INFO_VAL_MAX + 2], out[8];
	int flag = 7, k;

	CU_ASSERT_EQUAL(rcx_info_create(NULL), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(rcx_info_create(&i), 0);
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = 0;
	memset(val, 'v', sizeof(val) - 1);
	val[sizeof(val) - 1] = 0;
	CU_ASSERT_EQUAL(rcx_info_set(NULL, "a", "b"), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_set(fi, "a", "b"), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_set(i, NULL, "b"), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_set(i, "a", NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_set(i, "", "b"), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_set(i, key, "b"), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_set(i, "a", val), -EINVAL);
	/* none of that set anything */
	CU_ASSERT_EQUAL(rcx_info_get(i, "a", out, sizeof(out), &flag), 0);
	CU_ASSERT_EQUAL(flag, 0);
	key[RCX_INFO_KEY_MAX] = 0; /* the longest allowed */
	val[RCX_INFO_VAL_MAX] = 0;
	CU_ASSERT_EQUAL(rcx_info_set(i, key, val), 0);
	/* the value does not fit: -ENAMETOOLONG, nothing written */
	memset(out, 'x', sizeof(out));
	flag = 7;
	CU_ASSERT_EQUAL(rcx_info_get(i, key, out, sizeof(out), &flag),
			-ENAMETOOLONG);
	CU_ASSERT_EQUAL(out[0], 'x');
	CU_ASSERT_EQUAL(flag, 7);
	CU_ASSERT_EQUAL(rcx_info_get(NULL, key, out, sizeof(out), &flag),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_info_get(fi, key, out, sizeof(out), &flag),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_info_get(i, NULL, out, sizeof(out), &flag),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_info_get(i, key, NULL, sizeof(out), &flag),
			-EINVAL);
	CU_ASSERT_EQUAL(rcx_info_get(i, key, out, sizeof(out), NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_delete(NULL, key), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_delete(fi, key), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_delete(i, NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_delete(i, "a"), -ENOENT);
	CU_ASSERT_EQUAL(rcx_info_delete(i, key), 0);
	CU_ASSERT_EQUAL(rcx_info_delete(i, key), -ENOENT);
	/* what the calls that take an info read: a foreign one is refused,
	 * none means the defaults */
	{
		static const char *const names[] = { "a", "b", NULL };
		unsigned long u = 7;
		bool b = false;

		k = 5;
		CU_ASSERT_EQUAL(rcx__info_ulong(fi, "a", 1, 0, 9, &u), -EINVAL);
		CU_ASSERT_EQUAL(rcx__info_enum(fi, "a", names, 1, &k), -EINVAL);
		CU_ASSERT_EQUAL(rcx__info_bool(fi, "a", true, &b), -EINVAL);
		CU_ASSERT(u == 7 && k == 5 && !b);
		CU_ASSERT_EQUAL(rcx__info_ulong(NULL, "a", 1, 0, 9, &u), 0);
		CU_ASSERT_EQUAL(rcx__info_enum(NULL, "a", names, 1, &k), 0);
		CU_ASSERT_EQUAL(rcx__info_bool(NULL, "a", true, &b), 0);
		CU_ASSERT(u == 1 && k == 1 && b);
	}
	CU_ASSERT_EQUAL(rcx_info_free(NULL), -EINVAL);
	CU_ASSERT_EQUAL(rcx_info_free(&fi), -EINVAL);
	CU_ASSERT_PTR_EQUAL(fi, (struct rcx_info *)foreign);
	CU_ASSERT_EQUAL(rcx_info_free(&i), 0);
	CU_ASSERT_PTR_NULL(i);
	CU_ASSERT_EQUAL(rcx_info_free(&i), -EINVAL); /* *info is NULL now */
}

static const CU_TestInfo tests[] = {
	{ "config_documented", test_config_documented },
	{ "config_parse", test_config_parse },
	{ "every_code_named", test_every_code_named },
	{ "codes_distinct_from_errno", test_codes_distinct_from_errno },
	{ "version", test_version },
	{ "provider_registry", test_provider_registry },
	{ "info_bad_input", test_info_bad_input },
	CU_TEST_INFO_NULL,
};

const struct tu_suite tu_suite_errors = { "errors", TU_HOST, NULL, NULL,
					  tests };
