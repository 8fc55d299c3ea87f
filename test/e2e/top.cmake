# top's live view on a real terminal (top_tty_test.sh: a private tmux server, a fixed 100x16 pane):
# header and refreshes, xp_split's shares, the busiest process, Ctrl-C, stdout not a terminal,
# the VM exiting mid-run (exit 7). OTP 25, 27 and 29, with and without the agent; ~20 s each.
# RUN_SERIAL as the record tests: the shares are compared with time the VM measured.
xp_e2e_otp_modes(top top_tty_test.sh 120 RUN_SERIAL)
