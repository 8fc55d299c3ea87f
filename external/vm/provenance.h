/* Where a value describing a VM came from (the agent, a symbol, a scan, the built-in table) and
 * a value with its source. Owns: the names of the sources, as `extrospect info` prints them. Does
 * not own: choosing among sources (attach/target.c, discover.c). */
#ifndef XP_PROVENANCE_H
#define XP_PROVENANCE_H

#include <stdbool.h>
#include <stdint.h>

/* Where a value came from. */
enum target_src {
	TSRC_NONE = 0,
	TSRC_DYNSYM,  /* an exported symbol of beam.smp (OTP <= 27) */
	TSRC_AGENT,   /* the agent block */
	TSRC_SCAN,    /* a structural scan from outside */
	TSRC_TABLE,   /* the built-in per-version table */
	TSRC_INSTALL, /* the installation's files (erts-X.Y.Z path, releases/N/OTP_VERSION) */
};
const char *target__src_name(enum target_src src);

struct target_value {
	int64_t value;
	enum target_src source;
	bool present, verified;
};

#endif /* XP_PROVENANCE_H */
