# alloc: the allocators read from outside against erlang:system_info({allocator, A}) and
# instrument:carriers() (alloc_test.sh); the planted fragmentation of binary_alloc shows. With the
# agent on OTP 25, 27 and 29; without it on 29 only, the one release where the sampler must find
# erts_allctrs_info by its own scan (25/27 export it: the agent's dlsym and the sampler's .dynsym
# read the same symbol), and where --watch and the fail-closed path are checked. ~12 s each:
# CI's budget for this feature is ~60 s. All six: `alloc_test.sh OTP agent|noagent` by hand.
foreach(case 25.agent 27.agent 29.agent 29.noagent)
  string(REPLACE "." ";" args ${case})
  add_test(NAME e2e.alloc.${case} COMMAND ${XP_E2E_DIR}/alloc_test.sh ${args})
  set_tests_properties(e2e.alloc.${case} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
