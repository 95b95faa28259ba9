"""Project-wide middleware. Every middleware here is async-capable, so that streaming responses
under daphne pass through without a thread hop."""

from __future__ import annotations

import contextvars
import logging
import re
import uuid

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

request_id_var: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="-")

_INBOUND_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


def new_request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


class RequestIdMiddleware:
    """Gives every request an id, in the logs and in the ``X-Request-Id`` response header.

    A well-formed inbound ``X-Request-Id`` (from a load balancer) is kept so that one id follows
    the request across hops.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def _start(self, request) -> contextvars.Token:
        inbound = request.headers.get("X-Request-Id", "")
        request.request_id = inbound if _INBOUND_ID.match(inbound) else new_request_id()
        return request_id_var.set(request.request_id)

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        token = self._start(request)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-Id"] = request.request_id
        return response

    async def __acall__(self, request):
        token = self._start(request)
        try:
            response = await self.get_response(request)
        finally:
            request_id_var.reset(token)
        response["X-Request-Id"] = request.request_id
        return response


class RequestIdLogFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        return True
