# top's live view on a real terminal (top_tty_test.sh: a private tmux server, a fixed 100x16 pane):
# header and refreshes, xp_split's shares, the busiest process, Ctrl-C, stdout not a terminal,
# the VM exiting mid-run (exit 7). OTP 25, 27 and 29, with and without the agent; ~20 s each.
# RUN_SERIAL as the record tests: the shares are compared with time the VM measured.
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    add_test(NAME e2e.top.${otp}.${mode} COMMAND ${XP_E2E_DIR}/top_tty_test.sh ${otp} ${mode})
    set_tests_properties(e2e.top.${otp}.${mode} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 RUN_SERIAL TRUE ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
