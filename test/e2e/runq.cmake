# The flight recorder's runq trigger (runq_test.sh): record --ring --trigger runq=N against
# test/targets/xp_runq.erl on OTP 25, 27 and 29, with and without the agent: a quiet VM fires
# nothing, 200 busy processes bound to scheduler 1 fire it; ~20 s each.
xp_e2e_otp_modes(runq runq_test.sh 90)
