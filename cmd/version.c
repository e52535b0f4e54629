/*
 * version.c - `gavel version`.
 */
#include <stdio.h>

#include "cmd/cmd.h"
#include "common/banned.h"

#ifndef GAVEL_VERSION
#define GAVEL_VERSION "0.1.0"
#endif

int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("gavel %s\n", GAVEL_VERSION);
	return 0;
}
