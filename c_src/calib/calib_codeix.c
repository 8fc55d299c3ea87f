/* The active code index and the module ranges table, neither named on OTP 28+ (r[] nowhere):
 * a diff of beam.smp's writable data across code loads the agent makes (each commit steps
 * the_active_code_index and the_staging_code_index by one, mod ERTS_NUM_CODE_IX: B/code_ix.c
 * erts_commit_staging_code_ix) leaves the 32-bit words that stepped every time; then the unique
 * (word, r[] triple) whose r[word] validates and holds the just-loaded module's JIT code. Runs as
 * a dirty NIF, one step per load. Does not own: the ranges layout and reader (external/vm). */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "agent.h"
#include "calib_codeix.h"
#include "coderanges.h"
#include "jitself.h"
#include "mem.h"
#include "selfelf.h"

#define CODEIX_MAX_BYTES (64u << 20) /* writable data larger than this is not diffed */
#define CODEIX_MAX_CAND	 8	     /* more stepping words than this: ambiguous */
#define NAME_MAX_LEN	 160

struct codeix {
	uint64_t epoch; /* the calibration it belongs to */
	unsigned steps; /* loads diffed so far */
	struct selfelf se;
	size_t bytes;	 /* of writable data, the ranges of se back to back */
	uint32_t *snap;	 /* the words at the last step */
	uint64_t *alive; /* one bit per word: stepped by one at every load so far */
};

void codeix__free(struct codeix *x)
{
	if (!x)
		return;
	enif_free(x->snap);
	enif_free(x->alive);
	enif_free(x);
}

/* The bytes of writable range i that are diffed: whole 32-bit words. */
static size_t span(const struct selfelf *se, unsigned i)
{
	return (size_t)(se->r[i].end - se->r[i].start) & ~(size_t)3;
}

static uint64_t word_addr(const struct codeix *x, size_t w)
{
	size_t off = w * 4;
	unsigned i;

	for (i = 0; i < x->se.n; i++) {
		size_t len = span(&x->se, i);

		if (off < len)
			return x->se.r[i].start + off;
		off -= len;
	}
	return 0;
}

/* Our own .data/.bss is mapped for good: read in place, as the scans' prefilters do. */
static void take(const struct codeix *x, uint32_t *dst)
{
	size_t at = 0;
	unsigned i;

	for (i = 0; i < x->se.n; i++) {
		size_t len = span(&x->se, i);

		memcpy((uint8_t *)dst + at, (const void *)(uintptr_t)x->se.r[i].start, len);
		at += len;
	}
}

static int begin(struct codeix **out, uint64_t epoch)
{
	struct codeix *x = enif_alloc(sizeof(*x));
	size_t words;
	unsigned i;

	if (!x)
		return -ENOMEM;
	memset(x, 0, sizeof(*x));
	x->epoch = epoch;
	if (selfelf__load(&x->se)) {
		codeix__free(x);
		return -ENOENT;
	}
	for (i = 0; i < x->se.n; i++)
		x->bytes += span(&x->se, i);
	words = x->bytes / 4;
	if (x->se.r[0].start & 3 || x->bytes > CODEIX_MAX_BYTES) {
		codeix__free(x);
		return -E2BIG;
	}
	x->snap = enif_alloc(x->bytes);
	x->alive = enif_alloc((words + 63) / 64 * 8);
	if (!x->snap || !x->alive) {
		codeix__free(x);
		return -ENOMEM;
	}
	memset(x->alive, 0xff, (words + 63) / 64 * 8);
	take(x, x->snap);
	*out = x;
	return 0;
}

/* One load later: a word stays a candidate when it went from v in 0..2 to v + 1 mod 3. */
static int step(struct codeix *x)
{
	size_t words = x->bytes / 4, w;
	uint32_t *now = enif_alloc(x->bytes);

	if (!now)
		return -ENOMEM;
	take(x, now);
	for (w = 0; w < words; w++) {
		if (x->snap[w] > 2 || now[w] != (x->snap[w] + 1) % 3)
			x->alive[w / 64] &= ~(1ull << (w % 64));
	}
	enif_free(x->snap);
	x->snap = now;
	x->steps++;
	return 0;
}

struct pair_ctx {
	const struct xp_layout *row;
	struct mem *self;
	uint32_t ix;
	uint64_t base, end; /* the module loaded last: its JIT code */
	unsigned words;	    /* stepping words found */
};

static int prefilter(uint64_t a, void *arg)
{
	const struct pair_ctx *p = arg;

	return coderanges__prefilter(p->row, (const uint8_t *)(uintptr_t)a);
}

/* r[ix] validates and holds the newest load of the module; r[ix - 1], the table active before
 * it, does not (it holds the previous load). */
static int confirm(uint64_t a, void *arg)
{
	const struct pair_ctx *p = arg;
	uint32_t prev = (p->ix + (uint32_t)p->row->ranges.code_ix_count - 1) %
			(uint32_t)p->row->ranges.code_ix_count;
	struct code_ranges cr;
	int ok;

	if (coderanges__read_table(p->self, p->row, a, p->ix, &cr))
		return 0;
	ok = coderanges__contains(&cr, p->base, p->end);
	coderanges__free(&cr);
	if (!ok || coderanges__read_table(p->self, p->row, a, prev, &cr))
		return 0;
	ok = !coderanges__contains(&cr, p->base, p->end);
	coderanges__free(&cr);
	return ok;
}

/* The stepping words, at most CODEIX_MAX_CAND of them. */
static int survivors(const struct codeix *x, uint64_t *cand, unsigned *n)
{
	size_t words = x->bytes / 4, w;

	*n = 0;
	for (w = 0; w < words; w++) {
		if (!(x->alive[w / 64] & (1ull << (w % 64))))
			continue;
		if (*n == CODEIX_MAX_CAND)
			return -EEXIST;
		cand[(*n)++] = word_addr(x, w);
	}
	return *n ? 0 : -ENOENT;
}

/* The one (index word, r[]) pair that confirms: both, or -ENOENT / -EEXIST. */
static int find_pair(const struct agent *a, const struct codeix *x, struct pair_ctx *p,
		     uint64_t *ix_addr, uint64_t *r_addr)
{
	const struct xp_ranges_layout *L = &a->row->ranges;
	uint64_t cand[CODEIX_MAX_CAND], r;
	unsigned n, i, pairs = 0, tried;
	int err = survivors(x, cand, &n);

	p->words = n;
	for (i = 0; !err && i < n; i++) {
		memcpy(&p->ix, (const void *)(uintptr_t)cand[i], 4);
		if (p->ix >= (uint32_t)L->code_ix_count)
			continue;
		err = selfelf__scan_unique(&x->se, (uint64_t)L->code_ix_count * (uint64_t)L->size,
					   prefilter, confirm, p, &r, &tried);
		if (err == -ENOENT) {
			err = 0;
			continue;
		}
		if (!err && pairs++ == 0) {
			*ix_addr = cand[i];
			*r_addr = r;
		}
	}
	if (!err && pairs != 1)
		err = pairs ? -EEXIST : -ENOENT;
	return err;
}

/* After the last load: the newest code of want (its JIT module entry) must be in r[ix]. */
static int resolve(const struct agent *a, const struct codeix *x, uint64_t desc,
		   struct jitself_want *want, uint64_t *ix_addr, uint64_t *r_addr, unsigned *words)
{
	struct pair_ctx p = {.row = a->row};
	struct jitself_result res;
	int err;

	if (!a->row)
		return -ENOTSUP;
	if (x->steps < 2 || !desc)
		return -ENOENT;
	err = jitself__walk(desc, NULL, want, 1, &res);
	if (err || !want->mod_base)
		return -ENOENT;
	p.base = want->mod_base;
	p.end = want->mod_base + want->mod_size;
	err = mem__open_self(&p.self);
	if (err)
		return err;
	err = find_pair(a, x, &p, ix_addr, r_addr);
	*words = p.words;
	mem__free(p.self);
	return err;
}

static void record(struct calib *c, int err, uint64_t ix_addr, uint64_t r_addr)
{
	struct addr_obs *ix = &c->addr[XP_ADDR_ACTIVE_CODE_IX], *r = &c->addr[XP_ADDR_CODE_RANGES];
	uint64_t sym = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "the_active_code_index");
	uint32_t why = err == -EEXIST	 ? XP_WHY_AMBIGUOUS
		       : err == -ENOTSUP ? XP_WHY_UNSUPPORTED
		       : err == -ENOENT	 ? XP_WHY_NOT_FOUND
					 : XP_WHY_CHECK_FAILED;

	if (!err && sym && sym != ix_addr) {
		err = -EPROTO;
		why = XP_WHY_CHECK_FAILED;
	}
	*ix = (struct addr_obs){.value = err ? 0 : ix_addr,
				.source = XP_SRC_SCAN,
				.flags = err ? 0 : XP_VAL_PRESENT | XP_VAL_VERIFIED,
				.reason = err ? why : XP_WHY_NONE,
				.note =
				    err ? "no unique 32-bit word stepping by one per code load "
					  "whose ranges table holds the loaded module"
					: "the 32-bit word that stepped by one at each code load "
					  "and indexes the ranges table holding the loaded module",
				.dynsym = sym};
	*r = (struct addr_obs){.value = err ? 0 : r_addr,
			       .source = XP_SRC_SCAN,
			       .flags = err ? 0 : XP_VAL_PRESENT | XP_VAL_VERIFIED,
			       .reason = err ? why : XP_WHY_NONE,
			       .note =
				   err ? "no unique ranges table holding the loaded module"
				       : "the unique r[] in .data/.bss whose active table holds "
					 "the loaded module's JIT code and whose previous one not"};
}

static int get_text(ErlNifEnv *env, ERL_NIF_TERM t, char *buf, size_t cap)
{
	ErlNifBinary bin;

	if (!enif_inspect_binary(env, t, &bin) || bin.size >= cap)
		return 0;
	memcpy(buf, bin.data, bin.size);
	buf[bin.size] = 0;
	return 1;
}

static int steps(struct agent *a, struct codeix *x, unsigned stepno, const char *mod,
		 const char *range)
{
	struct jitself_want want = {mod, range, 0, 0, 0, 0};
	uint64_t desc, ix_addr = 0, r_addr = 0;
	unsigned words = 0;
	int err;

	if (x->steps + 1 != stepno)
		return -EINVAL;
	err = step(x);
	if (err || !mod)
		return err;
	enif_mutex_lock(a->lock);
	desc = a->calib.addr[XP_ADDR_JIT_DESCRIPTOR].value;
	enif_mutex_unlock(a->lock);
	err = resolve(a, x, desc, &want, &ix_addr, &r_addr, &words);
	enif_mutex_lock(a->lock);
	if (a->calib.epoch == x->epoch) {
		record(&a->calib, err, ix_addr, r_addr);
		a->calib.codeix_words = words;
	}
	enif_mutex_unlock(a->lock);
	return err;
}

static ERL_NIF_TERM result(ErlNifEnv *env, int err)
{
	const char *why = err == -ENOENT    ? "not_found"
			  : err == -EEXIST  ? "ambiguous"
			  : err == -ENOTSUP ? "unsupported"
			  : err == -ENOMEM  ? "enomem"
			  : err == -E2BIG   ? "too_large"
			  : err == -EINVAL  ? "out_of_order"
					    : "check_failed";

	if (!err)
		return enif_make_atom(env, "ok");
	return enif_make_tuple2(env, enif_make_atom(env, "error"), enif_make_atom(env, why));
}

/* calib_codeix(Step, Want): step 0 takes the first snapshot; step N >= 1, after the Nth load,
 * narrows; Want = {Module, "Module:f/0"} (binaries) on the last step resolves and records. */
ERL_NIF_TERM codeix_nif__step(ErlNifEnv *env, int argc, const ERL_NIF_TERM argv[])
{
	struct agent *a = enif_priv_data(env);
	char mod[NAME_MAX_LEN], range[NAME_MAX_LEN];
	const ERL_NIF_TERM *want;
	struct codeix *x = NULL, *old;
	uint64_t t0 = agent__now_ns(), epoch;
	unsigned stepno;
	int err, arity, final;

	final = enif_get_tuple(env, argv[1], &arity, &want) && arity == 2 &&
		get_text(env, want[0], mod, sizeof(mod)) &&
		get_text(env, want[1], range, sizeof(range));
	if (enif_thread_type() != ERL_NIF_THR_DIRTY_CPU_SCHEDULER ||
	    !enif_get_uint(env, argv[0], &stepno) || stepno > 16)
		return enif_make_badarg(env);
	enif_mutex_lock(a->lock);
	epoch = a->calib.epoch;
	old = a->codeix; /* taken: a concurrent call finds none and fails */
	a->codeix = NULL;
	enif_mutex_unlock(a->lock);
	if (stepno == 0) {
		err = begin(&x, epoch);
		codeix__free(old);
	} else {
		x = old;
		err = x && x->epoch == epoch ? steps(a, x, stepno, final ? mod : NULL, range)
					     : -EINVAL;
	}
	enif_mutex_lock(a->lock);
	old = a->codeix;
	a->codeix = err || final ? NULL : x; /* the last step is the end of this diff */
	enif_mutex_unlock(a->lock);
	codeix__free(old);
	if (err || final)
		codeix__free(x);
	agent__timed(a, NIF_CALIB_CODEIX, t0);
	return result(env, err);
}
