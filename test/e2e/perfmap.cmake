# `extrospect perf-map` and extrospect:write_perf_map() (perfmap_test.sh): perf record + report
# name Erlang functions of a VM without +JPperf. perf shares are measured: run alone.
xp_e2e_otp_modes(perfmap perfmap_test.sh 120 RUN_SERIAL)
