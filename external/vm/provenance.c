/* The names of value sources. See provenance.h. */
#include "provenance.h"

static const char *const src_names[] = {
    [TSRC_NONE] = "none", [TSRC_DYNSYM] = "dynsym", [TSRC_AGENT] = "agent",
    [TSRC_SCAN] = "scan", [TSRC_TABLE] = "table",   [TSRC_INSTALL] = "install",
};

const char *target__src_name(enum target_src src)
{
	return (unsigned)src < sizeof(src_names) / sizeof(src_names[0]) ? src_names[src] : "?";
}
