#!/usr/bin/env bash
# ctest e2e.speedscope: extrospect's speedscope file, collapsed stacks, SVG flame graph and trace
# event timeline (profile.trace.json, kept current by test/c/test_trace.c) opened in a real
# headless Chromium. The speedscope web app (npm "speedscope") must import them and show
# our profiles, frame names and weights without an error; the SVG's script must hover, zoom, reset
# and search. Inputs are the checked-in test/e2e/speedscope/profile.* that test/c/test_report.c
# keeps equal to the code's output. npm packages are installed once into
# test/e2e/speedscope/node_modules (git-ignored). Screenshots go to test/e2e/.work/speedscope/.
# Exit 0 pass, 1 fail, 77 skip (reason printed): no node >= 18, npm, Chromium or npm registry.
set -euo pipefail

XP_REPO=${XP_REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
dir=$XP_REPO/test/e2e/speedscope
out=${XP_E2E_WORK:-$XP_REPO/test/e2e/.work}/speedscope
export XP_CHROMIUM=${XP_CHROMIUM:-/usr/bin/chromium}

skip() {
	echo "SKIP: $*"
	exit 77
}

command -v node >/dev/null || skip "no node (apt-get install nodejs)"
command -v npm >/dev/null || skip "no npm (apt-get install npm)"
major=$(node -p 'process.versions.node.split(".")[0]')
((major >= 18)) || skip "node $(node --version) is older than 18 (playwright-core needs 18+)"
[[ -x "$XP_CHROMIUM" ]] || skip "no Chromium at $XP_CHROMIUM (apt-get install chromium, or set XP_CHROMIUM)"

# npm ci when node_modules is missing or older than the lock file.
if [[ ! -f "$dir/node_modules/.package-lock.json" ||
	"$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]]; then
	echo "installing npm packages into $dir/node_modules"
	if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >"$dir/npm-ci.log" 2>&1); then
		tail -n 20 "$dir/npm-ci.log"
		skip "npm ci failed in $dir (registry unreachable?), see above"
	fi
	rm -f "$dir/npm-ci.log"
fi

mkdir -p "$out"
rc=0
(cd "$dir" && node check.js "$dir/profile.speedscope.json" "$dir/profile.svg" \
	"$dir/profile.collapsed.txt" "$out" "$dir/profile.trace.json") || rc=$?
exit "$rc"
