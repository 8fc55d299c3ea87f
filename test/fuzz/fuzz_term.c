/* Fuzz target: decoding a node's reply for `extrospect inject` (inject_term.c). The input is a
 * message as inject_conn.c receives it, the version byte then {rex, Reply}; it goes through
 * inject_term__check as there, and only a message that passes reaches libei and the decoders,
 * called on the message's term and on Reply as inject.c calls them. The release check gets the
 * input as text too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "inject_term.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode(const char *buf, int at)
{
	char text[256], printed[512];
	long long v;
	int idx = at, second, vidx;

	inject_term__print(buf, at, printed, sizeof(printed));
	inject_term__text(buf, &idx, text, sizeof(text));
	inject_term__is_atom(buf, at, "ok");
	inject_term__long(buf, at, &v);
	if (inject_term__tagged(buf, at, "badrpc", &second)) {
		inject_term__print(buf, second, printed, sizeof(printed));
		inject_term__is_atom(buf, second, "eexist");
		inject_term__tagged(buf, second, "already_loaded", NULL);
	}
	if (inject_term__map_get(buf, at, "runs", &vidx) == 0) {
		inject_term__long(buf, vidx, &v);
		inject_term__print(buf, vidx, printed, 8);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, err[256];
	int reply;

	/* a copy of exactly size bytes: ASan sees any read past the message */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (size > 1 && (uint8_t)buf[0] == 131 && inject_term__check(buf + 1, size - 1) == 0) {
		decode(buf + 1, 0);
		if (inject_term__tagged(buf + 1, 0, "rex", &reply))
			decode(buf + 1, reply);
	}
	free(buf);
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	inject_term__otp_major(buf);
	inject_term__check_release(buf, INJECT_MIN_OTP, err, sizeof(err));
	free(buf);
	return 0;
}
