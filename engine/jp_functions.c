/*
 * jp_functions.c - the table of Kyverno's JMESPath functions and the
 * helpers their files share (jp_fn_*.c, engine/jp_fn_int.h;
 * kyverno-semantics.md section 6.4; Kyverno pkg/engine/jmespath/
 * functions.go, arithmetic.go, time.go). Each follows the Go implementation: strings are byte
 * strings, numbers float64, quantities resource.Quantity, durations time.Duration, times time.Time
 * formatted as RFC 3339.
 *
 * Known limits (documented in the function table's signatures too):
 *   - regular expressions are PCRE2 (Go's RE2 syntax is a subset in
 *     practice); backtracking is charged to the step budget and bounded by
 *     a match limit per call (-> JP_ERR_LIMIT), see RE_MATCH_LIMIT;
 *   - to_upper/to_lower/equal_fold map ASCII, Latin-1, Latin Extended-A/
 *     Additional, Greek, Cyrillic, Armenian and fullwidth letters only;
 *   - random() understands literals, escapes (\d \w \s and negations), ".",
 *     classes [...] / [^...], groups with |, and the quantifiers * + ? {n}
 *     {n,} {n,m} (unbounded repeats stop at 10), at most 4096 characters;
 *   - is_external_url does no DNS lookup: IP literals are judged by their
 *     range, "localhost", *.local, *.localhost, *.svc, *.cluster.local and
 *     dot-less host names are internal, every other host name is external;
 *   - x509_decode fills the fields of Go's x509.Certificate that policies
 *     use (see x509_object); name constraints and policies are null;
 *   - time_now and time_now_utc both report UTC (gavel runs in UTC).
 */
#include "engine/jp_int.h"

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

#include "engine/value.h"
#include "engine/jp_fn_int.h"
#include "common/banned.h"

int jp_kfail(struct jp_ev *ev, enum jp_error_kind kind, const char *fname, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return jp_fail(ev, kind, "JMESPath function '%s': %s", fname, msg);
}

/* Takes the buffer's text as the result, charging for its size. */
int jp_out_buf(struct jp_ev *ev, const char *fname, struct gv_buf *b, json_t **out)
{
	int rc;

	if (b->len > MAX_OUT) {
		gv_buf_release(b);
		return jp_kfail(ev, JP_ERR_LIMIT, fname, "result larger than %u bytes", MAX_OUT);
	}
	rc = jp_charge(ev, 1 + b->len / 16);
	if (!rc)
		*out = jp_string_lossy(gv_buf_str(b), b->len);
	gv_buf_release(b);
	return rc;
}

/*
 * Kyverno's ifaceToString: strings as they are, numbers with
 * strconv.FormatFloat(f, 'f', -1, 32), booleans "true"/"false".
 */
bool jp_iface_to_string(const json_t *v, struct gv_buf *out)
{
	if (json_is_string(v))
		gv_buf_add(out, json_string_value(v), json_string_length(v));
	else if (json_is_number(v))
		jp_format_double(json_number_value(v), 'f', 32, out);
	else if (json_is_boolean(v))
		gv_buf_adds(out, json_is_true(v) ? "true" : "false");
	else
		return false;
	return true;
}

/* Go's intNumber: the number must be integral. */
bool jp_int_number(const json_t *v, long long *out)
{
	double d = json_number_value(v);

	if (d != trunc(d) || d < -9.2e18 || d > 9.2e18)
		return false;
	*out = (long long)d;
	return true;
}

/* Linear time (glibc's memmem is two-way), as Go's strings.Index. */
const char *jp_find_bytes(const char *h, size_t hn, const char *n, size_t nn)
{
	if (nn == 0)
		return h;
	return memmem(h, hn, n, nn);
}

/* ------------------------------------------------------------------ */
/* The table, sorted by name                                            */

#define T(x) JT_##x
#define S    T(STRING)
#define N    T(NUMBER)
const struct jp_func jp_kyverno_funcs[] = {
    {"add",
     "add(number|quantity|duration, number|quantity|duration) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     jp_fn_add,
     NULL},
    {"base64_decode", "base64_decode(string) -> string", 1, 1, {S}, jp_fn_base64_decode, NULL},
    {"base64_encode", "base64_encode(string) -> string", 1, 1, {S}, jp_fn_base64_encode, NULL},
    {"compare", "compare(string, string) -> number", 2, 2, {S, S}, jp_fn_compare, NULL},
    {"divide",
     "divide(number|quantity|duration, number|quantity|duration) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     jp_fn_divide,
     NULL},
    {"equal_fold", "equal_fold(string, string) -> boolean", 2, 2, {S, S}, jp_fn_equal_fold, NULL},
    {"image_normalize",
     "image_normalize(string) -> string",
     1,
     1,
     {S},
     jp_fn_image_normalize,
     NULL},
    {"is_external_url",
     "is_external_url(string) -> boolean",
     1,
     1,
     {S},
     jp_fn_is_external_url,
     NULL},
    {"items",
     "items(object|array, string, string) -> array",
     3,
     3,
     {T(OBJECT) | T(ARRAY), S, S},
     jp_fn_items,
     NULL},
    {"label_match",
     "label_match(object, object) -> boolean",
     2,
     2,
     {T(OBJECT), T(OBJECT)},
     jp_fn_label_match,
     NULL},
    {"lookup",
     "lookup(object|array, string|number) -> any",
     2,
     2,
     {T(OBJECT) | T(ARRAY), S | N},
     jp_fn_lookup,
     NULL},
    {"md5", "md5(string) -> string", 1, 1, {S}, jp_fn_md5, NULL},
    {"modulo",
     "modulo(number|quantity|duration, number|quantity|duration) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     jp_fn_modulo,
     NULL},
    {"multiply",
     "multiply(number|quantity|duration, number) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     jp_fn_multiply,
     NULL},
    {"object_from_lists",
     "object_from_lists(array, array) -> object",
     2,
     2,
     {T(ARRAY), T(ARRAY)},
     jp_fn_object_from_lists,
     NULL},
    {"parse_json", "parse_json(string) -> any", 1, 1, {S}, jp_fn_parse_json, NULL},
    {"parse_yaml", "parse_yaml(string) -> any", 1, 1, {S}, jp_fn_parse_yaml, NULL},
    {"path_canonicalize",
     "path_canonicalize(string) -> string",
     1,
     1,
     {S},
     jp_fn_path_canonicalize,
     NULL},
    {"pattern_match",
     "pattern_match(string, string|number) -> boolean",
     2,
     2,
     {S, S | N},
     jp_fn_pattern_match,
     NULL},
    {"random", "random(string) -> string", 1, 1, {S}, jp_fn_random, NULL},
    {"regex_match",
     "regex_match(string, string|number) -> boolean",
     2,
     2,
     {S, S | N},
     jp_fn_regex_match,
     jp_re_prepare},
    {"regex_replace_all",
     "regex_replace_all(string, string|number, string|number) -> string",
     3,
     3,
     {S, S | N, S | N},
     jp_fn_regex_replace_all,
     jp_re_prepare},
    {"regex_replace_all_literal",
     "regex_replace_all_literal(string, string|number, string|number) -> string",
     3,
     3,
     {S, S | N, S | N},
     jp_fn_regex_replace_all_literal,
     jp_re_prepare},
    {"replace",
     "replace(string, string, string, number) -> string",
     4,
     4,
     {S, S, S, N},
     jp_fn_replace,
     NULL},
    {"replace_all",
     "replace_all(string, string, string) -> string",
     3,
     3,
     {S, S, S},
     jp_fn_replace_all,
     NULL},
    {"round", "round(number, number) -> number", 2, 2, {N, N}, jp_fn_round, NULL},
    {"semver_compare",
     "semver_compare(string, string) -> boolean",
     2,
     2,
     {S, S},
     jp_fn_semver_compare,
     NULL},
    {"sha1", "sha1(string) -> string", 1, 1, {S}, jp_fn_sha1, NULL},
    {"sha256", "sha256(string) -> string", 1, 1, {S}, jp_fn_sha256, NULL},
    {"split", "split(string, string) -> array[string]", 2, 2, {S, S}, jp_fn_split, NULL},
    {"subtract",
     "subtract(number|quantity|duration, number|quantity|duration) -> number|string",
     2,
     2,
     {T(ANY), T(ANY)},
     jp_fn_subtract,
     NULL},
    {"sum",
     "sum(array[number]|array[quantity]|array[duration]) -> number|string",
     1,
     1,
     {T(ARRAY)},
     jp_fn_sum,
     NULL},
    {"time_add", "time_add(string, string) -> string", 2, 2, {S, S}, jp_fn_time_add, NULL},
    {"time_after", "time_after(string, string) -> boolean", 2, 2, {S, S}, jp_fn_time_after, NULL},
    {"time_before",
     "time_before(string, string) -> boolean",
     2,
     2,
     {S, S},
     jp_fn_time_before,
     NULL},
    {"time_between",
     "time_between(string, string, string) -> boolean",
     3,
     3,
     {S, S, S},
     jp_fn_time_between,
     NULL},
    {"time_diff", "time_diff(string, string) -> string", 2, 2, {S, S}, jp_fn_time_diff, NULL},
    {"time_now", "time_now() -> string", 0, 0, {0}, jp_fn_time_now, NULL},
    {"time_now_utc", "time_now_utc() -> string", 0, 0, {0}, jp_fn_time_now_utc, NULL},
    {"time_parse", "time_parse(string, string) -> string", 2, 2, {S, S}, jp_fn_time_parse, NULL},
    {"time_since",
     "time_since(string, string, string) -> string",
     3,
     3,
     {S, S, S},
     jp_fn_time_since,
     NULL},
    {"time_to_cron", "time_to_cron(string) -> string", 1, 1, {S}, jp_fn_time_to_cron, NULL},
    {"time_truncate",
     "time_truncate(string, string) -> string",
     2,
     2,
     {S, S},
     jp_fn_time_truncate,
     NULL},
    {"time_utc", "time_utc(string) -> string", 1, 1, {S}, jp_fn_time_utc, NULL},
    {"to_boolean", "to_boolean(string) -> boolean", 1, 1, {S}, jp_fn_to_boolean, NULL},
    {"to_lower", "to_lower(string) -> string", 1, 1, {S}, jp_fn_to_lower, NULL},
    {"to_upper", "to_upper(string) -> string", 1, 1, {S}, jp_fn_to_upper, NULL},
    {"trim", "trim(string, string) -> string", 2, 2, {S, S}, jp_fn_trim, NULL},
    {"trim_prefix", "trim_prefix(string, string) -> string", 2, 2, {S, S}, jp_fn_trim_prefix, NULL},
    {"truncate", "truncate(string, number) -> string", 2, 2, {S, N}, jp_fn_truncate, NULL},
    {"x509_decode", "x509_decode(string) -> object", 1, 1, {S}, jp_fn_x509_decode, NULL},
};
#undef T
#undef S
#undef N

const size_t jp_kyverno_nfuncs = GV_ARRAY_LEN(jp_kyverno_funcs);
