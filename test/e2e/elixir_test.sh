#!/usr/bin/env bash
# ctest e2e.elixir.OTP: an Elixir release profiled (issue 15 item 3). Builds test/elixir_demo (a
# supervised GenServer, ElixirDemo.Worker, once registered and once not) with Debian's elixir and
# `mix release`, the agent included as a path dependency ({:extrospect, path: ...}: mix builds
# it with rebar3, MIX_REBAR3; no hex), starts the release, and checks the Elixir form of names,
# exactly:
#   - record (collapsed): roots ElixirDemo.Worker (the registered one) and
#     ElixirDemo.Worker.init/1 (the other, by its '$initial_call'), and the stack
#     ...;ElixirDemo.Worker.handle_info/2;ElixirDemo.Worker.loop/1;...;
#     ElixirDemo.Worker."-loop/1-fun-0-"/2; no 'Elixir. left anywhere; the same names in svg;
#   - record --erlang-names: the Erlang form, 'Elixir.ElixirDemo.Worker':loop/1;
#   - top: ElixirDemo.Worker.loop/1 among the functions; pstack --all: the two processes named;
#   - the agent was loaded from the release (info --json).
# OTP 25 only: Debian's elixir (1.14) runs on the host's OTP 25; the 27 / 29 chroots have no
# elixir, so those runs exit 77 saying so. Exit 0 pass, 1 fail, 77 skip (reason printed).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

otp=${1:-25}

# build DIR: the app and a copy of the agent's sources (the build writes into its dependency's
# tree: never the repository's priv/, which other tests copy) into DIR, then `mix release`.
build() {
	local dir=$1 f
	mkdir -p "$dir/agent" "$dir/home"
	for f in CMakeLists.txt cmake c_src external src rebar.config; do
		cp -r "$XP_REPO/$f" "$dir/agent/"
	done
	cp -r "$XP_REPO/test/elixir_demo" "$dir/app"
	xp_log "mix release (the agent's NIF built by rebar3 through its CMake hook)"
	(cd "$dir/app" && HOME=$dir/home MIX_ENV=prod MIX_REBAR3=$(command -v rebar3) \
		XP_AGENT_PATH=$dir/agent mix release --quiet) >"$dir/mix.log" 2>&1 ||
		{ cat "$dir/mix.log" >&2; xp_die "mix release failed"; }
}

# start DIR: the release in the foreground of a subshell that execs (the start script execs
# erl, erlexec and beam.smp: $! is the VM), no distribution (no epmd left behind).
start() {
	local dir=$1 pid
	(cd "$dir" && RELEASE_DISTRIBUTION=none READY_FILE=$dir/ready \
		exec "$dir/app/_build/prod/rel/elixir_demo/bin/elixir_demo" start) \
		</dev/null >"$dir/vm.log" 2>&1 &
	pid=$!
	xp_adopt_vm "$pid" "$dir" /
	xp_log "Elixir release VM $pid ready"
}

# rec NAME SECONDS [options...]
rec() {
	local name=$1 secs=$2 rc=0
	shift 2
	xp_sampler record -d "$secs" "$@" -o "$XP_VM_DIR/$name" "$XP_VM_PID" \
		2>"$XP_VM_DIR/$name.err" || rc=$?
	sed 's/^/    | /' "$XP_VM_DIR/$name.err"
	xp_expect "exit status of 'record $*'" 0 "$rc"
}

check_record() {
	local f=$XP_VM_DIR/ex.folded stack
	rec ex.folded 2 --format collapsed
	xp_expect "roots (processes by what they are)" "ElixirDemo.Worker ElixirDemo.Worker.init/1" \
		"$(xp_roots "$f" | cut -f2 | grep -v '^\[' | sort | tr '\n' ' ' | sed 's/ $//')"
	stack='proc_lib:init_p_do_apply/3;gen_server:handle_msg/6;gen_server:try_dispatch/4;ElixirDemo.Worker.handle_info/2;ElixirDemo.Worker.loop/1;'
	for r in ElixirDemo.Worker ElixirDemo.Worker.init/1; do
		if grep -qF "$r;$stack" "$f" &&
			grep -F "$r;$stack" "$f" | grep -F ';ElixirDemo.Worker."-loop/1-fun-0-"/2;' >/dev/null; then
			xp_pass "$r: $stack...;ElixirDemo.Worker.\"-loop/1-fun-0-\"/2"
		else
			xp_fail "$r: no '$stack' with the loop's fun; got: $(grep "^$r;" "$f" | head -n 2)"
		fi
	done
	xp_expect "frames or roots in Erlang form ('Elixir.)" 0 "$(grep -c "'Elixir\." "$f" || true)"
	rec ex.svg 1
	if grep -qF 'ElixirDemo.Worker.loop/1' "$XP_VM_DIR/ex.svg" && ! grep -qF "'Elixir." "$XP_VM_DIR/ex.svg"; then
		xp_pass "svg: ElixirDemo.Worker.loop/1, no Erlang-form name"
	else
		xp_fail "svg: Elixir-form names missing or Erlang form present"
	fi
	rec erl.folded 1 --format collapsed --erlang-names
	xp_expect "--erlang-names: roots" \
		"'Elixir.ElixirDemo.Worker' 'Elixir.ElixirDemo.Worker':init/1" \
		"$(xp_roots "$XP_VM_DIR/erl.folded" | cut -f2 | grep -v '^\[' | sort | tr '\n' ' ' | sed 's/ $//')"
	xp_expect "--erlang-names: 'Elixir.ElixirDemo.Worker':loop/1 under handle_info/2" 1 \
		"$(grep -cF "'Elixir.ElixirDemo.Worker':handle_info/2;'Elixir.ElixirDemo.Worker':loop/1;" \
			"$XP_VM_DIR/erl.folded" | awk '{ print ($1 > 0) }')"
}

check_top_pstack() {
	local rc=0 json=$XP_VM_DIR/pstack.json
	xp_sampler top -d 1 -n 50 "$XP_VM_PID" >"$XP_VM_DIR/top.txt" 2>&1 || rc=$?
	xp_expect "exit status of 'top -d 1'" 0 "$rc"
	if grep -qE '^ +[0-9.]+% +[0-9.]+%  ElixirDemo\.Worker\.loop/1$' "$XP_VM_DIR/top.txt"; then
		xp_pass "top: a function row ElixirDemo.Worker.loop/1"
	else
		xp_fail "top: no row ElixirDemo.Worker.loop/1"
		cat "$XP_VM_DIR/top.txt"
	fi
	rc=0
	xp_sampler pstack --all --json "$XP_VM_PID" >"$json" 2>&1 || rc=$?
	xp_expect "exit status of 'pstack --all --json'" 0 "$rc"
	xp_expect "pstack --all: the registered worker (name, '\$initial_call')" \
		"ElixirDemo.Worker ElixirDemo.Worker.init/1" \
		"$(jq -r '.processes[] | select(.name == "ElixirDemo.Worker") |
			"\(.name) \(.dictionary_initial_call)"' "$json")"
	xp_expect "pstack --all: the unregistered worker's label" ElixirDemo.Worker.init/1 \
		"$(jq -r '.processes[] | select(.name == null and
			.dictionary_initial_call == "ElixirDemo.Worker.init/1") | .label' "$json")"
	xp_expect "the agent's NIF is the release's" true \
		"$(xp_sampler info --json "$XP_VM_PID" 2>/dev/null |
			jq -r '.agent.path | test("/rel/elixir_demo/lib/extrospect-0[.]1[.]0/priv/extrospect_nif[.]so$")')"
}

[[ "$otp" == 25 ]] || xp_skip "OTP $otp: Debian's elixir runs on the host's OTP 25 only; the OTP $otp chroot has no elixir"
for tool in elixir mix rebar3 cmake jq; do
	command -v "$tool" >/dev/null || xp_skip "$tool not installed (tools/install-deps.sh)"
done
xp_require_sampler
xp_new_work_dir 25
build "$XP_WORK_DIR"
start "$XP_WORK_DIR"
check_record
check_top_pstack
xp_summary
