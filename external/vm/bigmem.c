/* Huge-page mappings for large arrays (see bigmem.h). */
#include <stdint.h>
#include <sys/mman.h>

#include "bigmem.h"

size_t bigmem__len(size_t bytes)
{
	if (bytes > SIZE_MAX - BIGMEM_ALIGN)
		return 0;
	return (bytes + BIGMEM_ALIGN - 1) / BIGMEM_ALIGN * BIGMEM_ALIGN;
}

/* Mapped BIGMEM_ALIGN longer, the ends trimmed to the aligned part: the kernel aligns only some
 * mappings itself (6.7 on, those of whole huge pages). */
void *bigmem__map(size_t bytes)
{
	size_t len = bigmem__len(bytes), head;
	uint8_t *q;

	if (!len || len > SIZE_MAX - BIGMEM_ALIGN)
		return NULL;
	q = mmap(NULL, len + BIGMEM_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		 0);
	if (q == MAP_FAILED)
		return NULL;
	head = (BIGMEM_ALIGN - (uintptr_t)q % BIGMEM_ALIGN) % BIGMEM_ALIGN;
	if (head)
		munmap(q, head);
	munmap(q + head + len, BIGMEM_ALIGN - head);
	(void)madvise(q + head, len, MADV_HUGEPAGE); /* advice: 4 KiB pages where THP is off */
	return q + head;
}

void bigmem__unmap(void *p, size_t bytes)
{
	if (p)
		munmap(p, bigmem__len(bytes));
}
