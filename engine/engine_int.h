/*
 * engine_int.h - internals shared by the engine's .c files. Not for use
 * outside engine/.
 */
#ifndef GV_ENGINE_INT_H
#define GV_ENGINE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/engine.h"
#include "engine/jmespath.h"
#include "engine/pattern.h"
#include "engine/podsecurity.h"

/* ---- variables (variables.c): {{ }} templates, section 6 ---- */

/*
 * A string with {{ }} variables, split once into literal and expression
 * parts. A template whose text can produce new variables after one pass
 * (nested {{ {{ }} }}) is marked dynamic and re-scanned at evaluation.
 */
struct tmpl;

/*
 * A JSON tree whose strings (leaves and map keys) may hold variables.
 * Constant subtrees are kept as they are; only variable parts are
 * evaluated.
 */
struct vtree;

/* ---- the rule step budget ---- */

/*
 * Steps one evaluation of a rule may use, all its parts together: the
 * JMESPath of its context, preconditions, exceptions, deny conditions,
 * foreach lists and elements (nested ones included), patterns and
 * messages, and the re-evaluation of an UPDATE's old object. Units are
 * JMESPath evaluation steps (jmespath.h); what is not JMESPath is charged
 * in the same units (budget_charge callers say what they charge). A rule
 * that runs it out gives `error` with RULE_BUDGET_MSG; the other rules have
 * their own budgets.
 */
#define RULE_MAX_STEPS	1000000UL
#define RULE_BUDGET_MSG "rule evaluation step budget (%lu) exceeded" /* %lu: the budget */

/*
 * Bound on the text a substitution builds (the message of a rule included):
 * object-supplied values are re-scanned (section 6.2), so without it a
 * crafted annotation can grow a message exponentially from pass to pass.
 */
#define MAX_SUBST_BYTES (256 * 1024)

/* JMESPath's default step budget (jp_options.max_steps and jp_budget.max 0). */
#define JP_STEPS_DEFAULT 1000000UL

/* The size of b. */
static inline unsigned long budget_max(const struct jp_budget *b)
{
	return b->max ? b->max : JP_STEPS_DEFAULT;
}

/* Steps b has left. */
static inline unsigned long budget_left(const struct jp_budget *b)
{
	return b->used < budget_max(b) ? budget_max(b) - b->used : 0;
}

/*
 * Charges n steps to b (NULL: nothing to charge). False, with b spent
 * (used == max), when fewer than n steps are left.
 */
static inline bool budget_charge(struct jp_budget *b, unsigned long n)
{
	if (!b)
		return true;
	if (n > budget_left(b)) {
		b->used = budget_max(b);
		return false;
	}
	b->used += n;
	return true;
}

/*
 * True once b ran out: some evaluation charged to it was cut short (a
 * budget that runs out is left full, so one that is used exactly to its
 * last step counts as spent too).
 */
static inline bool budget_spent(const struct jp_budget *b)
{
	return b && b->used >= budget_max(b);
}

struct deferred;

/* The evaluation context of one rule: the JSON document variables read. */
struct var_ctx {
	const json_t *root;	   /* borrowed: {"request": {...}, "images": ..., "element": ...} */
	bool delete_op;		   /* DELETE: request.object is read as request.oldObject */
	struct jp_budget *budget;  /* borrowed: the rule's step budget, or NULL (none) */
	bool element;		   /* in a foreach element: results are charged (var_eval) */
	const struct jp_env *env;  /* borrowed: the input's clock and random source, or NULL */
	struct deferred *deferred; /* borrowed: context entries not loaded yet, or NULL */
};

/*
 * Loads, in their order, the context entries of d not loaded yet whose name
 * query references (kyverno-semantics.md section 1.5, deferred loading), as
 * Kyverno matches them: the name not preceded by a letter, digit or '.', and
 * ending at a word boundary ("x" in "x.y", "f(x)", not in "y.x" or "xy").
 * An entry is tried once per scope; loading one may load those it names.
 * A failure is the query's: GV_E* with err "failed to load context: ...".
 * d NULL: nothing to load. Defined in evaluate.c.
 */
enum gv_code deferred_load(struct deferred *d, const char *query, struct gv_err *err);

/*
 * jp_eval_budget charging ctx->budget (the rule's, may be NULL) and local
 * (one substitution's, may be NULL) at once. In a foreach element
 * (ctx->element) the rule is also charged a step per 16 values of a list or
 * map returned: JMESPath walks each result (JP_MAX_RESULT_VALUES) without
 * charging the walk, and there the number of evaluations follows the
 * object's lists. When the rule's budget is the one that runs out the error
 * is RULE_BUDGET_MSG.
 */
json_t *var_eval(const struct jp_expr *x, const json_t *data, const struct var_ctx *ctx,
		 struct jp_budget *local, struct jp_error *e);

/* True when s holds at least one unescaped {{ }} variable. */
bool tmpl_has_vars(const char *s);

/*
 * Compiles a tree: returns NULL and sets err (pointer relative to the tree)
 * when an expression does not parse. A tree without variables compiles to
 * a constant.
 */
struct vtree *vtree_compile(const json_t *tree, struct gv_err *err);
void vtree_free(struct vtree *t);
/* True when the tree holds no variables (vtree_const() gives the value). */
bool vtree_is_const(const struct vtree *t);
const json_t *vtree_const(const struct vtree *t);

/*
 * Substitutes variables (section 6.2): a string that is exactly one variable
 * becomes the typed result; embedded ones become text; \{{ becomes {{.
 * Returns GV_OK with *out a new reference, or GV_EEVAL with err->msg like
 * `failed to resolve <expr> at path <pointer>: JMESPath query failed: <e>`.
 * The variables' steps and a step per 16 bytes of text built are charged
 * to ctx->budget; GV_ELIMIT when a bound trips (text longer than
 * MAX_SUBST_BYTES, budgets).
 */
enum gv_code vtree_eval(const struct vtree *t, const struct var_ctx *ctx, json_t **out,
			struct gv_err *err);

/* Substitutes variables in one string (same rules); *out new reference. */
enum gv_code tmpl_eval_string(const char *s, const struct var_ctx *ctx, json_t **out,
			      struct gv_err *err);

/*
 * Evaluates a bare JMESPath expression (foreach list, context jmesPath),
 * after substituting any {{ }} inside it. *out is a new reference.
 */
enum gv_code var_query(const char *expr, const struct var_ctx *ctx, json_t **out,
		       struct jp_error *jerr, struct gv_err *err);

/*
 * Calls fn for each variable found in tree (strings and keys) with the
 * expression text and the variable as written ("{{ expr }}"). Used at compile time for
 * background-safety and allow-list checks.
 */
void vars_each(const json_t *tree, void (*fn)(const char *expr, const char *raw, void *ud),
	       void *ud);

/* Sets a dotted variable ("request.operation", "a.b") in obj (owned, mutable). */
void var_set_path(json_t *obj, const char *dotted, json_t *value);

/* ---- match / exclude (match.c), section 2 ---- */

struct kind_sel {
	char *group, *version, *kind, *sub; /* owned; "*" for any */
};

enum sel_op { SEL_IN, SEL_NOTIN, SEL_EXISTS, SEL_DOESNOTEXIST };

struct sel_req {
	char *key;
	enum sel_op op;
	char **values;
	size_t nvalues;
};

struct selector {
	json_t *match_labels; /* owned object of strings (may contain wildcards) */
	struct sel_req *reqs;
	size_t nreqs;
};

enum { OP_CREATE = 1, OP_UPDATE = 2, OP_DELETE = 4, OP_CONNECT = 8 };

struct match_filter {
	struct kind_sel *kinds;
	size_t nkinds;
	char **names;
	size_t nnames;
	char **namespaces;
	size_t nnamespaces;
	json_t *annotations; /* owned object or NULL */
	struct selector *selector;
	struct selector *ns_selector;
	unsigned ops; /* OP_* bits; 0 = any */
	char **roles;
	size_t nroles;
	char **cluster_roles;
	size_t ncluster_roles;
	json_t *subjects;   /* owned array or NULL */
	bool has_resources; /* some resource field is set */
	bool has_userinfo;  /* subjects/roles/clusterRoles set */
};

enum match_mode { MATCH_NONE, MATCH_ANY, MATCH_ALL };

struct match_block {
	enum match_mode mode;
	struct match_filter *f;
	size_t n;
};

/* What match/exclude look at for one request. */
struct match_request {
	const json_t *object; /* the object matched (new, or old for DELETE) */
	const char *group, *version, *kind, *sub;
	const char *name;      /* metadata.name or generateName */
	const char *namespace; /* object namespace ("" cluster-scoped) */
	const json_t *labels, *annotations;
	const json_t *ns_labels;
	unsigned op;
	const json_t *user_info; /* NULL: user-info constraints dropped in match */
	const json_t *roles, *cluster_roles;
};

enum gv_code match_block_compile(const json_t *m, struct match_block *b, bool is_exclude,
				 struct gv_buf *ptr, struct gv_err *err);
void match_block_release(struct match_block *b);
/* match: does the block select the request; exclude: does it exclude it. */
bool match_block_eval(const struct match_block *b, const struct match_request *r, bool is_exclude);
/* True when any filter of the block has kind `kind` (exact string). */
bool match_block_has_kind(const struct match_block *b, const char *kind);
/* Parses "group/version/Kind/sub" style kind selectors (section 2.3). */
void kind_sel_parse(const char *s, struct kind_sel *k);
void kind_sel_release(struct kind_sel *k);
bool selector_matches(const struct selector *s, const json_t *labels);
enum gv_code selector_compile(const json_t *j, struct selector **out, struct gv_buf *ptr,
			      struct gv_err *err);
void selector_free(struct selector *s);
unsigned match_op_bit(const char *op);

/* ---- conditions (conditions.c), section 5 ---- */

enum cond_op {
	COND_EQUALS,
	COND_NOT_EQUALS,
	COND_IN,
	COND_NOT_IN,
	COND_ANY_IN,
	COND_ALL_IN,
	COND_ANY_NOT_IN,
	COND_ALL_NOT_IN,
	COND_GT,
	COND_GE,
	COND_LT,
	COND_LE,
	COND_DUR_GT,
	COND_DUR_GE,
	COND_DUR_LT,
	COND_DUR_LE,
};

struct condition {
	struct vtree *key, *value;
	enum cond_op op;
	char *message; /* owned or NULL */
};

struct conditions {
	bool present;	  /* conditions were given at all */
	bool any_present; /* an `any` list was given (an empty one is false) */
	struct condition *any;
	size_t nany;
	struct condition *all;
	size_t nall;
};

/* Compiles {any: [...], all: [...]} or a bare list (legacy = all). */
enum gv_code conditions_compile(const json_t *j, struct conditions *c, struct gv_buf *ptr,
				struct gv_err *err);
void conditions_release(struct conditions *c);

/*
 * Evaluates a block (section 5.1). Sets *result, and appends to msgs the
 * messages of the conditions that decided it ("; "-joined by the caller).
 * Returns GV_EEVAL with err set when a key/value fails to substitute.
 */
enum gv_code conditions_eval(const struct conditions *c, const struct var_ctx *ctx, bool *result,
			     json_t *msgs, struct gv_err *err);

/*
 * One operator on prepared (substituted) key and value (section 5.3), its
 * work charged to b (NULL: a budget of RULE_MAX_STEPS for this call): a
 * step per pair of elements compared or value walked, and per 16 bytes of
 * text formatted, parsed or compared (wildcards: per 16 code points
 * compared). Sets *result; GV_ELIMIT with RULE_BUDGET_MSG when b runs out.
 */
enum gv_code condition_op_eval(enum cond_op op, const json_t *key, const json_t *value,
			       struct jp_budget *b, bool *result, struct gv_err *err);

/* ---- patterns with the rule budget (pattern.c) ---- */

/*
 * pattern_match charging b (NULL: a budget of RULE_MAX_STEPS for this
 * call) a step per resource value visited, per 16 code points compared by
 * wildcards and per 16 bytes of text parsed as a duration or quantity. When
 * b runs out the status is PATTERN_ERROR, path "" and msg RULE_BUDGET_MSG.
 * The texts of a failed match are built by a second run that is not
 * charged (it takes the same path as the first).
 */
void pattern_match_budget(const struct pattern *p, const json_t *resource, struct jp_budget *b,
			  struct pattern_outcome *out);

/*
 * pattern_any with pattern_match_budget: a pattern that runs b out ends the
 * loop with status PATTERN_ERROR and pattern_message's text for it.
 */
char *pattern_any_budget(struct pattern *const *pats, size_t n, const json_t *resource,
			 const char *rule, const char *message, struct jp_budget *b,
			 enum pattern_status *status);

/* ---- rules and policies (policy.c) ---- */

/*
 * BODY_NONE is never compiled: a body gavel does not evaluate is
 * BODY_UNSUPPORTED, which gives an explicit error result (evaluate.c).
 */
enum body_kind {
	BODY_NONE,
	BODY_PATTERN,
	BODY_ANY_PATTERN,
	BODY_DENY,
	BODY_FOREACH,
	BODY_POD_SECURITY, /* validate.podSecurity (pod-security-semantics.md) */
	BODY_CEL,	   /* validate.cel (cel-semantics.md section 4; engine/vpolicy.h) */
	BODY_UNSUPPORTED
};

/* The type of a context entry (kyverno-semantics.md section 1.5). */
enum context_kind {
	CONTEXT_VARIABLE,
	CONTEXT_CONFIGMAP,
	CONTEXT_APICALL,
	CONTEXT_IMAGEREGISTRY,
	CONTEXT_GLOBALREFERENCE
};

/* The field naming each context_kind, indexed by it ("variable", "configMap", ...). */
extern const char *const context_kind_names[CONTEXT_GLOBALREFERENCE + 1];

struct context_entry {
	char *name;
	json_t *raw; /* owned: the whole entry */
	enum context_kind kind;
	bool is_variable;    /* variable entry (evaluated); other kinds go to hooks */
	struct vtree *value; /* variable.value or NULL */
	char *jmespath;	     /* variable.jmesPath or NULL (may hold {{ }}) */
	struct vtree *def;   /* variable.default or NULL */
	json_t *def_raw;     /* variable.default as written */
};

struct foreach;
struct vpol_cel;

/* A validate body: pattern | anyPattern | deny | foreach | podSecurity. */
struct body {
	enum body_kind kind;
	json_t *pattern_raw;	 /* pattern or anyPattern as written (owned) */
	struct pattern *pattern; /* compiled when constant */
	struct pattern **any;	 /* compiled anyPattern when constant */
	size_t nany;
	struct vtree *pattern_vars; /* when the pattern has variables */
	struct conditions deny;
	struct foreach *foreach;
	size_t nforeach;
	struct pss_spec pss;	 /* BODY_POD_SECURITY */
	const char *unsupported; /* BODY_UNSUPPORTED: what, e.g. "validate.cel" (static) */
	struct vpol_cel *cel;	 /* BODY_CEL: compiled (with the rule's celPreconditions) */
	char *cel_error;	 /* BODY_CEL: why it does not compile (a fail result), or NULL */
};

struct foreach {
	char *list;		/* JMESPath (may contain {{ }}) */
	struct jp_expr *list_x; /* compiled list when it holds no {{ }} */
	struct context_entry *ctx;
	size_t nctx;
	struct conditions pre;
	int element_scope; /* -1 unset, 0 false, 1 true */
	struct body body;
};

struct override {
	enum engine_action action;
	char **namespaces;
	size_t nnamespaces;
	struct selector *ns_selector;
};

struct rule {
	char *name;
	struct match_block match, exclude;
	struct context_entry *ctx;
	size_t nctx;
	struct conditions pre;
	struct body body;
	struct vtree *message; /* validate.message or NULL */
	char *message_raw;
	struct vtree *props; /* reportProperties (an object of strings) or NULL */
	bool has_action;
	enum engine_action action;
	struct override *overrides;
	size_t noverrides;
	bool allow_existing;
	bool background_safe;
	bool has_validate;
	/*
	 * What gavel does not evaluate in this rule, or NULL: "mutate",
	 * "generate", "verifyImages" (has_validate false: no result, a
	 * warning where the policy is loaded), "celPreconditions",
	 * "imageExtractors" (an error result), or the body's unsupported kind.
	 * Static strings.
	 */
	const char *unsupported;
};

struct engine_policy {
	atomic_int refs;
	json_t *doc; /* owned */
	char *name, *namespace, *kind;
	bool background, admission, emit_warning, apply_one;
	bool uses_images; /* some variable reads `images` (section 6.5) */
	enum engine_action action;
	enum engine_failure_policy failure_policy;
	struct override *overrides;
	size_t noverrides;
	struct rule *rules;
	size_t nrules;
};

struct engine_exception {
	char *name, *namespace;
	struct {
		char *policy;
		char **rules;
		size_t nrules;
	} * entries;
	size_t nentries;
	struct match_block match;
	struct conditions conditions;
	/* spec.podSecurity (pod-security-semantics.md section 6); npss 0 when none */
	struct pss_exclusion *pss;
	size_t npss;
};

struct engine_policyset {
	atomic_int refs;
	struct engine_policy **v;
	size_t n;
	struct engine_exception **exc;
	size_t nexc;
	bool uses_images; /* some policy reads `images`: build it per evaluation */
};

/* Generates autogen rules (section 9): returns a new rules array (new reference). */
json_t *autogen_rules(const json_t *policy_doc);

/* Compiles one rule JSON into r (ptr = JSON pointer of the rule). */
enum gv_code rule_compile(const json_t *j, struct rule *r, bool background, struct gv_buf *ptr,
			  struct gv_err *err);
void rule_release(struct rule *r);
enum gv_code context_compile(const json_t *j, struct context_entry **out, size_t *n,
			     struct gv_buf *ptr, struct gv_err *err);
void context_release(struct context_entry *c, size_t n);
enum gv_code body_compile(const json_t *validate, struct body *b, struct gv_buf *ptr,
			  struct gv_err *err);
void body_release(struct body *b);

/* Effective failure action of a rule for a namespace (section 1.4). */
enum engine_action rule_effective_action(const struct engine_policy *p, const struct rule *r,
					 const char *ns, const json_t *ns_labels);

/* ---- images (images.c) ---- */

/* Builds the `images` variable of an object (section 6.5); new reference or NULL. */
json_t *images_extract(const json_t *object);

/* Parses one image reference into {registry, path, name, tag, digest, reference, referenceWithTag}.
 */
json_t *image_parse(const char *image);

/* image_parse(image)'s "reference" alone (new string). */
char *image_reference(const char *image);

#endif
