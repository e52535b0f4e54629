/*
 * status.h - the pieces of `gavel status` (cmd/status.c), for its tests.
 */
#ifndef GV_CMD_STATUS_H
#define GV_CMD_STATUS_H

#include <stdio.h>
#include <time.h>
#include <jansson.h>

#include "common/gv.h"
#include "kube/kube.h"

/*
 * The rows of `gavel status` at time now (a new reference to an array):
 * reconciler_status()'s rows (background/reconciler.h), then one row per
 * Kubernetes ValidatingAdmissionPolicy (cel-semantics.md section 5), in
 * name order, with the same fields:
 *   {"policy": name, "kind": "ValidatingAdmissionPolicy",
 *    "background": true, "schedule", "source" (the global schedule: a VAP
 *    has no schedule fields of its own), "state", "error" (invalid only),
 *    "suspended", "suspendedBy", "lastScan" (scan-state key
 *    "ValidatingAdmissionPolicy.<name>"), "nextScan",
 *    "results" (report results with source ValidatingAdmissionPolicy),
 *    "bindings": [names of the ValidatingAdmissionPolicyBindings whose
 *    spec.policyName is the VAP, in name order]}
 * A VAP without a binding is scanned all the same, against its own
 * matchConstraints (section 5, "No bindings"). They are listed at the
 * first admissionregistration.k8s.io version served of v1, v1beta1 and
 * v1alpha1 (clusterstate_list_vap); an API server that serves none (before
 * Kubernetes 1.26, or without the alpha or beta API on) has none: no row,
 * no error. namespace is gavel's
 * (NULL = "gavel"); interval is serve's --background-scan-interval (NULL =
 * 1h). GV_ENET on API errors (*out NULL).
 */
enum gv_code cmd_status_rows(struct kube_client *client, const char *namespace,
			     const char *interval, time_t now, json_t **out, struct gv_err *err);

/*
 * Prints rows (cmd_status_rows()) to f as the table of `gavel status`:
 *
 *   POLICY  SCHEDULE  LAST SCAN  NEXT SCAN  PASS FAIL WARN ERROR SKIP  SUSPENDED  STATE
 *
 * CEL policies are named "<kind>/<name>"; a VAP's STATE ends with its
 * bindings ("(bindings: a, b)", or "(no binding: matchConstraints)").
 */
void cmd_status_table(FILE *f, const json_t *rows);

#endif
