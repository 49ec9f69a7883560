#!/usr/bin/env bash
# Serve a class: N replicas of the app behind Debian's nginx, with sticky sessions, sharing one
# live-class store.
#
#   bash scripts/serve-class.sh [N] [--port P] [--base-port B] [--no-install]
#                               [--redis [--redis-port R] [--redis-bind ADDR]] [--store URL]
#
# N (default 2) streamlit replicas listen on 127.0.0.1 at N consecutive free ports from B
# (default P+1); nginx listens on 127.0.0.1:P (default 8501, or $TFVIZ_PORT) and sends every
# learner to one replica, and to the next live one if that replica dies. Live classes live in
# a store every replica opens: by default one SQLite file in the data folder ($TFVIZ_DATA_DIR,
# else ~/.local/share/tfviz); --redis starts Debian's redis-server (append-only file, fsync
# before every reply, bound to 127.0.0.1 unless --redis-bind says otherwise, its data in the
# data folder so a restart keeps the class); --store URL uses a store that already runs
# (redis://HOST:PORT/DB or sqlite:///FILE). A replica that dies is left out; the rest serve on.
# Ctrl+C or SIGTERM stops nginx, every replica and our redis-server. nginx's config, pid and
# logs (and each replica's log) live in a temporary directory; $TFVIZ_CLASS_DIR names one to
# keep instead.
set -euo pipefail
cd "$(dirname "$0")/.."

N=2
PORT="${TFVIZ_PORT:-8501}"
BASE_PORT="${TFVIZ_BASE_PORT:-}"
INSTALL=1
STORE="${TFVIZ_STORE:-}"
REDIS=0
REDIS_PORT=""
REDIS_BIND="127.0.0.1"
while [ $# -gt 0 ]; do
  case "$1" in
    --store) STORE="$2"; shift 2 ;;
    --store=*) STORE="${1#*=}"; shift ;;
    --redis) REDIS=1; shift ;;
    --redis-port) REDIS_PORT="$2"; shift 2 ;;
    --redis-port=*) REDIS_PORT="${1#*=}"; shift ;;
    --redis-bind) REDIS_BIND="$2"; shift 2 ;;
    --redis-bind=*) REDIS_BIND="${1#*=}"; shift ;;
    --port) PORT="$2"; shift 2 ;;
    --port=*) PORT="${1#*=}"; shift ;;
    --base-port) BASE_PORT="$2"; shift 2 ;;
    --base-port=*) BASE_PORT="${1#*=}"; shift ;;
    --no-install) INSTALL=0; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) N="$1"; shift ;;
    *) echo "serve-class: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
[ "$N" -ge 1 ] 2>/dev/null || { echo "serve-class: N must be a positive number, not '$N'" >&2; exit 2; }
BASE_PORT="${BASE_PORT:-$((PORT + 1))}"
if [ "$REDIS" = 1 ] && [ -n "$STORE" ]; then
  echo "serve-class: --redis starts a Redis of its own; --store names one that runs. Pick one." >&2; exit 2
fi

# Debian's nginx, installed the way scripts/test.sh installs chromium. It lives in /usr/sbin,
# which is not on every user's PATH.
find_nginx() { command -v nginx 2>/dev/null || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true; }
NGINX="$(find_nginx)"
if [ -z "$NGINX" ] && command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "serve-class: installing Debian's nginx" >&2
  $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null
  NGINX="$(find_nginx)"
fi
[ -n "$NGINX" ] || { echo "serve-class: nginx not found and apt-get could not install it" >&2; exit 1; }
if [ "$INSTALL" = 1 ]; then
  python3 -m pip install -q -r requirements.txt
fi
if [ "$REDIS" = 1 ]; then
  find_redis() { command -v redis-server 2>/dev/null || { [ -x /usr/bin/redis-server ] && echo /usr/bin/redis-server; } || true; }
  REDIS_SERVER="$(find_redis)"
  if [ -z "$REDIS_SERVER" ] && command -v apt-get >/dev/null 2>&1; then
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "serve-class: installing Debian's redis-server" >&2
    $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    REDIS_SERVER="$(find_redis)"
  fi
  [ -n "$REDIS_SERVER" ] || { echo "serve-class: redis-server not found and apt-get could not install it" >&2; exit 1; }
fi

# Ports: nginx's must be free; the replicas take the first N consecutive free ones from BASE_PORT.
PORTS=($(python3 - "$PORT" "$BASE_PORT" "$N" <<'EOF'
import socket, sys
front, base, n = map(int, sys.argv[1:])
def free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
if not free(front):
    sys.exit(f"serve-class: port {front} is taken; choose another with --port")
port = base
while port + n <= 65536:
    taken = next((p for p in range(port, port + n) if p == front or not free(p)), None)
    if taken is None:
        print(*range(port, port + n))
        break
    port = taken + 1
else:
    sys.exit(f"serve-class: no {n} consecutive free ports from {base}")
EOF
))
[ "${#PORTS[@]}" = "$N" ] || exit 1
if [ "$REDIS" = 1 ] && [ -z "$REDIS_PORT" ]; then  # the first free port from 6390, none of ours
  REDIS_PORT="$(python3 - "$PORT" "${PORTS[@]}" <<'EOF'
import socket, sys
ours = set(map(int, sys.argv[1:]))
for port in range(6390, 65536):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
    if port not in ours:
        print(port)
        break
EOF
)"
fi

if [ -n "${TFVIZ_CLASS_DIR:-}" ]; then
  DIR="$TFVIZ_CLASS_DIR"; KEEP_DIR=1; mkdir -p "$DIR"
else
  DIR="$(mktemp -d -t tfviz-class.XXXXXX)"; KEEP_DIR=0
fi
DIR="$(cd "$DIR" && pwd)"
mkdir -p "$DIR/logs" "$DIR/temp"

REPLICA_PIDS=()
NGINX_PID=""
REDIS_PID=""
cleanup() {
  trap - INT TERM EXIT
  local pids=($NGINX_PID "${REPLICA_PIDS[@]}") pid alive
  [ "${#pids[@]}" -gt 0 ] || { [ "$KEEP_DIR" = 1 ] || rm -rf "$DIR"; return; }
  echo "serve-class: stopping nginx and ${#REPLICA_PIDS[@]} replicas" >&2
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for _ in $(seq 100); do  # up to 10 s for a clean exit, then no more asking
    alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null || true
  if [ -n "$REDIS_PID" ] && kill -0 "$REDIS_PID" 2>/dev/null; then  # after the replicas, so
    kill -TERM "$REDIS_PID" 2>/dev/null || true                       # their last writes land
    for _ in $(seq 100); do kill -0 "$REDIS_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$REDIS_PID" 2>/dev/null || true
  fi
  wait 2>/dev/null || true
  [ "$KEEP_DIR" = 1 ] || rm -rf "$DIR"
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT

# The live-class store every replica opens. Our Redis keeps its append-only file in the data
# folder, not in $DIR: a restart of this script finds the class again.
DATA_DIR="$(python3 -c 'from tfviz.classroom.store import data_dir; print(data_dir())')"
start_redis() {
  mkdir -p "$DATA_DIR/redis"
  "$REDIS_SERVER" --port "$REDIS_PORT" --bind "$REDIS_BIND" --dir "$DATA_DIR/redis" \
    --appendonly yes --appendfsync always --save "" --protected-mode yes --daemonize no \
    --logfile "$DIR/logs/redis.log" &
  REDIS_PID=$!
}
if [ "$REDIS" = 1 ]; then
  start_redis
  STORE="redis://127.0.0.1:$REDIS_PORT/0"
  for _ in $(seq 100); do  # up to 10 s for Redis to load its file and answer
    python3 -m tfviz.classroom.store "$STORE" >/dev/null 2>&1 && break
    kill -0 "$REDIS_PID" 2>/dev/null || { cat "$DIR/logs/redis.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "serve-class: redis-server on $REDIS_BIND:$REDIS_PORT (pid $REDIS_PID, data $DATA_DIR/redis)" >&2
fi
STORE="${STORE:-sqlite:///$DATA_DIR/live-classes.sqlite3}"
python3 -m tfviz.classroom.store "$STORE" >&2 || exit 2  # a bad URL stops here, named
export TFVIZ_STORE="$STORE"

# Replicas. They share one cookie secret: Streamlit signs cookies with it (auth, and the XSRF
# check that guards its websocket and uploads), so a cookie one replica set must verify on
# another if a learner ever moves. It goes through the environment, not the command line,
# where `ps` would show it to every user of the machine.
STREAMLIT_SERVER_COOKIE_SECRET="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
export STREAMLIT_SERVER_COOKIE_SECRET
# No file watching: a class's server has no business reloading modules when someone edits the
# repo mid-lesson, and N replicas need not each watch every file.
for i in "${!PORTS[@]}"; do
  python3 -m streamlit run server.py --server.port "${PORTS[$i]}" --server.address 127.0.0.1 \
    --server.headless true --server.fileWatcherType none >"$DIR/logs/r$i.log" 2>&1 &
  REPLICA_PIDS+=($!)
  echo "serve-class: replica r$i on 127.0.0.1:${PORTS[$i]} (pid $!, log $DIR/logs/r$i.log)" >&2
done

# The nginx config. Why sticky sessions: a learner's Streamlit session (their text, model,
# widget values, cached traces), the media files their page links to and the websocket that
# carries every rerun all live in the one process that served them. A request that reaches
# another replica would find no such session or file. Open-source nginx has no `sticky`
# directive (that is nginx plus), so the stickiness is built from core modules: a new visitor
# is given a replica at random (split_clients over $request_id, which is unique per request)
# and a cookie tfviz_replica naming it; every later request with that cookie (the page's
# scripts, the websocket, media) goes to the replica the cookie names. Hashing the client's
# address instead would send a whole class behind one NAT (or every local test) to one replica.
{
  cat <<EOF
# Written by scripts/serve-class.sh; lives only while that script runs.
daemon off;
worker_processes 1;
# Sized for a lecture hall: each student holds two connections through nginx (the page's
# websocket and its long poll), each with one to a replica, so 400 students hold 1,600; a
# replica that dies sends its students back all at once. Room for 4,000, and the files to go.
worker_rlimit_nofile 10000;
pid $DIR/nginx.pid;
error_log $DIR/logs/error.log warn;
EOF
  # Run as root, nginx would hand its workers to 'nobody', who cannot write this directory.
  [ "$(id -u)" = 0 ] && echo "user root;"
  cat <<EOF
events { worker_connections 4096; }

http {
    # Each line says which replica the request was meant for and which address answered it.
    log_format tfviz '\$remote_addr [\$time_local] "\$request" \$status replica=\$tfviz_replica '
                     'upstream=\$upstream_addr time=\$request_time "\$http_user_agent"';
    access_log $DIR/logs/access.log tfviz;
    client_body_temp_path $DIR/temp/body;
    proxy_temp_path $DIR/temp/proxy;
    fastcgi_temp_path $DIR/temp/fastcgi;
    uwsgi_temp_path $DIR/temp/uwsgi;
    scgi_temp_path $DIR/temp/scgi;
    client_max_body_size 2m;  # the app accepts uploads of 1 MB at most
    server_tokens off;

    # A new learner's replica, chosen at random among the N.
    split_clients "\${request_id}" \$tfviz_new_replica {
EOF
  for ((i = 0; i < N - 1; i++)); do
    printf '        %s%% r%d;\n' "$(awk -v n="$N" 'BEGIN { printf "%.2f", int(10000 / n) / 100 }')" "$i"
  done
  printf '        * r%d;\n    }\n' $((N - 1))
  cat <<EOF

    # The replica named by the learner's cookie, if it names one of ours; else a new one.
    map \$cookie_tfviz_replica \$tfviz_replica {
        default \$tfviz_new_replica;
EOF
  for ((i = 0; i < N; i++)); do printf '        r%d r%d;\n' "$i" "$i"; done
  cat <<EOF
    }
    # The replica that really answered: the last address nginx tried (\$upstream_addr lists
    # every one it tried, "A, B" when A refused and B answered).
    map \$upstream_addr \$tfviz_served_by {
        default "";
EOF
  for i in "${!PORTS[@]}"; do
    printf '        "~(^|, )127\\.0\\.0\\.1:%d$" r%d;\n' "${PORTS[$i]}" "$i"
  done
  cat <<EOF
    }
    # Set the cookie when the request carried none of ours, and again when a backup answered
    # for a replica that died: the learner's later requests (the websocket, each long poll)
    # then all go to that one live replica, rather than to whichever backup is next in turn
    # (nginx takes backups in turn), which would not know their session. An empty value sends
    # no header.
    map "\$cookie_tfviz_replica:\$tfviz_served_by" \$tfviz_set_cookie {
        default "tfviz_replica=\$tfviz_replica; Path=/; HttpOnly; SameSite=Lax";
EOF
  for ((i = 0; i < N; i++)); do
    printf '        "r%d:r%d" "";\n        "r%d:" "";\n' "$i" "$i" "$i"
    printf '        "~^r%d:(?<to>r[0-9]+)$" "tfviz_replica=$to; Path=/; HttpOnly; SameSite=Lax";\n' "$i"
  done
  cat <<EOF
    }

    # The websocket (/_stcore/stream) needs Upgrade and Connection passed on; plain requests
    # send an empty Connection so that nginx can keep its connections to the replicas open.
    map \$http_upgrade \$connection_upgrade {
        default upgrade;
        ''      '';
    }

EOF
  # Each replica's upstream lists the others as backups: while a replica is down (connection
  # refused), its learners reach a live one (nginx takes the backups in turn), and the cookie
  # set above sends each learner's later requests to the one that answered.
  for i in "${!PORTS[@]}"; do
    printf '    upstream tfviz_r%d {\n        server 127.0.0.1:%d max_fails=1 fail_timeout=10s;\n' "$i" "${PORTS[$i]}"
    for ((j = 1; j < N; j++)); do
      printf '        server 127.0.0.1:%d backup;\n' "${PORTS[$(((i + j) % N))]}"
    done
    printf '        keepalive 8;\n    }\n'
  done
  cat <<EOF

    server {
        # The accept queue: a room that reconnects at once waits in it rather than being
        # refused (Linux caps it at net.core.somaxconn, 4096 on current kernels).
        listen 127.0.0.1:$PORT backlog=4096;
        server_name localhost;

        location / {
            proxy_pass http://tfviz_\$tfviz_replica;
            proxy_http_version 1.1;
            proxy_set_header Upgrade \$http_upgrade;
            proxy_set_header Connection \$connection_upgrade;
            proxy_set_header Host \$http_host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            # A learner reading a lesson sends nothing for minutes; keep the websocket open.
            proxy_read_timeout 1h;
            proxy_send_timeout 1h;
            add_header Set-Cookie \$tfviz_set_cookie always;
            # Which replica answered, by name and by the address nginx really connected to.
            add_header X-Tfviz-Replica \$tfviz_replica always;
            add_header X-Tfviz-Upstream \$upstream_addr always;
        }
    }
}
EOF
} >"$DIR/nginx.conf"

"$NGINX" -t -q -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log" \
  || { cat "$DIR/logs/error.log" >&2; exit 1; }

# Wait until every named server answers its health check; stop early if one of them dies.
# Arguments: names, ports, pids (each a space-separated list), seconds.
wait_healthy() {
  python3 - "$@" "$DIR/logs" <<'EOF'
import os, sys, time, urllib.request
names, ports, pids = (a.split() for a in sys.argv[1:4])
seconds, logs = float(sys.argv[4]), sys.argv[5]
waiting = dict(zip(names, zip(ports, pids)))
deadline = time.monotonic() + seconds
while waiting and time.monotonic() < deadline:
    for name, (port, pid) in list(waiting.items()):
        try:
            os.kill(int(pid), 0)
        except OSError:
            log = open(f"{logs}/{name}.log").read()[-3000:]
            sys.exit(f"serve-class: {name} exited while starting:\n{log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    del waiting[name]
        except OSError:
            pass
    time.sleep(0.2)
if waiting:
    sys.exit(f"serve-class: {' '.join(sorted(waiting))} did not answer within {seconds:.0f} s")
EOF
}
NAMES=(); for i in "${!PORTS[@]}"; do NAMES+=("r$i"); done
wait_healthy "${NAMES[*]}" "${PORTS[*]}" "${REPLICA_PIDS[*]}" 180 || exit 1

"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" -e "$DIR/logs/error.log" &
NGINX_PID=$!
wait_healthy error "$PORT" "$NGINX_PID" 10 || exit 1  # nginx writes to error.log

echo "serve-class: $N replicas behind nginx (pid $NGINX_PID), files in $DIR" >&2
echo "serve-class: live classes in $STORE" >&2
echo "serving http://127.0.0.1:$PORT"
echo "serve-class: Ctrl+C stops nginx and every replica" >&2

# Run until stopped. A replica that dies is left out: nginx sends its learners to the next live
# one (they reconnect there; a student in a live class joins again from the ?join= link). Our
# Redis, if it dies, is started again on its own file. Only when nginx dies, or no replica is
# left, does everything stop.
set +e
ALIVE=("${REPLICA_PIDS[@]}")
while true; do
  DEAD=""
  wait -n -p DEAD "$NGINX_PID" "${ALIVE[@]}" ${REDIS_PID:+"$REDIS_PID"}
  status=$?
  if [ "$DEAD" = "$NGINX_PID" ]; then
    echo "serve-class: nginx exited (status $status); stopping the replicas" >&2
    exit 1
  elif [ -n "$REDIS_PID" ] && [ "$DEAD" = "$REDIS_PID" ]; then
    echo "serve-class: redis-server exited (status $status); starting it again on its file" >&2
    start_redis
  elif [ -n "$DEAD" ]; then
    name="?"
    for i in "${!REPLICA_PIDS[@]}"; do
      [ "${REPLICA_PIDS[$i]}" = "$DEAD" ] && name="r$i"
    done
    ALIVE=($(for pid in "${ALIVE[@]}"; do [ "$pid" != "$DEAD" ] && echo "$pid"; done))
    echo "serve-class: replica $name exited (status $status); ${#ALIVE[@]} replicas serve on" >&2
    if [ "${#ALIVE[@]}" = 0 ]; then
      echo "serve-class: no replica left; stopping" >&2
      exit 1
    fi
  fi
done
