/* Fuzz target: perf ring records (perf.c). The input is a run of records as the kernel frames
 * them in the ring, {struct perf_event_header, body}; every PERF_RECORD_SAMPLE body goes through
 * perf__parse_sample, the parser the ring reader calls, and a parsed sample's stack copy is read
 * whole. */
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>

#include "perf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (size - off >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		struct perf_sample s;
		volatile uint8_t sink = 0;

		memcpy(&h, data + off, sizeof(h));
		/* the ring reader stops at a record that cannot be framed */
		if (h.size < sizeof(h) || h.size > size - off)
			break;
		if (h.type == PERF_RECORD_SAMPLE &&
		    perf__parse_sample(data + off + sizeof(h), h.size - sizeof(h), &s) == 0) {
			for (uint64_t i = 0; i < s.stack_size; i++)
				sink ^= s.stack[i];
			if (s.stack_size &&
			    (s.stack < data || s.stack + s.stack_size > data + size))
				__builtin_trap();
		}
		(void)sink;
		off += h.size;
	}
	/* the whole input as one body, too */
	{
		struct perf_sample s;

		perf__parse_sample(data, size, &s);
	}
	return 0;
}
