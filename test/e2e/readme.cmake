# The command examples of README.md and docs/*.md (readme_test.sh), each run as written on OTP 25,
# 27 and 29 with the agent, and on 25 without it (each command's own e2e test covers the three
# OTPs without the agent; CI's 30 minutes): an example that stops working fails here. About 60
# examples, ~1 min a run on the shared 2-core machine; 300 s leaves room for a loaded CI host.
foreach(run 25.agent 27.agent 29.agent 25.noagent)
  string(REPLACE "." ";" args ${run})
  add_test(NAME e2e.readme.${run} COMMAND ${XP_E2E_DIR}/readme_test.sh ${args})
  set_tests_properties(e2e.readme.${run} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 300 ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
