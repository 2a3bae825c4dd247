"""How a long-running command (`cep manager`, `cep worker`) learns it should stop.

SIGTERM always stops it. SIGINT stops it too, unless the process started with SIGINT
ignored: that is how a parent says "Ctrl-C is not for you" (`nohup`, a background job of a
shell without job control, `bin/cep.sh`, which stops its children itself with SIGTERM).
Python keeps an inherited SIG_IGN; installing a handler over it would let a Ctrl-C meant for
someone else stop the process (bin/cep.sh would then see its children exit and start them
again)."""

import signal
import threading


def stop_on_signals(stop: threading.Event) -> None:
    """Set `stop` on SIGTERM, and on SIGINT unless SIGINT was ignored when the process
    started."""
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, lambda *_: stop.set())
