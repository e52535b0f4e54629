/*
 * jp_fn_int.h - internals shared by the files of Kyverno's JMESPath
 * functions (kyverno-semantics.md section 6.4): jp_functions.c (the table
 * and common helpers) and the families jp_fn_strings.c, jp_fn_regex.c,
 * jp_fn_collections.c, jp_fn_arith.c, jp_fn_encoding.c, jp_fn_semver.c,
 * jp_fn_random.c, jp_fn_x509.c, jp_fn_images.c and jp_fn_time.c. Each
 * function has the signature of struct jp_func's fn (engine/jp_int.h).
 * Not for use outside those files.
 */
#ifndef GV_ENGINE_JP_FN_INT_H
#define GV_ENGINE_JP_FN_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "engine/jp_int.h"

__extension__ typedef unsigned __int128 u128;

#define ARGV(i) (args[i].v)
#define STR(i)	json_string_value(args[i].v)
#define SLEN(i) json_string_length(args[i].v)
#define MAX_OUT (16u << 20) /* largest string a function may build */

/* Helpers shared between the function files. */

/* "JMESPath function 'name': message", Kyverno's error prefix. */
int jp_kfail(struct jp_ev *ev, enum jp_error_kind kind, const char *fname, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Takes the buffer's text as the result, charging for its size. */
int jp_out_buf(struct jp_ev *ev, const char *fname, struct gv_buf *b, json_t **out);

/*
 * Kyverno's ifaceToString: strings as they are, numbers with
 * strconv.FormatFloat(f, 'f', -1, 32), booleans "true"/"false".
 */
bool jp_iface_to_string(const json_t *v, struct gv_buf *out);

/* Go's intNumber: the number must be integral. */
bool jp_int_number(const json_t *v, long long *out);

/* Linear time (glibc's memmem is two-way), as Go's strings.Index. */
const char *jp_find_bytes(const char *h, size_t hn, const char *n, size_t nn);

/* Compile-time: a literal pattern is compiled once. */
void jp_re_prepare(struct jp_node *call);

/* A duration in nanoseconds as Go's Duration.String(), the result of arithmetic. */
int jp_out_duration(long double ns, json_t **out);

/* A function of the table: the shape of struct jp_func's fn. */
#define JP_FN_DECL(name)                                                                           \
	int name(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args, int nargs,     \
		 json_t **out)

/* jp_fn_arith.c */
JP_FN_DECL(jp_fn_add);
JP_FN_DECL(jp_fn_subtract);
JP_FN_DECL(jp_fn_multiply);
JP_FN_DECL(jp_fn_divide);
JP_FN_DECL(jp_fn_modulo);
JP_FN_DECL(jp_fn_sum);
JP_FN_DECL(jp_fn_round);

/* jp_fn_collections.c */
JP_FN_DECL(jp_fn_lookup);
JP_FN_DECL(jp_fn_items);
JP_FN_DECL(jp_fn_object_from_lists);
JP_FN_DECL(jp_fn_parse_json);
JP_FN_DECL(jp_fn_parse_yaml);

/* jp_fn_encoding.c */
JP_FN_DECL(jp_fn_base64_encode);
JP_FN_DECL(jp_fn_base64_decode);
JP_FN_DECL(jp_fn_sha256);
JP_FN_DECL(jp_fn_sha1);
JP_FN_DECL(jp_fn_md5);

/* jp_fn_images.c */
JP_FN_DECL(jp_fn_image_normalize);
JP_FN_DECL(jp_fn_is_external_url);

/* jp_fn_random.c */
JP_FN_DECL(jp_fn_random);

/* jp_fn_regex.c */
JP_FN_DECL(jp_fn_regex_match);
JP_FN_DECL(jp_fn_regex_replace_all);
JP_FN_DECL(jp_fn_regex_replace_all_literal);
JP_FN_DECL(jp_fn_pattern_match);
JP_FN_DECL(jp_fn_label_match);

/* jp_fn_semver.c */
JP_FN_DECL(jp_fn_semver_compare);

/* jp_fn_strings.c */
JP_FN_DECL(jp_fn_compare);
JP_FN_DECL(jp_fn_equal_fold);
JP_FN_DECL(jp_fn_replace);
JP_FN_DECL(jp_fn_replace_all);
JP_FN_DECL(jp_fn_to_upper);
JP_FN_DECL(jp_fn_to_lower);
JP_FN_DECL(jp_fn_trim);
JP_FN_DECL(jp_fn_trim_prefix);
JP_FN_DECL(jp_fn_split);
JP_FN_DECL(jp_fn_truncate);
JP_FN_DECL(jp_fn_path_canonicalize);
JP_FN_DECL(jp_fn_to_boolean);

/* jp_fn_time.c */
JP_FN_DECL(jp_fn_time_now);
JP_FN_DECL(jp_fn_time_now_utc);
JP_FN_DECL(jp_fn_time_since);
JP_FN_DECL(jp_fn_time_add);
JP_FN_DECL(jp_fn_time_parse);
JP_FN_DECL(jp_fn_time_utc);
JP_FN_DECL(jp_fn_time_diff);
JP_FN_DECL(jp_fn_time_before);
JP_FN_DECL(jp_fn_time_after);
JP_FN_DECL(jp_fn_time_between);
JP_FN_DECL(jp_fn_time_truncate);
JP_FN_DECL(jp_fn_time_to_cron);

/* jp_fn_x509.c */
JP_FN_DECL(jp_fn_x509_decode);

#endif
