# Restart policies, CrashLoopBackOff, and restarting only the container whose spec changed.
import json
import os

from conftest import NODE, SLEEPER, pod_manifest, wait_for

EXIT0 = ["sh", "-c", "echo run; exit 0"]
EXIT1 = ["sh", "-c", "echo run; exit 1"]


def instances(runtime, pod, name):
    return sorted(runtime.containers_of(pod, name), key=lambda c: c["metadata"]["attempt"])


def restart_count(c):
    return int(c["annotations"]["io.kubernetes.container.restartCount"])


def test_restart_policies(kubelet, runtime):
    for policy in ("Always", "OnFailure", "Never"):
        kubelet.write(f"{policy.lower()}.yaml", pod_manifest(policy.lower(), [("ok", EXIT0), ("bad", EXIT1)],
                                                             restart_policy=policy))
    pod = {p: f"{p.lower()}-{NODE}" for p in ("Always", "OnFailure", "Never")}

    # Always: both restart (the first restart happens after the 10 s back-off at the latest)
    wait_for(lambda: all(any(restart_count(c) >= 1 for c in runtime.containers_of(pod["Always"], n))
                         for n in ("ok", "bad")), 40, interval=0.5, msg="Always: both containers restarted")
    # OnFailure: only the failing one restarts; the successful one stays exited with code 0
    wait_for(lambda: any(restart_count(c) >= 1 for c in runtime.containers_of(pod["OnFailure"], "bad")), 40,
             interval=0.5, msg="OnFailure: failing container restarted")
    ok = runtime.containers_of(pod["OnFailure"], "ok")
    assert len(ok) == 1 and restart_count(ok[0]) == 0
    st = runtime.inspect(ok[0]["id"])
    assert st["state"] == "CONTAINER_EXITED" and st["exitCode"] == 0
    # Never: nothing restarts, both exited with their codes, the sandbox is stopped once all are done
    for name, code in (("ok", 0), ("bad", 1)):
        [c] = runtime.containers_of(pod["Never"], name)
        assert restart_count(c) == 0
        st = wait_for(lambda: (s := runtime.inspect(c["id"]))["state"] == "CONTAINER_EXITED" and s, 20,
                      msg=f"Never: {name} exited")
        assert st["exitCode"] == code
    wait_for(lambda: all(p["state"] == "SANDBOX_NOTREADY" for p in runtime.pods_named(pod["Never"])), 20,
             msg="Never: sandbox stopped once every container finished")
    assert len(runtime.pods_named(pod["Never"])) == 1


def test_crashloop_backoff_grows(kubelet, runtime):
    kubelet.write("crash.yaml", pod_manifest("crash", [("c", ["sh", "-c", "echo attempt; exit 3"])]))
    name = f"crash-{NODE}"
    wait_for(lambda: runtime.containers_of(name, "c"), 30, msg="container created")
    # the runtime keeps only the newest dead instance: take start times from the log files (one per instance)
    uid = runtime.containers_of(name, "c")[0]["labels"]["io.kubernetes.pod.uid"]
    logdir = os.path.join(kubelet.pod_log_dir(name, uid), "c")
    def written(n):
        path = os.path.join(logdir, f"{n}.log")
        return os.path.exists(path) and os.path.getsize(path) > 0

    wait_for(lambda: all(written(n) for n in range(4)), 60, interval=0.5,
             msg="one log file per instance, up to the third restart")

    def started(n):  # the CRI log timestamp of instance n's first line
        line = open(os.path.join(logdir, f"{n}.log")).readline()
        hh, mm, ss = line.split("T")[1].split("Z")[0].split(":")
        return int(hh) * 3600 + int(mm) * 60 + float(ss)

    gaps = [started(i + 1) - started(i) for i in range(3)]
    # upstream: the first restart is immediate, then 10 s, then 20 s (relist and timer granularity add a little)
    assert gaps[0] < 5.0, f"first restart after {gaps[0]:.1f}s"
    assert 9.0 <= gaps[1] <= 14.0, f"first back-off {gaps[1]:.1f}s"
    assert 19.0 <= gaps[2] <= 25.0, f"second back-off {gaps[2]:.1f}s"
    kubelet.wait_log(r"Back-off 10s restarting failed container=c pod=default/crash-testnode")
    kubelet.wait_log(r"Back-off 20s restarting failed container=c pod=default/crash-testnode")
    assert "attempt" in open(os.path.join(logdir, "3.log")).read()


def test_spec_change_with_same_uid_restarts_only_that_container(kubelet, runtime):
    def manifest(cmd_b):
        return f"""\
            apiVersion: v1
            kind: Pod
            metadata:
              name: fixed
              uid: 11111111-2222-3333-4444-555555555555
            spec:
              terminationGracePeriodSeconds: 5
              containers:
              - name: a
                image: docker.io/library/busybox:1.36
                command: {json.dumps(SLEEPER)}
              - name: b
                image: docker.io/library/busybox:1.36
                command: {json.dumps(cmd_b)}
            """

    kubelet.write("fixed.yaml", manifest(SLEEPER))
    name = f"fixed-{NODE}"
    wait_for(lambda: len(runtime.running(name)) == 2, msg="both running")
    [a0] = runtime.running(name, "a")
    [b0] = runtime.running(name, "b")
    [sb0] = runtime.pods_named(name)
    kubelet.write("fixed.yaml", manifest(SLEEPER + ["#changed"]))
    b1 = wait_for(lambda: [c for c in runtime.running(name, "b") if c["id"] != b0["id"]], 30,
                  msg="container b restarted")[0]
    assert restart_count(b1) == 1
    assert runtime.running(name, "a")[0]["id"] == a0["id"], "container a must not be restarted"
    assert [p["id"] for p in runtime.pods_named(name)] == [sb0["id"]], "the sandbox must be kept"
    kubelet.wait_log(r'containerName="b" .*reason="Killing" message="Container b definition changed"')
