/*
 * format.c - the Kubernetes format library (cel-semantics.md 1.9;
 * k8s.io/apiserver pkg/cel/library/format.go): format.named(name) ->
 * optional(Format), format.dns1123Label() ... format.datetime(), and
 * f.validate(s) -> optional(list(string)), none when s is valid, else the
 * messages of k8s.io/apimachinery's validation functions (IsDNS1123Label,
 * IsDNS1123Subdomain, IsDNS1035Label, IsQualifiedName, IsValidLabelValue).
 * The patterns are checked by hand: they are fixed and small, so no regex.
 */
#include "engine/cel/cel.h"
#include "engine/cel/cel_int.h"

#include <stdio.h>
#include <string.h>

#include "common/banned.h"

#define DNS1123_LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_LABEL_MSG                                                                          \
	"a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "   \
	"and must start and end with an alphanumeric character"
#define DNS1123_SUB_FMT DNS1123_LABEL_FMT "(\\." DNS1123_LABEL_FMT ")*"
#define DNS1123_SUB_MSG                                                                            \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "  \
	"or '.', and must start and end with an alphanumeric character"
#define DNS1035_LABEL_FMT "[a-z]([-a-z0-9]*[a-z0-9])?"
#define DNS1035_LABEL_MSG                                                                          \
	"a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "  \
	"an alphabetic character, and end with an alphanumeric character"
#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_MSG                                                                                  \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "   \
	"an alphanumeric character"
#define LABEL_VALUE_FMT "(" QNAME_FMT ")?"
#define LABEL_VALUE_MSG                                                                            \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "   \
	"or '.', and must start and end with an alphanumeric character"

/* validation.RegexError: msg (e.g. 'a',  or 'b', regex used for validation is 'fmt') */
#define EG2(a, b)    " (e.g. '" a "',  or '" b "', regex used for validation is '"
#define EG3(a, b, c) " (e.g. '" a "',  or '" b "',  or '" c "', regex used for validation is '"

/* Up to 4 messages of one validation. */
struct fmt_errs {
	const char *m[4];
	int n;
};

static void add(struct fmt_errs *e, const char *m)
{
	if (e->n < 4)
		e->m[e->n++] = m;
}

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]([-a-z0-9]*[a-z0-9])? (first_alpha: [a-z] first, DNS-1035) */
static bool is_label(const char *s, size_t n, bool first_alpha)
{
	size_t i;

	if (!n || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
		return false;
	if (first_alpha && !(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	for (i = 1; i + 1 < n; i++)
		if (!lower_alnum(s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool is_subdomain(const char *s, size_t n)
{
	size_t i = 0;

	for (;;) {
		const char *dot = memchr(s + i, '.', n - i);
		size_t end = dot ? (size_t)(dot - s) : n;

		if (!is_label(s + i, end - i, false))
			return false;
		if (!dot)
			return true;
		i = end + 1;
	}
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9] */
static bool is_qname(const char *s, size_t n)
{
	size_t i;

	if (!n || !alnum(s[0]) || !alnum(s[n - 1]))
		return false;
	for (i = 1; i + 1 < n; i++)
		if (!alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

static void dns1123_label(const char *s, size_t n, struct fmt_errs *e)
{
	if (n > 63)
		add(e, "must be no more than 63 characters");
	if (!is_label(s, n, false)) {
		if (is_subdomain(s, n))
			add(e, "must not contain dots");
		else
			add(e, DNS1123_LABEL_MSG EG2("my-name", "123-abc") DNS1123_LABEL_FMT "')");
	}
}

static void dns1123_subdomain(const char *s, size_t n, struct fmt_errs *e, bool prefix_part)
{
	if (n > 253)
		add(e, prefix_part ? "prefix part must be no more than 253 characters"
				   : "must be no more than 253 characters");
	if (!is_subdomain(s, n))
		add(e, prefix_part
			   ? "prefix part " DNS1123_SUB_MSG
			     " (e.g. 'example.com', regex used for validation is '" DNS1123_SUB_FMT
			     "')"
			   : DNS1123_SUB_MSG " (e.g. 'example.com', regex used for validation "
					     "is '" DNS1123_SUB_FMT "')");
}

static void dns1035_label(const char *s, size_t n, struct fmt_errs *e)
{
	if (n > 63)
		add(e, "must be no more than 63 characters");
	if (!is_label(s, n, true))
		add(e, DNS1035_LABEL_MSG EG2("my-name", "abc-123") DNS1035_LABEL_FMT "')");
}

static void qualified_name(const char *s, size_t n, struct fmt_errs *e)
{
	const char *slash = memchr(s, '/', n);
	const char *name = s;
	size_t nn = n;

	if (slash) {
		size_t pn = (size_t)(slash - s);

		if (memchr(slash + 1, '/', n - pn - 1)) {
			add(e,
			    "a qualified name " QNAME_MSG EG3("MyName", "my.name", "123-abc")
				QNAME_FMT "') with an optional DNS subdomain prefix and '/' (e.g. "
					  "'example.com/MyName')");
			return;
		}
		if (!pn)
			add(e, "prefix part must be non-empty");
		else
			dns1123_subdomain(s, pn, e, true);
		name = slash + 1;
		nn = n - pn - 1;
	}
	if (!nn)
		add(e, "name part must be non-empty");
	else if (nn > 63)
		add(e, "name part must be no more than 63 characters");
	if (!is_qname(name, nn))
		add(e, "name part " QNAME_MSG EG3("MyName", "my.name", "123-abc") QNAME_FMT "')");
}

static void label_value(const char *s, size_t n, struct fmt_errs *e)
{
	if (n > 63)
		add(e, "must be no more than 63 characters");
	if (n && !is_qname(s, n))
		add(e, LABEL_VALUE_MSG EG3("MyValue", "my_value", "12345") LABEL_VALUE_FMT "')");
}

/* A trailing '-' is allowed in a generateName prefix (apimachinery's maskTrailingDash). */
static size_t unmask(const char *s, size_t n)
{
	return n && s[n - 1] == '-' ? n - 1 : n;
}

static void dns1123_label_prefix(const char *s, size_t n, struct fmt_errs *e)
{
	dns1123_label(s, unmask(s, n), e);
}

static void dns1123_subdomain_prefix(const char *s, size_t n, struct fmt_errs *e)
{
	dns1123_subdomain(s, unmask(s, n), e, false);
}

static void dns1035_label_prefix(const char *s, size_t n, struct fmt_errs *e)
{
	dns1035_label(s, unmask(s, n), e);
}

static int hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static void uuid(const char *s, size_t n, struct fmt_errs *e)
{
	size_t i;

	if (n == 36) {
		for (i = 0; i < 36; i++) {
			bool dash = i == 8 || i == 13 || i == 18 || i == 23;

			if (dash ? s[i] != '-' : !hex(s[i]))
				break;
		}
		if (i == 36)
			return;
	}
	add(e, "does not match the UUID format");
}

/* Go's base64.StdEncoding (padded, strict). */
static void byte_fmt(const char *s, size_t n, struct fmt_errs *e)
{
	size_t i, pad = 0;

	if (n % 4)
		goto bad;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '=') {
			pad++;
			continue;
		}
		if (pad || !(alnum(c) || c == '+' || c == '/'))
			goto bad;
	}
	if (pad > 2)
		goto bad;
	return;
bad:
	add(e, "invalid base64");
}

/* time.Parse("2006-01-02", s) */
static void date_fmt(const char *s, size_t n, struct fmt_errs *e)
{
	static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y = 0, m = 0, d = 0;
	size_t i;

	if (n != 10 || s[4] != '-' || s[7] != '-')
		goto bad;
	for (i = 0; i < 10; i++)
		if (i != 4 && i != 7 && !(s[i] >= '0' && s[i] <= '9'))
			goto bad;
	y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
	m = (s[5] - '0') * 10 + (s[6] - '0');
	d = (s[8] - '0') * 10 + (s[9] - '0');
	if (m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		goto bad;
	if (m == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		goto bad;
	return;
bad:
	add(e, "invalid date");
}

static void datetime_fmt(const char *s, size_t n, struct fmt_errs *e)
{
	int64_t sec;
	int32_t nsec;

	if (!cel_parse_timestamp(s, n, &sec, &nsec))
		add(e, "invalid datetime");
}

struct named_format {
	const char *name;
	void (*validate)(const char *s, size_t n, struct fmt_errs *e);
};

static void dns1123_subdomain_v(const char *s, size_t n, struct fmt_errs *e)
{
	dns1123_subdomain(s, n, e, false);
}

static const struct named_format formats[] = {
    {"dns1123Label", dns1123_label},
    {"dns1123Subdomain", dns1123_subdomain_v},
    {"dns1035Label", dns1035_label},
    {"qualifiedName", qualified_name},
    {"dns1123LabelPrefix", dns1123_label_prefix},
    {"dns1123SubdomainPrefix", dns1123_subdomain_prefix},
    {"dns1035LabelPrefix", dns1035_label_prefix},
    {"labelValue", label_value},
    {"uri", NULL}, /* the URL library's parser (cel_url_check) */
    {"uuid", uuid},
    {"byte", byte_fmt},
    {"date", date_fmt},
    {"datetime", datetime_fmt},
};

static void format_text(const void *data, struct gv_buf *out)
{
	const struct named_format *f = data;

	gv_buf_adds(out, f->name);
}

static bool format_equal(const void *a, const void *b)
{
	return a == b;
}

static const struct cel_opaque_type format_type = {"kubernetes.NamedFormat", "format.named", false,
						   format_text, format_equal};

#define FN(name)                                                                                   \
	static struct cel_value name(struct cel_eval *ev, const struct cel_node *n,                \
				     struct cel_value *a, int na)

static struct cel_value format_value(const struct named_format *f)
{
	struct cel_value v = {.kind = CEL_OPAQUE};

	v.v.obj.type = &format_type;
	v.v.obj.data = f;
	return v;
}

FN(f_named)
{
	size_t i;

	(void)na;
	if (a[0].kind != CEL_STRING)
		return cel_err(ev, n->pos, "no such overload: format.named(%s)",
			       cel_type_name(&a[0]));
	for (i = 0; i < GV_ARRAY_LEN(formats); i++) {
		if (strlen(formats[i].name) == a[0].v.s.n &&
		    memcmp(formats[i].name, a[0].v.s.p, a[0].v.s.n) == 0) {
			struct cel_value f = format_value(&formats[i]);

			return cel_opt(ev, &f);
		}
	}
	return cel_opt(ev, NULL);
}

/* format.<name>(): n->name is "format.<name>" */
FN(f_format_ctor)
{
	size_t i;

	(void)a;
	(void)na;
	for (i = 0; i < GV_ARRAY_LEN(formats); i++)
		if (strcmp(n->name + 7, formats[i].name) == 0)
			return format_value(&formats[i]);
	return cel_err(ev, n->pos, "unknown format '%s'", n->name);
}

FN(f_validate)
{
	const struct named_format *f;
	struct fmt_errs e = {{NULL}, 0};
	struct cel_value items[4], list;
	int i;

	(void)na;
	if (a[0].kind != CEL_OPAQUE || a[0].v.obj.type != &format_type || a[1].kind != CEL_STRING)
		return cel_err(ev, n->pos, "no such overload: %s.validate(%s)",
			       cel_type_name(&a[0]), cel_type_name(&a[1]));
	f = a[0].v.obj.data;
	cel_charge(ev, a[1].v.s.n / 16 + 1);
	if (f->validate) {
		f->validate(a[1].v.s.p, a[1].v.s.n, &e);
	} else {
		const char *why = cel_url_check(ev, a[1].v.s.p, a[1].v.s.n);

		if (why) {
			struct gv_buf b = {0};
			struct cel_value s;

			gv_buf_addf(&b, "Invalid URI: parse \"%.*s\": %s", (int)a[1].v.s.n,
				    a[1].v.s.p, why);
			s = cel_str(cel_eval_strdup(ev, b.data, b.len), b.len);
			gv_buf_release(&b);
			list = cel_list_new(ev, &s, 1);
			return cel_opt(ev, &list);
		}
	}
	if (!e.n)
		return cel_opt(ev, NULL);
	for (i = 0; i < e.n; i++)
		items[i] = cel_str(e.m[i], strlen(e.m[i]));
	list = cel_list_new(ev, items, (size_t)e.n);
	return cel_opt(ev, &list);
}

#define G CEL_FN_GLOBAL
#define M CEL_FN_MEMBER
const struct cel_func cel_format_funcs[] = {
    {"format.named", f_named, 1, 1, G, false},
    {"format.dns1123Label", f_format_ctor, 0, 0, G, false},
    {"format.dns1123Subdomain", f_format_ctor, 0, 0, G, false},
    {"format.dns1035Label", f_format_ctor, 0, 0, G, false},
    {"format.qualifiedName", f_format_ctor, 0, 0, G, false},
    {"format.dns1123LabelPrefix", f_format_ctor, 0, 0, G, false},
    {"format.dns1123SubdomainPrefix", f_format_ctor, 0, 0, G, false},
    {"format.dns1035LabelPrefix", f_format_ctor, 0, 0, G, false},
    {"format.labelValue", f_format_ctor, 0, 0, G, false},
    {"format.uri", f_format_ctor, 0, 0, G, false},
    {"format.uuid", f_format_ctor, 0, 0, G, false},
    {"format.byte", f_format_ctor, 0, 0, G, false},
    {"format.date", f_format_ctor, 0, 0, G, false},
    {"format.datetime", f_format_ctor, 0, 0, G, false},
    {"validate", f_validate, 2, 2, M, false},
};
#undef G
#undef M
const size_t cel_format_nfuncs = GV_ARRAY_LEN(cel_format_funcs);
