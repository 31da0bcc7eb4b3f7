"""Regenerate (or check) the Python modules compiled from the .proto sources in proto/.

    python -m proto.generate           # rewrite every *_pb2*.py / *.pyi next to its source
    python -m proto.generate --check   # exit 1 and list the files that differ

protoc runs with the project root (the directory holding ``proto/``) as its include
path, so every source is named ``proto/...`` and generated imports read
``from proto.ttrpc import request_pb2``: the generated code resolves inside this
package and never relies on sys.path tricks.
"""

from __future__ import annotations

import argparse
import importlib.resources
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
PROJECT_ROOT = PROTO_DIR.parent

GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


@dataclass(frozen=True, slots=True)
class ProtoSource:
    """One .proto file, relative to the project root, and whether it gets gRPC stubs."""

    path: str
    grpc_stubs: bool = False


SOURCES: tuple[ProtoSource, ...] = (
    ProtoSource("proto/google/rpc/status.proto"),
    ProtoSource("proto/ttrpc/request.proto"),
    ProtoSource("proto/nri/pkg/api/v1alpha1/api.proto"),
    ProtoSource("proto/k8s/podresources/v1/api.proto", grpc_stubs=True),
    ProtoSource("proto/cri/api.proto", grpc_stubs=True),
    ProtoSource("proto/k8s/resourceplugin/v1alpha1/api.proto", grpc_stubs=True),
)


class GenerationError(RuntimeError):
    """protoc refused a source file."""


def _well_known_include() -> str:
    """The directory holding google/protobuf/*.proto as shipped with grpcio-tools."""
    return str(importlib.resources.files("grpc_tools") / "_proto")


def _run_protoc(out_dir: Path) -> None:
    from grpc_tools import protoc  # imported lazily: a runtime install needs no grpcio-tools

    for source in SOURCES:
        args = [
            "grpc_tools.protoc",
            "-I" + str(PROJECT_ROOT),
            "-I" + _well_known_include(),
            "--python_out=" + str(out_dir),
            "--pyi_out=" + str(out_dir),
        ]
        if source.grpc_stubs:
            args.append("--grpc_python_out=" + str(out_dir))
        args.append(source.path)
        if protoc.main(args) != 0:
            raise GenerationError("protoc failed for " + source.path)


def _generated_files(root: Path) -> dict[str, bytes]:
    """Every generated file below root/proto, keyed by its path relative to root."""
    found: dict[str, bytes] = {}
    base = root / "proto"
    if not base.is_dir():
        return found
    for path in base.rglob("*"):
        if path.is_file() and path.name.endswith(GENERATED_SUFFIXES):
            found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


# NRI's enum Field has a value named None: protoc's stub declares `None: ...`, which is no
# Python (the runtime module is fine: the value is reached as Field.Value("None")).
_KEYWORD_MEMBER = re.compile(rb"^(\s*)None: (.*)$", re.M)


def _typeable(stub: bytes) -> bytes:
    """A .pyi protoc wrote, with declarations a type checker cannot parse turned into comments."""
    return _KEYWORD_MEMBER.sub(rb'\1# None: \2  (a keyword: Field.Value("None") at run time)', stub)


def _fresh_files() -> dict[str, bytes]:
    """What a fresh protoc run generates, stubs made typeable."""
    with tempfile.TemporaryDirectory(prefix="proto-gen-") as tmp:
        fresh_root = Path(tmp)
        _run_protoc(fresh_root)
        fresh = _generated_files(fresh_root)
    return {name: _typeable(content) if name.endswith(".pyi") else content for name, content in fresh.items()}


def stale_files() -> list[str]:
    """Paths (relative to the project root) whose committed content differs from a fresh run."""
    fresh = _fresh_files()
    committed = _generated_files(PROJECT_ROOT)
    names = sorted(set(fresh) | set(committed))
    return [name for name in names if fresh.get(name) != committed.get(name)]


def regenerate() -> list[str]:
    """Write fresh generated files into the tree; remove generated files without a source."""
    fresh = _fresh_files()
    committed = _generated_files(PROJECT_ROOT)
    changed: list[str] = []
    for name in sorted(set(committed) - set(fresh)):
        (PROJECT_ROOT / name).unlink()
        changed.append(name)
    for name, content in sorted(fresh.items()):
        if committed.get(name) != content:
            target = PROJECT_ROOT / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            changed.append(name)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proto.generate", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="only report stale generated files; exit 1 if any"
    )
    options = parser.parse_args(argv)
    try:
        if options.check:
            stale = stale_files()
            for name in stale:
                sys.stderr.write("stale generated file: " + name + "\n")
            return 1 if stale else 0
        for name in regenerate():
            sys.stdout.write("updated " + name + "\n")
    except GenerationError as err:
        sys.stderr.write(str(err) + "\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
