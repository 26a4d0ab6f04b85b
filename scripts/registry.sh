#!/bin/bash
# A local image registry (Debian docker-registry) on 127.0.0.1:5000 with its storage under DIR.
#   registry.sh start DIR [PORT [HTPASSWD]] | stop DIR
# With HTPASSWD (a file made by `htpasswd -B`), every request needs basic authentication.
set -euo pipefail
cmd=${1:?usage: registry.sh start|stop DIR [PORT [HTPASSWD]]}
dir=$(realpath -m "${2:?DIR}")
port=${3:-5000}
htpasswd=${4:-}
case "$cmd" in
start)
        mkdir -p "$dir/storage"
        cat > "$dir/config.yml" <<EOC
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
EOC
        if [ -n "$htpasswd" ]; then
                cat >> "$dir/config.yml" <<EOC
auth:
  htpasswd:
    realm: ckubelet-test
    path: $(realpath "$htpasswd")
EOC
        fi
        docker-registry serve "$dir/config.yml" >>"$dir/registry.log" 2>&1 &
        echo $! > "$dir/registry.pid"
        for _ in $(seq 1 100); do
                # with authentication /v2/ answers 401: up either way
                code=$(curl -sS -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2/" 2>/dev/null || true)
                case "$code" in 200|401) exit 0 ;; esac
                sleep 0.1
        done
        echo "registry.sh: registry did not come up, see $dir/registry.log" >&2
        exit 1
        ;;
stop)
        if [ -f "$dir/registry.pid" ]; then
                kill "$(cat "$dir/registry.pid")" 2>/dev/null || true
                rm -f "$dir/registry.pid"
        fi
        ;;
esac
