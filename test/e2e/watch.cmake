# watch: one process's wall time from the agent's spy threads (watch_test.sh), on OTP 25, 27 and
# 29: accuracy against a self-timing target, the spy's lifecycle (P exit, SIGINT, SIGKILL of the
# sampler, stop_spies, library unload, VM exit), exit 6 without agent or spies, and an strace of
# the only write. truth runs alone (its shares are compared with time the VM measured); the
# others check states, exit codes and syscalls, beside other tests. ~10-20 s each.
foreach(otp 25 27 29)
  foreach(case truth lifecycle unload vmexit errors strace)
    add_test(NAME e2e.watch.${otp}.${case} COMMAND ${XP_E2E_DIR}/watch_test.sh ${otp} ${case})
    set(serial)
    if(case STREQUAL truth)
      set(serial RUN_SERIAL TRUE)
    endif()
    set_tests_properties(e2e.watch.${otp}.${case} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 180 ${serial} ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
