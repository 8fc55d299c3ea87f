# names: what a process is called and grouped under (names_test.sh): proc_lib's '$initial_call'
# against process_info(P, dictionary), one root per kind of process in record, per pid with
# --group pid, one with --group none, in top and pstack --all; OTP 25, 27, 29 with and without
# the agent. ~8 s each.
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    add_test(NAME e2e.names.${otp}.${mode} COMMAND ${XP_E2E_DIR}/names_test.sh ${otp} ${mode})
    set_tests_properties(e2e.names.${otp}.${mode} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
