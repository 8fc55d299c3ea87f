# alloc: the allocators read from outside against erlang:system_info({allocator, A}) and
# instrument:carriers() (alloc_test.sh), on OTP 25, 27 and 29 with and without the agent; the
# planted fragmentation of binary_alloc shows. ~5-8 s each.
xp_e2e_otp_modes(alloc alloc_test.sh 120)
