# `--lines` (lines_test.sh): Erlang frames named with the source line, on OTP 25, 27 and 29, with
# and without the agent. Each run starts one VM and records it twice for 2 s (~10 s).
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    add_test(NAME e2e.lines.${otp}.${mode} COMMAND ${XP_E2E_DIR}/lines_test.sh ${otp} ${mode})
    set_tests_properties(e2e.lines.${otp}.${mode} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
