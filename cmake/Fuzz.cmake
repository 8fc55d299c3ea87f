# XP_FUZZ: the libFuzzer targets of test/fuzz/, built by clang in a project of their own
# (build/fuzz/) whatever compiler builds the rest, and the ctest fuzz.NAME running each for
# XP_FUZZ_SECONDS (8 by default) over a copy of its checked-in corpus. Included from the tests
# section; needs Erlang_EI_INCLUDE_DIR and Erlang_EI_LIBRARY.
set(XP_FUZZ_TARGETS fuzz_jitmap fuzz_perf fuzz_agent fuzz_estack fuzz_term fuzz_epmd fuzz_capfile
    fuzz_process)
set(XP_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)

if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
  set(_xp_fuzz_cc ${CMAKE_C_COMPILER})
else()
  find_program(_xp_fuzz_cc NAMES clang clang-18 clang-17 clang-16 clang-15 clang-14)
endif()
set(_xp_fuzz_ok OFF)
if(_xp_fuzz_cc)
  set(_probe ${CMAKE_BINARY_DIR}/CMakeFiles/xp_fuzz_probe.c)
  file(WRITE ${_probe} "#include <stddef.h>\n#include <stdint.h>\n"
       "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n")
  execute_process(COMMAND ${_xp_fuzz_cc} -fsanitize=fuzzer,address,undefined ${_probe}
                          -o ${CMAKE_BINARY_DIR}/CMakeFiles/xp_fuzz_probe
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
  if(_rc EQUAL 0)
    set(_xp_fuzz_ok ON)
  endif()
endif()
option(XP_FUZZ "Build the libFuzzer targets (test/fuzz/) with clang" ${_xp_fuzz_ok})
if(XP_FUZZ AND NOT _xp_fuzz_ok)
  message(WARNING "XP_FUZZ: no clang that links -fsanitize=fuzzer (found: '${_xp_fuzz_cc}'); "
                  "the fuzz.* tests will be skipped")
  set(XP_FUZZ OFF)
elseif(NOT XP_FUZZ)
  message(STATUS "XP_FUZZ off (no clang that links -fsanitize=fuzzer, or turned off): "
                 "the fuzz.* tests will be skipped")
endif()

if(XP_FUZZ)
  include(ExternalProject)
  ExternalProject_Add(xp_fuzz
    SOURCE_DIR ${CMAKE_CURRENT_SOURCE_DIR}/test/fuzz
    BINARY_DIR ${XP_FUZZ_DIR}
    CMAKE_ARGS -DCMAKE_C_COMPILER=${_xp_fuzz_cc} -DCMAKE_BUILD_TYPE=RelWithDebInfo
               -DXP_ROOT=${CMAKE_CURRENT_SOURCE_DIR} -DXP_EI_INCLUDE_DIR=${Erlang_EI_INCLUDE_DIR}
               -DXP_EI_LIBRARY=${Erlang_EI_LIBRARY}
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON)
endif()

foreach(name ${XP_FUZZ_TARGETS})
  string(REPLACE "fuzz_" "" short ${name})
  # Off: a path that is never built, so that binaries left from an earlier build are not run.
  set(bin ${XP_FUZZ_DIR}/${name})
  if(NOT XP_FUZZ)
    set(bin ${XP_FUZZ_DIR}/not-built/${name})
  endif()
  add_test(NAME fuzz.${short}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/test/fuzz/run.sh ${bin}
                   ${CMAKE_CURRENT_SOURCE_DIR}/test/fuzz/corpus/${short} ${XP_FUZZ_DIR}/run/${short})
  set_tests_properties(fuzz.${short} PROPERTIES SKIP_RETURN_CODE 77 LABELS fuzz TIMEOUT 120)
endforeach()
