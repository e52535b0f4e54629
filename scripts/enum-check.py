#!/usr/bin/env python3
"""enum-check.py - every enumerated field of gavel's policy CRDs is checked.

For each field with an `enum` in the schemas of manifests/crds (ClusterPolicy
and Policy), builds a small valid policy, puts a value outside the enum at
that field (a typo of the first allowed value), and runs `gavel apply` on it:
the policy must be rejected (exit 2) with the JSON pointer of the field and
the API server's "Unsupported value" message. Each allowed value is also
tried and must not be rejected for that field. New enum fields in the CRDs
are covered without touching this script.

    python3 scripts/enum-check.py [GAVEL]

Prints one line per check and "N passed, N failed".
"""
import json
import os
import subprocess
import sys
import tempfile

import yaml

GAVEL = sys.argv[1] if len(sys.argv) > 1 else "./gavel"
CRDS = ["manifests/crds/kyverno.io_clusterpolicies.yaml", "manifests/crds/kyverno.io_policies.yaml"]

BASE_RULE = {
    "name": "r",
    "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
    "validate": {"message": "m", "pattern": {"metadata": {"name": "?*"}}},
}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def enums(schema, path, out):
    """Collects (path, values) for every enum; path items are keys or [] for array items."""
    if not isinstance(schema, dict):
        return
    if "enum" in schema:
        out.append((path, schema["enum"]))
    for k, sub in schema.get("properties", {}).items():
        enums(sub, path + [k], out)
    if "items" in schema:
        enums(schema["items"], path + [[]], out)


def base_policy(kind):
    doc = {"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": {"name": "p"},
           "spec": {"background": False, "rules": [json.loads(json.dumps(BASE_RULE))]}}
    if kind == "Policy":
        doc["metadata"]["namespace"] = "default"
    return doc


def body_for(path):
    """The validate body a path needs (podSecurity fields need a podSecurity body)."""
    if "podSecurity" in path:
        return {"message": "m", "podSecurity": {"level": "baseline", "version": "latest"}}
    return None


def put(doc, path, value):
    """Sets value at path in doc, creating objects and one-element arrays on the way."""
    cur = doc
    for i, k in enumerate(path):
        last = i == len(path) - 1
        nxt = path[i + 1] if not last else None
        if k == []:
            if not cur:
                cur.append([] if nxt == [] else {})
            if last:
                cur[0] = value
                return
            cur = cur[0]
            continue
        if last:
            cur[k] = value
            return
        if k not in cur or not isinstance(cur[k], (dict, list)):
            cur[k] = [] if nxt == [] else {}
        cur = cur[k]


def pointer(path):
    return "/" + "/".join("0" if k == [] else k for k in path)


def run(doc):
    with tempfile.TemporaryDirectory() as d:
        pf, rf = os.path.join(d, "p.yaml"), os.path.join(d, "r.yaml")
        with open(pf, "w") as f:
            yaml.safe_dump(doc, f)
        with open(rf, "w") as f:
            yaml.safe_dump(POD, f)
        p = subprocess.run([GAVEL, "apply", pf, "--resource", rf], capture_output=True,
                           text=True, timeout=60)
        return p.returncode, p.stderr


def main():
    passed = failed = 0
    for crd in CRDS:
        with open(crd) as f:
            d = yaml.safe_load(f)
        kind = d["spec"]["names"]["kind"]
        found = []
        enums(d["spec"]["versions"][0]["schema"]["openAPIV3Schema"], [], found)
        for path, values in found:
            if kind == "Policy" and path[:2] == ["spec", "validationFailureActionOverrides"]:
                continue  # a Policy may not have them at all (checked elsewhere)
            # a value that differs from every allowed one by case or a letter
            bad = values[0][:-1] + ("X" if values[0][-1] != "X" else "Y")
            for label, value, want_reject in [("typo " + bad, bad, True)] + \
                    [("allowed " + v, v, False) for v in values]:
                doc = base_policy(kind)
                body = body_for(path)
                if body:
                    doc["spec"]["rules"][0]["validate"] = body
                if path[:4] in (["spec", "rules", [], "match"], ["spec", "rules", [], "exclude"]):
                    # the block takes the shape of the path, with a kind to select
                    doc["spec"]["rules"][0][path[3]] = {}
                    put(doc, path, value)
                    put(doc, path[:path.index("resources") + 1] + ["kinds"], ["Pod"])
                    if path[3] == "exclude":
                        doc["spec"]["rules"][0]["match"] = BASE_RULE["match"]
                else:
                    put(doc, path, value)
                code, err = run(doc)
                ptr = pointer(path)
                rejected_here = code == 2 and ptr + ": Unsupported value" in err
                ok = rejected_here if want_reject else not (ptr + ":") in err
                name = "%s %s %s" % (kind, ".".join("[]" if k == [] else k for k in path), label)
                if ok:
                    passed += 1
                    print("ok   " + name)
                else:
                    failed += 1
                    print("FAIL " + name + " (exit %d): %s" % (code, err.strip()[:300]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
