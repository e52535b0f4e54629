/*
 * kinds.c - what the engine knows about Kubernetes kinds without a cluster.
 */
#include "engine/engine.h"

#include <string.h>

#include "common/banned.h"

/*
 * Cluster-scoped kinds: Kubernetes built-in API resources and the
 * cluster-scoped kinds of Kyverno and the policy-report API. Everything
 * else (including custom resources) counts as namespaced, as in the Kyverno
 * CLI's built-in discovery data.
 */
static const char *const cluster_kinds[] = {
    "APIService",
    "CSIDriver",
    "CSINode",
    "CertificateSigningRequest",
    "ClusterAdmissionReport",
    "ClusterBackgroundScanReport",
    "ClusterCleanupPolicy",
    "ClusterEphemeralReport",
    "ClusterPolicy",
    "ClusterPolicyReport",
    "ClusterReport",
    "ClusterRole",
    "ClusterRoleBinding",
    "ClusterTrustBundle",
    "ComponentStatus",
    "CustomResourceDefinition",
    "DeletingPolicy",
    "DeviceClass",
    "FlowSchema",
    "GeneratingPolicy",
    "GlobalContextEntry",
    "IPAddress",
    "ImageValidatingPolicy",
    "IngressClass",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
    "MutatingPolicy",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PodSecurityPolicy",
    "PriorityClass",
    "PriorityLevelConfiguration",
    "ResourceSlice",
    "RuntimeClass",
    "SelfSubjectAccessReview",
    "SelfSubjectReview",
    "SelfSubjectRulesReview",
    "ServiceCIDR",
    "StorageClass",
    "StorageVersion",
    "StorageVersionMigration",
    "SubjectAccessReview",
    "TokenReview",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingPolicy",
    "ValidatingWebhookConfiguration",
    "VolumeAttachment",
    "VolumeAttributesClass",
};

bool engine_kind_cluster_scoped(const char *kind)
{
	if (!kind)
		return false;
	for (size_t i = 0; i < GV_ARRAY_LEN(cluster_kinds); i++)
		if (!strcmp(kind, cluster_kinds[i]))
			return true;
	return false;
}
