/*
 * serve.c - `gavel serve` (being written).
 */
#include <stdio.h>

#include "cmd/cmd.h"
#include "common/banned.h"

int cmd_serve(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fputs("gavel serve: not available in this build\n", stderr);
	return 2;
}
