/* extrospect blame PID FUNCTION...: which Erlang code and which processes lead into a native
 * hotspot. Keeps the samples whose stack holds one of the functions (or an alias's frames),
 * ranks the innermost Erlang function above the outermost match (or, with --stacks, the whole
 * Erlang stack above it) and the processes. Owns: the aliases and which OTP can match them.
 * Does not own: sampling (run.c, sampler.c), frame classes (classify.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "blame_gc.h"
#include "classify.h"
#include "commands.h"
#include "run.h"
#include "tally.h"

#define MAX_PATTERNS 64

const char blame__usage[] =
    "Usage: extrospect blame [OPTIONS] PID FUNCTION...\n"
    "       extrospect blame --gc [OPTIONS] PID\n"
    "\n"
    "Who causes a native hotspot? Keeps the samples whose native stack contains FUNCTION (any\n"
    "of them, when several are given) and ranks the Erlang functions that led into it (the\n"
    "innermost Erlang frame above it) and the processes. FUNCTION is a frame name as `record`\n"
    "prints it: a runtime function (erts_garbage_collect, copy_struct_x), a NIF's C function, a\n"
    "JIT fragment (global::garbage_collect), an address name from `record` on OTP 28+\n"
    "('beam.smp!0x41f000'), a prefix ending in '*' (erts_garbage_collect*), or an alias:\n"
    "  gc           garbage collection. Every OTP: GC entered from Erlang code when the heap is\n"
    "               full (JIT fragment global::garbage_collect). OTP 25/27 also: GC after a BIF\n"
    "               and explicit GC (erts_garbage_collect*, erts_gc_after_bif_call*)\n"
    "  copy         deep copies of terms (copy_struct_x, size_object_x): sends, ets, spawn\n"
    "  copy_struct, size_object   one of the two (the C macros' real names)\n"
    "  send         sending a message (erl_send, erts_send_message)\n"
    "  cmp          comparing compound terms (erts_cmp_compound, eq)\n"
    "copy, copy_struct, size_object, send and cmp need the runtime's symbol names: OTP 25 and 27\n"
    "only. OTP 28+ hides them (unless debug symbols are installed): there the command stops with\n"
    "exit status 2; use gc, or the beam.smp!0x... name `record` shows for the hotspot. A name\n"
    "that no loaded file defines is refused the same way (a typo never gives an empty answer).\n"
    "\n"
    "Samples whose process had already returned from the hotspot when its stack was read show\n"
    "no Erlang frame above it: they are counted on their own line, not ranked. When no sample\n"
    "ran in FUNCTION, stderr says so and names the native frames that ran and resemble it\n"
    "(exit status 0): on OTP 25/27 the JIT's GC calls erts_garbage_collect_nobump, so\n"
    "`blame PID erts_garbage_collect` suggests it, 'gc' and 'erts_garbage_collect*'.\n"
    "\n"
    "  --stacks              rank whole Erlang stacks above the hotspot, not just the innermost\n"
    "                        function\n"
    "  --gc                  blame gc (no FUNCTION), and add garbage collection per process:\n"
    "                        GC time (samples x period), GC runs seen (consecutive samples: a\n"
    "                        lower bound of the count), major or minor where a frame names it\n"
    "                        (stripped beam.smp names neither: unknown)\n"
    "  -n, --limit N         rows per table (default 20)\n"
    "\n"
    "Examples:\n"
    "  extrospect blame -d 10 4242 gc                    # who triggers garbage collection\n"
    "  extrospect blame -d 10 --gc 4242                  # and GC time per process\n"
    "  extrospect blame -d 10 4242 copy_struct           # who deep-copies terms (OTP 25/27)\n"
    "  extrospect blame -d 10 --stacks 4242 erts_cmp_compound   # OTP 25/27\n"
    "  extrospect blame -d 10 4242 'erts_garbage_collect*'     # OTP 25/27: all of them\n"
    "  extrospect blame -d 10 4242 my_nif_function       # who calls a NIF's C function\n"
    "  extrospect blame -d 10 4242 'beam.smp!0x367e30'   # OTP 28+: an address from record\n";

struct alias {
	const char *name;
	const char *patterns[7];
};

static const struct alias aliases[] = {
    {"gc",
     {"global::garbage_collect", "erts_garbage_collect", "erts_garbage_collect_nobump",
      "erts_garbage_collect_hibernate", "erts_garbage_collect_literals", "erts_gc_after_bif_call",
      "erts_gc_after_bif_call_lhf"}},
    {"copy", {"copy_struct_x", "size_object_x"}},
    {"copy_struct", {"copy_struct_x"}},
    {"size_object", {"size_object_x"}},
    {"send", {"erl_send", "erts_send_message"}},
    {"cmp", {"erts_cmp_compound", "eq"}},
};

struct blame {
	const struct cli_opts *o;
	struct agg *agg;
	const char *patterns[MAX_PATTERNS];
	size_t npatterns;
	struct tally *callers, *procs, *matched;
	struct blame_gc *gcv; /* --gc: GC per process */
	uint64_t kept, hits, no_erlang, contradicted;
	/* Until the first hit: per native frame id, the samples it was in (stamp: the last sample
	 * counted, so a frame repeated in one stack counts once). For the zero-hit suggestions. */
	uint64_t *seen, *stamp;
	size_t nseen;
	int err;
};

#define SUGGEST_MAX 5

static const struct alias *find_alias(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		if (strcmp(aliases[i].name, name) == 0)
			return &aliases[i];
	}
	return NULL;
}

/* Names that can appear without a symbol table entry: JIT fragments and Erlang functions
 * ("global::x", "m:f/1"), address names ("beam.smp!0x..", "lib.so+0x.."), prefixes ("erts_*"). */
static bool unchecked(const char *name)
{
	size_t n = strlen(name);

	return strchr(name, ':') || strchr(name, '!') || strstr(name, "+0x") ||
	       (n && name[n - 1] == '*');
}

static bool add_pattern(struct blame *b, const char *p)
{
	if (b->npatterns >= MAX_PATTERNS)
		return false;
	b->patterns[b->npatterns++] = p;
	return true;
}

static int otp_major(const struct target *t)
{
	return atoi(t->otp_release);
}

/* An alias keeps the names this VM can show; none left is a usage error. */
static int add_alias(struct blame *b, struct classify *c, const struct alias *al, int otp,
		     char *err, size_t errlen)
{
	size_t i, kept = 0;

	for (i = 0; i < sizeof(al->patterns) / sizeof(al->patterns[0]) && al->patterns[i]; i++) {
		if (unchecked(al->patterns[i]) || classify__find_symbol(c, al->patterns[i]))
			kept += add_pattern(b, al->patterns[i]);
	}
	if (kept)
		return 0;
	snprintf(err, errlen,
		 "blame: alias '%s' needs the runtime's function names, which OTP %d's beam.smp "
		 "does not have%s (see extrospect blame --help)",
		 al->name, otp, otp >= 28 ? " (OTP 28+ hides them; gc works)" : "");
	return -EINVAL;
}

static int add_function(struct blame *b, struct classify *c, const char *fn, int otp, char *err,
			size_t errlen)
{
	const struct alias *al = find_alias(fn);

	if (al)
		return add_alias(b, c, al, otp, err, errlen);
	if (!unchecked(fn) && !classify__find_symbol(c, fn)) {
		snprintf(err, errlen,
			 "blame: '%s' is not a function of beam.smp or of any library the VM has "
			 "loaded%s",
			 fn,
			 otp >= 28 ? " (OTP 28+ hides the runtime's names: use gc, or the "
				     "beam.smp!0x... name `record` shows)"
				   : "");
		return -EINVAL;
	}
	return add_pattern(b, fn) ? 0 : -E2BIG;
}

static bool matches(const struct blame *b, const char *name)
{
	size_t i;

	for (i = 0; i < b->npatterns; i++) {
		const char *p = b->patterns[i];
		size_t n = strlen(p);

		/* With --lines an Erlang frame is "m:f/1 (m.erl:12)": "m:f/1" still names it. */
		if (n && p[n - 1] == '*'
			? strncmp(name, p, n - 1) == 0
			: strncmp(name, p, n) == 0 && (!name[n] || strncmp(name + n, " (", 2) == 0))
			return true;
	}
	return false;
}

/* The Erlang functions of frames[0..=caller], outermost first, joined by ';'. */
static void erlang_stack_text(const struct agg *a, const struct sample_record *r, int caller,
			      char *buf, size_t len)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i <= caller && off + 1 < len; i++) {
		if (agg__frame_kind(a, r->frames[i]) != FRAME_ERLANG)
			continue;
		off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ";" : "",
					agg__frame_name(a, r->frames[i]));
	}
}

/* A sample that did not match, while nothing has: count its native frames by id. */
static void note_unmatched(struct blame *b, const struct sample_record *r)
{
	size_t need = agg__nframes(b->agg);
	uint32_t i;

	if (need > b->nseen) {
		uint64_t *seen = realloc(b->seen, need * sizeof(*seen)), *stamp;

		if (!seen)
			goto nomem;
		b->seen = seen;
		stamp = realloc(b->stamp, need * sizeof(*stamp));
		if (!stamp)
			goto nomem;
		b->stamp = stamp;
		memset(seen + b->nseen, 0, (need - b->nseen) * sizeof(*seen));
		memset(stamp + b->nseen, 0, (need - b->nseen) * sizeof(*stamp));
		b->nseen = need;
	}
	for (i = 0; i < r->nframes; i++) {
		uint32_t id = r->frames[i];

		if (id >= b->nseen || agg__frame_kind(b->agg, id) == FRAME_ERLANG ||
		    b->stamp[id] == b->kept)
			continue;
		b->stamp[id] = b->kept;
		b->seen[id]++;
	}
	return;
nomem:
	b->err = -ENOMEM;
}

static void on_record(const struct sample_record *r, void *ctx)
{
	struct blame *b = ctx;
	char text[4096];
	uint32_t i;
	int caller, rc = 0;

	b->kept++;
	for (i = 0; i < r->nframes && !matches(b, agg__frame_name(b->agg, r->frames[i])); i++)
		;
	if (b->gcv && blame_gc__add(b->gcv, r, i < r->nframes))
		b->err = -ENOMEM;
	if (i == r->nframes) {
		if (!b->hits)
			note_unmatched(b, r);
		return;
	}
	b->hits++;
	b->contradicted += r->contradicted;
	caller = classify__erlang_caller(b->agg, r, i);
	if (caller < 0) {
		b->no_erlang++;
	} else {
		if (b->o->stacks)
			erlang_stack_text(b->agg, r, caller, text, sizeof(text));
		rc |=
		    tally__add(b->callers,
			       b->o->stacks ? text : agg__frame_name(b->agg, r->frames[caller]), 1);
	}
	rc |= tally__add(b->procs, agg__group_name(b->agg, r->group), 1);
	rc |= tally__add(b->matched, agg__frame_name(b->agg, r->frames[i]), 1);
	if (rc)
		b->err = -ENOMEM;
}

static void print_table(struct tally *t, uint64_t of, unsigned limit, const char *what, FILE *f)
{
	const struct tally_row *rows;
	size_t n, i;

	rows = tally__sorted(t, &n);
	fprintf(f, "  %8s  %6s  %s\n", "SAMPLES", "SHARE", what);
	for (i = 0; i < n && i < limit; i++)
		fprintf(f, "  %8llu  %5.1f%%  %s\n", (unsigned long long)rows[i].count,
			100.0 * (double)rows[i].count / (double)of, rows[i].name);
	if (n > limit)
		fprintf(f, "  (%zu more; -n shows more rows)\n", n - limit);
}

static void print_patterns(const struct blame *b, FILE *f)
{
	size_t i;

	fputs("extrospect blame: matching", f);
	for (i = 0; i < b->npatterns; i++)
		fprintf(f, "%s %s", i ? "," : "", b->patterns[i]);
	fputc('\n', f);
}

/* Does a frame that ran resemble what was asked for: one contains the other (the JIT calls
 * erts_garbage_collect_nobump, not erts_garbage_collect, on OTP 25), or they share most of a
 * prefix (a nearby beam.smp!0x... address, a misspelt suffix)? */
static bool resembles(const char *frame, const char *pattern)
{
	size_t n = strlen(pattern), cp = 0;

	if (n && pattern[n - 1] == '*')
		n--;
	if (n < 3)
		return false;
	while (cp < n && frame[cp] == pattern[cp])
		cp++;
	return memmem(frame, strlen(frame), pattern, n) ||
	       (strlen(frame) >= 4 && memmem(pattern, n, frame, strlen(frame))) ||
	       (cp >= 4 && 3 * cp >= 2 * n);
}

static bool resembles_any(const struct blame *b, const char *frame)
{
	for (size_t i = 0; i < b->npatterns; i++)
		if (resembles(frame, b->patterns[i]))
			return true;
	return false;
}

/* The native frames that ran and resemble a pattern, most samples first: up to SUGGEST_MAX ids. */
static size_t suggestions(const struct blame *b, uint32_t *ids)
{
	size_t n = 0, i, j;

	for (i = 0; i < b->nseen; i++) {
		if (!b->seen[i] || !resembles_any(b, agg__frame_name(b->agg, (uint32_t)i)))
			continue;
		if (n == SUGGEST_MAX && b->seen[ids[n - 1]] >= b->seen[i])
			continue;
		j = n < SUGGEST_MAX ? n++ : SUGGEST_MAX - 1;
		for (; j > 0 && b->seen[ids[j - 1]] < b->seen[i]; j--)
			ids[j] = ids[j - 1];
		ids[j] = (uint32_t)i;
	}
	return n;
}

/* "(try 'gc' or 'erts_garbage_collect*')": an alias that names a suggested frame, and each
 * pattern as a prefix when a suggestion starts with it. */
static void print_tries(const struct blame *b, const uint32_t *ids, size_t n, FILE *f)
{
	const char *sep = " (try ";
	size_t a, i, k;

	for (a = 0; a < sizeof(aliases) / sizeof(aliases[0]); a++) {
		bool hit = false;

		for (i = 0; i < n && !hit; i++)
			for (k = 0; k < 7 && aliases[a].patterns[k] && !hit; k++)
				hit = !strcmp(aliases[a].patterns[k],
					      agg__frame_name(b->agg, ids[i]));
		for (k = 0; k < b->o->nfunctions && hit; k++)
			hit = strcmp(b->o->functions[k], aliases[a].name) != 0;
		if (hit) {
			fprintf(f, "%s'%s'", sep, aliases[a].name);
			sep = " or ";
		}
	}
	for (k = 0; k < b->npatterns; k++) {
		const char *p = b->patterns[k];
		size_t len = strlen(p);
		bool hit = false;

		for (i = 0; i < n && !hit && len && p[len - 1] != '*'; i++)
			hit = !strncmp(agg__frame_name(b->agg, ids[i]), p, len);
		if (hit) {
			fprintf(f, "%s'%s*'", sep, p);
			sep = " or ";
		}
	}
	fputs(strcmp(sep, " or ") ? "\n" : ")\n", f);
}

/* No sample ran in what was asked for: say so on stderr, with the frames that did run and
 * resemble it (the exit status stays 0: the sampling worked, and the answer is "nothing"). */
static void print_no_hits(const struct blame *b, const struct run_ctx *ctx, FILE *f)
{
	uint32_t ids[SUGGEST_MAX];
	size_t n = suggestions(b, ids), i;

	fputs("extrospect: blame: no sample ran in", f);
	for (i = 0; i < b->o->nfunctions; i++)
		fprintf(f, "%s %s", i ? "," : "", b->o->functions[i]);
	if (!n) {
		fprintf(f,
			"; no frame that ran resembles it: sample longer (-d), or check the name "
			"against `extrospect record`%s\n",
			otp_major(ctx->t) >= 28
			    ? " (OTP 28+ names only JIT fragments, global::..., "
			      "and beam.smp!0x... addresses)"
			    : "");
		return;
	}
	fputs("; frames that did and resemble it:", f);
	for (i = 0; i < n; i++)
		fprintf(f, "%s %s (%llu samples)", i ? "," : "", agg__frame_name(b->agg, ids[i]),
			(unsigned long long)b->seen[ids[i]]);
	print_tries(b, ids, n, f);
}

static void print_report(struct blame *b, const struct run_ctx *ctx, FILE *f)
{
	const struct cli_opts *o = b->o;

	print_patterns(b, f);
	fprintf(f, "%llu of %llu samples (%.1f%%) ran in it, in %.1fs\n",
		(unsigned long long)b->hits, (unsigned long long)b->kept,
		b->kept ? 100.0 * (double)b->hits / (double)b->kept : 0.0, ctx->final.elapsed_s);
	if (!b->hits) {
		fflush(f);
		print_no_hits(b, ctx, stderr);
		return;
	}
	fprintf(f, "\n%s above it:\n",
		o->stacks ? "Erlang stacks (outermost first)" : "Erlang functions (innermost)");
	print_table(b->callers, b->hits, o->limit, o->stacks ? "STACK" : "FUNCTION", f);
	if (b->no_erlang)
		fprintf(f,
			"  %8llu  %5.1f%%  [no Erlang frame: the process had returned from it when "
			"its stack was read]\n",
			(unsigned long long)b->no_erlang,
			100.0 * (double)b->no_erlang / (double)b->hits);
	fputs("\nProcesses:\n", f);
	print_table(b->procs, b->hits, o->limit, "PROCESS", f);
	fputs("\nMatched frames:\n", f);
	print_table(b->matched, b->hits, o->limit, "FRAME", f);
	if (b->gcv)
		blame_gc__print(b->gcv, o->limit, f);
	if (o->skid_summary)
		fprintf(f, "\n%llu of the matched samples were contradicted by a later read\n",
			(unsigned long long)b->contradicted);
}

static int setup(struct blame *b, struct target *t, char *err, size_t errlen)
{
	struct classify *c = NULL;
	int otp = otp_major(t), rc;
	size_t i;

	if ((rc = classify__new(t, b->agg, &c)))
		return rc;
	for (i = 0; i < b->o->nfunctions && !rc; i++)
		rc = add_function(b, c, b->o->functions[i], otp, err, errlen);
	if (b->o->gc && !rc)
		rc = add_function(b, c, "gc", otp, err, errlen);
	classify__free(c);
	if (rc)
		return rc == -EINVAL ? CMD_EUSAGE : rc;
	if (tally__new(&b->callers) || tally__new(&b->procs) || tally__new(&b->matched))
		return -ENOMEM;
	if (b->o->gc && blame_gc__new(b->agg, t, b->o->freq_hz, &b->gcv))
		return -ENOMEM;
	return 0;
}

int cmd__blame(const struct cli_opts *o, struct target *t, volatile sig_atomic_t *stop, char *err,
	       size_t errlen)
{
	struct run_ctx ctx = {
	    .t = t, .stop = stop, .progress = isatty(STDERR_FILENO), .verbose = o->verbose};
	struct blame b = {.o = o};
	int rc;

	if ((rc = agg__new(&ctx.agg)))
		return rc;
	b.agg = ctx.agg;
	if ((rc = setup(&b, t, err, errlen)))
		goto cleanup;
	cmd__sampler_opts(o, &ctx.opts);
	ctx.opts.only_erlang = false; /* the hotspot is a native frame */
	ctx.opts.on_record = on_record;
	ctx.opts.record_ctx = &b;
	if ((rc = run__sample(&ctx))) {
		snprintf(err, errlen, "%s", ctx.err);
		goto cleanup;
	}
	if ((rc = b.err)) {
		snprintf(err, errlen, "out of memory");
		goto cleanup;
	}
	print_report(&b, &ctx, stdout);
	fflush(stdout);
	run__summary(&ctx, "the ranking", stderr);
	rc = ctx.target_exited ? TARGET_EGONE : 0;
cleanup:
	tally__free(b.callers);
	tally__free(b.procs);
	tally__free(b.matched);
	blame_gc__free(b.gcv);
	free(b.seen);
	free(b.stamp);
	agg__free(ctx.agg);
	return rc;
}
