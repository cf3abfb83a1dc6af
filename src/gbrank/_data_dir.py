"""Where the optional real LETOR data lives, for tests, examples and benchmarks."""

from __future__ import annotations

import os
from pathlib import Path

_REPO_ROOT = Path(__file__).resolve().parents[2]  # src/gbrank/_data_dir.py


def data_dir() -> Path | None:
    """Directory holding the LETOR copies, or None when it is absent.

    ``GBRANK_DATA_DIR`` wins; otherwise ``../shared/data`` next to a source checkout.
    """
    env = os.environ.get("GBRANK_DATA_DIR")
    candidate = Path(env) if env else _REPO_ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None
