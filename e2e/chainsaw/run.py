#!/usr/bin/env python3
"""Runs Kyverno's chainsaw end-to-end tests against a cluster (gavel serving).

usage: run.py --kubeconfig F [--jobs N] [--keep-going] SUITE_DIR [FOLDER...]

SUITE_DIR holds the tests (tests.txt lists the test folders, relative to it);
FOLDER arguments restrict the run to folders starting with them. Each test:
  - is checked first against the not-applicable rules (NA_RULES below: what
    this control plane lacks, read from what the test asserts or runs); such
    a test is reported `n/a` with its reason and never run;
  - gets its namespace (spec.namespace, else an ephemeral chainsaw-<words>),
    runs its steps (try, then catch on failure, then finally and cleanup),
    stops at the first failing operation (with --keep-going it goes on and
    records every failure: a diagnosis, the result is the same), deletes what
    it created in reverse order, then its ephemeral namespace.
Tests chainsaw marks `concurrent: true` run side by side (--jobs), after the
others, which run one at a time (their cluster-wide policies would judge each
other's objects); side by side only with those of the same top-level folder,
as Kyverno's CI runs each folder in its own cluster.

Output: one line per test (`ok`, `FAIL` with the cause class and the first
error, `n/a` with the reason), a table per top-level folder, the failure
causes and not-applicable reasons with counts, then `N passed, N failed`.
Timeouts (seconds): --assert-timeout for assert/error (chainsaw: 90), longer
--report-timeout for reports (written by background scans), polled every
--poll seconds; --apply-timeout (the suite's, 10) or the operation's own for
apply/create/update/patch, which retry, as chainsaw's client does, while the
kind is not in discovery yet (a custom resource right after its CRD); any
other error fails at once.
"""

import argparse
import collections
import concurrent.futures
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from assertion import AssertionError_, evaluate, is_expr, match, template  # noqa: E402
from kube import Kube, KubeError, NoKindMatch  # noqa: E402

OPTS = None
PRINT = threading.Lock()

# ---- durations, files ---------------------------------------------------------------


def duration(s, default):
    if s is None:
        return default
    if isinstance(s, (int, float)):
        return float(s)
    total = 0.0
    for num, unit in re.findall(r"([\d.]+)(ms|s|m|h)", str(s)):
        total += float(num) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


def load_docs(path):
    """The YAML documents of PATH; a list (`items`, with kind List or none) is its items."""
    out = []
    with open(path) as f:
        for d in yaml.safe_load_all(f):
            if isinstance(d, dict) and isinstance(d.get("items"), list) and \
                    d.get("kind", "List").endswith("List"):
                out += [i for i in d["items"] if i]
            elif d:
                out.append(d)
    return out


class StepFailed(Exception):
    def __init__(self, cls, msg):
        super().__init__(msg)
        self.cls = cls


# ---- not-applicable rules ----------------------------------------------------------------
# Decided from what a test needs, before it runs. Each rule: (reason, predicate
# over the test's facts). Facts: the scripts' text, the assertion documents
# (op, document), the objects the test applies.

WORKLOAD_KINDS = {"Deployment", "StatefulSet", "ReplicaSet", "DaemonSet", "Job", "CronJob"}
CONTROLLER_MADE = {"Pod", "ReplicaSet", "Job", "Endpoints", "EndpointSlice"}


def _needs_kubelet(facts):
    for op, doc in facts["asserts"]:
        if op != "assert" or doc.get("kind") != "Pod":
            continue
        st = doc.get("status")
        if isinstance(st, dict) and ("phase" in st or "conditions" in st or
                                     "containerStatuses" in st):
            return True
    return False


def _needs_workload_status(facts):
    return any(op == "assert" and doc.get("kind") in WORKLOAD_KINDS and
               isinstance(doc.get("status"), dict) for op, doc in facts["asserts"])


def _needs_controller_objects(facts):
    for op, doc in facts["asserts"]:
        if op != "assert" or doc.get("kind") not in CONTROLLER_MADE:
            continue
        name = (doc.get("metadata") or {}).get("name")
        if (doc.get("kind"), name) not in facts["applied"]:
            return True
    return False


def _needs_network(facts):
    return any(re.search(r"\bhelm\b|https?://(?!localhost|127\.)", s) for s in facts["scripts"])


def _walk(node):
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def _needs_registry(facts):
    """A policy reading image metadata from a remote registry (imageRegistry context)."""
    for d in facts["docs"]:
        for n in _walk(d):
            if isinstance(n, dict) and isinstance(n.get("imageRegistry"), dict):
                return True
    return False


def _needs_newer_apiserver(facts):
    """A Pod with fields this control plane (Kubernetes 1.20) drops on write.

    spec.ephemeralContainers (a disabled feature in 1.20) and
    securityContext.windowsOptions.hostProcess (1.22) never reach the webhook,
    so a policy cannot see them. Likewise an asserted Service with
    spec.internalTrafficPolicy (1.22): 1.20 never stores or defaults it."""
    for op, d in facts["asserts"]:
        if op == "assert" and d.get("kind") == "Service" and \
                isinstance(d.get("spec"), dict) and "internalTrafficPolicy" in d["spec"]:
            return True
    for d in facts["docs"]:
        if d.get("kind") != "Pod" or not isinstance(d.get("spec"), dict):
            continue
        if d["spec"].get("ephemeralContainers"):
            return True
        for n in _walk(d["spec"]):
            if isinstance(n, dict) and isinstance(n.get("windowsOptions"), dict) and \
                    "hostProcess" in n["windowsOptions"]:
                return True
    return False


def _needs_served_versions(facts):
    """Objects of API versions Kubernetes 1.20 does not serve: batch/v1 CronJob
    (1.21; `kubectl create cronjob` writes it) and policy/v1 Eviction (1.22;
    the API server refuses the body before any webhook sees it)."""
    for d in facts["docs"]:
        if d.get("apiVersion") == "batch/v1" and d.get("kind") == "CronJob":
            return True
    for s in facts["scripts"]:
        if re.search(r"\bkubectl\s+create\s+cronjob\b", s):
            return True
        if "/eviction" in s:
            for f in re.findall(r"-d\s+@(\S+)", s):
                try:
                    with open(os.path.join(facts["dir"], f)) as fh:
                        body = json.load(fh)
                except (OSError, ValueError):
                    continue
                if isinstance(body, dict) and body.get("kind") == "Eviction" and \
                        body.get("apiVersion") == "policy/v1":
                    return True
    return False


def _needs_mutation(facts):
    """Kyverno's mutating webhook configurations (mutate and verifyImages
    policies): gavel judges validate policies and registers no mutating
    webhook."""
    return any(op == "assert" and d.get("kind") == "MutatingWebhookConfiguration" and
               str((d.get("metadata") or {}).get("name", "")).startswith("kyverno-")
               for op, d in facts["asserts"])


def _needs_role_aggregation(facts):
    """A policy asking the API server (a SubjectAccessReview) what Kyverno's own
    service account may do, granted by ClusterRoles the test adds with
    aggregation labels: the kube-controller-manager's ClusterRole aggregation
    folds them into Kyverno's roles, and this control plane runs no controller
    (nor has that service account)."""
    labelled = any(d.get("kind") == "ClusterRole" and
                   ((d.get("metadata") or {}).get("labels") or {}).get(
                       "app.kubernetes.io/part-of") == "kyverno"
                   for d in facts["docs"])
    if not labelled:
        return False
    for d in facts["docs"]:
        for n in _walk(d):
            if isinstance(n, dict) and isinstance(n.get("apiCall"), dict) and \
                    "subjectaccessreviews" in str(n["apiCall"].get("urlPath", "")) and \
                    "system:serviceaccount:kyverno:" in str(n["apiCall"].get("data")):
                return True
    return False


NA_RULES = [
    ("needs the internet (installs a Helm chart from a remote repository)", _needs_network),
    ("needs the internet (reads images from a remote registry)", _needs_registry),
    ("needs a kubelet (asserts a Pod's runtime status)", _needs_kubelet),
    ("needs the workload controllers (asserts a workload's status)", _needs_workload_status),
    ("needs the controllers (asserts objects only a controller creates)", _needs_controller_objects),
    ("needs a newer API server (1.20 drops ephemeralContainers, windowsOptions.hostProcess, "
     "Service internalTrafficPolicy)", _needs_newer_apiserver),
    ("needs the controllers (ClusterRole aggregation into Kyverno's roles, asked by a "
     "SubjectAccessReview)", _needs_role_aggregation),
    ("needs a newer API server (1.20 serves neither batch/v1 CronJob nor policy/v1 Eviction)",
     _needs_served_versions),
    ("asserts Kyverno's mutating webhook configurations (mutation is not part of gavel)",
     _needs_mutation),
]


def test_facts(t):
    facts = {"scripts": [], "asserts": [], "applied": set(), "docs": [], "dir": t["dir"]}

    def ops(spec):
        for blk in ("try", "catch", "finally", "cleanup"):
            for op in spec.get(blk) or []:
                yield op

    def files(d, op, bindings):
        out = []
        f = op.get("file")
        if is_expr(f) and f[1:2] == "$" and f[2:-1] in bindings:
            f = bindings[f[2:-1]]
        if isinstance(f, str) and not is_expr(f):
            for p in sorted(glob.glob(os.path.join(d, f))):
                try:
                    out += load_docs(p)
                except (OSError, yaml.YAMLError):
                    pass
        if "resource" in op:
            out.append(op["resource"])
        return out

    for step in t["steps"]:
        spec, bindings = step, {}
        if "use" in step:
            for bd in ((step["use"].get("with") or {}).get("bindings") or []):
                if isinstance(bd.get("value"), str):
                    bindings[bd["name"]] = bd["value"]
            try:
                spec = load_docs(os.path.join(t["dir"], step["use"]["template"]))[0]["spec"]
            except (OSError, IndexError, KeyError):
                continue
        for op in ops(spec):
            for k, v in op.items():
                if not isinstance(v, dict):
                    continue
                if k == "script":
                    facts["scripts"].append(v.get("content", ""))
                    m = re.match(r"^\./(\S+\.sh)", v.get("content", "").strip())
                    if m and os.path.exists(os.path.join(t["dir"], m.group(1))):
                        with open(os.path.join(t["dir"], m.group(1))) as f:
                            facts["scripts"].append(f.read())
                elif k == "command":
                    facts["scripts"].append(" ".join([v.get("entrypoint", "")] + v.get("args", [])))
                elif k in ("assert", "error"):
                    facts["asserts"] += [(k, d) for d in files(t["dir"], v, bindings)
                                         if isinstance(d, dict)]
                elif k in ("apply", "create", "update", "patch"):
                    for d in files(t["dir"], v, bindings):
                        if isinstance(d, dict):
                            facts["docs"].append(d)
                            facts["applied"].add((d.get("kind"), (d.get("metadata") or {}).get("name")))
    return facts


def not_applicable(t):
    facts = test_facts(t)
    for reason, pred in NA_RULES:
        if pred(facts):
            return reason
    return None


# ---- failure causes ------------------------------------------------------------------------
# The class of a failing operation, from what it checked.

POLICY_KINDS = {"ClusterPolicy", "Policy"}
REPORT_KINDS = {"PolicyReport", "ClusterPolicyReport", "EphemeralReport", "ClusterEphemeralReport",
                "Report", "ClusterReport"}


def classify_doc(doc, op):
    kind = doc.get("kind")
    st = doc.get("status")
    if kind in POLICY_KINDS and isinstance(st, dict):
        if "conditions" in st or "ready" in st:
            return "policy status Ready"
        return "policy status (autogen, rulecount)"
    if kind == "Event":
        return "Events"
    if kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        return "webhook configuration"
    if kind in REPORT_KINDS:
        if doc.get("apiVersion", "").startswith("reports.kyverno.io"):
            return "Kyverno's internal reports (EphemeralReport)"
        if doc.get("apiVersion", "").startswith("openreports.io"):
            return "reports (openreports)"
        return "reports"
    return None


POLICY_API_KINDS = {"ClusterPolicy", "Policy", "PolicyException", "GlobalContextEntry"}


def classify_write(obj):
    """The class of a write whose outcome was not the expected one."""
    if has_cel(obj):
        return "CEL policies"
    if isinstance(obj, dict) and obj.get("kind") in POLICY_API_KINDS:
        return "policy validation at apply time"
    return "admission verdict"


def classify_script(content, workdir):
    """A script applying one file (`kubectl apply -f F`): the class of F's write."""
    m = re.search(r"kubectl\s+(?:apply|create)\s+-f\s+(\S+)", content or "")
    if not m:
        return None
    try:
        docs = load_docs(os.path.join(workdir, m.group(1)))
    except (OSError, yaml.YAMLError):
        return None
    return classify_write(docs[0]) if docs else None


def has_cel(doc):
    if not isinstance(doc, dict):
        return False
    if doc.get("apiVersion", "").startswith("policies.kyverno.io"):
        return True
    for r in ((doc.get("spec") or {}).get("rules") or []):
        if isinstance(r, dict) and "cel" in (r.get("validate") or {}):
            return True
    return False


# ---- a running test ---------------------------------------------------------------------------

WORDS = ["amber", "brisk", "cedar", "dune", "ember", "fjord", "gale", "heron", "iris", "juniper",
         "kestrel", "lark", "maple", "nectar", "onyx", "pine", "quartz", "raven", "sage", "tundra",
         "umber", "vale", "willow", "yarrow", "zephyr"]


class Run:
    def __init__(self, kube, t):
        self.kube = kube
        self.t = t
        self.dir = t["dir"]
        self.work = tempfile.mkdtemp(prefix="chainsaw-")
        shutil.copytree(self.dir, self.work, dirs_exist_ok=True)
        self.created = []  # (apiVersion, kind, name, namespace)
        self.exception_written = None  # monotonic time of the last PolicyException write
        self.failures = []  # (class, message)
        self.own_ns = None
        self.ns = t["spec"].get("namespace")
        if not self.ns:
            self.ns = "chainsaw-%s-%s-%04d" % (random.choice(WORDS), random.choice(WORDS),
                                               random.randrange(10000))
        self.bindings = {"namespace": self.ns, "values": {},
                         "test": {"metadata": {"name": t["name"]}}}

    def log(self, msg):
        if OPTS.verbose:
            with PRINT:
                print("     . %s: %s" % (self.t["name"], msg), flush=True)

    # -- resources --

    def resources(self, op, bindings, tmpl=True):
        docs = []
        if "file" in op:
            f = op["file"]
            if is_expr(f):
                f = evaluate(f[1:-1], None, bindings)
            paths = sorted(glob.glob(os.path.join(self.work, f)))
            if not paths:
                raise StepFailed("runner", "no file %s" % f)
            for p in paths:
                docs += load_docs(p)
        if "resource" in op:
            docs.append(op["resource"])
        if tmpl and op.get("template", True):
            docs = [template(d, bindings) for d in docs]
        return docs

    def target_ns(self, obj):
        md = obj.setdefault("metadata", {})
        if self.kube.namespaced(obj["apiVersion"], obj["kind"]):
            if not md.get("namespace"):
                md["namespace"] = self.ns
            return md["namespace"]
        return None

    def expect(self, op, obj, err, bindings):
        """None when OP's expectations accept the outcome ERR (message or None);
        else the failure message."""
        exps = op.get("expect")
        if not exps:
            return None if err is None else err
        b = dict(bindings)
        b["error"] = err
        handled = False
        for e in exps:
            if "match" in e and match(e["match"], obj, b):
                continue
            handled = True
            errs = match(e.get("check") or {}, obj, b)
            if errs:
                return "expect check failed: %s (error: %s)" % ("; ".join(errs), err)
        if not handled and err is not None:
            return err
        return None

    def write_one(self, verb, obj):
        """Writes OBJ (VERB: create, apply, patch or update); raises KubeError."""
        ns = self.target_ns(obj)
        name = obj["metadata"].get("name")
        if verb == "create":
            self.kube.create(obj, ns)
            self.created.append((obj["apiVersion"], obj["kind"], name, ns))
        elif verb == "apply":
            try:
                self.kube.get(obj["apiVersion"], obj["kind"], name, ns)
                exists = True
            except KubeError as e:
                if e.code != 404 or isinstance(e, NoKindMatch):
                    raise
                exists = False
            if exists:
                self.kube.merge_patch(obj, ns)
            else:
                self.kube.create(obj, ns)
                self.created.append((obj["apiVersion"], obj["kind"], name, ns))
        elif verb == "patch":
            self.kube.merge_patch(obj, ns)
        elif verb == "update":
            cur = self.kube.get(obj["apiVersion"], obj["kind"], name, ns)
            obj["metadata"]["resourceVersion"] = cur["metadata"]["resourceVersion"]
            self.kube.update(obj, ns)

    def op_write(self, verb, op, bindings):
        timeout = duration(op.get("timeout"), OPTS.apply_timeout)
        for obj in self.resources(op, bindings):
            err = None
            end = time.monotonic() + timeout
            while True:
                try:
                    self.write_one(verb, obj)
                except NoKindMatch as e:
                    # discovery was refreshed (Kube.mapping): the API server
                    # serves a new CRD's kind a little after it is Established
                    if time.monotonic() < end:
                        self.log("%s %s: %s, retrying" % (verb, obj.get("kind"), e))
                        time.sleep(OPTS.poll)
                        continue
                    err = str(e)
                except KubeError as e:
                    err = str(e)
                break
            if obj.get("kind") == "PolicyException" and err is None:
                self.exception_written = time.monotonic()
            why = self.expect(op, obj, err, bindings)
            if why is not None:
                cls = classify_write(obj)
                if (cls == "admission verdict" and self.exception_written is not None and
                        time.monotonic() - self.exception_written < 2):
                    cls = "admission verdict just after a PolicyException was written"
                raise StepFailed(cls, "%s %s/%s: %s" % (verb, obj.get("kind"),
                                                        obj.get("metadata", {}).get("name"), why))

    def wait_gone(self, api_version, kind, name, ns, timeout):
        end = time.monotonic() + timeout
        while True:
            try:
                self.kube.get(api_version, kind, name, ns)
            except KubeError as e:
                if e.code == 404:
                    return True
                raise
            if time.monotonic() > end:
                return False
            time.sleep(OPTS.poll)

    def op_delete(self, op, bindings):
        if "ref" in op:
            ref = template(op["ref"], bindings)
            objs = [{"apiVersion": ref["apiVersion"], "kind": ref["kind"],
                     "metadata": {k: ref[k] for k in ("name", "namespace", "labels") if k in ref}}]
        else:
            objs = self.resources(op, bindings)
        for obj in objs:
            err = None
            try:
                ns = self.target_ns(obj)
                name = obj["metadata"].get("name")
                names = [name] if name else [
                    o["metadata"]["name"] for o in self.kube.list(
                        obj["apiVersion"], obj["kind"], ns, obj["metadata"].get("labels"))]
                for n in names:
                    try:
                        self.kube.delete(obj["apiVersion"], obj["kind"], n, ns)
                    except KubeError as e:
                        if e.code != 404:
                            raise
                    if obj["kind"] == "Namespace":
                        self.kube.finalize_namespace(n)
                    if not self.wait_gone(obj["apiVersion"], obj["kind"], n, ns,
                                          duration(op.get("timeout"), OPTS.assert_timeout)):
                        raise KubeError(0, "%s/%s still exists" % (obj["kind"], n))
            except KubeError as e:
                err = str(e)
            why = self.expect(op, obj, err, bindings)
            if why is not None:
                raise StepFailed(None, "delete %s/%s: %s" % (obj["kind"], obj["metadata"].get("name"), why))

    def candidates(self, doc, bindings):
        md = doc.get("metadata") or {}
        name = md.get("name")
        if is_expr(name):
            name = evaluate(name[1:-1], None, bindings)
        ns = md.get("namespace")
        if is_expr(ns):
            ns = evaluate(ns[1:-1], None, bindings)
        if self.kube.namespaced(doc["apiVersion"], doc["kind"]):
            ns = ns or self.ns
        else:
            ns = None
        if name:
            try:
                return [self.kube.get(doc["apiVersion"], doc["kind"], name, ns)]
            except KubeError as e:
                if e.code == 404:
                    return []
                raise
        labels = md.get("labels")
        if not isinstance(labels, dict) or any(is_expr(k) or is_expr(v) or not isinstance(v, str)
                                               for k, v in labels.items()):
            labels = None
        return self.kube.list(doc["apiVersion"], doc["kind"], ns, labels)

    def op_check(self, verb, op, bindings):
        docs = self.resources(op, bindings, tmpl=False)
        for doc in docs:
            kind = doc.get("kind")
            t = OPTS.report_timeout if kind in REPORT_KINDS or kind == "Event" else OPTS.assert_timeout
            t = min(duration(op.get("timeout"), t), t)
            end = time.monotonic() + t
            while True:
                why = None
                try:
                    cands = self.candidates(doc, bindings)
                    errs = []
                    hit = False
                    for c in cands:
                        e = match(doc, c, bindings)
                        if not e:
                            hit = True
                            break
                        errs.append(e)
                    if verb == "assert" and not hit:
                        why = ("no %s found" % kind if not cands else
                               "; ".join(min(errs, key=len)[:4]))
                    elif verb == "error" and hit:
                        why = "a %s matches (it must not)" % kind
                except KubeError as e:
                    if verb == "error" and e.code == 404:
                        why = None  # the kind does not exist: nothing matches
                    else:
                        why = str(e)
                except AssertionError_ as e:
                    why = str(e)
                if why is None:
                    break
                if time.monotonic() > end:
                    name = (doc.get("metadata") or {}).get("name", "")
                    if is_expr(name):
                        name = evaluate(name[1:-1], None, bindings)
                    raise StepFailed(classify_doc(doc, verb), "%s %s/%s: %s" % (verb, kind, name, why))
                time.sleep(OPTS.poll)

    def op_exec(self, verb, op, bindings):
        env = dict(os.environ)
        env["NAMESPACE"] = self.ns
        env["KUBECONFIG"] = OPTS.script_kubeconfig
        if verb == "script":
            argv = ["bash", "-c", op.get("content", "")]
        else:
            argv = [op["entrypoint"]] + [str(a) for a in op.get("args", [])]
        timeout = duration(op.get("timeout"), OPTS.script_timeout)
        try:
            p = subprocess.run(argv, cwd=self.work, env=env, capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
            rc, out, err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            rc, out, err = -1, e.stdout or "", (e.stderr or "") + "\ntimed out"
            if isinstance(out, bytes):
                out = out.decode(errors="replace")
            if isinstance(err, bytes):
                err = err.decode(errors="replace")
        b = dict(bindings)
        b["stdout"], b["stderr"] = out, err
        b["error"] = None if rc == 0 else "exit status %d" % rc
        cls = classify_script(op.get("content") if verb == "script" else " ".join(argv), self.work)
        if op.get("check"):
            errs = match(op["check"], None, b)
            if errs:
                raise StepFailed(cls, "%s check failed: %s | stdout: %s | stderr: %s" % (
                    verb, "; ".join(errs), out.strip()[-300:], err.strip()[-300:]))
        elif rc != 0:
            raise StepFailed(cls, "%s exited %d | stdout: %s | stderr: %s" % (
                verb, rc, out.strip()[-300:], err.strip()[-300:]))

    def op_wait(self, op, bindings):
        ref = template(op, bindings)
        ns = ref.get("namespace") or (self.ns if self.kube.namespaced(ref["apiVersion"], ref["kind"]) else None)
        timeout = min(duration(ref.get("timeout"), OPTS.assert_timeout), OPTS.assert_timeout)
        cond = (ref.get("for") or {}).get("condition")
        end = time.monotonic() + timeout
        while True:
            try:
                objs = ([self.kube.get(ref["apiVersion"], ref["kind"], ref["name"], ns)]
                        if ref.get("name") else self.kube.list(ref["apiVersion"], ref["kind"], ns))
            except KubeError as e:
                objs = [] if e.code == 404 else None
            if "deletion" in (ref.get("for") or {}):
                if objs == []:
                    return
            elif cond and objs:
                want = str(cond.get("value", "true")).lower()
                if all(any(c.get("type") == cond["name"] and str(c.get("status")).lower() == want
                           for c in (o.get("status") or {}).get("conditions") or []) for o in objs):
                    return
            if time.monotonic() > end:
                raise StepFailed(None, "wait %s/%s: not within %.0fs" % (ref["kind"], ref.get("name"), timeout))
            time.sleep(OPTS.poll)

    def run_op(self, op, bindings):
        b = bindings
        for k, v in op.items():
            if k == "bindings":
                continue
            if k in ("apply", "create", "update", "patch"):
                self.op_write(k, v, b)
            elif k == "delete":
                self.op_delete(v, b)
            elif k in ("assert", "error"):
                self.op_check(k, v, b)
            elif k in ("script", "command"):
                self.op_exec(k, v, b)
            elif k == "sleep":
                time.sleep(duration(v.get("duration"), 0))
            elif k == "wait":
                self.op_wait(v, b)
            elif k in ("describe", "events", "podLogs", "get", "description"):
                pass  # diagnostics chainsaw prints on failure
            else:
                raise StepFailed("runner", "operation %s not supported" % k)

    def run_block(self, ops, bindings, keep_going):
        ok = True
        for op in ops or []:
            b = dict(bindings)
            for bd in op.get("bindings") or []:
                v = bd.get("value")
                b[bd["name"]] = evaluate(v[1:-1], None, b) if is_expr(v) else v
            try:
                self.run_op(op, b)
            except StepFailed as e:
                self.failures.append((e.cls, str(e)))
                ok = False
            except (AssertionError_, KubeError, KeyError, TypeError, ValueError) as e:
                self.failures.append(("runner", "%s: %s" % (type(e).__name__, e)))
                ok = False
            if not ok and not keep_going:
                return False
        return ok

    def run_step(self, step):
        spec, bindings = step, dict(self.bindings)
        for bd in step.get("bindings") or []:
            v = bd.get("value")
            bindings[bd["name"]] = evaluate(v[1:-1], None, bindings) if is_expr(v) else v
        if "use" in step:
            tpl = load_docs(os.path.join(self.dir, step["use"]["template"]))[0]
            spec = tpl["spec"]
            for bd in ((step["use"].get("with") or {}).get("bindings") or []):
                v = bd.get("value")
                bindings[bd["name"]] = evaluate(v[1:-1], None, bindings) if is_expr(v) else v
        ok = self.run_block(spec.get("try"), bindings, OPTS.keep_going)
        if not ok:
            self.run_block(spec.get("catch"), bindings, True)
        self.run_block(spec.get("finally"), bindings, True)
        self.run_block(spec.get("cleanup"), bindings, True)
        return ok

    # Kinds a script may create that would outlive the test and judge the next
    # ones: what a test leaves of them is deleted after it (tests run one at
    # a time only: a concurrent test's neighbours are running).
    LEAKS = [("kyverno.io/v1", "ClusterPolicy"), ("kyverno.io/v1", "Policy"),
             ("kyverno.io/v2", "PolicyException"), ("kyverno.io/v2alpha1", "GlobalContextEntry"),
             ("v1", "Namespace")]

    def snapshot(self):
        seen = set()
        for api_version, kind in self.LEAKS:
            try:
                for o in self.kube.list(api_version, kind):
                    md = o["metadata"]
                    seen.add((api_version, kind, md["name"], md.get("namespace")))
            except KubeError:
                pass
        return seen

    def cleanup(self):
        for api_version, kind, name, ns in reversed(self.created):
            try:
                self.kube.delete(api_version, kind, name, ns)
                if kind == "Namespace":
                    self.kube.finalize_namespace(name)
                self.wait_gone(api_version, kind, name, ns, OPTS.cleanup_timeout)
            except KubeError:
                pass
        if self.own_ns:
            try:
                self.kube.delete("v1", "Namespace", self.own_ns)
            except KubeError:
                pass
            self.kube.finalize_namespace(self.own_ns)
        if self.before is not None:
            for api_version, kind, name, ns in sorted(self.snapshot() - self.before,
                                                      key=lambda o: o[1] == "Namespace"):
                try:
                    self.kube.delete(api_version, kind, name, ns)
                except KubeError:
                    pass
                if kind == "Namespace":
                    self.kube.finalize_namespace(name)
        shutil.rmtree(self.work, ignore_errors=True)

    def create_namespace(self):
        """Creates the test's namespace, as chainsaw does before the steps.

        A policy the previous test deleted may still be held by the webhook
        for a moment (it denies what the next test creates first, its
        namespace): a webhook denial is tried again, for a few seconds."""
        deadline = time.monotonic() + 10
        while True:
            try:
                self.kube.create({"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": self.ns}})
                return
            except KubeError as e:
                if "admission webhook" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def run(self):
        self.before = None if self.t.get("concurrent", True) else self.snapshot()
        try:
            try:
                self.kube.get("v1", "Namespace", self.ns)
            except KubeError as e:
                if e.code != 404:
                    raise
                self.create_namespace()
                self.own_ns = self.ns
            for step in self.t["steps"]:
                if not self.run_step(step) and not OPTS.keep_going:
                    break
        except (KubeError, OSError, yaml.YAMLError, AssertionError_, KeyError) as e:
            self.failures.append(("runner", "%s: %s" % (type(e).__name__, e)))
        finally:
            self.cleanup()
        return self.failures


# ---- discovery of tests, the run -------------------------------------------------------------


def load_tests(root, folders, only):
    tests = []
    for folder in folders:
        if only and not any(folder == o.rstrip("/") or folder.startswith(o.rstrip("/") + "/") for o in only):
            continue
        path = os.path.join(root, folder, "chainsaw-test.yaml")
        try:
            docs = [d for d in load_docs(path) if d.get("kind") == "Test"]
        except (OSError, yaml.YAMLError) as e:
            tests.append({"folder": folder, "error": str(e)})
            continue
        for d in docs:
            tests.append({"folder": folder, "name": d["metadata"]["name"], "dir": os.path.dirname(path),
                          "spec": d["spec"], "steps": d["spec"].get("steps", []),
                          "concurrent": d["spec"].get("concurrent", True)})
    return tests


def install_config(kube):
    """Settings of the installation Kyverno's e2e tests run against.

    Kyverno's CI installs it with every Event kind written (the chart's
    omitEvents list emptied): tests assert PolicySkipped Events, which a
    default installation omits. gavel reads the same setting from its
    ConfigMap (key omitEvents)."""
    if not OPTS.gavel_configmap:
        return
    ns, _, name = OPTS.gavel_configmap.partition("/")
    try:
        kube.merge_patch({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                          "data": {"omitEvents": ""}}, ns)
    except KubeError as e:
        print("chainsaw: ConfigMap %s not patched: %s" % (OPTS.gavel_configmap, e), flush=True)


def run_test(kube, t):
    start = time.monotonic()
    if "error" in t:
        res = ("FAIL", "runner", t["error"])
    else:
        reason = not_applicable(t)
        if reason:
            res = ("n/a", None, reason)
        else:
            try:
                fails = Run(kube, t).run()
            except Exception as e:  # a runner bug: reported, the run goes on
                fails = [("runner", "%s: %s" % (type(e).__name__, e))]
            if not fails:
                res = ("ok", None, "")
            else:
                cls = fails[0][0] or "other"
                extra = ""
                if OPTS.keep_going and len(fails) > 1:
                    extra = " [then: %s]" % "; ".join(
                        "%s: %s" % (c or "other", m[:160]) for c, m in fails[1:4])
                res = ("FAIL", cls, fails[0][1][:400] + extra)
    el = time.monotonic() - start
    with PRINT:
        st, cls, msg = res
        if st == "ok":
            print("ok   %s (%.1fs)" % (t["folder"], el), flush=True)
        elif st == "n/a":
            print("n/a  %s: %s" % (t["folder"], msg), flush=True)
        else:
            print("FAIL %s (%.1fs) [%s]: %s" % (t["folder"], el, cls, msg), flush=True)
    return t["folder"], res


def main():
    global OPTS
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("only", nargs="*")
    ap.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    ap.add_argument("--script-kubeconfig", help="kubeconfig for scripts (default --kubeconfig)")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--assert-timeout", type=float, default=4)
    ap.add_argument("--apply-timeout", type=float, default=10)
    ap.add_argument("--report-timeout", type=float, default=15)
    ap.add_argument("--script-timeout", type=float, default=30)
    ap.add_argument("--cleanup-timeout", type=float, default=5)
    ap.add_argument("--poll", type=float, default=0.15)
    ap.add_argument("--keep-going", action="store_true")
    ap.add_argument("--gavel-configmap", default="gavel/gavel",
                    help="NAMESPACE/NAME of gavel's ConfigMap, set as Kyverno's e2e "
                    "installation (\"\": left alone)")
    ap.add_argument("--verbose", action="store_true")
    OPTS = ap.parse_args()
    OPTS.script_kubeconfig = os.path.abspath(OPTS.script_kubeconfig or OPTS.kubeconfig)
    with open(os.path.join(OPTS.root, "tests.txt")) as f:
        folders = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    tests = load_tests(OPTS.root, folders, OPTS.only)
    kube = Kube(OPTS.kubeconfig)
    install_config(kube)
    start = time.monotonic()
    results = []
    for t in tests:
        if not t.get("concurrent", True) or "error" in t:
            results.append(run_test(kube, t))
    # Side by side only within a top-level folder: Kyverno's CI runs each
    # folder in a cluster of its own, so one folder's cluster-wide policies
    # never judge another's objects.
    groups = collections.OrderedDict()
    for t in tests:
        if t.get("concurrent", True) and "error" not in t:
            groups.setdefault(t["folder"].split("/")[0], []).append(t)
    with concurrent.futures.ThreadPoolExecutor(max_workers=OPTS.jobs) as pool:
        for group in groups.values():
            results += list(pool.map(lambda t: run_test(kube, t), group))
    el = time.monotonic() - start

    table = collections.OrderedDict()
    for folder in folders:
        table.setdefault(folder.split("/")[0], [0, 0, 0])
    causes, reasons = collections.Counter(), collections.Counter()
    for folder, (st, cls, msg) in results:
        row = table.setdefault(folder.split("/")[0], [0, 0, 0])
        row[{"ok": 0, "FAIL": 1, "n/a": 2}[st]] += 1
        if st == "FAIL":
            causes[cls] += 1
        elif st == "n/a":
            reasons[msg] += 1
    print("\n%-26s %7s %7s %7s" % ("folder", "passed", "failed", "n/a"))
    tot = [0, 0, 0]
    for k, row in table.items():
        if sum(row):
            print("%-26s %7d %7d %7d" % (k, *row))
            tot = [a + b for a, b in zip(tot, row)]
    print("%-26s %7d %7d %7d" % ("total", *tot))
    if causes:
        print("\nfailures by cause:")
        for c, n in causes.most_common():
            print("  %4d  %s" % (n, c))
    if reasons:
        print("\nnot applicable:")
        for c, n in reasons.most_common():
            print("  %4d  %s" % (n, c))
    appl = tot[0] + tot[1]
    print("\nrun time %.0f s; %d of %d applicable tests passed (%.1f%%), %d not applicable" % (
        el, tot[0], appl, 100.0 * tot[0] / appl if appl else 0, tot[2]))
    print("%d passed, %d failed" % (tot[0], tot[1]))
    return 0 if tot[1] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
