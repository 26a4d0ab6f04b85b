#!/bin/bash
# A local image registry (Debian docker-registry) on 127.0.0.1:5000 with its storage under DIR.
#   registry.sh start DIR | stop DIR
set -euo pipefail
cmd=${1:?usage: registry.sh start|stop DIR}
dir=$(realpath -m "${2:?DIR}")
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
  addr: 127.0.0.1:5000
EOC
        docker-registry serve "$dir/config.yml" >>"$dir/registry.log" 2>&1 &
        echo $! > "$dir/registry.pid"
        for _ in $(seq 1 100); do
                curl -fsS http://127.0.0.1:5000/v2/ >/dev/null 2>&1 && exit 0
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
