#!/usr/bin/env bash
# Refresh the checked-in captures (test/captures/otpNN.xpcap): start test/targets/xp_capture.erl
# on OTP 25 (host), 27 and 29 (chroots, test/e2e/provision.sh) with the agent, capture with the
# built sampler (as root: perf and the in-kernel capture), then check that each replays.
# Usage: tools/refresh-captures.sh [OTP...]   (default: 25 27 29)
# Environment: XP_CAP_SAMPLES (default 1500), XP_CAP_RATE (default 997), XP_CAP_SECS (default 15: the
# most it waits for them).
set -euo pipefail
XP_REPO=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../test/e2e/lib.sh
. "$XP_REPO/test/e2e/lib.sh"
xp_require_sampler
out=$XP_REPO/test/captures
for otp in "${@:-25 27 29}"; do
	for o in $otp; do
		xp_start_vm "$o" agent xp_capture
		xp_sampler capture -F "${XP_CAP_RATE:-997}" -d "${XP_CAP_SECS:-15}" \
			-n "${XP_CAP_SAMPLES:-1500}" -o "$out/otp$o.xpcap" "$XP_VM_PID"
		xp_stop_vm "$XP_VM_PID"
		ls -l "$out/otp$o.xpcap" >&2
	done
done
"$XP_REPO/build/test_replay" >/dev/null && xp_log "test_replay passes on every capture"
