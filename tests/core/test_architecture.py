"""The apps form a DAG (docs/architecture.md): every import between apps, at module level or
inside a function, goes one way. ``core`` imports no domain app; analytics and webhooks only
subscribe to events, so no domain app below them imports them."""

from __future__ import annotations

import ast

from tests import live

ROOT = live.ROOT
APPS = ("core", "tenants", "apikeys", "leads", "knowledge", "agent", "conversations", "analytics",
        "webhooks", "widget", "dashboard", "calendars")
# The domain apps that write and emit; the subscribers above them may import them, not the
# reverse.
BELOW_SUBSCRIBERS = ("core", "tenants", "apikeys", "leads", "knowledge", "agent", "conversations")


def _imports_of(app: str) -> dict[str, set[str]]:
    """Each other app this app imports, with the files that do it."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / app).rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in APPS and top != app:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def _graph() -> dict[str, dict[str, set[str]]]:
    return {app: _imports_of(app) for app in APPS if (ROOT / app).is_dir()}


def _circles(graph: dict[str, dict[str, set[str]]]) -> set[str]:
    """Every import circle, as "a -> b -> a"."""
    circles: set[str] = set()

    def visit(app: str, trail: list[str]) -> None:
        for dependency in graph[app]:
            if dependency in trail:
                circles.add(" -> ".join([*trail[trail.index(dependency):], dependency]))
            elif dependency in graph:
                visit(dependency, [*trail, dependency])

    for app in graph:
        visit(app, [app])
    return circles


def test_no_import_circle_between_apps():
    assert _circles(_graph()) == set()


def test_core_imports_no_app_and_not_the_project():
    assert _graph()["core"] == {}
    for path in (ROOT / "core").rglob("*.py"):
        assert "from config" not in path.read_text() and "import config" not in path.read_text(), path


def test_only_the_apps_above_them_import_analytics_and_webhooks():
    graph = _graph()
    offenders = {app: sorted(graph[app][dependency]) for app in BELOW_SUBSCRIBERS
                 for dependency in ("analytics", "webhooks") if dependency in graph[app]}
    assert offenders == {}


def test_the_checker_sees_a_circle(tmp_path, monkeypatch):
    """The checker itself: two apps that import each other are reported."""
    for app, other in (("leads", "conversations"), ("conversations", "leads")):
        (tmp_path / app).mkdir()
        (tmp_path / app / "x.py").write_text(f"from {other}.models import X\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    graph = _graph()
    assert graph["leads"] == {"conversations": {"leads/x.py"}}
    assert _circles(graph) == {"leads -> conversations -> leads",
                               "conversations -> leads -> conversations"}
