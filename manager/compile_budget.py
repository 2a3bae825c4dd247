"""A time budget for compiling a plan the manager was sent: one tenant must not keep the
manager busy for minutes with a plan at the size limit (a parse costs about 25 us per byte).

A plan above `small_bytes` is first compiled in a child process (forked from a preloaded
forkserver, so it starts in milliseconds) that is killed when it has not finished within
`limits.validate_secs`; the request then gets a PlanRejectedError saying so. Within the
budget, the child's verdict stands: its positioned errors come back as they are, and a plan
it found valid is compiled again in the manager (within about the same time). Smaller plans
are compiled directly: they take well under the budget."""

import logging
import multiprocessing
import time

from manager.exceptions import PlanRejectedError

log = logging.getLogger(__name__)
SMALL_BYTES = 32 * 1024
_CTX = None


def _context():
    global _CTX
    if _CTX is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["cep", "manager.compiler"])
        _CTX = ctx
    return _CTX


def _check(text, conn):
    from manager.compiler import compile_plan

    try:
        compile_plan(text)
        conn.send(None)
    except PlanRejectedError as exc:
        conn.send((str(exc), exc.errors))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which decides
        conn.send((f"{type(exc).__name__}: {exc}", []))
    finally:
        conn.close()


def check_in_budget(text, seconds, small_bytes=SMALL_BYTES):
    """Raise PlanRejectedError when `text` does not compile, or does not finish compiling in
    `seconds` (0: no budget); return when it compiles in time (or is small)."""
    if not seconds or not isinstance(text, str) or len(text) <= small_bytes:
        return
    ctx = _context()
    deadline = time.monotonic() + seconds  # the start counts: it hands the text over
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_check, args=(text, child), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(max(0.0, deadline - time.monotonic())):
            raise PlanRejectedError(
                f"the plan ({len(text)} characters) did not compile within {seconds:g} s "
                f"(limits.validate_secs): split it into smaller plans, or ask the operator to "
                f"raise the limit",
                [
                    {
                        "error": "PlanLimitError",
                        "line": 1,
                        "column": 1,
                        "endLine": 1,
                        "endColumn": 2,
                        "message": "compile time budget exceeded",
                    }
                ],
            )
        try:
            verdict = parent.recv()
        except EOFError:
            raise PlanRejectedError(
                "the plan could not be compiled (the checking process died)"
            ) from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()
    if verdict is not None:
        message, errors = verdict
        raise PlanRejectedError(message, errors)
