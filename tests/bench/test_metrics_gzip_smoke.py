"""bench.metrics_gzip packs a real exposition with each packer and measures its floor."""

from __future__ import annotations

import zlib

from bench.metrics_gzip import body_parts, packers, row


def test_the_body_is_the_advisors_exposition_and_every_packer_gets_a_column() -> None:
    parts = body_parts(3)
    assert b"koordlet_pod_psi{" in b"".join(parts)
    found = packers()
    assert found[0] == ("zlib", zlib)
    cells = row(3, found, repeats=1)
    assert len(cells) == 2 + 3 * len(found) + 1
    assert all(float(cell.replace(",", "")) > 0 for cell in cells)
