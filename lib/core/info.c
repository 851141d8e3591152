/* SPDX-License-Identifier: BSD-2-Clause */
/* Info objects: a small ordered key/value list. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/core/core.h"

#define RCX__INFO_MAGIC 0x52435849u

struct rcx__kv {
	struct rcx__kv *next;
	char key[RCX_INFO_KEY_MAX + 1];
	char val[RCX_INFO_VAL_MAX + 1];
};

struct rcx_info {
	uint32_t magic;
	struct rcx__kv *kv;
};

static bool live(const struct rcx_info *i)
{
	return i && i->magic == RCX__INFO_MAGIC;
}

/*
 * The calls that take an info read it through here: NULL is none (all
 * defaults); anything else must be a live info, not taken for none.
 */
static int usable(const struct rcx_info *i)
{
	if (!i || live(i))
		return 0;
	rcx__log(RCX__LOG_ERROR, "info",
		 "info %p is not an rcx_info (freed, or never "
		 "made by rcx_info_create)",
		 (const void *)i);
	return -EINVAL;
}

RCX_API int rcx_info_create(struct rcx_info **out)
{
	struct rcx_info *i;

	if (!out)
		return -EINVAL;
	i = calloc(1, sizeof(*i));
	if (!i)
		return -ENOMEM;
	i->magic = RCX__INFO_MAGIC;
	*out = i;
	return 0;
}

static struct rcx__kv **find(struct rcx_info *i, const char *key)
{
	struct rcx__kv **pp;

	for (pp = &i->kv; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->key, key))
			return pp;
	return NULL;
}

RCX_API int rcx_info_set(struct rcx_info *i, const char *key, const char *value)
{
	struct rcx__kv **pp, *kv;

	if (!i || usable(i) || !key || !value || !*key ||
	    strlen(key) > RCX_INFO_KEY_MAX || strlen(value) > RCX_INFO_VAL_MAX)
		return -EINVAL;
	pp = find(i, key);
	if (pp) {
		strcpy((*pp)->val, value);
		return 0;
	}
	kv = calloc(1, sizeof(*kv));
	if (!kv)
		return -ENOMEM;
	strcpy(kv->key, key);
	strcpy(kv->val, value);
	for (pp = &i->kv; *pp; pp = &(*pp)->next)
		;
	*pp = kv;
	return 0;
}

RCX_API int rcx_info_get(const struct rcx_info *i, const char *key, char *value,
			 size_t len, int *flag)
{
	const char *v;

	if (!i || usable(i) || !key || !value || !flag)
		return -EINVAL;
	v = rcx__info_lookup(i, key);
	if (!v) {
		*flag = 0;
		return 0;
	}
	if (strlen(v) >= len)
		return -ENAMETOOLONG;
	strcpy(value, v);
	*flag = 1;
	return 0;
}

RCX_API int rcx_info_delete(struct rcx_info *i, const char *key)
{
	struct rcx__kv **pp, *kv;

	if (!i || usable(i) || !key)
		return -EINVAL;
	pp = find(i, key);
	if (!pp)
		return -ENOENT;
	kv = *pp;
	*pp = kv->next;
	free(kv);
	return 0;
}

RCX_API int rcx_info_free(struct rcx_info **ip)
{
	struct rcx__kv *kv;
	struct rcx_info *i;

	if (!ip || !*ip || usable(*ip))
		return -EINVAL;
	i = *ip;
	while ((kv = i->kv)) {
		i->kv = kv->next;
		free(kv);
	}
	i->magic = 0;
	free(i);
	*ip = NULL;
	return 0;
}

const char *rcx__info_lookup(const struct rcx_info *i, const char *key)
{
	const struct rcx__kv *kv;

	if (!live(i))
		return NULL;
	for (kv = i->kv; kv; kv = kv->next)
		if (!strcmp(kv->key, key))
			return kv->val;
	return NULL;
}

int rcx__info_ulong(const struct rcx_info *i, const char *key,
		    unsigned long dflt, unsigned long min, unsigned long max,
		    unsigned long *out)
{
	const char *v = rcx__info_lookup(i, key);
	unsigned long u;
	char *end;

	if (usable(i))
		return -EINVAL;
	if (!v) {
		*out = dflt;
		return 0;
	}
	errno = 0;
	u = strtoul(v, &end, 0);
	if (errno || end == v || *end || v[0] == '-' || u < min || u > max) {
		rcx__log(RCX__LOG_ERROR, "info",
			 "%s=\"%s\": not a number from %lu to %lu", key, v, min,
			 max);
		return -EINVAL;
	}
	*out = u;
	return 0;
}

int rcx__info_enum(const struct rcx_info *i, const char *key,
		   const char *const *names, int dflt, int *out)
{
	const char *v = rcx__info_lookup(i, key);
	int k;

	if (usable(i))
		return -EINVAL;
	if (!v) {
		*out = dflt;
		return 0;
	}
	for (k = 0; names[k]; k++)
		if (!strcmp(names[k], v)) {
			*out = k;
			return 0;
		}
	rcx__log(RCX__LOG_ERROR, "info", "%s=\"%s\": not one of its values",
		 key, v);
	return -EINVAL;
}

int rcx__info_bool(const struct rcx_info *i, const char *key, bool dflt,
		   bool *out)
{
	static const char *const names[] = { "false", "true", NULL };
	int k, ret = rcx__info_enum(i, key, names, dflt, &k);

	if (!ret)
		*out = k;
	return ret;
}
