/*
 * load.h - loading helpers shared by `gavel apply` and `gavel test`: path
 * expansion, policy and PolicyException documents, resource manifests.
 *
 * Resources are prepared the way the Kyverno CLI prepares them before
 * evaluation (../shared/conformance/TEST-FORMAT.md section 5.1 step 2):
 * namespaced kinds without metadata.namespace get "default" (kinds this
 * table does not know, e.g. custom resources, count as namespaced),
 * duplicates by group/kind/namespace/name keep the first, and every integer
 * becomes a real number.
 */
#ifndef GV_CMD_LOAD_H
#define GV_CMD_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

#include "common/gv.h"
#include "common/yaml.h"
#include "engine/engine.h"
#include "engine/vpolicy.h"

/* A list of file names (owned strings). */
struct load_paths {
	char **v;
	size_t n;
};

/*
 * Appends to out the files named by path: the file itself, every *.yaml,
 * *.yml and *.json file below a directory (recursive, sorted by name;
 * hidden files and directories such as .git or test folders are skipped,
 * symbolic links to directories not followed), or "-" for stdin. A name
 * already in out is not added again. Returns GV_ENOENT/GV_EIO with err
 * set when path cannot be read.
 */
enum gv_code load_expand(const char *path, struct load_paths *out, struct gv_err *err);

/*
 * Appends to out every file named `basename` below dir (recursive, sorted,
 * hidden directories included, symbolic links to directories not
 * followed). When dir is a file it is added as it is, whatever its name.
 */
enum gv_code load_find(const char *dir, const char *basename, struct load_paths *out,
		       struct gv_err *err);

/* Appends a copy of name unless it is already there. */
void load_paths_add(struct load_paths *p, const char *name);
/* Whether name is in p. */
bool load_paths_has(const struct load_paths *p, const char *name);
void load_paths_release(struct load_paths *p);

/*
 * Parses a file ("-" = stdin) holding YAML documents (multi-document) or
 * JSON values (one or several in a row). Empty documents are dropped.
 * On a syntax error returns GV_EINVAL with err "file:line:col: message";
 * docs then holds the documents before the error. Release with
 * gv_docs_release().
 */
enum gv_code load_docs(const char *path, struct gv_docs *docs, struct gv_err *err);

/*
 * load_docs with source positions only for the documents and their first
 * two levels (resources need no more; see gv_yaml_load_ex).
 */
enum gv_code load_docs_shallow(const char *path, struct gv_docs *docs, struct gv_err *err);

/* One policy document. */
struct load_policy {
	char *name;		      /* owned: metadata.name ("" when absent) */
	char *namespace;	      /* owned: metadata.namespace ("" for ClusterPolicy) */
	char *kind;		      /* owned: "ClusterPolicy" or "Policy" */
	bool has_validate;	      /* some spec.rules[] has a validate block */
	struct engine_policy *policy; /* owned reference; NULL when the policy is invalid */
	char *error;		      /* owned: "file:line:col: /pointer: message" when invalid */
	/*
	 * owned: why gavel does not evaluate this policy (the other
	 * policies.kyverno.io kinds, MutatingAdmissionPolicy, a
	 * ValidatingPolicy calling the Kyverno CEL libraries), or NULL;
	 * policy and error are then NULL.
	 */
	char *unsupported;
	/* owned: a compiled CEL policy (engine/vpolicy.h), or NULL; policy is then NULL */
	struct vpol_policy *vpol;
	char *file; /* owned: the file it was loaded from */
};

/* Policies and PolicyExceptions loaded from any number of files. */
struct load_policies {
	struct load_policy *v; /* owned array */
	size_t n;
	json_t **exceptions; /* owned references: valid PolicyException documents */
	size_t nexceptions;
	size_t nerrors;	   /* invalid documents (policies and exceptions) seen */
	json_t **bindings; /* owned references: ValidatingAdmissionPolicyBinding documents */
	size_t nbindings;
	/* owned: CEL PolicyExceptions of exceptions files (policies files' are not used) */
	struct vpol_exception **cel_exceptions;
	size_t ncel_exceptions;
	/*
	 * Files found in a directory whose documents all lack a kind (not
	 * Kubernetes YAML): skipped without a warning each; the caller says
	 * so once. first_nonk8s (owned) names the first.
	 */
	size_t nnonk8s;
	char *first_nonk8s;
	const char *loading; /* borrowed: the file being loaded (internal) */
};

/*
 * Loads every document of file into lp. ClusterPolicy/Policy documents are
 * compiled with engine_policy_compile(); an invalid one is kept with
 * policy == NULL and its error, and reported on errs (when non-NULL) as one
 * line. PolicyException documents are compiled to check them and kept as
 * documents (see load_policyset_new); invalid ones are reported the same
 * way and dropped. Other kinds are skipped with one warning per file on
 * errs; but when require_policy is true and the file holds no ClusterPolicy,
 * Policy or PolicyException at all, the file is itself an invalid policy:
 * its first document is kept as one (policy == NULL) with the engine's
 * reason ("not a policy ...") and reported. Returns GV_OK even when some
 * documents were
 * invalid (count in lp->nerrors); a file that cannot be read or parsed
 * returns its error, also printed on errs (documents before a YAML
 * syntax error are kept).
 */
enum gv_code load_policies_file(struct load_policies *lp, const char *file, bool require_policy,
				FILE *errs, struct gv_err *err);

/*
 * Loads PolicyException documents only (test `exceptions` files, apply
 * --exception). Other kinds are skipped with a warning on errs.
 */
enum gv_code load_exceptions_file(struct load_policies *lp, const char *file, FILE *errs,
				  struct gv_err *err);

void load_policies_release(struct load_policies *lp);

/*
 * Builds a policy set holding the given policies (new references) and
 * freshly compiled copies of every exception of lp (an engine set owns its
 * exceptions, so each set gets its own). Returns a set with refcount 1.
 */
struct engine_policyset *load_policyset_new(const struct load_policies *lp,
					    struct engine_policy *const *policies, size_t n);

/* One resource. */
struct load_resource {
	json_t *obj; /* owned: prepared object (namespace defaulted, numbers real) */
	char *file;  /* owned: source file name */
	int line;    /* line where its document starts (0 = unknown) */
};

struct load_resources {
	struct load_resource *v; /* owned array */
	size_t n;
	json_t *index; /* owned: "group/kind/namespace/name" -> index in v, for de-duplication */
	bool no_dedup; /* set by the caller: keep duplicates (the caller de-duplicates) */
};

/*
 * Loads every document of file as a resource (a document of kind *List
 * with `items` contributes its items). A document that is not an object
 * with a kind is an error (GV_EINVAL); the other documents still load. A
 * duplicate of an already loaded group/kind/namespace/name is dropped with
 * a warning. Every error (read, syntax, bad document) is printed on errs
 * (when non-NULL) as one "file:line:col: message" line; err holds the
 * first.
 */
enum gv_code load_resources_file(struct load_resources *lr, const char *file, FILE *errs,
				 struct gv_err *err);

/*
 * load_resources_file on len bytes of buf: a piece of file whose first
 * line is first_line (positions in messages are the file's).
 */
enum gv_code load_resources_buf(struct load_resources *lr, const char *buf, size_t len,
				const char *file, int first_line, FILE *errs, struct gv_err *err);

void load_resources_release(struct load_resources *lr);

/* The de-duplication key of a resource: "group/kind/namespace/name" (owned). */
char *load_resource_key(const json_t *obj);

/* Whether a kind is cluster-scoped in the built-in table (Namespace, Node, ClusterRole, ...). */
bool load_kind_cluster_scoped(const char *kind);

/*
 * Prepares obj in place as described at the top (namespace default and
 * integers to reals). obj must be an object the caller owns.
 */
void load_resource_prepare(json_t *obj);

/* Replaces every integer in v (recursively) by a real; returns a new reference. */
json_t *load_to_reals(const json_t *v);

/*
 * jansson's iteration and reference counting take non-const pointers; this
 * is the one place that drops const, for values that are only read.
 */
json_t *load_unconst(const json_t *v);

/* String accessors on resources (never NULL, "" when absent; borrowed). */
const char *load_res_kind(const json_t *obj);
const char *load_res_api_version(const json_t *obj);
const char *load_res_name(const json_t *obj);
const char *load_res_namespace(const json_t *obj);

/*
 * Follows object keys (a NULL-terminated list) from v and returns the
 * string found there, or "" when a key is missing or the value is not a
 * string. Borrowed from v.
 */
const char *load_str(const json_t *v, ...);

#endif
