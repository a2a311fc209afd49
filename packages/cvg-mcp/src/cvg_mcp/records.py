"""Run records saved to cvg-run's state directory off the calling thread."""

from __future__ import annotations

import queue
import sys
import threading
from typing import Any

from cvg_run import record as run_record


class RecordWriter:
    """One thread writing records atomically, in the order they were put."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name="cvg-mcp records", daemon=True)
        self._thread.start()

    def put(self, path: str, rec: dict[str, Any]) -> None:
        self._queue.put((path, rec))

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop."""
        self._queue.put(None)
        self._thread.join(timeout)

    def flush(self) -> None:
        self._queue.join()

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                path, rec = item
                try:
                    run_record.write_atomic(path, run_record.dumps(rec))
                except OSError as e:
                    sys.stderr.write(f"cvg-mcp: cannot save run record {path}: {e}\n")
            finally:
                self._queue.task_done()
