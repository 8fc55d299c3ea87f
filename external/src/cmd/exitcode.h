/* The sampler's process exit codes (also in --help and docs/troubleshooting.md). main.c maps errors
 * to them; inject.c, which talks to a node rather than a pid, returns them directly. */
#ifndef XP_EXITCODE_H
#define XP_EXITCODE_H

enum exit_code {
	EXIT_OK = 0,
	EXIT_INTERNAL = 1,
	EXIT_USAGE = 2,
	EXIT_NO_PROCESS = 3,
	EXIT_NOT_BEAM = 4,
	EXIT_PERMISSION = 5,
	EXIT_UNSUPPORTED = 6, /* unsupported OTP: no layout and no agent; inject: node too old */
	EXIT_TARGET_EXITED = 7,
	EXIT_UNREACHABLE = 8, /* inject: epmd or the node cannot be reached */
	EXIT_AUTH = 9,	      /* inject: the node refused the cookie */
	EXIT_REFUSED = 10,    /* perf-map: will not replace a map extrospect did not write */
};

#endif /* XP_EXITCODE_H */
