"""What every provider does for one turn: read the message, then write the reply."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator

from ..types import Analysis, ReplyPlan, TurnContext


class AnalysisUnusable(Exception):  # noqa: N818 - a provider's answer, not a bug of ours
    """The provider answered, but nothing in the answer is a usable analysis: the turn goes on
    with the deterministic reading instead (docs/agent.md, "When the model misbehaves")."""


class Provider(abc.ABC):
    name: str
    # Why the provider's last reply ended ("stop", "length", …), when it says.
    finish_reason: str | None = None

    @abc.abstractmethod
    async def analyze(self, ctx: TurnContext) -> Analysis:
        """Intent, confidence, contact details, signals, handoff and booking wishes."""

    @abc.abstractmethod
    def reply(self, ctx: TurnContext, analysis: Analysis, plan: ReplyPlan) -> AsyncIterator[str]:
        """The reply as text chunks, in the order the visitor should read them."""

    async def close(self) -> None:  # noqa: B027 - deliberately optional for providers
        """Releases what the provider holds for the turn (connections); nothing by default."""
        return None
