#!/usr/bin/env bash
# ctest e2e.package: installing extrospect (OTP-independent but for the smoke profile, on OTP 25).
#   - `cmake --install` into a staging root puts bin/extrospect, the man page and the bash
#     completion in place; the man page carries every line of `--help` and of `record --help`
#     (it is generated from them); the completion completes commands and a command's options
#   - CPack builds a .deb: `dpkg-deb -I` names the package, its version and its dependencies,
#     each of which this Debian release has a candidate for (apt-cache); `dpkg-deb -c` lists the
#     three files
#   - the .deb's contents, unpacked into a temporary root (`dpkg -x`, not installed system-wide
#     on this shared machine), run: `--version` names the version, the git revision and the
#     supported OTP releases, and a 1 s `record` of an OTP 25 VM writes a profile
# Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

xp_require_sampler
build=$(dirname "$XP_SAMPLER")
[[ -f "$build/CPackConfig.cmake" ]] || xp_skip "no CPackConfig.cmake in $build"
for tool in cpack dpkg-deb man apt-cache; do
	command -v $tool >/dev/null || xp_skip "$tool not installed"
done
tmp=$(mktemp -d)
xp_defer "rm -rf $tmp"

# ---- cmake --install ---------------------------------------------------------------------------
DESTDIR=$tmp/stage cmake --install "$build" --prefix /usr >"$tmp/install.log" 2>&1 ||
	xp_die "cmake --install failed: $(tail -n 3 "$tmp/install.log")"
for f in usr/bin/extrospect usr/share/man/man1/extrospect.1.gz \
	usr/share/bash-completion/completions/extrospect; do
	if [[ -s "$tmp/stage/$f" ]]; then xp_pass "installed /$f"; else xp_fail "missing /$f"; fi
done
MANWIDTH=200 man -l "$tmp/stage/usr/share/man/man1/extrospect.1.gz" 2>/dev/null |
	sed 's/^ *//' >"$tmp/man.txt"
for args in "--help" "record --help"; do
	# shellcheck disable=SC2086 # the arguments split on purpose
	missing=$("$XP_SAMPLER" $args | sed 's/^ *//' | grep -v '^$' | grep -vxFf "$tmp/man.txt" | head -n 3 || true)
	if [[ -z "$missing" ]]; then
		xp_pass "the man page carries every line of 'extrospect $args'"
	else
		xp_fail "lines of 'extrospect $args' missing from the man page: $missing"
	fi
done
complete_words() {
	# shellcheck disable=SC1090 # the generated completion
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _extrospect; echo "${COMPREPLY[*]}"' \
		_ "$tmp/stage/usr/share/bash-completion/completions/extrospect" "$@"
}
xp_expect "completion of 'extrospect rec'" record "$(complete_words extrospect rec)"
xp_expect "completion of 'extrospect record --ev'" "--event --every" "$(complete_words extrospect record --ev)"
xp_expect "completion of 'extrospect heap --so'" --sort "$(complete_words extrospect heap --so)"

# ---- the .deb ----------------------------------------------------------------------------------
(cd "$build" && cpack -G DEB -B "$tmp/pkg") >"$tmp/cpack.log" 2>&1 ||
	xp_die "cpack failed: $(tail -n 5 "$tmp/cpack.log")"
deb=$(find "$tmp/pkg" -maxdepth 1 -name 'extrospect_*_amd64.deb' | head -n 1)
[[ -n "$deb" ]] || xp_die "cpack wrote no extrospect_*_amd64.deb"
info=$(dpkg-deb -I "$deb")
xp_expect "package name" extrospect "$(sed -n 's/^ Package: //p' <<<"$info")"
version=$("$XP_SAMPLER" --version | awk 'NR == 1 { print $2 }')
xp_expect "package version = extrospect --version" "$version" "$(sed -n 's/^ Version: //p' <<<"$info")"
deps=$(sed -n 's/^ Depends: //p' <<<"$info")
[[ "$deps" == *libdw1* && "$deps" == *libprotobuf-c1* ]] || xp_fail "Depends lacks libdw1 or libprotobuf-c1: $deps"
mapfile -t names < <(tr ',' '\n' <<<"$deps" | awk '{ print $1 }')
policy=$(apt-cache policy "${names[@]}" 2>/dev/null || true)
have=$(grep -c 'Candidate: [0-9]' <<<"$policy" || true)
xp_expect "dependencies with a candidate in this Debian release (${names[*]})" "${#names[@]}" "$have"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/extrospect ./usr/share/man/man1/extrospect.1.gz \
	./usr/share/bash-completion/completions/extrospect; do
	if grep -q " $f\$" <<<"$contents"; then xp_pass "the .deb holds $f"; else xp_fail "the .deb lacks $f"; fi
done

# ---- the packaged program runs -----------------------------------------------------------------
dpkg -x "$deb" "$tmp/root"
bin=$tmp/root/usr/bin/extrospect
v=$("$bin" --version)
printf '    | %s\n' "$v"
if [[ "$v" =~ ^extrospect\ [0-9.]+\ \(git\ [0-9a-f]{7,}(-dirty)?\) ]]; then
	xp_pass "--version: version and git revision"
else
	xp_fail "--version's first line: $(head -n 1 <<<"$v")"
fi
for otp in 25 27 29; do
	if grep -q "OTP $otp (erts" <<<"$v"; then xp_pass "--version lists OTP $otp"; else xp_fail "--version lacks OTP $otp"; fi
done
xp_start_vm 25 noagent xp_demo
rc=0
"$bin" record -d 1 -o "$XP_VM_DIR/smoke.pb.gz" "$XP_VM_PID" 2>"$XP_VM_DIR/smoke.err" || rc=$?
xp_expect "exit status of the packaged record -d 1" 0 "$rc"
if [[ -s "$XP_VM_DIR/smoke.pb.gz" ]] && gzip -t "$XP_VM_DIR/smoke.pb.gz"; then
	xp_pass "the packaged record wrote a profile"
else
	xp_fail "no profile from the packaged record: $(tail -n 3 "$XP_VM_DIR/smoke.err")"
fi
xp_summary
