# events: `extrospect events` against a target that counts its own spawns, exits, sends and
# collections (events_test.sh), on OTP 25, 27 and 29 with the agent; without it, exit status 6;
# --source uprobes on the VM without it (29, stripped: refused). ~20 s each with the agent.
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    add_test(NAME e2e.events.${otp}.${mode} COMMAND ${XP_E2E_DIR}/events_test.sh ${otp} ${mode})
    set_tests_properties(e2e.events.${otp}.${mode} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 180 ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
