#!/usr/bin/env bash
# ctest e2e.asan.build: builds the sampler with AddressSanitizer and UndefinedBehaviorSanitizer
# (XP_SANITIZE) into BUILD_DIR, for the e2e.asan.* tests that rerun end-to-end cases with it.
# Exit 0 built, 1 failed, 77 skipped (no compiler support; reason printed).
set -euo pipefail
repo=${XP_REPO:?XP_REPO not set}
dir=${1:?usage: asan_build.sh BUILD_DIR}
echo 'int main(void) { return 0; }' >"${TMPDIR:-/tmp}/xp-asan-probe.c"
if ! cc -fsanitize=address,undefined -o "${TMPDIR:-/tmp}/xp-asan-probe" \
	"${TMPDIR:-/tmp}/xp-asan-probe.c" 2>/dev/null; then
	echo "SKIP: the C compiler cannot build with -fsanitize=address,undefined" >&2
	exit 77
fi
cmake -S "$repo" -B "$dir" -DXP_SANITIZE=ON -DXP_BUILD_NIF=OFF -DXP_BUILD_TESTS=OFF \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$dir" --target extrospect -j"$(nproc)"
"$dir/extrospect" --version
