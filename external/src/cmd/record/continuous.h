/* `record --every` (continuous.c): one pprof profile per interval into -o DIR/ and/or --push.
 * Returns like cmd__record (commands.h). */
#ifndef XP_CONTINUOUS_H
#define XP_CONTINUOUS_H

#include <signal.h>
#include <stddef.h>

struct cli_opts;
struct target;

int cmd__record_every(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop,
		      char *err, size_t errlen);

#endif /* XP_CONTINUOUS_H */
