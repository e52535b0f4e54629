"""Chainsaw's assertion trees (kyverno-json semantics) and its JMESPath bindings.

An assertion tree is a YAML document matched against an actual value:
  - a map matches when each of its keys matches: a plain key names a field
    that must exist; a key in parentheses, `(expr)`, is a JMESPath expression
    evaluated on the actual value and its result is matched against the
    key's value; a `~` prefix (`~.(expr)`, `~name.(expr)`, `~field`) iterates
    the projected array (or map) and matches each element (the index, or
    map key, is bound to `$name` when a name is given); a `->name` suffix
    binds the projection to `$name` for the subtree;
  - an array matches an array of the same length, element by element;
  - a scalar matches an equal value (numbers by value); a string scalar in
    parentheses is a JMESPath expression evaluated on the actual value, and
    its result must equal the actual value.
Bindings (`$namespace`, `$error`, `$stdout`, `$name`...) are substituted into
expressions as JSON literals before evaluation.
"""

import json
import re

import jmespath
import jmespath.functions


class AssertionError_(Exception):
    pass


class _Functions(jmespath.functions.Functions):
    """The few functions of chainsaw's JMESPath that the standard one lacks."""

    @jmespath.functions.signature({"types": ["string"]})
    def _func_trim_space(self, s):
        return s.strip()

    @jmespath.functions.signature({"types": ["string"]}, {"types": ["string"]})
    def _func_split(self, s, sep):
        return s.split(sep)

    @jmespath.functions.signature({"types": ["string"]})
    def _func_to_lower(self, s):
        return s.lower()

    @jmespath.functions.signature({"types": ["string"]})
    def _func_to_upper(self, s):
        return s.upper()

    @jmespath.functions.signature({"types": []})
    def _func_x_k8s_version(self, *a):
        raise jmespath.exceptions.JMESPathError("x_k8s functions are not supported")


_OPTIONS = jmespath.Options(custom_functions=_Functions())


def is_expr(s):
    return isinstance(s, str) and len(s) >= 2 and s[0] == "(" and s[-1] == ")"


def substitute(expr, bindings):
    """EXPR with each `$name` outside quotes replaced by its binding as a JSON literal."""
    out = []
    i, n = 0, len(expr)
    while i < n:
        c = expr[i]
        if c in "'\"`":
            j = i + 1
            while j < n and expr[j] != c:
                if expr[j] == "\\":
                    j += 1
                j += 1
            out.append(expr[i:j + 1])
            i = j + 1
        elif c == "$" and i + 1 < n and (expr[i + 1].isalpha() or expr[i + 1] == "_"):
            j = i + 1
            while j < n and (expr[j].isalnum() or expr[j] == "_"):
                j += 1
            name = expr[i + 1:j]
            if name not in bindings:
                raise AssertionError_("variable not defined: $" + name)
            lit = json.dumps(bindings[name]).replace("`", "\\`")
            out.append("`" + lit + "`")
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def evaluate(expr, value, bindings):
    """Evaluates the JMESPath EXPR (without its parentheses) on VALUE."""
    try:
        return jmespath.search(substitute(expr, bindings), value, options=_OPTIONS)
    except jmespath.exceptions.JMESPathError as e:
        raise AssertionError_("%s: %s" % (expr, e))


def template(node, bindings):
    """A resource with its `(expr)` string values evaluated on nothing.

    Keys stay as written, as chainsaw leaves them: in a policy, `(image)` is a
    conditional anchor, not an expression."""
    if isinstance(node, dict):
        return {k: template(v, bindings) for k, v in node.items()}
    if isinstance(node, list):
        return [template(v, bindings) for v in node]
    if is_expr(node):
        return evaluate(node[1:-1], None, bindings)
    return node


_KEY = re.compile(r"^(~(\w*)\.?)?(.*?)(->(\w+))?$", re.S)


def _parse_key(k):
    m = _KEY.match(str(k))
    foreach = m.group(1) is not None
    name = m.group(2) or None
    body = m.group(3)
    return foreach, name, body, m.group(5)


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _equal(a, b):
    if _num(a) and _num(b):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return type(a) == type(b) and a == b  # noqa: E721 (True is not 1)


def match(expected, actual, bindings, path="$"):
    """The list of mismatches (strings) of ACTUAL against the tree EXPECTED."""
    errs = []
    if isinstance(expected, dict):
        for k, v in expected.items():
            foreach, name, body, bind = _parse_key(k)
            p = "%s.%s" % (path, k)
            if is_expr(body):
                got = evaluate(body[1:-1], actual, bindings)
            elif isinstance(actual, dict) and body in actual:
                got = actual[body]
            else:
                errs.append("%s: field not found in the input object" % p)
                continue
            b = bindings
            if bind:
                b = dict(bindings)
                b[bind] = got
            if foreach:
                if isinstance(got, list):
                    items = list(enumerate(got))
                elif isinstance(got, dict):
                    items = list(got.items())
                else:
                    errs.append("%s: expected a slice or a map, got %s" % (p, type(got).__name__))
                    continue
                for i, item in items:
                    bb = b
                    if name:
                        bb = dict(b)
                        bb[name] = i
                    errs += match(v, item, bb, "%s[%s]" % (p, i))
            else:
                errs += match(v, got, b, p)
        return errs
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return ["%s: expected an array, got %s" % (path, json.dumps(actual)[:80])]
        if len(actual) != len(expected):
            return ["%s: expected %d elements, got %d" % (path, len(expected), len(actual))]
        for i, (e, a) in enumerate(zip(expected, actual)):
            errs += match(e, a, bindings, "%s[%d]" % (path, i))
        return errs
    want = expected
    if is_expr(expected):
        want = evaluate(expected[1:-1], actual, bindings)
    if not _equal(want, actual):
        return ["%s: expected %s, got %s" % (path, json.dumps(want)[:120], json.dumps(actual)[:120])]
    return []
