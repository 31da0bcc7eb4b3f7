"""Where the read-only reference material lives: `../shared/` beside the project
root (CI lays it there), or beside a parent for git worktrees, or wherever
$KOORDLET_SHARED_DIR points."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def shared_file(*parts: str) -> Path:
    """The path of a shared file; the first candidate that exists, else the default one."""
    bases = []
    if os.environ.get("KOORDLET_SHARED_DIR"):
        bases.append(Path(os.environ["KOORDLET_SHARED_DIR"]))
    bases += [base / "shared" for base in (PROJECT_ROOT.parent, *PROJECT_ROOT.parent.parents)]
    for base in bases:
        candidate = base.joinpath(*parts)
        if candidate.is_file():
            return candidate
    return bases[0].joinpath(*parts)


NRI_CAPTURE = ("reference", "nri-capture-containerd-2.3.4.jsonl")
