/* Finding and reading the agent that `extrospect inject` pushes. The sampler and the agent it
 * pushes come from one install, so the NIF's agent block has the ABI this sampler reads. Only
 * ebin/extrospect.app, ebin/ *.beam and priv/extrospect_nif.so are taken; sizes are bounded.
 * See inject_bundle.h. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inject_bundle.h"

#define BUNDLE_MAX_FILES 64
#define BUNDLE_MAX_FILE	 (64u << 20)

static const char *const required[] = {"ebin/extrospect.app", "ebin/extrospect_nif.beam",
				       "ebin/extrospect_agent.beam", "priv/extrospect_nif.so"};

static bool is_file(const char *dir, const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, rel) >= sizeof(path))
		return false;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool complete(const char *dir)
{
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!is_file(dir, required[i]))
			return false;
	return true;
}

/* The first candidate directory that holds a complete agent. */
/* out must hold PATH_MAX bytes (realpath). */
static int find_dir(char *out, size_t len, char *err, size_t errlen)
{
	static const char *const beside[] = {"../lib/extrospect",
					     "../_build/default/lib/extrospect"};
	const char *env = getenv("EXTROSPECT_AGENT_DIR");
	char exe[PATH_MAX];
	ssize_t n;

	if (env && env[0]) {
		if (complete(env) && realpath(env, exe)) {
			snprintf(out, len, "%s", exe);
			return 0;
		}
		snprintf(
		    err, errlen,
		    "EXTROSPECT_AGENT_DIR=%s holds no complete agent (needs ebin/extrospect.app, "
		    "ebin/*.beam, priv/extrospect_nif.so)",
		    env);
		return -ENOENT;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		for (size_t i = 0; i < sizeof(beside) / sizeof(beside[0]); i++) {
			char path[PATH_MAX + 64];

			snprintf(path, sizeof(path), "%s/%s", exe, beside[i]);
			if (complete(path) && realpath(path, out))
				return 0;
		}
	}
	snprintf(err, errlen,
		 "no agent to push: none beside this executable (../lib/extrospect, "
		 "../_build/default/lib/extrospect); build it (rebar3 compile) or set "
		 "EXTROSPECT_AGENT_DIR, or give --code-path");
	return -ENOENT;
}

static int read_file(const char *dir, const char *rel, struct inject_file *f, char *err,
		     size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;
	FILE *fp;
	int e = 0;

	snprintf(f->rel, sizeof(f->rel), "%s", rel);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, rel) >= sizeof(path))
		return -ENAMETOOLONG;
	fp = fopen(path, "rbe");
	if (!fp || fstat(fileno(fp), &st) != 0) {
		e = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (size_t)st.st_size > BUNDLE_MAX_FILE) {
		e = -EFBIG;
		goto out;
	}
	f->len = (size_t)st.st_size;
	f->data = malloc(f->len);
	if (!f->data)
		e = -ENOMEM;
	else if (fread(f->data, 1, f->len, fp) != f->len)
		e = -EIO;
out:
	if (fp)
		fclose(fp);
	if (e)
		snprintf(err, errlen, "cannot read the agent file %s: %s", path,
			 e == -EFBIG ? "not a regular file of 1 byte to 64 MiB" : strerror(-e));
	return e;
}

static bool wanted(const char *name)
{
	size_t n = strlen(name);

	if (strcmp(name, "extrospect.app") == 0)
		return true;
	return n > 5 && n < 100 && strcmp(name + n - 5, ".beam") == 0 && name[0] != '.';
}

static int add(struct inject_bundle *b, const char *rel, char *err, size_t errlen)
{
	int e;

	if (b->n >= BUNDLE_MAX_FILES) {
		snprintf(err, errlen, "%s/ebin holds more than %d files", b->dir, BUNDLE_MAX_FILES);
		return -E2BIG;
	}
	e = read_file(b->dir, rel, &b->v[b->n], err, errlen);
	if (e) {
		free(b->v[b->n].data);
		b->v[b->n].data = NULL;
		return e;
	}
	b->bytes += b->v[b->n].len;
	b->beams += strstr(rel, ".beam") != NULL;
	b->n++;
	return 0;
}

static int read_ebin(struct inject_bundle *b, char *err, size_t errlen)
{
	char path[PATH_MAX + 8], rel[128];
	struct dirent *d;
	DIR *dir;
	int e = 0;

	snprintf(path, sizeof(path), "%s/ebin", b->dir);
	dir = opendir(path);
	if (!dir) {
		snprintf(err, errlen, "cannot list %s: %s", path, strerror(errno));
		return -errno;
	}
	while (!e && (d = readdir(dir))) {
		if (!wanted(d->d_name))
			continue;
		snprintf(rel, sizeof(rel), "ebin/%.100s", d->d_name);
		e = add(b, rel, err, errlen);
	}
	closedir(dir);
	return e;
}

int inject_bundle__load(struct inject_bundle **out, char *err, size_t errlen)
{
	struct inject_bundle *b = calloc(1, sizeof(*b));
	int e;

	*out = NULL;
	if (!b)
		return -ENOMEM;
	b->v = calloc(BUNDLE_MAX_FILES, sizeof(*b->v));
	if (!b->v) {
		e = -ENOMEM;
		goto fail;
	}
	e = find_dir(b->dir, sizeof(b->dir), err, errlen);
	if (!e)
		e = read_ebin(b, err, errlen);
	if (!e)
		e = add(b, "priv/extrospect_nif.so", err, errlen);
	if (e)
		goto fail;
	*out = b;
	return 0;
fail:
	inject_bundle__free(b);
	return e;
}

void inject_bundle__free(struct inject_bundle *b)
{
	if (!b)
		return;
	for (size_t i = 0; b->v && i < b->n; i++)
		free(b->v[i].data);
	free(b->v);
	free(b);
}
