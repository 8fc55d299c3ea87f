/* Attaching to a BEAM VM by pid, read-only: find beam.smp in its maps, open the image through
 * /proc/PID/root (chroots, containers), read versions, find the agent, pick the layout row and
 * resolve every offset with its source. See target.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <unistd.h>

#include "privilege.h"
#include "target.h"
#include "path.h"

static int fail(struct target *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct target *t, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	return code;
}

/* Reading a VM's memory (process_vm_readv) takes ptrace read access: its own user's VM, unless
 * Yama or a non-dumpable VM say no; another user's with CAP_SYS_PTRACE. Says which, and the
 * line that grants it (SECURITY.md "Privileges"). */
static int fail_perm(struct target *t, const char *what)
{
	char setcap[4200], dir[64];
	struct stat st;

	privilege__setcap_line(setcap, sizeof(setcap));
	snprintf(dir, sizeof(dir), "/proc/%d", (int)t->pid);
	if (geteuid() == 0)
		return fail(
		    t, TARGET_EPERM,
		    "permission denied reading %s of pid %d, though we are root: this "
		    "process lacks CAP_SYS_PTRACE (in a container: --cap-add SYS_PTRACE), or "
		    "a security module (Yama ptrace_scope 3, SELinux, AppArmor) forbids it",
		    what, (int)t->pid);
	if (!stat(dir, &st) && st.st_uid != geteuid())
		return fail(t, TARGET_EPERM,
			    "permission denied reading %s of pid %d: it runs as uid %u and we as "
			    "uid %u; another user's VM needs root or CAP_SYS_PTRACE: %s (in a "
			    "container: --cap-add SYS_PTRACE)",
			    what, (int)t->pid, (unsigned)st.st_uid, (unsigned)geteuid(), setcap);
	return fail(t, TARGET_EPERM,
		    "permission denied reading %s of pid %d, which runs as our uid %u: "
		    "kernel.yama.ptrace_scope >= 1 or a VM that is not dumpable asks for "
		    "CAP_SYS_PTRACE: run as root, or %s (or: sysctl kernel.yama.ptrace_scope=0)",
		    what, (int)t->pid, (unsigned)geteuid(), setcap);
}

static int map_errno(struct target *t, int err, const char *what)
{
	if (err == -ENOENT || err == -ESRCH)
		return fail(t, TARGET_ENOPROC, "no such process: %d", (int)t->pid);
	if (err == -EACCES || err == -EPERM)
		return fail_perm(t, what);
	return fail(t, err, "cannot read %s of pid %d: %s", what, (int)t->pid, strerror(-err));
}

static bool is_beam_name(const char *path)
{
	const char *base = path__base(path);

	/* beam.smp (jit, the default), beam.emu.smp, beam.debug.smp, and the old plain "beam". */
	return strcmp(base, "beam") == 0 || (strncmp(base, "beam.", 5) == 0 && strlen(base) >= 8 &&
					     strcmp(base + strlen(base) - 4, ".smp") == 0);
}

static int find_beam(struct target *t)
{
	char comm[32] = "?", path[64];
	size_t i;

	for (i = 0; i < t->maps->n; i++) {
		const struct proc_map *m = &t->maps->v[i];

		if ((m->perms & PROC_PERM_X) && is_beam_name(m->path)) {
			snprintf(t->exe, sizeof(t->exe), "%s", m->path);
			return 0;
		}
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
	proc__read_file(path, comm, sizeof(comm));
	return fail(t, TARGET_ENOTBEAM, "pid %d (%s) is not a BEAM VM: no beam.smp is mapped",
		    (int)t->pid, comm);
}

static int open_image(struct target *t)
{
	const struct proc_map *first = NULL;
	uint64_t probe;
	size_t i;
	int err;

	for (i = 0; i < t->maps->n && !first; i++) {
		if (strcmp(t->maps->v[i].path, t->exe) == 0)
			first = &t->maps->v[i];
	}
	err = mem__read_u64(t->mem, first->start, &probe);
	if (err == -ESRCH)
		return fail(t, TARGET_EGONE, "pid %d exited while attaching", (int)t->pid);
	if (err)
		return map_errno(t, err, "the memory");
	err = proc__resolve_path(t->pid, t->exe, first->inode, t->exe_host, sizeof(t->exe_host));
	if (err == 0)
		err = elf_image__open(t->exe_host, &t->beam);
	if (err == -ENOENT) {
		/* Replaced on disk since the VM started: the kernel still has the original. */
		snprintf(t->exe_host, sizeof(t->exe_host), "/proc/%d/exe", (int)t->pid);
		err = elf_image__open(t->exe_host, &t->beam);
	}
	if (err)
		return map_errno(t, err, t->exe);
	if (elf_image__bias(t->beam, t->maps, t->exe, &t->bias))
		return fail(t, -ENOEXEC, "cannot place %s in the maps of pid %d", t->exe,
			    (int)t->pid);
	return 0;
}

/* A NUL-terminated string exported as a char array (etp_otp_release, etp_erts_version). */
static int read_sym_string(struct target *t, const char *name, char *buf, size_t len)
{
	struct elf_sym s;
	size_t n;

	if (elf_image__symbol(t->beam, name, &s) || s.size == 0)
		return -ENOENT;
	n = s.size < len ? s.size : len - 1;
	if (mem__read(t->mem, t->bias + s.value, buf, n))
		return -EFAULT;
	buf[n] = '\0';
	return strlen(buf) > 0 ? 0 : -EPROTO;
}

/* OTP_VERSION of the installation: <root>/releases/<N>/OTP_VERSION, root being above erts-X. */
static void read_install_version(struct target *t)
{
	char root[PATH_MAX + 32], dir[PATH_MAX + 64], file[PATH_MAX + 384];
	const char *erts = strstr(t->exe_host, "/erts-");
	struct dirent *de;
	DIR *d;

	if (!erts)
		return;
	if (!t->erts_version[0]) {
		size_t n = strcspn(erts + 6, "/");

		if (n > 0 && n < sizeof(t->erts_version)) {
			memcpy(t->erts_version, erts + 6, n);
			t->erts_version[n] = '\0';
			t->version_source = TSRC_INSTALL;
		}
	}
	snprintf(root, sizeof(root), "%.*s", (int)(erts - t->exe_host), t->exe_host);
	snprintf(dir, sizeof(dir), "%s/releases", root);
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		char v[32];

		if (!isdigit((unsigned char)de->d_name[0]) || strlen(de->d_name) > 8)
			continue;
		snprintf(file, sizeof(file), "%s/%s/OTP_VERSION", dir, de->d_name);
		if (proc__read_file(file, v, sizeof(v)) || strtol(v, NULL, 10) != atoi(de->d_name))
			continue;
		snprintf(t->otp_version, sizeof(t->otp_version), "%s", v);
		if (!t->otp_release[0]) {
			snprintf(t->otp_release, sizeof(t->otp_release), "%.8s", de->d_name);
			t->version_source = TSRC_INSTALL;
		}
	}
	closedir(d);
}

static void read_versions(struct target *t)
{
	if (target__has_agent(t)) {
		snprintf(t->otp_release, sizeof(t->otp_release), "%s", t->agent->block.otp_release);
		snprintf(t->erts_version, sizeof(t->erts_version), "%s",
			 t->agent->block.erts_version);
		t->version_source = TSRC_AGENT;
	} else if (read_sym_string(t, "etp_otp_release", t->otp_release, sizeof(t->otp_release)) ==
		       0 &&
		   read_sym_string(t, "etp_erts_version", t->erts_version,
				   sizeof(t->erts_version)) == 0) {
		t->version_source = TSRC_DYNSYM;
	} else {
		t->otp_release[0] = t->erts_version[0] = '\0';
	}
	read_install_version(t);
}

static void resolve_offsets(struct target *t)
{
	const struct xp_agent_block *b = target__has_agent(t) ? &t->agent->block : NULL;
	int i;

	layout__values(t->layout, t->off); /* the agent's, where it has them, over them */
	for (i = 0; i < XP_OFF_COUNT; i++) {
		struct target_value *v = &t->off[i];

		if (b && (uint32_t)i < b->n_offsets && (b->offsets[i].flags & XP_VAL_PRESENT)) {
			v->value = b->offsets[i].value;
			v->present = true;
			v->verified = b->offsets[i].flags & XP_VAL_VERIFIED;
			/* The agent relays the table for what it cannot discover: say so. */
			v->source =
			    (b->offsets[i].flags & XP_VAL_FROM_TABLE) ? TSRC_TABLE : TSRC_AGENT;
		}
	}
}

static int select_layout(struct target *t, const struct target_opts *opts)
{
	if (!opts->no_builtin_layout)
		t->layout = layout__find(t->erts_version, t->flavor, "x86_64");
	resolve_offsets(t);
	if (t->layout || target__has_agent(t))
		return 0;
	return fail(
	    t, TARGET_EUNSUPPORTED,
	    "no built-in layout for erts %s (OTP %s, %s) and no extrospect agent in pid %d: "
	    "add the extrospect application to the node",
	    t->erts_version[0] ? t->erts_version : "?", t->otp_release[0] ? t->otp_release : "?",
	    t->flavor == XP_FLAVOR_JIT	 ? "jit"
	    : t->flavor == XP_FLAVOR_EMU ? "emu"
					 : "unknown flavour",
	    (int)t->pid);
}

int target__attach(pid_t pid, const struct target_opts *opts, struct target **out)
{
	struct target *t;
	int err;

	*out = t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pid = pid;
	t->agent = calloc(1, sizeof(*t->agent));
	if (!t->agent)
		return -ENOMEM;
	err = proc__exists(pid);
	if (err)
		return map_errno(t, err, "/proc");
	err = proc_maps__load(pid, &t->maps);
	if (err == -ENODATA)
		return fail(t, TARGET_ENOTBEAM,
			    "pid %d is not a BEAM VM: it has no user memory "
			    "(a kernel thread or a zombie)",
			    (int)pid);
	if (err)
		return map_errno(t, err, "/proc/PID/maps");
	if ((err = find_beam(t)))
		return err;
	if ((err = mem__open_live(&t->mem, pid)))
		return fail(t, err, "cannot open a memory reader: %s", strerror(-err));
	if ((err = open_image(t)))
		return err;
	if (!opts->no_agent && (err = agent__find(pid, t->maps, t->mem, t->agent)))
		return fail(t, err, "out of memory");
	read_versions(t);
	if ((err = target__discover(t)))
		return err;
	if ((err = select_layout(t, opts)) || (err = target__discover_with_layout(t)))
		return err;
	target__run_checks(t);
	return 0;
}

void target__free(struct target *t)
{
	if (!t)
		return;
	jitmap__free(t->jit);
	free(t->sched);
	free(t->agent);
	elf_image__free(t->beam);
	mem__free(t->mem);
	proc_maps__free(t->maps);
	free(t);
}
