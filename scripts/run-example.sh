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

cat > "$dir/kubelet-config.yaml" <<EOC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
podLogsDir: $dir/pods
EOC

build/ckubelet --config "$dir/kubelet-config.yaml" --pod-manifest-path "$repo/examples" \
        --container-runtime-endpoint "$ep" --hostname-override "$(hostname | tr 'A-Z' 'a-z')" \
        --root-dir "$dir/kubelet" --v 2 >>"$dir/kubelet.log" 2>&1 &
kubelet_pid=$!

cleanup() {
        trap - INT TERM EXIT
        echo
        echo "stopping ckubelet, removing the example pods, stopping containerd"
        kill "$kubelet_pid" 2>/dev/null || true
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
Edit, add or remove files in examples/ and watch the pods follow. Ctrl-C stops everything.

EOM

if [ -n "${CKUBELET_EXAMPLE_SECONDS:-}" ]; then
        sleep "$CKUBELET_EXAMPLE_SECONDS"
        $crictl ps | /usr/bin/python3 -c 'import json,sys; [print(c["labels"]["io.kubernetes.pod.name"], c["metadata"]["name"], c["state"]) for c in json.load(sys.stdin)["containers"]]'
        exit 0
fi
tail -n +1 -f "$dir/kubelet.log" &
wait "$kubelet_pid"
