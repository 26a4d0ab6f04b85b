# Crash-only behaviour: kill -9 at any moment then restart converges without duplicates or restarts;
# SIGTERM leaves pods running; a containerd restart is survived.
import time

import pytest

from conftest import NODE, SLEEPER, pod_manifest, wait_for


def snapshot(runtime):
    """Sandbox ids, container ids and restart counts of everything in the runtime."""
    pods = sorted(p["id"] for p in runtime.pods())
    ctrs = sorted((c["id"], c["annotations"].get("io.kubernetes.container.restartCount")) for c in runtime.containers())
    return pods, ctrs


def assert_one_of_each(runtime, names, interrupted_start_ok=False):
    """One sandbox and one running container per pod. interrupted_start_ok: the kill may have landed while
    StartContainer was in flight; containerd then aborts the start (the caller's context is gone), the
    container ends EXITED (and stays in containerd's "starting" state, so it cannot be removed yet) and the
    restart policy legitimately starts the next attempt. Kills in a row can interrupt several attempts of one pod
    (churn95 in test_kubelet_kill9_at_random_moments_during_churn had attempts 0 and 1 interrupted, 2 running): the
    GC keeps the newest dead one (MaxPerPodContainer), which must be the attempt right before the running one.
    Nothing else may be duplicated."""
    for n in names:
        pods = runtime.pods_named(n)
        assert len(pods) == 1, f"{n}: {len(pods)} sandboxes"
        ctrs = runtime.containers_of(n)
        running = [c for c in ctrs if c["state"] == "CONTAINER_RUNNING"]
        assert len(running) == 1, f"{n}: {ctrs}"
        others = [c for c in ctrs if c is not running[0]]
        if interrupted_start_ok and others:
            assert len(others) == 1 and others[0]["state"] == "CONTAINER_EXITED" and \
                others[0]["metadata"]["attempt"] == running[0]["metadata"]["attempt"] - 1, f"{n}: {ctrs}"
        else:
            assert not others, f"{n}: {ctrs}"


def test_kill9_in_steady_state_changes_nothing(kubelet, runtime):
    for n in ("p1", "p2", "p3"):
        kubelet.write(f"{n}.yaml", pod_manifest(n, [("c", SLEEPER)]))
    names = [f"{n}-{NODE}" for n in ("p1", "p2", "p3")]
    wait_for(lambda: all(runtime.running(n) for n in names), msg="pods running")
    before = snapshot(runtime)
    for _ in range(3):
        kubelet.kill9()
        kubelet.start()
        kubelet.wait_log(r"runtime listed: 3 sandboxes \(3 ready\), 3 containers \(3 running\)(?![\s\S]*=====)",
                         msg="the restarted kubelet listed the runtime")
        time.sleep(1.5)  # a pass over every pod after the first relist
        assert snapshot(runtime) == before, "a kill -9 and restart changed the runtime"


@pytest.mark.parametrize("delay_ms", [0, 50, 100, 150, 200, 250, 400])
def test_kill9_right_after_a_new_manifest(kubelet, runtime, delay_ms):
    kubelet.write("base.yaml", pod_manifest("base", [("c", SLEEPER)]))
    wait_for(lambda: runtime.running(f"base-{NODE}"), msg="base pod running")
    kubelet.write("new.yaml", pod_manifest("new", [("c", SLEEPER)]))
    time.sleep(delay_ms / 1000)
    kubelet.kill9()
    kubelet.start()
    names = [f"base-{NODE}", f"new-{NODE}"]
    wait_for(lambda: all(runtime.running(n) for n in names), msg="both pods running after the restart")
    time.sleep(1.5)  # anything duplicated would show up now
    assert_one_of_each(runtime, [f"base-{NODE}"])
    assert_one_of_each(runtime, [f"new-{NODE}"], interrupted_start_ok=True)
    [base] = runtime.containers_of(f"base-{NODE}")
    assert base["annotations"]["io.kubernetes.container.restartCount"] == "0"


@pytest.mark.parametrize("delay_ms", [0, 100, 300])
def test_kill9_right_after_removing_a_manifest(kubelet, runtime, delay_ms):
    kubelet.write("gone.yaml", pod_manifest("gone", [("c", SLEEPER)], grace=3))
    kubelet.write("stay.yaml", pod_manifest("stay", [("c", SLEEPER)]))
    wait_for(lambda: runtime.running(f"gone-{NODE}") and runtime.running(f"stay-{NODE}"), msg="pods running")
    [stay] = runtime.running(f"stay-{NODE}")
    kubelet.remove("gone.yaml")
    time.sleep(delay_ms / 1000)
    kubelet.kill9()
    kubelet.start()
    wait_for(lambda: not runtime.pods_named(f"gone-{NODE}") and not runtime.containers_of(f"gone-{NODE}"), 30,
             msg="the removed pod cleaned up after the restart")
    assert [c["id"] for c in runtime.running(f"stay-{NODE}")] == [stay["id"]]


def test_sigterm_leaves_pods_running(kubelet, runtime):
    kubelet.write("keep.yaml", pod_manifest("keep", [("c", SLEEPER)]))
    wait_for(lambda: runtime.running(f"keep-{NODE}"), msg="pod running")
    before = snapshot(runtime)
    t0 = time.monotonic()
    assert kubelet.term() == 0
    assert time.monotonic() - t0 < 5
    time.sleep(1)
    assert snapshot(runtime) == before
    assert runtime.running(f"keep-{NODE}")
    # and a new kubelet adopts them as they are
    kubelet.start()
    kubelet.wait_log(r"runtime listed: 1 sandboxes \(1 ready\), 1 containers \(1 running\)")
    time.sleep(1.5)
    assert snapshot(runtime) == before


def test_containerd_restart_is_survived(kubelet, runtime):
    kubelet.write("a.yaml", pod_manifest("a", [("c", SLEEPER)]))
    wait_for(lambda: runtime.running(f"a-{NODE}"), msg="pod a running")
    before = snapshot(runtime)
    runtime.kill_daemon()
    try:
        kubelet.wait_log(r"container runtime is down", 10)
        # a manifest written while the runtime is down is run once it is back
        kubelet.write("b.yaml", pod_manifest("b", [("c", SLEEPER)]))
        time.sleep(1)
        assert kubelet.alive()
    finally:
        runtime.start()
    kubelet.wait_log(r"container runtime is up again", 20)
    wait_for(lambda: runtime.running(f"b-{NODE}"), 30, msg="pod b running after the runtime came back")
    time.sleep(1.5)
    assert_one_of_each(runtime, [f"a-{NODE}", f"b-{NODE}"])
    pods, ctrs = snapshot(runtime)
    assert set(before[0]) <= set(pods) and set(before[1]) <= set(ctrs), "pod a was disturbed"


def test_never_started_container_is_removed_before_a_new_one(kubelet, runtime):
    """What a kubelet killed between CreateContainer and StartContainer leaves behind: a CREATED container
    (whose start the runtime might still carry out). It must be removed before a new instance is made."""
    kubelet.write("half.yaml", pod_manifest("half", [("c", SLEEPER)]))
    name = f"half-{NODE}"
    [c] = wait_for(lambda: runtime.running(name), msg="pod running")
    uid = c["labels"]["io.kubernetes.pod.uid"]
    kubelet.kill9()
    runtime.crictl("stop", c["id"], "--timeout", "0")
    runtime.crictl("rm", c["id"])
    created = runtime.crictl("create", "--pod", c["podSandboxId"], "--name", "c", "--image",
                             "docker.io/library/busybox:1.36", "--pod-name", name, "--namespace", "default",
                             "--uid", uid, "--", "sleep", "3600").stdout.strip()
    assert runtime.inspect(created)["state"] == "CONTAINER_CREATED"
    kubelet.start()
    [new] = wait_for(lambda: runtime.running(name), 30, msg="a new instance running")
    assert new["id"] != created
    assert [x["id"] for x in runtime.containers_of(name)] == [new["id"]], "the never-started one was not removed"
    kubelet.wait_log(r'containerID="' + created[:12] + r'" .*reason="Created"')
