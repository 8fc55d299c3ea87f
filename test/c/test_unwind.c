/* unwind.c tests on live targets sampled with perf: a purpose-built C program (known chain
 * main -> outer_fn -> middle_fn -> leaf_spin, built here with cc, then a stripped copy), a stop
 * at a pretend-JIT function with CFI-recovered registers, fuzzed registers and stacks, and
 * informative runs on busy OTP VMs (25 on the host, 29 in its chroot when present).
 * Exits 77 when cc is missing or perf_event_open is refused. Does not own: perf.c's own checks.
 * Over 500 lines: the tests of one object, one short function each, kept in its one file. */
#include "check.h"
#include "elfsym.h"
#include "kcapture_layout.h" /* KCAP_BELOW_SP */
#include "mem.h"
#include "perf.h"
#include "proc.h"
#include "unwind.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define R13_MARK	 0x1313131313131313ull /* as in fixtures/unwind_target.c */
#define RBP_MARK	 0x6262626262626262ull
#define CFLAGS		 "-O1 -fomit-frame-pointer -fasynchronous-unwind-tables"
#define OTP_SID		 "/var/cache/extrospect/otp-sid"
#define MAX_TIDS	 64
#define KCAP_BELOW_WORDS (KCAP_BELOW_SP / 8) /* as much as the in-kernel capture copies */

static const struct perf_opts opts_16k = {
    PERF_EV_CPU_CLOCK, 997, 16384, 512, 0, 0, false, false, false};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- the C target ---- */

struct target {
	pid_t pid;
	uint64_t outer_lo, outer_hi, middle_lo, middle_hi, leaf_lo, leaf_hi, middle_cfa;
};

static bool in(uint64_t pc, uint64_t lo, uint64_t hi)
{
	return pc >= lo && pc < hi;
}

/* The ready file gives the functions' runtime addresses; exe's .symtab their sizes. */
static int target_read_ready(const char *path, const struct elf_image *exe, struct target *t)
{
	static const char *const fn[3] = {"outer_fn", "middle_fn", "leaf_spin"};
	uint64_t *lo[3] = {&t->outer_lo, &t->middle_lo, &t->leaf_lo};
	uint64_t *hi[3] = {&t->outer_hi, &t->middle_hi, &t->leaf_hi};
	FILE *f = fopen(path, "r");
	unsigned long v[4];
	struct elf_sym sym;
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%lx %lx %lx %lx", &v[0], &v[1], &v[2], &v[3]);
	fclose(f);
	if (n != 4)
		return -1;
	for (int i = 0; i < 3; i++) {
		if (elf_image__symbol(exe, fn[i], &sym) || !sym.size)
			return -1;
		*lo[i] = v[i];
		*hi[i] = v[i] + sym.size;
	}
	t->middle_cfa = v[3];
	return 0;
}

/* Start argv[0] with argv, then poll for its ready file (never a fixed sleep): 0 or -1. */
static int child_start(char *const argv[], const char *ready, pid_t *pid)
{
	struct timespec tick = {0, 1000000};

	unlink(ready);
	fflush(stdout);
	*pid = fork();
	if (*pid < 0)
		return -1;
	if (*pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(126);
		execvp(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; i < 20000; i++) {
		if (access(ready, R_OK) == 0)
			return 0;
		if (waitpid(*pid, NULL, WNOHANG) == *pid)
			return -1;
		nanosleep(&tick, NULL);
	}
	return -1;
}

static void child_stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* Sample tids until want samples arrived or max_ns passed (the box may be busy: cpu-clock only
 * counts while the target runs): 0, 77 when perf_event_open is refused, or -errno. */
static int sample_until(const pid_t *tids, size_t n, uint64_t want, uint64_t max_ns,
			perf_sample_fn fn, void *ctx)
{
	struct perf_session *s = NULL;
	const struct perf_stats *st;
	uint64_t end;
	int err = perf_session__open(&s, tids, n, &opts_16k);

	if (err == -EACCES || err == -EPERM)
		return 77;
	if (err)
		return err;
	st = perf_session__stats(s);
	for (end = now_ns() + max_ns; now_ns() < end && st->samples < want && err >= 0;)
		err = perf_session__poll(s, 10, fn, ctx);
	if (st->lost || st->throttled)
		printf("# perf: %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64 " throttled\n",
		       st->samples, st->lost, st->throttled);
	perf_session__free(s);
	return err < 0 ? err : 0;
}

/* Time per unwind: mean and median (the first unwinds at a pc pay for CFI parsing). */
#define LAT_MAX 8192

struct lat {
	uint64_t ns[LAT_MAX], sum, n;
};

static void lat_add(struct lat *l, uint64_t t0)
{
	uint64_t d = now_ns() - t0;

	l->sum += d;
	if (l->n < LAT_MAX)
		l->ns[l->n] = d;
	l->n++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void lat_print(const char *what, struct lat *l)
{
	size_t k = l->n < LAT_MAX ? l->n : LAT_MAX;

	qsort(l->ns, k, sizeof(l->ns[0]), cmp_u64);
	printf("# %s: %" PRIu64 " unwinds, mean %.1f us, median %.1f us, p99 %.1f us\n", what, l->n,
	       l->n ? (double)l->sum / 1e3 / (double)l->n : 0.0,
	       k ? (double)l->ns[k / 2] / 1e3 : 0.0, k ? (double)l->ns[k * 99 / 100] / 1e3 : 0.0);
}

struct attach {
	struct proc_maps *maps;
	struct mem *mem;
	struct unwinder *u;
};

static int attach_open(struct attach *a, pid_t pid)
{
	int err;

	memset(a, 0, sizeof(*a));
	if ((err = proc_maps__load(pid, &a->maps)) || (err = mem__open_live(&a->mem, pid)))
		return err;
	return unwinder__new(&a->u, pid, a->maps, a->mem);
}

static void attach_close(struct attach *a)
{
	unwinder__free(a->u);
	mem__free(a->mem);
	proc_maps__free(a->maps);
}

static void print_stats(const char *what, const struct unwinder *u)
{
	const struct unwind_stats *st = unwinder__stats(u);

	printf("# %s: %.1f frames/unwind; reads: stack %" PRIu64 " live %" PRIu64 " failed %" PRIu64
	       "; fde cache %" PRIu64 "/%" PRIu64 "; modules %u (+%u failed); fast path %" PRIu64
	       "; stops",
	       what, st->unwinds ? (double)st->frames / (double)st->unwinds : 0.0, st->read_stack,
	       st->read_live, st->read_failed, st->fde_hits, st->fde_lookups, st->modules,
	       st->modules_failed, st->fast);
	for (int i = 0; i < UNWIND_STOP_COUNT; i++)
		printf(" %s %" PRIu64, unwinder__stop_name(i), st->stops[i]);
	printf("\n");
}

/* ---- the fast path against libdwfl ---- */

static uint64_t fast_compared, fast_mismatches, fast_used;

static bool same_unwind(const struct unwind_result *a, const struct unwind_result *b)
{
	if (a->stop != b->stop || a->nframes != b->nframes)
		return false;
	for (size_t i = 0; i < a->nframes; i++) {
		if (a->frames[i].pc != b->frames[i].pc ||
		    a->frames[i].activation != b->frames[i].activation)
			return false;
	}
	return a->stop != UNWIND_STOP_JIT ||
	       (a->jit_pc == b->jit_pc && a->jit_sp == b->jit_sp &&
		a->jit_bp_valid == b->jit_bp_valid && a->jit_r13_valid == b->jit_r13_valid &&
		(!a->jit_bp_valid || a->jit_bp == b->jit_bp) &&
		(!a->jit_r13_valid || a->jit_r13 == b->jit_r13));
}

/* Unwinds with the fast path into r (timed by the caller), then again with libdwfl alone: the
 * two must agree on every sample. */
static void unwind_both(struct unwinder *u, const struct perf_sample *s, unwind_is_jit_fn is_jit,
			void *ctx, struct unwind_result *r, uint64_t *ns)
{
	static struct unwind_result slow;
	uint64_t t0 = now_ns(), before = unwinder__stats(u)->fast;

	unwinder__unwind(u, s, is_jit, ctx, r);
	fast_used += unwinder__stats(u)->fast > before;
	if (ns)
		*ns += now_ns() - t0;
	unwinder__set_fast(u, false);
	unwinder__unwind(u, s, is_jit, ctx, &slow);
	unwinder__set_fast(u, true);
	fast_compared++;
	if (same_unwind(r, &slow))
		return;
	if (fast_mismatches++ < 5)
		printf("# fast/libdwfl differ at ip 0x%" PRIx64 ": stop %s/%s, frames %zu/%zu\n",
		       s->regs[PERF_R_IP], unwinder__stop_name(r->stop),
		       unwinder__stop_name(slow.stop), r->nframes, slow.nframes);
}

/* ---- registers below the stack pointer: a function in its epilogue ---- */

/* xp_epi_fn has popped r13, yet (as compilers emit it) its CFI still says r13 is saved at CFA -
 * 16: at xp_epi_ret that is 8 bytes below rsp, where live memory no longer holds it. */
extern const char xp_epi_fn[], xp_epi_ret[];
__asm__(".text\n"
	".globl xp_epi_fn\n"
	".type xp_epi_fn, @function\n"
	"xp_epi_fn:\n"
	".cfi_startproc\n"
	"push %r13\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_offset r13, -16\n"
	"pop %r13\n"
	".cfi_adjust_cfa_offset -8\n"
	".globl xp_epi_ret\n"
	"xp_epi_ret:\n"
	"ret\n"
	".cfi_endproc\n"
	".size xp_epi_fn, .-xp_epi_fn\n");

#define EPI_JIT_RA 0x7f0000001000ull /* the pretend JIT code xp_epi_fn returns to */

static bool epi_is_jit(uint64_t pc, void *ctx)
{
	(void)ctx;
	return pc >= EPI_JIT_RA - 16 && pc < EPI_JIT_RA + 16;
}

/* A sample at xp_epi_ret of this process, its stack copy starting at rsp: r13 for the JIT caller
 * comes from the copy of the words below rsp when one is given (the in-kernel capture's), else
 * from live memory; the fast path and libdwfl agree. */
static void test_below(void)
{
	static uint64_t mem_words[8]; /* the live stack: [0..3] below rsp, rsp at [4] */
	uint64_t below[KCAP_BELOW_WORDS] = {0}, copy[4] = {EPI_JIT_RA, 0, 0, 0};
	struct perf_sample s = {.tid = (uint32_t)getpid(), .regs_valid = true};
	struct unwind_result r;
	struct attach a = {0};

	if (!CHECK_INT("below.attach_self", 0, attach_open(&a, getpid())))
		return;
	mem_words[3] = 0x2222; /* stale: what the next call left there */
	below[KCAP_BELOW_WORDS - 1] = 0x3333;
	s.regs[PERF_R_IP] = s.ip = (uint64_t)(uintptr_t)xp_epi_ret;
	s.regs[PERF_R_SP] = (uint64_t)(uintptr_t)&mem_words[4];
	s.regs[PERF_R_R13] = 0x1111; /* the popped value's successor: not the caller's */
	s.stack = (const uint8_t *)copy;
	s.stack_size = sizeof(copy);
	unwinder__unwind(a.u, &s, epi_is_jit, NULL, &r);
	CHECK("below.live.reaches_jit", r.stop == UNWIND_STOP_JIT && r.nframes == 1);
	CHECK("below.live.r13_read_live", r.jit_r13_valid && r.jit_r13 == 0x2222);
	unwinder__set_extra(a.u, UNWIND_EXTRA_BELOW, s.regs[PERF_R_SP] - sizeof(below),
			    (const uint8_t *)below, sizeof(below));
	for (int fast = 1; fast >= 0; fast--) {
		char name[64];

		unwinder__set_fast(a.u, fast);
		unwinder__unwind(a.u, &s, epi_is_jit, NULL, &r);
		snprintf(name, sizeof(name), "below.%s.reaches_jit", fast ? "fast" : "libdwfl");
		CHECK(name, r.stop == UNWIND_STOP_JIT && r.nframes == 1 && r.jit_pc == EPI_JIT_RA &&
				r.jit_sp == s.regs[PERF_R_SP] + 8);
		snprintf(name, sizeof(name), "below.%s.r13_from_copy", fast ? "fast" : "libdwfl");
		CHECK(name, r.jit_r13_valid && r.jit_r13 == 0x3333);
	}
	unwinder__set_fast(a.u, true);
	unwinder__set_extra(a.u, UNWIND_EXTRA_BELOW, 0, NULL, 0);
	attach_close(&a);
}

/* ---- the known chain, and a stop at a pretend-JIT outer_fn ---- */

struct chain_run {
	struct unwinder *u;
	const struct target *t;
	uint64_t samples, chain_ok, jit_ok, jit_considered, short_ok;
	struct lat lat;
	char example[512];
};

static bool outer_is_jit(uint64_t pc, void *ctx)
{
	const struct target *t = ctx;

	return in(pc, t->outer_lo, t->outer_hi);
}

static bool chain_matches(struct unwinder *u, const struct unwind_result *r, char *ex, size_t len)
{
	static const char *const want[] = {"leaf_spin", "middle_fn", "outer_fn", "main"};
	char name[128];
	size_t off = 0;
	bool ok = r->nframes >= 4 && r->stop == UNWIND_STOP_END;

	for (size_t i = 0; i < r->nframes; i++) {
		unwinder__name_frame(u, &r->frames[i], false, name, sizeof(name));
		if (i < 4 && strcmp(name, want[i]))
			ok = false;
		if (ex && off < len)
			off += (size_t)snprintf(ex + off, len - off, "%s%s", i ? " <- " : "", name);
	}
	if (ex && off < len)
		snprintf(ex + off, len - off, " [%s]", unwinder__stop_name(r->stop));
	return ok;
}

static bool jit_stop_ok(const struct target *t, const struct perf_sample *s,
			const struct unwind_result *r)
{
	return r->stop == UNWIND_STOP_JIT && r->nframes == 2 &&
	       in(r->frames[0].pc, t->leaf_lo, t->leaf_hi) &&
	       in(r->frames[1].pc, t->middle_lo, t->middle_hi) &&
	       in(r->jit_pc - 1, t->outer_lo, t->outer_hi) && r->jit_sp == t->middle_cfa &&
	       r->jit_sp > s->regs[PERF_R_SP] && r->jit_r13_valid && r->jit_r13 == R13_MARK &&
	       r->jit_bp_valid && r->jit_bp == RBP_MARK;
}

static void on_chain_sample(const struct perf_sample *s, void *ctx)
{
	struct chain_run *c = ctx;
	struct unwind_result r;
	uint64_t t0 = now_ns();

	struct perf_sample cut = *s;

	c->samples++;
	unwinder__unwind(c->u, s, NULL, NULL, &r);
	lat_add(&c->lat, t0);
	c->chain_ok +=
	    chain_matches(c->u, &r, c->example[0] ? NULL : c->example, sizeof(c->example));
	/* A 64-byte stack copy: every outer frame is read from the (still spinning) target. */
	cut.stack_size = cut.stack_size < 64 ? cut.stack_size : 64;
	unwinder__unwind(c->u, &cut, NULL, NULL, &r);
	c->short_ok += chain_matches(c->u, &r, NULL, 0);
	if (!s->regs_valid || !in(s->regs[PERF_R_IP], c->t->leaf_lo, c->t->leaf_hi))
		return;
	c->jit_considered++;
	t0 = now_ns();
	unwinder__unwind(c->u, s, outer_is_jit, (void *)c->t, &r);
	lat_add(&c->lat, t0);
	c->jit_ok += jit_stop_ok(c->t, s, &r);
}

static void chain_report(struct chain_run *c);

static int test_chain(struct unwinder *u, const struct target *t)
{
	struct chain_run *c = calloc(1, sizeof(*c));
	int err = c ? 0 : -ENOMEM;

	if (c) {
		c->u = u;
		c->t = t;
		err = sample_until(&t->pid, 1, 500, 5000000000u, on_chain_sample, c);
	}
	if (!err)
		chain_report(c);
	free(c);
	return err;
}

static void chain_report(struct chain_run *c)
{
	printf("# chain: %" PRIu64 " samples, %" PRIu64 " exact (%" PRIu64
	       " with a 64-byte stack copy); e.g. %s\n",
	       c->samples, c->chain_ok, c->short_ok, c->example);
	CHECK("chain.samples_gt_200", c->samples > 200);
	CHECK("chain.exact_chain_90pct", c->chain_ok * 10 >= c->samples * 9);
	CHECK("chain.exact_from_live_reads_90pct", c->short_ok * 10 >= c->samples * 9);
	printf("# jit stop: %" PRIu64 "/%" PRIu64 " samples in leaf_spin stop as expected\n",
	       c->jit_ok, c->jit_considered);
	CHECK("jit.stop_after_middle_90pct",
	      c->jit_considered > 200 && c->jit_ok * 10 >= c->jit_considered * 9);
	lat_print("C target (full stack copy)", &c->lat);
	print_stats("C target", c->u);
}

/* ---- unnamed code (a stripped copy): "unwind_target!0xSTART+0xOFF" ---- */

struct stripped_run {
	struct unwinder *u;
	const struct target *t;
	uint64_t middle_vaddr, samples, in_middle, named_ok, keyed_ok;
	char example[128];
};

static void on_stripped_sample(const struct perf_sample *s, void *ctx)
{
	struct stripped_run *c = ctx;
	char name[128], want[128], plain[128];
	struct unwind_result r;
	const struct unwind_frame *f = &r.frames[1];

	c->samples++;
	unwinder__unwind(c->u, s, NULL, NULL, &r);
	if (r.nframes < 2 || !in(f->pc - 1, c->t->middle_lo, c->t->middle_hi))
		return;
	c->in_middle++;
	unwinder__name_frame(c->u, f, true, name, sizeof(name));
	unwinder__name_frame(c->u, f, false, plain, sizeof(plain));
	snprintf(want, sizeof(want), "unwind_target!0x%" PRIx64 "+0x%" PRIx64, c->middle_vaddr,
		 f->pc - c->t->middle_lo);
	c->named_ok +=
	    !strcmp(name, want) && !strncmp(plain, want, strlen(plain)) && !strchr(plain, '+');
	{ /* no symbol: the key is the function's start from CFI, its kind apart */
		uint64_t size = 1;

		c->keyed_ok +=
		    unwinder__name_key(c->u, f, &size) == (c->t->middle_lo | (1ull << 63)) &&
		    size == 0;
	}
	if (!c->example[0])
		snprintf(c->example, sizeof(c->example), "%s", name);
}

static int test_stripped(const char *exe, const char *ready, const struct elf_image *img)
{
	char *argv[] = {(char *)exe, (char *)ready, NULL};
	struct stripped_run c = {0};
	struct target t = {0};
	struct attach a = {0};
	struct elf_sym sym;
	int err = -1;

	if (elf_image__symbol(img, "middle_fn", &sym))
		goto cleanup;
	c.middle_vaddr = sym.value;
	if (child_start(argv, ready, &t.pid) || target_read_ready(ready, img, &t))
		goto cleanup;
	if ((err = attach_open(&a, t.pid)))
		goto cleanup;
	c.u = a.u;
	c.t = &t;
	if ((err = sample_until(&t.pid, 1, 250, 3000000000u, on_stripped_sample, &c)))
		goto cleanup;
	printf("# stripped: %" PRIu64 " samples, %" PRIu64 " with middle_fn as caller, %" PRIu64
	       " named as expected, e.g. %s\n",
	       c.samples, c.in_middle, c.named_ok, c.example);
	CHECK("stripped.middle_named_from_cfi", c.in_middle > 100 && c.named_ok == c.in_middle);
	CHECK("stripped.middle_keyed_by_cfi_start", c.in_middle > 100 && c.keyed_ok == c.in_middle);
cleanup:
	CHECK_INT("stripped.setup", 0, err);
	attach_close(&a);
	child_stop(t.pid);
	return err == 77 ? 77 : 0;
}

/* ---- fuzz: garbage registers and stacks never crash, always stop ---- */

static bool random_is_jit(uint64_t pc, void *ctx)
{
	return (pc & 0xff) == 0x42;
}

static void test_fuzz(struct unwinder *u, const struct target *t)
{
	static uint8_t stack[4096];
	const uint64_t code[] = {t->leaf_lo, t->middle_lo, t->outer_lo, t->leaf_hi};
	struct perf_sample s = {
	    .pid = (uint32_t)t->pid, .tid = (uint32_t)t->pid, .regs_valid = true};
	uint64_t bad = 0, ns = 0, n = 20000;
	struct unwind_result r;

	srandom(12345);
	for (uint64_t i = 0; i < n; i++) {
		for (size_t j = 0; j < sizeof(stack); j += 4)
			*(uint32_t *)(stack + j) = (uint32_t)random();
		for (size_t j = 0; j < 16; j++) /* some plausible return addresses */
			((uint64_t *)stack)[random() % 512] = code[random() % 4] + random() % 64;
		for (int k = 0; k < PERF_R_COUNT; k++)
			s.regs[k] = (uint64_t)random() << 33 ^ (uint64_t)random();
		if (i & 1)
			s.regs[PERF_R_IP] = code[random() % 4] + random() % 64;
		if (i & 2)
			s.regs[PERF_R_SP] = t->middle_cfa - 8 * (uint64_t)(random() % 4096);
		s.stack = i % 7 ? stack : NULL;
		s.stack_size = (uint64_t)(random() % (sizeof(stack) + 1));
		unwind_both(u, &s, i % 3 ? NULL : random_is_jit, NULL, &r, &ns);
		bad += r.nframes > UNWIND_MAX_FRAMES || (unsigned)r.stop >= UNWIND_STOP_COUNT;
	}
	s.regs_valid = false;
	unwinder__unwind(u, &s, NULL, NULL, &r);
	CHECK("fuzz.no_regs_is_error", r.stop == UNWIND_STOP_ERROR && r.nframes == 0);
	CHECK_INT("fuzz.results_in_range", 0, bad);
	printf("# fuzz: %" PRIu64 " garbage samples, mean %.1f us\n", n, (double)ns / 1e3 / n);
	print_stats("C target + fuzz", u);
}

static void test_names(struct unwinder *u, const struct proc_maps *maps, const struct target *t)
{
	struct unwind_frame f = {.pc = t->middle_lo + 1, .activation = true};
	char buf[128];

	CHECK_INT("name.nowhere", -ENOENT, unwinder__name(u, 16, false, buf, sizeof(buf)));
	CHECK_STR("name.nowhere_hex", "0x10", buf);
	unwinder__name(u, t->middle_lo + 1, true, buf, sizeof(buf));
	CHECK_STR("name.offset", "middle_fn+0x1", buf);
	f.activation = false;
	unwinder__name_frame(u, &f, true, buf, sizeof(buf));
	CHECK_STR("name.return_address_looks_back", "middle_fn+0x1", buf);
	f.pc = t->middle_lo;
	unwinder__name_frame(u, &f, false, buf, sizeof(buf));
	CHECK("name.return_address_at_start_is_previous", strcmp(buf, "middle_fn") != 0);
	CHECK_STR("module.main", "unwind_target", unwinder__module(u, t->leaf_lo));
	{ /* the name key: one per function, by its symbol's start and size */
		struct unwind_frame a = {.pc = t->middle_lo + 1, .activation = true};
		struct unwind_frame b = {.pc = t->middle_hi - 1, .activation = true};
		struct unwind_frame c = {.pc = t->leaf_lo + 1, .activation = true};
		struct unwind_frame back = {.pc = t->middle_lo, .activation = false};
		struct unwind_frame none = {.pc = 16, .activation = true};
		uint64_t sa = 0, sb = 0, sc = 0, sn = 1;
		uint64_t ka = unwinder__name_key(u, &a, &sa), kb = unwinder__name_key(u, &b, &sb);
		uint64_t kc = unwinder__name_key(u, &c, &sc);

		CHECK("name_key.symbol_start", ka == t->middle_lo);
		CHECK("name_key.symbol_size", sa == t->middle_hi - t->middle_lo);
		CHECK("name_key.same_function", ka == kb && sa == sb);
		CHECK("name_key.other_function", kc == t->leaf_lo && kc != ka);
		CHECK("name_key.return_address_looks_back",
		      unwinder__name_key(u, &back, &sb) != ka);
		CHECK("name_key.nowhere", unwinder__name_key(u, &none, &sn) == 0 && sn == 0);
	}
	for (size_t i = 0; i < maps->n; i++) {
		if (!strcmp(maps->v[i].path, "[vdso]"))
			CHECK_STR("module.vdso", "[vdso]", unwinder__module(u, maps->v[i].start));
	}
	CHECK_STR("stop_name", "jit", unwinder__stop_name(UNWIND_STOP_JIT));
}

/* An unwinder made without libc learns it from fresh maps. */
static void test_refresh(pid_t pid, const struct proc_maps *maps, struct mem *mem)
{
	struct proc_maps part = *maps;
	struct unwinder *u = NULL;
	uint64_t libc = 0;

	part.v = calloc(maps->n ? maps->n : 1, sizeof(*part.v));
	if (!part.v)
		return;
	part.n = 0;
	for (size_t i = 0; i < maps->n; i++) {
		if (!strstr(maps->v[i].path, "/libc.so"))
			part.v[part.n++] = maps->v[i];
		else if (maps->v[i].perms & PROC_PERM_X)
			libc = maps->v[i].start;
	}
	CHECK_INT("refresh.new_without_libc", 0, unwinder__new(&u, pid, &part, mem));
	if (u && libc) {
		CHECK("refresh.libc_unknown", !unwinder__module(u, libc));
		CHECK_INT("refresh.one_new_module", 1, unwinder__refresh(u, maps));
		CHECK_STR("refresh.libc_known", "libc.so.6", unwinder__module(u, libc));
		CHECK_INT("refresh.nothing_new", 0, unwinder__refresh(u, maps));
	}
	unwinder__free(u);
	free(part.v);
}

/* ---- OTP: where do samples in native code lead? ---- */

#define TOP_MAX 512

struct otp_run {
	struct unwinder *u;
	const struct proc_maps *maps;
	uint64_t samples, in_jit, beam, beam_to_jit, other, other_to_jit;
	uint64_t stops[UNWIND_STOP_COUNT];
	struct lat lat;
	/* Per thread, the first jit_sp seen: every C call from JIT code is made with rsp ==
	 * esdp->registers (otp-internals.md §2), so it should not change. */
	struct {
		uint32_t tid;
		uint64_t sp, same, other, r13, r13_same;
	} sp[MAX_TIDS];
	size_t nsp;
	struct {
		char name[96];
		uint64_t n;
	} top[TOP_MAX];
	size_t ntop;
};

/* JIT code: the executable view of /memfd:vmem, or an anonymous rwx mapping (otp-internals §2). */
static bool otp_is_jit(uint64_t pc, void *ctx)
{
	const struct proc_map *m = proc_maps__find(ctx, pc);

	return m && (m->perms & PROC_PERM_X) &&
	       (!strncmp(m->path, "/memfd:", 7) || (!m->path[0] && (m->perms & PROC_PERM_W)));
}

static void otp_count_name(struct otp_run *o, const char *name)
{
	size_t i;

	for (i = 0; i < o->ntop && strcmp(o->top[i].name, name); i++)
		;
	if (i == o->ntop && o->ntop < TOP_MAX)
		snprintf(o->top[o->ntop++].name, sizeof(o->top[0].name), "%s", name);
	if (i < o->ntop)
		o->top[i].n++;
}

/* r13 is c_p (callee-saved, recovered by CFI): one busy process keeps it the same too. */
static void otp_count_sp(struct otp_run *o, uint32_t tid, uint64_t sp, uint64_t r13)
{
	size_t i;

	for (i = 0; i < o->nsp && o->sp[i].tid != tid; i++)
		;
	if (i == o->nsp && o->nsp < MAX_TIDS) {
		o->sp[o->nsp].tid = tid;
		o->sp[o->nsp].r13 = r13;
		o->sp[o->nsp++].sp = sp;
	}
	if (i < o->nsp) {
		o->sp[i].same += o->sp[i].sp == sp;
		o->sp[i].other += o->sp[i].sp != sp;
		o->sp[i].r13_same += o->sp[i].r13 == r13;
	}
}

static void on_otp_sample(const struct perf_sample *s, void *ctx)
{
	struct otp_run *o = ctx;
	struct unwind_result r;
	const char *mod;
	char name[96];
	uint64_t t0;
	bool beam;

	o->samples++;
	if (!s->regs_valid)
		return;
	if (otp_is_jit(s->regs[PERF_R_IP], (void *)o->maps)) {
		o->in_jit++;
		return;
	}
	mod = unwinder__module(o->u, s->regs[PERF_R_IP]);
	beam = mod && !strcmp(mod, "beam.smp");
	t0 = 0;
	unwind_both(o->u, s, otp_is_jit, (void *)o->maps, &r, &t0);
	lat_add(&o->lat, now_ns() - t0); /* the fast path's time only */
	if (r.stop == UNWIND_STOP_JIT)
		otp_count_sp(o, s->tid, r.jit_sp, r.jit_r13_valid ? r.jit_r13 : 0);
	o->stops[r.stop]++;
	o->beam += beam;
	o->beam_to_jit += beam && r.stop == UNWIND_STOP_JIT;
	o->other += !beam;
	o->other_to_jit += !beam && r.stop == UNWIND_STOP_JIT;
	if (beam && r.nframes) {
		unwinder__name_frame(o->u, &r.frames[0], false, name, sizeof(name));
		otp_count_name(o, name);
	}
}

static void otp_report(const char *label, struct otp_run *o)
{
	printf("# OTP %s: %" PRIu64 " samples: %" PRIu64 " in JIT code; %" PRIu64
	       " in beam.smp, %" PRIu64 " (%.0f%%) unwind to a JIT return address; %" PRIu64
	       " elsewhere, %" PRIu64 " to JIT\n# OTP %s stops:",
	       label, o->samples, o->in_jit, o->beam, o->beam_to_jit,
	       o->beam ? 100.0 * (double)o->beam_to_jit / (double)o->beam : 0.0, o->other,
	       o->other_to_jit, label);
	for (int i = 0; i < UNWIND_STOP_COUNT; i++)
		printf(" %s %" PRIu64, unwinder__stop_name(i), o->stops[i]);
	printf("\n# OTP %s top beam.smp leaves:", label);
	for (int k = 0; k < 6; k++) {
		size_t best = TOP_MAX;

		for (size_t i = 0; i < o->ntop; i++) {
			if (o->top[i].n && (best == TOP_MAX || o->top[i].n > o->top[best].n))
				best = i;
		}
		if (best == TOP_MAX)
			break;
		printf(" %s %" PRIu64 ";", o->top[best].name, o->top[best].n);
		o->top[best].n = 0;
	}
	printf("\n# OTP %s per thread: jit_sp (first value: same/other), jit_r13 (first: same):",
	       label);
	for (size_t i = 0; i < o->nsp; i++)
		printf(" %u: 0x%" PRIx64 " %" PRIu64 "/%" PRIu64 ", 0x%" PRIx64 " %" PRIu64 ";",
		       o->sp[i].tid, o->sp[i].sp, o->sp[i].same, o->sp[i].other, o->sp[i].r13,
		       o->sp[i].r13_same);
	printf("\n");
	lat_print(label, &o->lat);
	print_stats(label, o->u);
}

static size_t otp_schedulers(pid_t pid, pid_t *tids)
{
	struct proc_task *tasks = NULL;
	size_t n = 0, k = 0;

	if (proc__tasks(pid, &tasks, &n))
		return 0;
	for (size_t i = 0; i < n && k < MAX_TIDS; i++) {
		const char *c = tasks[i].comm, *u = strchr(c, '_');

		/* "1_scheduler" up to OTP 27, "erts_sched_1" in 29 */
		if ((u && !strcmp(u, "_scheduler")) || !strncmp(c, "erts_sched_", 11))
			tids[k++] = tasks[i].tid;
	}
	free(tasks);
	return k;
}

/* A VM busy in C called from JIT code: lists:reverse/2 and term_to_binary/1 of a long list. */
static void test_otp(const char *label, const char *root, const char *dir)
{
	char ready[PATH_MAX], inside[PATH_MAX], eval[2 * PATH_MAX];
	char *argv_host[] = {"erl", "-noshell", "-eval", eval, NULL};
	char *argv_root[] = {"chroot", (char *)root, "erl", "-noshell", "-eval", eval, NULL};
	struct otp_run *o = calloc(1, sizeof(*o));
	const char *work = getenv("XP_UNWIND_OTP_WORK");
	struct attach a = {0};
	pid_t pid = -1, tids[MAX_TIDS];
	size_t n;
	int err = -1;

	if (root)
		snprintf(inside, sizeof(inside), "/tmp/xp_unwind_%d.ready", (int)getpid());
	else
		snprintf(inside, sizeof(inside), "%s/otp.ready", dir);
	snprintf(ready, sizeof(ready), "%s%s", root ? root : "", inside);
	/* XP_UNWIND_OTP_WORK replaces the loop body, to measure other workloads by hand. */
	snprintf(eval, sizeof(eval),
		 "L = lists:seq(1, 200000), ok = file:write_file(\"%s\", <<\"ok\">>),"
		 " F = fun G(N) -> %s, G(N + 1) end, F(0).",
		 inside, work ? work : "_ = lists:reverse(L), _ = term_to_binary(L)");
	if (!o || child_start(root ? argv_root : argv_host, ready, &pid)) {
		printf("# OTP %s: could not start a VM, not measured\n", label);
		goto cleanup;
	}
	n = otp_schedulers(pid, tids);
	if (!n || (err = attach_open(&a, pid)))
		goto cleanup;
	o->u = a.u;
	o->maps = a.maps;
	if ((err = sample_until(tids, n, 500, 3000000000u, on_otp_sample, o)))
		goto cleanup;
	otp_report(label, o);
	CHECK("otp.beam_samples_reach_jit_mostly",
	      o->beam > 50 && o->beam_to_jit * 10 >= o->beam * 8);
cleanup:
	if (pid > 0)
		CHECK_INT("otp.setup", 0, err);
	attach_close(&a);
	child_stop(pid);
	unlink(ready);
	free(o);
}

/* ---- main ---- */

static int build_targets(const char *dir, char *exe, char *stripped, size_t len)
{
	char cmd[3 * PATH_MAX];

	snprintf(exe, len, "%s/unwind_target", dir);
	snprintf(stripped, len, "%s/s/unwind_target", dir);
	if (snprintf(cmd, sizeof(cmd),
		     "cc " CFLAGS " -o %s %s/unwind_target.c && mkdir %s/s && "
		     "strip --strip-all -o %s %s",
		     exe, XP_FIXTURES_DIR, dir, stripped, exe) >= (int)sizeof(cmd))
		return -1;
	return system(cmd) == 0 ? 0 : -1;
}

/* Is libdebuginfod mapped in this process (or are its maps unreadable)? libdwfl goes to it for a
 * module with a build-id and no debug file installed (the stripped target's, naming its
 * functions); unwind_modules.c's dlopen refuses it. */
static bool debuginfod_loaded(void)
{
	struct proc_maps *m = NULL;
	bool found = proc_maps__load(getpid(), &m) != 0;

	for (size_t i = 0; m && !found && i < m->n; i++)
		found = strstr(m->v[i].path, "libdebuginfod") != NULL;
	proc_maps__free(m);
	return found;
}

int main(void)
{
	char dir[] = "/tmp/xp_unwind_XXXXXX", exe[PATH_MAX], stripped[PATH_MAX];
	char ready[PATH_MAX], ready2[PATH_MAX], cmd[PATH_MAX + 16];
	char *argv[] = {exe, ready, NULL};
	struct elf_image *img = NULL;
	struct target t = {0};
	struct attach a = {0};
	int err = 0;

	test_below();
	if (!mkdtemp(dir))
		return check_skip("mkdtemp failed");
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(ready2, sizeof(ready2), "%s/ready2", dir);
	if (build_targets(dir, exe, stripped, sizeof(exe))) {
		err = check_skip("cannot build the target with cc and strip");
		goto cleanup;
	}
	if (elf_image__open(exe, &img) || child_start(argv, ready, &t.pid) ||
	    target_read_ready(ready, img, &t)) {
		CHECK("target.started", false);
		goto cleanup;
	}
	CHECK_INT("unwinder.new", 0, attach_open(&a, t.pid));
	if (!a.u)
		goto cleanup;
	test_names(a.u, a.maps, &t);
	test_refresh(t.pid, a.maps, a.mem);
	if ((err = test_chain(a.u, &t)) == 77) {
		err = check_skip("perf_event_open refused (perf_event_paranoid, CAP_PERFMON)");
		goto cleanup;
	}
	CHECK_INT("chain.sampling", 0, err);
	test_fuzz(a.u, &t);
	test_stripped(stripped, ready2, img);
	CHECK("stripped.no_debuginfod_client", !debuginfod_loaded());
	test_otp("25", NULL, dir);
	if (access(OTP_SID "/usr/bin/erl", X_OK) == 0)
		test_otp("29", OTP_SID, dir);
	else
		printf("# OTP 29 chroot not found: not measured\n");
	printf("# fast path against libdwfl: %" PRIu64 " samples compared, %" PRIu64
	       " differ; the fast path did %" PRIu64 "\n",
	       fast_compared, fast_mismatches, fast_used);
	CHECK("fast.compared", fast_compared > 1000);
	/* Plain CFI is the rule: a fast path that always declined would compare equal too. */
	CHECK("fast.used", fast_used * 10 >= fast_compared * 9);
	CHECK_INT("fast.agrees_with_libdwfl", 0, fast_mismatches);
	err = check_done();
cleanup:
	attach_close(&a);
	child_stop(t.pid);
	elf_image__free(img);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return err;
}
