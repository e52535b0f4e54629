/*
 * certs.c - `gavel certs` (being written).
 */
#include <stdio.h>

#include "cmd/cmd.h"
#include "common/banned.h"

int cmd_certs(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("gavel certs: not available in this build\n", stderr);
	return 2;
}
