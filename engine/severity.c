/*
 * severity.c - the severity of a PolicyReport result, from the policy's
 * policies.kyverno.io/severity annotation (engine.h).
 */
#include "engine/engine.h"

#include <string.h>

#include "common/gv.h"
#include "common/banned.h"

/* The report CRD's enum, and Kyverno's PolicySeverity values. */
static const char *const SEVERITIES[] = {"critical", "high", "medium", "low", "info"};

const char *engine_report_severity(const char *annotation)
{
	if (!annotation)
		return NULL;
	for (size_t i = 0; i < GV_ARRAY_LEN(SEVERITIES); i++)
		if (!strcmp(annotation, SEVERITIES[i]))
			return SEVERITIES[i];
	return NULL;
}
