"""What every provider does for one turn: read the message, then write the reply."""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator

from ..types import Analysis, Plan, TurnContext


class Provider(abc.ABC):
    name: str

    @abc.abstractmethod
    async def analyze(self, ctx: TurnContext) -> Analysis:
        """Intent, confidence, contact details, signals, handoff and booking wishes."""

    @abc.abstractmethod
    def reply(self, ctx: TurnContext, analysis: Analysis, plan: Plan) -> AsyncIterator[str]:
        """The reply as text chunks, in the order the visitor should read them."""

    async def close(self) -> None:  # noqa: B027 - deliberately optional for providers
        """Releases what the provider holds for the turn (connections); nothing by default."""
        return None
