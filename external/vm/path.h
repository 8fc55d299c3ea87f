/* The one basename: a path's last component, as the sampler names files it did not open
 * (perf maps, the agent's NIF, beam.smp, modules of an unwind or a profile). */
#ifndef XP_PATH_H
#define XP_PATH_H

#include <string.h>

/* What follows the last '/' of path, or path itself when it has none ("" for "dir/"). */
static inline const char *path__base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

#endif /* XP_PATH_H */
