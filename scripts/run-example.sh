#!/bin/bash
# The main job: a private containerd plus ckubelet running the static pods in examples/.
# Run as root on Debian 12:  bash scripts/run-example.sh
# Stops (removing the example pods and containerd) on Ctrl-C, or after CKUBELET_EXAMPLE_SECONDS seconds if set.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
dir=${CKUBELET_EXAMPLE_DIR:-/var/tmp/ckubelet-example}
ep="unix://$dir/containerd.sock"
crictl="$repo/build/tools/ckubelet-crictl --runtime-endpoint $ep"

bash scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
bash scripts/build-images.sh /var/tmp/ckubelet-images
mkdir -p "$dir"
bash scripts/containerd.sh start "$dir" 50
bash scripts/containerd.sh import "$dir" /var/tmp/ckubelet-images/images.tar

# the kubelet API: a throwaway client CA and an "admin" client certificate; requests with it are allowed
pki="$dir/pki"
mkdir -p "$pki"
if [ ! -f "$pki/admin.crt" ]; then
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/ca.key" \
                -out "$pki/ca.crt" -days 30 -subj "/CN=ckubelet-example-ca" 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$pki/admin.key" \
                -out "$pki/admin.csr" -subj "/O=system:masters/CN=admin" 2>/dev/null
        openssl x509 -req -in "$pki/admin.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
                -out "$pki/admin.crt" -days 30 2>/dev/null
fi

cat > "$dir/kubelet-config.yaml" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
podLogsDir: $dir/pods
authentication:
  x509:
    clientCAFile: $pki/ca.crt
authorization:
  mode: AlwaysAllow
EOC

build/ckubelet --config "$dir/kubelet-config.yaml" --pod-manifest-path "$repo/examples" \
        --container-runtime-endpoint "$ep" --hostname-override "$(hostname | tr 'A-Z' 'a-z')" \
        --root-dir "$dir/kubelet" --cert-dir "$pki" --v 2 >>"$dir/kubelet.log" 2>&1 &
kubelet_pid=$!

cleanup() {
        trap - INT TERM EXIT
        echo
        echo "stopping ckubelet, removing the example pods, stopping containerd"
        kill "$kubelet_pid" ${tail_pid:-} 2>/dev/null || true
        wait "$kubelet_pid" 2>/dev/null || true
        for id in $($crictl pods | /usr/bin/python3 -c 'import json,sys; [print(p["id"]) for p in json.load(sys.stdin)["items"]]'); do
                $crictl stopp "$id" >/dev/null 2>&1 || true
                $crictl rmp "$id" >/dev/null 2>&1 || true
        done
        bash scripts/containerd.sh stop "$dir" 50
}
trap cleanup INT TERM EXIT

cat <<EOM

ckubelet is running the pods in $repo/examples (pid $kubelet_pid).
  kubelet log:      $dir/kubelet.log
  pods:             $crictl pods
  containers:       $crictl ps
  container logs:   $dir/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log
  the web example:  curl http://\$($crictl inspectp <web pod id> | grep '"ip"' | cut -d'"' -f4):8080/
  the kubelet API:  curl -sk --cert $pki/admin.crt --key $pki/admin.key https://127.0.0.1:10250/pods
                    (also /stats/summary, /metrics, /containerLogs/<ns>/<pod>/<container>, ...;
                     curl http://127.0.0.1:10248/healthz needs no certificate)
Edit, add or remove files in examples/ and watch the pods follow. Ctrl-C stops everything.

EOM

if [ -n "${CKUBELET_EXAMPLE_SECONDS:-}" ]; then
        sleep "$CKUBELET_EXAMPLE_SECONDS"
        $crictl ps | /usr/bin/python3 -c 'import json,sys; [print(c["labels"]["io.kubernetes.pod.name"], c["metadata"]["name"], c["state"]) for c in json.load(sys.stdin)["containers"]]'
        exit 0
fi
tail -n +1 -f "$dir/kubelet.log" &
tail_pid=$!
wait "$kubelet_pid"
