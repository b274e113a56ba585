#!/usr/bin/env bash
# Run every cargo-fuzz target (or those named) for FUZZ_SECONDS each, then print
# executions and crashes per target. The only toolchain here is stable:
# RUSTC_BOOTSTRAP=1 lets it accept the -Z flags cargo-fuzz passes (sanitizer
# coverage, AddressSanitizer). Crash inputs land in fuzz/artifacts/<target>/.
# cargo-fuzz itself is installed (into CARGO_HOME) when `cargo fuzz` is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
    cargo install cargo-fuzz --locked || exit 1
fi
SECONDS_EACH=${FUZZ_SECONDS:-60}
# Extra libFuzzer flags, e.g. FUZZ_FLAGS="-fork=1 -ignore_crashes=1" to go on after a crash.
read -r -a flags <<<"${FUZZ_FLAGS:-}"
LOGS=fuzz/logs
mkdir -p "$LOGS"
python3 fuzz/seeds.py >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo fuzz list)
fi
cargo fuzz build >"$LOGS/build.log" 2>&1 || { tail -30 "$LOGS/build.log"; exit 1; }
status=0
summary=()
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t"
    # Regression inputs (once crashes, now fixed) are replayed first, as seeds.
    extra=()
    [ -d "fuzz/regressions/$t" ] && extra+=("fuzz/regressions/$t")
    # -timeout: a hang's bound. A structured plan may build a stream of tens of
    # MiB, which AddressSanitizer on a shared 2-core machine reads in 15 s
    # (half a second without it): a 10 s bound reported such plans as hangs.
    cargo fuzz run "$t" "fuzz/corpus/$t" "${extra[@]}" -- \
        -max_total_time="$SECONDS_EACH" -timeout=60 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 "${flags[@]}" >"$LOGS/$t.log" 2>&1
    rc=$?
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOGS/$t.log" | grep -o '[0-9]*$' | tail -1)
    # (fork mode prints no final stats: its last "#N" progress line counts them)
    [ -z "$runs" ] && runs=$(grep -o '^#[0-9]*' "$LOGS/$t.log" | tr -d '#' | tail -1)
    crashes=$(ls "fuzz/artifacts/$t" 2>/dev/null | wc -l)
    summary+=("$(printf '%-28s rc=%-3s executions=%-10s artifacts=%s' "$t" "$rc" "${runs:-?}" "$crashes")")
    [ "$rc" -ne 0 ] && status=1
done
printf '%s\n' "${summary[@]}" | tee "$LOGS/summary.txt"
exit $status
