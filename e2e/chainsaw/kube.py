"""A small Kubernetes REST client for the chainsaw runner.

Reads a kubeconfig (token or client-certificate users), keeps one TLS
connection per thread, maps apiVersion/kind to resource paths through
discovery (refreshed when a kind is unknown, e.g. after a CRD was created).
"""

import base64
import http.client
import json
import os
import ssl
import tempfile
import threading
import urllib.parse

import yaml


class KubeError(Exception):
    """An API error: status code and the Status message, as kubectl prints it."""

    def __init__(self, code, message, body=None):
        super().__init__(message)
        self.code = code
        self.body = body


class NoKindMatch(KubeError):
    """apiVersion/kind not in discovery (kubectl's "no matches for kind"): a
    CRD just created is not served yet, or the kind does not exist."""


def _data_file(data, suffix):
    f = tempfile.NamedTemporaryFile(delete=False, suffix=suffix)
    f.write(base64.b64decode(data))
    f.close()
    return f.name


class Kube:
    def __init__(self, kubeconfig):
        with open(kubeconfig) as f:
            cfg = yaml.safe_load(f)
        ctx_name = cfg.get("current-context")
        ctx = next((c["context"] for c in cfg.get("contexts", []) if c["name"] == ctx_name),
                   cfg["contexts"][0]["context"])
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next((u["user"] for u in cfg.get("users", []) if u["name"] == ctx.get("user")), {})
        base = os.path.dirname(os.path.abspath(kubeconfig))

        def path(p):
            return p if os.path.isabs(p) else os.path.join(base, p)

        u = urllib.parse.urlparse(cluster["server"])
        self.host = u.hostname
        self.port = u.port or 443
        self.ssl = ssl.create_default_context()
        if "certificate-authority-data" in cluster:
            self.ssl.load_verify_locations(cadata=base64.b64decode(
                cluster["certificate-authority-data"]).decode())
        elif "certificate-authority" in cluster:
            self.ssl.load_verify_locations(cafile=path(cluster["certificate-authority"]))
        if cluster.get("insecure-skip-tls-verify"):
            self.ssl.check_hostname = False
            self.ssl.verify_mode = ssl.CERT_NONE
        cert = user.get("client-certificate")
        key = user.get("client-key")
        if "client-certificate-data" in user:
            cert = _data_file(user["client-certificate-data"], ".crt")
            key = _data_file(user["client-key-data"], ".key")
        if cert:
            self.ssl.load_cert_chain(path(cert), path(key))
        self.headers = {"Accept": "application/json"}
        if user.get("token"):
            self.headers["Authorization"] = "Bearer " + user["token"]
        self.local = threading.local()
        self.lock = threading.Lock()
        self.kinds = {}  # (apiVersion, kind) -> (plural, namespaced)
        self.resources = []  # (apiVersion, plural, namespaced, verbs)
        self.discover()

    # ---- transport -----------------------------------------------------------

    def _conn(self):
        c = getattr(self.local, "conn", None)
        if c is None:
            c = http.client.HTTPSConnection(self.host, self.port, context=self.ssl, timeout=30)
            self.local.conn = c
        return c

    def request(self, method, path, body=None, ctype="application/json", query=None):
        """Returns the decoded JSON body; raises KubeError on a status >= 400."""
        if query:
            path += "?" + urllib.parse.urlencode(query)
        data = None
        headers = dict(self.headers)
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = ctype
        for attempt in (0, 1):
            c = self._conn()
            try:
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                raw = r.read()
                break
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.conn = None
                if attempt:
                    raise
        try:
            obj = json.loads(raw) if raw else None
        except ValueError:
            obj = None
        if r.status >= 400:
            msg = (obj or {}).get("message") if isinstance(obj, dict) else None
            raise KubeError(r.status, msg or raw.decode(errors="replace"), obj)
        return obj

    # ---- discovery -------------------------------------------------------------

    def discover(self):
        kinds, resources = {}, []
        versions = [("v1", "/api/v1")]
        groups = self.request("GET", "/apis")
        for g in groups.get("groups", []):
            for v in g.get("versions", []):
                versions.append((v["groupVersion"], "/apis/" + v["groupVersion"]))
        for gv, p in versions:
            try:
                lst = self.request("GET", p)
            except KubeError:
                continue
            for r in lst.get("resources", []):
                if "/" in r["name"]:
                    continue
                kinds[(gv, r["kind"])] = (r["name"], r["namespaced"])
                resources.append((gv, r["name"], r["namespaced"], r.get("verbs", [])))
        with self.lock:
            self.kinds, self.resources = kinds, resources

    def mapping(self, api_version, kind):
        """(plural, namespaced) of a kind; discovery is refreshed once when it is unknown."""
        m = self.kinds.get((api_version, kind))
        if m is None:
            self.discover()
            m = self.kinds.get((api_version, kind))
        if m is None:
            raise NoKindMatch(404, 'no matches for kind "%s" in version "%s"' % (kind, api_version))
        return m

    def path(self, api_version, kind, namespace=None, name=None):
        plural, namespaced = self.mapping(api_version, kind)
        p = "/api/v1" if api_version == "v1" else "/apis/" + api_version
        if namespaced and namespace:
            p += "/namespaces/" + urllib.parse.quote(namespace)
        p += "/" + plural
        if name:
            p += "/" + urllib.parse.quote(name)
        return p

    def namespaced(self, api_version, kind):
        return self.mapping(api_version, kind)[1]

    # ---- verbs -----------------------------------------------------------------------

    def get(self, api_version, kind, name, namespace=None):
        return self.request("GET", self.path(api_version, kind, namespace, name))

    def list(self, api_version, kind, namespace=None, labels=None):
        q = None
        if labels:
            q = {"labelSelector": ",".join("%s=%s" % kv for kv in labels.items())}
        body = self.request("GET", self.path(api_version, kind, namespace), query=q)
        items = body.get("items", []) or []
        # The API server leaves apiVersion/kind out of the items of a typed
        # list; client-go's unstructured decoder (what chainsaw reads with)
        # fills them from the list, and assertions may name them.
        lkind = body.get("kind", "")
        ikind = lkind[:-4] if lkind.endswith("List") else kind
        for i in items:
            if isinstance(i, dict):
                i.setdefault("apiVersion", body.get("apiVersion", api_version))
                i.setdefault("kind", ikind)
        return items

    def create(self, obj, namespace=None):
        return self.request("POST", self.path(obj["apiVersion"], obj["kind"], namespace), obj)

    def merge_patch(self, obj, namespace=None):
        return self.request("PATCH", self.path(obj["apiVersion"], obj["kind"], namespace,
                                               obj["metadata"]["name"]),
                            obj, ctype="application/merge-patch+json")

    def update(self, obj, namespace=None):
        return self.request("PUT", self.path(obj["apiVersion"], obj["kind"], namespace,
                                             obj["metadata"]["name"]), obj)

    def delete(self, api_version, kind, name, namespace=None):
        return self.request("DELETE", self.path(api_version, kind, namespace, name),
                            {"kind": "DeleteOptions", "apiVersion": "v1",
                             "propagationPolicy": "Background"})

    def finalize_namespace(self, name):
        """Does the namespace controller's work (this control plane has none):
        deletes every namespaced object in NAME, then clears the namespace's
        finalizers so that it goes away."""
        for gv, plural, namespaced, verbs in list(self.resources):
            if not namespaced or "deletecollection" not in verbs:
                continue
            p = ("/api/v1" if gv == "v1" else "/apis/" + gv) + "/namespaces/%s/%s" % (name, plural)
            try:
                self.request("DELETE", p)
            except KubeError:
                pass
        try:
            ns = self.request("GET", "/api/v1/namespaces/" + name)
        except KubeError:
            return
        ns.setdefault("spec", {})["finalizers"] = []
        try:
            self.request("PUT", "/api/v1/namespaces/%s/finalize" % name, ns)
        except KubeError:
            pass
