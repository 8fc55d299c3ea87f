/* extrospect pstack: not yet built. See commands.h. */
#include <errno.h>
#include <stdio.h>

#include "commands.h"

const char pstack__usage[] = "Usage: extrospect pstack PID (not yet available)\n";

int cmd__pstack(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		char *err, size_t errlen)
{
	snprintf(err, errlen, "pstack is not yet available");
	return -ENOSYS;
}
