"""prometheus_client's package as koordlet.metrics registers it: the metric types without the
package's HTTP servers, and the whole package for whatever asks it for more."""

from __future__ import annotations

import subprocess
import sys

from tests.koordlet.daemon_process import PROJECT_ROOT

# run in a fresh interpreter: this one imported the whole package already
AFTER_THE_DAEMONS_IMPORTS = """
import sys
from koordlet.metrics.client import CollectorRegistry, Counter
registry = CollectorRegistry()
Counter("jobs", "Jobs done.", registry=registry).inc()
print("exposition" if "prometheus_client.exposition" in sys.modules else "bare")
import prometheus_client
from prometheus_client import generate_latest
print(generate_latest(registry).decode().splitlines()[-1])
print(prometheus_client.CollectorRegistry is CollectorRegistry, callable(prometheus_client.start_http_server))
print(hasattr(prometheus_client, "no_such_name"))
"""


def test_the_package_runs_its_init_when_asked_for_a_name_it_lacks():
    out = subprocess.run([sys.executable, "-c", AFTER_THE_DAEMONS_IMPORTS], cwd=PROJECT_ROOT, check=True,
                         capture_output=True, text=True).stdout.splitlines()
    assert out == ["bare", "jobs_total 1.0", "True True", "False"]


def test_the_package_imported_first_is_used_as_it_is():
    script = "import prometheus_client, koordlet.metrics.client as c; print(c.Counter is prometheus_client.Counter)"
    out = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, check=True, capture_output=True,
                         text=True).stdout
    assert out == "True\n"
