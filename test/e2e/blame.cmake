# extrospect blame (blame_test.sh): known causes of GC and of deep copies ranked first, on OTP 25,
# 27 and 29, with and without the agent. OTP 29 without the agent works too: blame needs no pid
# text or process names beyond what the sampler prints there (raw pid terms, registered names).
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    add_test(NAME e2e.blame.${otp}.${mode} COMMAND ${XP_E2E_DIR}/blame_test.sh ${otp} ${mode})
    set_tests_properties(e2e.blame.${otp}.${mode} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 180 ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
