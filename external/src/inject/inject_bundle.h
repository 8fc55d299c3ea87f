/* The agent that `extrospect inject` pushes: the extrospect application directory of this
 * install (ebin/ with extrospect.app and the beams, priv/extrospect_nif.so), read into memory.
 * Does not own: sending it (inject.c) or building it (rebar3 / CMake). */
#ifndef XP_INJECT_BUNDLE_H
#define XP_INJECT_BUNDLE_H

#include <stddef.h>

struct inject_file {
	char rel[128]; /* "ebin/extrospect.beam", "priv/extrospect_nif.so" */
	char *data;
	size_t len;
};

struct inject_bundle {
	char dir[4096]; /* where it was read from (PATH_MAX) */
	struct inject_file *v;
	size_t n, beams, bytes;
};

/* Reads the agent from $EXTROSPECT_AGENT_DIR, else from the first of ../lib/extrospect,
 * ../_build/default/lib/extrospect (a build tree) and .. (an app dir) beside this executable
 * that holds a complete agent. 0, or a negative errno with err set. */
int inject_bundle__load(struct inject_bundle **out, char *err, size_t errlen);
void inject_bundle__free(struct inject_bundle *b);

#endif /* XP_INJECT_BUNDLE_H */
