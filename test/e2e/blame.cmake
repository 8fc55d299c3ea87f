# extrospect blame (blame_test.sh): known causes of GC and of deep copies ranked first, on OTP 25,
# 27 and 29, with and without the agent. OTP 29 without the agent works too: blame needs no pid
# text or process names beyond what the sampler prints there (raw pid terms, registered names).
xp_e2e_otp_modes(blame blame_test.sh 180)
