/* A hostile VM for test/e2e/hostile_test.sh: a C program named beam.smp that exports what the
 * sampler looks for in an OTP 25 beam.smp (etp_otp_release, etp_erts_version, etp_beamasm,
 * __jit_debug_descriptor, erts_atom_table, erts_proc, erts_aligned_scheduler_data,
 * beam_normal_exit) and serves, through them, data no real VM would: a JIT list that cycles with
 * consistent links and reads 544 MiB, atoms with bad pointers and lengths, processes with huge or
 * inverted sizes, a stack of a million frames, slots that repeat one process; with
 * XP_FAKE_AGENT=PATH (xp_fake_agent.c) an agent block whose module ranges table claims 2^40
 * ranges. Every ERTS offset comes from the OTP 25 row of external/vm/layout.c, never from here.
 * Usage: beam.smp READY_FILE  (writes READY_FILE when its memory is laid out, then runs until
 * killed, its "schedulers" busy about 20 % of the time so that samplers have samples). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "layout.h"

#define EXPORT __attribute__((visibility("default"), used))

EXPORT char etp_otp_release[] = "25";
EXPORT char etp_erts_version[] = "13.1.5";
EXPORT int etp_beamasm = 1;
EXPORT int erts_frame_layout = 0; /* ERTS_FRAME_LAYOUT_RA */
EXPORT struct {
	uint32_t version, action;
	uint64_t relevant, first;
} __jit_debug_descriptor = {1, 0, 0, 0};
EXPORT _Alignas(64) unsigned char erts_atom_table[256];
EXPORT _Alignas(64) unsigned char erts_proc[512];
EXPORT void *erts_aligned_scheduler_data;
EXPORT void *beam_normal_exit;

#define NSCHED	    2
#define PTAB_SLOTS  1024u
#define BIG_SYMFILE (32u << 20)
#define BIG_ENTRIES 17	       /* 17 x 32 MiB: over the sampler's 512 MiB a walk */
#define DEEP_WORDS  (1u << 20) /* an 8 MiB stack of CP-looking words */
#define UNMAPPED    0x10000000000ull
#define PROC_BYTES  1024u

static const struct xp_layout *row;

static void put(void *base, int32_t off, uint64_t v, size_t width)
{
	if (off >= 0)
		memcpy((char *)base + off, &v, width);
}

static void *zalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);

	if (!p)
		abort();
	memset(p, 0, n);
	return p;
}

/* ---- JIT: a cycle whose prev links agree, then 17 entries sharing one 32 MiB symfile ----------
 */

struct jit_entry {
	uint64_t next, prev, symfile, size;
};

static void lay_out_jit(void)
{
	static const char mod[] = "xp_hostile";
	struct jit_entry *e = zalloc(sizeof(*e) * (4 + BIG_ENTRIES));
	unsigned char *emu = zalloc(32), *module = zalloc(4096);
	void *big =
	    mmap(NULL, BIG_SYMFILE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint64_t n = 0xffffffffu;

	if (big == MAP_FAILED)
		abort();
	put(emu, 8, 0, 4); /* header 0 (emulator), frame layout ra */
	put(emu, 16, (uintptr_t)beam_normal_exit, 8);
	put(module, 0, 1, 4); /* a module whose range count runs past its end */
	put(module, 16, n, 4);
	put(module, 20, 4096, 4);
	put(module, 24, sizeof(mod), 2);
	memcpy(module + 26, mod, sizeof(mod));
	/* 0 -> 1 -> 2 -> 3 -> 0: each prev agrees, so only a visited set sees the cycle. */
	e[0] = (struct jit_entry){(uintptr_t)&e[1], (uintptr_t)&e[3], (uintptr_t)emu, 32};
	e[1] = (struct jit_entry){(uintptr_t)&e[2], (uintptr_t)&e[0], (uintptr_t)module, 4096};
	e[2] = (struct jit_entry){(uintptr_t)&e[3], (uintptr_t)&e[1], 0x10, 1ull << 62};
	e[3] = (struct jit_entry){(uintptr_t)&e[0], (uintptr_t)&e[2], (uintptr_t)big, BIG_SYMFILE};
	__jit_debug_descriptor.first = (uintptr_t)&e[0];
	/* Second list (served after a restart with XP_FAKE_JIT=big): 17 x 32 MiB of zeros. */
	if (getenv("XP_FAKE_JIT") && !strcmp(getenv("XP_FAKE_JIT"), "big")) {
		for (int i = 4; i < 4 + BIG_ENTRIES; i++)
			e[i] =
			    (struct jit_entry){i + 1 < 4 + BIG_ENTRIES ? (uintptr_t)&e[i + 1] : 0,
					       (uintptr_t)&e[i - 1], (uintptr_t)big, BIG_SYMFILE};
		e[4].prev = 0;
		__jit_debug_descriptor.first = (uintptr_t)&e[4];
	}
}

/* ---- atoms: 0 'false' and 1 'true' are sound (the scan's test); the rest are not ------------- */

static uint64_t atom_term(uint32_t index)
{
	return (uint64_t)index << XP_ATOM_INDEX_SHIFT | XP_TAG_ATOM;
}

static void *make_atom(int16_t len, uint64_t name)
{
	void *a = zalloc(64);

	put(a, row->off[XP_OFF_ATOM_LEN], (uint16_t)len, 2);
	put(a, row->off[XP_OFF_ATOM_NAME], name, 8);
	return a;
}

static void lay_out_atoms(void)
{
	uint64_t *seg = zalloc(64 * 8), *page = zalloc(1024 * 8);
	static const char nul_inside[] = "ab\0cd";

	page[0] = (uintptr_t)make_atom(5, (uintptr_t) "false");
	page[1] = (uintptr_t)make_atom(4, (uintptr_t) "true");
	page[2] = (uintptr_t)make_atom(32767, (uintptr_t) "huge"); /* longer than any atom */
	page[3] = (uintptr_t)make_atom(5, UNMAPPED);		   /* text not mapped */
	page[4] = UNMAPPED;					   /* Atom not mapped */
	page[5] = (uintptr_t)make_atom(5, (uintptr_t)nul_inside);  /* NUL in the text */
	page[6] = (uintptr_t)make_atom(-3, (uintptr_t) "neg");	   /* negative length */
	page[7] = (uintptr_t)page;				   /* the page itself */
	seg[0] = (uintptr_t)page;
	seg[1] = (uintptr_t)seg; /* a page that is the segment table */
	seg[2] = UNMAPPED;
	put(erts_atom_table, row->off[XP_OFF_ITAB_ENTRIES], 1u << 26,
	    4); /* the most there can be */
	put(erts_atom_table, row->off[XP_OFF_ITAB_SEG_TABLE], (uintptr_t)seg, 8);
}

/* ---- processes ----------------------------------------------------------------------------------
 */

static uint64_t pid_for(uint32_t ix, uint32_t num)
{
	return (uint64_t)ix << 32 | (uint64_t)num << XP_PID_DATA_SHIFT | XP_TAG_PID;
}

/* A process with a heap of heap_words (0: none mapped) and the stack in its last stack_words. */
static void *make_proc(uint32_t ix, uint64_t heap_words, uint64_t stack_words)
{
	void *p = zalloc(PROC_BYTES);
	uint64_t *heap = heap_words ? zalloc(heap_words * 8) : NULL;
	const int32_t *o = row->off;

	put(p, o[XP_OFF_P_ID], pid_for(ix, 100 + ix), 8);
	put(p, o[XP_OFF_P_HEAP], (uintptr_t)heap, 8);
	put(p, o[XP_OFF_P_HTOP], (uintptr_t)(heap + 4), 8);
	put(p, o[XP_OFF_P_HEND], (uintptr_t)(heap + heap_words), 8);
	put(p, o[XP_OFF_P_STOP], (uintptr_t)(heap + heap_words - stack_words), 8);
	put(p, o[XP_OFF_P_HEAP_SZ], heap_words, 8);
	put(p, o[XP_OFF_P_INITIAL], atom_term(0), 8);
	put(p, o[XP_OFF_P_INITIAL] + 8, atom_term(1), 8);
	put(p, o[XP_OFF_P_INITIAL] + 16, 2, 8);
	if (heap_words)
		heap[heap_words - 1] = (uintptr_t)beam_normal_exit;
	return p;
}

static void lay_out_procs(uint64_t *slots)
{
	const int32_t *o = row->off;
	uint64_t *stack;
	void *p;

	slots[0] = (uintptr_t)make_proc(0, 256, 4); /* sound */
	/* 1: a heap of 2^33 words (64 GiB) that is not there. */
	p = make_proc(1, 0, 0);
	put(p, o[XP_OFF_P_HEAP], 0x7f0000000000ull, 8);
	put(p, o[XP_OFF_P_HEND], 0x7f0000000000ull + (8ull << 33), 8);
	put(p, o[XP_OFF_P_STOP], 0x7f0000000000ull + (8ull << 33) - 64, 8);
	put(p, o[XP_OFF_P_HTOP], 0x7f0000000000ull + 64, 8);
	put(p, o[XP_OFF_P_HEAP_SZ], 1ull << 33, 8);
	put(p, o[XP_OFF_P_MBUF_SZ], UINT64_MAX / 2, 8);
	put(p, o[XP_OFF_P_BIN_OLD_VHEAP], UINT64_MAX, 8);
	slots[1] = (uintptr_t)p;
	/* 2: heap and stack inverted; old heap backwards. */
	p = make_proc(2, 64, 8);
	put(p, o[XP_OFF_P_STOP], 16, 8);
	put(p, o[XP_OFF_P_HTOP], UINT64_MAX - 7, 8);
	put(p, o[XP_OFF_P_OLD_HEAP], 0x7f0000002000ull, 8);
	put(p, o[XP_OFF_P_OLD_HTOP], 0x7f0000001000ull, 8);
	put(p, o[XP_OFF_P_OLD_HEND], 0x7f0000000000ull, 8);
	slots[2] = (uintptr_t)p;
	/* 3: a stack of a million words, each a return address into the fake's own code, so a
	 * walker takes every one for a frame; registered under atom 2 (32767 bytes long), initial
	 * call of atoms 3 and 4 (unreadable). */
	p = make_proc(3, DEEP_WORDS + 16, DEEP_WORDS);
	stack = (uint64_t *)(uintptr_t) * (uint64_t *)((char *)p + o[XP_OFF_P_STOP]);
	for (uint32_t i = 0; i + 1 < DEEP_WORDS; i++)
		stack[i] = (uintptr_t)beam_normal_exit + 4 * (i & 255);
	{
		void *reg = zalloc(64);

		put(reg, o[XP_OFF_REGPROC_NAME], atom_term(2), 8);
		put(p, o[XP_OFF_P_REG], (uintptr_t)reg, 8);
	}
	put(p, o[XP_OFF_P_INITIAL], atom_term(3), 8);
	put(p, o[XP_OFF_P_INITIAL] + 8, atom_term(4), 8);
	put(p, o[XP_OFF_P_INITIAL] + 16, UINT64_MAX, 8);
	slots[3] = (uintptr_t)p;
	/* 4: registered under atoms that are the page itself, a NUL inside, a negative length. */
	p = make_proc(4, 64, 4);
	put(p, o[XP_OFF_P_REG], (uintptr_t)p, 8); /* the RegProc is the Process itself */
	put(p, o[XP_OFF_P_INITIAL], atom_term(7), 8);
	put(p, o[XP_OFF_P_INITIAL] + 8, atom_term(5), 8);
	put(p, o[XP_OFF_P_INITIAL] + 16, atom_term(6), 8);
	slots[4] = (uintptr_t)p;
	slots[5] = UNMAPPED;	 /* a Process that is not there */
	slots[6] = slots[0] + 4; /* misaligned */
	for (uint32_t i = 7; i < 40; i++)
		slots[i] = slots[3]; /* one process in many slots: its pid matches none of them */
}

static void lay_out_ptab(void)
{
	uint64_t *slots = zalloc(PTAB_SLOTS * 8);

	lay_out_procs(slots);
	put(erts_proc, row->ptab_tab, (uintptr_t)slots, 8);
	put(erts_proc, row->ptab_max, PTAB_SLOTS, 4);
	put(erts_proc, row->ptab_invalid_element, (uintptr_t)zalloc(PROC_BYTES), 8);
	put(erts_proc, row->ptab_element_size, (uint64_t)row->off[XP_OFF_P_SIZEOF], 8);
}

/* ---- schedulers ---------------------------------------------------------------------------------
 */

static void *scheduler(void *arg)
{
	struct timespec rest = {0, 8000000};

	for (;;) {
		struct timespec t0, t;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec - t0.tv_nsec < 2000000L);
		nanosleep(&rest, NULL);
	}
	return arg;
}

static void lay_out_schedulers(void)
{
	const int32_t *o = row->off;
	size_t stride = (size_t)o[XP_OFF_ESD_STRIDE];
	unsigned char *esd = zalloc(stride * NSCHED);
	uint64_t *slots;

	memcpy(&slots, erts_proc + row->ptab_tab, 8);
	for (unsigned i = 0; i < NSCHED; i++) {
		put(esd + i * stride, o[XP_OFF_ESD_TYPE], XP_SCHED_NORMAL, 4);
		put(esd + i * stride, o[XP_OFF_ESD_NO], i + 1, 8);
		/* scheduler 1 runs the deep process, 2 the one whose heap is not there */
		put(esd + i * stride, o[XP_OFF_ESD_CURRENT_PROCESS], slots[i ? 1 : 3], 8);
	}
	erts_aligned_scheduler_data = esd;
	for (unsigned i = 0; i < NSCHED; i++) {
		pthread_t th;
		char name[16];

		/* the row's format is "%u_scheduler" */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		snprintf(name, sizeof(name), row->thread_fmt[XP_SCHED_NORMAL], i + 1);
#pragma GCC diagnostic pop
		if (pthread_create(&th, NULL, scheduler, NULL))
			abort();
		pthread_setname_np(th, name);
	}
}

static void normal_exit_code(void)
{
}

/* ---- agent: a block publishing an index and a ranges table r[1] of 2^40 ranges -------------- */

static void lay_out_agent(void)
{
	const struct xp_ranges_layout *L = &row->ranges;
	const char *path = getenv("XP_FAKE_AGENT");
	struct xp_agent_block *b;
	uint32_t *ix = zalloc(64);
	uint8_t *r = zalloc((size_t)L->code_ix_count * (size_t)L->size);
	uint64_t *mods = zalloc(64);
	void *lib;

	if (!path || !(lib = dlopen(path, RTLD_NOW)) || !(b = dlsym(lib, XP_AGENT_SYMBOL)))
		return;
	*ix = 1;
	for (int32_t i = 0; i < L->code_ix_count; i++) {
		put(r + i * L->size, L->modules, (uintptr_t)mods, 8);
		put(r + i * L->size, L->n, 1ull << 40, 8);
		put(r + i * L->size, L->allocated, 1ull << 40, 8);
		put(r + i * L->size, L->mid, (uintptr_t)mods, 8);
	}
	*b = (struct xp_agent_block){.abi_version = XP_ABI_VERSION,
				     .size = sizeof(*b),
				     .seq = 2,
				     .generation = 1,
				     .os_pid = getpid(),
				     .word_size = 8,
				     .otp_release = "25",
				     .erts_version = "13.1.5",
				     .flavor = XP_FLAVOR_JIT,
				     .frame_layout = XP_LAYOUT_RA,
				     .n_addrs = XP_ADDR_COUNT};
	b->addrs[XP_ADDR_ACTIVE_CODE_IX] = (struct xp_addr){(uintptr_t)ix, XP_SRC_SCAN, 3};
	b->addrs[XP_ADDR_CODE_RANGES] = (struct xp_addr){(uintptr_t)r, XP_SRC_SCAN, 3};
	__atomic_store_n(&b->magic, XP_AGENT_MAGIC, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
	char tmp[4096];
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: beam.smp READY_FILE\n");
		return 2;
	}
	row = layout__find(etp_erts_version, XP_FLAVOR_JIT, "x86_64");
	if (!row)
		return 3;
	beam_normal_exit = (void *)(uintptr_t)normal_exit_code;
	lay_out_jit();
	lay_out_atoms();
	lay_out_ptab();
	lay_out_schedulers();
	lay_out_agent();
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f)
		return 4;
	fprintf(f, "os_pid=%d\n", (int)getpid());
	if (fclose(f) || rename(tmp, argv[1]))
		return 4;
	for (;;)
		pause();
}
