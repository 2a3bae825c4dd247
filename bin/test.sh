#!/usr/bin/env bash
# Run the whole test suite (CI runs exactly this). Extra arguments go to pytest, e.g.
#   bin/test.sh -m "not slow"      the fast set only
#   bin/test.sh tests/cep          one folder
. "$(dirname "$0")/_venv.sh"
cep_venv test
cep_java
cep_apt redis-server redis-server
cep_apt chromium chromium
cep_apt chromium-driver chromedriver
cd "$ROOT"
exec "$PY" -m pytest -p no:cacheprovider "$@"
