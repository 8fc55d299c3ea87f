#!/usr/bin/env bash
# After a failed `make test`: the end of each failed test's output again, so that a log cut in
# its middle (CI keeps the first and last part) still shows why. ctest's own record of the run,
# Testing/Temporary/LastTest.log, is the source. Usage: ctest-recap.sh BUILD_DIR [LINES]
set -uo pipefail

build=${1:?usage: ctest-recap.sh BUILD_DIR [LINES]}
lines=${2:-40}
tmp=$build/Testing/Temporary
[[ -f $tmp/LastTestsFailed.log && -f $tmp/LastTest.log ]] || exit 0
while IFS=: read -r _ name; do
	[[ -n $name ]] || continue
	echo "==== recap of failed test $name (its last $lines lines of output) ===="
	awk -v want="$name" '
		$0 ~ /^[0-9]+\/[0-9]+ Test: / { sub(/^[0-9]+\/[0-9]+ Test: /, ""); cur = $0; next }
		cur == want && /^Output:/ { on = 1; getline; next }
		on && /^<end of output>/ { on = 0; cur = ""; next }
		on { print }
	' "$tmp/LastTest.log" | sed 's/\x1b\[[0-9;]*m//g' | tail -n "$lines"
done <"$tmp/LastTestsFailed.log"
