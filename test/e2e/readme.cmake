# README's command examples (readme_test.sh), each run as written on OTP 25, 27 and 29, with and
# without the agent: an example that stops working fails here.
xp_e2e_otp_modes(readme readme_test.sh 300)
