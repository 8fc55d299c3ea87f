#!/usr/bin/env bash
# `make demo`: starts the bundled demo workload (test/targets/xp_demo.erl) on the host OTP with the
# agent, then shows what extrospect sees: `info`, a 5-second `top`, and a flame graph written to
# demo-flamegraph.svg (open it in a browser). Usage: tools/demo.sh [SAMPLER]
set -euo pipefail
cd "$(dirname "$0")/.."
sampler=${1:-build/extrospect}
out=$PWD/demo-flamegraph.svg
# shellcheck disable=SC2016 # expanded by the inner shell, where start_vm.sh exports XP_VM_PID
exec test/e2e/start_vm.sh 25 agent xp_demo -- bash -c '
	set -e
	echo "== extrospect info $XP_VM_PID"
	"$0" info "$XP_VM_PID"
	echo
	echo "== extrospect top -d 5 $XP_VM_PID"
	"$0" top -d 5 -n 10 "$XP_VM_PID"
	echo
	echo "== extrospect record -d 5 -o $1 $XP_VM_PID"
	"$0" record -d 5 -o "$1" "$XP_VM_PID"
	echo "open $1 in a browser: hover for details, click to zoom, Search to highlight"
' "$sampler" "$out"
