# `extrospect perf-map` and extrospect:write_perf_map() (perfmap_test.sh): perf record + report
# name Erlang functions of a VM without +JPperf. Beside other tests: what is checked is names, and
# shares bounds wide enough for a loaded machine (each of the two >= 12 %, both >= 60 %).
xp_e2e_otp_modes(perfmap perfmap_test.sh 120)
