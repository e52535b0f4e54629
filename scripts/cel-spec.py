#!/usr/bin/env python3
"""Converts the cel-spec conformance files (protobuf text format) into gavel's
case lines for `gavel cel conformance`, and summarises the results.

    cel-spec.py convert DIR/tests/simple/testdata OUTDIR
        writes OUTDIR/<file>.jsonl (the relevant tests) and OUTDIR/<file>.skip
        (relevant tests the harness cannot express, one "name<TAB>reason" a line)

Which tests are relevant follows ../shared/conformance/cel-spec/README.md:
the tests without protobuf message types (timestamps and durations allowed)
of the files Kubernetes and Kyverno run, and the JSON-type tests
(google.protobuf.Value/Struct/ListValue/NullValue) of dynamic.textproto.
The split is the README's text heuristic over each test block.
"""
import json
import math
import os
import re
import sys

RELEVANT = [
    "basic", "bindings_ext", "comparisons", "conversions", "dynamic", "encoders_ext",
    "fields", "fp_math", "integer_math", "lists", "logic", "macros", "macros2",
    "math_ext", "network_ext", "optionals", "parse", "string", "string_ext",
    "timestamps", "type_deduction",
]
JSON_TYPES = {"google.protobuf.Value", "google.protobuf.Struct", "google.protobuf.ListValue",
              "google.protobuf.NullValue"}
DYNAMIC_SECTIONS = {"list", "struct", "value_null", "value_number", "value_string", "value_bool",
                    "value_struct", "value_list"}
TIME_TYPES = {"google.protobuf.Timestamp", "google.protobuf.Duration"}


# ---- protobuf text format ----

class Msg:
    def __init__(self, start):
        self.fields = []  # (name, value) in order
        self.start = start
        self.end = start

    def get(self, name, default=None):
        for k, v in self.fields:
            if k == name:
                return v
        return default

    def all(self, name):
        return [v for k, v in self.fields if k == name]


TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<ext>\[[A-Za-z0-9_./]+\])
  | (?P<num>-?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fFuU]?)
  | (?P<ident>-?[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[{}\[\]:,;<>])
""", re.X)

ESC = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39, '"': 34,
       "?": 63}


def unquote(s):
    """Text-format string literal to bytes."""
    body = s[1:-1]
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in ESC:
            out.append(ESC[e])
            i += 2
        elif e in "01234567":
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        elif e in "xX":
            j = i + 2
            while j < len(body) and j < i + 4 and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16))
            i = j
        elif e == "u":
            out += chr(int(body[i + 2:i + 6], 16)).encode("utf-8", "surrogatepass")
            i += 6
        elif e == "U":
            out += chr(int(body[i + 2:i + 10], 16)).encode("utf-8", "surrogatepass")
            i += 10
        else:
            raise ValueError("bad escape \\" + e)
    return bytes(out)


class Parser:
    def __init__(self, text):
        self.text = text
        self.toks = []
        pos = 0
        while pos < len(text):
            m = TOKEN.match(text, pos)
            if not m:
                raise ValueError("textproto: cannot read at %d: %r" % (pos, text[pos:pos + 20]))
            if m.lastgroup != "ws":
                self.toks.append((m.lastgroup, m.group(), m.start(), m.end()))
            pos = m.end()
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None, len(self.text), len(self.text))

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def message(self, close, start):
        msg = Msg(start)
        while True:
            kind, val, s, e = self.peek()
            if kind is None or val == close:
                if close:
                    self.take()
                msg.end = e
                return msg
            if val in (",", ";"):
                self.take()
                continue
            self.take()
            name = val
            if self.peek()[1] == ":":
                self.take()
            msg.fields += [(name, v) for v in self.value()]

    def value(self):
        kind, val, s, e = self.peek()
        if val in ("{", "<"):
            self.take()
            return [self.message("}" if val == "{" else ">", s)]
        if val == "[":
            self.take()
            vals = []
            while self.peek()[1] != "]":
                if self.peek()[1] == ",":
                    self.take()
                    continue
                vals += self.value()
            self.take()
            return vals
        self.take()
        if kind == "str":
            b = unquote(val)
            while self.peek()[0] == "str":
                b += unquote(self.take()[1])
            return [b]
        if kind == "num":
            v = val.rstrip("fFuU")
            if re.fullmatch(r"-?0[xX][0-9a-fA-F]+", v):
                return [int(v, 16)]
            if re.fullmatch(r"-?\d+", v):
                return [int(v)]
            return [float(v)]
        if val in ("inf", "infinity"):
            return [math.inf]
        if val in ("-inf", "-infinity"):
            return [-math.inf]
        if val == "nan":
            return [math.nan]
        if val == "true":
            return [True]
        if val == "false":
            return [False]
        return [val]  # enum names


def parse_file(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return Parser(text).message(None, 0), text


# ---- values as CEL text ----

class Unsupported(Exception):
    pass


def cel_string(b):
    s = b.decode("utf-8")
    out = '"'
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out += '\\"'
        elif ch == "\\":
            out += "\\\\"
        elif o < 0x20 or o == 0x7F:
            out += "\\x%02x" % o
        else:
            out += ch
    return out + '"'


def cel_bytes(b):
    return 'b"' + "".join("\\x%02x" % c for c in b) + '"'


def cel_double(d):
    if math.isnan(d):
        return 'double("NaN")'
    if math.isinf(d):
        return 'double("Infinity")' if d > 0 else 'double("-Infinity")'
    r = repr(float(d))
    if "e" in r and "." not in r.split("e")[0]:
        r = r.replace("e", ".0e", 1)
    return r


def rfc3339(sec, nanos):
    import datetime
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=sec)
    s = t.strftime("%Y-%m-%dT%H:%M:%S")
    s = "%04d%s" % (t.year, s[4:]) if t.year < 1000 else s
    if nanos:
        s += ("." + "%09d" % nanos).rstrip("0")
    return s + "Z"


def json_value(m):
    """google.protobuf.Value (and friends) to CEL text."""
    if m.get("null_value") is not None:
        return "null"
    if m.get("number_value") is not None:
        return cel_double(float(m.get("number_value")))
    if m.get("string_value") is not None:
        return cel_string(m.get("string_value"))
    if m.get("bool_value") is not None:
        return "true" if m.get("bool_value") else "false"
    if m.get("struct_value") is not None:
        return struct_value(m.get("struct_value"))
    if m.get("list_value") is not None:
        return "[" + ", ".join(json_value(v) for v in m.get("list_value").all("values")) + "]"
    return "null"


def struct_value(m):
    parts = []
    for f in m.all("fields"):
        parts.append(cel_string(f.get("key")) + ": " + json_value(f.get("value")))
    return "{" + ", ".join(parts) + "}"


def object_value(m):
    for name, v in m.fields:
        if not name.startswith("["):
            raise Unsupported("object_value " + name)
        t = name[1:-1].split("/")[-1]
        if t == "google.protobuf.Duration":
            ns = int(v.get("seconds", 0)) * 1000000000 + int(v.get("nanos", 0))
            return 'duration("%dns")' % ns
        if t == "google.protobuf.Timestamp":
            return 'timestamp("%s")' % rfc3339(int(v.get("seconds", 0)), int(v.get("nanos", 0)))
        if t == "google.protobuf.Value":
            return json_value(v)
        if t == "google.protobuf.Struct":
            return struct_value(v)
        if t == "google.protobuf.ListValue":
            return "[" + ", ".join(json_value(x) for x in v.all("values")) + "]"
        raise Unsupported("message " + t)
    raise Unsupported("empty object_value")


def cel_value(m):
    for name, v in m.fields:
        if name == "null_value":
            return "null"
        if name == "bool_value":
            return "true" if v else "false"
        if name == "int64_value":
            return str(int(v))
        if name == "uint64_value":
            return "%du" % int(v)
        if name == "double_value":
            return cel_double(float(v))
        if name == "string_value":
            return cel_string(v)
        if name == "bytes_value":
            return cel_bytes(v)
        if name == "list_value":
            return "[" + ", ".join(cel_value(x) for x in v.all("values")) + "]"
        if name == "map_value":
            return "{" + ", ".join(cel_value(e.get("key")) + ": " + cel_value(e.get("value"))
                                   for e in v.all("entries")) + "}"
        if name == "type_value":
            return v.decode() if isinstance(v, bytes) else v
        if name == "object_value":
            return object_value(v)
        raise Unsupported(name)
    raise Unsupported("empty value")


PRIMITIVES = {"BOOL": "bool", "INT64": "int", "UINT64": "uint", "DOUBLE": "double",
              "STRING": "string", "BYTES": "bytes"}


def type_name(m):
    """A cel.expr.Type as cel-go names it (list(int), map(string, dyn), optional_type(int))."""
    if m is None:
        raise Unsupported("typed_result without deduced_type")
    for name, v in m.fields:
        if name == "primitive":
            return PRIMITIVES[v]
        if name == "null":
            return "null_type"
        if name == "dyn":
            return "dyn"
        if name == "well_known":
            return {"TIMESTAMP": "google.protobuf.Timestamp",
                    "DURATION": "google.protobuf.Duration"}.get(v, "google.protobuf." + v)
        if name == "list_type":
            return "list(%s)" % type_name(v.get("elem_type"))
        if name == "map_type":
            return "map(%s, %s)" % (type_name(v.get("key_type")), type_name(v.get("value_type")))
        if name == "abstract_type":
            params = [type_name(p) for p in v.all("parameter_types")]
            n = v.get("name").decode()
            return n + ("(" + ", ".join(params) + ")" if params else "")
        raise Unsupported("deduced type " + name)
    raise Unsupported("empty deduced type")


# ---- relevance ----

PROTO_WORDS = re.compile(r"TestAllTypes|NestedTestAllTypes|GlobalEnum|NestedEnum|TestRequired|"
                         r"enum_value|proto2|proto3|cel\.expr\.conformance")


def classify(block):
    names = set(re.findall(r"google\.protobuf\.[A-Za-z0-9]+", block))
    if PROTO_WORDS.search(block) or (names - JSON_TYPES - TIME_TYPES):
        return "proto"
    if names & JSON_TYPES:
        return "json"
    return "plain"


def convert(testdata, outdir):
    os.makedirs(outdir, exist_ok=True)
    for base in RELEVANT:
        root, text = parse_file(os.path.join(testdata, base + ".textproto"))
        cases, skips = [], []
        for sec in root.all("section"):
            for t in sec.all("test"):
                block = text[t.start:t.end]
                kind = classify(block)
                if base == "dynamic":
                    # the README's 32: literals and variables of the JSON types
                    relevant = (sec.get("name").decode() in DYNAMIC_SECTIONS and
                                (t.get("name").decode().startswith("literal") or
                                 t.get("name").decode() == "var"))
                else:
                    relevant = kind == "plain"
                if not relevant:
                    continue
                name = "%s/%s" % (sec.get("name").decode(), t.get("name").decode())
                try:
                    case = {"name": name, "expr": t.get("expr").decode("utf-8"), "bindings": {}}
                    for b in t.all("bindings"):
                        case["bindings"][b.get("key").decode()] = cel_value(b.get("value").get("value"))
                    if t.get("disable_check"):
                        case["disable_check"] = True
                    if t.get("disable_macros"):
                        raise Unsupported("disable_macros: gavel always expands macros")
                    for env in t.all("type_env"):
                        if env.get("function") is not None:
                            raise Unsupported("type_env declares a function: gavel's functions are its library's")
                    typed = t.get("typed_result")
                    if t.get("check_only"):
                        case["check_only"] = True
                    if typed is not None:
                        case["type"] = type_name(typed.get("deduced_type"))
                        if typed.get("result") is not None:
                            case["want"] = cel_value(typed.get("result"))
                    if case.get("check_only") and typed is None:
                        raise Unsupported("check_only without a deduced type")
                    if typed is not None:
                        pass
                    elif t.get("eval_error") is not None or t.get("any_eval_errors") is not None:
                        case["error"] = True
                    elif t.get("value") is not None:
                        case["want"] = cel_value(t.get("value"))
                    elif t.get("unknown") is not None or t.get("any_unknowns") is not None:
                        raise Unsupported("unknowns: partial evaluation")
                    else:
                        case["want"] = "true"
                    cases.append(case)
                except Unsupported as e:
                    skips.append("%s\t%s" % (name, e))
        with open(os.path.join(outdir, base + ".jsonl"), "w") as f:
            for c in cases:
                f.write(json.dumps(c) + "\n")
        with open(os.path.join(outdir, base + ".skip"), "w") as f:
            for s in skips:
                f.write(s + "\n")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
