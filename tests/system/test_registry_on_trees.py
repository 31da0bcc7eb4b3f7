"""Every writable resource, on v1, v2 and hybrid fake trees: write a valid value through
CgroupFiles and find it back in the file (compared through kernel text).

The trees hold only names the kernel documents (test_registry_names checks them), and
nothing here creates the file under test: a resource whose computed path is missing
must be one this host does not offer, never one the tree forgot."""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from system.cgroup_codecs import CpusetValue, DeviceLimit, DeviceValue, IntRange
from system.cgroup_files import CgroupFiles
from system.cgroup_resource import REGISTRY, CgroupResource
from system.errors import InvalidValue, NotSupported
from tests.system.door import write_value
from tests.system.fake_trees import (
    add_cgroup,
    build_hybrid_tree,
    build_v1_tree,
    build_v2_tree,
)
from tests.system.kernel_files import VENDOR_V1_FILES, VENDOR_V2_FILES

CG = "kubepods/besteffort/podx"
PAGE = os.sysconf("SC_PAGE_SIZE")
WRITABLE = sorted(name for name, res in REGISTRY.items() if res.writable and not res.write_only)


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    out = {}
    builders = (("v1", lambda p: build_v1_tree(p, anolis=True)), ("v2", build_v2_tree),
                ("hybrid", lambda p: build_hybrid_tree(p, anolis=True)))
    for label, build in builders:
        host = build(tmp_path_factory.mktemp(label))
        for rel in ("kubepods", "kubepods/besteffort", CG):
            add_cgroup(host, rel)
        out[label] = CgroupFiles(host)
    return out


def values_for(res: CgroupResource) -> st.SearchStrategy:
    validator = res.validator
    if isinstance(validator, IntRange):
        bounded = st.integers(validator.lo, min(validator.hi, 1 << 62))
        if res.page_rounded:  # a regular file does not round to pages as the kernel does
            bounded = st.integers(validator.lo, min(validator.hi, 1 << 50)).map(
                lambda n: n - n % PAGE)
        return st.one_of(st.just(-1), bounded) if validator.unlimited else bounded
    if isinstance(validator, CpusetValue):
        return st.frozensets(st.integers(0, 255), max_size=16)
    if isinstance(validator, DeviceValue):
        return st.builds(DeviceLimit, st.integers(0, 4095), st.integers(0, 1 << 20),
                         st.integers(0, 1 << 62))
    raise AssertionError("no strategy for %s" % res.name)


@pytest.mark.parametrize("label", ["v1", "v2", "hybrid"])
@pytest.mark.parametrize("name", WRITABLE)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_written_value_reads_back(trees, label, name, data):
    files = trees[label]
    res = REGISTRY[name]
    try:
        path = files.path(res, CG)
    except NotSupported:  # no file for this version, or the controller is not there
        assert res.file(2 if label == "v2" else 1) is None or not files.hierarchy.has_controller(
            res.subsystem)
        return
    version = files.version_for(res)
    if not path.exists():  # only a vendor file may be absent, and then it is unsupported
        vendor = (VENDOR_V2_FILES if version == 2 else VENDOR_V1_FILES).get(
            res.subsystem if version == 1 else "cpu" if res.subsystem == "cpuacct"
            else res.subsystem, frozenset())
        assert res.file(version) in vendor, "fake tree lacks documented %s" % path.name
        assert not files.supported(res, CG)
        return
    before = sorted(p.name for p in path.parent.iterdir())
    value = data.draw(values_for(res))
    write_value(files, res.name, CG, value)
    assert sorted(p.name for p in path.parent.iterdir()) == before  # wrote, created nothing
    assert res.matches(value, files.read_text(res, CG), version)
    if res.name not in ("cgroup.procs", "tasks") and not isinstance(res.validator, DeviceValue):
        assert files.read(res, CG) == res.parse(res.format(value, version, "max 100000"),
                                                version)


@pytest.mark.parametrize("name", WRITABLE)
def test_out_of_range_is_refused_before_any_write(trees, name):
    files = trees["v1"]
    res = REGISTRY[name]
    bad = {IntRange: -2, CpusetValue: "x", DeviceValue: "8:0 1"}[type(res.validator)]
    if isinstance(res.validator, IntRange) and res.validator.lo < -2:
        bad = res.validator.lo - 1
    with pytest.raises(InvalidValue):
        res.validate(bad)
    if not files.supported(res, CG):
        return
    before = files.read_text(res, CG)
    with pytest.raises(InvalidValue):
        write_value(files, res.name, CG, bad)
    assert files.read_text(res, CG) == before
