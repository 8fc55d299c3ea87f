/* A tiny check harness for the C unit tests: one "PASS name" / "FAIL name: expected X got Y" line
 * per check, a "N passed, M failed" summary, exit 1 on any failure and 77 (ctest SKIP_RETURN_CODE)
 * for a missing capability, always with a printed reason.
 * Does not own: fixtures or processes; a test program includes it once. */
#ifndef XP_CHECK_H
#define XP_CHECK_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct check_counts {
	unsigned passed, failed;
};

/* One counter pair per test program; only this harness writes it. */
static struct check_counts check_counts;

static inline bool check_report(const char *name, bool ok, const char *expected, const char *got)
{
	if (ok) {
		check_counts.passed++;
		printf("PASS %s\n", name);
	} else {
		check_counts.failed++;
		printf("FAIL %s: expected %s got %s\n", name, expected, got);
	}
	fflush(stdout);
	return ok;
}

static inline bool check_i64(const char *name, int64_t expected, int64_t got)
{
	char e[32], g[32];

	snprintf(e, sizeof(e), "%" PRId64, expected);
	snprintf(g, sizeof(g), "%" PRId64, got);
	return check_report(name, expected == got, e, g);
}

static inline bool check_u64(const char *name, uint64_t expected, uint64_t got)
{
	char e[32], g[32];

	snprintf(e, sizeof(e), "0x%" PRIx64, expected);
	snprintf(g, sizeof(g), "0x%" PRIx64, got);
	return check_report(name, expected == got, e, g);
}

static inline bool check_str(const char *name, const char *expected, const char *got)
{
	bool ok = expected && got && !strcmp(expected, got);

	return check_report(name, ok, expected ? expected : "(null)", got ? got : "(null)");
}

#define CHECK(name, cond)	       check_report((name), (cond), "true", "false")
#define CHECK_INT(name, expected, got) check_i64((name), (int64_t)(expected), (int64_t)(got))
#define CHECK_U64(name, expected, got) check_u64((name), (uint64_t)(expected), (uint64_t)(got))
#define CHECK_STR(name, expected, got) check_str((name), (expected), (got))

/* The exit code for main: prints the summary. */
static inline int check_done(void)
{
	printf("%u passed, %u failed\n", check_counts.passed, check_counts.failed);
	return check_counts.failed ? 1 : 0;
}

/* The exit code for a test that cannot run here. */
static inline int check_skip(const char *reason)
{
	printf("SKIP: %s\n", reason);
	printf("%u passed, %u failed\n", check_counts.passed, check_counts.failed);
	return check_counts.failed ? 1 : 77;
}

#endif /* XP_CHECK_H */
