/*
 * severity.c - the severity of a PolicyReport result, from the policy's
 * policies.kyverno.io/severity annotation, and the message its
 * properties may set (engine.h).
 */
#include "engine/engine.h"

#include <stdio.h>
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

const char *engine_report_message(const json_t *properties, enum engine_status status)
{
	char key[32];
	const char *m;

	if (!json_is_object(properties))
		return NULL;
	snprintf(key, sizeof(key), "%sMessage", engine_status_name(status));
	m = json_string_value(json_object_get(properties, key));
	return m ? m : json_string_value(json_object_get(properties, "message"));
}
