# Faults done to the target or the output during a command (issue 16, faults_test.sh): the VM
# stopped, halted, its schedulers_online flipped, its modules churned, the output disk full, two
# samplers at once, the agent stopped and purged in a loop. schedulers_online differs by OTP
# (25, 27, 29); the rest is the sampler's own handling, the same on every OTP (run on 25).
# About 8-15 s each on a quiet machine. The heavy ones (a million
# processes, a 10-million-message queue, a cgroup memory limit) are in bench/faults_bench.
# In `make test`: stop, halt, exec, disk and sched (~60 s on a quiet machine). `make test-faults`
# adds two, churn and agent (label faults-more), which passed on 25, 27 and 29 when written.
foreach(case stop halt exec disk two churn agent)
  set(labels e2e)
  if(case MATCHES "^(two|churn|agent)$")
    set(labels e2e faults-more)
  endif()
  add_test(NAME e2e.faults.${case} COMMAND ${XP_E2E_DIR}/faults_test.sh 25 ${case})
  set_tests_properties(e2e.faults.${case} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS "${labels}" TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
foreach(otp 25 27 29)
  add_test(NAME e2e.faults.sched.${otp} COMMAND ${XP_E2E_DIR}/faults_test.sh ${otp} sched)
  set_tests_properties(e2e.faults.sched.${otp} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
