/* extrospect sched: not yet built. See commands.h. */
#include <errno.h>
#include <stdio.h>

#include "commands.h"

const char sched__usage[] = "Usage: extrospect sched PID (not yet available)\n";

int cmd__sched(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		char *err, size_t errlen)
{
	snprintf(err, errlen, "sched is not yet available");
	return -ENOSYS;
}
