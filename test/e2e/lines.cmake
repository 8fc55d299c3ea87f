# `--lines` (lines_test.sh): Erlang frames named with the source line, on OTP 25, 27 and 29, with
# and without the agent. Each run starts one VM and records it twice for 2 s (~10 s).
xp_e2e_otp_modes(lines lines_test.sh 120)
