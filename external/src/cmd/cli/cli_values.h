/* Parsing option values for cli.c (cli_values.c), and the output formats --format names (which
 * the commands see through cli.h). */
#ifndef XP_CLI_VALUES_H
#define XP_CLI_VALUES_H

#include <stdbool.h>
#include <stdint.h>

enum cli_format {
	CLI_FMT_SVG = 0,
	CLI_FMT_COLLAPSED,
	CLI_FMT_SPEEDSCOPE,
	CLI_FMT_PPROF,
	CLI_FMT_TRACE
};

/* '<0.123.0>' */
bool cli__valid_erlang_pid(const char *s);
/* A number in [lo, hi]. */
int cli__parse_number(const char *s, double lo, double hi, double *out);
/* --label KEY=VALUE as Pyroscope's name{k=v,...} can carry it. */
bool cli__valid_label(const char *s);
/* watch --rate: an interval with a unit, or snapshots per second; 100 us to 1 s. */
int cli__parse_interval(const char *s, uint64_t *ns);
/* The format a file name implies: .pb.gz/.pprof/.pb, .svg, .json, else collapsed. */
enum cli_format cli__format_from_name(const char *path);

/* record --trigger: what it asked for (0 / "": off), read by record/triggers.c and trig_msgq.c. */
struct trig_opts {
	uint64_t long_run_ns;
	uint64_t gc_ns;
	char msgq_name[256]; /* msgq=NAME:N */
	int64_t msgq_len;
	int64_t runq_len; /* runq=N */
};
/* "200ms", "1.5s", "30s", "5m", "1h", "1d" (a plain number is seconds) into ns, within
 * [lo_s, hi_s]: -d, --watch, --every, --ring, --after, --min-gap and --trigger's values. */
int cli__parse_duration(const char *s, double lo_s, double hi_s, uint64_t *ns);
/* One --trigger: "long-run=200ms", "gc=50ms", "msgq=NAME:N" or "runq=N". 0 or -EINVAL. */
int cli__parse_trigger(const char *spec, struct trig_opts *o);

#endif /* XP_CLI_VALUES_H */
