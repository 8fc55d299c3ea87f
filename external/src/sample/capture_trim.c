/* Keeping a capture small: the JIT map's symfiles of modules no sample can have looked at are
 * left out of the pool (jitmap__load then skips their entries), and an in-kernel stack copy taken
 * from c_p->stop in a garbage collection (one that does not end with normal_exit, as a copy up
 * to hend does) is cut after its bottom word, where the sampler stops reading it. The replay test
 * checks that nothing else changed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "capfile.h"
#include "capture_int.h"

struct words {
	uint64_t *v;
	size_t n, cap;
};

static int add_word(struct words *w, uint64_t x)
{
	if (w->n == w->cap) {
		size_t want = w->cap ? w->cap * 2 : 4096;
		uint64_t *p = realloc(w->v, want * sizeof(*p));

		if (!p)
			return -ENOMEM;
		w->v = p;
		w->cap = want;
	}
	w->v[w->n++] = x;
	return 0;
}

static int add_bytes(struct words *w, const uint8_t *p, size_t len)
{
	uint64_t x;
	int rc = 0;

	/* Every alignment: code bytes hold addresses at any offset (movabs, address tables). */
	for (size_t i = 0; p && !rc && i + 8 <= len; i++) {
		memcpy(&x, p + i, 8);
		rc = add_word(w, x);
	}
	return rc;
}

static int sample_words(struct words *w, const struct cap_sample *s)
{
	int rc = add_bytes(w, s->stack, s->ps.stack_size);

	for (int i = 0; !rc && i < PERF_R_COUNT; i++)
		rc = add_word(w, s->ps.regs[i]);
	if (!rc && s->has_kcap)
		rc = add_bytes(w, s->kstack, s->k.stack_len);
	for (size_t i = 0; !rc && s->ur && i < s->ur->nframes; i++)
		rc = add_word(w, s->ur->frames[i].pc);
	if (!rc && s->ur)
		rc = add_word(w, s->ur->jit_pc - 1);
	for (size_t i = 0; !rc && i < s->nreads; i++)
		rc = add_bytes(w, s->reads[i].data, s->reads[i].rc ? 0 : s->reads[i].len);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool any_in(const struct words *w, uint64_t lo, uint64_t len)
{
	size_t a = 0, b = w->n;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (w->v[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < w->n && w->v[a] - lo < len;
}

/* The pool read of a jit_code_entry {next, prev, symfile_addr, symfile_size}: its symfile. */
static uint64_t symfile_of(const struct capfile *f, uint64_t entry)
{
	uint64_t addr;

	for (size_t i = 0; i < f->npool; i++) {
		if (f->pool[i].addr == entry && f->pool[i].len >= 24) {
			memcpy(&addr, f->pool[i].data + 16, 8);
			return addr;
		}
	}
	return 0;
}

static void drop_pool_at(struct capfile *f, uint64_t addr)
{
	size_t i, j;

	for (i = j = 0; i < f->npool; i++) {
		if (f->pool[i].addr == addr) {
			free(f->pool[i].data);
			continue;
		}
		f->pool[j++] = f->pool[i];
	}
	f->npool = j;
}

int capture__trim_jit(struct capfile *f, const struct jitmap *m)
{
	struct words w = {0};
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < f->nsamples; i++)
		rc = sample_words(&w, &f->samples[i]);
	if (rc)
		goto cleanup;
	qsort(w.v, w.n, sizeof(*w.v), cmp_u64);
	for (i = 0; i < jitmap__module_count(m); i++) {
		const struct jit_module_info *mi = jitmap__module(m, (uint32_t)i);
		uint64_t sym;

		/* The emulator's entry and the shared fragments are every sample's. */
		if (!mi->name[0] || !strcmp(mi->name, "global") ||
		    any_in(&w, mi->base, mi->code_size))
			continue;
		if ((sym = symfile_of(f, mi->entry_addr)))
			drop_pool_at(f, sym);
	}
cleanup:
	free(w.v);
	return rc;
}

void capture__trim_kstack(struct cap_sample *s, uint64_t normal_exit, bool fp)
{
	const uint8_t *p = s->kstack;
	uint64_t x, prev = 1;

	if (!p || !normal_exit || s->k.stack_len < 8)
		return;
	/* A copy that ends at hend (a native sample's) ends with normal_exit, and may hold stale
	 * words below E, the free space above the heap top: it is kept whole. */
	memcpy(&x, p + s->k.stack_len / 8 * 8 - 8, 8);
	if (x == normal_exit)
		return;
	for (size_t i = 0; i + 8 <= s->k.stack_len; i += 8, prev = x) {
		memcpy(&x, p + i, 8);
		if (x == normal_exit && (!fp || prev == 0)) {
			s->k.stack_len = i + 8;
			return;
		}
	}
}

void capture__trim_kstack_front(struct cap_sample *s, uint64_t e)
{
	uint64_t cut;

	if (!s->kstack || !e || e <= s->k.stack_addr || e - s->k.stack_addr >= s->k.stack_len ||
	    ((e - s->k.stack_addr) & 7))
		return;
	cut = e - s->k.stack_addr;
	memmove(s->kstack, s->kstack + cut, s->k.stack_len - cut);
	s->k.stack_addr = e;
	s->k.stack_len -= cut;
}
