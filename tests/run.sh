#!/bin/bash
# The whole test suite, on a fresh Debian 12 machine as root:
#   1. install the Debian packages (scripts/install-deps.sh --test: what running and testing need)
#   2. check that no two src/ folders include each other and that no pod sync pass reaches struct kubelet
#      (scripts/check-include-cycles.py): one test; and that
#      every timer in src/ is armed through the loop's timer seam (scripts/check-timer-seam.py): one test; and that
#      the pod sync pass's phase table agrees with pod_sync.h and docs/design.md (scripts/check-phase-table.py): one test
#   3. check the format of the C sources against .clang-format (clang-format --dry-run --Werror): one test
#   4. build (build/) and run the unit tests
#   5. build with ASan+UBSan (build-asan/) and run the unit tests again
#   6. the valgrind leak check (tests/valgrind.py): a smoke run of the plain ckubelet (build/) under memcheck on a
#      private containerd, failed on any memory error, definite leak or fd left open at exit: one test
#   7. build the libFuzzer targets with clang (build-fuzz/) and run each for 30 s, two at a time (bench/fuzz.sh):
#      one test per target, failed when it found a crash, leak, timeout or out-of-memory
#   8. run the end-to-end tests (tests/e2e, pytest) against a private containerd, with the sanitized ckubelet
#   9. run the end-to-end tests marked `runtime` again on containerd 2.1.9 with crun (scripts/build-runtime.sh)
#  10. the VM tier (tests/vm): a Debian trixie guest under QEMU with systemd as PID 1 and cgroup v2 only, ckubelet's
#      Debian package installed and run as ckubelet.service (the image built once by scripts/build-vm-image.sh),
#      at the end joining the tests' v1.37 control plane on the host with a bootstrap token
# The last line is "N passed, N failed" (", N skipped" when any were skipped), summed over all stages.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
results=$(mktemp -d /var/tmp/ckubelet-results-XXXXXX)
passed=0 failed=0 skipped=0
stage_failed=0

note() { printf '\n==== %s\n' "$*"; }

count_meson() { # builddir
        local log="$1/meson-logs/testlog.json"
        [ -f "$log" ] || { failed=$((failed + 1)); return; }
        local p f s
        p=$(grep -c '"result": "OK"' "$log" || true)
        f=$(grep -c -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
        s=$(grep -c '"result": "SKIP"' "$log" || true)
        passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

count_junit() { # xml
        if [ ! -f "$1" ]; then failed=$((failed + 1)); return; fi
        read -r p f s < <(/usr/bin/python3 - "$1" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
t = f = s = 0
for su in suites:
    t += int(su.get("tests", 0)); f += int(su.get("failures", 0)) + int(su.get("errors", 0)); s += int(su.get("skipped", 0))
print(t - f - s, f, s)
PY
)
        passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

k8s_build=
finish() {
        if [ -n "$k8s_build" ] && kill -0 "$k8s_build" 2>/dev/null; then
                kill -- -"$k8s_build" 2>/dev/null
                wait "$k8s_build" 2>/dev/null
        fi
        rm -rf "$results"
        local line="$passed passed, $failed failed"
        [ "$skipped" -gt 0 ] && line="$line, $skipped skipped"
        echo
        echo "$line"
        if [ "$failed" -gt 0 ] || [ "$stage_failed" -gt 0 ]; then exit 1; fi
        exit 0
}

note "installing dependencies"
if ! bash scripts/install-deps.sh --test; then
        echo "tests/run.sh: installing dependencies failed" >&2
        failed=$((failed + 1)); stage_failed=1; finish
fi

# The control plane of the cluster tests (CKUBELET_K8S_VERSION: v1.37.2 from the tests' Go module scripts/k8s by
# default, v1.20.2 from Debian's source package on demand; cached outside the checkout) builds in the background
# meanwhile; the e2e tests that need it run last, and their fixture waits for this build
# (scripts/build-kubernetes.sh holds a lock while it builds).
note "building the Kubernetes control plane in the background (log: $results/build-kubernetes.log)"
setsid env CKUBELET_K8S_E2E_NODE=1 bash scripts/build-kubernetes.sh >"$results/build-kubernetes.log" 2>&1 &
k8s_build=$!  # its own process group: an early finish stops the whole build

# a source check of scripts/: one test each
source_check() { # title script failure
        note "$1"
        if python3 "scripts/$2"; then
                passed=$((passed + 1))
        else
                echo "tests/run.sh: $3 (see above)" >&2
                failed=$((failed + 1))
        fi
}
source_check "include cycles between src/ folders" check-include-cycles.py "src/ folders include each other"
source_check "timers armed through the loop's timer seam (basic/timer.h)" check-timer-seam.py \
        "a timer in src/ is armed outside the timer seam"
source_check "the pod sync pass's phases (pod_sync.c's table, pod_sync.h, docs/design.md)" check-phase-table.py \
        "the pod sync phase table and its descriptions disagree"

note "format of the C sources (.clang-format)"
if find src tests/unit tools -name '*.[ch]' -print0 | sort -z | xargs -0 clang-format --dry-run --Werror; then
        passed=$((passed + 1))
else
        echo "tests/run.sh: clang-format would change the files above (run: clang-format -i FILE)" >&2
        failed=$((failed + 1))
fi

note "build"
if [ ! -f build/build.ninja ]; then meson setup build -Dtests=true >/dev/null || true; fi
if ! ninja -C build; then
        echo "tests/run.sh: build failed" >&2
        failed=$((failed + 1)); stage_failed=1; finish
fi

note "unit tests"
meson test -C build --suite unit --print-errorlogs || true
count_meson build

note "sanitized build (ASan + UBSan) and unit tests"
if [ ! -f build-asan/build.ninja ]; then
        meson setup build-asan -Dtests=true -Db_sanitize=address,undefined -Db_lundef=false >/dev/null || true
fi
if ninja -C build-asan; then
        UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 meson test -C build-asan --suite unit --print-errorlogs || true
        count_meson build-asan
else
        echo "tests/run.sh: sanitized build failed" >&2
        failed=$((failed + 1))
fi

note "valgrind leak check: a smoke run of build/ckubelet under memcheck (tests/valgrind.py)"
if CKUBELET_BUILD="$repo/build" /usr/bin/python3 tests/valgrind.py; then
        passed=$((passed + 1))
else
        echo "tests/run.sh: the valgrind leak check failed (see above)" >&2
        failed=$((failed + 1))
fi

# Each target starts from its corpus in the tree (seeds and crash-* regression inputs, read only) and keeps what it
# finds in a fresh directory, removed afterwards unless a target found something (its input is kept there).
fuzz_stage() {
        local work rc d p=0 f=0
        work=$(mktemp -d /var/tmp/ckubelet-fuzz-XXXXXX)
        FUZZ_WORK="$work" JOBS=2 bash bench/fuzz.sh 30
        rc=$?
        for d in "$work"/*/; do
                [ -d "$d" ] || continue
                if [ "$(cat "$d/rc" 2>/dev/null)" = 0 ]; then p=$((p + 1)); else f=$((f + 1)); fi
        done
        if [ $f -gt 0 ]; then
                echo "tests/run.sh: $f fuzz target(s) found something; their inputs and logs are in $work" >&2
        else
                rm -rf "$work"
                if [ $rc -ne 0 ]; then
                        echo "tests/run.sh: bench/fuzz.sh failed (see above)" >&2
                        f=1
                fi
        fi
        passed=$((passed + p)) failed=$((failed + f))
}

note "fuzzing: every libFuzzer target for 30 s, two at a time (clang, build-fuzz/)"
fuzz_stage

note "end-to-end tests (private containerd, sanitized ckubelet)"
e2e_build=build
[ -x build-asan/ckubelet ] && e2e_build=build-asan
CKUBELET_BUILD="$repo/$e2e_build" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        /usr/bin/python3 -m pytest tests/e2e -p no:cacheprovider -q -rfE --junitxml="$results/e2e.xml" || true
count_junit "$results/e2e.xml"
# The second runtime: containerd 2.1.9 (Debian sid's) with crun 1.21 (built from trixie's source) by
# scripts/build-runtime.sh, cached outside the checkout; the tests marked `runtime` (those whose outcome depends on
# the runtime's version) run there too, after the whole suite ran on Debian 12's containerd 1.6.20 with runc.
note "end-to-end tests marked runtime on containerd 2.1.9 with crun (scripts/build-runtime.sh)"
if rt_bins=$(bash scripts/build-runtime.sh 2>"$results/build-runtime.log"); then
        CKUBELET_CONTAINERD_BIN=$(sed -n 1p <<<"$rt_bins") CKUBELET_OCI_RUNTIME="$(sed -n 2p <<<"$rt_bins")/crun" \
        CKUBELET_BUILD="$repo/$e2e_build" ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
                /usr/bin/python3 -m pytest tests/e2e -m runtime -p no:cacheprovider -q -rfE \
                --junitxml="$results/e2e-containerd2.xml" || true
        count_junit "$results/e2e-containerd2.xml"
else
        echo "tests/run.sh: scripts/build-runtime.sh failed:" >&2
        tail -n 30 "$results/build-runtime.log" >&2
        failed=$((failed + 1))
fi

# The VM tier: one boot of a Debian trixie guest (systemd as PID 1, the unified cgroup hierarchy only) under QEMU's
# software emulation, every check in that boot; the image is cached in /var/cache/ckubelet-vm.
note "the VM tier: ckubelet's package as a systemd service on a pure cgroup v2 guest (tests/vm, QEMU)"
CKUBELET_BUILD="$repo/build" timeout 1800 /usr/bin/python3 -m pytest tests/vm -p no:cacheprovider -q -rfE \
        --junitxml="$results/vm.xml" || true
count_junit "$results/vm.xml"

if ! wait "$k8s_build"; then
        echo "tests/run.sh: building the control plane failed:" >&2
        tail -n 30 "$results/build-kubernetes.log" >&2
fi
k8s_build=

# Upstream's node conformance specs (e2e_node.test v1.37.2) against ckubelet: the fixed CI subset of
# tests/conformance/ci-specs.txt, about 3 minutes; each spec counts as one test. The whole tier, on both kubelets,
# is `tests/conformance.sh` (docs/testing.md).
note "node conformance v1.37.2, the CI subset (tests/conformance.sh --ci)"
CKUBELET_BUILD="$repo/build" bash tests/conformance.sh --ci --out "$results/conformance" || true
if [ -f "$results/conformance/results.json" ]; then
        read -r p f < <(/usr/bin/python3 - "$results/conformance/results.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"].get("ckubelet", {})
ok = sum(1 for v in r.values() if v["state"] == "passed")
print(ok, len(d["specs"]) - ok)
PY
)
        passed=$((passed + p)) failed=$((failed + f))
        [ -f "$results/conformance/summary.txt" ] && cat "$results/conformance/summary.txt"
else
        echo "tests/run.sh: the conformance tier did not run (see above)" >&2
        failed=$((failed + 1))
fi

finish
