/* Unit tests for the call-site check (callsite.c), offline, on code bytes: real OTP 27 JIT code
 * (fl:f_mul/2 = `g(A * B, 7)`, its module's footer veneers and the stub that enters
 * global::mul_add_body_shared, captured from a live VM by process_vm_readv) and small synthetic
 * pieces for OTP 25's calls through the address table and for tail calls no scan can follow.
 * Does not own: the stack walker's use of the check (test_erlang_stack.c). */
#include <stdlib.h>
#include <string.h>

#include "callsite.h"
#include "check.h"
#include "mem.h"
#include "symfile.h"

/* Where the captured bytes lived in the OTP 27 VM. */
#define F_MUL	 0x7fdc243ea430ULL /* fl:f_mul/2-CodeInfoPrologue, then fl:f_mul/2 at +0x30 */
#define FOOTER	 0x7fdc243ea724ULL /* fl::codeFooter: the veneers */
#define STUB	 0x7fdc24000908ULL /* `mov ecx, 0xf; jmp mul_add_body_shared` */
#define MUL_ADD	 0x7fdc24000858ULL /* global::mul_add_body_shared */
#define GLOBAL	 0x7fdc23fff000ULL /* the fragments' module */
#define RA_F_MUL 0x7fdc243ea4a0ULL /* after f_mul's call to the veneer at FOOTER + 0x1a */

/* Synthetic code at SYN: SYN_CALLER calls SYN_F (e8); SYN_F jumps elsewhere through an export
 * entry (42 ff 64 e0 08 = jmp [rax + r12*8 + 8]) or returns; SYN_T25 is OTP 25's
 * `call [rip+disp32]` through a table entry holding MUL_ADD. */
#define SYN	   0x7f0000500000ULL
#define SYN_CALLER (SYN + 0x000)
#define SYN_F	   (SYN + 0x100)
#define SYN_G	   (SYN + 0x200)
#define SYN_T25	   (SYN + 0x300)
#define SYN_TABLE  (SYN + 0x400)
#define SYN_RA_F   (SYN_CALLER + 0x10)
#define SYN_RA_G   (SYN_CALLER + 0x20)
#define SYN_RA_T25 (SYN_T25 + 0x10)
/* A frameless function (SYN_TAIL) that tail-calls (e9) a function's entry label in its own
 * prologue range (syn:lbc/2-CodeInfoPrologue, as OTP 26+ lay a function out), called from
 * SYN_CALLER: a sample in C under syn:lbc/2 has SYN_RA_TAIL on top of its Erlang stack. */
#define SYN_LBC_PRO (SYN + 0x500)
#define SYN_LBC	    (SYN + 0x520)
#define SYN_TAIL    (SYN + 0x580)
#define SYN_RA_TAIL (SYN_CALLER + 0x30)
/* Two fragments laid out as OTP 29's utf8 matching: the short one (0xb0 bytes) takes a fast
 * path and passes the rest on with a jmp at its offset 0x9c to the long one's start; SYN_CALLER
 * calls the short one. A sample in the long one has SYN_RA_UTF8 above its pushed words. */
#define SYN_UTF8     (SYN + 0x600)
#define SYN_UTF8S    (SYN + 0x6b8)
#define SYN_RA_UTF8  (SYN_CALLER + 0x40)
#define SYN_CODE_LEN 0x800

static uint8_t *load(const char *name, size_t *len)
{
	char path[512];
	FILE *f;
	uint8_t *b = malloc(4096);

	snprintf(path, sizeof(path), "%s/%s", XP_FIXTURES_DIR, name);
	if (!b || !(f = fopen(path, "rb"))) {
		free(b);
		return NULL;
	}
	*len = fread(b, 1, 4096, f);
	fclose(f);
	return b;
}

static void put_call(uint8_t *code, uint64_t at, uint8_t op, uint64_t to)
{
	int32_t rel = (int32_t)(to - (at + 5));

	code[at - SYN] = op;
	memcpy(code + (at - SYN) + 1, &rel, 4);
}

static void synthetic(uint8_t *code)
{
	static const uint8_t export_jmp[] = {0x42, 0xff, 0x64, 0xe0, 0x08};
	int32_t disp = (int32_t)(SYN_TABLE - SYN_RA_T25);
	uint64_t target = MUL_ADD;

	memset(code, 0x90, SYN_CODE_LEN);
	put_call(code, SYN_RA_F - 5, 0xe8, SYN_F);
	put_call(code, SYN_RA_G - 5, 0xe8, SYN_G);
	memcpy(code + (SYN_F - SYN) + 8, export_jmp, sizeof(export_jmp));
	code[SYN_G - SYN + 8] = 0xc3; /* ret */
	put_call(code, SYN_RA_TAIL - 5, 0xe8, SYN_TAIL);
	put_call(code, SYN_TAIL + 8, 0xe9, SYN_LBC_PRO + 0x18);
	put_call(code, SYN_RA_UTF8 - 5, 0xe8, SYN_UTF8S);
	code[SYN_UTF8S - SYN + 0x9a] = 0x5e; /* pop rsi */
	put_call(code, SYN_UTF8S + 0x9c, 0xe9, SYN_UTF8);
	put_call(code, SYN_UTF8S + 0x40, 0xe9, SYN_UTF8 + 8); /* not its entry: no call of it */
	code[SYN_RA_T25 - SYN - 6] = 0xff;
	code[SYN_RA_T25 - SYN - 5] = 0x15;
	memcpy(code + (SYN_RA_T25 - SYN) - 4, &disp, 4);
	memcpy(code + (SYN_TABLE - SYN), &target, 8);
}

static struct jitmap *make_map(void)
{
	static const struct symfile_range fl[] = {
	    {0x000, 0x030, "fl:f_mul/2-CodeInfoPrologue"},
	    {0x030, 0x080, "fl:f_mul/2"},
	    {0x2f4, 0x4b8, "fl::codeFooter"},
	};
	static const struct symfile_range glob[] = {
	    {0x1858, 0x18d0, "global::mul_add_body_shared"},
	    {0x1908, 0x1918, "global::times_body_shared"},
	};
	static const struct symfile_range syn[] = {
	    {0x000, 0x100, "syn:caller/0"},
	    {0x100, 0x200, "syn:f/1"},
	    {0x200, 0x300, "syn:g/1"},
	    {0x300, 0x400, "syn:t25/0"},
	    {0x500, 0x520, "syn:lbc/2-CodeInfoPrologue"},
	    {0x520, 0x580, "syn:lbc/2"},
	    {0x580, 0x5c0, "syn:tail/1"},
	    {0x600, 0x6b8, "global::bs_get_utf8_shared"},
	    {0x6b8, 0x768, "global::bs_get_utf8_short_shared"},
	};
	static uint8_t blob[4096];
	struct jitmap *m = NULL;

	if (jitmap__new(&m))
		return NULL;
	jitmap__add_symfile(m, blob, symfile_build(blob, "fl", F_MUL, 0x4b8, fl, 3), 0x10, 0);
	jitmap__add_symfile(m, blob, symfile_build(blob, "global", GLOBAL, 0x2000, glob, 2), 0x20,
			    1);
	jitmap__add_symfile(m, blob, symfile_build(blob, "syn", SYN, SYN_CODE_LEN, syn, 9), 0x30,
			    2);
	jitmap__finish(m);
	return m;
}

/* Reads of the stub's code, by the tap. */
static unsigned stub_reads;

static void count_stub_reads(void *ctx, uint64_t addr, const void *buf, size_t len, int rc)
{
	(void)ctx, (void)buf, (void)len, (void)rc;
	stub_reads += addr == STUB;
}

int main(void)
{
	size_t lf = 0, lv = 0, ls = 0;
	uint8_t *f = load("callsite_otp27_f_mul.bin", &lf),
		*v = load("callsite_otp27_footer.bin", &lv);
	uint8_t *st = load("callsite_otp27_stub.bin", &ls), *code = malloc(SYN_CODE_LEN);
	struct jitmap *m = make_map();
	struct callsite *c = NULL;
	struct mem *mem = NULL;
	const struct jit_range *mul_add, *times, *g;

	if (!f || !v || !st || !code || !m)
		return check_skip("fixtures missing");
	synthetic(code);
	{
		const struct mem_region r[] = {
		    {F_MUL, lf, f}, {FOOTER, lv, v}, {STUB, ls, st}, {SYN, SYN_CODE_LEN, code}};

		CHECK_INT("snapshot", 0, mem__open_snapshot(&mem, r, 4));
	}
	CHECK_INT("new", 0, callsite__new(&c, mem));
	mul_add = jitmap__lookup(m, MUL_ADD);
	times = jitmap__lookup(m, STUB);
	g = jitmap__lookup(m, SYN_G);
	CHECK("map", mul_add && times && g);
	/* f_mul calls a veneer in its footer, which jumps (40 e9) to a stub that jumps on to the
	 * fragment: the fragment's caller is f_mul. */
	CHECK("veneer + stub: f_mul called mul_add",
	      callsite__returns_from(c, m, RA_F_MUL, mul_add));
	CHECK("veneer: f_mul called the stub's fragment",
	      callsite__returns_from(c, m, RA_F_MUL, times));
	CHECK_INT("check agrees", CALL_AGREES, callsite__check(c, m, mul_add, RA_F_MUL));
	/* The stub's code is read once, and again only after the map changed (a reset). */
	mem__set_tap(mem, count_stub_reads, NULL);
	CHECK("stub: cached", callsite__returns_from(c, m, RA_F_MUL, mul_add) && stub_reads == 0);
	callsite__reset(c);
	CHECK("stub: read after a reset",
	      callsite__returns_from(c, m, RA_F_MUL, mul_add) && stub_reads == 1);
	CHECK("stub: read once",
	      callsite__returns_from(c, m, RA_F_MUL, mul_add) && stub_reads == 1);
	mem__set_tap(mem, NULL, NULL);
	CHECK("not a call to another fragment", !callsite__returns_from(c, m, RA_F_MUL, g));
	CHECK("one byte off: no call", !callsite__returns_from(c, m, RA_F_MUL + 1, mul_add));
	/* OTP 25: call [rip+disp32] through the module's table of absolute addresses. */
	CHECK("address table: t25 called mul_add",
	      callsite__returns_from(c, m, SYN_RA_T25, mul_add));
	/* The caller's callee tail-calls through an export entry: whether it reached the leaf is
	 * not known (a later moment's stack would be labelled, a possible one is kept). */
	CHECK_INT("tail call through an export: unknown", CALL_UNKNOWN,
		  callsite__check(c, m, mul_add, SYN_RA_F));
	/* A callee that provably never reaches the leaf: the stack no longer holds the call. */
	CHECK_INT("callee that returns: disagrees", CALL_DISAGREES,
		  callsite__check(c, m, mul_add, SYN_RA_G));
	/* A frameless function that tail-calls the leaf through its entry label in the leaf's
	 * prologue range (a binary comprehension on OTP 26+): the stack still holds the call. */
	CHECK_INT("tail call into the leaf's prologue: agrees", CALL_AGREES,
		  callsite__check(c, m, jitmap__lookup(m, SYN_LBC), SYN_RA_TAIL));
	CHECK_INT("that tail call does not reach another function", CALL_DISAGREES,
		  callsite__check(c, m, g, SYN_RA_TAIL));
	/* A fragment that passes on to another at its end (a jmp 156 bytes in): whoever called it
	 * called that one too; a jump into the other's middle is no call of it. */
	CHECK("a fragment's jump at its end: the caller called the long utf8 fragment",
	      callsite__returns_from(c, m, SYN_RA_UTF8, jitmap__lookup(m, SYN_UTF8)));
	CHECK("... and the short one it called",
	      callsite__returns_from(c, m, SYN_RA_UTF8, jitmap__lookup(m, SYN_UTF8S)));
	CHECK("... not mul_add", !callsite__returns_from(c, m, SYN_RA_UTF8, mul_add));
	/* A veneer in the footer is a jump to the stub; code elsewhere is no veneer. */
	CHECK("veneer target", callsite__veneer_target(c, m, FOOTER + 0x1a) == STUB);
	CHECK("no veneer in a function", callsite__veneer_target(c, m, SYN_TAIL) == 0);
	callsite__free(c);
	mem__free(mem);
	jitmap__free(m);
	free(f);
	free(v);
	free(st);
	free(code);
	return check_done();
}
