"""Container environment on containerd: literal values, $(VAR) expansion (also in the command), fieldRef and
resourceFieldRef values seen by the process, a missing ConfigMap making the container wait with
CreateContainerConfigError (standalone: no API server, so every ConfigMap/Secret is "not found"),
/etc/resolv.conf for each dnsPolicy and dnsConfig, and variables from a file an init container wrote (fileKeyRef)."""
import json
import os

from conftest import BUSYBOX, NODE, wait_for
from standalone import start, wait_output

SLEEP = "trap 'exit 0' TERM; while true; do sleep 0.2; done"


def env_of(text):
    return dict(l.split("=", 1) for l in text.splitlines() if "=" in l and not l.startswith("CMD"))


def test_values_expansion_and_downward_api(kubelet_factory, runtime):
    k, _ = start(kubelet_factory)
    k.write("envpod.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata:
          name: envpod
          labels: {{app: envtest}}
          annotations: {{team: blue}}
        spec:
          containers:
          - name: app
            image: {BUSYBOX}
            command: ["sh", "-c", "echo 'CMD:$(GREETING):$$(NOT_EXPANDED):$(UNDEFINED_VAR)'; env | sort; echo END; {SLEEP}"]
            resources:
              limits: {{cpu: 250m, memory: 64Mi}}
            env:
            - {{name: GREETING, value: hello}}
            - {{name: COMPOSED, value: "$(GREETING)-world-$$(GREETING)-$(LATER)"}}
            - {{name: LATER, value: later}}
            - name: MY_POD_NAME
              valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}
            - name: MY_POD_NAMESPACE
              valueFrom: {{fieldRef: {{fieldPath: metadata.namespace}}}}
            - name: MY_POD_UID
              valueFrom: {{fieldRef: {{fieldPath: metadata.uid}}}}
            - name: MY_NODE_NAME
              valueFrom: {{fieldRef: {{fieldPath: spec.nodeName}}}}
            - name: MY_POD_IP
              valueFrom: {{fieldRef: {{fieldPath: status.podIP}}}}
            - name: MY_HOST_IP
              valueFrom: {{fieldRef: {{fieldPath: status.hostIP}}}}
            - name: MY_APP
              valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['app']"}}}}
            - name: MY_TEAM
              valueFrom: {{fieldRef: {{fieldPath: "metadata.annotations['team']"}}}}
            - name: CPU_MILLIS
              valueFrom: {{resourceFieldRef: {{resource: limits.cpu, divisor: 1m}}}}
            - name: MEM_MI
              valueFrom: {{resourceFieldRef: {{resource: limits.memory, divisor: 1Mi}}}}
            - name: OPTIONAL_CM
              valueFrom: {{configMapKeyRef: {{name: nosuch, key: k, optional: true}}}}
        """)
    pod = f"envpod-{NODE}"
    text = wait_output(k, runtime, pod, "app", "END")
    assert "CMD:hello:$(NOT_EXPANDED):$(UNDEFINED_VAR)" in text
    env = env_of(text)
    [sb] = runtime.pods_named(pod)
    ip = runtime.inspectp(sb["id"])["network"]["ip"]
    assert env["GREETING"] == "hello"
    assert env["COMPOSED"] == "hello-world-$(GREETING)-$(LATER)"
    assert env["LATER"] == "later"
    assert env["MY_POD_NAME"] == pod
    assert env["MY_POD_NAMESPACE"] == "default"
    assert env["MY_POD_UID"] == sb["metadata"]["uid"]
    assert env["MY_NODE_NAME"] == NODE
    assert env["MY_POD_IP"] == ip
    assert env["MY_HOST_IP"] and env["MY_HOST_IP"] != ip
    assert env["MY_APP"] == "envtest"
    assert env["MY_TEAM"] == "blue"
    assert env["CPU_MILLIS"] == "250"
    assert env["MEM_MI"] == "64"
    assert "OPTIONAL_CM" not in env


def test_missing_configmap_is_a_config_error(kubelet_factory, runtime):
    k, api = start(kubelet_factory)
    k.write("cmpod.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: cmpod}}
        spec:
          containers:
          - name: needs-cm
            image: {BUSYBOX}
            command: ["sh", "-c", "{SLEEP}"]
            env:
            - name: FROM_CM
              valueFrom: {{configMapKeyRef: {{name: app-config, key: level}}}}
          - name: fine
            image: {BUSYBOX}
            command: ["sh", "-c", "{SLEEP}"]
            envFrom:
            - secretRef: {{name: optional-secret, optional: true}}
        """)
    pod = f"cmpod-{NODE}"

    def waiting():
        for p in api.json("/pods")["items"]:
            if p["metadata"]["name"] != pod:
                continue
            for c in p.get("status", {}).get("containerStatuses", []):
                w = c.get("state", {}).get("waiting")
                if c["name"] == "needs-cm" and w and w.get("reason") == "CreateContainerConfigError":
                    return w
        return None

    w = wait_for(waiting, 30, msg="needs-cm waiting with CreateContainerConfigError")
    assert w["message"] == 'configmap "app-config" not found'
    wait_for(lambda: runtime.running(pod, "fine"), 30, msg="the other container runs")
    assert not runtime.containers_of(pod, "needs-cm")
    k.wait_log(r'CreateContainerConfigError: configmap "app-config" not found', 10)


def test_dns_policies(kubelet_factory, runtime, tmp_path):
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 10.1.2.3\nsearch host.example\noptions timeout:2\n")
    k, _ = start(kubelet_factory, "--cluster-dns", "10.96.0.10", "--cluster-domain", "cluster.local",
                 "--resolv-conf", str(resolv))
    pods = {
        "dns-cluster": "",
        "dns-default": "dnsPolicy: Default",
        "dns-hostnet": "hostNetwork: true",  # ClusterFirst on the host network: Default
        "dns-hostnet-cluster": "{hostNetwork: true, dnsPolicy: ClusterFirstWithHostNet}",
        "dns-none": "{dnsPolicy: None, dnsConfig: {nameservers: [1.1.1.1], searches: [my.example], "
                    "options: [{name: ndots, value: '2'}, {name: edns0}]}}",
        "dns-merged": "{dnsConfig: {nameservers: [8.8.8.8], searches: [extra.example], options: [{name: ndots, value: '1'}]}}",
    }
    for name, extra in pods.items():
        k.write(f"{name}.yaml", f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n" + dns_spec(extra) +
                f"  containers:\n  - name: c\n    image: {BUSYBOX}\n"
                f"    command: [sh, -c, \"cat /etc/resolv.conf; echo END; {SLEEP}\"]\n")

    def conf(name):
        text = wait_output(k, runtime, f"{name}-{NODE}", "c", "END")
        servers = [l.split()[1] for l in text.splitlines() if l.startswith("nameserver")]
        search = next((l.split()[1:] for l in text.splitlines() if l.startswith("search")), [])
        options = next((l.split()[1:] for l in text.splitlines() if l.startswith("options")), [])
        return servers, search, options

    assert conf("dns-cluster") == (["10.96.0.10"],
                                   ["default.svc.cluster.local", "svc.cluster.local", "cluster.local", "host.example"],
                                   ["ndots:5"])
    host = (["10.1.2.3"], ["host.example"], ["timeout:2"])
    assert conf("dns-default") == host
    assert conf("dns-hostnet") == host
    assert conf("dns-hostnet-cluster")[0] == ["10.96.0.10"]
    assert conf("dns-none") == (["1.1.1.1"], ["my.example"], ["ndots:2", "edns0"])
    servers, search, options = conf("dns-merged")
    assert servers == ["10.96.0.10", "8.8.8.8"]
    assert search[-1] == "extra.example" and search[0] == "default.svc.cluster.local"
    assert options == ["ndots:1"]


def dns_spec(extra):
    """The spec lines for one DNS test pod: extra is "" / "key: value" / a flow mapping of spec fields."""
    if not extra:
        return ""
    if extra.startswith("{"):
        return "".join(f"  {line}\n" for line in flow_to_block(extra))
    return f"  {extra}\n"


def flow_to_block(flow):
    # "{a: x, b: {…}}" → ["a: x", "b: {…}"]: split the top level on ", " outside brackets
    inner, depth, cur, out = flow[1:-1], 0, "", []
    for ch in inner:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def test_env_from_file_in_empty_dir(kubelet_factory, runtime):
    """env[].valueFrom.fileKeyRef (EnvFiles, beta on since v1.35): an init container writes /data/config.env in an
    emptyDir, the app's variables come from it (an optional key that is absent stays unset); a container whose
    required key is absent waits with CreateContainerConfigError and upstream's message."""
    k, api = start(kubelet_factory)
    write = ("printf '%s\\n' \"# written by init\" \"GREETING='hello from init'\" "
             "\"MULTI='line one\" \"line two'\" > /data/config.env")
    k.write("fkpod.yaml", f"""\
        apiVersion: v1
        kind: Pod
        metadata: {{name: fkpod}}
        spec:
          volumes:
          - {{name: data, emptyDir: {{}}}}
          initContainers:
          - name: init
            image: {BUSYBOX}
            command: ["sh", "-c", {json.dumps(write)}]
            volumeMounts: [{{name: data, mountPath: /data}}]
          containers:
          - name: app
            image: {BUSYBOX}
            command: ["sh", "-c", "echo \\"MULTI:$MULTI\\"; env | sort; echo END; {SLEEP}"]
            env:
            - name: GREETING
              valueFrom: {{fileKeyRef: {{volumeName: data, path: config.env, key: GREETING}}}}
            - name: MULTI
              valueFrom: {{fileKeyRef: {{volumeName: data, path: /config.env, key: MULTI}}}}
            - name: ABSENT
              valueFrom: {{fileKeyRef: {{volumeName: data, path: config.env, key: ABSENT, optional: true}}}}
            - {{name: COMPOSED, value: "$(GREETING)!"}}
          - name: needs-key
            image: {BUSYBOX}
            command: ["sh", "-c", "{SLEEP}"]
            env:
            - name: NOPE
              valueFrom: {{fileKeyRef: {{volumeName: data, path: config.env, key: NOPE}}}}
        """)
    pod = f"fkpod-{NODE}"
    text = wait_output(k, runtime, pod, "app", "END")
    env = env_of(text)
    assert env["GREETING"] == "hello from init"
    assert env["COMPOSED"] == "hello from init!"
    assert "MULTI:line one\nline two" in text
    assert "ABSENT" not in env

    def waiting():
        for p in api.json("/pods")["items"]:
            if p["metadata"]["name"] != pod:
                continue
            for c in p.get("status", {}).get("containerStatuses", []):
                w = c.get("state", {}).get("waiting")
                if c["name"] == "needs-key" and w and w.get("reason") == "CreateContainerConfigError":
                    return (w, p["metadata"]["uid"])
        return None

    w, uid = wait_for(waiting, 30, msg="needs-key waiting with CreateContainerConfigError")
    path = os.path.join(k.root, "pods", uid, "volumes", "kubernetes.io~empty-dir", "data", "config.env")
    assert w["message"] == f'environment variable key "NOPE" not found in file "{path}"'
    assert not runtime.containers_of(pod, "needs-key")
