/*
 * jp_fn_semver.c - semver_compare (github.com/blang/semver ParseRange).
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

#include "engine/value.h"
#include "common/banned.h"

/* ------------------------------------------------------------------ */
/* semver_compare (github.com/blang/semver ParseRange)                   */

#define SEMVER_MAX_PARTS 64

enum semver_op { SV_EQ, SV_NE, SV_GT, SV_GE, SV_LT, SV_LE };

struct semver_part {
	char text[128];
};

/* blang's Parse: strict, no leading 'v'. */
static bool semver_parse(const char *s, struct value_semver *v)
{
	if (s[0] == 'v' || s[0] == 'V')
		return false;
	return value_parse_semver(s, v);
}

/* splitAndTrim: split on spaces not preceded by an operator character, drop 1-byte tokens. */
static int semver_split(const char *s, struct semver_part *parts, int max)
{
	size_t i, last = 0, len = strlen(s);
	char last_char = 0;
	int n = 0;

	for (i = 0; i <= len; i++) {
		bool end = i == len;

		if (!end && !(s[i] == ' ' && !strchr("><=", last_char ? last_char : 'x'))) {
			if (s[i] != ' ')
				last_char = s[i];
			continue;
		}
		if (end ? last + 1 < len : last + 1 < i) {
			size_t j, k = 0;

			if (n == max)
				return -1;
			for (j = last; j < i && k + 1 < sizeof(parts[n].text); j++)
				if (s[j] != ' ')
					parts[n].text[k++] = s[j];
			parts[n].text[k] = '\0';
			n++;
		}
		last = i + 1;
	}
	return n;
}

static bool semver_split_op(const char *s, char *op, size_t opn, const char **ver)
{
	size_t i = 0, k = 0;

	while (s[i] && !isdigit((unsigned char)s[i]))
		i++;
	if (!s[i])
		return false;
	*ver = s + i;
	/* TrimSpace(s[:i]) (spaces were removed already) */
	for (size_t j = 0; j < i && k + 1 < opn; j++)
		op[k++] = s[j];
	op[k] = '\0';
	return true;
}

static bool semver_op_of(const char *op, enum semver_op *out)
{
	static const struct {
		const char *s;
		enum semver_op op;
	} ops[] = {{"", SV_EQ},	 {"=", SV_EQ},	{"==", SV_EQ}, {"!", SV_NE}, {"!=", SV_NE},
		   {">", SV_GT}, {">=", SV_GE}, {"<", SV_LT},  {"<=", SV_LE}};
	size_t i;

	for (i = 0; i < GV_ARRAY_LEN(ops); i++) {
		if (strcmp(op, ops[i].s) == 0) {
			*out = ops[i].op;
			return true;
		}
	}
	return false;
}

/*
 * blang/semver's incrementMajorVersion (idx 0) and incrementMinorVersion
 * (idx 1): split flat at '.', add one to part idx (Atoi, wrapping as Go's
 * int does), join again. When the part is not a number (or is missing) Go
 * returns "" and expandWildcardVersion ignores the error: res is "".
 */
static void semver_increment(const char *flat, int idx, char *res, size_t size)
{
	const char *start = flat, *end;
	char part[96];
	long long v;
	unsigned long long next;
	int k;

	res[0] = '\0';
	for (k = 0; k < idx; k++) {
		start = strchr(start, '.');
		if (!start)
			return;
		start++;
	}
	end = strchr(start, '.');
	if (!end)
		end = start + strlen(start);
	if ((size_t)(end - start) >= sizeof(part))
		return;
	memcpy(part, start, (size_t)(end - start));
	part[end - start] = '\0';
	if (!value_parse_go_int(part, &v)) /* Go's strconv.Atoi */
		return;
	next = (unsigned long long)v + 1; /* Go's int wraps */
	snprintf(res, size, "%.*s%lld%s", (int)(start - flat), flat, (long long)next, end);
}

/* expandWildcardVersion for one part containing 'x'; writes 1 or 2 parts. */
static int semver_expand(const char *part, struct semver_part *outp)
{
	char op[16], flat[96], res[96];
	const char *ver, *last;
	int dots = 0, kind; /* 1 major, 2 minor, 3 patch wildcard, 0 none */
	const char *rop;
	bool incr = false;
	int n = 0;

	if (!semver_split_op(part, op, sizeof(op), &ver))
		return -1;
	for (const char *p = ver; *p; p++)
		dots += *p == '.';
	last = strrchr(ver, '.');
	last = last ? last + 1 : ver;
	kind = strcmp(last, "x") == 0 ? dots + 1 : 0;
	/* createVersionFromWildcard: ".x.x" -> ".x", first ".x" -> ".0", pad to 3 parts */
	{
		struct gv_buf b1 = {0};
		const char *p = strstr(ver, ".x.x");

		if (p) {
			gv_buf_add(&b1, ver, (size_t)(p - ver));
			gv_buf_adds(&b1, ".x");
			gv_buf_adds(&b1, p + 4);
		} else {
			gv_buf_adds(&b1, ver);
		}
		p = strstr(gv_buf_str(&b1), ".x");
		if (p) {
			size_t off = (size_t)(p - gv_buf_str(&b1));
			b1.data[off + 1] = '0';
		}
		dots = 0;
		for (p = gv_buf_str(&b1); *p; p++)
			dots += *p == '.';
		snprintf(flat, sizeof(flat), "%s%s", gv_buf_str(&b1), dots == 1 ? ".0" : "");
		gv_buf_release(&b1);
	}
	if (strcmp(op, ">") == 0) {
		rop = ">=";
		incr = true;
	} else if (strcmp(op, ">=") == 0) {
		rop = ">=";
	} else if (strcmp(op, "<") == 0) {
		rop = "<";
	} else if (strcmp(op, "<=") == 0) {
		rop = "<";
		incr = true;
	} else if (!op[0] || strcmp(op, "=") == 0 || strcmp(op, "==") == 0) {
		snprintf(outp[n++].text, sizeof(outp[0].text), ">=%s", flat);
		rop = "<";
		incr = true;
	} else if (strcmp(op, "!=") == 0 || strcmp(op, "!") == 0) {
		snprintf(outp[n++].text, sizeof(outp[0].text), "<%s", flat);
		rop = ">=";
		incr = true;
	} else {
		rop = "";
	}
	res[0] = '\0';
	if (!incr) {
		snprintf(res, sizeof(res), "%s", flat);
	} else if (kind == 3 || kind == 2) {
		semver_increment(flat, kind == 3 ? 1 : 0, res, sizeof(res));
	}
	snprintf(outp[n++].text, sizeof(outp[0].text), "%s%s", rop, res);
	return n;
}

static bool semver_holds(enum semver_op op, const struct value_semver *v,
			 const struct value_semver *w)
{
	int c = value_semver_cmp(v, w);

	switch (op) {
	case SV_EQ:
		return c == 0;
	case SV_NE:
		return c != 0;
	case SV_GT:
		return c > 0;
	case SV_GE:
		return c >= 0;
	case SV_LT:
		return c < 0;
	default:
		return c <= 0;
	}
}

int jp_fn_semver_compare(struct jp_ev *ev, const struct jp_node *call, struct jp_arg *args,
			 int nargs, json_t **out)
{
	struct semver_part *parts = NULL, *exp = NULL;
	struct value_semver v, w;
	int n, i, ne = 0, rc = 0;
	bool any = false, all = true, group_open = false;

	memset(&v, 0, sizeof(v));
	if (!semver_parse(STR(0), &v))
		memset(&v, 0, sizeof(v)); /* Kyverno ignores the parse error: 0.0.0 */
	parts = gv_xcalloc(SEMVER_MAX_PARTS, sizeof(*parts));
	exp = gv_xcalloc(2 * SEMVER_MAX_PARTS, sizeof(*exp));
	n = semver_split(STR(1), parts, SEMVER_MAX_PARTS);
	if (n < 0) {
		rc = jp_kfail(ev, JP_ERR_RUNTIME, "semver_compare", "range has too many parts");
		goto out;
	}
	/* splitORParts */
	for (i = 0; i < n; i++) {
		if (strcmp(parts[i].text, "||") == 0 && (i == 0 || i == n - 1)) {
			rc = jp_kfail(ev, JP_ERR_RUNTIME, "semver_compare",
				      "%s element in range is '||'", i == 0 ? "First" : "Last");
			goto out;
		}
	}
	if (n == 0) {
		rc =
		    jp_kfail(ev, JP_ERR_RUNTIME, "semver_compare", "Last element in range is '||'");
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(parts[i].text, "||") == 0) {
			snprintf(exp[ne++].text, sizeof(exp[0].text), "||");
		} else if (strchr(parts[i].text, 'x')) {
			int k = semver_expand(parts[i].text, exp + ne);

			if (k < 0) {
				rc = jp_kfail(ev, JP_ERR_RUNTIME, "semver_compare",
					      "Could not get version from string: \"%s\"",
					      parts[i].text);
				goto out;
			}
			ne += k;
		} else {
			exp[ne++] = parts[i];
		}
	}
	/* OR of AND groups; every part is parsed even after the answer is known */
	for (i = 0; i <= ne; i++) {
		char op[16];
		const char *ver;
		enum semver_op sop;

		if (i == ne || strcmp(exp[i].text, "||") == 0) {
			if (!group_open) {
				rc = jp_kfail(ev, JP_ERR_RUNTIME, "semver_compare",
					      "empty range in '%s'", STR(1));
				goto out;
			}
			any = any || all;
			all = true;
			group_open = false;
			continue;
		}
		group_open = true;
		if (!semver_split_op(exp[i].text, op, sizeof(op), &ver)) {
			rc = jp_kfail(ev, JP_ERR_RUNTIME, "semver_compare",
				      "Could not get version from string: \"%s\"", exp[i].text);
			goto out;
		}
		if (!semver_op_of(op, &sop)) {
			rc = jp_kfail(
			    ev, JP_ERR_RUNTIME, "semver_compare",
			    "Could not parse Range \"%s\": Could not parse comparator \"%s\"",
			    exp[i].text, op);
			goto out;
		}
		if (!semver_parse(ver, &w)) {
			rc = jp_kfail(ev, JP_ERR_RUNTIME, "semver_compare",
				      "Could not parse Range \"%s\": invalid version \"%s\"",
				      exp[i].text, ver);
			goto out;
		}
		all = all && semver_holds(sop, &v, &w);
	}
	*out = json_boolean(any);
out:
	free(parts);
	free(exp);
	return rc;
}
