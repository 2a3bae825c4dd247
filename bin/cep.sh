#!/usr/bin/env bash
# Start the whole local system on its embedded defaults:
#   the embedded Spark standalone cluster, a CEP manager (REST API, endpoint registry, topology
#   launcher), one CEP worker, the sample StockAnalysis plan deployed as a topology on Spark,
#   and sample events flowing in. Outputs are printed by the worker's log sink. Ctrl-C stops
#   everything (topologies, worker, manager, Spark).
# `bin/cep.sh --offline` instead runs the sample plan over the sample events in-process
# (`cep run`) and prints the output events as JSON lines; `--setup` only installs; `--help`.
usage() {
    cat <<'TXT'
Usage: bin/cep.sh [--offline | --setup | --help]

Start the whole local system on its embedded defaults: an embedded Spark cluster, a CEP
manager (REST API and console on :9763, registry on :8904), one CEP worker (HTTP events on
:9090, ZeroMQ on :9091), the sample plan conf/samples/StockAnalysis.siddhiql deployed as a
topology, and sample events flowing in. Ctrl-C or SIGTERM stops everything it started.

Options:
  --offline   run the sample plan over the sample events in-process (cep run), no Spark
  --setup     create .venv and install the project and Java, then exit
  -h, --help  print this help and exit

Environment: CEP_HTTP_PORT, CEP_REGISTRY_PORT, CEP_WORKER_HTTP_PORT (ports),
CEP_ADMIN_PASSWORD (the admin's password; else generated into var/local-system/admin-password),
CEP_RUN_DIR (the run folder, default var/local-system).
TXT
}
MODE=start
case "${1:-}" in
    "") ;;
    -h|--help) usage; exit 0 ;;
    --offline) MODE=offline ;;
    --setup) MODE=setup ;;
    *) echo "bin/cep.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
esac
if [ "$#" -gt 1 ]; then
    echo "bin/cep.sh: one option at most, got: $*" >&2; usage >&2; exit 2
fi
. "$(dirname "$0")/_venv.sh"
cep_venv
cep_java
cd "$ROOT"
CEP="$VENV/bin/cep"
PLAN="conf/samples/StockAnalysis.siddhiql"
EVENTS="conf/samples/StockStream.jsonl"

if [ "$MODE" = setup ]; then
    echo "[cep] set up: $VENV" >&2
    exit 0
fi
if [ "$MODE" = offline ]; then
    exec "$CEP" run "$PLAN" --events "$EVENTS" --playback
fi

HTTP_PORT="${CEP_HTTP_PORT:-9763}"
REGISTRY_PORT="${CEP_REGISTRY_PORT:-8904}"
WORKER_PORT="${CEP_WORKER_HTTP_PORT:-9090}"
MANAGER_URL="http://127.0.0.1:$HTTP_PORT"
export CEP_MANAGER_URL="$MANAGER_URL"
WORKER_URL="http://127.0.0.1:$WORKER_PORT"
RUN_DIR="${CEP_RUN_DIR:-$ROOT/var/local-system}"  # CEP_RUN_DIR: another folder (tests)
mkdir -p "$RUN_DIR"
pids=()

# Authentication is on: the super admin `admin` gets CEP_ADMIN_PASSWORD, else a
# password generated on the first run and kept in var/local-system/admin-password (0600).
if [ -z "${CEP_ADMIN_PASSWORD:-}" ]; then
    if [ ! -s "$RUN_DIR/admin-password" ]; then
        (umask 077; "$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(12))' \
            >"$RUN_DIR/admin-password")
    fi
    CEP_ADMIN_PASSWORD="$(cat "$RUN_DIR/admin-password")"
fi
export CEP_ADMIN_PASSWORD
# the worker presents the manager's cluster secret (CEP_CLUSTER_SECRET, else the file the
# manager creates at its first start)
SECRET_ARGS=()
[ -z "${CEP_CLUSTER_SECRET:-}" ] && SECRET_ARGS=(--cluster-secret-file "$RUN_DIR/manager/security/cluster-secret")

# Ctrl-C, SIGTERM or the script's own exit stop everything it started, then the script exits
# (it must not return to the supervision loop, which would start it all again). A second
# signal while stopping is ignored, so the stop is never cut short. Without a terminal
# (setsid, stdin from /dev/null) the children do not get the terminal's SIGINT: each one is
# sent SIGTERM here.
stop_all() {
    trap '' INT TERM
    trap - EXIT
    pids=(${FEED_PID:-} ${WORKER_PID:-} ${MANAGER_PID:-})
    echo; echo "[cep] stopping: feed, worker, manager (and its topologies), Spark" >&2
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    "$CEP" topology cluster stop >/dev/null 2>&1 || true
    echo "[cep] stopped" >&2
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'code=$?; stop_all; exit $code' EXIT

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in "$HTTP_PORT" "$REGISTRY_PORT" "$WORKER_PORT" "$((WORKER_PORT + 1))"; do
    if port_busy "$port"; then
        echo "[cep] port $port is in use (another bin/cep.sh?); set CEP_HTTP_PORT," \
             "CEP_REGISTRY_PORT or CEP_WORKER_HTTP_PORT to other ports" >&2
        exit 1
    fi
done

# the documentation site the manager serves at /docs/: built when mkdocs is installed (the
# docs extra) and the site is missing or older than docs/ or mkdocs.yml; never fatal
if [ -x "$VENV/bin/mkdocs" ] && { [ ! -f var/site/index.html ] \
        || [ -n "$(find docs mkdocs.yml -newer var/site/index.html -print -quit)" ]; }; then
    echo "[cep] building the documentation site (var/site/, served at /docs/)" >&2
    NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --quiet >"$RUN_DIR/docs-build.log" 2>&1 \
        || echo "[cep] the documentation site did not build (see $RUN_DIR/docs-build.log)" >&2
fi

echo "[cep] starting the embedded Spark cluster" >&2
"$CEP" topology cluster start >"$RUN_DIR/spark.txt" || { cat "$RUN_DIR/spark.txt" >&2; exit 1; }

echo "[cep] starting the manager (log: var/local-system/manager.log)" >&2
start_manager() {
    # a restarted manager adopts the running topology (same data dir and ports)
    "$CEP" manager --data-dir "$RUN_DIR/manager" --http-port "$HTTP_PORT" \
        --registry-port "$REGISTRY_PORT" --advertised-host 127.0.0.1 --kill-on-exit \
        >>"$RUN_DIR/manager.log" 2>&1 &
    MANAGER_PID=$!
}
: >"$RUN_DIR/manager.log"
start_manager
for _ in $(seq 1 60); do
    curl -fs "$MANAGER_URL/console/login" >/dev/null 2>&1 && break
    sleep 0.5
done
curl -fs "$MANAGER_URL/console/login" >/dev/null || { tail -20 "$RUN_DIR/manager.log" >&2; exit 1; }
# this script's own cep calls use an API token of the admin (never the password on a command line)
CEP_TOKEN="$(printf '%s\n' "$CEP_ADMIN_PASSWORD" | "$CEP" login --manager "$MANAGER_URL" \
    --user admin --password-stdin --print-token)" || {
    echo "[cep] cannot log in as admin: the manager's data in $RUN_DIR/manager was set up with" \
         "another password (set CEP_ADMIN_PASSWORD to it, or remove that folder)" >&2; exit 1; }
export CEP_TOKEN

echo "[cep] deploying $PLAN" >&2
if "$CEP" plan show StockAnalysis >/dev/null 2>&1; then
    "$CEP" plan edit StockAnalysis "$PLAN" >/dev/null
else
    "$CEP" plan add "$PLAN" >/dev/null
fi

echo "[cep] starting worker-1 (its log sink prints the plan's output events below)" >&2
start_worker() {
    "$CEP" worker --manager "$MANAGER_URL" --registry "tcp://127.0.0.1:$REGISTRY_PORT" \
        --id worker-1 --advertised-host 127.0.0.1 --http-port "$WORKER_PORT" \
        --zmq-port "$((WORKER_PORT + 1))" "${SECRET_ARGS[@]}" &
    WORKER_PID=$!
}
start_worker

echo "[cep] waiting for the topology to be ACTIVE with its connections established" >&2
connected=""
for _ in $(seq 1 180); do
    status="$("$CEP" plan status StockAnalysis 2>/dev/null || true)"
    if grep -q "ACTIVE" <<<"$status" && ! grep -qE "[0-9]+/[0-9]+ established|no receivers" <<<"$status"; then
        connected=1
        break
    fi
    if ! kill -0 "$WORKER_PID" 2>/dev/null; then  # it could not start (e.g. its port is taken)
        code=0
        wait "$WORKER_PID" 2>/dev/null || code=$?
        echo "[cep] worker-1 exited (status $code, reason above); starting it again in 2 s" >&2
        sleep 2
        start_worker
    fi
    sleep 1
done
echo "$status" >&2
if [ -z "$connected" ]; then
    echo "[cep] not every connection is established yet (status above); it keeps trying" >&2
fi

cat >&2 <<TXT

[cep] the local system is up:
  console           $MANAGER_URL/console/   (log in as: admin / $CEP_ADMIN_PASSWORD)
  REST API          $MANAGER_URL/api/v1/tenants/-1234/plans   (Authorization: Bearer <token>;
                    cep login --manager $MANAGER_URL --user admin  stores one for the cep CLI)
  plan status       $MANAGER_URL/api/v1/tenants/-1234/plans/StockAnalysis/status
  query plan (XML)  $MANAGER_URL/api/v1/tenants/-1234/plans/StockAnalysis/query-plan
  Spark master UI   $(grep -oE 'http://[^ ]+' "$RUN_DIR/spark.txt" | head -1)
  worker status     $WORKER_URL/status   (Authorization: Bearer <the admin's token>, or the
                    cluster secret as X-CEP-Cluster-Secret: it lists every tenant)
  send events       curl --data-binary @$EVENTS $WORKER_URL/events/-1234/StockAnalysis/StockStream
Sample events are being sent (5 per second); press Ctrl-C to stop everything.

TXT
start_feed() {
    "$CEP" feed StockAnalysis "$EVENTS" --worker "$WORKER_URL" --rate 5 --batch 5 --loop --retry &
    FEED_PID=$!
}
start_feed

# Supervise: a child that exits is started again (with a growing pause if it keeps failing),
# so a manager crash does not take the worker and the Spark cluster down with it.
declare -A backoff=([manager]=1 [worker]=1 [feed]=1)
supervise() {
    local name="$1" pid="$2" code=0
    kill -0 "$pid" 2>/dev/null && return 0
    wait "$pid" 2>/dev/null || code=$?
    echo "[cep] the $name exited (status $code); starting it again in ${backoff[$name]} s" >&2
    sleep "${backoff[$name]}"
    backoff[$name]=$(( backoff[$name] < 30 ? backoff[$name] * 2 : 30 ))
    "start_$name"
}
while true; do
    sleep 1
    supervise manager "$MANAGER_PID"
    supervise worker "$WORKER_PID"
    supervise feed "$FEED_PID"
done
