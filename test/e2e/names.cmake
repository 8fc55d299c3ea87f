# names: what a process is called and grouped under (names_test.sh): proc_lib's '$initial_call'
# against process_info(P, dictionary), one root per kind of process in record, per pid with
# --group pid, one with --group none, in top and pstack --all; OTP 25, 27, 29 with and without
# the agent. ~8 s each.
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    add_test(NAME e2e.names.${otp}.${mode} COMMAND ${XP_E2E_DIR}/names_test.sh ${otp} ${mode})
    set_tests_properties(e2e.names.${otp}.${mode} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()

# elixir: test/elixir_demo built with Debian's elixir and `mix release`, the agent as a path
# dependency, profiled (elixir_test.sh). OTP 25 only (the chroots have no elixir: 27 and 29 skip
# with that reason). ~30-50 s, most of it mix building the agent's NIF through rebar3.
foreach(otp 25 27 29)
  add_test(NAME e2e.elixir.${otp} COMMAND ${XP_E2E_DIR}/elixir_test.sh ${otp})
  set_tests_properties(e2e.elixir.${otp} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 300 ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
