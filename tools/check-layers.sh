#!/bin/bash
# The layering rule of the C sources (README, "Architecture"): every quoted #include of a file in
# a layer must name a header of its own folder or of a folder below it, and the folder graph the
# includes draw must have no cycle. Run by ctest as lint.layers (part of `make test`).
#   tools/check-layers.sh [REPO]     exit 0 when clean, 1 with one line per violation
# Layers, highest first; a folder may include the folders on its right in ALLOWED:
#   cmd -> report -> sample -> attach -> native -> kernel -> vm -> abi; inject (libei) only from cmd;
#   the NIF (c_src) -> vm -> abi.
set -u
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

# Which layer holds a header, by basename (headers are named after their object, so unique).
declare -A OWNER=() LOCAL=()
for l in $LAYERS; do
	for h in $(layer_files "$l" '*.h'); do
		LOCAL[$l/$(basename "$h")]=1
		b=$(basename "$h")
		[ "$l" = nif ] && continue # c_src's own headers are found next to their includer
		if [ -n "${OWNER[$b]:-}" ]; then
			echo "check-layers: $b is in both ${OWNER[$b]} and $l: a header name must be unique"
			fail=1
		fi
		OWNER[$b]=$l
		# Every layer's folder is on the include path: a header named like a system header
		# would shadow it (<sched.h> for pthread.h) in every file that sees the layer.
		if [ -e "/usr/include/$b" ]; then
			echo "check-layers: $h shadows the system header <$b>: rename it"
			fail=1
		fi
	done
done

fail=${fail:-0}
edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
for l in $LAYERS; do
	for f in $(layer_files "$l" '*.[ch]'); do
		while IFS= read -r inc; do
			if [ -e "$(dirname "$f")/$inc" ] || [ -n "${LOCAL[$l/$inc]:-}" ]; then
				to=$l
			elif [ -e "external/src/$inc" ]; then
				to=${inc%%/*}
			elif [ -n "${OWNER[$(basename "$inc")]:-}" ]; then
				to=${OWNER[$(basename "$inc")]}
			elif [[ $inc == *.skel.h ]]; then
				continue # generated at build time (cmake/BpfSkeleton.cmake)
			else
				continue # a test or system header outside the layers
			fi
			[ "$to" = "$l" ] && continue
			echo "$l $to" >>"$edges"
			case " ${ALLOWED[$l]} " in
			*" $to "*) ;;
			*)
				echo "check-layers: $f includes \"$inc\" ($l -> $to): $l may include only: ${ALLOWED[$l]:-nothing}"
				fail=1
				;;
			esac
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
	done
done

# Files left flat in external/src belong to no layer yet.
for f in external/src/*.[ch]; do
	[ -e "$f" ] && echo "check-layers: warning: $f is in no layer (move it into a folder of external/src)"
done

if ! sort -u "$edges" | tsort >/dev/null 2>&1; then
	echo "check-layers: the folder graph has a cycle:"
	sort -u "$edges" | tsort 2>&1 >/dev/null | sed 's/^/  /'
	fail=1
fi
if [ "$fail" = 0 ]; then
	echo "check-layers: $(sort -u "$edges" | wc -l) folder edges, all downward, no cycle"
fi
exit "$fail"
