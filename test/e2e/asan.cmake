# The sampler built with ASan + UBSan (issue 3 §6) runs the end-to-end cases that stress it most:
# record's purge loop under strace with the VM killed mid-run (robust), dirty schedulers with
# --threads all (dirty), pstack --all against process_info backtraces, and heap (its batched
# reads, --watch and the VM exiting under it) against process_info. Sanitizer reports
# abort the sampler (-fno-sanitize-recover), which the scripts see as a failed exit status.
set(XP_ASAN_DIR ${CMAKE_BINARY_DIR}/asan)
add_test(NAME e2e.asan.build COMMAND ${XP_E2E_DIR}/asan_build.sh ${XP_ASAN_DIR})
set_tests_properties(e2e.asan.build PROPERTIES
  SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 600 FIXTURES_SETUP xp_asan
  ENVIRONMENT "XP_REPO=${PROJECT_SOURCE_DIR}")
set(XP_ASAN_ENV
    XP_SAMPLER=${XP_ASAN_DIR}/extrospect
    XP_REPO=${PROJECT_SOURCE_DIR}
    XP_NIF=${PROJECT_SOURCE_DIR}/priv/extrospect_nif.so
    ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
foreach(otp 25 27 29)
  foreach(case robust dirty)
    add_test(NAME e2e.asan.record.${otp}.${case}
             COMMAND ${XP_E2E_DIR}/record_test.sh ${otp} agent ${case})
    set_tests_properties(e2e.asan.record.${otp}.${case} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 240 FIXTURES_REQUIRED xp_asan
      ENVIRONMENT "${XP_ASAN_ENV}")
  endforeach()
  add_test(NAME e2e.asan.heap.${otp} COMMAND ${XP_E2E_DIR}/heap_test.sh ${otp} noagent)
  set_tests_properties(e2e.asan.heap.${otp} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 240 FIXTURES_REQUIRED xp_asan
    ENVIRONMENT "${XP_ASAN_ENV}")
  add_test(NAME e2e.asan.pstack.${otp}
           COMMAND ${XP_E2E_DIR}/pstack_test.sh ${otp} noagent ra)
  set_tests_properties(e2e.asan.pstack.${otp} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 240 FIXTURES_REQUIRED xp_asan
    ENVIRONMENT "${XP_ASAN_ENV}")
endforeach()
