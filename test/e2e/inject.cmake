# `extrospect inject` (test/e2e/inject_test.sh): a distributed VM started without the agent on OTP
# 25, 27 and 29; push = refusals + push from an install + repeat, codepath = --code-path. ~5 s each.
foreach(otp 25 27 29)
  foreach(case push codepath)
    add_test(NAME e2e.inject.${otp}.${case} COMMAND ${XP_E2E_DIR}/inject_test.sh ${otp} ${case})
    set_tests_properties(e2e.inject.${otp}.${case} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
# The cookie never on a command line (SECURITY.md): OTP 25 only, what is tested is the sampler's.
add_test(NAME e2e.inject.25.cookie COMMAND ${XP_E2E_DIR}/inject_test.sh 25 cookie)
set_tests_properties(e2e.inject.25.cookie PROPERTIES
  SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
