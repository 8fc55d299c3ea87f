/* The agent block, seen from outside: locate the NIF in the target's maps, resolve the block's
 * dynamic symbol, read it under its sequence counter and validate it. See agent.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "elfsym.h"
#include "path.h"

#define AGENT_READ_TRIES 5

static const char *const status_str[] = {
    [AGENT_OK] = "ok",
    [AGENT_ABSENT] = "absent",
    [AGENT_NO_SYMBOL] = "NIF mapped without an agent block",
    [AGENT_UNREADABLE] = "block unreadable",
    [AGENT_RETIRED] = "block retired (NIF unloaded or upgrading)",
    [AGENT_BAD_MAGIC] = "bad magic",
    [AGENT_BAD_ABI] = "unsupported agent ABI version",
    [AGENT_SHORT] = "block too short",
    [AGENT_BAD_COUNTS] = "block counts out of range",
    [AGENT_TORN] = "block kept changing while read",
};

const char *agent__status_str(enum agent_status st)
{
	return (unsigned)st < sizeof(status_str) / sizeof(status_str[0]) ? status_str[st] : "?";
}

#define TERMINATE(arr) ((arr)[sizeof(arr) - 1] = '\0')

enum agent_status agent__validate(struct xp_agent_block *b, size_t len)
{
	if (len < offsetof(struct xp_agent_block, seq))
		return AGENT_SHORT;
	if (b->magic == 0)
		return AGENT_RETIRED;
	if (b->magic != XP_AGENT_MAGIC)
		return AGENT_BAD_MAGIC;
	if (b->abi_version != XP_ABI_VERSION)
		return AGENT_BAD_ABI;
	/* ABI 1.0 ended before the tracer region: what an older agent lacks reads as zero. */
	if (b->size < offsetof(struct xp_agent_block, tracer) || len < sizeof(*b))
		return AGENT_SHORT;
	if (b->size < sizeof(*b))
		memset((char *)b + b->size, 0, sizeof(*b) - b->size);
	if (b->seq & 1)
		return AGENT_TORN;
	if (b->n_offsets > XP_OFF_SLOTS || b->n_addrs > XP_ADDR_SLOTS || b->n_sched > XP_MAX_SCHED)
		return AGENT_BAD_COUNTS;
	TERMINATE(b->otp_release);
	TERMINATE(b->erts_version);
	TERMINATE(b->system_version);
	TERMINATE(b->probe_atom_text);
	return AGENT_OK;
}

static int is_agent_nif(const char *path)
{
	const char *base = path__base(path);

	return strncmp(base, "extrospect_nif", 14) == 0 && strstr(base, ".so") != NULL;
}

/* Read the block until two sequence reads agree on an even value. */
static enum agent_status read_block(struct mem *m, uint64_t addr, struct xp_agent_block *b)
{
	enum agent_status st = AGENT_TORN;
	int i;

	for (i = 0; i < AGENT_READ_TRIES; i++) {
		uint64_t seq_after;

		if (mem__read(m, addr, b, sizeof(*b)))
			return AGENT_UNREADABLE;
		st = agent__validate(b, sizeof(*b));
		if (st != AGENT_OK && st != AGENT_TORN)
			return st;
		if (mem__read_u64(m, addr + offsetof(struct xp_agent_block, seq), &seq_after))
			return AGENT_UNREADABLE;
		if (st == AGENT_OK && seq_after == b->seq)
			return AGENT_OK;
	}
	return AGENT_TORN;
}

static int try_nif(pid_t pid, const struct proc_maps *maps, struct mem *m, const char *path,
		   uint64_t inode, struct agent_info *out)
{
	struct elf_image *img = NULL;
	struct elf_sym sym;
	char host_path[PATH_MAX + 32];
	uint64_t bias;
	int err;

	if (proc__resolve_path(pid, path, inode, host_path, sizeof(host_path)))
		return -ENOENT;
	err = elf_image__open(host_path, &img);
	if (err)
		return err;
	if (elf_image__symbol(img, XP_AGENT_SYMBOL, &sym) ||
	    elf_image__bias(img, maps, path, &bias)) {
		out->status = AGENT_NO_SYMBOL;
		err = -ENOENT;
		goto cleanup;
	}
	snprintf(out->path, sizeof(out->path), "%s", path);
	out->addr = bias + sym.value;
	out->status = read_block(m, out->addr, &out->block);
cleanup:
	elf_image__free(img);
	return err;
}

int agent__find(pid_t pid, const struct proc_maps *maps, struct mem *m, struct agent_info *out)
{
	const char *last = NULL;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->status = AGENT_ABSENT;
	for (i = 0; i < maps->n; i++) {
		const char *path = maps->v[i].path;

		if (!is_agent_nif(path) || (last && strcmp(last, path) == 0))
			continue;
		last = path;
		if (try_nif(pid, maps, m, path, maps->v[i].inode, out) == -ENOMEM)
			return -ENOMEM;
		if (out->status == AGENT_OK)
			return 0;
	}
	return 0;
}
