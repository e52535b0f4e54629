#!/usr/bin/env bash
# e2e/context.sh: context entries that read the cluster (configMap, apiCall,
# globalReference, imageRegistry) in `gavel serve` (admission and its
# background reconciler) and `gavel scan`, against a real kube-apiserver
# v1.20 + etcd on 127.0.0.1 (e2e/local) with manifests/crds applied
# (GlobalContextEntry included).
#
#   bash e2e/context.sh        (from the top of the tree, after make)
#
# Cases:
#   configMap        a Pod whose registry is not in a ConfigMap's list is
#                    denied; the ConfigMap changes and the same Pod is
#                    admitted, without restart; a ConfigMap that does not
#                    exist is the rule's error (Kyverno's message), not a skip
#   apiCall          urlPath against the API server: a namespace holding 2
#                    Pods refuses a third (items | length(@)); POST with
#                    data (a SelfSubjectAccessReview); a service URL on
#                    127.0.0.1 over https with the test CA as caBundle and a
#                    header; a call that fails takes its default
#   globalReference  kubernetesResource (Deployments of a namespace, watched:
#                    a new Deployment is seen) and apiCall (refreshed)
#   imageRegistry    against Debian's docker-registry on 127.0.0.1, seeded
#                    by the test (an image running as root denied)
#   background       the reconciler's PolicyReport and `gavel scan` show the
#                    configMap-based result of a Pod
# Ends with "N passed, N failed"; exit 1 when a case failed, 2 when the
# environment could not be set up. About a minute.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh).
# Needs python3 (the https service), jq, curl, openssl.
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

SVC_PORT=
SVC_PID=

# pod NAME NAMESPACE IMAGE [LABELS_JSON]: a Pod manifest (JSON) on stdout.
pod() {
	local labels=${4:-'{}'}
	printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"%s","labels":%s},"spec":{"containers":[{"name":"main","image":"%s"}]}}\n' \
		"$1" "$2" "$labels" "$3"
}

create() { k create -f "$1"; }

svc_stop() {
	[ -z "$SVC_PID" ] || kill "$SVC_PID" 2>/dev/null || true
	SVC_PID=
}

# A small https service on 127.0.0.1 with gavel's test certificate (its CA is
# $E2E_TLS/ca.crt): GET /registries answers {"registries": [...]} when the
# X-Token header is right, 401 otherwise.
svc_start() {
	SVC_PORT=$(free_port)
	cat >"$E2E_DIR/svc.py" <<'EOF'
import http.server, json, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.headers.get("X-Token") != "t0ken":
            code, body = 401, {"message": "bad token"}
        elif self.path == "/registries":
            code, body = 200, {"registries": ["svc.example.io", "good.example.io"]}
        else:
            code, body = 404, {"message": "no such path"}
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
EOF
	python3 "$E2E_DIR/svc.py" "$SVC_PORT" "$E2E_TLS/tls.crt" "$E2E_TLS/tls.key" \
		</dev/null >>"$E2E_DIR/svc.log" 2>&1 &
	SVC_PID=$!
	for _ in $(seq 1 40); do
		if curl -sS --max-time 2 --cacert "$E2E_TLS/ca.crt" -H 'X-Token: t0ken' \
			"https://127.0.0.1:$SVC_PORT/registries" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.25
	done
	return 1
}

# ---- configMap -------------------------------------------------------------------

case_config_map() {
	local ns=e2e-cm f
	log "configMap"
	ns_create "$ns"
	ns_create e2e-cm-missing
	k -n "$ns" create configmap registries --from-literal=allowed=good.example.io >/dev/null
	# there before the policy: judged by the background scans only
	f=$(pod legacy "$ns" other.example.io/app:1 | manifest pod-cm-legacy)
	expect_allowed "Pod created before the policy" create "$f"
	expect_allowed "policy reading its registries from a ConfigMap is applied" \
		k apply -f "$(manifest pol-cm <<EOF
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: cm-registries
spec:
  validationFailureAction: Enforce
  background: true
  rules:
    - name: allowed-registry
      match:
        any:
          - resources: {kinds: [Pod], namespaces: [$ns]}
      context:
        - name: registries
          configMap:
            name: registries
            namespace: "$ns"
      validate:
        message: "registry {{ split(request.object.spec.containers[0].image, '/')[0] }} is not in {{ registries.data.allowed }}"
        deny:
          conditions:
            any:
              - key: "{{ split(request.object.spec.containers[0].image, '/')[0] }}"
                operator: AnyNotIn
                value: "{{ split(registries.data.allowed, ',') }}"
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: cm-missing
spec:
  validationFailureAction: Enforce
  background: false
  rules:
    - name: needs-cm
      match:
        any:
          - resources: {kinds: [Pod], namespaces: [e2e-cm-missing]}
      context:
        - name: settings
          configMap:
            name: absent
            namespace: "{{request.namespace}}"
      validate:
        message: "never"
        deny:
          conditions:
            any:
              - key: "{{ settings.data.x || '' }}"
                operator: Equals
                value: "no"
EOF
)"
	f=$(pod other "$ns" other.example.io/app:1 | manifest pod-cm-other)
	eventually 15 expect_denied "Pod from a registry not in the ConfigMap is denied" \
		k create --dry-run=server -f "$f" -- \
		"cm-registries:" "registry other.example.io is not in good.example.io"
	f=$(pod good "$ns" good.example.io/app:1 | manifest pod-cm-good)
	expect_allowed "Pod from a registry in the ConfigMap is admitted" create "$f"

	k -n "$ns" patch configmap registries --type merge \
		-p '{"data":{"allowed":"good.example.io,other.example.io"}}' >/dev/null
	f=$(pod other "$ns" other.example.io/app:1 | manifest pod-cm-other)
	eventually 15 expect_allowed "after the ConfigMap changed, the same Pod is admitted (no restart)" \
		create "$f"
	k -n "$ns" patch configmap registries --type merge \
		-p '{"data":{"allowed":"good.example.io"}}' >/dev/null

	f=$(pod p e2e-cm-missing good.example.io/app:1 | manifest pod-cm-missing)
	eventually 15 expect_denied "a ConfigMap that does not exist is the rule's error" \
		create "$f" -- "cm-missing:" \
		"failed to load context: failed to retrieve config map for context entry settings: configmaps \"absent\" not found"
}

# ---- apiCall ---------------------------------------------------------------------

case_api_call() {
	local ns=e2e-api f ca
	log "apiCall"
	ns_create "$ns"
	ca=$(sed 's/^/                /' "$E2E_TLS/ca.crt")
	expect_allowed "apiCall policies are applied" \
		k apply -f "$(manifest pol-api <<EOF
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: api-pod-count
spec:
  validationFailureAction: Enforce
  background: false
  rules:
    - name: at-most-two-pods
      match:
        any:
          - resources: {kinds: [Pod], namespaces: [$ns], operations: [CREATE]}
      context:
        - name: podcount
          apiCall:
            urlPath: "/api/v1/namespaces/{{request.namespace}}/pods"
            jmesPath: "items | length(@)"
        - name: canlist
          apiCall:
            method: POST
            urlPath: /apis/authorization.k8s.io/v1/selfsubjectaccessreviews
            data:
              - key: apiVersion
                value: authorization.k8s.io/v1
              - key: kind
                value: SelfSubjectAccessReview
              - key: spec
                value:
                  resourceAttributes: {verb: list, resource: pods, namespace: "{{request.namespace}}"}
            jmesPath: status.allowed
        - name: fallback
          apiCall:
            urlPath: /api/v1/namespaces/does-not-exist
            jmesPath: metadata.name
            default: none
      validate:
        message: "namespace {{request.namespace}} already has {{podcount}} Pods (list allowed: {{canlist}}, fallback: {{fallback}})"
        deny:
          conditions:
            any:
              - key: "{{ podcount }}"
                operator: GreaterThanOrEquals
                value: 2
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: api-service
spec:
  validationFailureAction: Enforce
  background: false
  rules:
    - name: registry-from-service
      match:
        any:
          - resources: {kinds: [Pod], namespaces: [$ns], operations: [CREATE]}
      context:
        - name: svc
          apiCall:
            service:
              url: "https://127.0.0.1:$SVC_PORT/registries"
              caBundle: |
$ca
              headers:
                - key: X-Token
                  value: t0ken
            jmesPath: registries
      validate:
        message: "registry {{ split(request.object.spec.containers[0].image, '/')[0] }} is not one of {{ svc | join(',', @) }}"
        deny:
          conditions:
            any:
              - key: "{{ split(request.object.spec.containers[0].image, '/')[0] }}"
                operator: AnyNotIn
                value: "{{ svc }}"
EOF
)"
	f=$(pod bad "$ns" other.example.io/app:1 | manifest pod-api-bad)
	eventually 15 expect_denied "service apiCall (https, caBundle, header): registry not listed is denied" \
		k create --dry-run=server -f "$f" -- \
		"api-service:" "registry other.example.io is not one of svc.example.io,good.example.io"
	f=$(pod p1 "$ns" svc.example.io/app:1 | manifest pod-api-1)
	expect_allowed "first Pod admitted (service registry listed)" create "$f"
	f=$(pod p2 "$ns" svc.example.io/app:1 | manifest pod-api-2)
	expect_allowed "second Pod admitted" create "$f"
	f=$(pod p3 "$ns" svc.example.io/app:1 | manifest pod-api-3)
	expect_denied "third Pod denied: urlPath apiCall counted 2 Pods (POST and default too)" \
		create "$f" -- "api-pod-count:" \
		"namespace $ns already has 2 Pods (list allowed: true, fallback: none)"
}

# ---- globalReference -------------------------------------------------------------

case_global_reference() {
	local ns=e2e-gref f
	log "globalReference"
	ns_create "$ns"
	k -n "$ns" create deployment web --image=good.example.io/web:1 >/dev/null
	expect_allowed "GlobalContextEntries and their policy are applied" \
		k apply -f "$(manifest pol-gref <<EOF
apiVersion: kyverno.io/v2alpha1
kind: GlobalContextEntry
metadata:
  name: e2e-deployments
spec:
  kubernetesResource:
    group: apps
    version: v1
    resource: deployments
    namespace: $ns
---
apiVersion: kyverno.io/v2alpha1
kind: GlobalContextEntry
metadata:
  name: e2e-namespaces
spec:
  apiCall:
    urlPath: /api/v1/namespaces
    refreshInterval: 2s
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: gref
  annotations:
    pod-policies.kyverno.io/autogen-controllers: none
spec:
  validationFailureAction: Enforce
  background: false
  rules:
    - name: known-app
      match:
        any:
          - resources: {kinds: [Pod], namespaces: [$ns]}
      context:
        - name: apps
          globalReference:
            name: e2e-deployments
            jmesPath: "[].metadata.name"
        - name: namespaces
          globalReference:
            name: e2e-namespaces
            jmesPath: "items[].metadata.name"
      validate:
        message: "app {{ request.object.metadata.labels.app }} is not one of the Deployments {{ apps | join(',', @) }}, or namespace {{ request.object.metadata.labels.home }} is not known"
        deny:
          conditions:
            any:
              - key: "{{ request.object.metadata.labels.app }}"
                operator: AnyNotIn
                value: "{{ apps }}"
              - key: "{{ request.object.metadata.labels.home }}"
                operator: AnyNotIn
                value: "{{ namespaces }}"
EOF
)"
	f=$(pod web "$ns" good.example.io/web:1 "{\"app\":\"web\",\"home\":\"$ns\"}" | manifest pod-gref-web)
	eventually 20 expect_allowed "globalReference (kubernetesResource and apiCall): known app admitted" \
		k create --dry-run=server -f "$f"
	f=$(pod db "$ns" good.example.io/db:1 "{\"app\":\"db\",\"home\":\"$ns\"}" | manifest pod-gref-db)
	expect_denied "kubernetesResource: Pod of an unknown Deployment denied" create "$f" -- \
		"gref:" "app db is not one of the Deployments web"
	k -n "$ns" create deployment db --image=good.example.io/db:1 >/dev/null
	eventually 15 expect_allowed "kubernetesResource is watched: after the Deployment exists, admitted" \
		create "$f"
	f=$(pod later "$ns" good.example.io/web:1 '{"app":"web","home":"e2e-later"}' | manifest pod-gref-later)
	expect_denied "apiCall entry: a namespace that does not exist yet is unknown" create "$f" -- \
		"gref:" "namespace e2e-later is not known"
	k create namespace e2e-later >/dev/null
	eventually 15 expect_allowed "apiCall entry is refreshed on its interval: admitted" create "$f"
}

# ---- imageRegistry ---------------------------------------------------------------

REG_PID=

reg_stop() {
	[ -z "$REG_PID" ] || kill "$REG_PID" 2>/dev/null || true
	REG_PID=
}

# reg_start: Debian's docker-registry on 127.0.0.1:$REG_PORT (storage in
# $E2E_DIR); returns 1 when it is not installed or does not start.
reg_start() {
	local bin
	bin=$(command -v docker-registry) || return 1
	REG_PORT=$(free_port)
	mkdir -p "$E2E_DIR/registry"
	cat >"$E2E_DIR/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $E2E_DIR/registry
http:
  addr: 127.0.0.1:$REG_PORT
EOF
	"$bin" serve "$E2E_DIR/registry.yml" </dev/null >>"$E2E_DIR/registry.out" 2>&1 &
	REG_PID=$!
	for _ in $(seq 1 50); do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$REG_PORT/v2/")" = 200 ] &&
			return 0
		sleep 0.2
	done
	return 1
}

# sha FILE: the hex sha256 of FILE.
sha() { sha256sum "$1" | awk '{print $1}'; }

# reg_push REPO TAG USER: an image whose config runs as USER (one empty
# layer), pushed through the registry's v2 API.
reg_push() {
	local base=http://127.0.0.1:$REG_PORT dir=$E2E_DIR/img-$2 f loc
	mkdir -p "$dir"
	: >"$dir/empty"
	gzip -n -c "$dir/empty" >"$dir/layer"
	printf '{"architecture":"amd64","os":"linux","config":{"User":"%s"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
		"$3" "$(sha "$dir/empty")" >"$dir/config"
	for f in layer config; do
		loc=$(curl -s -o /dev/null -D - -X POST "$base/v2/$1/blobs/uploads/" |
			tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
		case "$loc" in /*) loc=$base$loc ;; esac
		case "$loc" in *\?*) loc="$loc&digest=sha256:$(sha "$dir/$f")" ;; *) loc="$loc?digest=sha256:$(sha "$dir/$f")" ;; esac
		curl -sf -o /dev/null -X PUT -H 'Content-Type: application/octet-stream' \
			--data-binary "@$dir/$f" "$loc" || return 1
	done
	printf '{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{"mediaType":"application/vnd.docker.container.image.v1+json","size":%s,"digest":"sha256:%s"},"layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","size":%s,"digest":"sha256:%s"}]}' \
		"$(wc -c <"$dir/config")" "$(sha "$dir/config")" \
		"$(wc -c <"$dir/layer")" "$(sha "$dir/layer")" >"$dir/manifest"
	curl -sf -o /dev/null -X PUT \
		-H 'Content-Type: application/vnd.docker.distribution.manifest.v2+json' \
		--data-binary "@$dir/manifest" "$base/v2/$1/manifests/$2"
}

case_image_registry() {
	local ns=e2e-imgreg f reg
	log "imageRegistry"
	if ! reg_start || ! reg_push e2e/app root root || ! reg_push e2e/app app app; then
		reg_stop
		record "imageRegistry: docker-registry on 127.0.0.1 started and seeded" false
		return
	fi
	reg=127.0.0.1:$REG_PORT
	ns_create "$ns"
	expect_allowed "imageRegistry policy is applied" \
		k apply -f "$(manifest pol-imgreg <<EOF
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: imgreg
spec:
  validationFailureAction: Enforce
  background: false
  rules:
    - name: image-user
      match:
        any:
          - resources: {kinds: [Pod], namespaces: [$ns]}
      context:
        - name: img
          imageRegistry:
            reference: "{{ request.object.spec.containers[0].image }}"
            jmesPath: "{user: configData.config.User, resolved: resolvedImage}"
      validate:
        message: "image {{ img.resolved }} runs as {{ img.user }}"
        deny:
          conditions:
            any:
              - key: "{{ img.user }}"
                operator: Equals
                value: "root"
EOF
)"
	f=$(pod root "$ns" "$reg/e2e/app:root" | manifest pod-imgreg-root)
	eventually 15 expect_denied "an image whose config runs as root is denied (config read from the registry)" \
		create "$f" -- "imgreg:" "image $reg/e2e/app@sha256:" "runs as root"
	f=$(pod app "$ns" "$reg/e2e/app:app" | manifest pod-imgreg-app)
	expect_allowed "an image whose config runs as app is admitted" create "$f"
	f=$(pod missing "$ns" "$reg/e2e/app:missing" | manifest pod-imgreg-missing)
	expect_denied "an image the registry does not have: the rule's error, never a pass" \
		create "$f" -- "imgreg:" "failed to load context: failed to fetch image descriptor: $reg/e2e/app:missing"
	reg_stop
}

# ---- background ------------------------------------------------------------------

# A result of the reconciler's PolicyReport of e2e-cm: POD POLICY RESULT MESSAGE-SUBSTR.
# shellcheck disable=SC2034
check_report() {
	OUT=$(k get policyreports -n e2e-cm -o json 2>&1) || {
		WHY="no reports"
		return 1
	}
	if ! jq -e --arg pod "$1" --arg pol "$2" --arg res "$3" --arg msg "$4" \
		'[.items[].results[]? | select(.resources[0].name == $pod and .policy == $pol and .result == $res and ((.message // "") | contains($msg)))] | length > 0' \
		<<<"$OUT" >/dev/null; then
		WHY="no $3 result of $2 about $1 with '$4'"
		return 1
	fi
}

# shellcheck disable=SC2034
check_scan_json() {
	local json
	if ! json=$("$GAVEL" scan --kubeconfig "$KUBECONFIG" --namespace "$GAVEL_NAMESPACE" \
		--dry-run -o json 2>"$E2E_DIR/scan.err"); then
		OUT=$(cat "$E2E_DIR/scan.err")
		WHY="gavel scan failed"
		return 1
	fi
	OUT=$json
	if ! jq -e --arg pod "$1" --arg msg "$2" \
		'[.[] | .results[]? | select(.resources[0].name == $pod and .policy == "cm-registries" and .result == "fail" and (.message | contains($msg)))] | length > 0' \
		<<<"$json" >/dev/null; then
		WHY="no fail result of cm-registries about $1 with '$2'"
		return 1
	fi
}

case_background() {
	log "background"
	eventually 30 expect_success "reconciler: PolicyReport holds the configMap-based fail of Pod legacy" \
		check_report legacy cm-registries fail "registry other.example.io is not in good.example.io"
	expect_success "reconciler: and the pass of Pod good" \
		check_report good cm-registries pass ""
	expect_success "gavel scan: the configMap-based fail of Pod other (admitted before the ConfigMap changed back)" \
		check_scan_json other "registry other.example.io is not in good.example.io"
}

main() {
	if ! { e2e_setup && e2e_apply_crds &&
		k wait --for condition=established --timeout=60s \
			crd/globalcontextentries.kyverno.io >/dev/null &&
		k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
		e2e_certs && svc_start &&
		gavel_start --manage-certs=false --background-scan-interval 3s &&
		webhook_register Fail && webhook_wait_effective; }; then
		log "setup failed"
		[ ! -s "$E2E_DIR/gavel.log" ] || tail -n 20 "$E2E_DIR/gavel.log" >&2
		svc_stop
		printf '0 passed, 1 failed\n'
		exit 2
	fi
	log "gavel serving on https://127.0.0.1:$GAVEL_PORT (API server on port $APISERVER_PORT)"
	case_config_map
	case_api_call
	case_global_reference
	case_image_registry
	case_background
	svc_stop
	reg_stop
	summary
}

main "$@"
