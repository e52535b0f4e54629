/*
 * main.c - gavel's entry point: dispatches to a subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "common/gv.h"
#include "common/banned.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
    {"apply", cmd_apply, "evaluate policies against resource files"},
    {"test", cmd_test, "run kyverno-test.yaml suites"},
    {"jp", cmd_jp, "evaluate JMESPath expressions (query, functions)"},
    {"cel", cmd_cel, "evaluate CEL expressions (eval, functions)"},
    {"serve", cmd_serve, "serve the validating admission webhook"},
    {"certs", cmd_certs, "generate and inject TLS material"},
    {"scan", cmd_scan, "run one background scan now and write (or print) reports"},
    {"status", cmd_status, "show each policy's schedule, last and next scan, results"},
    {"schedule", cmd_schedule, "show the next fire times of a scan schedule"},
    {"version", cmd_version, "print the version"},
};

static void usage(FILE *f)
{
	fputs("usage: gavel <command> [args]\n\ncommands:\n", f);
	for (size_t i = 0; i < GV_ARRAY_LEN(commands); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
}

int main(int argc, char **argv)
{
	gv_init();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version"))
		return cmd_version(1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < GV_ARRAY_LEN(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "gavel: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return 2;
}
