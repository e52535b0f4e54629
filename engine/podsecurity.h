/*
 * podsecurity.h - Kyverno's `validate.podSecurity` subrule: the Pod Security
 * Standards checks as Kyverno runs them (pod-security-semantics.md).
 *
 * A table of the 18 checks of the pod-security-admission code Kyverno links
 * (id, controlName, level, versions, ForbiddenReason, check function), the
 * compiled subrule (level, version, exclusions), exclusions of
 * PolicyException.spec.podSecurity, and one pure evaluation function that
 * extracts the pod of a Pod or pod controller, runs the checks, applies
 * exclusions and builds Kyverno's result message.
 *
 * Where gavel knowingly differs from Kyverno:
 * - Failing checks are always reported in table order; Kyverno rebuilds
 *   them from a map after an exclusion (unspecified order). AppArmor
 *   annotations are visited in sorted key order (Go: map order).
 * - `version` must be `latest` or v1.19..v1.32 (the CRD enum) when the
 *   policy is compiled; the Kyverno CLI accepts any v1.x offline.
 * - Decoding errors are found for the fields the checks read (pod spec,
 *   containers, security contexts, volumes' hostPath, annotations), not for
 *   every field of the object as Go's json.Unmarshal would.
 * - Images in controlsJSON (section 4.2) are found by Kyverno's regex in
 *   the part of each check's ForbiddenDetail that names containers, which
 *   gavel rebuilds from the check's field errors; checks whose detail names
 *   no containers (host namespaces, hostPath, volumes, sysctls, probe
 *   hosts, seccomp annotations before v1.19) give null, even for a volume
 *   name that would hold both "container" and "must".
 *
 * Private to engine/ (included by engine_int.h).
 */
#ifndef GV_ENGINE_PODSECURITY_H
#define GV_ENGINE_PODSECURITY_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/engine.h"

struct jp_budget;

/* The `version` of a subrule given as `latest` or absent (newer than every version). */
#define PSS_LATEST 0xffffffffu

/* Lowest and highest v1.x accepted in `version` (the CRD enum, section 1). */
#define PSS_MIN_MINOR 19u
#define PSS_MAX_MINOR 32u

/* Number of checks in the table (section 3.1). */
#define PSS_NCHECKS 18

/*
 * One `exclude` entry of a subrule, or one PolicyException.spec.podSecurity
 * entry (section 5). An entry with images is container-level (its probe pod
 * holds the containers whose image matches), one without is pod-level.
 */
struct pss_exclusion {
	int control;   /* index into the control table (pss_control_name) */
	char **images; /* owned, wildcards; NULL when none */
	size_t nimages;
	char *restricted_field; /* owned, or NULL */
	char **values;		/* owned, wildcards; NULL when none */
	size_t nvalues;
};

/* A compiled `validate.podSecurity`. */
struct pss_spec {
	char *level;	/* owned, as written: "privileged", "baseline" or "restricted" */
	char *version;	/* owned, as written; "" when absent */
	bool baseline;	/* level == "baseline": only the baseline checks run */
	unsigned minor; /* v1.<minor>, or PSS_LATEST */
	struct pss_exclusion *exclude; /* owned */
	size_t nexclude;
};

/*
 * The exclusions of the PolicyExceptions matched for a rule, applied after
 * the rule's own (section 2 step 6). Borrowed.
 */
struct pss_exclusion_list {
	const struct pss_exclusion *v;
	size_t n;
};

/*
 * Compiles `validate.podSecurity` (ps, borrowed) into s. `ptr` is the JSON
 * pointer of the podSecurity object (restored on return). Errors (GV_EINVAL,
 * err->pointer set): level not privileged/baseline/restricted; version not
 * `latest` or v1.19..v1.32; the exclusion checks of pss_exclusions_compile.
 */
enum gv_code pss_spec_compile(const json_t *ps, struct pss_spec *s, struct gv_buf *ptr,
			      struct gv_err *err);
void pss_spec_release(struct pss_spec *s);

/*
 * Compiles a list of exclusion entries (arr, borrowed; `ptr` its pointer)
 * with Kyverno's policy admission checks (section 1.1): controlName one of
 * the 15 names; images required for container-level controls and forbidden
 * for pod-level ones; restrictedField and values together; with
 * level_baseline, the restricted-only controls (`Volume Types`, `Privilege
 * Escalation`, `Running as Non-root`, `Running as Non-root user`) are
 * rejected. NULL or an empty list gives *n == 0.
 */
enum gv_code pss_exclusions_compile(const json_t *arr, bool level_baseline,
				    struct pss_exclusion **out, size_t *n, struct gv_buf *ptr,
				    struct gv_err *err);
void pss_exclusions_free(struct pss_exclusion *x, size_t n);

/* What pss_evaluate decided (section 2). */
enum pss_outcome {
	PSS_PASS,     /* no failing check after the rule's exclusions */
	PSS_FAIL,     /* message names the failing checks */
	PSS_EXCEPTED, /* the exceptions' exclusions removed every failing check */
	PSS_ERROR,    /* pod extraction or decoding failed, or the budget ran out */
};

/*
 * What pss_evaluate() found on one object, kept between the podSecurity
 * rules of one evaluation (engine_evaluate) so that the pod is decoded once
 * and each level's checks run once per object and version: a cache, never a
 * change of outcome (exclusions work on a copy; the step budget is charged
 * as if the checks ran again). Zero it before first use; it is about
 * `object` (borrowed; another object empties it); pss_memo_release() frees
 * what it holds.
 */
struct pss_checks;
struct pss_memo {
	const json_t *object;
	bool decoded; /* object's pod decoded without error */
	struct pss_memo_entry {
		bool baseline;	      /* the baseline checks only */
		unsigned minor;	      /* the version they ran at */
		struct pss_checks *d; /* owned: every check's outcome (table order) */
	} v[4];
	size_t n;
};

/*
 * Evaluates rule `rule` (name for messages) with spec s against `object` (a
 * Pod, Deployment, DaemonSet, StatefulSet, ReplicaSet, Job,
 * ReplicationController or CronJob; borrowed), applying s's exclusions and
 * then those of exc (nexc lists, may be 0). The checks and the comparisons of
 * exclusions are charged to budget (may be NULL). Sets *message (new
 * string): `Validation rule '<rule>' passed.`, the fail message of section
 * 4.1 (field paths rewritten for controllers), or the error text; for
 * PSS_EXCEPTED the caller builds the message (it names the exceptions).
 * Failing checks are reported in table order (Kyverno's order after an
 * exclusion is unspecified).
 *
 * properties (may be NULL): for PSS_FAIL, a new object of strings, the
 * report properties of section 4.2 (Kyverno's addPodSecurityProperties):
 * `standard` (level as written), `version` (as written, "" when absent),
 * `controls` (failing check IDs joined by ","), `controlsJSON` (compact
 * `[{"ID":..,"Name":..,"Images":[..]|null}]`, strings escaped as Go's
 * encoding/json). Images list, for the containers the check's
 * ForbiddenDetail names before any exclusion, their normalised image
 * reference (image_parse "reference"; the name when no container of that
 * name has an image). NULL for every other outcome.
 *
 * memo (may be NULL): what earlier rules of the same evaluation found on
 * object (struct pss_memo); read and filled.
 */
enum pss_outcome pss_evaluate(const struct pss_spec *s, const char *rule, const json_t *object,
			      const struct pss_exclusion_list *exc, size_t nexc,
			      struct jp_budget *budget, struct pss_memo *memo, char **message,
			      json_t **properties);

/* Frees what memo holds and empties it (it can be used again). */
void pss_memo_release(struct pss_memo *memo);

/* Table accessors (for tests and documentation). */
/* Check id of check i (0 <= i < PSS_NCHECKS), in Kyverno's order. */
const char *pss_check_id(int i);
/* controlName of check i, or NULL (hostProbesAndHostLifecycle). */
const char *pss_check_control(int i);
/* Number of controls (15) and the name of control i. */
size_t pss_control_count(void);
const char *pss_control_name(size_t i);

#endif
