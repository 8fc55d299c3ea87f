# The flight recorder and the timeline (ring_test.sh): record --ring with --trigger long-run and
# SIGUSR2, and --format trace, against test/targets/xp_stall.erl on OTP 25, 27 and 29, with and
# without the agent; ~30 s each. Run alone: the stalls are timed against the wall clock.
xp_e2e_otp_modes(ring ring_test.sh 120 RUN_SERIAL)
