/* Names as shown: Elixir module names in Elixir form. See names.h. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "names.h"

static const char elixir_prefix[] = "Elixir.";
#define ELIXIR_PREFIX_LEN (sizeof(elixir_prefix) - 1)

/* Copy a quoted atom's text (after its opening quote) into out, unescaping; returns the character
 * after the closing quote, or NULL when there is none. */
static const char *unquote(const char *p, char *out, size_t len)
{
	size_t o = 0;

	for (; *p && *p != '\''; p++) {
		if (*p == '\\' && p[1])
			p++;
		if (o + 1 < len)
			out[o++] = *p;
	}
	out[o] = '\0';
	return *p == '\'' ? p + 1 : NULL;
}

/* An Elixir function name written bare: foo, foo?, bar!, __info__. */
static bool elixir_identifier(const char *f)
{
	const char *p = f;

	if (!(islower((unsigned char)*p) || *p == '_'))
		return false;
	for (; *p; p++) {
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '@' &&
		    !((*p == '?' || *p == '!') && p[1] == '\0'))
			return false;
	}
	return true;
}

/* Split "mod:" (quoted or not) off name: mod text into mod, returns what follows the module
 * (":fun/N..." or ""), NULL when name is not in that form. */
static const char *module_part(const char *name, char *mod, size_t len)
{
	const char *end;

	if (name[0] == '\'')
		return unquote(name + 1, mod, len);
	end = strchr(name, ':');
	if (!end)
		end = name + strlen(name);
	if ((size_t)(end - name) >= len)
		return NULL;
	memcpy(mod, name, (size_t)(end - name));
	mod[end - name] = '\0';
	return end;
}

static bool elixir_form(const char *name, char *buf, size_t len)
{
	char mod[1024], fun[1024];
	const char *rest, *slash;

	if (!(rest = module_part(name, mod, sizeof(mod))) ||
	    strncmp(mod, elixir_prefix, ELIXIR_PREFIX_LEN) != 0 || !mod[ELIXIR_PREFIX_LEN])
		return false;
	if (!*rest) {
		snprintf(buf, len, "%s", mod + ELIXIR_PREFIX_LEN);
		return true;
	}
	if (*rest++ != ':')
		return false;
	if (*rest == '\'') {
		if (!(slash = unquote(rest + 1, fun, sizeof(fun))))
			return false;
	} else {
		if (!(slash = strchr(rest, '/')) || (size_t)(slash - rest) >= sizeof(fun))
			return false;
		memcpy(fun, rest, (size_t)(slash - rest));
		fun[slash - rest] = '\0';
	}
	if (*slash != '/')
		return false;
	snprintf(buf, len, elixir_identifier(fun) ? "%s.%s%s" : "%s.\"%s\"%s",
		 mod + ELIXIR_PREFIX_LEN, fun, slash);
	return true;
}

void names__display(const char *name, bool erlang_names, char *buf, size_t len)
{
	if (!len)
		return;
	if (erlang_names || !elixir_form(name, buf, len))
		snprintf(buf, len, "%s", name);
}

void names__display_inplace(char *buf, size_t len, bool erlang_names)
{
	char out[2048];

	if (erlang_names || !strstr(buf, elixir_prefix))
		return;
	names__display(buf, false, out, sizeof(out));
	snprintf(buf, len, "%s", out);
}
