/*
 * helpers.h - helpers shared by the unit tests (cmocka; include after
 * <cmocka.h>). Header-only (static inline).
 */
#ifndef GV_COMMON_TESTS_HELPERS_H
#define GV_COMMON_TESTS_HELPERS_H

#include <stdlib.h>
#include <jansson.h>

#include "common/gv.h"

/*
 * JSON written with ' for " (any value; new reference). A text that does
 * not parse fails the test.
 */
static inline json_t *J(const char *text)
{
	char *s = gv_xstrdup(text);
	json_error_t e;
	json_t *v;

	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = json_loads(s, JSON_DECODE_ANY, &e);
	if (!v)
		fail_msg("bad test JSON: %s: %s", e.text, s);
	free(s);
	return v;
}

#endif
