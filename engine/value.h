/*
 * value.h - scalar semantics shared by patterns and conditions: Kyverno's
 * wildcards, Kubernetes quantities, Go durations, semantic versions, and the
 * Go formatting that leaks into Kyverno's messages.
 *
 * Behaviour: kyverno-semantics.md sections 3.5 (string mini-language
 * operands), 3.7 (wildcards), 5.3 (condition operators).
 */
#ifndef GV_ENGINE_VALUE_H
#define GV_ENGINE_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"

/*
 * Kyverno wildcard match (go-wildcard v1.0.3, section 3.7): '*' any run of
 * code points (incl. empty), '?' exactly one code point, everything else
 * literal and case-sensitive. Empty pattern matches only empty text.
 */
bool value_wildcard(const char *pattern, const char *text);

/*
 * value_wildcard with a bound on the work, which can reach (pattern length
 * x text length) code point comparisons: returns 1 on a match, 0 on none,
 * -1 once more than max_work comparisons were needed. *work (may be NULL)
 * receives the comparisons made.
 */
int value_wildcard_bounded(const char *pattern, const char *text, size_t max_work, size_t *work);

/* True when s contains '*' or '?'. */
bool value_has_wildcard(const char *s);

/*
 * A Kubernetes resource quantity (k8s.io/apimachinery resource.Quantity).
 * The value is held exactly as a decimal, value = (neg ? -1 : 1) * coef *
 * 10^exp10 with coef = coef_hi * 2^64 + coef_lo, normalised (no trailing
 * decimal zeros in coef), so that 1Gi == 1024Mi and 0.2 == 200m compare
 * equal. As in ParseQuantity, values that need more than int64 precision are
 * rounded up to a multiple of 1n and capped at 2^63-1; short forms keep
 * their exact value ("1e30" is not capped).
 */
struct value_quantity {
	long double v; /* approximate numeric value (for display and rough ordering) */
	bool binary;   /* had a binary suffix (Ki, Mi, ...) */
	bool neg;      /* exact value: sign */
	unsigned long long coef_hi, coef_lo; /* exact value: coefficient */
	long long exp10;		     /* exact value: decimal exponent */
};

/*
 * Parses a quantity ("1Gi", "200m", "1e3", ".5", "-2") with the grammar of
 * resource.ParseQuantity: sign, digits, optional fraction, optional suffix
 * (n u m "" k M G T P E, Ki Mi Gi Ti Pi Ei, or e/E and a signed integer).
 * Returns false when s is not one (q is then untouched).
 */
bool value_parse_quantity(const char *s, struct value_quantity *q);

/* Compares two quantities exactly (resource.Quantity.Cmp): -1, 0, 1. */
int value_quantity_cmp(const struct value_quantity *a, const struct value_quantity *b);

/*
 * Compares the quantity texts a and b, parsing them first. Decimal
 * quantities beyond the exact range of struct value_quantity (about 9.2e18)
 * are compared digit by digit, as resource.Quantity does with its
 * arbitrary-precision slow path (only binary-suffixed quantities are capped
 * there). Returns false when either text is not a quantity.
 */
bool value_quantity_cmp_text(const char *a, const char *b, int *cmp);

/*
 * Parses a Go duration ("1h30m", "-1.5s", "300ms", "0") into nanoseconds.
 * Returns false when s is not a Go duration.
 */
bool value_parse_duration(const char *s, long double *ns);

/* Formats nanoseconds as Go's time.Duration.String() ("1h30m0s", "1.5s", "0s"). */
void value_format_duration(long double ns, struct gv_buf *out);

/*
 * Go fmt %v of a JSON value: strings raw, integers decimal, floats in Go's
 * shortest 'g'-like %v form (1e+06, 0.5, 3), bools, "<nil>" for null,
 * "[a b]" for arrays, "map[k:v]" for maps (keys sorted). Appends to out.
 */
void value_go_format(const json_t *v, struct gv_buf *out);

/* Returns a new string with value_go_format's text; caller frees. */
char *value_go_string(const json_t *v);

/*
 * value_go_format appending at most max bytes: returns false, with out back
 * to its length on entry, when the text of v is longer. The work is
 * proportional to max whatever the size of v (a part shared by several
 * places of v is formatted, and walked, once per place).
 */
bool value_go_format_max(const json_t *v, struct gv_buf *out, size_t max);

/*
 * The cost of walking or copying v (borrowed) once, in step-budget units: a
 * unit per value, a shared part counted each time it appears, and a unit
 * per 16 bytes of strings and object keys. The walk stops once the count
 * passes max (the result is then larger than max), so it costs at most
 * about max.
 */
size_t value_walk_cost(const json_t *v, size_t max);

/*
 * The number of values in v (borrowed), a shared part counted each time it
 * appears, v included; the walk stops once the count passes max.
 */
size_t value_count(const json_t *v, size_t max);

/*
 * Parses a semantic version "1.2.3" (optional leading v, pre-release and
 * build parts) with the rules of github.com/blang/semver: exactly three
 * numeric parts without leading zeros, dot-separated pre-release identifiers
 * (numeric ones without leading zeros), alphanumeric build identifiers.
 * `pre` holds the pre-release part without the '-'; a pre-release of 64
 * bytes or more is refused. Returns false when s is not one.
 * value_semver_cmp orders by semver precedence (build ignored): -1, 0, 1.
 */
struct value_semver {
	long long major, minor, patch;
	char pre[64];
};
bool value_parse_semver(const char *s, struct value_semver *v);
int value_semver_cmp(const struct value_semver *a, const struct value_semver *b);

/* Numeric value of an integer or real; false for any other type. */
bool value_number(const json_t *v, double *out);

/*
 * Go's strconv.FormatFloat(v, fmt, -1, 64) (shortest representation that
 * round-trips): fmt 'g' is also fmt's %v (1e+06, 0.5, 3, 1.5e-05), 'e'/'E'
 * the exponent form (5E-01, 8E+01), 'f' the plain form. Appends to out.
 */
void value_format_float(double v, char fmt, struct gv_buf *out);

/*
 * Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits only
 * (no spaces, no underscores), false on overflow.
 */
bool value_parse_go_int(const char *s, long long *out);

/*
 * Go's strconv.ParseFloat(s, 64): decimal or hexadecimal (0x..p..) floats,
 * "inf"/"infinity"/"nan" in any case, underscores between digits; false on
 * syntax errors and on overflow (ErrRange).
 */
bool value_parse_go_float(const char *s, double *out);

#endif
