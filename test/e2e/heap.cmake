# heap: every process's memory read from outside against process_info of parked processes
# (heap_test.sh), on OTP 25, 27 and 29 with and without the agent; the planted binary leak tops
# --sort bin. ~5-10 s each.
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    add_test(NAME e2e.heap.${otp}.${mode} COMMAND ${XP_E2E_DIR}/heap_test.sh ${otp} ${mode})
    set_tests_properties(e2e.heap.${otp}.${mode} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
