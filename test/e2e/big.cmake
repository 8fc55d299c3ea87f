# A VM as on a 64-core host (+S 64:64 +SDcpu 64:64: 138 scheduler threads) under a busy deep-stack
# workload (big_test.sh, issue 28): no perf record lost, completeness as on a small VM, pstack
# over 138 schedulers. ~40-90 s each (the VM's start is most of it).
foreach(otp 25 27 29)
  add_test(NAME e2e.big.${otp} COMMAND ${XP_E2E_DIR}/big_test.sh ${otp})
  set_tests_properties(e2e.big.${otp} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 400 RUN_SERIAL TRUE ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
