/* The privilege hints. See privilege.h. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "privilege.h"

int privilege__paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int v = -100;

	if (!f)
		return v;
	if (fscanf(f, "%d", &v) != 1)
		v = -100;
	fclose(f);
	return v;
}

void privilege__setcap_line(char *buf, size_t len)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		snprintf(exe, sizeof(exe), "extrospect");
	else
		exe[n] = '\0';
	snprintf(buf, len, "setcap " PRIVILEGE_CAPS " %s", exe);
}
