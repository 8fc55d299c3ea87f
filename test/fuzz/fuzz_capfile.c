/* Fuzz target: the capture-file loader (capfile.c) on a file's bytes once decompressed
 * (capfile__parse, what capfile__load runs after gunzip). A file that loads is walked whole, as
 * replay.c walks it. */
#include <stdint.h>
#include <string.h>

#include "capfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct capfile f;
	volatile uint64_t sink = 0;

	if (capfile__parse(data, size, &f) == 0) {
		for (size_t i = 0; i < f.nsamples; i++) {
			const struct cap_sample *s = &f.samples[i];

			for (uint64_t k = 0; k < s->ps.stack_size; k++)
				sink += s->ps.stack[k];
			for (size_t r = 0; r < s->nreads; r++)
				if (s->reads[r].data && s->reads[r].len)
					sink += s->reads[r].data[s->reads[r].len - 1];
			if (s->expect)
				sink += strlen(s->expect);
		}
		for (size_t i = 0; i < f.npool; i++)
			if (f.pool[i].data && f.pool[i].len)
				sink += f.pool[i].data[f.pool[i].len - 1];
		capfile__free(&f);
	}
	(void)sink;
	return 0;
}
