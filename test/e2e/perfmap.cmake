# `extrospect perf-map` and extrospect:write_perf_map() (perfmap_test.sh): perf record + report
# name Erlang functions of a VM without +JPperf. perf shares are measured: run alone.
foreach(otp 25 27 29)
  foreach(mode agent noagent)
    add_test(NAME e2e.perfmap.${otp}.${mode} COMMAND ${XP_E2E_DIR}/perfmap_test.sh ${otp} ${mode})
    set_tests_properties(e2e.perfmap.${otp}.${mode} PROPERTIES
      SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 RUN_SERIAL TRUE ENVIRONMENT "${XP_E2E_ENV}")
  endforeach()
endforeach()
