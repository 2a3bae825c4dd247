#!/usr/bin/env bash
# Start the system on its embedded defaults.
# Until the manager and workers are in place, this runs the sample execution plan
# (conf/samples/StockAnalysis.siddhiql) over the sample events with `cep run` and prints
# every output event as a JSON line.
. "$(dirname "$0")/_venv.sh"
cep_venv
cep_java
cd "$ROOT"
PLAN="${1:-conf/samples/StockAnalysis.siddhiql}"
EVENTS="${2:-conf/samples/StockStream.jsonl}"
echo "[cep] running $PLAN over $EVENTS (playback)" >&2
exec "$VENV/bin/cep" run "$PLAN" --events "$EVENTS" --playback
