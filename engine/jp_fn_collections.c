/*
 * jp_fn_collections.c - lookup, items, object_from_lists, parse_json and
 * parse_yaml.
 */
#include "engine/jp_fn_int.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/yaml.h"
#include "engine/value.h"
#include "common/banned.h"

/* ------------------------------------------------------------------ */
/* Collections and documents                                            */

int jp_fn_lookup(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		 json_t **out)
{
	json_t *v;
	long long i;

	if (json_is_object(ARGV(0))) {
		if (!json_is_string(ARGV(1)))
			return jp_kfail(ev, JP_ERR_INVALID_TYPE, "lookup",
					"2 argument is expected of String type");
		v = json_object_getn(ARGV(0), STR(1), SLEN(1));
		*out = v ? json_incref(v) : json_null();
		return 0;
	}
	if (!json_is_number(ARGV(1)))
		return jp_kfail(ev, JP_ERR_INVALID_TYPE, "lookup",
				"2 argument is expected of Number type");
	if (!jp_int_number(ARGV(1), &i))
		return jp_kfail(ev, JP_ERR_INVALID_VALUE, "lookup",
				"expected an integer number but got: %g",
				json_number_value(ARGV(1)));
	if (i < 0 || (size_t)i >= json_array_size(ARGV(0)))
		*out = json_null();
	else
		*out = json_incref(json_array_get(ARGV(0), (size_t)i));
	return 0;
}

int jp_fn_items(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		json_t **out)
{
	json_t *res = json_array(), *o, *v;
	const char *kname = STR(1), *vname = STR(2), *k;
	size_t i, n;
	int rc;

	if (json_is_object(ARGV(0))) {
		const char **keys;

		n = json_object_size(ARGV(0));
		keys = gv_xmalloc((n ? n : 1) * sizeof(*keys));
		i = 0;
		json_object_foreach(ARGV(0), k, v)
		{
			keys[i++] = k;
		}
		qsort(keys, n, sizeof(*keys), gv_strptr_cmp);
		for (i = 0; i < n; i++) {
			o = json_object();
			json_object_set_new(o, kname, json_string(keys[i]));
			json_object_set(o, vname, json_object_get(ARGV(0), keys[i]));
			json_array_append_new(res, o);
		}
		free(keys);
	} else {
		json_array_foreach(ARGV(0), i, v)
		{
			o = json_object();
			json_object_set_new(o, kname, json_integer((json_int_t)i));
			json_object_set(o, vname, v);
			json_array_append_new(res, o);
		}
	}
	rc = jp_charge(ev, json_array_size(res));
	if (rc) {
		json_decref(res);
		return rc;
	}
	*out = res;
	return 0;
}

int jp_fn_object_from_lists(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			    int nargs, json_t **out)
{
	json_t *res = json_object(), *k;
	struct gv_buf key = {0};
	size_t i, nv = json_array_size(ARGV(1));
	int rc;

	json_array_foreach(ARGV(0), i, k)
	{
		gv_buf_reset(&key);
		if (!jp_iface_to_string(k, &key) || memchr(gv_buf_str(&key), '\0', key.len)) {
			json_decref(res);
			gv_buf_release(&key);
			return jp_kfail(ev, JP_ERR_INVALID_TYPE, "object_from_lists",
					"%zu argument is expected of StringArray type", i);
		}
		json_object_set(res, gv_buf_str(&key),
				i < nv ? json_array_get(ARGV(1), i) : json_null());
	}
	gv_buf_release(&key);
	rc = jp_charge(ev, json_array_size(ARGV(0)));
	if (rc) {
		json_decref(res);
		return rc;
	}
	*out = res;
	return 0;
}

int jp_fn_parse_json(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	json_error_t jerr;
	json_t *v;
	int rc = jp_charge(ev, 1 + SLEN(0) / 16);

	if (rc)
		return rc;
	v = json_loadb(STR(0), SLEN(0), JSON_DECODE_ANY, &jerr);
	if (!v)
		v = json_loadb(STR(0), SLEN(0), JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &jerr);
	if (!v)
		return jp_kfail(ev, JP_ERR_RUNTIME, "parse_json", "%s at line %d, column %d",
				jerr.text, jerr.line, jerr.column);
	*out = v;
	return 0;
}

int jp_fn_parse_yaml(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	struct gv_docs docs = {0};
	struct gv_err err = {0};
	int rc = jp_charge(ev, 1 + SLEN(0) / 16);

	if (rc)
		return rc;
	if (gv_yaml_load(STR(0), SLEN(0), "parse_yaml", &docs, &err)) {
		gv_docs_release(&docs);
		return jp_kfail(ev, JP_ERR_RUNTIME, "parse_yaml", "%s", err.msg);
	}
	*out = docs.n ? json_incref(docs.v[0].value) : json_null();
	gv_docs_release(&docs);
	return 0;
}
