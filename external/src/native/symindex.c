/* Sorted function symbols of a module. See symindex.h. */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>

#include "radix.h"
#include "symindex.h"

struct symindex {
	struct symindex_hit *v;
	size_t n;
};

static bool wanted(const GElf_Sym *sym, GElf_Word shndx, const char *name)
{
	int type = GELF_ST_TYPE(sym->st_info);

	return name && *name && sym->st_value && shndx != SHN_UNDEF &&
	       (type == STT_FUNC || type == STT_GNU_IFUNC || type == STT_NOTYPE);
}

/* By start; among equal starts the sized symbol last, so that lookup's "last at or below"
 * lands on it. */
static int by_start(const void *a, const void *b)
{
	const struct symindex_hit *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->size != 0) - (y->size != 0);
}

int symindex__build(Dwfl_Module *mod, struct symindex **out)
{
	struct symindex *x;
	int nsyms = dwfl_module_getsymtab(mod), i;

	*out = NULL;
	if (nsyms <= 0)
		return -ENOENT;
	x = calloc(1, sizeof(*x));
	if (!x || !(x->v = calloc((size_t)nsyms, sizeof(*x->v)))) {
		free(x);
		return -ENOMEM;
	}
	for (i = 1; i < nsyms; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, &shndx, NULL, NULL);

		if (wanted(&sym, shndx, name))
			x->v[x->n++] =
			    (struct symindex_hit){.name = name, .start = addr, .size = sym.st_size};
	}
	radix__sort_cmp(x->v, x->n, sizeof(*x->v), by_start);
	*out = x;
	return 0;
}

int symindex__lookup(const struct symindex *x, uint64_t pc, struct symindex_hit *out)
{
	size_t lo = 0, hi;

	if (!x)
		return -ENOENT;
	for (hi = x->n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->v[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -ENOENT;
	/* A sized symbol that does not reach pc may sit inside a larger one that does. */
	for (hi = lo; hi-- > 0 && lo - hi <= 8;) {
		const struct symindex_hit *h = &x->v[hi];

		if (!h->size || pc - h->start < h->size) {
			*out = *h;
			return 0;
		}
	}
	*out = x->v[lo - 1];
	return 0;
}

void symindex__free(struct symindex *x)
{
	if (!x)
		return;
	free(x->v);
	free(x);
}
