#!/usr/bin/env bash
# ctest e2e.readme.OTP.MODE: every command example of README.md and of every docs/*.md, run as
# written on a live VM of OTP 25|27|29 (xp_blame's GC, copy and arithmetic processes), with or
# without the agent. The examples are read from the files themselves, from their code blocks:
# every `$ extrospect ...` line (also `$ VAR=value extrospect ...`), every `extrospect CMD ... PID`
# line (the command lists) and `extrospect --OPTION` lines. A pid in them becomes the VM's, `-d N`
# becomes `-d 0.1` (XP_README_SECONDS; `top`, `record`, `blame`, `sched`, `events` get one when
# they have none: what is checked is the exit status; 70 examples took 62 s at 1 s, 50 s at 0.3 s
# and 43 s at 0.1 s on an idle 2-core machine, 73-87 s at 0.3 s in CI), output files
# go to the VM's work dir, `[a] [b]` alternatives run once bare and once with each. Each must exit
# as its line says: 0, or the code its `# exit N` comment names, or 2 where docs/guide.md's blame
# table says OTP 28+ refuses a runtime name. Not run, each printed with its reason: `inject` (needs
# a distributed node: inject_test.sh), `--perf-data` and `perf` lines (need perf's own recording:
# perfmap_test.sh), `watch` (needs its xp_watch target and spies: watch_test.sh), and command
# lines of a shell recipe (`extrospect ... \`, `... &`, `$(...)`: they need a Pyroscope or Parca
# server, or the shell). A documented example that stops working fails here. Exit 0 pass, 1 fail,
# 77 skip.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

usage="usage: readme_test.sh 25|27|29 agent|noagent"
otp=${1:?$usage}
mode=${2:?$usage}
D=${XP_README_SECONDS:-0.1}

xp_require_sampler
[[ -f "$XP_REPO/README.md" ]] || xp_skip "no README.md at $XP_REPO"
mapfile -t docs < <(
	echo "$XP_REPO/README.md"
	[[ -d "$XP_REPO/docs" ]] && find "$XP_REPO/docs" -name '*.md' | sort
)

# Every command line of the docs' code blocks, once: "FILE<TAB>KIND<TAB>LINE", the leading `$ `
# stripped; KIND is `run`, or `shell` for a line of a shell recipe (not run, said so).
command_lines() {
	awk -v repo="$XP_REPO/" '
		FNR == 1 { block = 0; file = FILENAME; sub(repo, "", file) }
		/^```/ { block = !block; next }
		!block { next }
		/^\$ ([A-Z_]+=[^ ]* )*extrospect / { sub(/^\$ /, ""); print file "\trun\t" $0; next }
		/^extrospect [a-z-]+ / && / PID/ { print file "\trun\t" $0; next }
		/^extrospect --[a-z-]+/ { print file "\trun\t" $0; next }
		/^extrospect [a-z-]+ -/ && !/: / { print file "\tshell\t" $0 }
	' "${docs[@]}" | awk -F '\t' '{ c = $3; sub(/[[:space:]]*#.*$/, "", c) } !seen[c]++'
}

# The exit status a line documents (its `# exit N` comment), else 0.
documented_exit() {
	local n
	n=$(grep -o '# exit [0-9]*' <<<"$1" | head -n 1 | awk '{ print $3 }' || true)
	echo "${n:-0}"
}

# Why an example cannot run on the test VMs, or nothing.
not_run_reason() {
	case $1 in
	*" inject "*) echo "needs a distributed node: inject_test.sh" ;;
	*--perf-data*) echo "needs perf's own recording: perfmap_test.sh" ;;
	*" watch "*) echo "needs its xp_watch target and spies: watch_test.sh" ;;
	*" events "*--source\ uprobes*) [[ "$otp" != 29 ]] ||
		echo "uprobes need beam.smp's symbols, stripped on 29: events_test.sh checks its exit 6" ;;
	*" events "*) [[ "$mode" == agent ]] || echo "needs the agent: events_test.sh checks its exit 6" ;;
	*"\$("*) echo "needs the shell's expansion" ;;
	esac
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
	cmd=$(sed -E "s/\bPID\b/$XP_VM_PID/; s/ [0-9]{3,7}( |$)/ $XP_VM_PID\1/; s/-d [0-9.]+/-d $D/" <<<"$cmd")
	cmd=$(sed -E "s# -o ([^ /]+)# -o $XP_VM_DIR/\1#g" <<<"$cmd")
	case $sub in
	top | record | blame | sched | events) [[ "$cmd" == *" -d "* ]] || cmd=${cmd/extrospect $sub /extrospect $sub -d $D } ;;
	esac
	echo "$cmd"
}

# Blame names docs/guide.md's table says OTP 28+ refuses (beam.smp names no internal function).
refused_on_28() {
	[[ "$otp" -ge 28 && "$1" == *" blame "* ]] &&
		grep -Eq ' (copy|copy_struct|size_object|send|cmp|erts_garbage_collect[a-z_]*)( |$)' <<<"$1"
}

# Runs one variant of an example (`VAR=value` words first become its environment).
run_example() {
	local file=$1 v=$2 want=$3 cmd rc=0 argv envs=()
	cmd=$(adapt "$v")
	read -r -a argv <<<"$cmd"
	while [[ "${argv[0]}" == *=* ]]; do
		envs+=("${argv[0]}")
		argv=("${argv[@]:1}")
	done
	(
		((${#envs[@]} == 0)) || export "${envs[@]}"
		xp_sampler "${argv[@]:1}" >"$XP_VM_DIR/example.out" 2>"$XP_VM_DIR/example.err" </dev/null
	) || rc=$?
	if [[ "$rc" == "$want" ]]; then
		xp_pass "$file example '$v' -> exit $rc"
	else
		xp_fail "$file example '$v' (run as '$cmd'): expected exit $want, got $rc"
		tail -n 5 "$XP_VM_DIR/example.err" | sed 's/^/    | /'
	fi
}

xp_start_vm "$otp" "$mode" xp_blame
n=0
while IFS=$'\t' read -r file kind line; do
	# shellcheck disable=SC2001 # a regular expression, not a glob
	example=$(sed 's/[[:space:]]*#.*$//' <<<"$line")
	why=$(not_run_reason "$example")
	[[ -z "$why" && "$kind" == shell ]] && why="a line of a shell recipe: needs a Pyroscope or Parca server, or the shell"
	if [[ -n "$why" ]]; then
		echo "NOT RUN: $file: $example ($why)"
		continue
	fi
	want=$(documented_exit "$line")
	while IFS= read -r v; do
		w=$want
		refused_on_28 "$v" && w=2
		run_example "$file" "$v" "$w"
		n=$((n + 1))
	done < <(variants "$example")
done < <(command_lines)
((n >= 40)) || xp_fail "only $n documented examples run (the parser or the docs changed)"
xp_summary
