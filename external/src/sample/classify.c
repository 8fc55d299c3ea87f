/* Frame and sample classification for blame and sched. See classify.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "classify.h"
#include "elfsym.h"
#include "proc.h"
#include "path.h"

#define RELOAD_NS   (1000 * 1000000ull) /* re-read the maps at most once a second */
#define MAX_IMAGES  256			/* executable files looked at, at most */
#define MOD_UNKNOWN ((uint16_t)0xffff)	/* looked up, no module */

struct image {
	char *path; /* as the target maps it */
	const char *base;
	struct elf_image *img; /* NULL when it could not be opened */
};

struct classify {
	struct target *t;
	const struct agg *a;
	struct image img[MAX_IMAGES];
	size_t nimg;
	char *mods[MAX_IMAGES + 8]; /* distinct module names, owned */
	size_t nmods;
	uint64_t reloaded_ns;
	const char *beam_base;
};

static const char *const gc_names[] = {
    "global::garbage_collect",	     "erts_garbage_collect",
    "erts_garbage_collect_nobump",   "erts_garbage_collect_hibernate",
    "erts_garbage_collect_literals", "erts_gc_after_bif_call",
    "erts_gc_after_bif_call_lhf",
};

/* Libraries the runtime and NIFs call into that are not NIFs themselves. */
static const char *const system_prefixes[] = {
    "libc.so",	 "libc-",     "libm.so", "libm-",  "libpthread", "ld-linux", "ld-",
    "libgcc_s",	 "libstdc++", "libdl",	 "librt",  "libz.so",	 "libtinfo", "libsystemd",
    "libcrypto", "libssl",    "libutil", "[vdso]", "linux-vdso", "libsctp",  "libnsl",
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

bool classify__is_gc_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(gc_names) / sizeof(gc_names[0]); i++) {
		if (strcmp(name, gc_names[i]) == 0)
			return true;
	}
	return false;
}

static bool is_system(const char *mod)
{
	size_t i;

	for (i = 0; i < sizeof(system_prefixes) / sizeof(system_prefixes[0]); i++) {
		if (strncmp(mod, system_prefixes[i], strlen(system_prefixes[i])) == 0)
			return true;
	}
	return false;
}

/* Index of a module name in c->mods, added when new. */
static uint16_t mod_index(struct classify *c, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < c->nmods; i++) {
		if (strlen(c->mods[i]) == len && strncmp(c->mods[i], name, len) == 0)
			return (uint16_t)i;
	}
	if (c->nmods >= sizeof(c->mods) / sizeof(c->mods[0]))
		return MOD_UNKNOWN;
	c->mods[c->nmods] = strndup(name, len);
	return c->mods[c->nmods] ? (uint16_t)c->nmods++ : MOD_UNKNOWN;
}

/* Every executable file mapping not seen before becomes an image (opened on first use). */
static void add_images(struct classify *c, const struct proc_maps *maps)
{
	size_t i, j;

	for (i = 0; maps && i < maps->n && c->nimg < MAX_IMAGES; i++) {
		const struct proc_map *m = &maps->v[i];
		char host[4096];

		if (!(m->perms & PROC_PERM_X) || m->path[0] != '/' ||
		    strcmp(m->path, c->t->exe) == 0)
			continue;
		for (j = 0; j < c->nimg && strcmp(c->img[j].path, m->path); j++)
			;
		if (j < c->nimg)
			continue;
		c->img[c->nimg].path = strdup(m->path);
		if (!c->img[c->nimg].path)
			return;
		c->img[c->nimg].base = path__base(c->img[c->nimg].path);
		if (proc__resolve_path(c->t->pid, m->path, m->inode, host, sizeof(host)) == 0)
			elf_image__open(host, &c->img[c->nimg].img);
		c->nimg++;
	}
}

int classify__new(struct target *t, const struct agg *a, struct classify **out)
{
	struct classify *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->t = t;
	c->a = a;
	c->beam_base = path__base(t->exe);
	add_images(c, t->maps);
	c->reloaded_ns = now_ns();
	*out = c;
	return 0;
}

void classify__free(struct classify *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nimg; i++) {
		elf_image__free(c->img[i].img);
		free(c->img[i].path);
	}
	for (i = 0; i < c->nmods; i++)
		free(c->mods[i]);
	free(c);
}

static int search_images(struct classify *c, const char *name, size_t from)
{
	struct elf_sym sym;
	size_t i;

	for (i = from; i < c->nimg; i++) {
		if (c->img[i].img && elf_image__symbol(c->img[i].img, name, &sym) == 0)
			return (int)i;
	}
	return -1;
}

/* A symbol name's module: beam.smp's symbols, then every mapped library's; the maps are re-read
 * (at most once a second) for a library loaded since, such as a NIF. */
static uint16_t lookup_symbol(struct classify *c, const char *name)
{
	struct proc_maps *maps = NULL;
	struct elf_sym sym;
	size_t before;
	int i;

	if (c->t->beam && elf_image__symbol(c->t->beam, name, &sym) == 0)
		return mod_index(c, c->beam_base, strlen(c->beam_base));
	if ((i = search_images(c, name, 0)) >= 0)
		return mod_index(c, c->img[i].base, strlen(c->img[i].base));
	if (now_ns() - c->reloaded_ns < RELOAD_NS || proc_maps__load(c->t->pid, &maps))
		return MOD_UNKNOWN;
	c->reloaded_ns = now_ns();
	before = c->nimg;
	add_images(c, maps);
	proc_maps__free(maps);
	if ((i = search_images(c, name, before)) >= 0)
		return mod_index(c, c->img[i].base, strlen(c->img[i].base));
	return MOD_UNKNOWN;
}

const char *classify__find_symbol(struct classify *c, const char *name)
{
	uint16_t m = lookup_symbol(c, name);

	return m < c->nmods ? c->mods[m] : NULL;
}

const char *classify__module(struct classify *c, uint32_t frame)
{
	return agg__frame_module(c->a, frame);
}

int classify__nif_frame(struct classify *c, const struct sample_record *rec)
{
	uint32_t i;

	for (i = rec->nerlang; i < rec->nframes; i++) {
		const char *m = classify__module(c, rec->frames[i]);

		if (m && strcmp(m, c->beam_base) != 0 && !is_system(m))
			return (int)i;
	}
	return -1;
}

int classify__erlang_caller(const struct agg *a, const struct sample_record *rec, uint32_t below)
{
	uint32_t i = below < rec->nerlang ? below : rec->nerlang;

	while (i-- > 0) {
		if (agg__frame_kind(a, rec->frames[i]) == FRAME_ERLANG)
			return (int)i;
	}
	return -1;
}

enum sample_class classify__sample(struct classify *c, const struct sample_record *rec, int *nif)
{
	uint32_t i, leaf;

	*nif = -1;
	for (i = 0; i < rec->nframes; i++) {
		if (classify__is_gc_name(agg__frame_name(c->a, rec->frames[i])))
			return CLASS_GC;
	}
	/* Before "no process": a dirty scheduler running a NIF, on a VM whose scheduler data is
	 * unknown (OTP 28+ without the agent), has no process but is still NIF time. */
	if ((*nif = classify__nif_frame(c, rec)) >= 0)
		return CLASS_NIF;
	if (rec->kind == SAMPLE_NO_PROCESS)
		return CLASS_IDLE;
	if (rec->nframes > rec->nerlang)
		return CLASS_EMULATOR;
	leaf = rec->nframes ? rec->frames[rec->nframes - 1] : 0;
	if (rec->nframes && agg__frame_kind(c->a, leaf) == FRAME_JIT_GLOBAL &&
	    strcmp(agg__frame_name(c->a, leaf), "[unnamed JIT code]") != 0)
		return CLASS_EMULATOR;
	return CLASS_ERLANG;
}

const char *classify__class_name(enum sample_class k)
{
	static const char *const names[CLASS_COUNT] = {"erlang", "emulator", "nif", "gc", "idle"};

	return (unsigned)k < CLASS_COUNT ? names[k] : "?";
}
