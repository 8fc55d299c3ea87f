/* The values of command-line options: pids, numbers, intervals, labels, and the format a file
 * name implies. Each parser returns 0 or -EINVAL (or a bool); cli.c says which option failed.
 * Does not own: which command takes which option (cli.c, table.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_values.h"

bool cli__valid_erlang_pid(const char *s)
{
	unsigned a, b, c;
	char end;

	return sscanf(s, "<%u.%u.%u%c", &a, &b, &c, &end) == 4 && end == '>' &&
	       s[strlen(s) - 1] == '>';
}

int cli__parse_number(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = v;
	return 0;
}

/* --label KEY=VALUE: KEY a Prometheus label name, VALUE without the characters that would
 * break Pyroscope's name{k=v,...} syntax. */
bool cli__valid_label(const char *s)
{
	const char *eq = strchr(s, '=');
	const char *p;

	if (!eq || eq == s || !eq[1] || strpbrk(eq + 1, "{},=&?# \\"))
		return false;
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (p = s; p < eq; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	}
	return true;
}

/* watch --rate: an interval with a unit ("1ms", "250us", "0.5s"), or a number of snapshots per
 * second. Between 100 us and 1 s (the agent's clamp). */
int cli__parse_interval(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	char *end;
	double v, scale = 0;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0)
			scale = units[i].ns;
	}
	if (*end == '\0')
		v = 1e9 / v; /* per second */
	else if (scale == 0)
		return -EINVAL;
	else
		v *= scale;
	if (v < 100e3 || v > 1e9)
		return -EINVAL;
	*ns = (uint64_t)v;
	return 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n > k && strcmp(s + n - k, tail) == 0;
}

enum cli_format cli__format_from_name(const char *path)
{
	size_t n = strlen(path);

	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof") || ends_with(path, ".pb"))
		return CLI_FMT_PPROF;
	if (n > 4 && strcmp(path + n - 4, ".svg") == 0)
		return CLI_FMT_SVG;
	if (ends_with(path, ".trace.json"))
		return CLI_FMT_TRACE;
	if (n > 5 && strcmp(path + n - 5, ".json") == 0)
		return CLI_FMT_SPEEDSCOPE;
	return CLI_FMT_COLLAPSED;
}

/* -d, --watch, record --every, --ring, --after, --min-gap and --trigger's durations. */
int cli__parse_duration(const char *s, double lo_s, double hi_s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double s;
	} units[] = {{"", 1},	{"us", 1e-6}, {"ms", 1e-3}, {"s", 1},
		     {"m", 60}, {"h", 3600},  {"d", 86400}};
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v <= 0)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0)
			break;
	}
	if (i == sizeof(units) / sizeof(units[0]))
		return -EINVAL;
	v *= units[i].s;
	if (v < lo_s || v > hi_s)
		return -EINVAL;
	*ns = (uint64_t)(v * 1e9 + 0.5);
	return 0;
}

int cli__parse_trigger(const char *spec, struct trig_opts *o)
{
	if (strncmp(spec, "long-run=", 9) == 0)
		return cli__parse_duration(spec + 9, 0.005, 3600, &o->long_run_ns);
	if (strncmp(spec, "gc=", 3) == 0)
		return cli__parse_duration(spec + 3, 0.005, 3600, &o->gc_ns);
	if (strncmp(spec, "msgq=", 5) == 0) {
		const char *colon = strrchr(spec + 5, ':');
		char *end;
		long long n;

		if (!colon || colon == spec + 5 ||
		    (size_t)(colon - spec - 5) >= sizeof(o->msgq_name))
			return -EINVAL;
		errno = 0;
		n = strtoll(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || n < 1)
			return -EINVAL;
		snprintf(o->msgq_name, sizeof(o->msgq_name), "%.*s", (int)(colon - spec - 5),
			 spec + 5);
		o->msgq_len = n;
		return 0;
	}
	if (strncmp(spec, "runq=", 5) == 0) {
		char *end;
		long long n;

		errno = 0;
		n = strtoll(spec + 5, &end, 10);
		if (errno || end == spec + 5 || *end || n < 1 || n > (1ll << 27))
			return -EINVAL;
		o->runq_len = n;
		return 0;
	}
	return -EINVAL;
}
