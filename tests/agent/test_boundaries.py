"""The agent is an app of its own (docs/architecture.md, "The agent"): nothing in ``agent/``
imports ``conversations`` (conversations imports the agent, never the reverse), the agent
reaches no app but the few below it, and ``conversations`` calls the agent through one module,
``agent.interface``. Imports are read from the source (``ast``), at module level or inside a
function, so a late import cannot hide one."""

from __future__ import annotations

import ast
from pathlib import Path

from tests import live

ROOT = live.ROOT
# The apps the agent may import: what it reads is plain data or a lookup below conversations.
AGENT_MAY_IMPORT = {"core", "tenants", "knowledge", "leads"}
PROJECT_APPS = {"config", "core", "tenants", "apikeys", "leads", "knowledge", "agent", "conversations",
                "analytics", "webhooks", "widget", "dashboard", "calendars"}


def _imports(path: Path, root: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved to their absolute name."""
    package = list(path.relative_to(root).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def _modules(app: str, root: Path) -> list[Path]:
    return [p for p in sorted((root / app).rglob("*.py")) if "migrations" not in p.parts]


def _agent_reaches(root: Path) -> dict[str, set[str]]:
    """Each project app the agent's modules import, other than the agent, with the files."""
    found: dict[str, set[str]] = {}
    for path in _modules("agent", root):
        for name in _imports(path, root):
            top = name.split(".")[0]
            if top in PROJECT_APPS and top != "agent":
                found.setdefault(top, set()).add(str(path.relative_to(root)))
    return found


def _conversations_reaches_into_the_agent(root: Path) -> dict[str, set[str]]:
    """The agent's modules that conversations imports other than ``agent.interface``."""
    found: dict[str, set[str]] = {}
    for path in _modules("conversations", root):
        for name in _imports(path, root):
            if (name == "agent" or name.startswith("agent.")) and not (
                    name == "agent.interface" or name.startswith("agent.interface.")):
                found.setdefault(name, set()).add(str(path.relative_to(root)))
    return found


def test_the_agent_imports_no_conversations_and_nothing_above_it():
    assert len(_modules("agent", ROOT)) >= 10  # the agent is there to be read
    reached = _agent_reaches(ROOT)
    assert "conversations" not in reached, reached["conversations"]
    assert set(reached) <= AGENT_MAY_IMPORT, reached


def test_conversations_calls_the_agent_only_through_its_interface():
    assert _conversations_reaches_into_the_agent(ROOT) == {}


def test_the_checkers_see_a_forbidden_import(tmp_path):
    """The checkers themselves: an absolute and a relative import into conversations from the
    agent, and conversations reaching past the interface, are all reported."""
    for folder in ("agent/eval", "conversations/services"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "agent" / "rules.py").write_text("from conversations.models import Conversation\n")
    (tmp_path / "agent" / "eval" / "runner.py").write_text(
        "def run():\n    from ...conversations import services\n")
    (tmp_path / "agent" / "types.py").write_text("from knowledge.retrieval import Passage\n")
    (tmp_path / "conversations" / "services" / "turn.py").write_text(
        "from agent.interface import phrase\nfrom ...agent import rules\n")
    (tmp_path / "conversations" / "live.py").write_text("import agent.phrases\n")
    assert _agent_reaches(tmp_path) == {
        "conversations": {"agent/rules.py", "agent/eval/runner.py"},
        "knowledge": {"agent/types.py"}}
    assert _conversations_reaches_into_the_agent(tmp_path) == {
        "agent": {"conversations/services/turn.py"},
        "agent.rules": {"conversations/services/turn.py"},
        "agent.phrases": {"conversations/live.py"}}
