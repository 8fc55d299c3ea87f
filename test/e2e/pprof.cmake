# pprof output (pprof_test.sh): `record -o X.pb.gz -o X.folded` read back by `go tool pprof` on
# OTP 25, 27 and 29 with the agent; one VM, two 1 s recordings (~10 s each). Continuous mode
# (every_test.sh): --every 1s into a directory and --push to a local receiver, SIGHUP, --keep and
# SIGTERM; OTP-independent (the rotation and the push are the sampler's own), so OTP 25 only.
foreach(otp 25 27 29)
  add_test(NAME e2e.pprof.${otp} COMMAND ${XP_E2E_DIR}/pprof_test.sh ${otp})
  set_tests_properties(e2e.pprof.${otp} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
add_test(NAME e2e.every COMMAND ${XP_E2E_DIR}/every_test.sh)
set_tests_properties(e2e.every PROPERTIES
  SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")

# Installing (package_test.sh): cmake --install, the man page and completion, the CPack .deb
# unpacked and run (--version, a 1 s record of an OTP 25 VM). ~15 s.
add_test(NAME e2e.package COMMAND ${XP_E2E_DIR}/package_test.sh)
set_tests_properties(e2e.package PROPERTIES
  SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 180 ENVIRONMENT "${XP_E2E_ENV}")
