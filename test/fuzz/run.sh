#!/bin/sh
# ctest's fuzz.NAME: run one fuzz target for a fixed budget over a copy of its checked-in corpus
# (libFuzzer adds what it finds to the corpus directory it is given; the checked-in one stays
# as it is). Exit 77 (skipped) when the target was not built (XP_FUZZ off: no clang).
# Usage: run.sh BINARY CORPUS_DIR WORK_DIR
bin=$1 corpus=$2 work=$3
if [ ! -x "$bin" ]; then
	echo "fuzz: $bin not built (XP_FUZZ is off, or clang cannot link -fsanitize=fuzzer)"
	exit 77
fi
rm -rf "$work" && mkdir -p "$work/corpus" "$work/artifacts" || exit 1
cp "$corpus"/* "$work/corpus/" || exit 1
exec "$bin" -max_total_time="${XP_FUZZ_SECONDS:-8}" -rss_limit_mb=1024 \
	-artifact_prefix="$work/artifacts/" "$work/corpus"
