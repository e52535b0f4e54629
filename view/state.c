/*
 * state.c - what a request is judged against: the compiled gavel
 * ConfigMap (resourceFilters, excluded users and groups) and the
 * refcounted cluster view.
 */
#include "view/view.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/utf8.h"
#include "common/banned.h"

/* ---- wildcards ---- */

/* `*` = any run of code points, `?` = one code point (go-wildcard). */
static bool wild(const char *pat, const char *s)
{
	const char *star = NULL, *retry = NULL;

	if (!pat)
		pat = "";
	if (!s)
		s = "";
	if (!strcmp(pat, "*"))
		return true;
	while (*s) {
		if (*pat == '*') {
			star = ++pat;
			retry = s;
			continue;
		}
		if (*pat == '?') {
			pat++;
			s += gv_utf8_width((unsigned char)*s);
			continue;
		}
		if (*pat && *pat == *s) {
			pat++;
			s++;
			continue;
		}
		if (!star)
			return false;
		pat = star;
		retry += gv_utf8_width((unsigned char)*retry);
		s = retry;
	}
	while (*pat == '*')
		pat++;
	return !*pat;
}

/* ---- config ---- */

struct filter {
	char *group, *version, *kind, *sub, *ns, *name; /* owned */
};

struct view_config {
	atomic_int refs;
	struct filter *filters;
	size_t nfilters;
	char **users, **groups;
	size_t nusers, ngroups;
};

static char *trimmed(const char *s, size_t n)
{
	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	return gv_xstrndup(s, n);
}

/* Splits s at sep into trimmed, non-empty parts. */
static size_t split(const char *s, char sep, char ***out)
{
	char **v = NULL;
	size_t n = 0;

	while (s && *s) {
		const char *e = strchr(s, sep);
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char *part = trimmed(s, len);
		if (*part) {
			v = gv_xrealloc(v, (n + 1) * sizeof(*v));
			v[n++] = part;
		} else {
			free(part);
		}
		s = e ? e + 1 : NULL;
	}
	*out = v;
	return n;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Kyverno's kube.ParseKindSelector. */
static void parse_kind(struct filter *f, const char *sel)
{
	char **p;
	size_t n;

	n = split(sel, '/', &p);
	f->group = f->version = f->sub = NULL;
	if (n == 2 && !strcmp(p[0], "*") && !strcmp(p[1], "*")) {
		f->group = gv_xstrdup("*");
		f->version = gv_xstrdup("*");
		f->kind = gv_xstrdup("*");
		f->sub = gv_xstrdup("*");
	} else if (n == 2 && isupper((unsigned char)p[1][0])) {
		f->group = gv_xstrdup("*");
		f->version = gv_xstrdup(p[0]);
		f->kind = gv_xstrdup(p[1]);
	} else if (n == 2) {
		f->group = gv_xstrdup("*");
		f->version = gv_xstrdup("*");
		f->kind = gv_xstrdup(p[0]);
		f->sub = gv_xstrdup(p[1]);
	} else if (n >= 3) {
		f->group = gv_xstrdup(p[0]);
		f->version = gv_xstrdup(p[1]);
		f->kind = gv_xstrdup(p[2]);
		if (n >= 4)
			f->sub = gv_xstrdup(p[3]);
	} else {
		f->group = gv_xstrdup("*");
		f->version = gv_xstrdup("*");
		f->kind = gv_xstrdup(n ? p[0] : "*");
	}
	if (!f->sub)
		f->sub = gv_xstrdup("");
	free_list(p, n);
}

static void parse_filters(struct view_config *c, const char *s)
{
	while (s && *s) {
		const char *open = strchr(s, '['), *close;
		char **el;
		size_t n;
		struct filter *f;
		if (!open)
			break;
		close = strchr(open + 1, ']');
		if (!close) {
			gv_warn("config: resourceFilters: unterminated entry \"%s\" ignored", open);
			break;
		}
		{
			char *inner = gv_xstrndup(open + 1, (size_t)(close - open - 1));
			if (strchr(inner, '[')) {
				gv_warn("config: resourceFilters: malformed entry \"%s\" ignored",
					inner);
				free(inner);
				s = close + 1;
				continue;
			}
			n = split(inner, ',', &el);
			free(inner);
		}
		if (n == 0 || n > 3) {
			gv_warn("config: resourceFilters: entry %.*s ignored (want "
				"[Kind,Namespace,Name])",
				(int)(close - open + 1), open);
			free_list(el, n);
			s = close + 1;
			continue;
		}
		c->filters = gv_xrealloc(c->filters, (c->nfilters + 1) * sizeof(*c->filters));
		f = &c->filters[c->nfilters++];
		parse_kind(f, el[0]);
		f->ns = gv_xstrdup(n > 1 ? el[1] : "*");
		f->name = gv_xstrdup(n > 2 ? el[2] : "*");
		free_list(el, n);
		s = close + 1;
	}
}

struct view_config *view_config_new(const json_t *data)
{
	struct view_config *c = gv_xcalloc(1, sizeof(*c));
	const char *s;

	atomic_init(&c->refs, 1);
	if (!json_is_object(data))
		return c;
	if ((s = json_string_value(json_object_get(data, "resourceFilters"))))
		parse_filters(c, s);
	if ((s = json_string_value(json_object_get(data, "excludeUsernames"))))
		c->nusers = split(s, ',', &c->users);
	if ((s = json_string_value(json_object_get(data, "excludeGroups"))))
		c->ngroups = split(s, ',', &c->groups);
	return c;
}

struct view_config *view_config_ref(struct view_config *c)
{
	if (c)
		atomic_fetch_add(&c->refs, 1);
	return c;
}

void view_config_unref(struct view_config *c)
{
	if (!c || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	for (size_t i = 0; i < c->nfilters; i++) {
		struct filter *f = &c->filters[i];
		free(f->group);
		free(f->version);
		free(f->kind);
		free(f->sub);
		free(f->ns);
		free(f->name);
	}
	free(c->filters);
	free_list(c->users, c->nusers);
	free_list(c->groups, c->ngroups);
	free(c);
}

bool view_config_filtered(const struct view_config *c, const char *group, const char *version,
			  const char *kind, const char *subresource, const char *namespace,
			  const char *name)
{
	bool ns_object;

	if (!c)
		return false;
	group = group ? group : "";
	kind = kind ? kind : "";
	subresource = subresource ? subresource : "";
	ns_object = !*group && !strcmp(kind, "Namespace");
	for (size_t i = 0; i < c->nfilters; i++) {
		const struct filter *f = &c->filters[i];
		if (wild(f->group, group) && wild(f->version, version) && wild(f->kind, kind) &&
		    wild(f->sub, subresource) && wild(f->ns, namespace) && wild(f->name, name))
			return true;
		/* [Namespace,kube-system,*] and [*,kube-system,*] also filter the Namespace itself.
		 */
		if (ns_object && !*subresource && wild(f->kind, "Namespace") && wild(f->ns, name))
			return true;
	}
	return false;
}

bool view_config_user_excluded(const struct view_config *c, const json_t *user_info)
{
	const char *user;
	const json_t *groups, *g;
	size_t i;

	if (!c || !json_is_object(user_info))
		return false;
	user = json_string_value(json_object_get(user_info, "username"));
	for (i = 0; user && i < c->nusers; i++)
		if (wild(c->users[i], user))
			return true;
	groups = json_object_get(user_info, "groups");
	if (!c->ngroups || !json_is_array(groups))
		return false;
	json_array_foreach(groups, i, g)
	{
		const char *gs = json_string_value(g);
		for (size_t k = 0; gs && k < c->ngroups; k++)
			if (wild(c->groups[k], gs))
				return true;
	}
	return false;
}

/* ---- state ---- */

struct view_state {
	atomic_int refs;
	struct engine_policyset *set; /* owned reference */
	json_t *namespaces;	      /* owned reference, or NULL */
	struct view_config *config;   /* owned reference */
	struct view_vpolset *vpols;   /* owned reference, or NULL */
};

struct view_state *view_state_new(struct engine_policyset *set, json_t *namespaces,
				  struct view_config *config)
{
	struct view_state *s = gv_xcalloc(1, sizeof(*s));

	atomic_init(&s->refs, 1);
	s->set = set ? engine_policyset_ref(set) : engine_policyset_new(NULL, 0, NULL, 0);
	s->namespaces = json_is_object(namespaces) ? json_incref(namespaces) : NULL;
	s->config = config ? view_config_ref(config) : view_config_new(NULL);
	return s;
}

struct view_state *view_state_ref(struct view_state *s)
{
	if (s)
		atomic_fetch_add(&s->refs, 1);
	return s;
}

void view_state_unref(struct view_state *s)
{
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	engine_policyset_unref(s->set);
	json_decref(s->namespaces);
	view_config_unref(s->config);
	view_vpolset_unref(s->vpols);
	free(s);
}

void view_state_set_vpols(struct view_state *st, struct view_vpolset *v)
{
	struct view_vpolset *old = st->vpols;

	st->vpols = view_vpolset_ref(v);
	view_vpolset_unref(old);
}

struct view_vpolset *view_state_vpols(const struct view_state *s)
{
	return s ? s->vpols : NULL;
}

struct engine_policyset *view_state_policyset(const struct view_state *s)
{
	return s->set;
}

const json_t *view_state_namespace_labels(const struct view_state *s, const char *ns)
{
	const json_t *labels;

	if (!s->namespaces || !ns || !*ns)
		return NULL;
	labels = json_object_get(s->namespaces, ns);
	return json_is_object(labels) ? labels : NULL;
}

const struct view_config *view_state_config(const struct view_state *s)
{
	return s->config;
}

const json_t *view_state_namespaces(const struct view_state *s)
{
	return s->namespaces;
}
