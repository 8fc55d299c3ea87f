/* Offline replay of the checked-in captures (test/captures/, files *.xpcap,
 * tools/refresh-captures.sh): every sample is resolved again through the sampler's own resolve()
 * from what the capture recorded, and must give exactly the stack it gave live; then a few named
 * facts per capture (fragments named by their frameless callers, GC and dirty samples under their
 * process, a deep native chain under its Erlang caller). No VM, no root. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "replay.h"

#define MAX_SHOWN 5 /* mismatches printed per capture */

/* The innermost Erlang frame ("mod:fun/N", not global:: or a label) of a line, and its leaf. */
static void innermost(const char *line, char *erl, size_t elen, char *leaf, size_t llen)
{
	const char *p = strchr(line, ';');

	erl[0] = leaf[0] = 0;
	while (p) {
		const char *q = strchr(p + 1, ';');
		size_t n = q ? (size_t)(q - p - 1) : strlen(p + 1);
		char f[512];

		snprintf(f, sizeof(f), "%.*s", (int)n, p + 1);
		if (strchr(f, ':') && strchr(f, '/') && !strstr(f, "::") && f[0] != '[')
			snprintf(erl, elen, "%s", f);
		snprintf(leaf, llen, "%s", f);
		p = q;
	}
}

struct fact {
	const char *name;
	const char *group;  /* the line starts with a pid and this label */
	const char *leaf;   /* prefix of the leaf frame, or NULL: any */
	const char *frame;  /* a frame the stack holds, or NULL */
	const char *erlang; /* the innermost Erlang frame, or NULL: not checked */
	const char *outer;  /* the outermost frame (the stack is complete to it), or NULL */
	unsigned bad_max;   /* contradictions allowed per 100 samples seen (0: none) */
};

/* Facts every capture of xp_capture.erl holds. Each must be seen at least once, and never
 * contradicted: every sample matching group + leaf (+ frame) has that innermost Erlang frame. */
static const struct fact facts[] = {
    {"fib/1 under xp_cap_plain", " xp_cap_plain;", "xp_capture:fib/1", NULL, "xp_capture:fib/1",
     NULL, 0},
    {"length/1's fragment named by its frameless caller f_len/1", " xp_cap_frag;", NULL,
     ";global::i_length_body_shared;", "xp_capture:f_len/1", NULL, 0},
    {"div's fragment named by its frameless caller f_div/2", " xp_cap_frag;", NULL,
     ";global::int_div_rem_body_shared;", "xp_capture:f_div/2", NULL, 0},
    {"*'s fragment named by its frameless caller f_mul/2", " xp_cap_frag;", NULL,
     ";global::times_body_shared;|;global::mul_add_body_shared;", "xp_capture:f_mul/2", NULL, 0},
    /* OTP 28+ beam.smp has no symbols: the BIF is named by the fragment that calls it. */
    {"term_to_binary/1 (a BIF call) under bif_frame/1", " xp_cap_frag;", NULL,
     ";global::call_light_bif_shared;|;global::call_bif_shared;", "xp_capture:bif_frame/1", NULL,
     0},
    {"garbage collection under build/2", " xp_cap_gc;", NULL, ";global::garbage_collect;",
     "xp_capture:build/2", NULL, 0},
    {"dirty scheduler time (the BIF, its GC) under dirty/1", " xp_cap_dirty;", NULL, NULL,
     "xp_capture:dirty/1", NULL, 0},
    {"bignum multiplication (a deep native chain) under bignum/1", " xp_cap_bignum;", NULL,
     ";global::times_body_shared;|;global::mul_add_body_shared;", "xp_capture:bignum/1", NULL, 0},
    /* Binary construction and matching: every stack complete to bin/3 (a binary comprehension
     * reached by a tail call into its prologue range, on 26+), and the frameless function
     * named under the fragments that match utf8 (words pushed above the return address) or
     * allocate on the runtime stack (bs_init_bits_shared on 26+). */
    {"binary construction and matching: stacks complete to bin/3", " xp_cap_bin;", NULL,
     "xp_capture:'-f_lbc/1-lbc$^0/", NULL, "xp_capture:bin/3", 0},
    {"utf8 matching named by its frameless function f_utf8/2", " xp_cap_bin;", NULL,
     ";global::bs_get_utf8|;xp_capture:f_utf8/2", "xp_capture:f_utf8/2", "xp_capture:bin/3", 0},
    /* The sampler takes the builder's return address from the fragment's frame on the runtime
     * stack only when the unwound rbp is that frame: a sample at the C function's first
     * instruction has been seen with another rbp (1 in 250 on OTP 29), and falls to bin/3. */
    {"binary allocation named by its frameless builder f_ints/1", " xp_cap_bin;", NULL,
     ";global::bs_init_bits_shared|;xp_capture:f_ints/1", "xp_capture:f_ints/1", "xp_capture:bin/3",
     2},
};

/* The outermost frame of line (after its group), into out. */
static void outermost(const char *line, char *out, size_t len)
{
	const char *p = strchr(line, ';'), *q;

	out[0] = 0;
	if (!p)
		return;
	q = strchr(p + 1, ';');
	snprintf(out, len, "%.*s", (int)(q ? (size_t)(q - p - 1) : strlen(p + 1)), p + 1);
}

/* Does line hold one of the '|'-separated alternatives? */
static bool holds(const char *line, const char *alternatives)
{
	char buf[256], *save = NULL, *a;

	snprintf(buf, sizeof(buf), "%s", alternatives);
	for (a = strtok_r(buf, "|", &save); a; a = strtok_r(NULL, "|", &save)) {
		if (strstr(line, a))
			return true;
	}
	return false;
}

static bool matches(const struct fact *f, const char *line, const char *leaf)
{
	const char *g = strstr(line, f->group);

	return g && !memchr(line, ';', (size_t)(g - line)) &&
	       (!f->leaf || strncmp(leaf, f->leaf, strlen(f->leaf)) == 0) &&
	       (!f->frame || holds(line, f->frame));
}

static void replay_one(const char *dir, const char *file)
{
	unsigned seen[sizeof(facts) / sizeof(facts[0])] = {0},
				      bad[sizeof(seen) / sizeof(seen[0])] = {0};
	char path[1024], err[256] = "", name[256], erl[512], leaf[512], outer[512];
	const char *got, *want;
	struct replay *r;
	size_t n = 0, same = 0, i;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	snprintf(name, sizeof(name), "%s opens", file);
	if (!check_i64(name, 0, replay__open(path, &r, err, sizeof(err)))) {
		printf("  %s\n", err);
		return;
	}
	while (replay__next(r, &got, &want) == 0) {
		n++;
		if (getenv("XP_REPLAY_PRINT"))
			printf("  %s\n", want);
		if (strcmp(got, want) == 0)
			same++;
		else if (n - same <= MAX_SHOWN)
			printf("  sample %zu:\n    live:   %s\n    replay: %s\n", n - 1, want, got);
		/* The facts are asserted on the stacks replayed, not on those recorded. */
		innermost(got, erl, sizeof(erl), leaf, sizeof(leaf));
		outermost(got, outer, sizeof(outer));
		for (i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
			if (!matches(&facts[i], got, leaf))
				continue;
			seen[i]++;
			if (((facts[i].erlang && strcmp(erl, facts[i].erlang) != 0) ||
			     (facts[i].outer && strcmp(outer, facts[i].outer) != 0)) &&
			    bad[i]++ < 3)
				printf("  %s contradicted: %s\n", facts[i].name, got);
		}
	}
	snprintf(name, sizeof(name), "%s: every sample replays to its live stack (%zu)", file, n);
	check_i64(name, (int64_t)n, (int64_t)same);
	for (i = 0; i < sizeof(facts) / sizeof(facts[0]); i++) {
		bool ok = seen[i] > 0 && 100 * bad[i] <= facts[i].bad_max * seen[i];

		snprintf(name, sizeof(name), "%s: %s (%u samples, %u contradicting)", file,
			 facts[i].name, seen[i], bad[i]);
		check_report(name, ok, "seen, never contradicted (or at most as allowed)",
			     !seen[i] ? "never seen" : "contradicted");
	}
	replay__free(r);
}

int main(void)
{
	DIR *d = opendir(XP_CAPTURES_DIR);
	struct dirent *e;
	unsigned files = 0;

	if (!d) {
		printf("FAIL %s: %s\n", XP_CAPTURES_DIR, strerror(errno));
		return 1;
	}
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);

		if (l > 6 && strcmp(e->d_name + l - 6, ".xpcap") == 0) {
			replay_one(XP_CAPTURES_DIR, e->d_name);
			files++;
		}
	}
	closedir(d);
	check_report("captures found", files > 0, "at least one", "none");
	return check_done();
}
