#!/usr/bin/env bash
# Start a CEP worker (conf/worker.yaml, CEP_* env vars, then the flags given), e.g.
#   bin/cep-worker.sh --manager http://127.0.0.1:9763 --id w1 --http-port 9090
#   bin/cep-worker.sh --mode standalone --plan conf/samples/StockAnalysis.siddhiql
. "$(dirname "$0")/_venv.sh"
cep_venv
cd "$ROOT"
exec "$VENV/bin/cep" --log-level "${CEP_LOG_LEVEL:-INFO}" worker "$@"
