#!/bin/bash
# Runs the libFuzzer targets of tests/fuzz for a given time each and prints what they did.
#
#   bash bench/fuzz.sh                    # every target, 600 s each, one at a time
#   bash bench/fuzz.sh 60 manifest watch  # these two, 60 s each
#   JOBS=2 bash bench/fuzz.sh 30          # two targets at a time (tests/run.sh does this, with FUZZ_WORK
#                                         # a fresh directory of its own)
#   bash bench/fuzz.sh replay             # every target over its corpus in the tree once (seeds and the
#                                         # crash-* regression inputs), no fuzzing
#
# Builds build-fuzz/ (CC=clang, -Dfuzz=true, ASan+UBSan) when missing. Each target keeps the inputs it finds
# in $FUZZ_WORK/<target>/corpus (default /var/tmp/ckubelet-fuzz), so later runs start from there; the tree's
# tests/fuzz/corpus/<target>/ is read, never written. A crash leaves its input as
# $FUZZ_WORK/<target>/crash-<sha1> (minimize it with -minimize_crash=1, fix the bug, then add the input to
# tests/fuzz/corpus/<target>/ as crash-<what>), and the start of the sanitizer's report is printed. Each target's
# exit status is left in $FUZZ_WORK/<target>/rc (0: nothing found); the exit status is 1 when any target crashed,
# leaked, ran out of memory or timed out.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
all_targets=(manifest quantity cri_log logs_query request_path kubeconfig watch grpc_frame cri_message kubelet_config)
all_targets+=(ownership pod_tree)
work=${FUZZ_WORK:-/var/tmp/ckubelet-fuzz}
jobs=${JOBS:-1}
seconds=600
replay=0
if [ $# -gt 0 ]; then
        if [ "$1" = replay ]; then replay=1; else seconds=$1; fi
        shift
fi
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

if [ ! -f build-fuzz/build.ninja ]; then
        CC=clang meson setup build-fuzz -Dfuzz=true -Dtests=false -Db_sanitize=address,undefined \
                -Db_lundef=false >/dev/null || { echo "fuzz.sh: meson setup build-fuzz failed" >&2; exit 1; }
fi
ninja -C build-fuzz >/dev/null || { echo "fuzz.sh: building the fuzz targets failed" >&2; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# the first line of a report: ASan/LSan, UBSan, a signal, libFuzzer's own (timeout, out of memory)
report_start='^==[0-9]+==(ERROR|WARNING)|runtime error:|deadly signal|ERROR: libFuzzer'

run_one() { # target -> prints one summary line, returns 0 if nothing was found
        local t=$1 exe="$repo/build-fuzz/tests/fuzz/fuzz-$1" dir="$work/$1" log rc
        mkdir -p "$dir/corpus"
        log="$dir/last.log"
        # the target's own files (tests/fuzz/fuzz.h: fuzz_dir()) go to a TMPDIR of its own, removed after the run
        # even when the target crashed (libFuzzer's _Exit skips the target's own clean-up)
        export TMPDIR="$dir/tmp"
        rm -rf "$TMPDIR" && mkdir -p "$TMPDIR"
        if [ "$replay" = 1 ]; then
                # every input of the tree's corpus once: seeds and regression cases
                "$exe" -runs=0 -close_fd_mask=3 -rss_limit_mb=2048 "$repo/tests/fuzz/corpus/$t" >"$log" 2>&1
                rc=$?
                rm -rf "$TMPDIR"
                printf '%-15s replay %3d inputs  %s\n' "$t" "$(ls "$repo/tests/fuzz/corpus/$t" | wc -l)" \
                        "$([ $rc -eq 0 ] && echo ok || echo "FAILED (see $log)")"
                return $rc
        fi
        # libFuzzer writes what it finds to the first corpus directory only: the tree's is read, never written.
        # timeout: a bound on the whole run should libFuzzer itself hang (-timeout is per input).
        timeout -k 10 $((seconds + 60)) \
                "$exe" -max_total_time="$seconds" -close_fd_mask=3 -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
                -print_final_stats=1 -artifact_prefix="$dir/" "$dir/corpus" "$repo/tests/fuzz/corpus/$t" >"$log" 2>&1
        rc=$?
        rm -rf "$TMPDIR"
        local execs cov corp crashes out
        execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*')
        corp=$(ls "$dir/corpus" | wc -l)
        crashes=$(ls "$dir" | grep -c -E '^(crash|leak|timeout|oom)-' || true)
        out=$(printf '%-15s %5ss  %10s execs  cov %5s  corpus %5s  %s' "$t" "$seconds" "${execs:-?}" "${cov:-?}" \
                "$corp" "$([ $rc -eq 0 ] && echo "ok" || echo "FOUND SOMETHING (exit status $rc, log: $log)")")
        if [ $rc -ne 0 ]; then
                # the inputs it left, and the start of the sanitizer's (or libFuzzer's) report
                local a report
                for a in $(ls "$dir" | grep -E '^(crash|leak|timeout|oom)-'); do
                        out+=$'\n'"  input: $dir/$a"
                done
                report=$(awk -v re="$report_start" '!on && $0 ~ re { on = 1 } on && n < 15 { print "    " $0; n++ }' "$log")
                [ -n "$report" ] || report=$(tail -n 15 "$log" | sed 's/^/    /')
                out+=$'\n'"  report:"$'\n'"$report"
        elif [ "$crashes" -gt 0 ]; then
                out+=$'\n'"  (earlier findings are still in $dir)"
        fi
        printf '%s\n' "$out" # at once: two targets may finish together
        return $rc
}

status=0
ran=()
for t in "${targets[@]}"; do
        if [ ! -x "build-fuzz/tests/fuzz/fuzz-$t" ]; then
                echo "fuzz.sh: no target $t (have: ${all_targets[*]})" >&2
                status=1
                continue
        fi
        mkdir -p "$work/$t"
        rm -f "$work/$t/rc"
        (run_one "$t"; echo $? >"$work/$t/rc") &
        ran+=("$t")
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
done
wait
for t in "${ran[@]}"; do
        [ "$(cat "$work/$t/rc" 2>/dev/null)" = 0 ] || status=1
done
exit $status
