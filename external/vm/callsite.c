/* The call-site check of native samples. See callsite.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "callsite.h"

#define CALL_SLOTS    16384	    /* decoded call instructions before return addresses */
#define STUB_SLOTS    1024	    /* the first bytes of fragments a call enters */
#define FN_CALL_SLOTS 1024	    /* does function F call fragment G? */
#define FN_SCAN_MAX   (256u * 1024) /* longest function code scanned for calls */
#define FN_TAILS      8		    /* tail calls followed from one function */
#define FN_TAIL_DEPTH 2		    /* tail calls followed in a chain */

struct call_site {
	uint64_t ra, target; /* target 0: not a direct call (cannot be checked) */
};

/* A fragment's first STUB_BYTES bytes (n of them: fewer when its range is shorter): enough for
 * the whole of one that passes on to another at its end (OTP 29's bs_get_utf8_short_shared,
 * 176 bytes, jumps to bs_get_utf8_shared from offset 0x9c). */
#define STUB_BYTES 256
struct stub_code {
	uint64_t target; /* 0: empty */
	uint16_t n;	 /* 0: unreadable */
	uint8_t code[STUB_BYTES];
};

struct fn_calls {
	uint64_t fn, leaf; /* range starts */
	int reach;	   /* enum reach */
};

struct callsite {
	struct mem *mem;
	const struct jitmap *jit; /* the map of the check in progress */
	struct call_site calls[CALL_SLOTS];
	struct fn_calls fn_calls[FN_CALL_SLOTS];
	struct stub_code stubs[STUB_SLOTS];
};

int callsite__new(struct callsite **out, struct mem *mem)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->mem = mem;
	return 0;
}

void callsite__reset(struct callsite *c)
{
	memset(c->calls, 0, sizeof(c->calls));
	memset(c->fn_calls, 0, sizeof(c->fn_calls));
	memset(c->stubs, 0, sizeof(c->stubs));
}

void callsite__free(struct callsite *c)
{
	free(c);
}

/* OTP 26+ calls shared fragments through a veneer in the calling module's footer code: a
 * `jmp rel32` (seen as 40 e9 rel32 on 27 and 29) or `jmp [rip+disp32]` to the fragment. The
 * fragment is the call's target. */
static uint64_t follow_veneer(struct callsite *c, uint64_t target)
{
	const struct jit_range *r = jitmap__lookup(c->jit, target);
	uint8_t op[6];
	int32_t disp;
	uint64_t to;

	if (!r || !strstr(r->name, "::code") || mem__read(c->mem, target, op, sizeof(op)))
		return target;
	if (op[0] == 0xe9 || (op[0] == 0x40 && op[1] == 0xe9)) {
		/* asmjit pads its veneers' jumps with an empty REX prefix (40 e9 rel32). */
		size_t len = op[0] == 0x40 ? 6 : 5;

		memcpy(&disp, op + len - 4, sizeof(disp));
		return target + len + (uint64_t)(int64_t)disp;
	}
	if (op[0] == 0xff && op[1] == 0x25) {
		memcpy(&disp, op + 2, sizeof(disp));
		if (mem__read_u64(c->mem, target + 6 + (uint64_t)(int64_t)disp, &to) == 0)
			return to;
	}
	return target;
}

uint64_t callsite__veneer_target(struct callsite *c, const struct jitmap *jit, uint64_t pc)
{
	uint64_t to;

	c->jit = jit;
	to = follow_veneer(c, pc);
	return to != pc ? to : 0;
}

/* The target of the call just before return address ra (through a veneer), or 0 when the
 * instruction there is no call we can follow: `call rel32` (e8), or `call [rip+disp32]` (ff 15),
 * which OTP 25 uses for calls through the module's table of absolute addresses (fragments, C).
 * Cached: code does not change under a return address (the cache is dropped when the JIT map is
 * re-read). */
static uint64_t call_target(struct callsite *c, uint64_t ra)
{
	struct call_site *slot = &c->calls[(ra >> 2) % CALL_SLOTS];
	uint8_t code[6];
	int32_t rel;
	uint64_t to;

	if (slot->ra == ra && slot->ra)
		return slot->target;
	slot->ra = ra;
	slot->target = 0;
	if (mem__read(c->mem, ra - sizeof(code), code, sizeof(code)))
		return 0;
	if (code[1] == 0xe8) {
		memcpy(&rel, code + 2, sizeof(rel));
		slot->target = follow_veneer(c, ra + (uint64_t)(int64_t)rel);
	} else if (code[0] == 0xff && code[1] == 0x15) {
		memcpy(&rel, code + 2, sizeof(rel));
		if (mem__read_u64(c->mem, ra + (uint64_t)(int64_t)rel, &to) == 0)
			slot->target = follow_veneer(c, to);
	}
	return slot->target;
}

/* The first bytes of the fragment code at target (in range r), read once: code does not change
 * under a fragment (the cache is dropped when the JIT map is re-read). NULL when unreadable. */
static const uint8_t *stub_code(struct callsite *c, uint64_t target, const struct jit_range *r,
				size_t *n)
{
	struct stub_code *slot = &c->stubs[(target >> 3) % STUB_SLOTS];
	size_t want = r->end - target < STUB_BYTES ? (size_t)(r->end - target) : STUB_BYTES;

	if (slot->target != target) {
		slot->target = target;
		slot->n = want >= 2 && mem__read(c->mem, target, slot->code, want) == 0
			      ? (uint16_t)want
			      : 0;
	}
	*n = slot->n;
	return slot->n ? slot->code : NULL;
}

/* A fragment whose code jumps to callee's entry within its first STUB_BYTES: OTP 26+ enter some
 * fragments through a stub that sets a register and jumps on (times_body_shared is
 * `mov ecx, imm; jmp mul_add_body_shared`), or take a fast path and pass the rest on at their
 * end (bs_get_utf8_short_shared ends `pop rsi; ...; jmp bs_get_utf8_shared`). Only a jump to
 * callee's first byte counts. */
static bool stub_jumps_to(struct callsite *c, uint64_t target, const struct jit_range *r,
			  const struct jit_range *callee)
{
	size_t n;
	const uint8_t *code = stub_code(c, target, r, &n);

	if (!code)
		return false;
	for (size_t i = 0; i + 2 <= n; i++) {
		int32_t rel;

		if (code[i] == 0xeb &&
		    target + i + 2 + (uint64_t)(int64_t)(int8_t)code[i + 1] == callee->start)
			return true;
		if (code[i] != 0xe9 || i + 5 > n)
			continue;
		memcpy(&rel, code + i + 1, sizeof(rel));
		if (target + i + 5 + (uint64_t)(int64_t)rel == callee->start)
			return true;
	}
	return false;
}

/* Does a call to target enter the function (range) fn? Its own range, its prologue, another
 * range of the same name, or a fragment's stub that jumps to it. */
static bool calls_into(struct callsite *c, uint64_t target, const struct jit_range *fn)
{
	const struct jit_range *r;
	char a[256], b[256];

	if (target >= fn->start && target < fn->end)
		return true;
	r = jitmap__lookup(c->jit, target);
	if (!r)
		return false;
	if (strncmp(r->name, "global::", 8) == 0 && strncmp(fn->name, "global::", 8) == 0)
		return stub_jumps_to(c, target, r, fn);
	jitmap__frame_name(r, a, sizeof(a));
	jitmap__frame_name(fn, b, sizeof(b));
	return strcmp(a, b) == 0;
}

bool callsite__returns_from(struct callsite *c, const struct jitmap *jit, uint64_t ra,
			    const struct jit_range *callee)
{
	uint64_t target;

	c->jit = jit;
	target = callee ? call_target(c, ra) : 0;
	return target && calls_into(c, target, callee);
}

/* How far a scan of a function's code can tell whether it reaches the leaf. */
enum reach { REACH_NO = 0, REACH_YES, REACH_UNSURE };

bool callsite__export_call(const struct jit_range *leaf)
{
	return strstr(leaf->name, "call_nif") || strstr(leaf->name, "call_bif") ||
	       strstr(leaf->name, "dispatch");
}

/* A jump to code that passes control on to an Erlang function chosen at run time: a fun, an
 * apply, a BIF or NIF dispatch. */
static bool dynamic_fragment(const struct jit_range *r)
{
	return strncmp(r->name, "global::", 8) == 0 &&
	       (strstr(r->name, "apply") || strstr(r->name, "call_fun") ||
		callsite__export_call(r));
}

/* An indirect jump at code[i]: `jmp [mem]` (ff /4, with an optional REX prefix before it), as a
 * tail call to another module is emitted (through its export entry, chosen at run time). */
static bool indirect_jump(const uint8_t *code, size_t i, size_t n)
{
	uint8_t modrm;

	if (code[i] != 0xff || i + 1 >= n)
		return false;
	modrm = code[i + 1];
	return (modrm & 0x38) == 0x20 && (modrm >> 6) != 3;
}

/* Scan code [start, start + n) for a call or jump to leaf, directly, through a veneer or through
 * the address table. Tail calls (a jmp to another Erlang function's start or into its prologue,
 * where its entry label is) are collected in tails; a jump whose target is chosen at run time
 * (another module's export, a fun, an apply) makes the answer unsure unless the leaf is found. */
static enum reach code_calls(struct callsite *c, const uint8_t *code, size_t n, uint64_t start,
			     const struct jit_range *leaf, uint64_t *tails, size_t *ntails)
{
	enum reach out = REACH_NO;

	for (size_t i = 0; i + 5 <= n; i++) {
		const struct jit_range *r;
		int32_t rel;
		uint64_t to;

		if (indirect_jump(code, i, n))
			out = REACH_UNSURE;
		if (code[i] == 0xff && code[i + 1] == 0x15 && i + 6 <= n) {
			/* call [rip+disp32]: OTP 25's calls through the module's address table. */
			memcpy(&rel, code + i + 2, sizeof(rel));
			if (mem__read_u64(c->mem, start + i + 6 + (uint64_t)(int64_t)rel, &to) ==
				0 &&
			    calls_into(c, follow_veneer(c, to), leaf))
				return REACH_YES;
			continue;
		}
		/* call or jmp rel32: a NIF's stub jumps to global::call_nif_shared. */
		if (code[i] != 0xe8 && code[i] != 0xe9)
			continue;
		memcpy(&rel, code + i + 1, sizeof(rel));
		to = follow_veneer(c, start + i + 5 + (uint64_t)(int64_t)rel);
		/* Into the leaf: its body, or (OTP 26+) its prologue range, where its entry label
		 * is: a frameless function that tail-calls the leaf function (a binary
		 * comprehension's generated '-f/2-lbc$^0/2-0-'/3, which appends in C) leaves its
		 * caller's return address on top. */
		if (calls_into(c, to, leaf))
			return REACH_YES;
		if (code[i] != 0xe9 || (to >= start && to < start + n) ||
		    !(r = jitmap__lookup(c->jit, to)))
			continue;
		if (dynamic_fragment(r))
			out = REACH_UNSURE;
		else if (strncmp(r->name, "global::", 8) != 0 &&
			 (r->start == to || strstr(r->name, "Prologue"))) {
			if (*ntails < FN_TAILS)
				tails[(*ntails)++] = to;
			else
				out = REACH_UNSURE;
		}
	}
	return out;
}

/* Does the function containing target call (or jump to) the fragment leaf anywhere in its code,
 * directly or through a veneer, or tail-call (depth levels deep) a function that does? Frameless
 * functions leave no return address: `unit/2` tail-calling `map_updates/3`, which calls the
 * fragment, puts unit/2's caller on top. Unsure when a tail call goes where no scan can follow,
 * or deeper than depth. Scanned once per (function, fragment), cached. */
static enum reach function_calls(struct callsite *c, uint64_t target, const struct jit_range *leaf,
				 int depth)
{
	const struct jit_range *fn = jitmap__lookup(c->jit, target), *body;
	struct fn_calls *slot;
	uint64_t start, end, tails[FN_TAILS];
	size_t n, ntails = 0;
	uint8_t *code;
	enum reach reach = REACH_UNSURE, sub;

	if (!fn || strncmp(fn->name, "global::", 8) == 0)
		return fn && dynamic_fragment(fn) ? REACH_UNSURE : REACH_NO;
	/* A call enters a function in its prologue, a range of its own that the body follows; a
	 * NIF's prologue is patched to jump to global::call_nif_shared. Scan both. */
	start = fn->start;
	end = fn->end;
	if ((body = jitmap__prologue_body(c->jit, fn)))
		end = body->end;
	slot = &c->fn_calls[((start ^ leaf->start) >> 3) % FN_CALL_SLOTS];
	if (slot->fn == start && slot->leaf == leaf->start)
		return slot->reach;
	n = end - start;
	if (n < 5 || n > FN_SCAN_MAX || !(code = malloc(n)))
		return REACH_UNSURE;
	if (mem__read(c->mem, start, code, n) == 0)
		reach = code_calls(c, code, n, start, leaf, tails, &ntails);
	free(code);
	for (size_t i = 0; reach != REACH_YES && i < ntails; i++) {
		sub = depth > 0 ? function_calls(c, tails[i], leaf, depth - 1) : REACH_UNSURE;
		if (sub != REACH_NO)
			reach = sub;
	}
	/* Written last: the tail calls' own lookups may have used this slot. */
	*slot = (struct fn_calls){.fn = start, .leaf = leaf->start, .reach = reach};
	return reach;
}

/* A sample in native code whose Erlang stack was read live: does that stack still hold the
 * sampled call? Its innermost return address must follow a call to the sampled JIT code (the
 * leaf). A return address after anything but a direct call cannot be checked. */
enum call_check callsite__check(struct callsite *c, const struct jitmap *jit,
				const struct jit_range *leaf, uint64_t ra)
{
	uint64_t target;

	c->jit = jit;
	target = call_target(c, ra);
	if (!leaf || !target)
		return CALL_UNKNOWN;
	if (calls_into(c, target, leaf))
		return CALL_AGREES;
	/* The call on top may be to a frameless function that reached the leaf by tail calls (it
	 * left no return address of its own): follow them, as far as they can be followed. */
	switch (function_calls(c, target, leaf, FN_TAIL_DEPTH)) {
	case REACH_YES:
		return CALL_AGREES;
	case REACH_UNSURE:
		return CALL_UNKNOWN;
	default:
		break;
	}
	/* NIFs and BIFs called through an export entry are entered through an address held in
	 * data (a NIF's patched prologue), which no scan of the caller's code finds; an exception
	 * is raised by a jump, from wherever the process was. */
	if (callsite__export_call(leaf) || strstr(leaf->name, "raise") ||
	    strstr(leaf->name, "error"))
		return CALL_UNKNOWN;
	return CALL_DISAGREES;
}
