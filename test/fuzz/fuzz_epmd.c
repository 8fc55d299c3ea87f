/* Fuzz target: epmd's PORT2_RESP as inject_epmd__lookup judges it (inject_epmd.c): the input is
 * what recv gave, up to the 4 bytes it asks for. A port found is never 0. */
#include <stdint.h>
#include <string.h>

#include "inject_epmd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char resp[4] = {0};
	size_t got = size < sizeof(resp) ? size : sizeof(resp);
	char err[256];
	int port = 0;

	memcpy(resp, data, got);
	if (inject_epmd__decode_reply(resp, got, "host", "node", &port, err, sizeof(err)) == 0 &&
	    (port <= 0 || port > 65535))
		__builtin_trap();
	return 0;
}
