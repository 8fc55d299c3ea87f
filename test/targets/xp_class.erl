%% Ground truth for native-time attribution (issue 12 item 4): the registered process xp_class
%% cycles through phases, each a different exported function that spends its time in one kind of
%% native code (bignum arithmetic in C, a shared JIT fragment, a trapping BIF, a map or binary
%% operation, a garbage collection, a dirty BIF), most of them frameless, a few with a frame and two
%% in plain Erlang. A sample taken in that native code must be attributed to the phase function:
%% the Erlang function whose JIT code made the native call.
%%   erl -noshell ... [-xp_class_seed N] -run xp_class start READYFILE agent|noagent HARNESS_OS_PID
%% The seed (default: from the clock) draws each phase's weight (5..25: the phase runs weight/4 ms
%% per round) and size factor (0.5..2 x a base size), so no phase is tuned to one machine. At start
%% the cost of one call of each phase is measured (mean of 5 runs, erlang:monotonic_time/0) and
%% the calls per round set from it. Each round runs every phase once, Fun(Arg) Calls times; after
%% every round the running totals go to READYFILE.class (key=value, written whole):
%%   phases              the phase names, comma-separated
%%   NAME_frames         the innermost Erlang frame(s) a sample of that phase must show
%%   NAME_cpu_us         the CPU time, user and system, of the VM's normal and dirty CPU
%%                       scheduler threads while the phase's calls ran, in microseconds: the
%%                       sum of their thread CPU clocks (xp_defer:thread_cpu_ns/1, the NIF
%%                       xp_defer_nif.c, loaded from -xp_defer_nif PATH: exact), read by the
%%                       process xp_class itself (cpu_us/1), from just before the phase's
%%                       first call to its r_NAME/3's last. Without the NIF, by the process
%%                       xp_class_clock, their
%%                       /proc/self/task/TID/schedstat run times, which for a running thread are
%%                       as of its last tick or switch (4 ms steps at HZ=250, measured): a phase
%%                       of 1 ms a round reads 0 or 4 ms, noise a short run does not average
%%                       out (cpu_clock says which clock: thread_cputime or schedstat). System
%%                       time counts: a page fault of a growing heap is the phase's, and the
%%                       sampler samples it (as [kernel]). Not
%%                       erlang:statistics(runtime): getrusage's user time splits each thread's
%%                       run time by the ticks that found it in user mode (4 ms apart at
%%                       HZ=250), which credits a phase some of its system time, not all
%%   NAME_ns             wall time around the phase's calls (includes time the OS ran others)
%%   total_cpu_us, total_ns  the same since the first round, every scheduler thread's (dirty I/O
%%                       too, which read these files): phases, timing and stats writes
%% Started with +sbwt none (test/e2e/record_test.sh), so idle schedulers do not spin on the
%% CPU time of the phase that runs meanwhile (the dirty phase leaves the normal ones idle).
%% All phase data but the GC phase's lives in persistent_term (the literal area), so a garbage
%% collection copies only what the phase allocated itself. No call allocates more than ~40 000
%% words on the heap, so the heap stays under ERTS_POTENTIALLY_LONG_GC_HSIZE (128 Ki words,
%% erl_gc.c) and the collections run in the phase, on its scheduler: above it they become dirty
%% system tasks on a dirty CPU scheduler, whose samples today carry no process and no Erlang
%% stack (seen with 50 000-element reverses and 200-element dirty copies: -3 to -13 points on
%% the framed phases that caused them).
%%
%% Which instruction each phase uses (erlc -S xp_class.erl, OTP 25; checked on 27 and 29) and
%% whether it has a frame (an `allocate`) is written above each phase function. For a frameless
%% function the return address on the Erlang stack is its caller's (r_NAME/3): only the native
%% return address (or the fragment's) says which function made the call.
-module(xp_class).

-export([start/1]).
%% The phases, called through external funs by r_NAME/3 (and repeat/3 to calibrate).
-export([big_div/1, big_rem/1, big_mul/1, big_mul_tail/1, big_addsub/1, big_bits/1,
         list_len/1, tuple_setel/1, hash_framed/1, t2b_caller/1, t2b_tail/1, b2t_framed/1,
         rev_framed/1, map_update/1, map_get/1, cmp_eq/1, cmp_lt/1, bin_concat/1, bin_int/1,
         bin_match/1, bin_ints/1, bin_ints_framed/1, bin_append/1, bin_append_framed/1,
         bin_utf8/1, bin_split/1, iol2b/1, u2b/1, re_run/1, gc_major/1, dirty_copy/1,
         erl_loop/1, erl_rec/1]).

-define(CHUNK_US_PER_WEIGHT, 250). % a phase of weight W runs W x 250 us per round

start([Ready | _] = Args) ->
    xp_ready:boot(Args, fun() -> start_worker(Ready ++ ".class", seed()) end).

seed() ->
    case init:get_argument(xp_class_seed) of
        {ok, [[S]]} -> list_to_integer(S);
        _ -> erlang:system_time(microsecond) rem 1000000
    end.

%% {Name, ExpectedFrames, BaseSize, MakeArg}: MakeArg(Size) builds the phase's argument. The frames
%% are the innermost Erlang frames a correct sample of the phase shows; more than one only where
%% the truth is ambiguous (written beside the phase).
phases() ->
    [{big_div, [], 6000, fun(S) -> {big(2 * S), big(S)} end},
     {big_rem, [], 6000, fun(S) -> {big(2 * S), big(S)} end},
     {big_mul, [], 60000, fun(S) -> {big(S), big(S + 7)} end},
     {big_mul_tail, [], 8000, fun(S) -> big(S) end},
     {big_addsub, [], 500000, fun(S) -> {big(S), big(S - 3)} end},
     {big_bits, [], 300000, fun(S) -> {big(S), big(S - 5)} end},
     {list_len, [], 200000, fun(S) -> lists:seq(1, S) end},
     {tuple_setel, [], 10000, fun(S) -> {S div 2, list_to_tuple(lists:seq(1, S))} end},
     {hash_framed, [], 20000, fun(S) -> [{I, <<I:64>>} || I <- lists:seq(1, S)] end},
     {t2b_caller, [{xp_class, t2b_tail, 1}], 10000,
      fun(S) -> [{I, integer_to_list(I)} || I <- lists:seq(1, S)] end},
     {b2t_framed, [], 1000,
      fun(S) -> term_to_binary([{I, integer_to_list(I)} || I <- lists:seq(1, S)]) end},
     {rev_framed, [], 10000, fun(S) -> lists:seq(1, S) end},
     {map_update, [], 20000, fun(S) -> maps:from_list([{I, I} || I <- lists:seq(1, S)]) end},
     {map_get, [], 2000,
      fun(S) ->
              Key = lists:seq(1, S),
              {[50 | Key], maps:from_list([{[I | Key], I} || I <- lists:seq(1, 100)])}
      end},
     {cmp_eq, [], 100000,
      fun(S) -> {lists:seq(1, S), lists:reverse(lists:seq(S, 1, -1))} end},
     {cmp_lt, [], 50000,
      fun(S) ->
              {list_to_tuple(lists:seq(1, S)), list_to_tuple(lists:seq(1, S - 1) ++ [S + 1])}
      end},
     {bin_concat, [], 200000, fun(S) -> {binary:copy(<<1>>, S), binary:copy(<<2>>, S)} end},
     {bin_int, [], 200000, fun(S) -> {big(S), S} end},
     {bin_match, [], 200000, fun(S) -> {S, <<(big(S)):S, 0:64>>} end},
     {bin_ints, [], 20000, fun(S) -> {big(S), big(S - 9), S} end},
     {bin_ints_framed, [], 20000, fun(S) -> {big(S), big(S - 9), S} end},
     {bin_append, [{xp_class, bin_append, 2}], 2000, fun(S) -> S end},
     {bin_append_framed, [], 1000, fun(S) -> S end},
     {bin_utf8, [{xp_class, bin_utf8, 2}], 3000,
      fun(S) ->
              unicode:characters_to_binary([$a + I rem 26 + (I rem 3) * 500
                                            || I <- lists:seq(1, S)])
      end},
     {bin_split, [], 2000,
      fun(S) ->
              {iolist_to_binary([[integer_to_list(I * 7919), $,] || I <- lists:seq(1, S)]),
               <<",">>}
      end},
     {iol2b, [], 4000, fun(S) -> [[<<"ab">>, I rem 256, [<<"cde">>]] || I <- lists:seq(1, S)] end},
     {u2b, [{unicode, characters_to_binary, 1}], 4000,
      fun(S) -> [I rem 26 + $a + (I rem 4) * 300 || I <- lists:seq(1, S)] end},
     {re_run, [], 20000,
      fun(S) ->
              {ok, MP} = re:compile(<<"x[0-9]+y$">>),
              {binary:copy(<<"x1234z">>, S div 6), MP}
      end},
     {gc_major, [{erlang, garbage_collect, 0}], 10000, fun(S) -> lists:seq(1, S) end},
     {dirty_copy, [], 10, fun(S) -> lists:seq(1, S) end},
     {erl_loop, [{xp_class, erl_loop, 2}], 20000, fun(S) -> S end},
     {erl_rec, [], 80, fun(S) -> S end}].

%% -xp_class_only NAME,NAME...: only those phases (by hand, to look at a few; the test runs all).
only(Phases) ->
    case init:get_argument(xp_class_only) of
        {ok, [[Names]]} ->
            Keep = [list_to_atom(N) || N <- string:lexemes(Names, ",")],
            [P || P <- Phases, lists:member(element(1, P), Keep)];
        _ -> Phases
    end.

%% A positive integer of about Bits bits, no run of equal limbs.
big(Bits) ->
    (1 bsl Bits) + (1 bsl (Bits div 2)) * 16#9e3779b97f4a7c15 + 12345.

%% ---- the phases -------------------------------------------------------------------------------

%% The native frames named below are those seen on OTP 25 with the agent.

%% frameless: gc_bif div (global::int_div_rem_body_shared -> erts_int_div_rem, in C).
big_div({A, B}) -> A div B.

%% frameless: gc_bif rem (the same fragment as div).
big_rem({A, B}) -> A rem B.

%% frameless: gc_bif '*' (global::times_body_shared -> erts_mixed_times -> big_times).
big_mul({A, B}) -> A * B.

%% frameless: gc_bif '*', then call_only mul_tail_g/2: f(B) -> g(B * B, 7). The product is made
%% in this function; g only builds a tuple (its few samples are not the phase's).
big_mul_tail(B) -> mul_tail_g(B * B, 7).

mul_tail_g(P, K) -> {P, K}.

%% frameless: gc_bif '+', gc_bif '-' (global::plus_body_shared / minus_body_shared -> big_plus...).
big_addsub({A, B}) -> A + B - A.

%% frameless: gc_bif 'band', 'bsl', 'bor' (global::i_band_body_shared -> erts_band -> big_band...).
big_bits({A, B}) -> (A band B) bor (B bsl 17).

%% frameless: gc_bif length (global::i_length_body_shared -> erts_trapping_length_1: it traps).
list_len(L) -> length(L).

%% framed: call_ext erlang:setelement/3 (global::call_light_bif_shared -> setelement_3). element/2
%% is left out: it is inline JIT code of constant cost, with no native time to attribute.
tuple_setel({I, T}) ->
    T1 = setelement(I, T, x),
    {T1}.

%% framed: call_ext erlang:phash2/1 (global::call_light_bif_shared -> phash2_1).
hash_framed(T) ->
    H = erlang:phash2(T),
    {H}.

%% t2b_caller/1 is framed: call t2b_tail/1, which is frameless: call_ext_only
%% erlang:term_to_binary/1, a tail call into a BIF. By Erlang semantics t2b_tail/1 is gone from
%% the stack once the BIF runs (an exception's stack trace shows the BIF, then t2b_caller/1), but
%% its JIT code may still make the native call. Ambiguous, so either frame is correct; the phase
%% counts both.
t2b_caller(T) ->
    B = t2b_tail(T),
    {B}.

t2b_tail(T) -> term_to_binary(T).

%% framed: call_ext erlang:binary_to_term/1 (a trapping BIF).
b2t_framed(B) ->
    T = binary_to_term(B),
    {T}.

%% framed: call_ext lists:reverse/2, a BIF. lists:reverse/1 is Erlang code (lists.erl) that
%% tail-calls reverse/2, which would put a third function between the phase and the BIF.
rev_framed(L) ->
    X = lists:reverse(L, []),
    {X}.

%% frameless: put_map_exact of 16 keys on a 10 000 to 40 000-key (HAMT) map
%% (global::update_map_exact_body_shared -> erts_gc_update_map_exact).
map_update(M) ->
    M#{1 := a, 2 := a, 3 := a, 4 := a, 5 := a, 6 := a, 7 := a, 8 := a,
       9 := a, 10 := a, 11 := a, 12 := a, 13 := a, 14 := a, 15 := a, 16 := a}.

%% frameless: get_map_elements with a variable key, a list of 1 000 to 4 000 elements, in a
%% 100-key (HAMT) map: the key is hashed and compared in C (global::i_get_map_element_shared ->
%% get_map_element -> make_internal_hash). (Literal keys would be hashed at load time, leaving
%% ~100 ns of work per call, too little beside repeat/3's own.)
map_get({K, M}) ->
    #{K := V} = M,
    V.

%% frameless: bif '==' on two equal, separately built lists (global::i_bif_guard_shared -> seqeq_2
%% -> erts_cmp_compound).
cmp_eq({A, B}) -> A == B.

%% frameless: bif '<' on two tuples that differ at the last element (global::i_bif_body_shared ->
%% slt_2 -> erts_cmp_compound).
cmp_lt({A, B}) -> A < B.

%% frameless: bs_create_bin of two binaries (erts_new_bs_put_binary_all, called from the JIT code).
bin_concat({X, Y}) -> <<X/binary, Y/binary>>.

%% frameless: bs_create_bin of a bignum as a Size-bit integer (erts_new_bs_put_integer, called from
%% the JIT code).
bin_int({I, Size}) -> <<I:Size>>.

%% frameless: bs_start_match3 + bs_get_integer2 of a Size-bit integer (erts_bs_get_integer_2, called
%% from the JIT code; OTP 27+ add a bs_match for the tail).
bin_match({Size, Bin}) ->
    <<X:Size, _/binary>> = Bin,
    X.

%% frameless: bs_create_bin of two bignums as Size-bit integer segments, big and little endian, and
%% a third signed (erts_new_bs_put_integer from the JIT code, into a binary allocated by
%% global::bs_init_bits_shared -> beam_jit_bs_init_bits on OTP 26+, erts_bs_init_bits... on 25).
bin_ints({A, B, Size}) -> <<A:Size, B:Size/little, A:Size/signed>>.

%% framed: the same after a local call (bits/1) that keeps A and B in the frame (allocate).
bin_ints_framed({A, B, Size}) ->
    N = bits(Size),
    <<A:N, B:N/little, A:N/signed>>.

bits(N) -> N.

%% frameless: append in a tail-recursive loop, bin_append/2 (bs_create_bin with an append segment:
%% erts_bs_append_checked, or erts_bs_private_append_checked where the compiler knows the binary
%% is unique; bs_append / bs_private_append on OTP 25). Either function is the phase's.
bin_append(N) -> bin_append(N, <<>>).

bin_append(0, B) -> byte_size(B);
bin_append(N, B) -> bin_append(N - 1, <<B/binary, N:32, (N band 255):8>>).

%% framed: append in a body recursion (allocate, call bin_append_framed/1, append to its result).
bin_append_framed(0) -> <<>>;
bin_append_framed(N) ->
    B = bin_append_framed(N - 1),
    <<B/binary, N:32, (N band 255):8>>.

%% frameless: bit-syntax matching of UTF-8 characters in a loop, bin_utf8/2 (bs_match with a utf8
%% segment: global::bs_get_utf8_shared, reached by safe_fragment_call, its return address not
%% aligned, on OTP 26+; bs_get_utf8 / erts_bs_get_utf8 on 25). Either function is the phase's.
bin_utf8(B) -> bin_utf8(B, 0).

bin_utf8(<<_/utf8, R/binary>>, N) -> bin_utf8(R, N + 1);
bin_utf8(<<>>, N) -> N.

%% framed: call_ext binary:split/3, a trapping BIF (erl_bif_binary.c), on 1 000 to 4 000 fields.
bin_split({B, P}) ->
    L = binary:split(B, P, [global]),
    {L}.

%% framed: call_ext erlang:iolist_to_binary/1, a trapping BIF (the result is off the heap).
iol2b(L) ->
    B = iolist_to_binary(L),
    {B}.

%% framed: call_ext unicode:characters_to_binary/1, which is Erlang code (unicode.erl, a try:
%% framed) that calls the BIF unicode:characters_to_binary/2: the BIF's time is
%% unicode:characters_to_binary/1's, the phase's only through it (its frame is counted).
u2b(L) ->
    B = unicode:characters_to_binary(L),
    {B}.

%% framed: call_ext re:run/2 with a compiled pattern on a binary of 3 000 to 40 000 bytes that
%% never matches (erl_bif_re.c: PCRE, trapping after a budget of match loops).
re_run({S, MP}) ->
    R = re:run(S, MP),
    {R}.

%% framed: call_ext erlang:garbage_collect/0, which is Erlang code (erlang.erl) that tail-calls
%% the BIF erts_internal:garbage_collect/1: as for t2b_tail/1, either gc_major/1 or
%% erlang:garbage_collect/0 is correct. The collection copies the phase's own list of 5 000 to
%% 20 000 elements (an argument on the process heap, not a literal).
gc_major(L) ->
    true = erlang:garbage_collect(),
    L.

%% framed: call_ext erts_debug:dirty_cpu/2, a test BIF (beam_debug.c, OTP 25-29) that copies its
%% argument onto the heap 1000 times on a dirty CPU scheduler (erts_call_dirty_bif): the sample
%% is on another thread, the Erlang stack is read from c_p->stop. The only BIF found that is
%% dirty and long on ordinary data: binary_to_term/1 and term_to_binary/1 trap instead.
dirty_copy(L) ->
    R = erts_debug:dirty_cpu(copy, L),
    {R}.

%% frameless: plain Erlang, a tail-recursive loop (time in its own JIT code).
erl_loop(N) -> erl_loop(N, 1).

erl_loop(0, Acc) -> Acc;
erl_loop(N, Acc) -> erl_loop(N - 1, ((Acc * 7 + N) band 16#ffffff) bxor (Acc bsr 3)).

%% framed: plain Erlang, a body recursion (allocate, call erl_rec/1).
erl_rec(0) -> 0;
erl_rec(N) -> 1 + erl_rec(N - 1).

%% ---- the workload -----------------------------------------------------------------------------

%% A phase in the loop: its name, fun, argument, calls per round, calibrated cost of one call.
-record(ph, {name, frames, fn, rep, arg, calls, cost}).

start_worker(Stats, Seed) ->
    Parent = self(),
    Pid = spawn(fun() ->
                        register(xp_class, self()),
                        rand:seed(exsss, Seed),
                        start_clock(self()),
                        Phs = [setup(P) || P <- only(phases())],
                        Zero = {0, [{0, 0} || _ <- Phs]},
                        Start = {erlang:monotonic_time(), cpu_us(all)},
                        write(Stats, Seed, Phs, Zero, Start),
                        Parent ! {self(), started},
                        loop(Stats, Seed, Phs, Zero, Start)
                end),
    receive
        {Pid, started} -> ok
    end.

setup({Name, Alt, Base, MakeArg}) ->
    Weight = 5 + rand:uniform(21) - 1,
    Size = max(2, round(Base * (0.5 + 1.5 * rand:uniform()))),
    Arg = case Name of
              gc_major -> MakeArg(Size); % on the heap: the collection's work
              _ -> persistent_term:put({?MODULE, Name}, MakeArg(Size)),
                   persistent_term:get({?MODULE, Name})
          end,
    Fn = fun ?MODULE:Name/1,
    Cost = cost(Fn, Arg),
    Calls = max(1, round(us(Weight * ?CHUNK_US_PER_WEIGHT) / Cost)),
    #ph{name = Name, frames = [{?MODULE, Name, 1} | Alt], fn = Fn, rep = repeater(Name),
        arg = Arg, calls = Calls, cost = Cost}.

%% The cost of one call in native time units, garbage collections included: N doubled until N
%% calls take 2 ms, then the mean of 5 runs of N.
cost(Fn, Arg) ->
    N = probe(Fn, Arg, 1),
    lists:sum([timed(Fn, Arg, N) || _ <- lists:seq(1, 5)]) / (5 * N).

probe(Fn, Arg, N) ->
    case timed(Fn, Arg, N) >= us(2000) of
        true -> N;
        false -> probe(Fn, Arg, 2 * N)
    end.

timed(Fn, Arg, N) ->
    T0 = erlang:monotonic_time(),
    ok = repeat(Fn, Arg, N),
    erlang:monotonic_time() - T0.

%% framed (the non-tail call of Fn): the caller of every phase, whose return address a frameless
%% phase's native code finds on the Erlang stack. Calibration (cost/2) calls it; the rounds call
%% the phase's own copy, r_NAME/3 (below).
repeat(_, _, 0) -> ok;
repeat(Fn, Arg, N) ->
    _ = Fn(Arg),
    repeat(Fn, Arg, N - 1).

%% One copy of repeat/3 a phase, r_NAME/3, which the rounds call. A collection a phase's heap
%% fragments made necessary runs when the process is next scheduled, where it resumes: between two
%% calls of the phase that is its r_NAME/3, not the phase, and the sample says so
%% ("xp_class:r_NAME/3;[scheduler work for the process]"). The test then knows whose deferred
%% work it is, where a shared repeat/3 left it to every phase at once.
%% It ends the phase's interval itself, {T1, C1}, the CPU clocks first: the call that reads them is
%% the first after the phase, and the collection of the garbage the phase left, which the VM runs
%% after a BIF or NIF call (erts_gc_after_bif_call), comes after it, outside the interval, as its
%% samples are outside the phase's code. With the wall clock read first, that collection ran after
%% the monotonic_time/0 BIF, inside the CPU interval, under r_NAME/3 as [garbage collection]:
%% 33 of big_bits' 40 expected samples in one run, which failed the third-of-expected floor.
%% The first call after the phase must be the NIF's itself: a BIF before it (persistent_term:get/1
%% fetching the tids, ci74) had the collection run inside the interval again, under cpu_us/1
%% (52 samples of map_update's 62 expected). So the repeater is handed {Fn, Clock}, Clock the
%% tids, fetched before the interval (end_clock/0).
-define(REPEATER(R),
        R({_, Clock}, _, 0) -> C1 = end_cpu_us(Clock), {erlang:monotonic_time(), C1};
        R({Fn, _} = FC, Arg, N) -> _ = Fn(Arg), R(FC, Arg, N - 1)).
?REPEATER(r_big_div).
?REPEATER(r_big_rem).
?REPEATER(r_big_mul).
?REPEATER(r_big_mul_tail).
?REPEATER(r_big_addsub).
?REPEATER(r_big_bits).
?REPEATER(r_list_len).
?REPEATER(r_tuple_setel).
?REPEATER(r_hash_framed).
?REPEATER(r_t2b_caller).
?REPEATER(r_b2t_framed).
?REPEATER(r_rev_framed).
?REPEATER(r_map_update).
?REPEATER(r_map_get).
?REPEATER(r_cmp_eq).
?REPEATER(r_cmp_lt).
?REPEATER(r_bin_concat).
?REPEATER(r_bin_int).
?REPEATER(r_bin_match).
?REPEATER(r_bin_ints).
?REPEATER(r_bin_ints_framed).
?REPEATER(r_bin_append).
?REPEATER(r_bin_append_framed).
?REPEATER(r_bin_utf8).
?REPEATER(r_bin_split).
?REPEATER(r_iol2b).
?REPEATER(r_u2b).
?REPEATER(r_re_run).
?REPEATER(r_gc_major).
?REPEATER(r_dirty_copy).
?REPEATER(r_erl_loop).
?REPEATER(r_erl_rec).

repeater(big_div) -> fun r_big_div/3;
repeater(big_rem) -> fun r_big_rem/3;
repeater(big_mul) -> fun r_big_mul/3;
repeater(big_mul_tail) -> fun r_big_mul_tail/3;
repeater(big_addsub) -> fun r_big_addsub/3;
repeater(big_bits) -> fun r_big_bits/3;
repeater(list_len) -> fun r_list_len/3;
repeater(tuple_setel) -> fun r_tuple_setel/3;
repeater(hash_framed) -> fun r_hash_framed/3;
repeater(t2b_caller) -> fun r_t2b_caller/3;
repeater(b2t_framed) -> fun r_b2t_framed/3;
repeater(rev_framed) -> fun r_rev_framed/3;
repeater(map_update) -> fun r_map_update/3;
repeater(map_get) -> fun r_map_get/3;
repeater(cmp_eq) -> fun r_cmp_eq/3;
repeater(cmp_lt) -> fun r_cmp_lt/3;
repeater(bin_concat) -> fun r_bin_concat/3;
repeater(bin_int) -> fun r_bin_int/3;
repeater(bin_match) -> fun r_bin_match/3;
repeater(bin_ints) -> fun r_bin_ints/3;
repeater(bin_ints_framed) -> fun r_bin_ints_framed/3;
repeater(bin_append) -> fun r_bin_append/3;
repeater(bin_append_framed) -> fun r_bin_append_framed/3;
repeater(bin_utf8) -> fun r_bin_utf8/3;
repeater(bin_split) -> fun r_bin_split/3;
repeater(iol2b) -> fun r_iol2b/3;
repeater(u2b) -> fun r_u2b/3;
repeater(re_run) -> fun r_re_run/3;
repeater(gc_major) -> fun r_gc_major/3;
repeater(dirty_copy) -> fun r_dirty_copy/3;
repeater(erl_loop) -> fun r_erl_loop/3;
repeater(erl_rec) -> fun r_erl_rec/3.

loop(Stats, Seed, Phs, {Rounds, Totals}, Start) ->
    Next = {Rounds + 1, run_round(Phs, Totals, erlang:monotonic_time(), 0, [])},
    write(Stats, Seed, Phs, Next, Start),
    loop(Stats, Seed, Phs, Next, Start).

%% Tail-recursive, so every sample's stack is the same few frames: loop/5, run_round/5,
%% r_NAME/3, the phase. Before each phase, outside its interval, a major collection: the phase
%% then starts on an empty young heap and its own collections are minor ones run from its own
%% code (attributed to it), instead of a collection it made necessary running later, delayed to
%% a dirty scheduler while the process is parked between two phases (getrusage sums every
%% thread's time: a few microseconds, which the sampler shows outside the phases).
run_round([], [], _, _, Acc) -> lists:reverse(Acc);
run_round([#ph{fn = Fn, rep = Rep, arg = Arg, calls = Calls} | Ps], [{W, C} | Ts], _, _, Acc) ->
    FC = {Fn, end_clock()},
    %% garbage_collect/1, not /0: gc_major's innermost frame may be erlang:garbage_collect/0.
    true = erlang:garbage_collect(self()),
    T0 = erlang:monotonic_time(),
    C0 = cpu_us(phases),
    {T1, C1} = Rep(FC, Arg, Calls),
    run_round(Ps, Ts, T1, C1, [{W + (T1 - T0), C + (C1 - C0)} | Acc]).

%% The clock. With the NIF, xp_class reads the threads' CPU clocks itself, in one NIF call that
%% allocates nothing on its heap (the tids are a persistent_term, the sum a small integer), so
%% the garbage a phase left is not collected inside the reading. Without it, a process of its
%% own, xp_class_clock, reads their schedstat files: read in xp_class, the first allocation after
%% a phase could collect the garbage the phase left, a collection whose time the truth charges
%% to where the process then stands (the reading), counted inside the phase's interval
%% (map_update alone: 52 % of the CPU measured, 34 % of the wall time and of the samples).
%% xp_class then sends an atom and waits.
start_clock(Owner) ->
    Clock = spawn_link(fun() ->
                               register(xp_class_clock, self()),
                               open_cpu_clocks(),
                               Owner ! {xp_class_clock, ready},
                               clock_loop(Owner)
                       end),
    receive
        {xp_class_clock, ready} -> Clock
    end.

clock_loop(Owner) ->
    receive
        Which -> Owner ! {xp_class_clock, read_cpu_us(Which)}
    end,
    clock_loop(Owner).

%% The clocks of the scheduler threads, named by the VM ("1_scheduler", "1_dirty_cpu_sch",
%% "1_dirty_io_sche" on OTP 25, comm keeping 15 bytes; "erts_sched_1", "erts_dcpus_1",
%% "erts_dios_1" since OTP 26): their tids for the NIF, and their schedstat files, kept open (a
%% pread at 0 reads a fresh copy), for when it is not loaded. phases: the threads a phase runs
%% on; all: every scheduler thread.
open_cpu_clocks() ->
    Task = "/proc/self/task/",
    {ok, Tids} = file:list_dir(Task),
    Named = [{Tid, Comm} || Tid <- Tids,
                            {ok, Comm} <- [file:read_file(Task ++ Tid ++ "/comm")]],
    Open = fun(Tid) ->
                   {ok, Fd} = file:open(Task ++ Tid ++ "/schedstat", [read, raw, binary]),
                   {list_to_integer(Tid), Fd}
           end,
    Has = fun(Comm, Part) -> binary:match(Comm, Part) =/= nomatch end,
    Phases = [Open(T) || {T, C} <- Named, Has(C, [<<"_scheduler">>, <<"_dirty_cpu_sch">>,
                                                  <<"erts_sched_">>, <<"erts_dcpus_">>])],
    All = Phases ++ [Open(T) || {T, C} <- Named, Has(C, [<<"_dirty_io_sch">>, <<"erts_dios_">>])],
    true = length(Phases) >= 2,
    Clock = case xp_defer:nif_loaded() of
                true -> thread_cputime;
                false -> schedstat
            end,
    persistent_term:put({?MODULE, phases_tids}, [Tid || {Tid, _} <- Phases]),
    persistent_term:put({?MODULE, all_tids}, [Tid || {Tid, _} <- All]),
    persistent_term:put({?MODULE, cpu_clock}, Clock),
    put(xp_cpu_clocks, #{phases => Phases, all => All}),
    ok.

%% The summed run time of those threads, in microseconds: with the NIF read here (literal keys:
%% nothing is allocated), otherwise by the clock process.
cpu_us(Which) ->
    case persistent_term:get({?MODULE, cpu_clock}) of
        thread_cputime -> xp_defer:thread_cpu_ns(tids(Which)) div 1000;
        schedstat ->
            xp_class_clock ! Which,
            receive
                {xp_class_clock, Us} -> Us
            end
    end.

%% What a repeater reads the phase's end with: the tids, or schedstat (the clock process).
end_clock() ->
    case persistent_term:get({?MODULE, cpu_clock}) of
        thread_cputime -> {thread_cputime, tids(phases)};
        schedstat -> schedstat
    end.

%% Allocates nothing and calls no BIF before the NIF.
end_cpu_us({thread_cputime, Tids}) -> xp_defer:thread_cpu_ns(Tids) div 1000;
end_cpu_us(schedstat) -> cpu_us(phases).

tids(phases) -> persistent_term:get({?MODULE, phases_tids});
tids(all) -> persistent_term:get({?MODULE, all_tids}).

read_cpu_us(Which) ->
    #{Which := Clocks} = get(xp_cpu_clocks),
    lists:sum([run_ns(Fd) || {_, Fd} <- Clocks]) div 1000.

run_ns(Fd) ->
    {ok, B} = file:pread(Fd, 0, 128),
    [Ns | _] = binary:split(B, <<" ">>),
    binary_to_integer(Ns).

write(Stats, Seed, Phs, {Rounds, Totals}, {Wall0, Cpu0}) ->
    PerPhase = lists:append([phase_kvs(P, T) || {P, T} <- lists:zip(Phs, Totals)]),
    xp_ready:write(Stats, [{pid, pid_to_list(self())},
                           {seed, Seed},
                           {cpu_clock, persistent_term:get({?MODULE, cpu_clock})},
                           {rounds, Rounds},
                           {phases, lists:flatten(lists:join(",", [atom_to_list(P#ph.name)
                                                                   || P <- Phs]))},
                           {total_ns, ns(erlang:monotonic_time() - Wall0)},
                           {total_cpu_us, cpu_us(all) - Cpu0}
                           | PerPhase]).

phase_kvs(#ph{name = Name, frames = Frames, calls = Calls, cost = Cost}, {Wall, Cpu}) ->
    Key = fun(Suffix) -> list_to_atom(atom_to_list(Name) ++ Suffix) end,
    [{Key("_frames"), lists:flatten(lists:join(",", [frame(F) || F <- Frames]))},
     {Key("_ns"), ns(Wall)},
     {Key("_cpu_us"), Cpu},
     {Key("_calls"), Calls},
     {Key("_call_ns"), round(ns(Cost))}].

frame({M, F, A}) -> lists:flatten(io_lib:format("~s:~s/~b", [M, F, A])).

us(Us) -> erlang:convert_time_unit(Us, microsecond, native).

ns(T) when is_float(T) ->
    T * erlang:convert_time_unit(1000000000, native, nanosecond) / 1000000000;
ns(T) ->
    erlang:convert_time_unit(T, native, nanosecond).
