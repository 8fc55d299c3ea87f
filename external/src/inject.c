/* extrospect inject: not yet built. See commands.h. */
#include <stdio.h>

#include "commands.h"
#include "exitcode.h"

const char inject__usage[] = "Usage: extrospect inject --node NAME@HOST (not yet available)\n";

int cmd__inject(const struct cli_opts *o, volatile sig_atomic_t *stop)
{
	fprintf(stderr, "extrospect: inject is not yet available\n");
	return EXIT_INTERNAL;
}
