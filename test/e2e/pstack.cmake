# pstack: scheduler snapshot and --all process stacks against process_info(P, backtrace) of parked
# processes (pstack_test.sh), on OTP 25, 27 and 29 with and without the agent; frame-pointer
# layout without the agent (the walk does not depend on who found the table). ~5-10 s each.
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    set(cases ra)
    if(mode STREQUAL "noagent")
      list(APPEND cases fp)
    endif()
    foreach(case ${cases})
      add_test(NAME e2e.pstack.${otp}.${mode}.${case}
               COMMAND ${XP_E2E_DIR}/pstack_test.sh ${otp} ${mode} ${case})
      set_tests_properties(e2e.pstack.${otp}.${mode}.${case} PROPERTIES
        SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
    endforeach()
  endforeach()
endforeach()
