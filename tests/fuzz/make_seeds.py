#!/usr/bin/python3
"""Writes the seed inputs of the fuzz targets into tests/fuzz/corpus/<target>/seed-*: small valid (and a few
invalid) inputs for each parser, so that the fuzzers start from the shapes that matter. Run it again after
changing it; the crash regression inputs (crash-*) are kept by hand next to the seeds."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def put(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


# ---- protobuf, by hand (varint, length-delimited): enough for the CRI replies
def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def f_varint(no, v):
    return varint(no << 3) + varint(v)


def f_bytes(no, b):
    b = b.encode() if isinstance(b, str) else b
    return varint(no << 3 | 2) + varint(len(b)) + b


def f_map(no, d):
    return b"".join(f_bytes(no, f_bytes(1, k) + f_bytes(2, v)) for k, v in d.items())


LABELS = {"io.kubernetes.pod.name": "web-node", "io.kubernetes.pod.namespace": "default",
          "io.kubernetes.pod.uid": "0b6f6f2e8c3e4d7a9c563c2f7e2d1a10", "io.kubernetes.container.name": "c"}
ANNOTATIONS = {"io.kubernetes.container.hash": "1234abcd", "io.kubernetes.container.restartCount": "2",
               "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
               "io.kubernetes.pod.terminationGracePeriod": "30"}
NOW = 1700000000 * 10**9


def container(i):
    return (f_bytes(1, f"c{i:062x}") + f_bytes(2, "s" * 64) + f_bytes(3, f_bytes(1, "c") + f_varint(2, i)) +
            f_bytes(4, f_bytes(1, "docker.io/library/busybox:1.36")) + f_bytes(5, "sha256:" + "a" * 64) +
            f_varint(6, i % 4) + f_varint(7, NOW + i) + f_map(8, LABELS) + f_map(9, ANNOTATIONS))


def sandbox(i):
    return (f_bytes(1, f"s{i:063x}") + f_bytes(2, f_bytes(1, "web-node") + f_bytes(2, LABELS["io.kubernetes.pod.uid"]) +
                                           f_bytes(3, "default") + f_varint(4, i)) +
            f_varint(3, i % 2) + f_varint(4, NOW) + f_map(5, LABELS) + f_map(6, {"a": "b"}))


container_status = (f_bytes(1, "c" * 64) + f_bytes(2, f_bytes(1, "c") + f_varint(2, 1)) + f_varint(3, 2) +
                    f_varint(4, NOW) + f_varint(5, NOW + 10**9) + f_varint(6, NOW + 2 * 10**9) + f_varint(7, 137) +
                    f_bytes(8, f_bytes(1, "busybox")) + f_bytes(9, "sha256:" + "b" * 64) + f_bytes(10, "OOMKilled") +
                    f_bytes(11, "out of memory") + f_map(12, LABELS) + f_map(13, ANNOTATIONS) +
                    f_bytes(15, "/var/log/pods/default_web_uid/c/1.log"))
sandbox_status = (f_bytes(1, "s" * 64) + f_bytes(2, f_bytes(1, "web-node") + f_bytes(2, "uid") + f_bytes(3, "default")) +
                  f_varint(3, 0) + f_varint(4, NOW) + f_bytes(5, f_bytes(1, "10.88.0.5") + f_bytes(2, f_bytes(1, "fd00::5"))) +
                  f_bytes(6, f_bytes(1, f_bytes(2, f_varint(1, 0)))) + f_map(7, LABELS))

replies = {
    "list-containers": (0, b"".join(f_bytes(1, container(i)) for i in range(3))),
    "list-sandboxes": (1, b"".join(f_bytes(1, sandbox(i)) for i in range(2))),
    "container-status": (2, f_bytes(1, container_status) + f_map(2, {"info": "{\"pid\": 42}"})),
    "sandbox-status": (3, f_bytes(1, sandbox_status) + f_varint(4, NOW)),
}
for name, (kind, msg) in replies.items():
    put("cri_message", name, bytes([kind]) + msg)
# grpc_frame: type byte (index into its table) + a length-prefixed message
grpc_types = {"version": 0, "list-containers": 1, "container-status": 2, "list-sandboxes": 3, "sandbox-status": 4}
version = f_bytes(1, "0.1.0") + f_bytes(2, "containerd") + f_bytes(3, "v1.6.20") + f_bytes(4, "v1")
bodies = {"version": version, "list-containers": replies["list-containers"][1],
          "container-status": replies["container-status"][1], "list-sandboxes": replies["list-sandboxes"][1],
          "sandbox-status": replies["sandbox-status"][1]}
for name, body in bodies.items():
    put("grpc_frame", name, bytes([grpc_types[name]]) + b"\0" + struct.pack(">I", len(body)) + body)
put("grpc_frame", "compressed", bytes([0]) + b"\1" + struct.pack(">I", 3) + b"abc")
put("grpc_frame", "percent", bytes([5]) + b"\0\0\0\0\0" + b"grpc%20message%3a%zz%E2%9C%93")

# ---- manifests: the examples, JSON, a PodList, several documents
for f in sorted(os.listdir(os.path.join(REPO, "examples"))):
    if f.endswith((".yaml", ".json")):
        with open(os.path.join(REPO, "examples", f), "rb") as src:
            put("manifest", f, src.read())
full = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "full", "namespace": "ns", "uid": "u-1",
                                                         "labels": {"app": "x"}, "annotations": {"a": "b"}},
        "spec": {"restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 5, "hostNetwork": False,
                 "dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"], "searches": ["a.b"],
                                                    "options": [{"name": "ndots", "value": "2"}]},
                 "securityContext": {"runAsUser": 1000, "fsGroup": 2000, "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]},
                 "initContainers": [{"name": "init", "image": "busybox", "command": ["true"]},
                                    {"name": "side", "image": "busybox", "restartPolicy": "Always"}],
                 "containers": [{"name": "c", "image": "busybox:1.36", "command": ["sh", "-c", "$(X)"],
                                 "env": [{"name": "X", "value": "y"},
                                         {"name": "P", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                                         {"name": "M", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}],
                                 "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "0.1"}},
                                 "ports": [{"name": "http", "containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
                                 "livenessProbe": {"httpGet": {"path": "/", "port": "http", "httpHeaders": [{"name": "X", "value": "y"}]}},
                                 "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 3},
                                 "startupProbe": {"grpc": {"port": 9000}},
                                 "lifecycle": {"preStop": {"sleep": {"seconds": 1}}, "postStart": {"tcpSocket": {"port": 80}}},
                                 "securityContext": {"capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]}, "readOnlyRootFilesystem": True},
                                 "volumeMounts": [{"name": "e", "mountPath": "/e", "subPathExpr": "$(P)"},
                                                  {"name": "cm", "mountPath": "/cm", "readOnly": True}]}],
                 "volumes": [{"name": "e", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                             {"name": "h", "hostPath": {"path": "/tmp", "type": "DirectoryOrCreate"}},
                             {"name": "cm", "configMap": {"name": "c", "items": [{"key": "k", "path": "a/b", "mode": 256}]}},
                             {"name": "d", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                             {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t", "expirationSeconds": 3600}},
                                                                     {"secret": {"name": "s"}}]}}],
                 "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a", "b"]}],
                 "imagePullSecrets": [{"name": "reg"}]}}
put("manifest", "full.json", json.dumps(full, indent=1))
put("manifest", "list.yaml", "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: a, image: x}]}\n"
    "- metadata: {name: b, uid: ../x}\n  spec: {containers: [{name: a, image: x, ports: [{containerPort: 0}]}]}\n")
put("manifest", "multi.yaml", "---\napiVersion: v1\nkind: Pod\nmetadata: &m {name: w}\nspec: {containers: [{name: a, image: x}]}\n"
    "---\n# comment\n---\napiVersion: v1\nkind: Pod\nmetadata: *m\nspec: {containers: [{name: b, image: \"y\", args: [!!str 1, 0x1F, .inf]}]}\n")

# ---- quantities
for i, q in enumerate(["100m", "1Gi", "1.5", "2e3", "0.1Ki", "-5", "+3E-2", "1000000000000000000000", "12.345678901n",
                       "9223372036854775807Ei", "0.0001", "1e-9", ".5", "5.", "1Z"]):
    put("quantity", str(i), q)

# ---- CRI log files: 4 option bytes (tail, limit, flags, since) then the file
log = ("2016-10-06T00:17:09.669794202Z stdout F log content 1\n"
       "2016-10-06T00:17:09.669794203Z stderr P partial \n"
       "2016-10-06T00:17:09.669794204Z stderr F end of partial\n"
       "2016-10-06T02:17:10+02:00 stdout P:x a\n"
       "2016-10-06T00:17:11,5Z stdout F b\n"
       "not a cri line\n"
       "2016-10-06T00:17:12.1Z stdout F no newline at the end")
put("cri_log", "all", b"\xff\xff\x00\x00" + log.encode())
put("cri_log", "tail", b"\x02\xff\x01\x00" + log.encode())
put("cri_log", "limit-follow", b"\xff\x01\x02\x03" + log.encode())
put("cri_log", "partials", b"\x01\xff\x00\x00" + ("2016-10-06T00:17:09Z stdout P " + "x" * 200 + "\n").encode() * 20)

# ---- /containerLogs queries
for i, q in enumerate(["tailLines=10&timestamps=true", "limitBytes=100&sinceSeconds=10", "sinceTime=2016-10-06T00:17:09Z&follow=1",
                       "tail=all&previous=false", "tailLines=-1", "sinceSeconds=1&sinceTime=2016-10-06T00:17:09Z",
                       "a=1&&b&timestamps", "limitBytes=9223372036854775808", "follow=%zz"]):
    put("logs_query", str(i), q)

# ---- request paths
for i, p in enumerate(["/containerLogs/ns/pod/c?tailLines=1", "/exec/ns/p/c?command=ls&command=-l&stdin=1&output=1",
                       "/logs/a%2fb/../c", "/stats/summary", "/run/ns/pod/uid/c?cmd=echo+hi", "//a%20b///c/",
                       "/portForward/ns/p?port=80&port=8080", "/logs/..%2f..%2fetc/passwd", "/a/%00/b", "/metrics/probes"]):
    put("request_path", str(i), p)

# ---- kubeconfig
put("kubeconfig", "full", """apiVersion: v1
kind: Config
current-context: ctx
clusters:
- name: c
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMK
    tls-server-name: kubernetes
users:
- name: u
  user:
    client-certificate: pki/client.crt
    client-key: /etc/kubernetes/pki/client.key
    token: abc
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: default}
""")
put("kubeconfig", "token-file", "apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters: [{name: c, cluster: {server: 'http://127.0.0.1:8080', insecure-skip-tls-verify: true}}]\n"
    "users: [{name: u, user: {tokenFile: token}}]\ncontexts: [{name: a, context: {cluster: c, user: u}}]\n")

# ---- KubeletConfiguration
put("kubelet_config", "full", """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
podLogsDir: /var/log/pods
address: 127.0.0.1
port: 10250
readOnlyPort: 10255
healthzPort: 10248
syncFrequency: 1m30s
runtimeRequestTimeout: 2m
streamingConnectionIdleTimeout: 4h
maxPods: 110
kubeAPIQPS: 5
kubeAPIBurst: 10
authentication:
  x509: {clientCAFile: /etc/kubernetes/pki/ca.crt}
  anonymous: {enabled: false}
  webhook: {enabled: true, cacheTTL: 2m}
authorization:
  mode: Webhook
  webhook: {cacheAuthorizedTTL: 5m, cacheUnauthorizedTTL: 30s}
staticPodURLHeader: {X-A: [a, b]}
logging: {verbosity: 2}
evictionHard: {memory.available: 100Mi}
enforceNodeAllocatable: [pods]
""")
put("kubelet_config", "json", json.dumps({"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
                                          "maxPods": 0, "fileCheckFrequency": "20s", "cgroupsPerQOS": True}))

# ---- watch streams
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w", "namespace": "default", "uid": "0b6f6f2e-8c3e",
                                                       "resourceVersion": "12"},
       "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "busybox"}]}, "status": {"phase": "Pending"}}
events = [{"type": "ADDED", "object": pod}, {"type": "MODIFIED", "object": dict(pod, metadata=dict(pod["metadata"], resourceVersion="13"))},
          {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "14"}}},
          {"type": "DELETED", "object": pod},
          {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old resource version"}}]
put("watch", "events", "".join(json.dumps(e) + "\n" for e in events) + "\r\n  \n{\"type\": 1}\n")

# ---- the fsGroup ownership walk (issue 26): entries (kind 0 dir / 1 file / 2, 3 symlinks out; parent; mode),
# then the entries a thread exchanges with symlinks to the outside, then the number of walks
def own_tree(entries, swaps, walks):
    out = bytes([len(entries) - 1, 7])
    for kind, parent, mode in entries:
        out += bytes([kind, parent, mode & 0xff])
    out += bytes([len(swaps)])
    for which, to in swaps:
        out += bytes([which, to])
    return out + bytes([walks - 1])


put("ownership", "flat-files", own_tree([(1, 0, 0o777)] * 8, [(i, 0) for i in range(8)], 4))
put("ownership", "nested", own_tree([(0, 0, 0), (1, 1, 0o777), (0, 1, 0o55), (1, 2, 0o777), (2, 2, 1), (3, 1, 0),
                                     (1, 0, 0o666)], [(0, 1), (1, 0), (3, 0), (2, 1), (6, 0)], 4))


# ---- pod trees (pod_tree.c): [ops: (kind, arg) pairs][0xff][subPath][0xff][swap bytes]
#      kinds: 0 mkdir, 1 file, 2 symlink out of the tree, 3 descend, 4 back to the top
def tree_ops(*ops):
    return bytes(b for op in ops for b in op)
put("pod_tree", "flat", tree_ops((0, 0), (1, 1), (2, 2), (0, 3), (1, 4)) + b"\xffa/b/c\xff" + bytes([0, 4, 8, 1, 2]))
put("pod_tree", "deep", tree_ops(*[(0, 0), (3, 0)] * 30, (1, 1), (2, 3)) + b"\xffa/a/a/x\xff" + bytes([0] * 40))
put("pod_tree", "links", tree_ops((2, 0), (2, 1), (2, 6), (0, 3), (3, 3), (2, 4), (2, 5)) + b"\xffa/../d/new\xff" +
    bytes(range(0, 64, 4)))


# ---- the probes' HTTP/1.x response parser (issue 34): first byte = piece size (>= 128: whole), then a response
put("http_response", "length", b"\x80HTTP/1.1 200 OK\r\nContent-Length: 5\r\nServer: x\r\n\r\nhello")
put("http_response", "chunked", b"\x03HTTP/1.1 302 Found\r\nLocation: /ok\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nT: t\r\n\r\n")
put("http_response", "close", b"\x01HTTP/1.0 500 Oops\nX: y\n\nuntil the end")
put("http_response", "informational", b"\x85HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n")
put("http_response", "bad-chunk", b"\x80HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")


# ---- the env file of fileKeyRef: the key, a newline, then the file (written by the pod)
put("env_file", "simple", "GREETING\n# written by init\nGREETING='hello'\nOTHER='x' # note\n")
put("env_file", "multi", "MULTI\n  A=''\nB= 'skipped'\nMULTI='line one\nline two'\nC=after\n")
put("env_file", "crlf", "B\r\nA='x'\r\nB='y\r\nz'\r\n")
put("env_file", "errors", "K\nX='1'\nX = '2'\n=''\nK=\"q\"\nK='a''b'\nK='open\n")
put("env_file", "long", "K\nK='" + "v" * 70000 + "'\n")
