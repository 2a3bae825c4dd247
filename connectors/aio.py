"""An asyncio event loop on a thread of its own, for connectors whose client library is
asyncio-only (nats-py, websockets): the worker's threads call `run(coro, timeout)`."""

import asyncio
import concurrent.futures
import threading


class LoopThread:
    """One event loop on one daemon thread; `run` waits for a coroutine's result."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro, timeout: float = None):
        """The coroutine's result; TimeoutError after `timeout` s (the coroutine is
        cancelled)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout} s") from None

    def close(self):
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self.loop.close()
