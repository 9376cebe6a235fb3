"""A candidate program: the source of a module defining `class ModelNew(nn.Module)`.

Same contract as KernelBench's output: `ModelNew` takes the constructor arguments of the task's
`Model` and its forward launches Triton kernels. A coder may attach serializable metadata (the
template coder keeps its kernel IR there) so the next step can edit the IR instead of the text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Program:
    source: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def digest(self) -> str:
        """Content hash of the source: the verdict cache key (metadata never changes behaviour)."""
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "metadata": self.metadata}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Program:
        return cls(source=data["source"], metadata=dict(data.get("metadata") or {}))
