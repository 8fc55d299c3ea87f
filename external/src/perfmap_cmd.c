/* extrospect perfmap: not yet built. See commands.h. */
#include <errno.h>
#include <stdio.h>

#include "commands.h"

const char perfmap__usage[] = "Usage: extrospect perfmap PID (not yet available)\n";

int cmd__perfmap(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		char *err, size_t errlen)
{
	snprintf(err, errlen, "perfmap is not yet available");
	return -ENOSYS;
}
