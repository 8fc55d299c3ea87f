/* The sampling commands, `record` and `top`, over an attached target. Each returns 0,
 * TARGET_EGONE when the VM exited mid-run (after writing what it had), or a negative errno with
 * err set. Does not own: attaching, exit codes (main.c). */
#ifndef XP_COMMANDS_H
#define XP_COMMANDS_H

#include <signal.h>
#include <stddef.h>

#include "cli.h"
#include "target.h"

int cmd__record(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
		size_t errlen);
int cmd__top(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	     size_t errlen);

#endif /* XP_COMMANDS_H */
