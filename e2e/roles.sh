#!/usr/bin/env bash
# e2e/roles.sh: request.roles and request.clusterRoles end to end, against a
# real kube-apiserver v1.20 + etcd on 127.0.0.1 (e2e/local) with `gavel serve`
# in cluster mode behind a ValidatingWebhookConfiguration.
#
#   sh e2e/roles.sh          (from the top of the tree, after make)
#
# Users are the admin's impersonations (kubectl --as/--as-group): the API
# server authenticates them as those users, so the AdmissionReview's userInfo
# is theirs. Every user may create ConfigMaps and Secrets (ClusterRole
# e2e-writer bound to system:authenticated and the test groups): what the
# cases show is gavel's decision, not the API server's authorization.
#
# Cases (kyverno-semantics.md sections 2.2 and 6.5):
#   - an Enforce ClusterPolicy denies ConfigMaps unless excluded by
#     `clusterRoles: [cm-admin]`, its message shows {{request.clusterRoles}};
#   - a user bound to cm-admin by a ClusterRoleBinding is allowed; the binding
#     deleted, the same request is denied again (each change awaited while the
#     watch catches up, at most 15 s); likewise through a Group subject and a
#     ServiceAccount subject;
#   - a RoleBinding to the ClusterRole cm-admin counts in its namespace only;
#   - `roles: [e2e-roles:secret-writer]` with a RoleBinding to a Role, bound
#     and unbound; the message shows {{request.roles}}.
# Ends with "N passed, N failed"; exit status 1 when a case failed, 2 when
# the environment could not be set up. About 40 seconds once the control
# plane is up.
#
# Env: GAVEL, E2E_KEEP=1, KUBE_APISERVER/ETCD/KUBECTL (see e2e/lib.sh).
# shellcheck source-path=SCRIPTDIR
if [ -z "${BASH_VERSION:-}" ]; then exec bash "$0" "$@"; fi
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$HERE/lib.sh"

NS=e2e-roles
OTHER=e2e-roles-other
WAIT=15

# as USER GROUPS ARGS...: kubectl as USER with the comma-separated GROUPS ("" = none).
as() {
	local user=$1 groups=$2 g args=()
	shift 2
	args=(--as="$user")
	if [ -n "$groups" ]; then
		for g in ${groups//,/ }; do
			args+=(--as-group="$g")
		done
	fi
	k "${args[@]}" "$@"
}

# create_cm USER GROUPS NAMESPACE: a ConfigMap, judged and not stored (dry run).
create_cm() { as "$1" "$2" create configmap cm1 -n "$3" --dry-run=server; }
create_secret() {
	as "$1" "$2" create secret generic s1 --from-literal=k=v -n "$3" --dry-run=server
}

setup_objects() {
	local f
	ns_create "$NS" && ns_create "$OTHER" || return 1
	f=$(manifest roles-objects <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-writer}
rules:
  - apiGroups: [""]
    resources: [configmaps, secrets]
    verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-writer}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-writer}
subjects:
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: e2e-admins}
  - {apiGroup: rbac.authorization.k8s.io, kind: Group, name: e2e-devs}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cm-admin}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: secret-writer, namespace: $NS}
rules:
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: viewer, namespace: $NS}
rules:
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get]
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: cm-guard}
spec:
  background: false
  validationFailureAction: Enforce
  rules:
    - name: cm-admin-only
      match: {any: [{resources: {kinds: [ConfigMap], namespaces: [$NS, $OTHER]}}]}
      exclude: {any: [{clusterRoles: [cm-admin]}]}
      validate:
        message: "clusterRoles={{ request.clusterRoles }}"
        deny: {}
    - name: secret-writers-only
      match: {any: [{resources: {kinds: [Secret], namespaces: [$NS, $OTHER]}}]}
      exclude: {any: [{roles: ["$NS:secret-writer"]}]}
      validate:
        message: "roles={{ request.roles }}"
        deny: {}
EOF
)
	k apply -f "$f" >/dev/null
}

case_cluster_role_binding() {
	log "clusterRoles through a ClusterRoleBinding"
	eventually "$WAIT" expect_denied "alice without cm-admin: ConfigMap denied, message shows request.clusterRoles" \
		create_cm alice "" "$NS" -- "resource ConfigMap/$NS/cm1 was blocked" \
		"cm-guard:" "cm-admin-only:" 'clusterRoles=["e2e-writer","system:basic-user",' \
		'"system:discovery"'
	# (system:* are the API server's bootstrap ClusterRoleBindings for system:authenticated;
	# the list is sorted)
	expect_success "bind alice to cm-admin (ClusterRoleBinding)" \
		k create clusterrolebinding alice-cm-admin --clusterrole=cm-admin --user=alice
	eventually "$WAIT" expect_allowed "alice bound to cm-admin: ConfigMap allowed" \
		create_cm alice "" "$NS"
	expect_allowed "alice bound to cm-admin: allowed in another namespace too" \
		create_cm alice "" "$OTHER"
	expect_denied "bob, not bound: still denied" create_cm bob "" "$NS" -- \
		"cm-admin-only:" "clusterRoles="
	expect_success "unbind alice (delete the ClusterRoleBinding)" \
		k delete clusterrolebinding alice-cm-admin
	eventually "$WAIT" expect_denied "alice unbound: the same request is denied again" \
		create_cm alice "" "$NS" -- "cm-admin-only:" "clusterRoles="
}

case_group_and_service_account() {
	local sa=system:serviceaccount:$NS:builder
	log "clusterRoles through Group and ServiceAccount subjects"
	expect_success "bind the group e2e-admins to cm-admin" \
		k create clusterrolebinding admins-cm-admin --clusterrole=cm-admin --group=e2e-admins
	eventually "$WAIT" expect_allowed "bob in group e2e-admins: ConfigMap allowed" \
		create_cm bob e2e-admins "$NS"
	expect_denied "bob without the group: denied" create_cm bob "" "$NS" -- "cm-admin-only:"
	expect_success "delete the group's binding" k delete clusterrolebinding admins-cm-admin
	eventually "$WAIT" expect_denied "bob in group e2e-admins, binding deleted: denied" \
		create_cm bob e2e-admins "$NS" -- "cm-admin-only:"

	expect_success "bind ServiceAccount $NS/builder to cm-admin" \
		k create clusterrolebinding builder-cm-admin --clusterrole=cm-admin \
		--serviceaccount="$NS:builder"
	eventually "$WAIT" expect_allowed "$sa: ConfigMap allowed" create_cm "$sa" "" "$NS"
	expect_denied "system:serviceaccount:$OTHER:builder: denied" \
		create_cm "system:serviceaccount:$OTHER:builder" "" "$NS" -- "cm-admin-only:"
	expect_success "delete the ServiceAccount's binding" \
		k delete clusterrolebinding builder-cm-admin
	eventually "$WAIT" expect_denied "$sa, binding deleted: denied" \
		create_cm "$sa" "" "$NS" -- "cm-admin-only:"
}

case_role_binding_to_cluster_role() {
	log "a RoleBinding to a ClusterRole counts in its own namespace"
	expect_success "RoleBinding in $NS: carol -> ClusterRole cm-admin" \
		k create rolebinding carol-cm-admin -n "$NS" --clusterrole=cm-admin --user=carol
	eventually "$WAIT" expect_allowed "carol: ConfigMap in $NS allowed" create_cm carol "" "$NS"
	expect_denied "carol: ConfigMap in $OTHER denied (the binding is in $NS)" \
		create_cm carol "" "$OTHER" -- "resource ConfigMap/$OTHER/cm1 was blocked" \
		"cm-admin-only:"
	expect_success "delete carol's RoleBinding" k delete rolebinding carol-cm-admin -n "$NS"
	eventually "$WAIT" expect_denied "carol unbound: ConfigMap in $NS denied" \
		create_cm carol "" "$NS" -- "cm-admin-only:"
}

case_roles() {
	log "roles through a RoleBinding to a Role"
	expect_denied "dave without secret-writer: Secret denied, message shows request.roles" \
		create_secret dave "" "$NS" -- "resource Secret/$NS/s1 was blocked" \
		"secret-writers-only:" "roles=[]"
	expect_success "RoleBinding in $NS: dave -> Role secret-writer" \
		k create rolebinding dave-secret-writer -n "$NS" --role=secret-writer --user=dave
	eventually "$WAIT" expect_allowed "dave bound: Secret in $NS allowed" \
		create_secret dave "" "$NS"
	expect_allowed "dave bound: a Role of $NS counts in $OTHER too" \
		create_secret dave "" "$OTHER"
	expect_success "unbind dave (delete the RoleBinding)" \
		k delete rolebinding dave-secret-writer -n "$NS"
	eventually "$WAIT" expect_denied "dave unbound: the same request is denied again" \
		create_secret dave "" "$NS" -- "secret-writers-only:" "roles=[]"
	expect_success "RoleBinding in $NS: group e2e-devs -> Role secret-writer" \
		k create rolebinding devs-secret-writer -n "$NS" --role=secret-writer --group=e2e-devs
	eventually "$WAIT" expect_allowed "erin in group e2e-devs: Secret allowed" \
		create_secret erin e2e-devs "$NS"
	expect_success "RoleBinding in $NS: frank -> Role viewer" \
		k create rolebinding frank-viewer -n "$NS" --role=viewer --user=frank
	eventually "$WAIT" expect_denied "frank: Secret denied, request.roles lists \"$NS:viewer\"" \
		create_secret frank "" "$OTHER" -- "secret-writers-only:" "roles=[\"$NS:viewer\"]"
}

case_readyz() {
	log "readiness"
	expect_output "gavel logged the bindings cache ready" \
		grep -F "rbac: ready:" "$E2E_DIR/gavel.log" -- "RoleBindings and ClusterRoleBindings indexed"
	expect_output "/readyz answers 200" \
		curl -sS -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$E2E_TLS/ca.crt" \
		"https://127.0.0.1:$GAVEL_PORT/readyz" -- 200
}

main() {
	if ! { e2e_setup && e2e_apply_crds && k create namespace "$GAVEL_NAMESPACE" >/dev/null &&
		e2e_certs && gavel_start --manage-certs=false --background=false &&
		webhook_register Fail && webhook_wait_effective && setup_objects; }; then
		log "setup failed"
		[ ! -s "$E2E_DIR/gavel.log" ] || tail -n 20 "$E2E_DIR/gavel.log" >&2
		printf '0 passed, 1 failed\n'
		exit 2
	fi
	log "gavel serving on https://127.0.0.1:$GAVEL_PORT (API server on port $APISERVER_PORT)"
	case_readyz
	case_cluster_role_binding
	case_group_and_service_account
	case_role_binding_to_cluster_role
	case_roles
	summary
}

main "$@"
