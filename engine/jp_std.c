/*
 * jp_std.c - the standard JMESPath functions (JMESPath specification,
 * as go-jmespath implements them) and the lookup of a function by name
 * (Kyverno's functions of jp_functions.c override the standard ones).
 */
#include "engine/jmespath.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/jp_int.h"
#include "engine/value.h"
#include "common/banned.h"

/* ------------------------------------------------------------------ */
/* Standard functions                                                   */

#define ARG(i) (args[i].v)

/* Stable merge sort of n values by cmp; cmp may fail (returns error via *rc). */
struct sort_item {
	json_t *key;   /* borrowed or owned per caller */
	json_t *value; /* borrowed */
};

static int item_cmp(const struct sort_item *a, const struct sort_item *b)
{
	if (a->key == b->key) /* shared: copies of one long string sort in linear time */
		return 0;
	if (json_is_string(a->key))
		return strcmp(json_string_value(a->key), json_string_value(b->key));
	return jp_num_cmp(a->key, b->key);
}

static int merge_sort(struct jp_ev *ev, struct sort_item *v, size_t n)
{
	struct sort_item *tmp;
	size_t width, i, lo, mid, hi, a, b, k;
	int rc = 0;

	if (n < 2)
		return 0;
	tmp = gv_xmalloc(n * sizeof(*tmp));
	for (width = 1; width < n && !rc; width *= 2) {
		for (lo = 0; lo < n; lo += 2 * width) {
			mid = lo + width < n ? lo + width : n;
			hi = lo + 2 * width < n ? lo + 2 * width : n;
			a = lo;
			b = mid;
			k = lo;
			while (a < mid && b < hi)
				tmp[k++] = item_cmp(&v[b], &v[a]) < 0 ? v[b++] : v[a++];
			while (a < mid)
				tmp[k++] = v[a++];
			while (b < hi)
				tmp[k++] = v[b++];
		}
		for (i = 0; i < n; i++)
			v[i] = tmp[i];
		rc = jp_charge(ev, n);
	}
	free(tmp);
	return rc;
}

/* Keys must be all numbers or all strings. */
static int check_keys(struct jp_ev *ev, const char *fname, struct sort_item *v, size_t n)
{
	size_t i;
	bool str;

	if (n == 0)
		return 0;
	str = json_is_string(v[0].key);
	for (i = 0; i < n; i++) {
		if (str ? !json_is_string(v[i].key) : !jp_is_number(v[i].key))
			return jp_fail(ev, JP_ERR_INVALID_TYPE,
				       "%s(): values must be all numbers or all strings, got %s",
				       fname, jp_type_name(v[i].key));
	}
	return 0;
}

static int fn_abs(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	if (json_is_integer(ARG(0)) && json_integer_value(ARG(0)) != LLONG_MIN)
		*out = json_integer(llabs(json_integer_value(ARG(0))));
	else
		*out = json_real(fabs(json_number_value(ARG(0))));
	return 0;
}

static int number_array(struct jp_ev *ev, const char *fname, json_t *a)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
	{
		if (!jp_is_number(v))
			return jp_fail(ev, JP_ERR_INVALID_TYPE,
				       "%s(): expected an array of numbers, element %zu is %s",
				       fname, i, jp_type_name(v));
	}
	return jp_charge(ev, json_array_size(a));
}

static int fn_avg(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	size_t i, n = json_array_size(ARG(0));
	double sum = 0;
	int rc = number_array(ev, "avg", ARG(0));

	if (rc)
		return rc;
	if (n == 0) {
		*out = json_null();
		return 0;
	}
	for (i = 0; i < n; i++)
		sum += json_number_value(json_array_get(ARG(0), i));
	*out = jp_number(sum / (double)n);
	return 0;
}

static int fn_ceil(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	*out = json_is_integer(ARG(0)) ? json_incref(ARG(0))
				       : jp_number(ceil(json_number_value(ARG(0))));
	return 0;
}

static int fn_floor(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		    json_t **out)
{
	*out = json_is_integer(ARG(0)) ? json_incref(ARG(0))
				       : jp_number(floor(json_number_value(ARG(0))));
	return 0;
}

/* Linear time (glibc's memmem is two-way), as Go's strings.Contains. */
static bool str_contains(const char *h, size_t hn, const char *n, size_t nn)
{
	return nn == 0 || memmem(h, hn, n, nn) != NULL;
}

static int fn_contains(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	size_t i;
	json_t *v;
	bool r = false;
	int rc;

	if (json_is_string(ARG(0))) {
		if (json_is_string(ARG(1))) {
			r = str_contains(json_string_value(ARG(0)), json_string_length(ARG(0)),
					 json_string_value(ARG(1)), json_string_length(ARG(1)));
			if ((rc = jp_charge(ev, json_string_length(ARG(0)) / 16)))
				return rc;
		}
	} else {
		json_array_foreach(ARG(0), i, v)
		{
			if ((rc = jp_charge(ev, 1)) || (rc = jp_ev_equal(ev, v, ARG(1), &r)))
				return rc;
			if (r)
				break;
		}
	}
	*out = json_boolean(r);
	return 0;
}

static int fn_ends_with(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	size_t a = json_string_length(ARG(0)), b = json_string_length(ARG(1));

	*out = json_boolean(
	    b <= a && memcmp(json_string_value(ARG(0)) + a - b, json_string_value(ARG(1)), b) == 0);
	return 0;
}

static int fn_starts_with(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			  int nargs, json_t **out)
{
	size_t a = json_string_length(ARG(0)), b = json_string_length(ARG(1));

	*out = json_boolean(b <= a &&
			    memcmp(json_string_value(ARG(0)), json_string_value(ARG(1)), b) == 0);
	return 0;
}

static int fn_join(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	struct gv_buf b = {0};
	size_t i;
	json_t *v;
	int rc;

	json_array_foreach(ARG(1), i, v)
	{
		if (!json_is_string(v)) {
			gv_buf_release(&b);
			return jp_fail(ev, JP_ERR_INVALID_TYPE,
				       "join(): expected an array of strings, element %zu is %s", i,
				       jp_type_name(v));
		}
		if (i)
			gv_buf_add(&b, json_string_value(ARG(0)), json_string_length(ARG(0)));
		gv_buf_add(&b, json_string_value(v), json_string_length(v));
	}
	rc = jp_charge(ev, 1 + b.len / 16);
	if (!rc)
		*out = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return rc;
}

static int fn_keys(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	const char *k;
	json_t *v, *res = json_array();

	json_object_foreach(ARG(0), k, v)
	{
		json_array_append_new(res, json_string(k));
	}
	*out = res;
	return jp_charge(ev, json_array_size(res));
}

static int fn_values(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	const char *k;
	json_t *v, *res = json_array();

	json_object_foreach(ARG(0), k, v)
	{
		json_array_append(res, v);
	}
	*out = res;
	return jp_charge(ev, json_array_size(res));
}

static int fn_length(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	json_t *a = ARG(0);
	size_t n;

	if (json_is_string(a))
		n = gv_utf8_len(json_string_value(a), json_string_length(a));
	else if (json_is_array(a))
		n = json_array_size(a);
	else
		n = json_object_size(a);
	*out = json_integer((json_int_t)n);
	return 0;
}

static int fn_map(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	json_t *res = json_array(), *el, *v;
	size_t i;
	int rc;

	json_array_foreach(ARG(1), i, el)
	{
		rc = jp_ev_eval(ev, args[0].ref, el, &v);
		if (rc) {
			json_decref(res);
			return rc;
		}
		json_array_append_new(res, v);
	}
	*out = res;
	return 0;
}

static int minmax(struct jp_ev *ev, const char *fname, json_t *a, bool want_max, json_t **out)
{
	size_t i, n = json_array_size(a);
	json_t *best, *v;
	bool str;
	int c;

	if (n == 0) {
		*out = json_null();
		return 0;
	}
	best = json_array_get(a, 0);
	str = json_is_string(best);
	if (!str && !jp_is_number(best))
		return jp_fail(ev, JP_ERR_INVALID_TYPE,
			       "%s(): expected an array of numbers or strings, got %s element",
			       fname, jp_type_name(best));
	for (i = 0; i < n; i++) {
		v = json_array_get(a, i);
		if (str ? !json_is_string(v) : !jp_is_number(v))
			return jp_fail(ev, JP_ERR_INVALID_TYPE,
				       "%s(): values must be all numbers or all strings, got %s",
				       fname, jp_type_name(v));
		if (v == best)
			continue;
		c = str ? strcmp(json_string_value(v), json_string_value(best))
			: jp_num_cmp(v, best);
		if (want_max ? c > 0 : c < 0)
			best = v;
	}
	*out = json_incref(best);
	return jp_charge(ev, n);
}

static int fn_max(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	return minmax(ev, "max", ARG(0), true, out);
}

static int fn_min(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	return minmax(ev, "min", ARG(0), false, out);
}

/* Evaluates ref on each element of a into items (keys owned). */
static int eval_keys(struct jp_ev *ev, const struct jp_node *ref, json_t *a,
		     struct sort_item **items)
{
	size_t i, n = json_array_size(a);
	struct sort_item *v = gv_xcalloc(n ? n : 1, sizeof(*v));
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		v[i].value = json_array_get(a, i);
		rc = jp_ev_eval(ev, ref, v[i].value, &v[i].key);
	}
	*items = v;
	return rc;
}

static void free_keys(struct sort_item *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		json_decref(v[i].key);
	free(v);
}

static int by_minmax(struct jp_ev *ev, const char *fname, struct jp_arg *args, bool want_max,
		     json_t **out)
{
	size_t i, n = json_array_size(ARG(0)), best = 0;
	struct sort_item *v;
	int rc, c;

	if (n == 0) {
		*out = json_null();
		return 0;
	}
	rc = eval_keys(ev, args[1].ref, ARG(0), &v);
	if (!rc)
		rc = check_keys(ev, fname, v, n);
	if (rc)
		goto out;
	for (i = 1; i < n; i++) {
		c = item_cmp(&v[i], &v[best]);
		if (want_max ? c > 0 : c < 0)
			best = i;
	}
	*out = json_incref(v[best].value);
out:
	free_keys(v, n);
	return rc;
}

static int fn_max_by(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	return by_minmax(ev, "max_by", args, true, out);
}

static int fn_min_by(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		     json_t **out)
{
	return by_minmax(ev, "min_by", args, false, out);
}

static int fn_merge(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		    json_t **out)
{
	json_t *res = json_object();
	int i;

	for (i = 0; i < nargs; i++) {
		json_object_update(res, ARG(i));
		if (jp_charge(ev, json_object_size(ARG(i)))) {
			json_decref(res);
			return JP_ERR_LIMIT;
		}
	}
	*out = res;
	return 0;
}

static int fn_not_null(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	int i;

	for (i = 0; i < nargs; i++) {
		if (!json_is_null(ARG(i))) {
			*out = json_incref(ARG(i));
			return 0;
		}
	}
	*out = json_null();
	return 0;
}

static int fn_reverse(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	json_t *a = ARG(0), *res;
	size_t i, n, k;

	if (json_is_array(a)) {
		n = json_array_size(a);
		res = json_array();
		for (i = n; i > 0; i--)
			json_array_append(res, json_array_get(a, i - 1));
		*out = res;
		return jp_charge(ev, n);
	} else {
		const char *s = json_string_value(a);
		char *r;

		n = json_string_length(a);
		r = gv_xmalloc(n + 1);
		/* reverse code points, keeping each one's bytes in order */
		for (i = 0; i < n; i += k) {
			unsigned cp;
			k = gv_utf8_decode(s + i, n - i, &cp);
			memcpy(r + n - i - k, s + i, k);
		}
		*out = json_stringn(r, n);
		free(r);
		return jp_charge(ev, 1 + n / 16);
	}
}

static int fn_sort(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	size_t i, n = json_array_size(ARG(0));
	struct sort_item *v = gv_xcalloc(n ? n : 1, sizeof(*v));
	json_t *res;
	int rc;

	for (i = 0; i < n; i++)
		v[i].key = v[i].value = json_array_get(ARG(0), i);
	rc = check_keys(ev, "sort", v, n);
	if (!rc)
		rc = merge_sort(ev, v, n);
	if (!rc) {
		res = json_array();
		for (i = 0; i < n; i++)
			json_array_append(res, v[i].value);
		*out = res;
	}
	free(v);
	return rc;
}

static int fn_sort_by(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		      json_t **out)
{
	size_t i, n = json_array_size(ARG(0));
	struct sort_item *v;
	json_t *res;
	int rc;

	rc = eval_keys(ev, args[1].ref, ARG(0), &v);
	if (!rc)
		rc = check_keys(ev, "sort_by", v, n);
	if (!rc)
		rc = merge_sort(ev, v, n);
	if (!rc) {
		res = json_array();
		for (i = 0; i < n; i++)
			json_array_append(res, v[i].value);
		*out = res;
	}
	free_keys(v, n);
	return rc;
}

static int fn_sum(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		  json_t **out)
{
	size_t i, n = json_array_size(ARG(0));
	json_int_t isum = 0;
	bool ints = true;
	double sum = 0;
	json_t *v;
	int rc = number_array(ev, "sum", ARG(0));

	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		v = json_array_get(ARG(0), i);
		sum += json_number_value(v);
		if (ints && json_is_integer(v) &&
		    !__builtin_add_overflow(isum, json_integer_value(v), &isum))
			continue;
		ints = false;
	}
	*out = ints ? json_integer(isum) : jp_number(sum);
	return 0;
}

static int fn_to_array(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		       json_t **out)
{
	if (json_is_array(ARG(0))) {
		*out = json_incref(ARG(0));
	} else {
		*out = json_array();
		json_array_append(*out, ARG(0));
	}
	return 0;
}

/* Parses s as Go's strconv.ParseFloat does for decimal input; false if it is not a number. */
static bool parse_number(const char *s, size_t n, json_t **out)
{
	char buf[128], *end;
	size_t i;
	bool integral = true;
	double d;
	long long ll;

	if (n == 0 || n >= sizeof(buf))
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];
		if (isdigit((unsigned char)c) ||
		    ((c == '-' || c == '+') && (i == 0 || s[i - 1] == 'e' || s[i - 1] == 'E')))
			continue;
		if (c == '.' || c == 'e' || c == 'E') {
			integral = false;
			continue;
		}
		return false;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	if (integral) {
		ll = strtoll(buf, &end, 10);
		if (*end == '\0' && errno == 0 && end != buf) {
			*out = json_integer(ll);
			return true;
		}
	}
	errno = 0;
	d = strtod(buf, &end);
	if (*end != '\0' || end == buf || !isfinite(d))
		return false;
	*out = jp_number(d);
	return *out != NULL;
}

static int fn_to_number(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	json_t *a = ARG(0);

	if (jp_is_number(a))
		*out = json_incref(a);
	else if (!json_is_string(a) ||
		 !parse_number(json_string_value(a), json_string_length(a), out))
		*out = json_null();
	return 0;
}

static int fn_to_string(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			int nargs, json_t **out)
{
	struct gv_buf b = {0};
	size_t values;
	int rc;

	if (json_is_string(ARG(0))) {
		*out = json_incref(ARG(0));
		return 0;
	}
	/*
	 * A step per value written and per 16 bytes; the steps left bound the
	 * walk, so a value sharing parts is not written whole.
	 */
	if (!jp_dump_bounded(ARG(0), &b, ev->kyverno ? JP_DUMP_SORT_KEYS | JP_DUMP_HTML_ESCAPE : 0,
			     jp_bytes_left(ev), ev->max_steps - ev->steps, &values))
		rc = jp_charge(ev, ev->max_steps - ev->steps + 1);
	else
		rc = jp_charge(ev, values + b.len / 16);
	if (!rc)
		*out = json_stringn(gv_buf_str(&b), b.len);
	gv_buf_release(&b);
	return rc;
}

static int fn_type(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,
		   json_t **out)
{
	*out = json_string(jp_type_name(ARG(0)));
	return 0;
}

#define T(x) JT_##x
static const struct jp_func std_funcs[] = {
    {"abs", "abs(number) -> number", 1, 1, {T(NUMBER)}, fn_abs, NULL},
    {"avg", "avg(array[number]) -> number", 1, 1, {T(ARRAY)}, fn_avg, NULL},
    {"ceil", "ceil(number) -> number", 1, 1, {T(NUMBER)}, fn_ceil, NULL},
    {"contains",
     "contains(array|string, any) -> boolean",
     2,
     2,
     {T(ARRAY) | T(STRING), T(ANY)},
     fn_contains,
     NULL},
    {"ends_with",
     "ends_with(string, string) -> boolean",
     2,
     2,
     {T(STRING), T(STRING)},
     fn_ends_with,
     NULL},
    {"floor", "floor(number) -> number", 1, 1, {T(NUMBER)}, fn_floor, NULL},
    {"join", "join(string, array[string]) -> string", 2, 2, {T(STRING), T(ARRAY)}, fn_join, NULL},
    {"keys", "keys(object) -> array[string]", 1, 1, {T(OBJECT)}, fn_keys, NULL},
    {"length",
     "length(string|array|object) -> number",
     1,
     1,
     {T(STRING) | T(ARRAY) | T(OBJECT)},
     fn_length,
     NULL},
    {"map", "map(&expression, array) -> array", 2, 2, {T(EXPREF), T(ARRAY)}, fn_map, NULL},
    {"max", "max(array[number]|array[string]) -> number|string", 1, 1, {T(ARRAY)}, fn_max, NULL},
    {"max_by", "max_by(array, &expression) -> any", 2, 2, {T(ARRAY), T(EXPREF)}, fn_max_by, NULL},
    {"merge", "merge(object, ...) -> object", 1, -1, {T(OBJECT)}, fn_merge, NULL},
    {"min", "min(array[number]|array[string]) -> number|string", 1, 1, {T(ARRAY)}, fn_min, NULL},
    {"min_by", "min_by(array, &expression) -> any", 2, 2, {T(ARRAY), T(EXPREF)}, fn_min_by, NULL},
    {"not_null", "not_null(any, ...) -> any", 1, -1, {T(ANY)}, fn_not_null, NULL},
    {"reverse",
     "reverse(array|string) -> array|string",
     1,
     1,
     {T(ARRAY) | T(STRING)},
     fn_reverse,
     NULL},
    {"sort", "sort(array[number]|array[string]) -> array", 1, 1, {T(ARRAY)}, fn_sort, NULL},
    {"sort_by",
     "sort_by(array, &expression) -> array",
     2,
     2,
     {T(ARRAY), T(EXPREF)},
     fn_sort_by,
     NULL},
    {"starts_with",
     "starts_with(string, string) -> boolean",
     2,
     2,
     {T(STRING), T(STRING)},
     fn_starts_with,
     NULL},
    {"sum", "sum(array[number]) -> number", 1, 1, {T(ARRAY)}, fn_sum, NULL},
    {"to_array", "to_array(any) -> array", 1, 1, {T(ANY)}, fn_to_array, NULL},
    {"to_number", "to_number(any) -> number", 1, 1, {T(ANY)}, fn_to_number, NULL},
    {"to_string", "to_string(any) -> string", 1, 1, {T(ANY)}, fn_to_string, NULL},
    {"type", "type(any) -> string", 1, 1, {T(ANY)}, fn_type, NULL},
    {"values", "values(object) -> array", 1, 1, {T(OBJECT)}, fn_values, NULL},
};
#undef T

static const struct jp_func *table_find(const struct jp_func *t, size_t n, const char *name)
{
	size_t lo = 0, hi = n, mid;
	int c;

	while (lo < hi) {
		mid = (lo + hi) / 2;
		c = strcmp(name, t[mid].name);
		if (c == 0)
			return &t[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Kyverno's functions override the standard ones of the same name (sum). */
const struct jp_func *jp_func_find(const char *name, bool kyverno)
{
	const struct jp_func *f = NULL;

	if (kyverno)
		f = table_find(jp_kyverno_funcs, jp_kyverno_nfuncs, name);
	if (!f)
		f = table_find(std_funcs, GV_ARRAY_LEN(std_funcs), name);
	return f;
}

void jp_list_functions(bool kyverno, void (*fn)(const char *name, const char *signature, void *ud),
		       void *ud)
{
	size_t i = 0, j = 0, ns = GV_ARRAY_LEN(std_funcs), nk = kyverno ? jp_kyverno_nfuncs : 0;
	int c;

	while (i < ns || j < nk) {
		if (i == ns)
			c = 1;
		else if (j == nk)
			c = -1;
		else
			c = strcmp(std_funcs[i].name, jp_kyverno_funcs[j].name);
		if (c < 0) {
			fn(std_funcs[i].name, std_funcs[i].signature, ud);
			i++;
		} else {
			if (c == 0)
				i++; /* overridden */
			fn(jp_kyverno_funcs[j].name, jp_kyverno_funcs[j].signature, ud);
			j++;
		}
	}
}
