#!/usr/bin/env bash
# Start a CEP worker (conf/worker.yaml, CEP_* env vars, then the flags given), e.g.
#   bin/cep-worker.sh --manager http://127.0.0.1:9763 --id w1 --http-port 9090
#   bin/cep-worker.sh --mode standalone --plan conf/samples/StockAnalysis.siddhiql
. "$(dirname "$0")/_venv.sh"
cep_venv
cd "$ROOT"
# the manager's cluster secret: CEP_CLUSTER_SECRET, --cluster-secret-file, else the
# file a manager on this machine created in its default data dir (var/manager)
SECRET_ARGS=()
DEFAULT_SECRET="${CEP_CLUSTER_SECRET_FILE:-$ROOT/var/manager/security/cluster-secret}"
if [ -z "${CEP_CLUSTER_SECRET:-}" ] && [[ " $* " != *" --cluster-secret-file"* ]] \
        && [ -r "$DEFAULT_SECRET" ]; then
    SECRET_ARGS=(--cluster-secret-file "$DEFAULT_SECRET")
fi
exec "$VENV/bin/cep" --log-level "${CEP_LOG_LEVEL:-INFO}" worker "${SECRET_ARGS[@]}" "$@"
