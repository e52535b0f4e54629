#!/usr/bin/env python3
"""gen-crds.py: writes gavel's CustomResourceDefinitions (this folder's *.yaml).

The CRD files are committed; this script is how they are produced, so the
copies of a schema (ClusterPolicy and Policy, each at v1 and v2beta1;
PolicyException at v2 and v2beta1) cannot drift apart. Edit here, then run
    python3 manifests/crds/gen-crds.py        (needs PyYAML)
and review the diff. Structural schemas for apiextensions.k8s.io/v1 (1.20+).
"""
import copy, os, sys, yaml

def s(desc=None, **kw):
    d = {"type": "string"}
    if desc: d["description"] = desc
    d.update(kw); return d

def b(desc=None, **kw):
    d = {"type": "boolean"}
    if desc: d["description"] = desc
    d.update(kw); return d

def strlist(desc=None):
    d = {"type": "array", "items": {"type": "string"}}
    if desc: d["description"] = desc
    return d

def obj(props, desc=None, required=None, **kw):
    d = {"type": "object"}
    if desc: d["description"] = desc
    if required: d["required"] = required
    d.update(kw)
    d["properties"] = props
    return d

def free(desc, typ=None):
    d = {}
    if typ: d["type"] = typ
    d["description"] = desc
    d["x-kubernetes-preserve-unknown-fields"] = True
    return d

def strmap(desc=None):
    d = {"type": "object"}
    if desc: d["description"] = desc
    d["additionalProperties"] = {"type": "string"}
    return d

def labelselector(desc):
    return obj({
        "matchLabels": strmap(),
        "matchExpressions": {"type": "array", "items": obj({
            "key": s(), "operator": s(), "values": strlist()}, required=["key", "operator"])},
    }, desc=desc, **{"x-kubernetes-map-type": "atomic"})

ACTIONS = ["audit", "enforce", "Audit", "Enforce"]

def resource_description():
    return obj({
        "kinds": strlist("Kinds: Kind, Kind/subresource, group/version/Kind; wildcards allowed."),
        "name": s("Name of the resource (wildcards allowed). Deprecated: use names."),
        "names": strlist("Names of the resources (wildcards allowed)."),
        "namespaces": strlist("Namespaces (wildcards allowed)."),
        "annotations": strmap("Annotations that must be present (wildcards allowed in values)."),
        "selector": labelselector("Label selector on the resource."),
        "namespaceSelector": labelselector("Label selector on the resource's namespace."),
        "operations": {"type": "array", "description": "Admission operations; empty means all.",
                       "items": {"type": "string", "enum": ["CREATE", "CONNECT", "UPDATE", "DELETE"]}},
    }, desc="Resources to select.")

def userinfo_props():
    return {
        "subjects": {"type": "array", "description": "Users, groups or service accounts.",
                     "items": obj({"kind": s("User, Group or ServiceAccount."), "apiGroup": s(),
                                   "name": s(), "namespace": s()}, required=["kind", "name"])},
        "roles": strlist("Namespaced roles, as namespace:name."),
        "clusterRoles": strlist("Cluster roles."),
    }

def resource_filter():
    p = {"resources": resource_description()}
    p.update(userinfo_props())
    return obj(p)

def match_resources(desc):
    p = {
        "any": {"type": "array", "description": "Selects when any of the filters matches.", "items": resource_filter()},
        "all": {"type": "array", "description": "Selects when all of the filters match.", "items": resource_filter()},
        "resources": resource_description(),
    }
    p.update(userinfo_props())
    return obj(p, desc=desc)

def overrides(action_enum):
    return {"type": "array", "items": obj({
        "action": s("Audit or Enforce.", enum=action_enum),
        "namespaces": strlist(),
        "namespaceSelector": labelselector("Namespaces, by label."),
    })}

def cel_list(desc):
    return {"type": "array", "description": desc, "items": obj(
        {"name": s(), "expression": s()}, required=["name", "expression"])}

def rule():
    return obj({
        "name": s("Rule name, unique in the policy.", maxLength=63),
        "match": match_resources("Selects the resources the rule applies to."),
        "exclude": match_resources("Resources the rule does not apply to, even when matched."),
        "context": {"type": "array", "description": "Variables: configMap, apiCall, variable, imageRegistry, globalReference.",
                    "items": {"type": "object", "properties": {
                        "name": s(),
                        "globalReference": {"type": "object", "required": ["name"],
                                            "properties": {"name": s("The GlobalContextEntry."),
                                                           "jmesPath": s("Applied to its data.")},
                                            "x-kubernetes-preserve-unknown-fields": True}},
                              "x-kubernetes-preserve-unknown-fields": True}},
        "preconditions": free("Conditions (any/all, or a legacy list) that must hold for the rule to apply."),
        "celPreconditions": cel_list("CEL preconditions."),
        "validate": obj({
            "message": s("Message on failure; may contain {{ }} variables."),
            "failureAction": s("Audit allows and reports; Enforce blocks.", enum=["Audit", "Enforce"]),
            "failureActionOverrides": overrides(ACTIONS),
            "allowExistingViolations": b("Allow updates of resources that already violate the rule."),
            "pattern": free("Overlay pattern the resource must match."),
            "anyPattern": free("Patterns of which at least one must match."),
            "deny": obj({"conditions": free("Conditions (any/all, or a legacy list) that deny when true.")},
                        desc="Deny conditions."),
            "foreach": {"type": "array", "description": "Validation over each element of a list.",
                        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            "podSecurity": obj({
                "level": s("Pod Security Standards level.", enum=["privileged", "baseline", "restricted"]),
                "version": s("Pod Security Standards version, e.g. v1.29 or latest."),
                "exclude": {"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }, desc="Pod Security Standards check."),
            "cel": free("CEL expressions.", "object"),
            "manifests": free("Signed manifest verification.", "object"),
            "assert": free("Assertion tree.", "object"),
        }, desc="Validation: message, failureAction and one of pattern, anyPattern, deny, foreach, podSecurity, cel."),
        "mutate": free("Mutation (not evaluated by gavel, kept as written).", "object"),
        "generate": free("Generation (not evaluated by gavel, kept as written).", "object"),
        "verifyImages": {"type": "array", "description": "Image verification (not evaluated by gavel, kept as written).",
                         "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        "imageExtractors": free("Custom image extractors per kind.", "object"),
        "skipBackgroundRequests": b("Skip admission requests made by background controllers."),
        "reportProperties": strmap("Extra properties copied into report results."),
    }, required=["name"])

def policy_schema(kind, scope_word):
    spec = obj({
        "admission": b("Apply the policy at admission.", default=True),
        "background": b("Apply the policy to existing resources in background scans.", default=True),
        "validationFailureAction": s("Policy-wide default for rules without validate.failureAction.", enum=ACTIONS),
        "validationFailureActionOverrides": overrides(ACTIONS),
        "emitWarning": b("Return audit results as admission warnings."),
        "failurePolicy": s("Webhook failure policy.", enum=["Ignore", "Fail"]),
        "applyRules": s("All: every matching rule applies; One: only the first.", enum=["All", "One"]),
        "schemaValidation": b(),
        "useServerSideApply": b(),
        "generateExisting": b(),
        "generateExistingOnPolicyUpdate": b(),
        "mutateExistingOnPolicyUpdate": b(),
        "webhookTimeoutSeconds": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 30},
        "webhookConfiguration": obj({
            "failurePolicy": s(enum=["Ignore", "Fail"]),
            "timeoutSeconds": {"type": "integer", "format": "int32"},
            "matchConditions": cel_list("Webhook match conditions (CEL)."),
        }),
        "scanInterval": s("gavel: background scan period for this policy, a Go duration such as 30m or 2h30m "
                          "(overrides the ConfigMap's backgroundScanInterval).",
                          pattern=r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$"),
        "scanSchedule": s("gavel: background scan cron schedule (5 or 6 fields, or @hourly-style; UTC unless CRON_TZ=).",
                          maxLength=256),
        "scanSuspend": b("gavel: suspend background scans of this policy."),
        "rules": {"type": "array", "description": "Rules, evaluated in order.", "items": rule()},
    }, desc="Policy spec.")
    return obj({
        "apiVersion": s(), "kind": s(), "metadata": {"type": "object"},
        "spec": spec,
        "status": free("Status written by gavel's leader: conditions (Ready, BackgroundScan), "
                       "ready, rulecount, autogen.rules.", "object"),
    }, desc=f"{kind}: Kyverno-compatible {scope_word} policy with validate rules.", required=["spec"])

# Kyverno's columns (its kubebuilder printcolumn markers), then gavel's scan columns.
READY = '.status.conditions[?(@.type == "Ready")]'
POLICY_COLUMNS = [
    {"name": "ADMISSION", "type": "boolean", "jsonPath": ".spec.admission"},
    {"name": "BACKGROUND", "type": "boolean", "jsonPath": ".spec.background"},
    {"name": "READY", "type": "string", "jsonPath": READY + ".status"},
    {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "FAILURE POLICY", "type": "string", "jsonPath": ".spec.failurePolicy", "priority": 1},
    {"name": "VALIDATE", "type": "integer", "jsonPath": ".status.rulecount.validate", "priority": 1},
    {"name": "MUTATE", "type": "integer", "jsonPath": ".status.rulecount.mutate", "priority": 1},
    {"name": "GENERATE", "type": "integer", "jsonPath": ".status.rulecount.generate", "priority": 1},
    {"name": "VERIFY IMAGES", "type": "integer", "jsonPath": ".status.rulecount.verifyimages", "priority": 1},
    {"name": "MESSAGE", "type": "string", "jsonPath": READY + ".message", "priority": 1},
    {"name": "SCAN", "type": "string",
     "jsonPath": '.status.conditions[?(@.type == "BackgroundScan")].reason', "priority": 1},
    {"name": "SCAN-INTERVAL", "type": "string", "jsonPath": ".spec.scanInterval", "priority": 1},
    {"name": "SCAN-SCHEDULE", "type": "string", "jsonPath": ".spec.scanSchedule", "priority": 1},
]

def crd(group, plural, singular, kind, scope, short, versions, categories):
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}",
                     "labels": {"app.kubernetes.io/name": "gavel", "app.kubernetes.io/part-of": "gavel"}},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": kind + "List", "plural": plural, "singular": singular,
                      "shortNames": short, "categories": categories},
            "scope": scope,
            "versions": versions,
        },
    }

def policy_crd(kind, plural, singular, scope, short, word):
    vs = []
    for v, storage in (("v1", True), ("v2beta1", False)):
        vs.append({"name": v, "served": True, "storage": storage,
                   "schema": {"openAPIV3Schema": policy_schema(kind, word)},
                   "subresources": {"status": {}},
                   "additionalPrinterColumns": copy.deepcopy(POLICY_COLUMNS)})
    return crd("kyverno.io", plural, singular, kind, scope, short, vs, ["kyverno", "gavel"])

def exception_crd():
    schema = obj({
        "apiVersion": s(), "kind": s(), "metadata": {"type": "object"},
        "spec": obj({
            "background": b("Also apply the exception in background scans.", default=True),
            "match": match_resources("Resources the exception applies to."),
            "conditions": free("Conditions (any/all) that must hold for the exception to apply."),
            "exceptions": {"type": "array", "description": "Policies and rules that are excepted.",
                           "items": obj({"policyName": s("Policy name; namespace/name for a namespaced Policy."),
                                         "ruleNames": strlist("Rule names (wildcards allowed).")},
                                        required=["policyName", "ruleNames"])},
            "podSecurity": {"type": "array", "description": "Pod Security Standards controls excepted.",
                            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }, desc="Exception spec.", required=["exceptions", "match"]),
    }, desc="PolicyException: lets matching resources bypass the named policy rules.", required=["spec"])
    cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    vs = [{"name": v, "served": True, "storage": st, "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
           "additionalPrinterColumns": copy.deepcopy(cols)} for v, st in (("v2", True), ("v2beta1", False))]
    return crd("kyverno.io", "policyexceptions", "policyexception", "PolicyException", "Namespaced",
               ["polex"], vs, ["kyverno", "gavel"])

def gce_crd():
    kv = lambda d: {"type": "array", "description": d,
                    "items": obj({"key": s(), "value": free("Value (any JSON).")}, required=["key"])}
    api_call = obj({
        "urlPath": s("Kubernetes API path, e.g. /api/v1/namespaces/default/pods (GET or POST)."),
        "method": s("HTTP method.", enum=["GET", "POST"]),
        "data": kv("POST body: a JSON object of these keys and values."),
        "service": obj({
            "url": s("URL of the service (https:// with caBundle)."),
            "caBundle": s("PEM CA certificates trusted for the service."),
            "headers": kv("Request headers."),
        }, desc="An HTTP(S) service instead of the API server."),
        "refreshInterval": s("How often the call is made again (Go duration, default 10m)."),
        "retryLimit": {"type": "integer", "description": "Accepted for compatibility; gavel retries on the next refresh."},
    }, desc="An API call whose answer is the entry's data, refreshed on refreshInterval.")
    schema = obj({
        "apiVersion": s(), "kind": s(), "metadata": {"type": "object"},
        "spec": obj({
            "kubernetesResource": obj({
                "group": s("API group (\"\" for the core group)."),
                "version": s("API version."),
                "resource": s("Resource (plural), e.g. deployments."),
                "namespace": s("Namespace; empty for all namespaces or a cluster-scoped resource."),
            }, desc="Objects kept by list + watch; the data is the array of the objects.",
               required=["version", "resource"]),
            "apiCall": api_call,
            "projections": {"type": "array", "description": "Accepted for compatibility (not used by gavel).",
                            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }, desc="One of kubernetesResource and apiCall."),
        "status": free("Status (not written by gavel).", typ="object"),
    }, desc="GlobalContextEntry: data shared by policies through globalReference context entries.",
       required=["spec"])
    cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    vs = [{"name": "v2alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
           "subresources": {"status": {}}, "additionalPrinterColumns": cols}]
    return crd("kyverno.io", "globalcontextentries", "globalcontextentry", "GlobalContextEntry", "Cluster",
               ["gctxentry"], vs, ["kyverno", "gavel"])

def objref(desc):
    return obj({"apiVersion": s(), "kind": s(), "namespace": s(), "name": s(), "uid": s(),
                "resourceVersion": s(), "fieldPath": s()}, desc=desc, **{"x-kubernetes-map-type": "atomic"})

def report_crd(kind, plural, singular, scope, short, group="wgpolicyk8s.io", version="v1alpha2"):
    i32 = lambda d: {"type": "integer", "description": d}
    result = obj({
        "source": s("Engine that produced the result, e.g. gavel."),
        "policy": s("Policy name (namespace/name for a namespaced Policy in a cluster report)."),
        "rule": s("Rule name."),
        "category": s("Policy category (policies.kyverno.io/category)."),
        "severity": s("Policy severity (policies.kyverno.io/severity).",
                      enum=["critical", "high", "low", "medium", "info"]),
        "timestamp": obj({"seconds": {"type": "integer", "format": "int64"},
                          "nanos": {"type": "integer", "format": "int32"}},
                         desc="When the result was produced.", required=["seconds", "nanos"]),
        "result": s("Outcome.", enum=["pass", "fail", "warn", "error", "skip"]),
        "scored": b("Whether the result counts towards a score."),
        "message": s("Result message."),
        "resources": {"type": "array", "description": "Subjects of the result.", "items": objref("A subject.")},
        "resourceSelector": labelselector("Subjects of the result, by label."),
        "properties": strmap("Extra properties."),
    }, required=["policy"])
    schema = obj({
        "apiVersion": s(), "kind": s(), "metadata": {"type": "object"},
        "scope": objref("The one resource the report is about (optional)."),
        "scopeSelector": labelselector("The resources the report is about, by label (not with scope)."),
        "summary": obj({
            "pass": i32("Results that passed."), "fail": i32("Results that failed."),
            "warn": i32("Results with warnings."), "error": i32("Results that could not be evaluated."),
            "skip": i32("Results that were skipped."),
        }, desc="Counts of results by outcome; always equal to the results list."),
        "results": {"type": "array", "description": "Policy results.", "items": result},
    }, desc=f"{kind}: {group} policy results for {'a namespace' if scope == 'Namespaced' else 'cluster-scoped resources'}.")
    cols = [
        {"name": "Kind", "type": "string", "jsonPath": ".scope.kind", "priority": 1},
        {"name": "Name", "type": "string", "jsonPath": ".scope.name", "priority": 1},
        {"name": "Pass", "type": "integer", "jsonPath": ".summary.pass"},
        {"name": "Fail", "type": "integer", "jsonPath": ".summary.fail"},
        {"name": "Warn", "type": "integer", "jsonPath": ".summary.warn"},
        {"name": "Error", "type": "integer", "jsonPath": ".summary.error"},
        {"name": "Skip", "type": "integer", "jsonPath": ".summary.skip"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    vs = [{"name": version, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
           "additionalPrinterColumns": cols}]
    return crd(group, plural, singular, kind, scope, short, vs, ["policy-report", "gavel"])

def named_exprs(desc, name_key="name", expr_key="expression"):
    return {"type": "array", "description": desc,
            "items": obj({name_key: s(), expr_key: s()}, required=[name_key, expr_key])}

def vpol_schema(kind, scope_word):
    spec = obj({
        "matchConstraints": free("Resources the policy applies to (resourceRules, excludeResourceRules, "
                                 "namespaceSelector, objectSelector, matchPolicy), as in "
                                 "ValidatingAdmissionPolicy.", "object"),
        "matchConditions": named_exprs("CEL conditions that must all hold (at most 64)."),
        "variables": named_exprs("CEL variables, evaluated lazily in order."),
        "validations": {"type": "array", "description": "CEL validations, evaluated in order.",
                        "items": obj({"expression": s(), "message": s(), "messageExpression": s(),
                                      "reason": s()}, required=["expression"])},
        "auditAnnotations": {"type": "array", "description": "Report properties (CEL, string or null).",
                             "items": obj({"key": s(), "valueExpression": s()},
                                          required=["key", "valueExpression"])},
        "validationActions": {"type": "array", "description": "Deny, Audit, Warn (default Deny).",
                              "items": s(enum=["Deny", "Audit", "Warn"]),
                              "x-kubernetes-list-type": "set"},
        "failurePolicy": s("Webhook failure policy.", enum=["Ignore", "Fail"]),
        "evaluation": obj({
            "admission": obj({"enabled": b("Evaluate at admission.", default=True)}),
            "background": obj({"enabled": b("Evaluate in background scans.", default=True)}),
            "mode": s("Kubernetes (default) or JSON.", enum=["Kubernetes", "JSON", "Envoy", "HTTP"]),
        }),
        "webhookConfiguration": obj({"timeoutSeconds": {"type": "integer", "format": "int32"}}),
        "autogen": free("Pod controller rewrite (podControllers.controllers) and VAP generation.", "object"),
        "scanInterval": s("gavel: background scan period for this policy, a Go duration such as 30m or 2h30m "
                          "(overrides the ConfigMap's backgroundScanInterval).",
                          pattern=r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$"),
        "scanSchedule": s("gavel: background scan cron schedule (5 or 6 fields, or @hourly-style; UTC unless CRON_TZ=).",
                          maxLength=256),
        "scanSuspend": b("gavel: suspend background scans of this policy."),
    }, desc="ValidatingPolicy spec.")
    return obj({
        "apiVersion": s(), "kind": s(), "metadata": {"type": "object"},
        "spec": spec,
        "status": free("Status (conditionStatus, autogen, generated).", "object"),
    }, desc=f"{kind}: Kyverno-compatible {scope_word} CEL policy.", required=["spec"])

VPOL_COLUMNS = [
    {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    {"name": "READY", "type": "string", "jsonPath": ".status.conditionStatus.ready"},
    {"name": "SCAN-INTERVAL", "type": "string", "jsonPath": ".spec.scanInterval", "priority": 1},
    {"name": "SCAN-SCHEDULE", "type": "string", "jsonPath": ".spec.scanSchedule", "priority": 1},
]

def vpol_crd(kind, plural, singular, scope, short, word, versions):
    vs = []
    for v in versions:
        vs.append({"name": v, "served": True, "storage": v == "v1",
                   "schema": {"openAPIV3Schema": vpol_schema(kind, word)},
                   "subresources": {"status": {}},
                   "additionalPrinterColumns": copy.deepcopy(VPOL_COLUMNS)})
    return crd("policies.kyverno.io", plural, singular, kind, scope, short, vs, ["kyverno", "gavel"])

def cel_exception_crd():
    schema = obj({
        "apiVersion": s(), "kind": s(), "metadata": {"type": "object"},
        "spec": obj({
            "policyRefs": {"type": "array", "minItems": 1, "description": "Policies excepted (name and kind).",
                           "items": obj({"name": s(minLength=1), "kind": s(minLength=1)},
                                        required=["name", "kind"])},
            "matchConditions": named_exprs("CEL conditions that must all hold."),
            "images": strlist("Partial exception: images (exceptions.allowedImages)."),
            "allowedValues": strlist("Partial exception: values (exceptions.allowedValues)."),
            "reportResult": s("skip (default) or pass.", enum=["skip", "pass"]),
            "expiresAt": s(format="date-time"),
            "properties": strmap(),
        }, desc="Exception spec.", required=["policyRefs"]),
    }, desc="PolicyException (policies.kyverno.io): lets matching requests bypass CEL policies.",
       required=["spec"])
    cols = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    vs = [{"name": v, "served": True, "storage": v == "v1",
           "schema": {"openAPIV3Schema": copy.deepcopy(schema)},
           "additionalPrinterColumns": copy.deepcopy(cols)} for v in ("v1", "v1beta1", "v1alpha1")]
    return crd("policies.kyverno.io", "policyexceptions", "policyexception", "PolicyException",
               "Namespaced", ["polex"], vs, ["kyverno", "gavel"])

class D(yaml.SafeDumper):
    pass
def str_rep(dumper, data):
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)
D.add_representer(str, str_rep)
# No aliases: every copy is written out in full.
D.ignore_aliases = lambda self, data: True

def dump(o):
    return yaml.dump(o, Dumper=D, sort_keys=False, default_flow_style=False, width=110, allow_unicode=True)

HEAD = {
 "policies.kyverno.io_validatingpolicies.yaml": """# CustomResourceDefinition for policies.kyverno.io ValidatingPolicy (cluster-scoped), written for gavel.
# Served at v1 (storage), v1beta1 and v1alpha1 with the same schema. gavel's own fields:
# spec.scanInterval, spec.scanSchedule, spec.scanSuspend (Kyverno's CRD would prune them).
# Do not apply over an installed Kyverno's CRDs (same names): use Kyverno's then.
""",
 "policies.kyverno.io_namespacedvalidatingpolicies.yaml": """# CustomResourceDefinition for policies.kyverno.io NamespacedValidatingPolicy, written for gavel.
# Same schema as ValidatingPolicy; served at v1 (storage) and v1beta1.
""",
 "policies.kyverno.io_policyexceptions.yaml": """# CustomResourceDefinition for policies.kyverno.io PolicyException (CEL exceptions; namespaced),
# written for gavel. Served at v1 (storage), v1beta1 and v1alpha1.
""",
 "kyverno.io_clusterpolicies.yaml": """# CustomResourceDefinition for kyverno.io ClusterPolicy (cluster-scoped), written for gavel.
# Served at v1 (storage) and v2beta1 with the same schema (no conversion needed).
# Structural schema: the policy tree is typed; Kyverno's free-form parts (pattern, anyPattern,
# deny conditions, preconditions, context, foreach) keep unknown fields. gavel's own fields:
# spec.scanInterval, spec.scanSchedule, spec.scanSuspend. Needs Kubernetes 1.20+.
# Do not apply over an installed Kyverno's CRDs (same names): use Kyverno's then.
""",
 "kyverno.io_policies.yaml": """# CustomResourceDefinition for kyverno.io Policy (namespaced), written for gavel.
# Same schema as ClusterPolicy (kyverno.io_clusterpolicies.yaml).
# Served at v1 (storage) and v2beta1. Needs Kubernetes 1.20+.
""",
 "kyverno.io_policyexceptions.yaml": """# CustomResourceDefinition for kyverno.io PolicyException (namespaced), written for gavel.
# Served at v2 (storage) and v2beta1 with the same schema. Needs Kubernetes 1.20+.
""",
 "kyverno.io_globalcontextentries.yaml": """# CustomResourceDefinition for kyverno.io/v2alpha1 GlobalContextEntry (cluster-scoped), written for
# gavel: the data of globalReference context entries (spec.kubernetesResource, kept by list + watch,
# or spec.apiCall, refreshed on its interval). Needs Kubernetes 1.20+.
# Do not apply over an installed Kyverno's CRDs (same names): use Kyverno's then.
""",
 "wgpolicyk8s.io_policyreports.yaml": """# CustomResourceDefinition for wgpolicyk8s.io/v1alpha2 PolicyReport (namespaced), written for gavel.
# gavel's background reconciler writes one per namespace (polr-ns-<namespace>) or one per
# policy per namespace. No status subresource: summary and results are top-level.
# Columns: Pass, Fail, Warn, Error, Skip, Age (Kind and Name of .scope with -o wide).
""",
 "wgpolicyk8s.io_clusterpolicyreports.yaml": """# CustomResourceDefinition for wgpolicyk8s.io/v1alpha2 ClusterPolicyReport (cluster-scoped),
# written for gavel: results for cluster-scoped resources (clusterpolicyreport[-<policy>]).
# Same schema as PolicyReport. Columns: Pass, Fail, Warn, Error, Skip, Age.
""",
 "openreports.io_reports.yaml": """# CustomResourceDefinition for openreports.io/v1alpha1 Report (namespaced), written for gavel.
# The same body as wgpolicyk8s.io PolicyReport; gavel writes these instead with
# `gavel serve --reports-api openreports`. Columns: Pass, Fail, Warn, Error, Skip, Age.
""",
 "openreports.io_clusterreports.yaml": """# CustomResourceDefinition for openreports.io/v1alpha1 ClusterReport (cluster-scoped), written for
# gavel: the same body as wgpolicyk8s.io ClusterPolicyReport, written with
# `gavel serve --reports-api openreports`. Columns: Pass, Fail, Warn, Error, Skip, Age.
""",
}

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
docs = {
 "policies.kyverno.io_validatingpolicies.yaml": vpol_crd("ValidatingPolicy", "validatingpolicies", "validatingpolicy",
                                                        "Cluster", ["vpol"], "cluster-wide", ("v1", "v1beta1", "v1alpha1")),
 "policies.kyverno.io_namespacedvalidatingpolicies.yaml": vpol_crd("NamespacedValidatingPolicy",
                                                        "namespacedvalidatingpolicies", "namespacedvalidatingpolicy",
                                                        "Namespaced", ["nvpol"], "namespaced", ("v1", "v1beta1")),
 "policies.kyverno.io_policyexceptions.yaml": cel_exception_crd(),
 "kyverno.io_clusterpolicies.yaml": policy_crd("ClusterPolicy", "clusterpolicies", "clusterpolicy", "Cluster", ["cpol"], "cluster-wide"),
 "kyverno.io_policies.yaml": policy_crd("Policy", "policies", "policy", "Namespaced", ["pol"], "namespaced"),
 "kyverno.io_policyexceptions.yaml": exception_crd(),
 "kyverno.io_globalcontextentries.yaml": gce_crd(),
 "wgpolicyk8s.io_policyreports.yaml": report_crd("PolicyReport", "policyreports", "policyreport", "Namespaced", ["polr"]),
 "wgpolicyk8s.io_clusterpolicyreports.yaml": report_crd("ClusterPolicyReport", "clusterpolicyreports", "clusterpolicyreport", "Cluster", ["cpolr"]),
 "openreports.io_reports.yaml": report_crd("Report", "reports", "report", "Namespaced", ["rep"],
                                           "openreports.io", "v1alpha1"),
 "openreports.io_clusterreports.yaml": report_crd("ClusterReport", "clusterreports", "clusterreport", "Cluster", ["crep"],
                                                  "openreports.io", "v1alpha1"),
}
for name, d in docs.items():
    with open(f"{out}/{name}", "w") as f:
        f.write(HEAD[name])
        f.write("# Generated by manifests/crds/gen-crds.py: edit that, then rerun it.\n")
        f.write("---\n")
        f.write(dump(d))
