/*
 * cmd.h - gavel's subcommands. Each takes the arguments after its name
 * (argv[0] is the subcommand name) and returns the process exit code.
 */
#ifndef GV_CMD_H
#define GV_CMD_H

#include <stdbool.h>

int cmd_apply(int argc, char **argv);
int cmd_test(int argc, char **argv);
int cmd_jp(int argc, char **argv);
int cmd_cel(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_certs(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_scan(int argc, char **argv);
int cmd_status(int argc, char **argv);

/*
 * Option parsing shared by the subcommands: whether argv[*i] is option
 * `name` as "--name VALUE" or "--name=VALUE" (or, when shrt is not NULL,
 * "-x VALUE"). When it is, *val is its value (borrowed from argv) and *i
 * has moved past a separate VALUE; *missing is set instead when VALUE is
 * absent (the last argument). "--name-other" does not match "--name".
 */
bool cmd_take(int argc, char **argv, int *i, const char *name, const char *shrt, const char **val,
	      bool *missing);

#endif
