"""promtool's `check metrics` on a scrape body, its lint notes on koordlet's own names aside.

promtool exits 1 when it cannot parse the body and 3 when it only has lint notes. koordlet
(Go) names two histograms in milliseconds, and we keep its names so that its dashboards
and alerts read ours: the note that they should be in seconds is the only one allowed.
"""

from __future__ import annotations

import subprocess

# koordlet's metric names, kept as they are though promtool would have them in seconds
KOORDLET_NAMES_IN_MILLISECONDS = (
    "koordlet_resource_update_duration_milliseconds",
    "koordlet_runtime_hook_invoked_duration_milliseconds",
)
LINT_ONLY = 3


def promtool_problems(body: bytes) -> list[str]:
    """What promtool finds wrong with `body` ([] when nothing), koordlet's names aside."""
    result = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True, timeout=60)
    if result.returncode not in (0, LINT_ONLY):
        return ["promtool exited %d: %s" % (result.returncode, (result.stdout + result.stderr).decode())]
    notes = (result.stdout + result.stderr).decode().splitlines()
    return [note for note in notes if note.strip() and not any(
        note.startswith(name + " use base unit") for name in KOORDLET_NAMES_IN_MILLISECONDS)]
