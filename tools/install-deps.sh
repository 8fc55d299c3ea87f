#!/usr/bin/env bash
# Installs the Debian 12 packages needed to build and test extrospect, as root, idempotently.
# Quiet when everything is present; runs `apt-get update` only when something is missing.
# Does not own: the OTP 27/29 chroots used by the end-to-end tests (test/e2e/provision.sh).
set -euo pipefail

packages=(
	build-essential cmake pkg-config clang-format # C toolchain, `make fmt`
	clang bpftool libbpf-dev                      # the in-kernel capture: kcapture.bpf.c, its skeleton
	libclang-rt-dev                               # libFuzzer + sanitizer runtimes: test/fuzz (clang only recommends it)
	libelf-dev libdw-dev elfutils                 # the sampler reads ELF / DWARF CFI
	erlang-base erlang-dev                        # host OTP 25 and erl_nif.h for the agent NIF
	erlang-eunit erlang-common-test erlang-tools  # rebar3 eunit / ct (cover lives in tools)
	erlang-syntax-tools erlang-parsetools erlang-reltool rebar3
	elixir                                        # e2e.elixir: a mix release with the agent (Elixir 1.14 on OTP 25)
	debootstrap                                   # OTP 27 / 29 chroots for the e2e tests
	jq procps util-linux                          # e2e assertions, pgrep, setpriv / runuser / unshare
	libcap2-bin passwd                            # e2e.privilege: setcap, useradd
	linux-perf strace tmux                        # cross-checking samples by hand; tmux: e2e.top (top_tty_test.sh)
	shellcheck                                    # `make fmt-check` lints the test scripts
	chromium libxml2-utils                        # flame graph outputs checked in a browser
	libprotobuf-c-dev protobuf-c-compiler zlib1g-dev # pprof output: profile.proto, gzip
	golang-go python3                             # e2e.pprof reads it with go tool pprof; e2e.every's receiver
)
# speedscope is checked with node; a node already on PATH (e.g. /usr/local) is used as it is.
command -v node >/dev/null || packages+=(nodejs npm)

installed() {
	[[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" == "install ok installed" ]]
}

missing=()
for p in "${packages[@]}"; do
	installed "$p" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
	echo "install-deps: missing packages: ${missing[*]}; run this script as root" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
