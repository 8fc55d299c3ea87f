/* Unit tests for bigmem.c: a mapping's address and length are whole huge pages (2 MiB), it is
 * zeroed and writable to its last byte, a length that would overflow is refused, and NULL is
 * given back as nothing. And where THP is on (not "never"), a mapping written whole is in huge
 * pages (/proc/self/smaps AnonHugePages), which is what the aggregate's tables and pstack's index
 * take it for; where THP is off that check is skipped with its reason. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "check.h"

/* AnonHugePages (KiB) of the mapping that starts at p, or -1 when not found. */
static long huge_kib(const void *p)
{
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "re");
	bool in = false;
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		/* A mapping's first line: "lo-hi perms ..."; its fields start with a capital. */
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo == (uintptr_t)p;
		if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

static bool thp_never(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");

	if (!f)
		return true;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, "[never]") != NULL || !buf[0];
}

int main(void)
{
	uint8_t *p, *q;
	size_t i, nonzero = 0;

	CHECK_INT("bigmem__len(1): one huge page", BIGMEM_ALIGN, bigmem__len(1));
	CHECK_INT("bigmem__len(2 MiB): one", BIGMEM_ALIGN, bigmem__len(BIGMEM_ALIGN));
	CHECK_INT("bigmem__len(2 MiB + 1): two", 2 * BIGMEM_ALIGN, bigmem__len(BIGMEM_ALIGN + 1));
	CHECK_INT("bigmem__len(SIZE_MAX): 0 (overflow)", 0, bigmem__len(SIZE_MAX));
	CHECK("bigmem__map(SIZE_MAX): NULL", bigmem__map(SIZE_MAX) == NULL);
	bigmem__unmap(NULL, 100); /* nothing */

	p = bigmem__map(3 * BIGMEM_ALIGN - 5);
	CHECK("bigmem__map(6 MiB - 5) maps", p != NULL);
	if (!p)
		return check_done();
	CHECK_INT("its address is 2 MiB-aligned", 0, (uintptr_t)p % BIGMEM_ALIGN);
	for (i = 0; i < 3 * BIGMEM_ALIGN; i += 4096)
		nonzero += p[i] != 0 || p[i + 4095] != 0;
	CHECK_INT("it reads as zeroes to its rounded end", 0, nonzero);
	memset(p, 0xa5, 3 * BIGMEM_ALIGN);
	CHECK("it is written to its rounded end", p[3 * BIGMEM_ALIGN - 1] == 0xa5);
	if (thp_never()) {
		printf("SKIP huge pages: transparent huge pages are off here "
		       "(/sys/kernel/mm/transparent_hugepage/enabled)\n");
	} else {
		long kib = huge_kib(p);

		CHECK("written whole, it is in huge pages (AnonHugePages > 0)", kib > 0);
	}
	q = bigmem__map(1);
	CHECK("a second mapping: aligned too",
	      q && (uintptr_t)q % BIGMEM_ALIGN == 0 &&
		  (q + BIGMEM_ALIGN <= p || q >= p + 3 * BIGMEM_ALIGN));
	bigmem__unmap(q, 1);
	bigmem__unmap(p, 3 * BIGMEM_ALIGN - 5);
	return check_done();
}
