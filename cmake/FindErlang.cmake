# Finds the Erlang runtime used to build the NIF: asks `erl` for its erts include dir and
# erl_interface (ei) dirs. Sets Erlang_ERTS_INCLUDE_DIR, Erlang_EI_INCLUDE_DIR, Erlang_EI_LIBRARY_DIR,
# Erlang_OTP_RELEASE. Model: emqx/erlang-rocksdb c_src/CMake/FindErlang.cmake.
find_program(Erlang_ERL erl)
if(Erlang_ERL)
  execute_process(
    COMMAND ${Erlang_ERL} -noshell -eval
      "io:format(\"~ts/erts-~ts/include;~ts;~ts;~ts\", [code:root_dir(), erlang:system_info(version), code:lib_dir(erl_interface, include), code:lib_dir(erl_interface, lib), erlang:system_info(otp_release)]), halt()."
    OUTPUT_VARIABLE _erl_out
    RESULT_VARIABLE _erl_rc
    ERROR_QUIET)
  if(_erl_rc EQUAL 0)
    list(GET _erl_out 0 Erlang_ERTS_INCLUDE_DIR)
    list(GET _erl_out 1 Erlang_EI_INCLUDE_DIR)
    list(GET _erl_out 2 Erlang_EI_LIBRARY_DIR)
    list(GET _erl_out 3 Erlang_OTP_RELEASE)
  endif()
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Erlang REQUIRED_VARS Erlang_ERL Erlang_ERTS_INCLUDE_DIR)
