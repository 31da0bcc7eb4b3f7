"""The base ClusterRole grants exactly the API calls koordlet/ makes: nothing missing,
nothing extra.

The calls are found in the source with an AST walk: every `<…client>.<method>(…)` whose
method is a lightkube AsyncClient API method, and every call of our own helpers that send
through lightkube's request machinery (`HELPERS`: kube_client.put_text). Its resource is
resolved from the first argument (a helper's resource argument) by following names, `self.`
attributes, function returns (tuple positions too), lightkube imports,
`create_*_resource("group", "version", "Kind", "plural")`, subresource attributes
(`.Status`, `Pod.Eviction`) and `.from_dict` / instantiation. A call whose
resource cannot be resolved fails the test: extend the resolver, never skip the call.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "koordlet"
ROLE = ROOT / "deploy" / "base" / "clusterrole.yaml"
DAEMONSET = ROOT / "deploy" / "base" / "daemonset.yaml"
DEPLOY_DOC = ROOT / "docs" / "DEPLOY.md"

# lightkube AsyncClient method -> RBAC verbs. watch: an informer lists, then watches.
# apply is a server-side-apply PATCH; set patches labels/annotations; wait watches one object.
VERBS: dict[str, tuple[str, ...]] = {
    "get": ("get",), "list": ("list",), "watch": ("list", "watch"), "wait": ("list", "watch"),
    "create": ("create",), "replace": ("update",), "patch": ("patch",), "apply": ("patch",),
    "set": ("patch",), "delete": ("delete",), "deletecollection": ("deletecollection",),
}
# Methods whose resource is fixed by the method, not an argument.
FIXED = {"log": (("", "pods", "log"), ("get",)), "exec": (("", "pods", "exec"), ("create", "get"))}
NOT_API = {"aclose", "close", "config", "namespace"}
# koordlet's own requests through lightkube's machinery: helper -> (its module, the lightkube
# method it stands for, the position of its resource argument)
HELPERS = {"put_text": ("koordlet.util.kube_client", "replace", 1)}
RESOURCE_FACTORIES = {"create_global_resource", "create_namespaced_resource"}

Call = tuple[str, str, str, str]  # (apiGroup, resource, subresource, verb)


class Unresolved(Exception):
    pass


@dataclass(frozen=True)
class Site:
    path: Path
    line: int
    method: str
    text: str

    def __str__(self) -> str:
        path = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{path}:{self.line}: {self.text}"


class Module:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.tree = ast.parse(path.read_text(), str(path))
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.imports: dict[str, tuple[str, str]] = {}
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = (node.module, alias.name)
        self.functions = {node.name: node for node in self.tree.body
                          if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def enclosing_function(self, node: ast.AST) -> ast.AST | None:
        while node in self.parents:
            node = self.parents[node]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node
        return None


_modules: dict[Path, Module] = {}


def module(path: Path) -> Module:
    if path not in _modules:
        _modules[path] = Module(path)
    return _modules[path]


def koordlet_module(dotted: str) -> Module | None:
    if not dotted.startswith("koordlet."):
        return None
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return module(candidate)
    return None


def assignments(scope: ast.AST, target_text: str) -> list[tuple[ast.expr, int | None]]:
    """(value, tuple position or None) of every assignment to `target_text` in `scope`."""
    found = []
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if ast.unparse(target) == target_text:
                found.append((value, None))
            elif isinstance(target, ast.Tuple):
                for index, element in enumerate(target.elts):
                    if ast.unparse(element) == target_text:
                        found.append((value, index))
    return found


def pick(values: set, index: int | None) -> set:
    if index is None:
        return values
    out: set = set()
    for value in values:
        if not isinstance(value, tuple):
            raise Unresolved("unpacks a non-tuple")
        out |= value[index]
    return out


def resolve(mod: Module, expr: ast.expr, scope: ast.AST | None, depth: int = 0) -> set:
    """The lightkube resource classes (or tuples of sets of them) `expr` can be."""
    if depth > 20:
        raise Unresolved("too deep")
    if isinstance(expr, ast.Constant) and expr.value is None:
        return set()
    if isinstance(expr, ast.Tuple):
        return {tuple(frozenset(resolve(mod, element, scope, depth + 1)) for element in expr.elts)}
    self_attribute = isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self"
    if isinstance(expr, ast.Name) or self_attribute:
        text = ast.unparse(expr)
        for candidate in ([scope] if scope is not None and isinstance(expr, ast.Name) else []) + [mod.tree]:
            found = assignments(candidate, text)
            if found:
                out: set = set()
                for value, index in found:
                    inner = mod.enclosing_function(value)
                    out |= pick(resolve(mod, value, inner, depth + 1), index)
                if out:
                    return out
        if isinstance(expr, ast.Name) and expr.id in mod.imports:
            source, name = mod.imports[expr.id]
            return {getattr(importlib.import_module(source), name)}
        raise Unresolved(f"no assignment or import of {text}")
    if isinstance(expr, ast.Attribute):
        return {getattr(owner, expr.attr) for owner in resolve(mod, expr.value, scope, depth + 1)}
    if isinstance(expr, ast.Call):
        func = expr.func
        if isinstance(func, ast.Attribute) and func.attr == "from_dict":
            return resolve(mod, func.value, scope, depth + 1)
        name = func.id if isinstance(func, ast.Name) else None
        if name is not None and mod.imports.get(name, ("", ""))[1] in RESOURCE_FACTORIES:
            if expr.keywords or not all(isinstance(a, ast.Constant) for a in expr.args):
                raise Unresolved(f"{ast.unparse(expr)}: not all literal")
            factory = getattr(importlib.import_module("lightkube.generic_resource"), mod.imports[name][1])
            return {factory(*(a.value for a in expr.args))}  # type: ignore[attr-defined]
        if name is not None and (name in mod.functions or name in mod.imports):
            owner, function = mod, mod.functions.get(name)
            if function is None:
                owner = koordlet_module(mod.imports[name][0])  # type: ignore[assignment]
                function = owner.functions.get(mod.imports[name][1]) if owner else None
            if function is not None:
                out = set()
                for node in ast.walk(function):
                    if isinstance(node, ast.Return) and node.value is not None:
                        out |= resolve(owner, node.value, function, depth + 1)
                return out
        # Instantiating a resource class gives an object of that resource.
        return {owner for owner in resolve(mod, func, scope, depth + 1) if inspect.isclass(owner)}
    raise Unresolved(f"cannot follow {ast.unparse(expr)}")


def api_methods() -> set[str]:
    from lightkube import AsyncClient

    return {name for name, _ in inspect.getmembers(AsyncClient) if not name.startswith("_")} - NOT_API


def is_client(receiver: ast.expr) -> bool:
    last = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
    return "client" in last.lower()


def call_sites() -> list[tuple[Site, Module, ast.Call]]:
    methods = api_methods()
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        mod = module(path)
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in methods and is_client(node.func.value):
                sites.append((Site(path, node.lineno, node.func.attr, ast.unparse(node)), mod, node))
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in HELPERS \
                    and mod.imports.get(node.func.id, (HELPERS[node.func.id][0], ""))[0] == HELPERS[node.func.id][0]:
                _, method, at = HELPERS[node.func.id]
                stand_in = ast.Call(func=node.func, args=node.args[at:], keywords=[])
                mod.parents[stand_in] = mod.parents[node]  # resolved in the scope of the call it stands for
                sites.append((Site(path, node.lineno, method, ast.unparse(node)), mod, stand_in))
    return sites


def rbac_of(resource: Any) -> tuple[str, str, str]:
    info = resource._api_info
    group = (info.parent or info.resource).group
    return group, info.plural, info.action or ""


def used_calls() -> dict[Call, list[Site]]:
    used: dict[Call, list[Site]] = defaultdict(list)
    for site, mod, node in call_sites():
        if site.method in FIXED:
            target, verbs = FIXED[site.method]
            resources = [target]
        else:
            verbs = VERBS[site.method]
            first = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg in ("res", "obj")), None)
            if first is None:
                raise Unresolved(f"{site}: no resource argument")
            try:
                classes = resolve(mod, first, mod.enclosing_function(node))
            except Unresolved as exc:
                raise AssertionError(f"{site}: resource not resolved ({exc}); extend test_rbac.py's resolver") from None
            if not classes or not all(inspect.isclass(c) and hasattr(c, "_api_info") for c in classes):
                raise AssertionError(f"{site}: resource not resolved to lightkube classes: {classes}")
            resources = [rbac_of(c) for c in classes]
        for group, plural, sub in resources:
            for verb in verbs:
                used[(group, plural, sub, verb)].append(site)
    return used


def granted() -> set[Call]:
    role = yaml.safe_load(ROLE.read_text())
    assert role["kind"] == "ClusterRole"
    out = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, f"unexpected rule fields: {rule}"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                plural, _, sub = resource.partition("/")
                for verb in rule["verbs"]:
                    out.add((group, plural, sub, verb))
    return out


def test_every_lightkube_client_method_has_a_verb():
    unknown = api_methods() - set(VERBS) - set(FIXED)
    assert not unknown, f"lightkube AsyncClient grew {sorted(unknown)}: map them to RBAC verbs here"


def test_clients_are_named_so_the_walk_finds_their_calls():
    """The walk finds calls by the receiver's name: everything holding a lightkube client
    (open_kube_client()'s result, KubeApi.acquire()'s, a client_factory's, an AsyncClient
    parameter) is named *client*."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(module(path).tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                called = ast.unparse(node.value.func)
                if called.endswith(("open_kube_client", "client_factory", "AsyncClient", "acquire")):
                    for target in node.targets:
                        assert is_client(target), f"{path}:{node.lineno}: name it *client*"
            if isinstance(node, ast.arg) and node.annotation is not None \
                    and "AsyncClient" in ast.unparse(node.annotation):
                assert "client" in node.arg.lower(), f"{path}:{node.lineno}: name {node.arg} *client*"


def test_the_walk_finds_the_calls_measured_against_a_real_api_server():
    measured = {("", "events", "", "create"), ("", "pods", "eviction", "create"),
                ("slo.koordinator.sh", "nodemetrics", "", "create"), ("slo.koordinator.sh", "nodemetrics", "", "get"),
                ("slo.koordinator.sh", "nodemetrics", "status", "update"),
                # the NodeSLO was measured polled (get); it is watched since (list + watch)
                ("slo.koordinator.sh", "nodeslos", "", "list"), ("slo.koordinator.sh", "nodeslos", "", "watch"),
                ("node.katalyst.kubewharf.io", "customnoderesources", "", "patch")}
    assert measured <= set(used_calls())


def test_the_role_grants_exactly_the_calls_the_code_makes():
    used, grants = used_calls(), granted()
    missing = {call: [str(s) for s in sites] for call, sites in used.items() if call not in grants}
    assert not missing, f"deploy/base/clusterrole.yaml lacks (group, resource, subresource, verb): {missing}"
    extra = grants - set(used) - {KUBELET_PODS}  # the test above decides that one
    assert not extra, f"deploy/base/clusterrole.yaml grants what no code uses: {sorted(extra)}"


# Not a lightkube call: kubelet's /pods on its secure port (statesinformer/kubelet_client.py).
# kubelet checks the bearer token and authorizes it by SubjectAccessReview as `get` on
# `nodes/proxy`. Opt-in (an https --kubelet-pods-url): the role grants it exactly when the
# base DaemonSet sets one, and docs/DEPLOY.md gives the rule for those who add it.
KUBELET_PODS: Call = ("", "nodes", "proxy", "get")


def kubelet_client_sites() -> list[Site]:
    """Where koordlet/ makes a KubeletClient, and so may call kubelet's /pods."""
    sites = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(module(path).tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "KubeletClient":
                sites.append(Site(path, node.lineno, "KubeletClient", ast.unparse(node)))
    return sites


def daemonset_args() -> list[str]:
    daemonset = yaml.safe_load(DAEMONSET.read_text())
    return [arg for container in daemonset["spec"]["template"]["spec"]["containers"] for arg in container["args"]]


def test_the_kubelet_call_is_still_made_with_a_token():
    assert kubelet_client_sites(), "no KubeletClient in koordlet/: drop KUBELET_PODS and its docs"
    client = (PACKAGE / "statesinformer" / "kubelet_client.py").read_text()
    assert '"Bearer "' in client, "kubelet_client.py no longer sends a bearer token: revisit KUBELET_PODS"


def test_the_kubelet_grant_follows_the_daemonset_and_is_documented():
    secure = any(arg.startswith("--kubelet-pods-url=https://") for arg in daemonset_args())
    assert (KUBELET_PODS in granted()) == secure, \
        "grant nodes/proxy get exactly when the base DaemonSet reads kubelet's secure port"
    doc = DEPLOY_DOC.read_text()
    assert 'resources: ["nodes/proxy"]' in doc and 'verbs: ["get"]' in doc


@pytest.mark.parametrize("source, expected", [
    ("async def f(self):\n    await self.client.watch(node_slo_resource())\n",
     {("slo.koordinator.sh", "nodeslos", "", "list"), ("slo.koordinator.sh", "nodeslos", "", "watch")}),
    ("from lightkube.resources.core_v1 import Node\n"
     "async def f(client):\n    await client.patch(Node.Status, 'n', {})\n",
     {("", "nodes", "status", "patch")}),
    ("async def f(self):\n    await self._client.get(self._resource, 'n')\n", AssertionError),
])
def test_a_new_call_is_derived_or_refused(tmp_path, monkeypatch, source, expected):
    """The derivation sees a call added tomorrow: it either maps it or fails the test."""
    package = tmp_path / "koordlet"
    package.mkdir()
    (package / "probe.py").write_text("from koordlet.slo.cluster_watch import node_slo_resource\n" + source)
    monkeypatch.setitem(globals(), "PACKAGE", package)
    if expected is AssertionError:
        with pytest.raises(AssertionError, match="not resolved"):
            used_calls()
    else:
        assert set(used_calls()) == expected
