/*
 * conditions.c - deny conditions and preconditions (kyverno-semantics.md
 * section 5): any/all blocks and the 18 operators.
 */
#include "engine/engine_int.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/yaml.h"
#include "engine/value.h"
#include "common/banned.h"

static const struct {
	const char *name;
	enum cond_op op;
} operators[] = {
    {"Equal", COND_EQUALS},
    {"Equals", COND_EQUALS},
    {"NotEqual", COND_NOT_EQUALS},
    {"NotEquals", COND_NOT_EQUALS},
    {"In", COND_IN},
    {"AnyIn", COND_ANY_IN},
    {"AllIn", COND_ALL_IN},
    {"NotIn", COND_NOT_IN},
    {"AnyNotIn", COND_ANY_NOT_IN},
    {"AllNotIn", COND_ALL_NOT_IN},
    {"GreaterThan", COND_GT},
    {"GreaterThanOrEquals", COND_GE},
    {"LessThan", COND_LT},
    {"LessThanOrEquals", COND_LE},
    {"DurationGreaterThan", COND_DUR_GT},
    {"DurationGreaterThanOrEquals", COND_DUR_GE},
    {"DurationLessThan", COND_DUR_LT},
    {"DurationLessThanOrEquals", COND_DUR_LE},
};

static void condition_release(struct condition *c)
{
	vtree_free(c->key);
	vtree_free(c->value);
	free(c->message);
}

/* True for a key that is exactly {{request.operation}} (spaces allowed). */
static bool is_operation_var(const char *s)
{
	size_t n = strlen(s);
	const char *p;

	if (n < 4 || strncmp(s, "{{", 2) || strcmp(s + n - 2, "}}"))
		return false;
	p = s + 2;
	while (*p == ' ')
		p++;
	if (strncmp(p, "request.operation", 17))
		return false;
	p += 17;
	while (*p == ' ')
		p++;
	return p == s + n - 2;
}

/* The first value that is not an admission operation, or NULL. */
static const char *bad_operation(const json_t *value)
{
	static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT"};
	size_t i;
	json_t *v;

	if (json_is_string(value)) {
		const char *s = json_string_value(value);
		if (strstr(s, "{{"))
			return NULL;
		for (size_t k = 0; k < GV_ARRAY_LEN(ops); k++)
			if (!strcmp(s, ops[k]))
				return NULL;
		return s;
	}
	json_array_foreach(value, i, v)
	{
		const char *bad = bad_operation(v);
		if (bad)
			return bad;
	}
	return NULL;
}

static enum gv_code condition_compile(const json_t *j, struct condition *c, struct gv_buf *ptr,
				      struct gv_err *err)
{
	const json_t *key = json_object_get(j, "key"), *value = json_object_get(j, "value");
	const char *op = json_string_value(json_object_get(j, "operator"));
	const char *msg = json_string_value(json_object_get(j, "message"));
	bool found = false;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(j))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr), "condition must be an object");
	if (!key)
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				   "entered value of `key` is invalid");
	if (!op)
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				   "entered value of `operator` is invalid");
	for (size_t i = 0; i < GV_ARRAY_LEN(operators); i++)
		if (!strcmp(op, operators[i].name)) {
			c->op = operators[i].op;
			found = true;
		}
	if (!found) {
		size_t base = ptr->len;
		gv_pointer_add(ptr, "operator");
		gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
			    "entered value of `operator` is invalid: %s", op);
		ptr->len = base;
		ptr->data[base] = '\0';
		return GV_EINVAL;
	}
	if (!json_object_get(j, "value"))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				   "entered value of `value` is invalid");
	if (json_is_string(key) && is_operation_var(json_string_value(key))) {
		const char *bad = bad_operation(value);
		if (bad) {
			size_t base = ptr->len;
			gv_pointer_add(ptr, "value");
			gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				    "unknown operation \"%s\" compared with {{request.operation}}: "
				    "want CREATE, UPDATE, DELETE or CONNECT",
				    bad);
			ptr->len = base;
			ptr->data[base] = '\0';
			return GV_EINVAL;
		}
	}
	c->key = vtree_compile(key, err);
	if (!c->key)
		goto fail;
	c->value = vtree_compile(value ? value : json_null(), err);
	if (!c->value)
		goto fail;
	c->message = msg ? gv_xstrdup(msg) : NULL;
	return GV_OK;
fail:
	if (err && !err->pointer[0])
		snprintf(err->pointer, sizeof(err->pointer), "%s", gv_buf_str(ptr));
	condition_release(c);
	memset(c, 0, sizeof(*c));
	return GV_EINVAL;
}

static enum gv_code list_compile(const json_t *arr, struct condition **out, size_t *n,
				 struct gv_buf *ptr, struct gv_err *err)
{
	size_t i, base = ptr->len;
	json_t *c;
	enum gv_code rc = GV_OK;

	*out = NULL;
	*n = 0;
	if (!json_array_size(arr))
		return GV_OK;
	*out = gv_xcalloc(json_array_size(arr), sizeof(**out));
	json_array_foreach(arr, i, c)
	{
		char idx[24];
		snprintf(idx, sizeof(idx), "%zu", i);
		gv_pointer_add(ptr, idx);
		rc = condition_compile(c, &(*out)[i], ptr, err);
		ptr->len = base;
		ptr->data[base] = '\0';
		if (rc)
			break;
		(*n)++;
	}
	return rc;
}

enum gv_code conditions_compile(const json_t *j, struct conditions *c, struct gv_buf *ptr,
				struct gv_err *err)
{
	size_t base = ptr->len;
	enum gv_code rc = GV_OK;

	memset(c, 0, sizeof(*c));
	if (!j || json_is_null(j))
		return GV_OK;
	c->present = true;
	if (json_is_array(j))
		return list_compile(j, &c->all, &c->nall, ptr, err);
	if (!json_is_object(j))
		return gv_err_setp(err, GV_EINVAL, gv_buf_str(ptr),
				   "conditions must be a list or an object with any/all");
	if (json_object_get(j, "any") && !json_is_null(json_object_get(j, "any"))) {
		c->any_present = true;
		gv_pointer_add(ptr, "any");
		rc = list_compile(json_object_get(j, "any"), &c->any, &c->nany, ptr, err);
		ptr->len = base;
		ptr->data[base] = '\0';
		if (rc)
			goto out;
	}
	gv_pointer_add(ptr, "all");
	rc = list_compile(json_object_get(j, "all"), &c->all, &c->nall, ptr, err);
	ptr->len = base;
	ptr->data[base] = '\0';
out:
	if (rc)
		conditions_release(c);
	return rc;
}

void conditions_release(struct conditions *c)
{
	for (size_t i = 0; i < c->nany; i++)
		condition_release(&c->any[i]);
	for (size_t i = 0; i < c->nall; i++)
		condition_release(&c->all[i]);
	free(c->any);
	free(c->all);
	memset(c, 0, sizeof(*c));
}

/* ---- operand helpers ---- */

/*
 * The work of one operator, charged to the rule's budget (engine_int.h):
 * operands built by JMESPath may hold up to JP_MAX_RESULT_VALUES values
 * sharing their parts (a 1 MiB string of the object listed 4 million times
 * costs a few steps), so formatting, comparing and matching them is paid
 * for as it goes. Once over, helpers return at once and the operator's
 * result is void.
 */
struct meter {
	unsigned long left; /* steps left; the budget is charged once, at the end */
	bool over;
};

static inline bool charge(struct meter *m, unsigned long n)
{
	if (m->over || n > m->left) {
		m->over = true;
		m->left = 0;
		return false;
	}
	m->left -= n;
	return true;
}

/* What the steps left pay for, at 16 bytes or code point comparisons a step. */
static size_t units_left(const struct meter *m)
{
	return m->left > SIZE_MAX / 16 ? SIZE_MAX : (size_t)m->left * 16;
}

/* value_wildcard(pattern, text), charged: false when over. */
static bool wild(struct meter *m, const char *pattern, const char *text)
{
	size_t work = 0;
	int r;

	if (m->over)
		return false;
	r = value_wildcard_bounded(pattern, text, units_left(m), &work);
	if (r < 0) {
		charge(m, m->left + 1);
		return false;
	}
	return charge(m, work / 16) && r > 0;
}

static bool parse_float(const char *s, double *out)
{
	char *end;

	if (!*s)
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return *end == '\0' && errno == 0 && strncasecmp(s, "0x", 2) && strncasecmp(s, "inf", 3) &&
	       strncasecmp(s, "nan", 3);
}

static bool parse_int(const char *s, long long *out)
{
	char *end;

	if (!*s)
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return *end == '\0' && errno == 0;
}

static bool num(const json_t *v, double *d)
{
	return value_number(v, d);
}

/* A duration string for condition purposes: parses, and is not the literal "0". */
static bool dur_string(const json_t *v, long double *ns)
{
	const char *s = json_string_value(v);
	return s && strcmp(s, "0") != 0 && value_parse_duration(s, ns);
}

/* section 5.3 "duration": both sides as durations when at least one is a duration string. */
static bool dur_pair(const json_t *key, const json_t *value, long double *k, long double *v)
{
	bool kd = dur_string(key, k), vd = dur_string(value, v);
	double d;

	if (!kd && !vd)
		return false;
	if (!kd) {
		if (!num(key, &d))
			return false;
		*k = (long double)d * 1e9L;
	}
	if (!vd) {
		if (!num(value, &d))
			return false;
		*v = (long double)d * 1e9L;
	}
	return true;
}

/* Equality with numbers by value; a step per pair compared, per 16 bytes of strings. */
static bool json_equal_num(struct meter *m, const json_t *a, const json_t *b)
{
	double x, y;

	if (!charge(m, 1))
		return false;
	if (num(a, &x) && num(b, &y))
		return x == y;
	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!json_equal_num(m, json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	if (json_is_object(a)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach((json_t *)a, k, v)
		{
			const json_t *w = json_object_get(b, k);
			if (!w || !json_equal_num(m, v, w))
				return false;
		}
		return true;
	}
	if (json_is_string(a) && !charge(m, json_string_length(a) / 16))
		return false;
	return json_equal(a, b);
}

/* Equals (section 5.3); returns -1 for "type mismatch / not comparable". */
static int equals3(struct meter *m, const json_t *key, const json_t *value)
{
	double kd, vd;

	if (json_is_boolean(key))
		return json_is_boolean(value) ? json_boolean_value(key) == json_boolean_value(value)
					      : -1;
	if (num(key, &kd)) {
		if (num(value, &vd))
			return kd == vd;
		if (json_is_string(value)) {
			if (!parse_float(json_string_value(value), &vd))
				return -1;
			return kd == vd;
		}
		return -1;
	}
	if (json_is_string(key)) {
		const char *ks = json_string_value(key);
		struct value_quantity kq;
		long double kn, vn;

		if (dur_pair(key, value, &kn, &vn))
			return kn == vn;
		if (value_parse_quantity(ks, &kq)) {
			if (!json_is_string(value))
				return -1;
			if (!json_string_length(value))
				return -2; /* empty value: NotEquals has its own rule */
			int c;
			if (!value_quantity_cmp_text(ks, json_string_value(value), &c))
				return -1;
			return c == 0;
		}
		if (!json_is_string(value))
			return -1;
		return wild(m, json_string_value(value), ks);
	}
	if (json_is_object(key) || json_is_array(key)) {
		if (json_typeof(key) != json_typeof(value))
			return -1;
		return json_equal_num(m, key, value);
	}
	return -3; /* null key */
}

static bool op_equals(struct meter *m, const json_t *key, const json_t *value)
{
	return equals3(m, key, value) == 1;
}

static bool op_not_equals(struct meter *m, const json_t *key, const json_t *value)
{
	int r = equals3(m, key, value);

	if (r == -3)
		return false;
	if (r == -2)
		return !value_wildcard("", json_string_value(key));
	if (r < 0)
		return true;
	return !r;
}

/* fmt.Sprint of a condition operand, charged ("" when over). */
static char *sprint(struct meter *m, const json_t *v)
{
	struct gv_buf b = {0};

	if (!m->over && json_is_string(v) && json_string_length(v) <= units_left(m)) {
		/* what value_go_format_max gives a string: its text */
		charge(m, 1 + json_string_length(v) / 16);
		return gv_xstrndup(json_string_value(v), json_string_length(v));
	}
	if (m->over || !value_go_format_max(v, &b, units_left(m))) {
		charge(m, m->left + 1);
		gv_buf_release(&b);
		return gv_xstrdup("");
	}
	charge(m, 1 + b.len / 16);
	return gv_buf_detach(&b);
}

/* Range "a-b" / "a!-b" of the pattern language: returns 1 in, 0 out, -1 not a range. */
static bool parse_range_num(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && (s[i] == '-' || s[i] == '+' || s[i] == '|'))
		i++;
	if (i >= n || !(s[i] >= '0' && s[i] <= '9'))
		return false;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i < n && s[i] == '.') {
		i++;
		if (i >= n || !(s[i] >= '0' && s[i] <= '9'))
			return false;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
		i++;
	return i == n;
}

/*
 * Splits "a-b" at the separating '-'. Only the first '-' after the first
 * byte can be it: a left part holding a '-' past its first byte is not a
 * number, so one try is enough (and the time stays linear).
 */
static bool split_range(const char *v, char **lo, char **hi)
{
	size_t n = strlen(v);

	for (size_t i = 1; i + 1 < n; i++) {
		if (v[i] != '-')
			continue;
		if (parse_range_num(v, i) && parse_range_num(v + i + 1, n - i - 1)) {
			*lo = gv_xstrndup(v, i);
			*hi = gv_xstrdup(v + i + 1);
			return true;
		}
		break;
	}
	return false;
}

/* Compares a text against a bound as the pattern language would (duration, then quantity). */
static int cmp_text(const char *a, const char *b, bool *ok)
{
	long double x, y;
	struct value_quantity qa, qb;

	*ok = true;
	if (value_parse_duration(b, &y) && value_parse_duration(a, &x))
		return x < y ? -1 : x > y;
	if (value_parse_quantity(b, &qb) && value_parse_quantity(a, &qa))
		return value_quantity_cmp(&qa, &qb);
	*ok = false;
	return 0;
}

static int in_range(const char *k, const char *lo, const char *hi)
{
	bool ok1, ok2;
	int c1 = cmp_text(k, lo, &ok1), c2 = cmp_text(k, hi, &ok2);

	if (!ok1 || !ok2)
		return 0;
	return c1 >= 0 && c2 <= 0;
}

static bool bi_wildcard(struct meter *m, const char *a, const char *b)
{
	return wild(m, a, b) || wild(m, b, a);
}

enum set_kind { SET_ANY_IN, SET_ALL_IN, SET_ANY_NOT_IN, SET_ALL_NOT_IN };

/*
 * Resolves a value into a list of texts. Returns false when the value makes
 * the whole condition false. *is_range set when the value is "a-b".
 */
static bool value_texts(struct meter *m, const json_t *value, bool list_key, size_t nkeys,
			const char *key0, enum set_kind kind, char ***out, size_t *n, char **lo,
			char **hi, bool *shortcut)
{
	*out = NULL;
	*n = 0;
	*shortcut = false;
	if (json_is_array(value)) {
		size_t i;
		json_t *c;
		*out = gv_xcalloc(json_array_size(value) + 1, sizeof(**out));
		json_array_foreach(value, i, c)
		{
			if (m->over)
				break;
			(*out)[(*n)++] = sprint(m, c);
		}
		return true;
	}
	if (json_is_string(value)) {
		const char *s = json_string_value(value);
		json_t *parsed;

		if (list_key && nkeys == 1 && !strcmp(key0, s)) {
			*shortcut = true;
			return true;
		}
		if (split_range(s, lo, hi))
			return true;
		parsed = json_loads(s, JSON_DECODE_ANY, NULL);
		if (parsed) {
			size_t i;
			json_t *c;
			if (!json_is_array(parsed)) {
				json_decref(parsed);
				return false;
			}
			json_array_foreach(parsed, i, c) if (!json_is_string(c))
			{
				json_decref(parsed);
				return false;
			}
			*out = gv_xcalloc(json_array_size(parsed) + 1, sizeof(**out));
			json_array_foreach(parsed, i, c)(*out)[(*n)++] =
			    gv_xstrdup(json_string_value(c));
			json_decref(parsed);
			return true;
		}
		*out = gv_xcalloc(1, sizeof(**out));
		(*out)[(*n)++] = gv_xstrdup(s);
		return true;
	}
	if (list_key && (json_is_number(value) || json_is_boolean(value)) &&
	    (kind == SET_ANY_IN || kind == SET_ANY_NOT_IN)) {
		*out = gv_xcalloc(1, sizeof(**out));
		(*out)[(*n)++] = sprint(m, value);
		return true;
	}
	return false;
}

static void free_texts(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool op_set(struct meter *m, enum set_kind kind, const json_t *key, const json_t *value)
{
	char **keys = NULL, **vals = NULL, *lo = NULL, *hi = NULL;
	size_t nkeys = 0, nvals = 0, hits = 0;
	bool list_key = json_is_array(key), shortcut, result = false;
	bool string_value = json_is_string(value);

	if (json_is_null(key) || json_is_object(key) || !key)
		return false;
	if (list_key) {
		size_t i;
		json_t *c;
		keys = gv_xcalloc(json_array_size(key) + 1, sizeof(*keys));
		json_array_foreach(key, i, c)
		{
			if (m->over)
				goto out;
			keys[nkeys++] = sprint(m, c);
		}
	} else {
		keys = gv_xcalloc(1, sizeof(*keys));
		keys[nkeys++] = sprint(m, key);
	}
	if (!list_key && !json_is_array(value) && !string_value)
		goto out;
	if (!list_key && string_value) {
		/* scalar key, string value: wildcard, range, JSON string list, equality */
		const char *vs = json_string_value(value);
		json_t *parsed;
		bool found = false;

		if (wild(m, vs, keys[0])) {
			found = true;
		} else if (split_range(vs, &lo, &hi)) {
			found = in_range(keys[0], lo, hi);
		} else if ((parsed = json_loads(vs, JSON_DECODE_ANY, NULL))) {
			size_t i;
			json_t *c;
			bool strings = json_is_array(parsed);
			json_array_foreach(parsed, i, c) if (!json_is_string(c)) strings = false;
			if (!strings) {
				json_decref(parsed);
				goto out;
			}
			json_array_foreach(parsed, i, c) if (!strcmp(json_string_value(c), keys[0]))
			    found = true;
			json_decref(parsed);
		} else {
			found = !strcmp(vs, keys[0]);
		}
		result = (kind == SET_ANY_IN || kind == SET_ALL_IN) ? found : !found;
		goto out;
	}
	if (!value_texts(m, value, list_key, nkeys, nkeys ? keys[0] : "", kind, &vals, &nvals, &lo,
			 &hi, &shortcut))
		goto out;
	if (shortcut) {
		/* one key equal to the string value */
		result = kind == SET_ANY_IN || kind == SET_ALL_IN;
		goto out;
	}
	for (size_t i = 0; i < nkeys && !m->over; i++) {
		bool found = false;
		if (lo) {
			found = in_range(keys[i], lo, hi);
		} else {
			for (size_t j = 0; j < nvals && !found && charge(m, 1); j++)
				found = bi_wildcard(m, vals[j], keys[i]);
		}
		if (found)
			hits++;
	}
	switch (kind) {
	case SET_ANY_IN:
		result = hits > 0;
		break;
	case SET_ALL_IN:
		result = hits == nkeys;
		break;
	case SET_ANY_NOT_IN:
		result = hits < nkeys;
		break;
	case SET_ALL_NOT_IN:
		result = hits == 0;
		break;
	}
	if (!list_key) {
		/* scalar key: "found" for the In operators, "not found" for NotIn */
		result = (kind == SET_ANY_IN || kind == SET_ALL_IN) ? hits > 0 : hits == 0;
	}
out:
	free_texts(keys, nkeys);
	free_texts(vals, nvals);
	free(lo);
	free(hi);
	return result;
}

/* Legacy In / NotIn (section 5.3). */
static bool op_legacy_in(struct meter *m, bool negate, const json_t *key, const json_t *value)
{
	json_t *list = NULL;
	size_t i, j;
	json_t *k, *v;
	bool result;

	if (!json_is_array(key))
		return op_set(m, negate ? SET_ANY_NOT_IN : SET_ANY_IN, key, value);
	if (json_is_array(value)) {
		list = json_incref((json_t *)value);
	} else if (json_is_string(value)) {
		list = json_loads(json_string_value(value), JSON_DECODE_ANY, NULL);
		if (!json_is_array(list)) {
			json_decref(list);
			list = json_pack("[s]", json_string_value(value));
		}
	} else {
		return false;
	}
	json_array_foreach(list, j, v) if (!json_is_string(v))
	{
		json_decref(list);
		return false;
	}
	result = !negate;
	json_array_foreach(key, i, k)
	{
		bool found = false;
		if (!json_is_string(k)) {
			json_decref(list);
			return false;
		}
		json_array_foreach(list, j, v)
		{
			/* a step per pair, and per 16 bytes that strcmp may read */
			if (!charge(m, 1 + json_string_length(k) / 16))
				break;
			if (!strcmp(json_string_value(v), json_string_value(k)))
				found = true;
		}
		if (!negate && !found) {
			result = false;
			break;
		}
		if (negate && !found) {
			result = true;
			break;
		}
	}
	json_decref(list);
	return result;
}

static int cmp_result(int c, enum cond_op op)
{
	switch (op) {
	case COND_GT:
	case COND_DUR_GT:
		return c > 0;
	case COND_GE:
	case COND_DUR_GE:
		return c >= 0;
	case COND_LT:
	case COND_DUR_LT:
		return c < 0;
	default:
		return c <= 0;
	}
}

static int cmpd(double a, double b)
{
	return a < b ? -1 : a > b;
}

static bool op_numeric(enum cond_op op, const json_t *key, const json_t *value)
{
	double kd, vd;
	long double kn, vn;

	if (num(key, &kd)) {
		if (num(value, &vd))
			return cmp_result(cmpd(kd, vd), op);
		if (json_is_string(value)) {
			const char *vs = json_string_value(value);
			long long vi;
			if (dur_string(value, &vn))
				return cmp_result(
				    (long double)kd * 1e9L < vn ? -1 : (long double)kd * 1e9L > vn,
				    op);
			if (parse_float(vs, &vd))
				return cmp_result(cmpd(kd, vd), op);
			if (parse_int(vs, &vi))
				return cmp_result(cmpd(kd, (double)vi), op);
		}
		return false;
	}
	if (json_is_string(key)) {
		const char *ks = json_string_value(key);

		struct value_semver ksv, vsv;
		long long ki;

		if (dur_pair(key, value, &kn, &vn))
			return cmp_result(kn < vn ? -1 : kn > vn, op);
		int qc;
		if (json_is_string(value) &&
		    value_quantity_cmp_text(ks, json_string_value(value), &qc))
			return cmp_result(qc, op);
		if (parse_float(ks, &kd)) {
			if (num(value, &vd))
				return cmp_result(cmpd(kd, vd), op);
			if (json_is_string(value) && parse_float(json_string_value(value), &vd))
				return cmp_result(cmpd(kd, vd), op);
			return false;
		}
		if (parse_int(ks, &ki)) {
			if (num(value, &vd))
				return cmp_result(cmpd((double)ki, vd), op);
			return false;
		}
		if (value_parse_semver(ks, &ksv)) {
			if (json_is_string(value) &&
			    value_parse_semver(json_string_value(value), &vsv))
				return cmp_result(value_semver_cmp(&ksv, &vsv), op);
			return false;
		}
	}
	return false;
}

static bool to_duration(const json_t *v, long double *ns)
{
	double d;

	if (json_is_string(v))
		return value_parse_duration(json_string_value(v), ns);
	if (num(v, &d)) {
		*ns = (long double)d * 1e9L;
		return true;
	}
	return false;
}

static bool op_duration(enum cond_op op, const json_t *key, const json_t *value)
{
	long double k, v;

	if (!to_duration(key, &k) || !to_duration(value, &v))
		return false;
	return cmp_result(k < v ? -1 : k > v, op);
}

static bool op_eval(struct meter *m, enum cond_op op, const json_t *key, const json_t *value)
{
	switch (op) {
	case COND_EQUALS:
		return op_equals(m, key, value);
	case COND_NOT_EQUALS:
		return op_not_equals(m, key, value);
	case COND_IN:
		return op_legacy_in(m, false, key, value);
	case COND_NOT_IN:
		return op_legacy_in(m, true, key, value);
	case COND_ANY_IN:
		return op_set(m, SET_ANY_IN, key, value);
	case COND_ALL_IN:
		return op_set(m, SET_ALL_IN, key, value);
	case COND_ANY_NOT_IN:
		return op_set(m, SET_ANY_NOT_IN, key, value);
	case COND_ALL_NOT_IN:
		return op_set(m, SET_ALL_NOT_IN, key, value);
	case COND_GT:
	case COND_GE:
	case COND_LT:
	case COND_LE:
		return op_numeric(op, key, value);
	case COND_DUR_GT:
	case COND_DUR_GE:
	case COND_DUR_LT:
	case COND_DUR_LE:
		return op_duration(op, key, value);
	}
	return false;
}

enum gv_code condition_op_eval(enum cond_op op, const json_t *key, const json_t *value,
			       struct jp_budget *b, bool *result, struct gv_err *err)
{
	struct jp_budget local = {.max = RULE_MAX_STEPS};
	struct meter m = {.left = 0, .over = false};
	size_t text = json_string_length(key) + json_string_length(value);

	if (!b)
		b = &local;
	m.left = budget_left(b);
	/* a step, and a step per 16 bytes of the operands' texts (each is parsed a few times) */
	*result = charge(&m, 1 + text / 16) && op_eval(&m, op, key, value);
	if (m.over) {
		*result = false;
		budget_charge(b, budget_left(b) + 1);
		return gv_err_set(err, GV_ELIMIT, RULE_BUDGET_MSG, budget_max(b));
	}
	budget_charge(b, budget_left(b) - m.left);
	return GV_OK;
}

/* A top-level non-string scalar becomes float64 (section 0). */
static json_t *untyped(json_t *v)
{
	if (json_is_integer(v)) {
		json_t *r = json_real((double)json_integer_value(v));
		json_decref(v);
		return r;
	}
	return v;
}

static enum gv_code condition_eval(const struct condition *c, const struct var_ctx *ctx,
				   bool *result, struct gv_err *err)
{
	json_t *key = NULL, *value = NULL;
	enum gv_code rc;

	rc = vtree_eval(c->key, ctx, &key, err);
	if (rc) {
		gv_err_prefix(err, "failed to substitute variables in condition key: ");
		return rc;
	}
	rc = vtree_eval(c->value, ctx, &value, err);
	if (rc) {
		json_decref(key);
		gv_err_prefix(err, "failed to substitute variables in condition value: ");
		return rc;
	}
	key = untyped(key);
	value = untyped(value);
	rc = condition_op_eval(c->op, key, value, ctx->budget, result, err);
	json_decref(key);
	json_decref(value);
	return rc;
}

struct evaluated {
	const char *msg;
	bool result;
};

enum gv_code conditions_eval(const struct conditions *c, const struct var_ctx *ctx, bool *result,
			     json_t *msgs, struct gv_err *err)
{
	struct evaluated *ev;
	size_t nev = 0;
	bool any_ok = true, all_ok = true, r;
	enum gv_code rc = GV_OK;

	*result = true;
	if (!c->present)
		return GV_OK;
	ev = gv_xcalloc(c->nany + c->nall + 1, sizeof(*ev));
	if (c->any_present) {
		any_ok = false;
		for (size_t i = 0; i < c->nany; i++) {
			rc = condition_eval(&c->any[i], ctx, &r, err);
			if (rc)
				goto out;
			ev[nev].msg = c->any[i].message;
			ev[nev++].result = r;
			if (r) {
				any_ok = true;
				break;
			}
		}
	}
	for (size_t i = 0; i < c->nall; i++) {
		rc = condition_eval(&c->all[i], ctx, &r, err);
		if (rc)
			goto out;
		ev[nev].msg = c->all[i].message;
		ev[nev++].result = r;
		if (!r) {
			all_ok = false;
			break;
		}
	}
	*result = any_ok && all_ok;
	if (msgs)
		for (size_t i = 0; i < nev; i++)
			if (ev[i].result == *result && ev[i].msg && ev[i].msg[0])
				json_array_append_new(msgs, json_string(ev[i].msg));
out:
	free(ev);
	return rc;
}
