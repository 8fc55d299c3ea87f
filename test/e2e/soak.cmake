# The soak, short (soak_test.sh -> bench/soak): ~30 s of sampling plus two VM starts (~60 s in all), OTP 27.
# Its verdict is the sampler's fds and memory, not a share: it runs beside other tests.
add_test(NAME e2e.soak.27 COMMAND ${XP_E2E_DIR}/soak_test.sh)
set_tests_properties(e2e.soak.27 PROPERTIES
  SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 240 ENVIRONMENT "${XP_E2E_ENV}")
