/*
 * options.c - option parsing shared by the subcommands (cmd.h).
 */
#include "cmd/cmd.h"

#include <string.h>

#include "common/banned.h"

bool cmd_take(int argc, char **argv, int *i, const char *name, const char *shrt, const char **val,
	      bool *missing)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (!strncmp(a, name, n) && a[n] == '=') {
		*val = a + n + 1;
		return true;
	}
	if (strcmp(a, name) && (!shrt || strcmp(a, shrt)))
		return false;
	if (*i + 1 >= argc) {
		*missing = true;
		return true;
	}
	*val = argv[++*i];
	return true;
}
