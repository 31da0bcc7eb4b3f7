"""NriFeed's reuse of a sandbox's view: an unchanged sandbox is not converted again, any change
of a field the informer reads is."""

from __future__ import annotations

from typing import Callable

import pytest

import koordlet.statesinformer.nri_feed as nri_feed
from koordlet.statesinformer.model import NodeInfo, PodInfo
from koordlet.statesinformer.nri_feed import ContainerChange, NriFeed, SandboxChange
from koordlet.statesinformer.store import PodStore
from proto.nri.pkg.api.v1alpha1 import api_pb2
from tests.koordlet.statesinformer.nri_fixtures import container, sandbox, uid_of

LABELS = {"app": "web", "tier": "front", "io.kubernetes.pod.name": "pod-1"}
# 64 more keys: with a dozen, about one process in twenty hashed every order tried to the same
# serialized order (upb's map order follows its hash table), and the test below skipped
ANNOTATIONS = {"kubernetes.io/config.source": "api", "koordinator.sh/qosClass": "LS", "a": "1", "b": "2",
               **{"io.kubernetes.cri.key-%d" % n: "value-%d" % n for n in range(64)}}


def _sandbox(labels: dict[str, str], annotations: dict[str, str]) -> api_pb2.PodSandbox:
    """The fixture's sandbox 1 parsed off a wire that carries its map entries in the order given."""
    wire = [sandbox(1).SerializeToString()]
    wire += [api_pb2.PodSandbox(labels={key: value}).SerializeToString() for key, value in labels.items()]
    wire += [api_pb2.PodSandbox(annotations={key: value}).SerializeToString() for key, value in annotations.items()]
    return api_pb2.PodSandbox.FromString(b"".join(wire))


def _fed(monkeypatch: pytest.MonkeyPatch) -> tuple[NriFeed, PodStore, list[api_pb2.PodSandbox]]:
    """A feed that knows sandbox 1 with one container; the list collects the sandboxes it converts."""
    converted: list[api_pb2.PodSandbox] = []
    convert = nri_feed.sandbox_view

    def counted(pb: api_pb2.PodSandbox):
        converted.append(pb)
        return convert(pb)

    monkeypatch.setattr(nri_feed, "sandbox_view", counted)
    store = PodStore(NodeInfo("node-a"))
    feed = NriFeed(store)
    pb = _sandbox(LABELS, ANNOTATIONS)
    feed.nri_synchronized([pb], [container(pb, "c1")])
    assert len(converted) == 1
    return feed, store, converted


def test_maps_in_another_order_are_the_same_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    feed, store, converted = _fed(monkeypatch)
    before = store.pod(uid_of(1))
    reordered = _reordered_sandbox()
    feed.nri_container_event(ContainerChange.STARTED, reordered, container(reordered, "c1"))
    feed.nri_pod_event(SandboxChange.UPDATE, reordered)
    assert len(converted) == 1
    assert store.pod(uid_of(1)) is before


def _reordered_sandbox() -> api_pb2.PodSandbox:
    """The sandbox with its maps filled in another order, serialized to other bytes (so the
    test is not one of equal bytes). upb does not promise a map's serialized order: try the
    orders in turn and skip if every one gives the same bytes."""
    original = _sandbox(LABELS, ANNOTATIONS).SerializeToString()
    labels, annotations = list(LABELS.items()), list(ANNOTATIONS.items())
    for shift in range(1, max(len(labels), len(annotations)) + 1):
        rotated = [items[shift:] + items[:shift] for items in (labels, annotations)]
        for label_order, annotation_order in (rotated, [list(reversed(items)) for items in rotated]):
            candidate = _sandbox(dict(label_order), dict(annotation_order))
            if candidate.SerializeToString() != original:
                return candidate
    pytest.skip("every order of the maps serialized to the same bytes")


def _set(field: str, value: str) -> Callable[[api_pb2.PodSandbox], None]:
    return lambda pb: setattr(pb, field, value)


def _put(table: str, key: str, value: str) -> Callable[[api_pb2.PodSandbox], None]:
    return lambda pb: getattr(pb, table).__setitem__(key, value)


def _drop(table: str, key: str) -> Callable[[api_pb2.PodSandbox], None]:
    return lambda pb: getattr(pb, table).__delitem__(key)


def _parent(value: str) -> Callable[[api_pb2.PodSandbox], None]:
    return lambda pb: setattr(pb.linux, "cgroup_parent", value)


# every sandbox field sandbox_view reads (id and uid: a pod under another key, below)
CHANGES: dict[str, tuple[Callable[[api_pb2.PodSandbox], None], Callable[[PodInfo], object], object]] = {
    "name": (_set("name", "pod-renamed"), lambda pod: pod.name, "pod-renamed"),
    "namespace": (_set("namespace", "other"), lambda pod: pod.namespace, "other"),
    "cgroup_parent": (_parent("/kubepods/pod" + uid_of(1)), lambda pod: pod.cgroup_parent, "kubepods/pod" + uid_of(1)),
    "label value": (_put("labels", "tier", "back"), lambda pod: pod.labels["tier"], "back"),
    "label added": (_put("labels", "new", "x"), lambda pod: pod.labels.get("new"), "x"),
    "label removed": (_drop("labels", "app"), lambda pod: "app" in pod.labels, False),
    "annotation value": (_put("annotations", "a", "9"), lambda pod: pod.annotations["a"], "9"),
    "annotation added": (_put("annotations", "new", "x"), lambda pod: pod.annotations.get("new"), "x"),
    "annotation removed": (_drop("annotations", "b"), lambda pod: "b" in pod.annotations, False),
    "label key for value": (_put("labels", "app", "front"), lambda pod: pod.labels["app"], "front"),
}


@pytest.mark.parametrize("event", ["container", "sandbox"])
@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_field_changes_the_pod(monkeypatch: pytest.MonkeyPatch, change: str, event: str) -> None:
    feed, store, converted = _fed(monkeypatch)
    edit, read, expected = CHANGES[change]
    before = store.pod(uid_of(1))
    assert before is not None and read(before) != expected
    pb = _sandbox(LABELS, ANNOTATIONS)
    edit(pb)
    if event == "container":
        feed.nri_container_event(ContainerChange.STARTED, pb, container(pb, "c1"))
    else:
        feed.nri_pod_event(SandboxChange.UPDATE, pb)
    after = store.pod(uid_of(1))
    assert len(converted) == 2
    assert after is not None and read(after) == expected


@pytest.mark.parametrize("field", ["id", "uid"])
def test_another_id_or_uid_is_another_sandbox(monkeypatch: pytest.MonkeyPatch, field: str) -> None:
    feed, store, converted = _fed(monkeypatch)
    pb = _sandbox(LABELS, ANNOTATIONS)
    setattr(pb, field, "sb-other" if field == "id" else uid_of(2))
    feed.nri_pod_event(SandboxChange.UPDATE, pb)
    assert len(converted) == 2
    if field == "uid":
        pod = store.pod(uid_of(2))
        assert pod is not None and pod.sandbox_id == "sb1"
