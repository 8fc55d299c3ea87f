/* capture-jit: copy GDB JIT symfiles out of a live BEAM into files, to make the offline fixtures
 * of test/c/test_jitmap.c. It lists entries, or writes the newest entry of each named module (and
 * "emulator" for the emulator entry) to PREFIX<name>.bin; NAME@GEN picks the entry at that
 * generation instead (kernel's `global` and the JIT's fragments share the name "global").
 * Reads with process_vm_readv only.
 *
 *   cc -D_GNU_SOURCE -Iexternal/vm -Ic_src/include -o capture-jit tools/capture-jit.c \
 *      external/vm/mem.c external/vm/jitmap.c external/vm/jitmap_index.c
 *   desc=$(( 0x$(nm -D beam.smp | awk '/__jit_debug_descriptor/{print $1}') + load bias ))
 *   ./capture-jit PID $desc                      # list: generation, size, module
 *   ./capture-jit PID $desc test/c/fixtures/jit_otp25_ erl_init emulator global@99
 *
 * Exit codes: 0 ok, 1 a read or write failed, 2 usage. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jitmap.h"

struct entry {
	uint64_t next, prev, symfile_addr, symfile_size;
};

/* The module name of one symfile ("emulator" for the emulator entry), or NULL if unparseable. */
static const char *blob_name(const uint8_t *blob, size_t len, char *out, size_t outlen)
{
	struct jitmap *map = NULL;
	const struct jit_module_info *mi;

	if (jitmap__new(&map) || jitmap__add_symfile(map, blob, len, 0, 0)) {
		jitmap__free(map);
		return NULL;
	}
	mi = jitmap__module(map, 0);
	snprintf(out, outlen, "%s", mi && mi->name[0] ? mi->name : "emulator");
	jitmap__free(map);
	return out;
}

static int write_blob(const char *prefix, const char *name, const uint8_t *blob, size_t len)
{
	char path[4096];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s%s.bin", prefix, name);
	f = fopen(path, "wb");
	if (!f)
		return -errno;
	ok = fwrite(blob, 1, len, f) == len;
	ok &= fclose(f) == 0;
	fprintf(stderr, "wrote %s (%zu bytes)\n", path, len);
	return ok ? 0 : -EIO;
}

/* Newest first, so the first entry of a name is the live one. */
static int capture(struct mem *m, uint64_t addr, int argc, char **argv)
{
	static uint8_t blob[JIT_MAX_SYMFILE];
	char name[256];
	unsigned gen = 0;

	for (; addr && gen < JIT_MAX_ENTRIES; gen++) {
		struct entry e;

		if (mem__read(m, addr, &e, sizeof(e)) || e.symfile_size > JIT_MAX_SYMFILE ||
		    mem__read(m, e.symfile_addr, blob, e.symfile_size))
			return -EFAULT;
		if (!blob_name(blob, e.symfile_size, name, sizeof(name)))
			snprintf(name, sizeof(name), "?unparseable");
		if (argc < 4)
			printf("%u\t%" PRIu64 "\t%s\n", gen, e.symfile_size, name);
		for (int i = 4; i < argc; i++) {
			const char *at = strchr(argv[i], '@');
			size_t n = at ? (size_t)(at - argv[i]) : strlen(argv[i]);

			if (at && strtoul(at + 1, NULL, 10) != gen)
				continue;
			if (argv[i][0] && n == strlen(name) && !strncmp(argv[i], name, n)) {
				if (write_blob(argv[3], name, blob, e.symfile_size))
					return -EIO;
				argv[i][0] = '\0'; /* done: older entries of this name are purged */
			}
		}
		addr = e.next;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct jit_descriptor d;
	struct mem *m = NULL;
	int err;

	if (argc < 3) {
		fprintf(stderr, "usage: %s PID DESC_ADDR [PREFIX NAME...]\n", argv[0]);
		return 2;
	}
	if (mem__open_live(&m, (pid_t)atoi(argv[1])))
		return 2;
	err = jitmap__read_descriptor(m, strtoull(argv[2], NULL, 0), &d);
	if (!err)
		err = capture(m, d.first_entry, argc, argv);
	if (err)
		fprintf(stderr, "capture-jit: %s\n", strerror(-err));
	mem__free(m);
	return err ? 1 : 0;
}
