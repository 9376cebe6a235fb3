"""SQLite verdict cache: training must never pay twice for the same program on the same device.

Key: (task source hash, program digest, device name, verifier version, settings fingerprint,
isolation level).
The settings fingerprint covers everything that can change a verdict (seeds, thresholds, static
checks on/off), so a looser configuration can never serve its verdicts to a stricter one.
Safe across processes and threads: WAL journal, a busy timeout, one short transaction per call,
a fresh connection per call (sqlite3 connections must not cross threads or forks).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mtmc.verify.verdict import Verdict

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    program TEXT NOT NULL,
    device TEXT NOT NULL,
    version TEXT NOT NULL,
    verdict TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(task_source: str, program_digest: str, device: str, version: str, settings: str,
              isolation: str) -> str:
    """`isolation` is the sandbox the verdict was judged under (sandbox.describe): a verdict from a
    weaker sandbox, where an escape could pass, is never served to a verifier with a stronger one."""
    parts = [hashlib.sha256(task_source.encode()).hexdigest(), program_digest, device, version, settings,
             isolation]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class VerdictCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)  # autocommit: 1 statement
        try:
            yield db
        finally:
            db.close()

    def get(self, key: str) -> Verdict | None:
        with self._connect() as db:
            row = db.execute("SELECT verdict FROM verdicts WHERE key = ?", (key,)).fetchone()
        return Verdict.from_dict(json.loads(row[0])) if row else None

    def put(self, key: str, verdict: Verdict, task: str, program: str) -> None:
        data = json.dumps(verdict.to_dict())
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (key, task, program, verdict.device, verdict.verifier_version, data, time.time()))

    def __len__(self) -> int:
        with self._connect() as db:
            return db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
