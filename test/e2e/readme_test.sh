#!/usr/bin/env bash
# ctest e2e.readme.OTP.MODE: every command example of README.md, run as written on a live VM of OTP
# 25|27|29 (xp_blame's GC, copy and arithmetic processes), with or without the agent. The
# examples are read from README.md itself: the "Using it" block (`extrospect CMD ... PID`) and
# every `$ extrospect ...` line; a pid in them becomes the VM's, `-d N` becomes `-d 1` (and `top`,
# `record`, `blame`, `sched` get one when they have none), output files go to the VM's work dir,
# `[a] [b]` alternatives run once bare and once with each. Each must exit as the README says: 0,
# or the code its `# exit N` comment names, or 2 where the README's blame table says OTP 28+
# refuses a runtime name. Not run, with the reason printed: `inject` (needs a distributed node:
# inject_test.sh), `--perf-data` and `perf` lines (need perf's own recording: perfmap_test.sh),
# `watch` (needs its xp_watch target and spies: watch_test.sh).
# A README example that stops working fails here. Exit 0 pass, 1 fail, 77 skip.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

usage="usage: readme_test.sh 25|27|29 agent|noagent"
otp=${1:?$usage}
mode=${2:?$usage}
readme=$XP_REPO/README.md

xp_require_sampler
[[ -f "$readme" ]] || xp_skip "no README.md at $readme"

# The examples, one per line, as written (comments and the leading `$ ` stripped).
examples() {
	awk '
		/^```/ { block = !block; next }
		!block { next }
		/^\$ extrospect / { sub(/^\$ /, ""); print; next }
		/^extrospect [a-z-]+ / && / PID/ { print }
	' "$readme" | sed 's/[[:space:]]*#.*$//' | sort -u
}

# The exit status the README documents for an example line (its `# exit N` comment), else 0.
documented_exit() {
	local line
	line=$(grep -F -- "$1" "$readme" | grep -o '# exit [0-9]*' | head -n 1 || true)
	echo "${line:-# exit 0}" | awk '{ print $3 }'
}

# Expands `[--all] [--json]` into the bare command and one per alternative.
variants() {
	local cmd=$1 opts
	opts=$(grep -o '\[[^]]*\]' <<<"$cmd" | tr -d '[]' || true)
	# shellcheck disable=SC2001 # a regular expression, not a glob
	sed 's/ *\[[^]]*\]//g' <<<"$cmd"
	for o in $opts; do sed "s/ *\[[^]]*\]//g; s/^extrospect \([a-z-]*\) /extrospect \1 $o /" <<<"$cmd"; done
}

# Makes an example runnable here: the VM's pid, short durations, outputs in the work dir.
adapt() {
	local cmd=$1 sub
	sub=$(awk '{ print $2 }' <<<"$cmd")
	cmd=$(sed -E "s/\bPID\b/$XP_VM_PID/; s/ [0-9]{3,7}( |$)/ $XP_VM_PID\1/; s/-d [0-9]+/-d 1/" <<<"$cmd")
	cmd=$(sed -E "s# -o ([^ /]+)# -o $XP_VM_DIR/\1#g" <<<"$cmd")
	case $sub in
	top | record | blame | sched) [[ "$cmd" == *" -d "* ]] || cmd=${cmd/extrospect $sub /extrospect $sub -d 1 } ;;
	esac
	echo "$cmd"
}

# Blame names the README's table says OTP 28+ refuses (beam.smp names no internal function).
refused_on_28() {
	[[ "$otp" -ge 28 && "$1" == *" blame "* ]] &&
		grep -Eq ' (copy|copy_struct|size_object|send|cmp|erts_garbage_collect[a-z_]*)( |$)' <<<"$1"
}

xp_start_vm "$otp" "$mode" xp_blame
n=0
while IFS= read -r example; do
	case $example in
	*" inject "* | *--perf-data* | *" watch "*)
		echo "NOT RUN: $example (covered by inject_test.sh / perfmap_test.sh / watch_test.sh)"
		continue
		;;
	esac
	while IFS= read -r v; do
		cmd=$(adapt "$v")
		want=$(documented_exit "$example")
		refused_on_28 "$cmd" && want=2
		rc=0
		read -r -a argv <<<"${cmd#extrospect }"
		xp_sampler "${argv[@]}" >"$XP_VM_DIR/example.out" 2>"$XP_VM_DIR/example.err" </dev/null || rc=$?
		n=$((n + 1))
		if [[ "$rc" == "$want" ]]; then
			xp_pass "README example '$v' -> exit $rc"
		else
			xp_fail "README example '$v' (run as '$cmd'): expected exit $want, got $rc"
			tail -n 5 "$XP_VM_DIR/example.err" | sed 's/^/    | /'
		fi
	done < <(variants "$example")
done < <(examples)
((n >= 15)) || xp_fail "only $n README examples found (the parser or the README changed)"
xp_summary
