#!/usr/bin/env bash
# Provisions the OTP chroots the end-to-end tests run newer OTP releases in: OTP 27 (Debian trixie)
# and the newest OTP (Debian sid), by debootstrap, in parallel, into a cache outside the repo.
# A chroot is complete when its stamp file exists and its `erl` runs; a failure leaves DIR.failed
# with the reason, which test/e2e/lib.sh turns into a SKIP (exit 77) of the tests that need it.
# Does not own: starting VMs in the chroots (lib.sh). Usage: provision.sh [SUITE...]
set -euo pipefail

cache=${XP_OTP_CACHE:-/var/cache/extrospect}
mirror=${XP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suites=("$@")
[[ ${#suites[@]} -gt 0 ]] || suites=(trixie sid)

loud() {
	{
		echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
		echo "!! provision: $1"
		echo "!! end-to-end tests that need it will SKIP (exit 77) with this reason"
		echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
	} >&2
}

# Runs a trivial VM inside the chroot; also requires the compiler the tests use.
chroot_works() {
	[[ -x "$1/usr/bin/erl" && -x "$1/usr/bin/erlc" ]] &&
		chroot "$1" erl -noshell -eval 'halt().' </dev/null >/dev/null 2>&1
}

# Prints the stamp: what is inside, so lib.sh can match the OTP release without starting a VM.
describe() {
	local suite=$1 dir=$2
	echo "suite=$suite"
	echo "provisioned=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
	chroot "$dir" erl -noshell -eval \
		'io:format("otp_release=~s~nerts_version=~s~n", [erlang:system_info(otp_release), erlang:system_info(version)]), halt().' \
		</dev/null
}

# Removes a chroot tree, never following a mount point out of it.
remove_tree() {
	if mountpoint -q "$1/proc"; then umount "$1/proc"; fi
	rm -rf --one-file-system "$1"
}

fail() {
	local dir=$1 reason=$2
	echo "$reason" >"$dir.failed" 2>/dev/null || true
	loud "$(basename "$dir"): $reason"
	return 1
}

provision_one() {
	local suite=$1 dir=$cache/otp-$1
	local stamp=$dir.stamp new=$dir.new log=$dir.log

	if [[ -d "$dir" ]] && chroot_works "$dir"; then
		# A chroot made before stamps existed is adopted once it proves it runs.
		[[ -f "$stamp" ]] || describe "$suite" "$dir" >"$stamp"
		rm -f "$dir.failed"
		echo "provision: otp-$suite ready ($(grep -h '^otp_release=' "$stamp"))"
		return 0
	fi
	rm -f "$stamp"
	echo "provision: otp-$suite missing or broken; debootstrap $suite (log: $log)"
	if [[ -d "$new" ]]; then remove_tree "$new"; fi
	if ! debootstrap --variant=minbase --include=erlang-base "$suite" "$new" "$mirror" \
		>"$log" 2>&1; then
		remove_tree "$new"
		fail "$dir" "debootstrap $suite failed: $(tail -n 1 "$log") (full log: $log)"
		return 1
	fi
	if ! chroot_works "$new"; then
		fail "$dir" "debootstrap $suite succeeded but erl/erlc do not run in $new (left for inspection)"
		return 1
	fi
	if [[ -d "$dir" ]]; then remove_tree "$dir"; fi
	mv "$new" "$dir"
	describe "$suite" "$dir" >"$stamp"
	rm -f "$dir.failed"
	echo "provision: otp-$suite ready ($(grep -h '^otp_release=' "$stamp"))"
}

main() {
	local s rc=0 pids=()

	if [[ $(id -u) -ne 0 ]]; then
		loud "must run as root (debootstrap, chroot)"
		return 1
	fi
	mkdir -p "$cache"
	if ! command -v debootstrap >/dev/null; then
		loud "debootstrap not installed (tools/install-deps.sh); only existing chroots are usable"
	fi
	exec 9>"$cache/.provision.lock"
	flock 9
	for s in "${suites[@]}"; do
		provision_one "$s" &
		pids+=($!)
	done
	for s in "${pids[@]}"; do
		wait "$s" || rc=1
	done
	return "$rc"
}

main
