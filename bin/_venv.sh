# Sourced by the bin/ scripts: create .venv and install the project on first use (a no-op
# afterwards, unless setup.cfg changed), and install the Debian packages a step needs.
# Usage: . bin/_venv.sh [extras] ; then use "$PY" and "$VENV/bin/..."
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"

cep_venv() {
    local extras="${1:-}" spec="$ROOT" stamp want
    [ -n "$extras" ] && spec="$ROOT[$extras]"
    if [ ! -x "$PY" ]; then
        echo "[setup] creating $VENV" >&2
        python3 -m venv "$VENV"
    fi
    want="$(cat "$ROOT/setup.cfg" "$ROOT/pyproject.toml" | sha1sum | cut -c1-16)"
    stamp="$VENV/.cep-installed-$want-${extras:-base}"
    if [ ! -f "$stamp" ]; then
        echo "[setup] installing the project into $VENV (first use or setup.cfg changed)" >&2
        local log="$VENV/pip-install.log"
        if ! { "$PY" -m pip install --upgrade pip && "$PY" -m pip install -e "$spec"; } >"$log" 2>&1; then
            tail -n 30 "$log" >&2
            echo "[setup] pip install failed; full log: $log" >&2
            return 1
        fi
        # stamps of an older setup.cfg are stale; other extras of this one stay valid
        find "$VENV" -maxdepth 1 -name '.cep-installed-*' ! -name ".cep-installed-$want-*" -delete
        touch "$stamp"
    fi
}

# cep_apt PACKAGE COMMAND: install a Debian package when its command is missing.
cep_apt() {
    local pkg="$1" cmd="$2" sudo=""
    command -v "$cmd" >/dev/null 2>&1 && return 0
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "[setup] installing Debian package $pkg (for $cmd)" >&2
    if [ ! -f /tmp/.cep-apt-updated ]; then
        $sudo apt-get update -qq >&2 && touch /tmp/.cep-apt-updated
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$pkg" >&2
}

cep_java() {
    if ! command -v java >/dev/null 2>&1; then
        cep_apt openjdk-17-jre-headless java
    fi
}
