# record --fold-recursion (fold_test.sh): xp_deep's 20-deep direct recursion folded into one frame
# in the collapsed, speedscope and SVG outputs, off by default, refused by pstack; OTP 25, 27 and
# 29 with the agent, one VM and two short recordings (~10 s each).
foreach(otp 25 27 29)
  add_test(NAME e2e.fold.${otp} COMMAND ${XP_E2E_DIR}/fold_test.sh ${otp})
  set_tests_properties(e2e.fold.${otp} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
