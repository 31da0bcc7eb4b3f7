"""Stub decision logic without sockets: identity, split sync, backoff, deadline
guard, handler results and the dispatcher called directly."""

import asyncio
import gc
import weakref
from types import SimpleNamespace

import pytest

from nri.events import EVENT_SPECS, Event
from nri.stub.backoff import BackoffPolicy
from nri.stub.deadline import DeadlinePolicy, inside_handler, run_guarded
from nri.stub.dispatch import PluginDispatcher, RuntimeInfo
from nri.stub.errors import AdjustmentRejected, InvalidIdentity, InvalidPlugin
from nri.stub.identity import PluginIdentity, launched_socket_fd, resolve_identity
from nri.stub.results import (
    REQUEST_TYPES,
    EncodedResponse,
    HandlerResultError,
    create_container_response,
    requested_mask,
    validation_response,
)
from nri.stub.sync_collector import SyncCollector
from proto.nri.pkg.api.v1alpha1 import api_pb2 as api

# -- identity -------------------------------------------------------------------


@pytest.mark.parametrize("index", ["1", "100", "ab", "", " 1", "１２"])
def test_index_must_be_exactly_two_ascii_digits(index):
    with pytest.raises(InvalidIdentity):
        PluginIdentity("koordlet", index)


@pytest.mark.parametrize("name", ["", "has space", "slash/name", "ümlaut"])
def test_name_must_be_nonempty_and_use_the_allowed_charset(name):
    with pytest.raises(InvalidIdentity):
        PluginIdentity(name, "10")


def test_valid_identity_and_full_name():
    ident = PluginIdentity("koord_let.v1+x-y", "05")
    assert ident.full_name == "05-koord_let.v1+x-y"
    assert PluginIdentity.from_file_name("10-logger") == PluginIdentity("logger", "10")
    with pytest.raises(InvalidIdentity):
        PluginIdentity.from_file_name("logger")


def test_identity_comes_from_the_runtime_environment_when_not_given():
    env = {"NRI_PLUGIN_NAME": "launched", "NRI_PLUGIN_IDX": "42", "NRI_PLUGIN_SOCKET": "3"}
    assert resolve_identity(None, None, env) == PluginIdentity("launched", "42")
    assert resolve_identity("mine", "01", env) == PluginIdentity("mine", "01")
    assert launched_socket_fd(env) == 3
    assert launched_socket_fd({}) is None
    with pytest.raises(InvalidIdentity):
        launched_socket_fd({"NRI_PLUGIN_SOCKET": "three"})
    with pytest.raises(InvalidIdentity):
        resolve_identity(None, None, {})
    assert resolve_identity(None, None, {}, "/opt/nri/plugins/35-koordlet") == PluginIdentity("koordlet", "35")
    assert resolve_identity("mine", None, {}, "/opt/nri/plugins/35-koordlet") == PluginIdentity("mine", "35")
    with pytest.raises(InvalidIdentity):
        resolve_identity(None, None, {}, "/usr/bin/python3")


# -- split sync -----------------------------------------------------------------


def _pod(i):
    return api.PodSandbox(id="pod%d" % i)


def _ctr(i):
    return api.Container(id="ctr%d" % i, pod_sandbox_id="pod%d" % i)


def test_single_synchronize_message_is_delivered_at_once():
    c = SyncCollector()
    snap = c.add(api.SynchronizeRequest(pods=[_pod(1)], containers=[_ctr(1)]))
    assert snap is not None and [p.id for p in snap.pods] == ["pod1"] and snap.chunks == 1


def test_split_synchronize_accumulates_until_more_is_false_then_resets():
    c = SyncCollector()
    assert c.add(api.SynchronizeRequest(pods=[_pod(1)], more=True)) is None
    assert c.add(api.SynchronizeRequest(containers=[_ctr(1)], more=True)) is None
    assert SyncCollector.interim_response() == api.SynchronizeResponse(more=True)
    snap = c.add(api.SynchronizeRequest(pods=[_pod(2)], containers=[_ctr(2)]))
    assert [p.id for p in snap.pods] == ["pod1", "pod2"]
    assert [x.id for x in snap.containers] == ["ctr1", "ctr2"]
    assert snap.chunks == 3
    assert c.pending_chunks == 0
    assert len(c.add(api.SynchronizeRequest()).pods) == 0


# -- backoff --------------------------------------------------------------------


def test_backoff_grows_and_is_capped():
    b = BackoffPolicy(initial=0.1, factor=2.0, cap=1.0)
    assert [b.delay(n) for n in range(6)] == [0.0, 0.1, 0.2, 0.4, 0.8, 1.0]
    with pytest.raises(ValueError):
        BackoffPolicy(initial=0)


# -- deadline policy ------------------------------------------------------------


def test_budget_is_a_fraction_of_the_requests_remaining_time():
    p = DeadlinePolicy(fraction=0.75)
    assert p.budget(now=10.0, deadline=12.0, request_timeout=None) == pytest.approx(1.5)
    assert p.budget(now=10.0, deadline=None, request_timeout=4.0) == pytest.approx(3.0)
    assert p.budget(now=10.0, deadline=None, request_timeout=None) == pytest.approx(1.5)
    assert p.budget(now=13.0, deadline=12.0, request_timeout=None) == 0.0
    assert DeadlinePolicy(enabled=False).budget(0.0, 1.0, None) is None
    with pytest.raises(ValueError):
        DeadlinePolicy(fraction=0.0)


async def test_guard_returns_a_fast_handlers_result():
    async def fast():
        return 7

    outcome = await run_guarded(fast(), "CreateContainer", 1.0, set())
    assert outcome.completed and outcome.value == 7


async def test_guard_waits_for_a_handler_that_suspends_within_budget():
    async def suspends():
        await asyncio.sleep(0.01)
        return "ok"

    outcome = await run_guarded(suspends(), "CreateContainer", 1.0, set())
    assert outcome.completed and outcome.value == "ok"


async def test_the_task_of_a_handler_that_suspended_is_freed_when_it_ends_without_the_collector():
    tasks = []

    async def suspends():
        await asyncio.sleep(0)  # the first step ran inline, the rest in the guard's task
        tasks.append(weakref.ref(asyncio.current_task()))
        return "ok"

    gc.disable()  # only reference counting frees: a cycle through the task would keep it
    try:
        outcome = await run_guarded(suspends(), "CreateContainer", 1.0, set())
        await asyncio.sleep(0)  # the loop lets go of the finished task
        assert outcome.completed and outcome.value == "ok"
        assert tasks[0]() is None
    finally:
        gc.enable()


async def test_guard_gives_up_on_a_slow_handler_and_discards_its_late_result():
    release, finished = asyncio.Event(), asyncio.Event()

    async def slow():
        await release.wait()  # slow for as long as the test likes: no timing to race
        finished.set()
        return "late"

    late: set = set()
    outcome = await run_guarded(slow(), "CreateContainer", 0.05, late)
    assert not outcome.completed and not finished.is_set()  # answered while the handler ran on
    assert len(late) == 1
    release.set()
    await asyncio.wait_for(finished.wait(), 10)
    await asyncio.sleep(0)
    assert late == set()


async def test_guard_propagates_handler_exceptions_both_paths():
    async def fails_now():
        raise RuntimeError("boom")

    async def fails_later():
        await asyncio.sleep(0)
        raise RuntimeError("later")

    with pytest.raises(RuntimeError, match="boom"):
        await run_guarded(fails_now(), "E", 1.0, set())
    with pytest.raises(RuntimeError, match="later"):
        await run_guarded(fails_later(), "E", 1.0, set())


async def test_inside_handler_is_true_in_the_handler_but_not_in_tasks_it_spawns():
    seen = {}

    async def spawned():
        seen["child"] = inside_handler()

    async def handler():
        seen["inline"] = inside_handler()
        await asyncio.sleep(0)
        seen["resumed"] = inside_handler()
        await asyncio.create_task(spawned())
        return None

    assert inside_handler() is None
    await run_guarded(handler(), "CreateContainer", 1.0, set())
    assert seen == {"inline": "CreateContainer", "resumed": "CreateContainer", "child": None}
    assert inside_handler() is None


# -- results --------------------------------------------------------------------


def test_create_results_accept_the_convenient_shapes():
    adj = api.ContainerAdjustment(annotations={"a": "b"})
    upd = api.ContainerUpdate(container_id="other")
    assert create_container_response(None) == api.CreateContainerResponse()
    assert create_container_response(adj).adjust.annotations["a"] == "b"
    r = create_container_response((adj, [upd]))
    assert r.adjust == adj and list(r.update) == [upd]
    r = create_container_response((None, [upd], []))
    assert not r.HasField("adjust") and len(r.update) == 1
    with pytest.raises(HandlerResultError):
        create_container_response("nope")
    with pytest.raises(HandlerResultError):
        create_container_response((adj, ["not an update"]))


def test_validation_and_configure_results():
    assert not validation_response(None).reject
    assert validation_response(False).reject
    r = validation_response((False, "too big"))
    assert r.reject and r.reason == "too big"
    assert requested_mask(None) is None
    assert requested_mask(0x8) == 0x8
    assert requested_mask([Event.CREATE_CONTAINER, Event.STOP_CONTAINER]) == 0x208
    with pytest.raises(HandlerResultError):
        requested_mask(True)


# -- dispatcher -----------------------------------------------------------------


def _configure_request(nri="v0.12.0", version="v2.3.4"):
    return api.ConfigureRequest(
        runtime_name="containerd",
        runtime_version=version,
        registration_timeout=5000,
        request_timeout=2000,
        NRI_version=nri,
    )


class Recorder:
    def __init__(self):
        self.calls = []
        self.synced = None

    async def synchronize(self, pods, containers):
        self.synced = ([p.id for p in pods], [c.id for c in containers])
        return [api.ContainerUpdate(container_id="c1")]

    async def create_container(self, pod, ctr):
        self.calls.append(("create", ctr.id))
        return api.ContainerAdjustment(annotations={"seen": "yes"})

    async def start_container(self, pod, ctr):
        self.calls.append(("start", ctr.id))

    async def run_pod_sandbox(self, pod):
        self.calls.append(("run", pod.id))

    async def validate_container_adjustment(self, req):
        raise AdjustmentRejected("no way")


def _dispatcher(plugin, policy: DeadlinePolicy | None = None):
    policy = policy if policy is not None else DeadlinePolicy()
    events = {}
    d = PluginDispatcher(
        plugin,
        policy,
        on_configured=lambda rt, mask: events.update(configured=(rt, mask)),
        on_synchronized=lambda: events.update(synced=True),
    )
    return d, events


CTX = SimpleNamespace(deadline=None, metadata={})


async def _answer(method, request, ctx):
    """An event method's response, as the ttrpc server gets it: returned at once when the
    handler did not suspend, else awaited."""
    response = method(request, ctx)
    return await response if asyncio.iscoroutine(response) else response


def test_a_plugin_without_handlers_is_refused():
    with pytest.raises(InvalidPlugin):
        PluginDispatcher(object(), DeadlinePolicy(), lambda *a: None, lambda: None)


async def test_dispatcher_registers_only_handled_events_plus_the_fixed_methods():
    d, _ = _dispatcher(Recorder())
    methods = {m for (_, m) in d.handlers()}
    assert methods == {
        "Configure",
        "Synchronize",
        "Shutdown",
        "StateChange",
        "CreateContainer",
        "StartContainer",
        "RunPodSandbox",
        "ValidateContainerAdjustment",
    }


async def test_configure_answers_the_derived_mask_for_the_runtime_version():
    d, events = _dispatcher(Recorder())
    h = d.handlers()
    resp = await h[("nri.pkg.api.v1alpha1.Plugin", "Configure")][1](_configure_request(), CTX)
    assert resp.events == 0x1 | 0x8 | 0x20 | 0x2000
    rt, mask = events["configured"]
    assert rt.request_timeout == 2.0 and rt.registration_timeout == 5.0 and mask == resp.events
    resp = await h[("nri.pkg.api.v1alpha1.Plugin", "Configure")][1](_configure_request(nri="", version="v1.7.20"), CTX)
    assert resp.events == 0x1 | 0x8 | 0x20


async def test_split_synchronize_answers_more_then_delivers_everything_once():
    plugin = Recorder()
    d, events = _dispatcher(plugin)
    sync = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "Synchronize")][1]
    r1 = await sync(api.SynchronizeRequest(pods=[_pod(1)], containers=[_ctr(1)], more=True), CTX)
    assert r1.more and len(r1.update) == 0 and plugin.synced is None
    r2 = await sync(api.SynchronizeRequest(pods=[_pod(2)], more=False), CTX)
    assert not r2.more and [u.container_id for u in r2.update] == ["c1"]
    assert plugin.synced == (["pod1", "pod2"], ["ctr1"])
    await asyncio.sleep(0)
    assert events["synced"]


async def test_state_change_dispatches_to_the_same_handlers():
    plugin = Recorder()
    d, _ = _dispatcher(plugin)
    sc = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "StateChange")][1]
    await sc(api.StateChangeEvent(event=Event.START_CONTAINER, pod=_pod(1), container=_ctr(1)), CTX)
    await sc(api.StateChangeEvent(event=Event.RUN_POD_SANDBOX, pod=_pod(2)), CTX)
    await sc(api.StateChangeEvent(event=Event.REMOVE_CONTAINER, pod=_pod(1), container=_ctr(1)), CTX)  # not handled
    await sc(api.StateChangeEvent(event=99), CTX)  # unknown: ignored
    assert plugin.calls == [("start", "ctr1"), ("run", "pod2")]


async def test_validator_rejection_is_an_answer_not_an_error():
    d, _ = _dispatcher(Recorder())
    v = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "ValidateContainerAdjustment")][1]
    r = await _answer(v, api.ValidateContainerAdjustmentRequest(), CTX)
    assert r.reject and r.reason == "no way"


async def test_slow_create_is_answered_empty_within_the_guard_budget():
    release = asyncio.Event()

    class Slow:
        async def create_container(self, pod, ctr):
            await release.wait()  # still deciding when the guard answers
            return api.ContainerAdjustment(annotations={"late": "1"})

    d, _ = _dispatcher(Slow(), DeadlinePolicy(fraction=0.5))
    create = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "CreateContainer")][1]
    loop = asyncio.get_running_loop()
    ctx = SimpleNamespace(deadline=loop.time() + 0.1, metadata={})
    r = await _answer(create, api.CreateContainerRequest(pod=_pod(1), container=_ctr(1)), ctx)
    assert r == api.CreateContainerResponse()  # the empty answer, given while the handler ran on
    assert len(d.late_tasks) == 1
    release.set()
    for t in list(d.late_tasks):
        t.cancel()


async def test_runtime_info_without_timeouts_means_unknown():
    rt = RuntimeInfo.from_request(api.ConfigureRequest(runtime_name="containerd", runtime_version="v1.7.20"))
    assert rt.request_timeout is None and str(rt.nri_version) == "v0.6.1"


async def test_shutdown_rpc_reaches_the_plugin_even_though_containerd_never_sends_it():
    class WithShutdown(Recorder):
        async def shutdown(self):
            self.calls.append(("shutdown", ""))

    plugin = WithShutdown()
    d, _ = _dispatcher(plugin)
    r = await d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "Shutdown")][1](api.Empty(), CTX)
    assert r == api.Empty() and plugin.calls == [("shutdown", "")]


async def test_launched_plugin_with_an_unusable_fd_ends_run_without_retrying():
    import os

    from nri.stub.stub import Stub

    read_end, write_end = os.pipe()  # a pipe is not a socket: unusable as the trunk
    os.close(write_end)
    stub = Stub(Recorder(), environ={"NRI_PLUGIN_SOCKET": str(read_end), "NRI_PLUGIN_NAME": "x", "NRI_PLUGIN_IDX": "01"})
    try:
        await asyncio.wait_for(stub.run(), 5)
        assert not stub.is_ready and stub.connections == 0
    finally:
        import stat

        try:  # close it only if it is still our pipe (the stub may have closed it)
            if stat.S_ISFIFO(os.fstat(read_end).st_mode):
                os.close(read_end)
        except OSError:
            pass


async def test_create_is_answered_the_same_whether_the_handler_suspends_or_not():
    class Both:
        def __init__(self):
            self.scopes = []

        async def create_container(self, pod, ctr):
            self.scopes.append(inside_handler())
            if ctr.id == "ctr2":
                await asyncio.sleep(0.01)
                self.scopes.append(inside_handler())
            return api.ContainerAdjustment(annotations={"ctr": ctr.id})

    plugin = Both()
    d, _ = _dispatcher(plugin)
    create = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "CreateContainer")][1]
    inline = create(api.CreateContainerRequest(pod=_pod(1), container=_ctr(1)), CTX)
    assert isinstance(inline, api.CreateContainerResponse)  # nothing left to await: answered at once
    pending = create(api.CreateContainerRequest(pod=_pod(1), container=_ctr(2)), CTX)
    assert asyncio.iscoroutine(pending)
    suspended = await pending
    assert inline.adjust.annotations["ctr"] == "ctr1"
    assert suspended.adjust.annotations["ctr"] == "ctr2"
    assert plugin.scopes == ["CreateContainer"] * 3
    assert inside_handler() is None and d.late_tasks == set()


async def test_handler_errors_reach_the_caller_whether_raised_before_or_after_suspending():
    class Failing:
        async def create_container(self, pod, ctr):
            if ctr.id == "ctr2":
                await asyncio.sleep(0)
            raise RuntimeError("boom " + ctr.id)

    d, _ = _dispatcher(Failing())
    create = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "CreateContainer")][1]
    with pytest.raises(RuntimeError, match="boom ctr1"):
        await _answer(create, api.CreateContainerRequest(pod=_pod(1), container=_ctr(1)), CTX)
    with pytest.raises(RuntimeError, match="boom ctr2"):
        await _answer(create, api.CreateContainerRequest(pod=_pod(1), container=_ctr(2)), CTX)
    assert inside_handler() is None


async def test_an_encoded_create_answer_reaches_the_server_as_those_bytes():
    encoded = EncodedResponse(api.CreateContainerResponse(
        adjust=api.ContainerAdjustment(annotations={"kept": "1"})).SerializeToString())

    class Kept:
        def create_container(self, pod, ctr):
            return encoded

    d, _ = _dispatcher(Kept())
    create = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "CreateContainer")][1]
    r = create(api.CreateContainerRequest(pod=_pod(1), container=_ctr(1)), CTX)
    assert r is encoded  # no message built and encoded again, nothing to await
    assert api.CreateContainerResponse.FromString(r).adjust.annotations["kept"] == "1"


async def test_a_plain_function_handler_is_answered_too():
    class Plain:
        def create_container(self, pod, ctr):
            return api.ContainerAdjustment(annotations={"plain": "1"})

    d, _ = _dispatcher(Plain())
    create = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", "CreateContainer")][1]
    r = await _answer(create, api.CreateContainerRequest(pod=_pod(1), container=_ctr(1)), CTX)
    assert r.adjust.annotations["plain"] == "1"


# -- handler names ----------------------------------------------------------------------

def test_misspelt_and_misnamed_handlers_are_found_with_a_suggestion():
    from nri.stub.plugin_api import unmatched_handlers

    found = dict(unmatched_handlers([
        "create_containr", "update_pod", "synchronise", "create_container", "helper",
        "update_containers_now", "_private_create_containr",
    ]))
    assert found == {"create_containr": "create_container", "update_pod": None,
                     "synchronise": "synchronize"}


def test_stub_warns_about_a_misspelt_handler_and_strict_mode_refuses_it():
    from structlog.testing import capture_logs

    from nri.stub.errors import InvalidPlugin
    from nri.stub.stub import Stub, StubConfig

    class Typo:
        async def create_container(self, pod, container):
            return None

        async def remove_containr(self, pod, container):
            return None

    with capture_logs() as logs:
        stub = Stub(Typo(), name="typo", index="10", environ={})
    (line,) = [e for e in logs if e["event"] == "nri_plugin_method_matches_no_event"]
    assert (line["method"], line["did_you_mean"]) == ("remove_containr", "remove_container")
    assert stub.mask == 0  # only create_container will be subscribed at Configure
    with pytest.raises(InvalidPlugin, match="remove_containr"):
        Stub(Typo(), name="typo", index="10", environ={}, config=StubConfig(strict_handlers=True))


def test_a_correct_plugin_draws_no_warning():
    from structlog.testing import capture_logs

    from nri.stub.stub import Stub

    class Good:
        async def create_container(self, pod, container):
            return None

        def describe(self):
            return "fine"

    with capture_logs() as logs:
        Stub(Good(), name="good", index="10", environ={})
    assert [e for e in logs if e["event"] == "nri_plugin_method_matches_no_event"] == []


class _EveryEventPlugin:
    """Handles every event and records, in order, its hook and its handlers."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def before_event(self) -> None:
        self.calls.append("before")


def _record(name):
    def handler(self, *args):
        self.calls.append(name)

    return handler


for _spec in EVENT_SPECS:
    setattr(_EveryEventPlugin, _spec.handler, _record(_spec.handler))
_EveryEventPlugin.synchronize = _record("synchronize")  # type: ignore[attr-defined]


@pytest.mark.parametrize("spec", EVENT_SPECS, ids=lambda s: s.rpc)
async def test_before_event_runs_before_every_event_handler(spec):
    plugin = _EveryEventPlugin()
    d, _ = _dispatcher(plugin)
    method = d.handlers()[("nri.pkg.api.v1alpha1.Plugin", spec.rpc)][1]
    await _answer(method, REQUEST_TYPES[spec.rpc](), CTX)
    assert plugin.calls == ["before", spec.handler]


async def test_before_event_runs_before_synchronize_and_state_change_handlers():
    plugin = _EveryEventPlugin()
    d, _ = _dispatcher(plugin)
    table = d.handlers()
    await table[("nri.pkg.api.v1alpha1.Plugin", "Synchronize")][1](api.SynchronizeRequest(more=False), CTX)
    await table[("nri.pkg.api.v1alpha1.Plugin", "StateChange")][1](
        api.StateChangeEvent(event=Event.START_CONTAINER, pod=_pod(1), container=_ctr(1)), CTX)
    assert plugin.calls == ["before", "synchronize", "before", "start_container"]


def test_an_async_before_event_is_refused():
    class Plugin:
        async def before_event(self):
            pass

        def create_container(self, pod, ctr):
            return None

    with pytest.raises(InvalidPlugin, match="before_event"):
        _dispatcher(Plugin())
