"""koordletctl COMMAND [-o table|json|yaml] [--addr HOST:PORT]

status, pods, allocations, nodemetric, overcommit, nodeslo read the daemon's JSON routes;
top reads /metrics and refreshes in place every --interval seconds (Ctrl-C ends it).
Exit 1 with one line when the daemon cannot be reached or answers an error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Sequence

import yaml

from koordlet.ctl import views

DEFAULT_ADDR = "127.0.0.1:9316"
TIMEOUT_SECONDS = 5.0


class Unreachable(Exception):
    """The daemon did not answer, or answered an error; str() says which."""


def fetch(addr: str, path: str, accept_error: bool = False) -> bytes:
    url = f"http://{addr}{path}"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 (http only)
            return response.read()
    except urllib.error.HTTPError as exc:
        if accept_error:
            return exc.read()
        raise Unreachable(f"{url} answered {exc.code}: {exc.read()[:200].decode(errors='replace').strip()}") \
            from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise Unreachable(f"cannot reach koordlet at {addr} ({reason}); is it running? (--addr)") from None


def fetch_json(addr: str, path: str, accept_error: bool = False) -> Any:
    return json.loads(fetch(addr, path, accept_error))


def _status(addr: str) -> tuple[Any, views.Rows]:
    fetch(addr, "/healthz")
    readyz = fetch_json(addr, "/readyz", accept_error=True)  # 503 with its reasons while not ready
    return readyz, views.status_rows(readyz, True)


def _from(path: str, rows: Callable[[Any], views.Rows]) -> Callable[[str], tuple[Any, views.Rows]]:
    def command(addr: str) -> tuple[Any, views.Rows]:
        document = fetch_json(addr, path)
        return document, rows(document)
    return command


COMMANDS: dict[str, Callable[[str], tuple[Any, views.Rows]]] = {
    "status": _status,
    "pods": _from("/api/v1/pods", views.pod_rows),
    "allocations": _from("/api/v1/topology", views.allocation_rows),
    "nodemetric": _from("/apis/v1/nodemetric", views.nodemetric_rows),
    "overcommit": _from("/apis/v1/overcommit", views.annotation_rows),
    "nodeslo": _from("/api/v1/nodeslo", views.nodeslo_rows),
}


def render(document: Any, rows: views.Rows, output: str) -> str:
    if output == "json":
        return json.dumps(document, indent=2, sort_keys=True) + "\n"
    if output == "yaml":
        return yaml.safe_dump(document, sort_keys=True)
    return views.table(rows)


def top(addr: str, output: str, interval: float, iterations: int | None) -> None:
    shown = 0
    while iterations is None or shown < iterations:
        rows = views.top_rows(fetch(addr, "/metrics").decode())
        text = render(rows, rows, output)
        if sys.stdout.isatty() and output == "table":
            sys.stdout.write("\x1b[H\x1b[2J")  # refresh in place
        sys.stdout.write(text)
        sys.stdout.flush()
        shown += 1
        if iterations is None or shown < iterations:
            time.sleep(interval)


def parser() -> argparse.ArgumentParser:
    # no docstring under python -OO (the deployed daemon's PYTHONOPTIMIZE=2, which a shell in its container inherits)
    p = argparse.ArgumentParser(prog="koordletctl", description=(__doc__ or "").split("\n\n")[0] or None,
                                allow_abbrev=False)
    p.add_argument("command", choices=[*COMMANDS, "top"])
    p.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    p.add_argument("--addr", default=DEFAULT_ADDR, help=f"the daemon's --addr (default {DEFAULT_ADDR})")
    p.add_argument("--interval", type=float, default=2.0, help="top: seconds between refreshes")
    p.add_argument("-n", "--iterations", type=int, default=None, help="top: stop after this many")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    addr = args.addr.replace("0.0.0.0", "127.0.0.1") if args.addr.startswith("0.0.0.0") else args.addr
    if addr.startswith(":"):
        addr = "127.0.0.1" + addr
    try:
        if args.command == "top":
            top(addr, args.output, args.interval, args.iterations)
        else:
            document, rows = COMMANDS[args.command](addr)
            sys.stdout.write(render(document, rows, args.output))
    except Unreachable as exc:
        print(f"koordletctl: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    return 0
