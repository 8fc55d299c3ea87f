# Security model (SECURITY.md, issue 16): a hostile fake VM (test/targets/xp_fake_beam.c, named
# beam.smp in an erts-13.1.5/bin directory so that the sampler takes it for OTP 25) under the
# ASan + UBSan sampler; least privilege and namespaces (privilege_test.sh).
add_executable(xp_fake_beam ${PROJECT_SOURCE_DIR}/test/targets/xp_fake_beam.c)
target_link_libraries(xp_fake_beam PRIVATE xpvm pthread)
target_link_options(xp_fake_beam PRIVATE -rdynamic)
target_compile_options(xp_fake_beam PRIVATE -fno-sanitize=all)
set_target_properties(xp_fake_beam PROPERTIES OUTPUT_NAME beam.smp
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fakevm/erts-13.1.5/bin)
set(XP_FAKE_BEAM ${CMAKE_BINARY_DIR}/fakevm/erts-13.1.5/bin/beam.smp)
# Its agent library (XP_FAKE_AGENT=path): the block only, named like the agent's NIF.
add_library(xp_fake_agent SHARED ${PROJECT_SOURCE_DIR}/test/targets/xp_fake_agent.c)
target_include_directories(xp_fake_agent PRIVATE ${XP_ABI_INCLUDE})
target_compile_options(xp_fake_agent PRIVATE -fno-sanitize=all)
target_link_options(xp_fake_agent PRIVATE -fno-sanitize=all)
set_target_properties(xp_fake_agent PROPERTIES PREFIX "" OUTPUT_NAME extrospect_nif_fake
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fakevm)
add_dependencies(xp_fake_beam xp_fake_agent)

# Under the ASan + UBSan sampler only (~20 s; the CI budget): the script runs the plain one too
# (XP_FAKE_BEAM=build/fakevm/erts-13.1.5/bin/beam.smp test/e2e/hostile_test.sh, ~16 s).
add_test(NAME e2e.asan.hostile COMMAND ${XP_E2E_DIR}/hostile_test.sh)
set_tests_properties(e2e.asan.hostile PROPERTIES
  SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 300 FIXTURES_REQUIRED xp_asan
  ENVIRONMENT "${XP_ASAN_ENV};XP_FAKE_BEAM=${XP_FAKE_BEAM}")

# Least privilege (issue 15 item 4): a VM of an unprivileged user, in its own pid and mount
# namespace, sampled by that user and by root. OTP 25 only (see the script). ~17 s.
add_test(NAME e2e.privilege COMMAND ${XP_E2E_DIR}/privilege_test.sh)
set_tests_properties(e2e.privilege PROPERTIES
  SKIP_RETURN_CODE 77 LABELS e2e TIMEOUT 180
  ENVIRONMENT "${XP_E2E_ENV};XP_FAKE_BEAM=${XP_FAKE_BEAM}")
