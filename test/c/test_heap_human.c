/* Unit test for heap__human (external/src/cmd/heap/heap_print.c), the byte counts of heap, alloc
 * and heap --watch: bytes under 1 KiB whole, then one decimal below 10 of a unit and none from
 * 10 on, decided by the value as printed, so that a column never holds both "10.0K" and "10K". */
#include <stdio.h>

#include "check.h"
#include "heap_print.h"

int main(void)
{
	static const struct {
		uint64_t bytes;
		const char *text;
	} cases[] = {{0, "0B"},		 {1023, "1023B"},
		     {1024, "1.0K"},	 {10137, "9.9K"},
		     {10189, "10K"},	 {10240, "10K"},
		     {10700, "10K"},	 {11000, "11K"},
		     {5u << 20, "5.0M"}, {(uint64_t)3 << 30, "3.0G"}};
	char t[32], name[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		heap__human(cases[i].bytes, t, sizeof(t));
		snprintf(name, sizeof(name), "%llu bytes", (unsigned long long)cases[i].bytes);
		CHECK_STR(name, cases[i].text, t);
	}
	return check_done();
}
