/* extrospect blame: not yet built. See commands.h. */
#include <errno.h>
#include <stdio.h>

#include "commands.h"

const char blame__usage[] = "Usage: extrospect blame PID FUNCTION... (not yet available)\n";

int cmd__blame(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		char *err, size_t errlen)
{
	snprintf(err, errlen, "blame is not yet available");
	return -ENOSYS;
}
