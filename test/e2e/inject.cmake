# `extrospect inject` (test/e2e/inject_test.sh): a distributed VM started without the agent on OTP
# 25, 27 and 29; push = refusals + push from an install + repeat, codepath = --code-path. ~5 s each.
foreach(otp 25 27 29)
  foreach(case push codepath)
    add_test(NAME e2e.inject.${otp}.${case} COMMAND ${XP_E2E_DIR}/inject_test.sh ${otp} ${case})
    set_tests_properties(e2e.inject.${otp}.${case} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
