#!/usr/bin/env bash
# ctest e2e.readme.OTP.MODE: every command example of README.md and of every docs/*.md, run as
# written on a live VM of OTP 25|27|29 (xp_blame's GC, copy and arithmetic processes), with or
# without the agent. The examples are read from the files themselves, from their code blocks:
# every `$ extrospect ...` line (also `$ VAR=value extrospect ...`), every `extrospect CMD ... PID`
# line (the command lists) and `extrospect --OPTION` lines. A pid in them becomes the VM's, `-d N`
# becomes `-d 0.1` (XP_README_SECONDS; `top`, `record`, `blame`, `sched`, `events` get one when
# they have none: what is checked is the exit status; 70 examples took 62 s at 1 s, 50 s at 0.3 s
# and 43 s at 0.1 s on an idle 2-core machine, 73-87 s at 0.3 s in CI; 18 s at 0.1 s once plan()
# made the examples runnable in one pass, not with a dozen forks each), output files
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

# Every example's plan, in one awk and one sed pass over command_lines (a fork per example took
# 0.4 s beside the busy VM: 28 of a run's 45 s). Per example either "SKIP<TAB>FILE<TAB>EXAMPLE
# <TAB>WHY", or per variant "RUN<TAB>FILE<TAB>EXIT<TAB>VARIANT" followed by "CMD<TAB>COMMAND":
#   - the example is its line without the `#` comment; EXIT is the line's `# exit N`, else 0, or
#     2 where docs/guide.md's blame table says OTP 28+ refuses a runtime name (beam.smp names no
#     internal function);
#   - `[--all] [--json]` gives the bare command and one variant per word in brackets;
#   - COMMAND is the variant made runnable here: the VM's pid for PID or a 3-7 digit pid, `-d N`
#     as `-d $D` (added to top, record, blame, sched and events without one), `-o FILE` in the
#     VM's work dir.
# Not run (SKIP, with why): inject (needs a distributed node: inject_test.sh), --perf-data (needs
# perf's own recording: perfmap_test.sh), watch (its xp_watch target and spies: watch_test.sh),
# events --source uprobes on 29 (beam.smp's symbols stripped: events_test.sh checks its exit 6),
# events without the agent (events_test.sh checks its exit 6), `$(...)`, and lines of a shell
# recipe.
plan() {
	command_lines | awk -F '\t' -v otp="$otp" -v mode="$mode" '
		function why(e) {
			if (e ~ / inject /) return "needs a distributed node: inject_test.sh"
			if (e ~ /--perf-data/) return "needs perf'"'"'s own recording: perfmap_test.sh"
			if (e ~ / watch /) return "needs its xp_watch target and spies: watch_test.sh"
			if (e ~ / events .*--source uprobes/)
				return otp == 29 ? "uprobes need beam.smp'"'"'s symbols, stripped on 29: events_test.sh checks its exit 6" : ""
			if (e ~ / events /)
				return mode == "agent" ? "" : "needs the agent: events_test.sh checks its exit 6"
			if (index(e, "$(")) return "needs the shell'"'"'s expansion"
			return ""
		}
		function refused_on_28(v) {
			return otp >= 28 && v ~ / blame / &&
				v ~ / (copy|copy_struct|size_object|send|cmp|erts_garbage_collect[a-z_]*)( |$)/
		}
		function emit(v, w) {
			print "RUN\t" file "\t" (refused_on_28(v) ? 2 : w) "\t" v
			print "CMD\t" v
		}
		{
			file = $1; example = $3
			sub(/[[:space:]]*#.*$/, "", example)
			w = why(example)
			if (w == "" && $2 == "shell")
				w = "a line of a shell recipe: needs a Pyroscope or Parca server, or the shell"
			if (w != "") { print "SKIP\t" file "\t" example "\t" w; next }
			want = 0
			if (match($3, /# exit [0-9]+/)) want = substr($3, RSTART + 7, RLENGTH - 7)
			bare = example; opts = ""
			gsub(/ *\[[^]]*\]/, "", bare)
			rest = example
			while (match(rest, /\[[^]]*\]/)) {
				opts = opts " " substr(rest, RSTART + 1, RLENGTH - 2)
				rest = substr(rest, RSTART + RLENGTH)
			}
			emit(bare, want)
			n = split(opts, o, " ")
			for (i = 1; i <= n; i++) {
				v = bare
				if (match(v, /^extrospect [a-z-]* /))
					v = substr(v, 1, RLENGTH) o[i] " " substr(v, RLENGTH + 1)
				emit(v, want)
			}
		}' | sed -E "/^CMD\t/{
		s/\bPID\b/$XP_VM_PID/; s/ [0-9]{3,7}( |\$)/ $XP_VM_PID\1/; s/-d [0-9.]+/-d $D/
		s# -o ([^ /]+)# -o $XP_VM_DIR/\1#g
		/ -d /!s/^CMD\textrospect (top|record|blame|sched|events) /CMD\textrospect \1 -d $D /
	}"
}

# Runs one variant of an example (`VAR=value` words first become its environment).
run_example() {
	local file=$1 v=$2 want=$3 cmd=$4 rc=0 argv envs=()
	read -r -a argv <<<"$cmd"
	while [[ "${argv[0]}" == *=* ]]; do
		envs+=("${argv[0]}")
		argv=("${argv[@]:1}")
	done
	if ((${#envs[@]} == 0)); then
		xp_sampler "${argv[@]:1}" >"$XP_VM_DIR/example.out" 2>"$XP_VM_DIR/example.err" </dev/null || rc=$?
	else
		(
			export "${envs[@]}"
			xp_sampler "${argv[@]:1}" >"$XP_VM_DIR/example.out" 2>"$XP_VM_DIR/example.err" </dev/null
		) || rc=$?
	fi
	if [[ "$rc" == "$want" ]]; then
		xp_pass "$file example '$v' -> exit $rc"
	else
		xp_fail "$file example '$v' (run as '$cmd'): expected exit $want, got $rc"
		tail -n 5 "$XP_VM_DIR/example.err" | sed 's/^/    | /'
	fi
}

xp_start_vm "$otp" "$mode" xp_blame
n=0
while IFS=$'\t' read -r what file want v; do
	if [[ "$what" == SKIP ]]; then
		echo "NOT RUN: $file: $want ($v)"
		continue
	fi
	IFS=$'\t' read -r _ cmd
	run_example "$file" "$v" "$want" "$cmd"
	n=$((n + 1))
done < <(plan)
((n >= 40)) || xp_fail "only $n documented examples run (the parser or the docs changed)"
xp_summary
