/*
 * cmd.h - gavel's subcommands. Each takes the arguments after its name
 * (argv[0] is the subcommand name) and returns the process exit code.
 */
#ifndef GV_CMD_H
#define GV_CMD_H

int cmd_apply(int argc, char **argv);
int cmd_test(int argc, char **argv);
int cmd_jp(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_certs(int argc, char **argv);
int cmd_schedule(int argc, char **argv);
int cmd_scan(int argc, char **argv);
int cmd_status(int argc, char **argv);

#endif
