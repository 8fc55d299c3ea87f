# extrospect sched (sched_test.sh) on OTP 25, 27 and 29, with and without the agent, and the
# deliberately slow test NIF it loads (test/targets/xp_slownif_nif.c). The NIF is built against
# the host's erl_nif.h (OTP 25): its lower NIF version loads on 27 and 29 as well. Never
# sanitized: it runs inside the VM.
set(XP_SCHED_ENV ${XP_E2E_ENV})
if(Erlang_ERTS_INCLUDE_DIR)
  add_library(xp_slownif_nif MODULE ${PROJECT_SOURCE_DIR}/test/targets/xp_slownif_nif.c)
  target_include_directories(xp_slownif_nif PRIVATE ${Erlang_ERTS_INCLUDE_DIR})
  # Sibling calls kept as calls: the NIF entry (xp_burn) stays on the stack above xp_spin.
  target_compile_options(xp_slownif_nif PRIVATE -fno-optimize-sibling-calls -fno-sanitize=all)
  target_link_options(xp_slownif_nif PRIVATE -fno-sanitize=all)
  set_target_properties(xp_slownif_nif PROPERTIES PREFIX "" SUFFIX ".so")
  list(APPEND XP_SCHED_ENV XP_SLOWNIF_SO=$<TARGET_FILE:xp_slownif_nif>)
endif()
xp_e2e_otp_modes(sched sched_test.sh 180 ENV ${XP_SCHED_ENV})
# The busy-wait table (sched_spin_test.sh): without the agent only, ~10 s per OTP.
foreach(otp 25 27 29)
  add_test(NAME e2e.sched_spin.${otp} COMMAND ${XP_E2E_DIR}/sched_spin_test.sh ${otp})
  set_tests_properties(e2e.sched_spin.${otp} PROPERTIES
    SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 120 ENVIRONMENT "${XP_E2E_ENV}")
endforeach()
