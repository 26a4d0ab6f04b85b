# Bad manifests: each gives a clear error naming the file, the field and the reason, logged once per change,
# and disturbs no other pod.
import re
import time

import pytest

from conftest import BUSYBOX, NODE, SLEEPER, pod_manifest, wait_for


def pod(containers_yaml, name="bad", extra_meta="", extra_spec="", head="apiVersion: v1\nkind: Pod\n"):
    return (f"{head}metadata:\n  name: {name}\n{extra_meta}spec:\n{extra_spec}  containers:\n" + containers_yaml)


C = f"  - name: c\n    image: {BUSYBOX}\n"

CASES = {
    "missing-name": ("apiVersion: v1\nkind: Pod\nmetadata: {}\nspec:\n  containers:\n" + C,
                     r"metadata\.name: Required value"),
    "uppercase-name": (pod(C, name="Bad"), r'metadata\.name: Invalid value: "Bad-testnode": a lowercase RFC 1123 subdomain'),
    "no-containers": ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers: []\n",
                      r"spec\.containers: Required value"),
    "duplicate-container": (pod(C + C), r'spec\.containers\[1\]\.name: Duplicate value: "c"'),
    "missing-image": (pod("  - name: c\n"), r"spec\.containers\[0\]\.image: Required value"),
    "port-zero": (pod(C + "    ports: [{containerPort: 0}]\n"),
                  r"spec\.containers\[0\]\.ports\[0\]\.containerPort: (Required value|Invalid value: 0)"),
    "port-too-big": (pod(C + "    ports: [{containerPort: 70000}]\n"),
                     r"spec\.containers\[0\]\.ports\[0\]\.containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"),
    "bad-port-name": (pod(C + "    ports: [{containerPort: 80, name: Web_Port}]\n"),
                      r'spec\.containers\[0\]\.ports\[0\]\.name: Invalid value: "Web_Port"'),
    "duplicate-port-name": (pod(C + "    ports: [{containerPort: 80, name: web}, {containerPort: 81, name: web}]\n"),
                            r'spec\.containers\[0\]\.ports\[1\]\.name: Duplicate value: "web"'),
    "bad-quantity": (pod(C + "    resources: {limits: {memory: 1x}}\n"),
                     r"spec\.containers\[0\]\.resources\.limits\[memory\]: Invalid value: \"1x\": quantities must match"),
    "request-above-limit": (pod(C + "    resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}\n"),
                            r"spec\.containers\[0\]\.resources\.requests(\[cpu\])?: Invalid value: \"2\": must be less than or equal to cpu limit"),
    "bad-restart-policy": (pod(C, extra_spec="  restartPolicy: Sometimes\n"),
                           r'spec\.restartPolicy: Unsupported value: "Sometimes"'),
    "negative-grace": (pod(C, extra_spec="  terminationGracePeriodSeconds: -5\n"),
                       r"spec\.terminationGracePeriodSeconds: Invalid value: -5"),
    "yaml-syntax": ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [unclosed\n", r"line \d+:\d+"),
    "wrong-kind": (pod(C, head="apiVersion: v1\nkind: Deployment\n"), r"Deployment"),
    "wrong-api-version": (pod(C, head="apiVersion: v2\nkind: Pod\n"), r"v2"),
    "bad-env-name": (pod(C + "    env: [{name: 'A=B', value: x}]\n"),
                     r'spec\.containers\[0\]\.env\[0\]\.name: Invalid value: "A=B"'),
    "bad-pull-policy": (pod(C + "    imagePullPolicy: Sometimes\n"),
                        r'spec\.containers\[0\]\.imagePullPolicy: Unsupported value: "Sometimes"'),
    "list-for-string": (pod("  - name: [c]\n    image: x\n"), r"spec\.containers\[0\]\.name: Invalid value"),
    "duplicate-pod-name": (pod(C) + "---\n" + pod(C), r"duplicate pod name|Duplicate"),
}


@pytest.fixture
def good_pod(kubelet, runtime):
    kubelet.write("good.yaml", pod_manifest("good", [("c", SLEEPER)]))
    [c] = wait_for(lambda: runtime.running(f"good-{NODE}"), msg="good pod running")
    return c


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_manifest_is_reported_and_isolated(kubelet, runtime, good_pod, case):
    text, field_rx = CASES[case]
    path = kubelet.write(f"{case}.yaml", text)
    line_rx = r'Could not process manifest file "' + re.escape(path) + r'": .*' + field_rx
    kubelet.wait_log(line_rx, 10, msg=f"an error naming {path} and the field")
    time.sleep(1.2)  # a relist and a sync pass: nothing may change
    assert [c["id"] for c in runtime.running(f"good-{NODE}")] == [good_pod["id"]]
    assert runtime.running(f"good-{NODE}")[0]["annotations"]["io.kubernetes.container.restartCount"] == "0"
    assert len(runtime.pods()) == 1, "a pod was created for a bad manifest"


def test_bad_file_logged_once_per_change(kubelet, runtime, good_pod):
    text, _ = CASES["missing-image"]
    path = kubelet.write("once.yaml", text)
    rx = re.compile(r'Could not process manifest file "' + re.escape(path))
    wait_for(lambda: len(rx.findall(kubelet.log())) == 1, 10, msg="the error logged")
    kubelet.write("once.yaml", text)  # same content again: not logged again
    time.sleep(1.5)
    assert len(rx.findall(kubelet.log())) == 1
    kubelet.write("once.yaml", CASES["port-too-big"][0])  # a new mistake: logged
    wait_for(lambda: len(rx.findall(kubelet.log())) == 2, 10, msg="the changed error logged")


def test_oversized_file_rejected(kubelet, runtime, good_pod):
    path = kubelet.write("huge.yaml", pod(C) + "# " + "x" * (11 * 1024 * 1024) + "\n")
    kubelet.wait_log(r'"' + re.escape(path) + r'": file is larger than 10485760 bytes', 10)
    assert len(runtime.pods()) == 1


def test_good_file_turned_bad_keeps_its_pod(kubelet, runtime, good_pod):
    kubelet.write("good.yaml", pod_manifest("good", [("c", SLEEPER)]).replace("image:", "imagex:"))
    kubelet.wait_log(r'Could not process manifest file ".*good\.yaml"', 10)
    time.sleep(1.5)
    assert [c["id"] for c in runtime.running(f"good-{NODE}")] == [good_pod["id"]], \
        "the last good version of the file must keep running"
