#!/usr/bin/env bash
# ctest erlang.eunit / erlang.ct: `rebar3 eunit` or `rebar3 ct` in the source tree (which also
# builds the NIF through rebar.config's hooks). Skips (77) with the reason when there is nothing
# to run yet; never passes silently. Usage: rebar3_test.sh eunit|ct
set -euo pipefail

cmd=${1:?usage: rebar3_test.sh eunit|ct}
repo=${XP_REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$repo"
skip() {
	echo "SKIP: $*" >&2
	exit 77
}
command -v rebar3 >/dev/null || skip "rebar3 not installed (tools/install-deps.sh)"
[[ -f rebar.config ]] || skip "no rebar.config in $repo yet"
case $cmd in
eunit) ;;
ct) compgen -G "test/*_SUITE.erl" >/dev/null || skip "no Common Test suites (test/*_SUITE.erl)" ;;
*) skip "unknown rebar3 command '$cmd'" ;;
esac
exec rebar3 "$cmd"
