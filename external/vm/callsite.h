/* Does the Erlang stack of a sample taken in native code, read after the sample, still hold the
 * sampled call? The innermost return address on it must follow a call to the JIT code the
 * native frames return to (the leaf): directly, through an OTP 26+ veneer, or to a frameless
 * function whose code calls the leaf. When it does not, the process had moved on by the time
 * its stack was read. A return address after anything but a direct call cannot be checked.
 * Code does not change under a return address, so decoded calls are cached (reset them when the
 * JIT map is re-read: purged code's addresses may be reused). Does not own: reading the stack. */
#ifndef XP_CALLSITE_H
#define XP_CALLSITE_H

#include <stdbool.h>
#include <stdint.h>

#include "jitmap.h"
#include "mem.h"

enum call_check { CALL_UNKNOWN = 0, CALL_AGREES, CALL_DISAGREES };

struct callsite;

int callsite__new(struct callsite **out, struct mem *mem);
enum call_check callsite__check(struct callsite *c, const struct jitmap *jit,
				const struct jit_range *leaf, uint64_t ra);
/* Does the call just before return address ra enter callee (its range, prologue, or through a
 * veneer)? For return addresses that are not aligned CPs: a shared fragment's callers. */
bool callsite__returns_from(struct callsite *c, const struct jitmap *jit, uint64_t ra,
			    const struct jit_range *callee);
/* Is leaf the JIT code that enters BIFs and NIFs through an export entry (call_bif, call_nif,
 * dispatch): calls that no scan of the caller's code can confirm. */
bool callsite__export_call(const struct jit_range *leaf);
/* When pc is a veneer in a module's header or footer code (OTP 26+: a single jmp to a shared
 * fragment), the address it jumps to; else 0. A sample there is entering that fragment. */
uint64_t callsite__veneer_target(struct callsite *c, const struct jitmap *jit, uint64_t pc);
void callsite__reset(struct callsite *c);
void callsite__free(struct callsite *c);

#endif /* XP_CALLSITE_H */
