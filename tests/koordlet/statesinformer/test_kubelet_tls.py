"""kubelet's secure port: the bearer token, its rotation, TLS verification and refusals,
against a local https server with a self-signed certificate; and the read-only port still."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from koordlet.statesinformer.kubelet_client import KubeletAuth, KubeletClient, KubeletError
from koordlet.statesinformer.model import Source
from tests.koordlet.hubs_helper import config_of
from tests.koordlet.statesinformer.kubelet_server import FakeKubelet, authorization, pod_json, self_signed_cert
from tests.koordlet.statesinformer.test_module import FAST, _module
from tests.polling import until

UID = "7d3e2f10-2222-4333-8444-555566667777"
FORBIDDEN = (b"Forbidden (user=system:serviceaccount:koordinator-system:koordlet, verb=get, resource=nodes, "
             b"subresource(s)=[proxy])")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    directory = tmp_path_factory.mktemp("certs")
    return {name: self_signed_cert(directory, name) for name in ("kubelet", "stranger")}


@pytest.fixture
async def secure(certs):
    server = FakeKubelet(certs["kubelet"])
    server.token = "token-one"
    server.pods = [pod_json(UID, priority=5500, qos="BestEffort")]
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
def token_file(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("token-one\n")
    return path


def _rotate(path: Path, token: str) -> None:
    """As the kubelet swaps a projected token: a new file renamed over the old."""
    fresh = path.with_name(path.name + ".new")
    fresh.write_text(token)
    os.replace(fresh, path)


def _auth(token_file: Path, ca: Path, insecure: bool = False) -> KubeletAuth:
    return KubeletAuth(str(token_file), str(ca), insecure)


async def test_the_token_goes_as_bearer_over_verified_tls(secure: FakeKubelet, token_file: Path, certs) -> None:
    (pod,) = await KubeletClient(secure.url, auth=_auth(token_file, certs["kubelet"][0])).pods()
    assert (pod.uid, pod.priority) == (UID, 5500)
    assert authorization(secure.requests[0]) == "Bearer token-one"


async def test_a_rotated_token_is_read_again(secure: FakeKubelet, token_file: Path, certs) -> None:
    client = KubeletClient(secure.url, auth=_auth(token_file, certs["kubelet"][0]))
    await client.pods()
    _rotate(token_file, "token-two")
    secure.token = "token-two"
    await client.pods()
    assert [authorization(head) for head in secure.requests] == ["Bearer token-one", "Bearer token-two"]


async def test_a_certificate_the_ca_does_not_vouch_for_is_refused_clearly(secure: FakeKubelet, token_file: Path,
                                                                          certs) -> None:
    client = KubeletClient(secure.url, auth=_auth(token_file, certs["stranger"][0]))
    with pytest.raises(KubeletError, match=r"certificate is not trusted \(.*\); give its CA with --kubelet-ca-file"):
        await client.pods()
    assert secure.requests == []  # the token never left


async def test_a_missing_ca_file_is_a_kubelet_error(secure: FakeKubelet, token_file: Path, tmp_path: Path) -> None:
    with pytest.raises(KubeletError, match="kubelet CA file .*absent.crt"):
        await KubeletClient(secure.url, auth=_auth(token_file, tmp_path / "absent.crt")).pods()


async def test_insecure_tls_connects_without_a_ca_and_warns_once(secure: FakeKubelet, token_file: Path,
                                                                 tmp_path: Path) -> None:
    with capture_logs() as logs:
        client = KubeletClient(secure.url, auth=_auth(token_file, tmp_path / "absent.crt", insecure=True))
        await client.pods()
        (pod,) = await client.pods()
    assert pod.uid == UID
    assert [entry["event"] for entry in logs] == ["kubelet_tls_unverified"]
    assert logs[0]["log_level"] == "warning"


async def test_a_refused_token_says_so(secure: FakeKubelet, token_file: Path, certs) -> None:
    _rotate(token_file, "stale")
    with pytest.raises(KubeletError, match=r"HTTP 401 Unauthorized: Unauthorized \(kubelet refused the service-acc"):
        await KubeletClient(secure.url, auth=_auth(token_file, certs["kubelet"][0])).pods()


async def test_a_forbidden_answer_quotes_kubelet_and_names_the_rbac(secure: FakeKubelet, token_file: Path,
                                                                    certs) -> None:
    secure.status, secure.body = 403, FORBIDDEN
    with pytest.raises(KubeletError) as caught:
        await KubeletClient(secure.url, auth=_auth(token_file, certs["kubelet"][0])).pods()
    assert str(caught.value).startswith("HTTP 403 Forbidden: " + FORBIDDEN.decode())
    assert "`get` on `nodes/proxy`" in str(caught.value)


async def test_an_unreadable_token_is_a_kubelet_error(secure: FakeKubelet, tmp_path: Path, certs) -> None:
    with pytest.raises(KubeletError, match="service-account token .*absent"):
        await KubeletClient(secure.url, auth=_auth(tmp_path / "absent", certs["kubelet"][0])).pods()
    assert secure.requests == []


async def test_no_token_file_sends_no_token(secure: FakeKubelet, certs) -> None:
    secure.token = None
    await KubeletClient(secure.url, auth=KubeletAuth("", str(certs["kubelet"][0]))).pods()
    assert authorization(secure.requests[0]) is None


async def test_the_read_only_port_gets_neither_token_nor_tls(token_file: Path, tmp_path: Path) -> None:
    plain = FakeKubelet()
    plain.pods = [pod_json(UID)]
    await plain.start()
    try:
        (pod,) = await KubeletClient(plain.url, auth=_auth(token_file, tmp_path / "absent.crt")).pods()
    finally:
        await plain.stop()
    assert pod.uid == UID
    assert authorization(plain.requests[0]) is None


async def test_the_daemon_logs_a_refusal_once_keeps_polling_and_recovers(secure: FakeKubelet, token_file: Path,
                                                                        certs) -> None:
    secure.status, secure.body = 403, FORBIDDEN
    config = config_of(cri_endpoint="", kubelet_pods_url=secure.url, states_kubelet_sync_interval=FAST,
                       kubelet_token_file=str(token_file), kubelet_ca_file=str(certs["kubelet"][0]))
    module, hubs = _module(config)
    with capture_logs() as logs:
        await module.start()
        try:
            await until(lambda: len(secure.requests) >= 4)
            assert not module.ready() and hubs.states.pods() == ()
            secure.status, secure.body = 200, None
            await until(module.ready)
        finally:
            await module.stop()
    down = [entry for entry in logs if entry["event"] == "states_source_unreachable"]
    assert len(down) == 1 and "verb=get, resource=nodes, subresource(s)=[proxy]" in down[0]["error"]
    assert [entry["event"] for entry in logs].count("states_source_reachable") == 1
    assert hubs.states.source_synced(Source.KUBELET)
