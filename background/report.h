/*
 * report.h - PolicyReport / ClusterPolicyReport (wgpolicyk8s.io/v1alpha2)
 * building, merging and writing for the background reconciler.
 * DESIGN.md "Background: Reports", k8s-wire.md section 3 (shapes) and 4.5,
 * 4.6 (writes, 409), kyverno-semantics.md sections 7.3 and 8.6 (entries).
 *
 * Model. A report_set holds every result gavel reports, grouped by report
 * ("group": one namespace's report, or one policy's report in a namespace
 * with the split layout), and inside a group keyed by (resource uid,
 * policy, rule): one result per key. Changes (a scan of one object for one
 * policy, an admission review, deleted objects, policies and rules) are
 * applied to the model at once; report_flush() writes the groups that
 * changed. A report_set is not thread-safe: one thread (the reconciler's
 * report writer) owns it.
 *
 * Layout and names (REPORT_LABEL_* below label every object):
 *
 *   namespace layout   PolicyReport "polr-ns-<namespace>" in <namespace>,
 *                      ClusterPolicyReport "clusterpolicyreport" for
 *                      cluster-scoped objects
 *   split layout       PolicyReport "polr-ns-<namespace>-<policy name>",
 *                      ClusterPolicyReport "clusterpolicyreport-<policy name>"
 *                      (the name of a namespaced Policy, without its namespace)
 *   resource layout    one report per resource, as Kyverno 1.11+ writes them
 *                      (k8s-wire.md 3.3): named by the resource's uid, in
 *                      its namespace (a ClusterPolicyReport for a
 *                      cluster-scoped resource), with `scope` and
 *                      metadata.ownerReferences naming the resource, and
 *                      results without `resources` (the scope says it)
 *
 * That name is the group's *base name*. A base name longer than
 * REPORT_MAX_BASE (248) characters is cut to 231 characters (trailing '-'
 * and '.' dropped) and suffixed with "-" and 12 hex digits of the FNV-1a
 * 64-bit hash of the whole name, so every object name stays a DNS-1123
 * subdomain of at most 253 characters.
 *
 * Chunks. A group whose results do not fit in one object (more than
 * chunk_results results, default REPORT_CHUNK_RESULTS = 1000, or more than
 * chunk_bytes bytes of serialized results, default 512 KiB, a third of
 * etcd's 1.5 MiB request limit) continues in further objects. Chunk 0 is
 * named <base>, chunk i >= 1 <base>-<i>; when <base> itself ends in
 * "-<digits>" chunk 0 is <base>-0 instead, so that every object name maps
 * back to exactly one (base, chunk) pair (report_parse_name()), whatever
 * the policy and namespace names are. A base shaped as a uid
 * (8-4-4-4-12 hex digits, the resource layout) is chunk 0 itself, even
 * when it ends in "-<digits>": no other layout makes such a base. The chunks of a group carry the
 * label REPORT_LABEL_GROUP = report_group_label(base) and
 * REPORT_LABEL_CHUNK = "<i>"; each has the summary of its own results.
 * Results are sorted by resource (kind, namespace, name, uid) then policy
 * and rule, and cut into chunks in that order. A group with no results
 * has no objects (they are deleted). At most REPORT_MAX_CHUNKS chunks.
 *
 * Entries (kyverno-semantics.md 8.6): source "gavel" (report_options.source); policy = name of a
 * ClusterPolicy or namespace/name of a Policy; rule; result
 * pass|fail|warn|error|skip, a fail becoming warn when the policy has
 * annotation policies.kyverno.io/scored: "false" (then scored: false);
 * severity (policies.kyverno.io/severity when it is exactly one of
 * critical|high|medium|low|info, else left out: engine_report_severity, as
 * Kyverno, and the CRD's enum) and category (policies.kyverno.io/category, at most
 * REPORT_MAX_CATEGORY bytes); message (at most REPORT_MAX_MESSAGE bytes,
 * cut at a UTF-8 boundary and ended with "..."; the property
 * "<result>Message" (passMessage, failMessage, ...) or else "message" of
 * the entry's properties (reportProperties, a CEL policy's audit
 * annotations) replaces the engine's, as kyverno-semantics.md 8.6 and
 * cel-semantics.md 7 say); timestamp {seconds,
 * nanos}; resources [{apiVersion, kind, namespace, name, uid}];
 * properties {process: "background scan" | "admission review"} and the
 * entry's own (report_entry.properties: e.g. "exceptions").
 * summary {pass, fail, warn, error, skip} always counts the object's results.
 *
 * Timestamps: when a change produces a result equal to the one already
 * recorded for its key except for the timestamp, the old result (and its
 * timestamp) is kept: the timestamp says since when the result holds. So
 * a rescan that finds nothing new changes nothing and writes nothing.
 *
 * Concurrency with other writers (a second replica, kubectl): writes are
 * PUT with resourceVersion or POST; on 409 (or 404 on PUT) the group is
 * read again and this set's net changes since the group was last in sync
 * (results added or changed, keys removed) are applied again on top of what
 * was read, so results written by others survive and none is duplicated
 * (report_merge()). Each object is written whole, so it is always either
 * the old or the new version; the chunks of one group are written one by
 * one, in an order where a chunk is overwritten only after the chunks that
 * take over its results are written: a reader may briefly see a result in
 * two chunks, never in none, and a writer killed between two writes leaves
 * only duplicates, which the next load and flush remove.
 * Metadata gavel does not write (annotations, other labels, owner
 * references) is not kept by an update.
 */
#ifndef GV_BACKGROUND_REPORT_H
#define GV_BACKGROUND_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "common/gv.h"
#include "engine/engine.h"
#include "kube/kube.h"

#define REPORT_API_VERSION     "wgpolicyk8s.io/v1alpha2" /* the default API (report_use_api) */
#define REPORT_API_OPENREPORTS "openreports.io/v1alpha1"
#define REPORT_SOURCE	       "gavel"
#define REPORT_CHUNK_RESULTS   1000
#define REPORT_CHUNK_BYTES     (512u * 1024u)
#define REPORT_MAX_CHUNK_BYTES (1024u * 1024u)
#define REPORT_MAX_CHUNKS      1000
#define REPORT_MAX_MESSAGE     1024
#define REPORT_MAX_CATEGORY    256
#define REPORT_MAX_BASE	       248
#define REPORT_MAX_ATTEMPTS    5 /* writes of one group per report_flush (409 -> re-read -> retry) */

#define REPORT_LABEL_MANAGED_BY "app.kubernetes.io/managed-by" /* = "gavel" */
#define REPORT_LABEL_GROUP	"gavel.dev/report-group"       /* = report_group_label(base) */
#define REPORT_LABEL_CHUNK	"gavel.dev/report-chunk"       /* = "0", "1", ... */
#define REPORT_LABEL_LAYOUT	"gavel.dev/report-layout" /* = "namespace" | "split" | "resource" */
/*
 * The label selector of gavel's reports: every object gavel writes carries
 * REPORT_LABEL_LAYOUT (app.kubernetes.io/managed-by says "gavel", or
 * "kyverno" in the --report-source kyverno mode, where Kyverno's own
 * reports say the same).
 */
#define REPORT_SELECTOR REPORT_LABEL_LAYOUT

/*
 * Annotation of the objects `gavel scan` writes: the digest of the scan
 * they were last reconciled with (report_journal_digest()), so that a scan
 * that finds the same can tell from the objects' metadata alone that there
 * is nothing to write. Only the one-shot scan writes it; a write by the
 * reconciler or the admission path that changes an object drops it.
 */
#define REPORT_ANNOTATION_SCAN_DIGEST "gavel.dev/scan-digest"
/*
 * Annotation of the objects `gavel scan` writes: what the scan read (see
 * report_set_inputs()) and how many objects make up the namespace's
 * reports: "sha256:<hex>; groups=<G>; chunks=<C>; results=<R>" (G: the
 * namespace's groups with results, C: the objects of this one's group,
 * R: the results in this object).
 */
#define REPORT_ANNOTATION_SCAN_INPUTS "gavel.dev/scan-inputs"
/* The field manager of gavel's writes (its User-Agent "gavel/<version>"). */
#define REPORT_FIELD_MANAGER "gavel"

enum report_process { REPORT_BACKGROUND_SCAN, REPORT_ADMISSION_REVIEW };

/* "background scan", "admission review". */
const char *report_process_name(enum report_process p);

/* The object a result is about. Strings borrowed; namespace NULL or "" = cluster-scoped. */
struct report_resource {
	const char *api_version, *kind, *namespace, *name, *uid;
};

/*
 * Fills r from an object (borrowed pointers into obj): apiVersion, kind,
 * metadata.namespace/name/uid. Returns GV_EINVAL when the object has no
 * metadata.uid (results are keyed by it).
 */
enum gv_code report_resource_from_object(const json_t *obj, struct report_resource *r,
					 struct gv_err *err);

/* One result as a change gives it. Strings borrowed. */
struct report_entry {
	const char *policy;	   /* "name" or "namespace/name" (report_policy_ref) */
	const char *rule;	   /* required; "" only with a source (CEL policies) */
	enum engine_status result; /* as reported (report_status()) */
	const char *message;	   /* NULL = "" */
	const char *severity;	   /* NULL = none */
	const char *category;	   /* NULL = none */
	bool scored;
	int64_t seconds; /* timestamp: Unix seconds */
	int32_t nanos;	 /* and nanoseconds, 0..999999999 */
	enum report_process process;
	/*
	 * The result's `source`: NULL = REPORT_SOURCE (legacy policies);
	 * REPORT_SOURCE_VPOL / REPORT_SOURCE_VAP for CEL policies
	 * (cel-semantics.md section 7).
	 */
	const char *source;
	/*
	 * More `properties` of the result (borrowed object of strings, may be
	 * NULL): "exceptions" (names of the PolicyExceptions that made it a
	 * skip, comma-separated, as Kyverno), PSS controls, a CEL policy's
	 * audit annotations. A "process" key is ignored (the process says it).
	 */
	const json_t *properties;
};

/* Sources of CEL policies' results, as Kyverno writes them (cel-semantics.md section 7). */
#define REPORT_SOURCE_VPOL "KyvernoValidatingPolicy"
#define REPORT_SOURCE_VAP  "ValidatingAdmissionPolicy"

/* The policy field of a report entry for p: "name" or "namespace/name". Caller frees. */
char *report_policy_ref(const struct engine_policy *p);

/* Whether p carries label REPORT_LABEL_DISABLED (its results are never reported). */
bool report_policy_disabled(const struct engine_policy *p);

/* False when p has annotation policies.kyverno.io/scored: "false". */
bool report_policy_scored(const struct engine_policy *p);

/* The reported result of status s under p: fail becomes warn for an unscored policy. */
enum engine_status report_status(const struct engine_policy *p, enum engine_status s);

/* ---- names ---- */

/*
 * The base name of the group a result of `policy` (a policy ref; only the
 * part after '/' is used) about an object in namespace ns ("" or NULL =
 * cluster-scoped) belongs to. Caller frees.
 */
char *report_base_name(bool split, const char *ns, const char *policy);

/* The name of chunk i of a group (see "Chunks"). Caller frees. */
char *report_chunk_name(const char *base, size_t i);

/*
 * Inverse of report_chunk_name(): true with *base (caller frees) and
 * *index when name is a chunk name; false for names report_chunk_name()
 * never makes ("x-0" where "x" does not end in "-<digits>", "x-01").
 */
bool report_parse_name(const char *name, char **base, size_t *index);

/*
 * The REPORT_LABEL_GROUP value of a group: base itself when it has at
 * most 63 characters, else its first 50 (trailing '-'/'.' dropped), "-"
 * and 12 hex digits of its hash. Caller frees.
 */
char *report_group_label(const char *base);

/* ---- the model ---- */

/*
 * The `source` Kyverno gives results of kyverno.io policies, and the value
 * of the app.kubernetes.io/managed-by label of its reports: the
 * --report-source kyverno mode writes both as Kyverno does.
 */
#define REPORT_SOURCE_KYVERNO "kyverno"

/* Result statuses a report keeps (report_options.allowed), as bits 1u << enum engine_status. */
#define REPORT_ALLOWED_ALL 0u /* every status */

/*
 * Parses --allowed-results: a comma-separated list of pass, fail, warn,
 * error, skip (spaces around names allowed) into *bits. GV_EINVAL with
 * the unknown name, or for an empty list.
 */
enum gv_code report_allowed_parse(const char *list, unsigned *bits, struct gv_err *err);

/*
 * The policy label that keeps a policy's results out of every report
 * (Kyverno's reports.kyverno.io/disabled: present, whatever its value).
 */
#define REPORT_LABEL_DISABLED "reports.kyverno.io/disabled"

struct report_options {
	bool split;    /* one report per policy per namespace */
	bool resource; /* one report per resource (wins over split) */
	/*
	 * The `source` of results of kyverno.io policies and the
	 * app.kubernetes.io/managed-by label value: NULL = REPORT_SOURCE
	 * ("gavel"); REPORT_SOURCE_KYVERNO as Kyverno. CEL policies keep
	 * their own sources (report_entry.source).
	 */
	const char *source;
	/*
	 * The statuses reports keep (bits 1u << enum engine_status,
	 * REPORT_ALLOWED_ALL = all): a result of another status is left
	 * out, so it also takes the place of the result it replaces (a fail
	 * that turns pass is removed when pass is not allowed).
	 */
	unsigned allowed;
	size_t chunk_results; /* results per object; 0 = REPORT_CHUNK_RESULTS */
	size_t chunk_bytes;   /* serialized results per object; 0 = REPORT_CHUNK_BYTES,
				 at most REPORT_MAX_CHUNK_BYTES */
	bool journal;	      /* record the changes (report_replay, report_journal_digest) */
	/*
	 * Result messages interned in the set's pool: one copy per distinct
	 * text instead of one per result (a scan gives most results the same
	 * few messages). For a set that lives one scan: a message leaves the
	 * pool only at report_set_free, so a long-lived set would keep every
	 * message it ever held.
	 */
	bool intern_messages;
};

struct report_set;

/* An empty model (opt NULL = defaults). */
struct report_set *report_set_new(const struct report_options *opt);
void report_set_free(struct report_set *rs);

/* Number of results in the model, and of groups whose changes are not written yet. */
size_t report_count(const struct report_set *rs);
size_t report_dirty_count(const struct report_set *rs);

/*
 * A scan of one object for one policy: every result of (res, policy)
 * becomes e[0..n) (n = 0 removes them). e[i].policy is ignored (policy is
 * used). GV_EINVAL when res has no uid or an entry no rule.
 */
enum gv_code report_replace(struct report_set *rs, const struct report_resource *res,
			    const char *policy, const struct report_entry *e, size_t n,
			    struct gv_err *err);

/* Sets the results of (res, e[i].policy, e[i].rule), leaving the object's other results. */
enum gv_code report_upsert(struct report_set *rs, const struct report_resource *res,
			   const struct report_entry *e, size_t n, struct gv_err *err);

/*
 * One policy's engine response for one object: the rule results that the
 * reporting matrix reports (engine_decide(...).reported), with the
 * entry fields taken from the policy (report_status, severity, category,
 * scored). BACKGROUND: report_replace() of (res, policy), process
 * "background scan" (a policy response with no reported rule removes the
 * object's results of that policy; a policy with background: false is
 * left alone). ADMISSION: report_upsert(), process "admission review".
 * Timestamp seconds/nanos. A policy labelled REPORT_LABEL_DISABLED adds
 * nothing. A rule result skipped by PolicyExceptions gets property
 * "exceptions" (engine_rule_result.exceptions).
 */
enum gv_code report_put_response(struct report_set *rs, const struct report_resource *res,
				 const struct engine_response *resp, enum engine_mode mode,
				 int64_t seconds, int32_t nanos, struct gv_err *err);

struct view_audit_item;

/*
 * An admission report item (view/view.h, already filtered by
 * the reporting matrix): report_upsert() of its results with process
 * "admission review" and the item's timestamp. Results of Enforce rules
 * (view_audit_result.enforce) only in the resource layout, as Kyverno
 * reports them (kyverno-semantics.md 7.3); results of policies labelled
 * REPORT_LABEL_DISABLED never. A CEL policy's result (view_audit_result.vpol)
 * gets the entry its background scan would write (cel-semantics.md 7:
 * source, "name" or "namespace/name", rule as given), process "background
 * scan" when the policy has background enabled, else "admission review".
 * Borrowed.
 */
enum gv_code report_put_admission(struct report_set *rs, const struct view_audit_item *it,
				  struct gv_err *err);

/*
 * Removals. ns of report_delete_object: the object's namespace ("" =
 * cluster-scoped, NULL = look in every group).
 *   report_delete_object      every result about the object (it was deleted)
 *   report_delete_policy      every result of the policy (it was deleted)
 *   report_delete_rule        the results of one rule of the policy (rule removed)
 *   report_delete_background  the policy's "background scan" results (it
 *                             became background: false; its admission
 *                             results stay, as the reporting matrix says)
 *   report_retain             the policy's results about objects whose uid
 *                             is not in uids[0..n) (a full scan of the
 *                             policy evaluated exactly those objects)
 *   report_retain_since       the same, but results whose timestamp is
 *                             after `since` (Unix seconds; 0 = none) stay:
 *                             a scan that started at `since` says nothing of
 *                             objects created while it ran (their admission
 *                             results). Timestamps are whole seconds, so a
 *                             result of `since` itself goes: a stale result
 *                             of a scan that ended in that second must not
 *                             stay (an admission result of that second comes
 *                             back with the next scan)
 */
void report_delete_object(struct report_set *rs, const char *ns, const char *uid);
void report_delete_policy(struct report_set *rs, const char *policy);
void report_delete_rule(struct report_set *rs, const char *policy, const char *rule);
void report_delete_background(struct report_set *rs, const char *policy);
void report_retain(struct report_set *rs, const char *policy, const char *const *uids, size_t n);
void report_retain_since(struct report_set *rs, const char *policy, const char *const *uids,
			 size_t n, int64_t since);

/*
 * A complete listing of the objects of kind (in API group `group`, "" =
 * core) in namespace ns (NULL = every namespace, "" = cluster-scoped) found
 * exactly uids[0..n): every result, of any policy and process, about an
 * object of that group and kind whose uid is not in uids goes (the object
 * was deleted: its admission results too, and in the resource layout its
 * report), except results newer than `since` (as report_retain_since). The
 * API server's garbage collector does this through ownerReferences in a
 * real cluster; a control plane without one relies on this.
 */
void report_retain_objects(struct report_set *rs, const char *group, const char *kind,
			   const char *ns, const char *const *uids, size_t n, int64_t since);

/*
 * Brings the model in line with the current policy set: removes results of
 * policies not in set, of rules the policy no longer has, and the
 * background-scan results of policies with background: false. Returns the
 * number of results removed.
 */
size_t report_prune(struct report_set *rs, const struct engine_policyset *set);

/*
 * A live CEL policy for report_prune_live(): its results (source
 * REPORT_SOURCE_VPOL or REPORT_SOURCE_VAP, policy ref) stay, whatever
 * their rule; its "background scan" results go when background is false.
 */
struct report_live {
	const char *source; /* REPORT_SOURCE_VPOL or REPORT_SOURCE_VAP */
	const char *ref;    /* "name" or "namespace/name" */
	bool background;    /* evaluation.background.enabled */
};

/*
 * report_prune() that also knows the live CEL policies live[0..nlive):
 * results whose source is REPORT_SOURCE_VPOL or REPORT_SOURCE_VAP are
 * judged against them alone (kept when a live policy of that source has
 * that ref), the others against set as report_prune() does. Returns the
 * number of results removed.
 */
size_t report_prune_live(struct report_set *rs, const struct engine_policyset *set,
			 const struct report_live *live, size_t nlive);

/* ---- the journal and scan digests (`gavel scan`) ---- */

/*
 * With report_options.journal, a set records every report_replace,
 * report_upsert, report_retain(_since) and report_delete_object made on it (its
 * strings interned in the set's pool, properties deep copies), so that a scan made into an empty
 * set can be checked against the cluster's objects first and applied to the loaded reports only
 * when something changed.
 *
 * report_replay: makes the recorded changes of src on dst, in their order
 * (so scanning into src then replaying onto a loaded dst gives dst what
 * scanning into it directly would have).
 *
 * report_journal_digest: "sha256:<64 hex>" of the recorded changes
 * without timestamps and without their order (the SHA-256 of each record's
 * text, sorted: 32 bytes a record in memory, not its text), of salt (the
 * caller's summary of everything else the reports depend on: the
 * policies) and of the layout. Equal digests: the same objects were
 * scanned with the same results. Caller frees; NULL when SHA-256 is not
 * available (never equal).
 *
 * report_set_digest: objects rendered and written from rs carry
 * annotation REPORT_ANNOTATION_SCAN_DIGEST = digest (NULL: none), and an
 * object whose content is unchanged but whose annotation differs is
 * written again.
 *
 * report_scan_unchanged: whether the objects of namespace ns ("" =
 * ClusterPolicyReports), as `items` (a list's items, metadata only
 * suffices) gives them, were last written by a scan with this digest and
 * nothing else changed them since: every object labelled
 * gavel.dev/report-layout (REPORT_SELECTOR) carries the annotation with digest,
 * has a name of scan's layout, was written by field manager
 * REPORT_FIELD_MANAGER only (managedFields), the chunks of each group are
 * 0..n-1 with none missing, and every group with results in scan has
 * objects. False when digest is NULL.
 */
void report_replay(struct report_set *dst, const struct report_set *src);
/*
 * report_replay, spending src as it goes (its model is dropped first,
 * each record once replayed), so that src's results and dst's are not
 * all in memory at once. src is empty then: only report_set_free is left.
 */
void report_replay_spend(struct report_set *dst, struct report_set *src);
char *report_journal_digest(const struct report_set *rs, const char *salt);
void report_set_digest(struct report_set *rs, const char *digest);
bool report_scan_unchanged(const struct report_set *scan, const char *ns, const json_t *items,
			   const char *digest);

/*
 * The inputs digest: a scan whose reports are the same function of the
 * same inputs need not evaluate anything. `gavel scan` computes
 * "sha256:<hex>" of everything the results of a namespace depend on (the
 * objects listed with their resourceVersions, the policies, exceptions,
 * configuration, namespace labels, layout and gavel's build: cmd/scan.c).
 *
 * report_set_inputs: objects rendered and written from rs carry
 * annotation REPORT_ANNOTATION_SCAN_INPUTS = "<inputs>; groups=<G>;
 * chunks=<C>; results=<R>" (NULL: none); as with the digest, an object
 * whose content is unchanged but whose annotation differs is written
 * again.
 *
 * report_scan_inputs: the REPORT_ANNOTATION_SCAN_INPUTS of the first
 * object of `items` (a list's items, metadata only suffices) labelled
 * gavel.dev/report-layout (REPORT_SELECTOR) that has one (borrowed from items),
 * NULL when none has: whether an inputs digest is worth computing.
 *
 * report_inputs_unchanged: whether the objects of namespace ns ("" =
 * ClusterPolicyReports) in items are, all of them and nothing else, the
 * objects a scan with these inputs wrote: every object labelled
 * gavel.dev/report-layout (REPORT_SELECTOR) carries the annotation with inputs,
 * was written by field manager REPORT_FIELD_MANAGER only, and the groups
 * and chunks are those the annotation counts (each group's chunks 0 ..
 * C-1, G groups). False when inputs is NULL or no object is gavel's.
 * *results (may be NULL) is increased by the results the objects hold.
 */
void report_set_inputs(struct report_set *rs, const char *inputs);
const char *report_scan_inputs(const json_t *items);
bool report_inputs_unchanged(const char *ns, const json_t *items, const char *inputs,
			     size_t *results);

/* ---- rendering and merging (pure) ---- */

/*
 * The objects of every group as they should be (new reference: an array
 * sorted by namespace, base name and chunk; no resourceVersion). For
 * `gavel scan --dry-run` and tests.
 */
json_t *report_render_all(struct report_set *rs);

/*
 * The merge. `current` (borrowed array; [] when none exist) holds the
 * objects of the group (ns "" = ClusterPolicyReport, base) as just read
 * from the cluster, in any order. They become the group's known state, the
 * set's net changes to the group since it was last in sync are applied on
 * top (results present in both keep the newer timestamp), and *desired
 * receives the group's objects as they should be (new reference, chunk
 * order, each with the metadata.resourceVersion of the current object of
 * the same name when there is one). Results in `current` that do not
 * belong to this group under the set's layout are dropped. GV_ELIMIT when
 * the group needs more than REPORT_MAX_CHUNKS objects.
 */
enum gv_code report_merge(struct report_set *rs, const char *ns, const char *base,
			  const json_t *current, json_t **desired, struct gv_err *err);

enum report_op_kind { REPORT_OP_CREATE, REPORT_OP_UPDATE, REPORT_OP_DELETE };

/* One write of a plan. */
struct report_op {
	enum report_op_kind kind;
	char *name;		/* owned: object name */
	char *path;		/* owned: API path (the collection for CREATE) */
	json_t *body;		/* owned: the object (UPDATE: with resourceVersion), or
				   DeleteOptions with preconditions.resourceVersion */
	uint64_t hash;		/* of the written content (internal) */
	char *lo, *hi;		/* owned: key range of the written results (internal) */
	size_t from, to, index; /* results and chunk index it renders (internal) */
	size_t nchunks;		/* objects of the group after the writes (internal) */
};

/*
 * The writes that take one group from its known state to the model:
 * CREATE/UPDATE in chunk order, then DELETE of objects no longer needed.
 * Objects whose content is unchanged get no op (*n = 0: nothing to
 * write). Free with report_ops_free().
 */
enum gv_code report_plan(struct report_set *rs, const char *ns, const char *base,
			 struct report_op **ops, size_t *n, struct gv_err *err);
void report_ops_free(struct report_op *ops, size_t n);

/* ---- talking to the API server ---- */

/*
 * How reports are read and written: requests on client (for a scan's
 * figures, the scanner's child client: kube_client_new_child). scope:
 * what report_load reads: NULL = every PolicyReport and
 * ClusterPolicyReport, in pages of 50; a namespace = its PolicyReports
 * alone, "" = the ClusterPolicyReports alone, one object a page (a
 * namespace's reports are never all parsed at once: the model they are
 * folded into is much smaller than their JSON). `proceed` (optional) is
 * asked before each group and each write; false stops the flush
 * (leadership lost, e.g. !leader_is_leader()): report_flush returns GV_OK
 * with the rest left dirty. It gets ud.
 */
struct report_api {
	struct kube_client *client; /* borrowed */
	const char *scope;	    /* borrowed, may be NULL */
	bool (*proceed)(void *ud);
	void *ud;
};

struct report_stats {
	size_t read; /* objects read */
	size_t created, updated, deleted, unchanged;
	size_t conflicts; /* 409s (and 404s on update) that made a group be re-read */
	size_t failed;	  /* groups left dirty by an error */
};

/*
 * Start-up: lists every PolicyReport and ClusterPolicyReport labelled
 * gavel.dev/report-layout (REPORT_SELECTOR) (pages of 50; report_api.scope
 * narrows it) and takes over those of the current layout as the groups'
 * known state, so that existing reports
 * are reconciled in place. Objects of the other layout (the split flag
 * changed) or with names gavel does not make are marked obsolete: their
 * results move into the groups of the current layout (a result already
 * there with a newer timestamp wins) and the objects are deleted by the
 * next report_flush() that writes every group. Call before other
 * changes or after; both work. stats may be NULL. GV_ENET on API errors
 * (the model is then unchanged).
 */
enum gv_code report_load(struct report_set *rs, const struct report_api *api,
			 struct report_stats *stats, struct gv_err *err);

/*
 * Writes every group with unwritten changes (report_plan), reading a group
 * first when its state in the cluster is unknown (no report_load and not
 * written yet). On 409 / 404 the group is re-read and merged
 * (report_merge) and written again, at most REPORT_MAX_ATTEMPTS times.
 * Then deletes obsolete objects (report_load) once every group is written.
 * A group that fails stays dirty for the next flush; the first error is
 * returned (GV_ENET) after the other groups were tried. stats may be NULL.
 */
enum gv_code report_flush(struct report_set *rs, const struct report_api *api,
			  struct report_stats *stats, struct gv_err *err);

/*
 * The metadata of gavel's reports in namespace ns ("" or NULL = the
 * ClusterPolicyReports) for report_scan_unchanged(): one GET labelled
 * gavel.dev/report-layout (REPORT_SELECTOR) with resourceVersion=0 (the API
 * server's cache: a stale answer can only make digests differ) and
 * KUBE_VIEW_METADATA_LIST. *items: new reference to the
 * list's items ([] when none). GV_ENET on API errors.
 */
enum gv_code report_list_metadata(const struct report_api *api, const char *ns, json_t **items,
				  struct gv_err *err);

/*
 * The reports API every report gavel writes, lists, prunes or deletes is
 * in (Kyverno's --reports-api / --openreportsEnabled):
 *   REPORT_WGPOLICYK8S  wgpolicyk8s.io/v1alpha2 PolicyReport (namespaced) /
 *                       ClusterPolicyReport (cluster), policyreports /
 *                       clusterpolicyreports (the default)
 *   REPORT_OPENREPORTS  openreports.io/v1alpha1 Report / ClusterReport,
 *                       reports / clusterreports: the same body
 *                       (../shared/docs/k8s-wire.md, PolicyReport)
 * Process-wide: call report_use_api() once at start-up, before any report
 * is read or written (not thread-safe against concurrent report calls).
 */
enum report_api_kind { REPORT_WGPOLICYK8S, REPORT_OPENREPORTS };

/*
 * "wgpolicyk8s" or "openreports" (NULL or anything else: GV_EINVAL, *kind
 * unchanged).
 */
enum gv_code report_api_parse(const char *s, enum report_api_kind *kind, struct gv_err *err);
void report_use_api(enum report_api_kind kind);
enum report_api_kind report_api_current(void);
/* "wgpolicyk8s.io/v1alpha2" or "openreports.io/v1alpha1" (static). */
const char *report_api_version(void);
/* "PolicyReport"/"ClusterPolicyReport" or "Report"/"ClusterReport" (static). */
const char *report_kind(bool cluster);

/*
 * API paths: "/apis/wgpolicyk8s.io/v1alpha2/namespaces/<ns>/policyreports[/<name>]",
 * "/apis/wgpolicyk8s.io/v1alpha2/clusterpolicyreports[/<name>]" (ns "" or NULL);
 * with REPORT_OPENREPORTS "/apis/openreports.io/v1alpha1/namespaces/<ns>/reports",
 * "/apis/openreports.io/v1alpha1/clusterreports".
 * name NULL = the collection. Caller frees.
 */
char *report_path(const char *ns, const char *name);
/* The namespaced reports of every namespace: "/apis/<api>/policyreports" or
 * "/apis/openreports.io/v1alpha1/reports". Caller frees. */
char *report_path_all(void);

#endif
