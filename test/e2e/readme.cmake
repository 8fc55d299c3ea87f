# The command examples of README.md and docs/*.md (readme_test.sh), each run as written on OTP 25,
# 27 and 29, with and without the agent: an example that stops working fails here. About 55
# examples, ~1 min a run on the shared 2-core machine; 300 s leaves room for a loaded CI host.
xp_e2e_otp_modes(readme readme_test.sh 300)
