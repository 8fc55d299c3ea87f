#!/bin/bash
# The layering rule of the C sources (docs/how-it-works.md, "Architecture"), checked on the quoted #includes:
#  1. every include of a file in a layer names a header of its own layer or of a layer below it;
#  2. the folders draw no cycle: neither the layers nor any two folders (a layer's subfolders,
#     cmd's rooms, c_src/calib, included);
#  3. no circle of files in external/src/cmd: x.h belongs to x.c (a header with no .c of its name
#     is a node of its own), and no file may reach its own header again through includes.
# Run by ctest as lint.layers (part of `make test`); lint.layers.selftest injects a violation of
# each rule into a copy of the tree and expects this script to fail on it.
#   tools/check-layers.sh [REPO]       exit 0 when clean, 1 with one line per violation
#   tools/check-layers.sh --self-test  the injections
# Layers, highest first; a folder may include the folders on its right in ALLOWED:
#   cmd -> report -> sample -> attach -> native -> kernel -> vm -> abi; inject (libei) only from cmd;
#   the NIF (c_src) -> vm -> abi.
set -u

if [ "${1:-}" = --self-test ]; then
	self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
	src=$(cd "$(dirname "$0")/.." && pwd)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	bad=0
	# inject NAME FILE LINE PATTERN: FILE gets LINE; the check must fail and say PATTERN.
	inject() {
		rm -rf "$tmp/t" && mkdir -p "$tmp/t"
		(cd "$src" && find c_src external -name '*.[ch]' -print0 | tar --null -T - -cf -) |
			tar -xf - -C "$tmp/t"
		[ -n "$2" ] && printf '%s\n' "$3" >>"$tmp/t/$2"
		out=$("$self" "$tmp/t" 2>&1)
		rc=$?
		if [ -z "$2" ] && [ "$rc" = 0 ]; then
			echo "PASS: $1: exit 0"
		elif [ -n "$2" ] && [ "$rc" = 1 ] && grep -q -- "$4" <<<"$out"; then
			echo "PASS: $1: exit 1, $(grep -m1 -- "$4" <<<"$out" | sed 's/^ *//')"
		else
			if [ -n "$2" ]; then want="1 and \"$4\""; else want=0; fi
			echo "FAIL: $1: exit $rc, expected $want:"
			printf '%s\n' "$out" | sed 's/^/  /'
			bad=1
		fi
	}
	inject "the tree as it is" "" "" ""
	inject "a printer reaching back into its reader" external/src/cmd/heap/heap.c \
		'#include "heap_print.h"' "circle of files in cmd.*heap_print.c"
	inject "the option parser calling a command" external/src/cmd/cli/cli.c \
		'#include "heap.h"' "the folders have a cycle"
	inject "reading the VM's image calling the calibration" c_src/self/selfelf.c \
		'#include "agent.h"' "the folders have a cycle"
	inject "a layer including upwards" external/src/sample/sampler.c \
		'#include "report/report.h"' "(sample -> report)"
	exit "$bad"
fi

repo=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$repo" || exit 2

declare -A DIR=(
	[abi]=c_src/include [nif]=c_src [vm]=external/vm [native]=external/src/native
	[kernel]=external/src/kernel [inject]=external/src/inject [attach]=external/src/attach
	[sample]=external/src/sample [report]=external/src/report [cmd]=external/src/cmd)
declare -A ALLOWED=(
	[abi]="" [vm]="abi" [native]="kernel vm abi" [kernel]="vm abi" [inject]=""
	[attach]="native kernel vm abi" [sample]="attach native kernel vm abi"
	[report]="sample attach native kernel vm abi"
	[cmd]="report sample attach native kernel inject vm abi" [nif]="vm abi")
LAYERS="abi vm native kernel inject attach sample report cmd nif"

# A layer's files: its folder and its subfolders (cmd's rooms, c_src/calib), less a layer nested
# in it (c_src/include).
layer_files() { # LAYER GLOB
	local nested=/nonexistent
	[ "$1" = nif ] && nested=${DIR[abi]}
	find "${DIR[$1]}" -path "$nested" -prune -o -type f -name "$2" -print | sort
}

# Where a header is, by basename: HPATH for the layers of external/ and the ABI (headers are
# named after their object, so unique there); LOCAL for a header of the same layer (c_src's own
# headers share names with the sampler's: agent.h, info.h).
declare -A HPATH=() LOCAL=() LAYER_OF=()
fail=0
for l in $LAYERS; do
	for h in $(layer_files "$l" '*.h'); do
		b=${h##*/}
		LOCAL[$l/$b]=$h
		LAYER_OF[$h]=$l
		[ "$l" = nif ] && continue
		if [ -n "${HPATH[$b]:-}" ]; then
			echo "check-layers: $b is in both ${HPATH[$b]} and $h: a header name must be unique"
			fail=1
		fi
		HPATH[$b]=$h
		# Every layer's folder is on the include path: a header named like a system header
		# would shadow it (<sched.h> for pthread.h) in every file that sees the layer.
		if [ -e "/usr/include/$b" ]; then
			echo "check-layers: $h shadows the system header <$b>: rename it"
			fail=1
		fi
	done
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The node of a file of cmd in the file graph (in NODE): x.h is x.c's when there is one.
file_node() {
	NODE=$1
	if [[ $1 == *.h ]] && [ -e "${1%.h}.c" ]; then NODE=${1%.h}.c; fi
}
# FILE<TAB>INCLUDE for every quoted #include of the files named on stdin (one awk for them all: a
# sed per file made the check take 7 s).
# shellcheck disable=SC2016 # an awk program, not a shell expansion
quoted_includes() {
	xargs -r awk '/^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*"/ {
		s = $0; sub(/^[^"]*"/, "", s); sub(/".*$/, "", s); print FILENAME "\t" s }'
}
for l in $LAYERS; do
	while IFS=$'\t' read -r f inc; do
		d=${f%/*}
		b=${inc##*/}
		if [ -e "$d/$inc" ]; then
			to=$d/$inc
		elif [ -e "external/src/$inc" ]; then
			to=external/src/$inc
		elif [ -n "${LOCAL[$l/$b]:-}" ]; then
			to=${LOCAL[$l/$b]}
		elif [ -n "${HPATH[$b]:-}" ]; then
			to=${HPATH[$b]}
		else
			continue # generated (*.skel.h), a test's, or a system header
		fi
		tl=${LAYER_OF[$to]:-?}
		[ "$d" != "${to%/*}" ] && echo "$d ${to%/*}" >>"$tmp/folders"
		if [ "$l" = cmd ] && [ "$tl" = cmd ]; then
			file_node "$f"
			from=$NODE
			file_node "$to"
			echo "$from $NODE" >>"$tmp/files"
		fi
		[ "$tl" = "$l" ] && continue
		echo "$l $tl" >>"$tmp/layers"
		case " ${ALLOWED[$l]} " in
		*" $tl "*) ;;
		*)
			echo "check-layers: $f includes \"$inc\" ($l -> $tl): $l may include only: ${ALLOWED[$l]:-nothing}"
			fail=1
			;;
		esac
	done < <(layer_files "$l" '*.[ch]' | quoted_includes)
done

# Files left flat in external/src belong to no layer yet.
for f in external/src/*.[ch]; do
	[ -e "$f" ] && echo "check-layers: warning: $f is in no layer (move it into a folder of external/src)"
done

# GRAPH FILE WHAT: a cycle in the edges of FILE (tsort names the nodes of one).
acyclic() {
	touch "$2"
	local loop
	if ! sort -u "$2" | grep -v '^\(\S*\) \1$' | tsort >/dev/null 2>&1; then
		loop=$(sort -u "$2" | grep -v '^\(\S*\) \1$' | tsort 2>&1 >/dev/null |
			sed -n 's/^tsort: \([^:]*\)$/\1/p' | tr '\n' ' ')
		echo "check-layers: $3: ${loop% }"
		fail=1
	fi
}
acyclic layers "$tmp/layers" "the layers have a cycle"
acyclic folders "$tmp/folders" "the folders have a cycle"
acyclic files "$tmp/files" "a circle of files in cmd (x.h counts as x.c)"
if [ "$fail" = 0 ]; then
	echo "check-layers: $(sort -u "$tmp/layers" | wc -l) layer edges, all downward;" \
		"$(sort -u "$tmp/folders" | wc -l) folder edges and" \
		"$(sort -u "$tmp/files" | grep -vc '^\(\S*\) \1$') file edges in cmd, no cycle"
fi
exit "$fail"
