"""``GET /metrics``, the Prometheus endpoint, and the middleware that counts requests
(docs/operations.md, "Metrics"; docs/decisions.md, "Metrics: prometheus-client in multiprocess
mode").

- ``RequestMetricsMiddleware`` counts every request by surface, route template (the resolver's
  pattern, never the path) and status, and times it: a dictionary lookup, an increment and a
  histogram observation per request, no query. Not in the chain at all while ``METRICS_TOKEN``
  is unset.
- ``metrics`` answers the scraper that sends ``Authorization: Bearer <METRICS_TOKEN>`` (404 while
  it is unset; 401 for a missing or wrong token, compared in constant time): every process's
  series summed from the multiprocess directory (core/metrics.py), then what is known only now,
  in a fixed number of indexed, bounded statements (``StateCollector``): backlogs of retried
  work, waiting handoffs, knowledge documents, the broker's queue, this process's connection
  pool and circuit breakers, the worker and beat under ``manage.py serve``.
"""

from __future__ import annotations

import hmac
import logging
import os
import time
from datetime import datetime

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.db import DatabaseError, connection
from django.db.models import Min
from django.http import Http404, HttpResponse
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

from config import logs
from core import breaker as breakers
from core.metrics import HTTP_LATENCY, HTTP_REQUESTS, method_label

logger = logging.getLogger("salesagent.metrics")

# --- Requests -------------------------------------------------------------------------------

UNMATCHED = "unmatched"  # no route: the label of every 404 the resolver gives


def route_label(request) -> str:
    """The route's template, as the logs name it (``/api/v1/leads/<id>``), never the path."""
    match = getattr(request, "resolver_match", None)
    return logs.route_template(match) if match is not None and match.route else UNMATCHED


class RequestMetricsMiddleware:
    """First in the chain, so that its time is the whole request's."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        if not settings.METRICS_TOKEN:
            raise MiddlewareNotUsed
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)
        # The labelled children, by their labels: labels() takes a lock and builds a tuple.
        self._children: dict[tuple, tuple] = {}

    def __call__(self, request):
        if self.is_async:
            return self.__acall__(request)
        started = time.perf_counter()
        response = self.get_response(request)
        self._record(request, response, time.perf_counter() - started)
        return response

    async def __acall__(self, request):
        started = time.perf_counter()
        response = await self.get_response(request)
        self._record(request, response, time.perf_counter() - started)
        return response

    def _record(self, request, response, seconds: float) -> None:
        key = (getattr(request, "surface", None) or logs.surface_of(request.path_info),
               route_label(request),
               method_label(request.method), response.status_code)
        children = self._children.get(key)
        if children is None:
            surface, route, method, status = key
            children = (HTTP_REQUESTS.labels(surface, route, method, str(status)),
                        HTTP_LATENCY.labels(surface, route, method))
            self._children[key] = children
        children[0].inc()
        children[1].observe(seconds)


# --- The endpoint ---------------------------------------------------------------------------

def metrics(request):
    token = settings.METRICS_TOKEN
    if not token:
        raise Http404
    given = request.headers.get("Authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        response = HttpResponse("A bearer token (METRICS_TOKEN) is required.\n", status=401,
                                content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    now = StateCollector()
    body = generate_latest(_process_registry()) + generate_latest(_registry_of(now))
    # The text format every Prometheus reads (2.x included).
    return HttpResponse(body, content_type=CONTENT_TYPE_PLAIN_0_0_4)


def _process_registry() -> CollectorRegistry:
    """Every process's series, from the multiprocess directory; this process's alone without
    one (the tests' own process)."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    return registry


def _registry_of(collector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


# --- Scrape time ----------------------------------------------------------------------------

# A count stops here: a backlog of a hundred thousand rows is an incident whatever its size, and
# a scrape must not count a million.
COUNT_CAP = 100_000


def _mode(livemode) -> str:
    return "live" if livemode else "test"


def _capped_counts(model, statuses: list[str]) -> list[tuple[str, bool, int]]:
    """(status, livemode, count) of ``model``'s rows in ``statuses``: one statement, reading
    at most ``COUNT_CAP`` rows."""
    quote = connection.ops.quote_name
    marks = ", ".join(["%s"] * len(statuses))
    sql = (f"SELECT status, livemode, COUNT(*) FROM (SELECT {quote('status')} AS status, "
           f"{quote('livemode')} AS livemode FROM {quote(model._meta.db_table)} "
           f"WHERE {quote('status')} IN ({marks}) LIMIT %s) capped GROUP BY status, livemode")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*statuses, COUNT_CAP])
        return [(status, bool(livemode), count) for status, livemode, count in cursor.fetchall()]


def _age(now: datetime, then: datetime | None) -> float:
    return max(0.0, (now - then).total_seconds()) if then is not None else 0.0


class StateCollector:
    """What is known only at scrape time. Ten statements, each on an index, none reading more
    than ``COUNT_CAP`` rows; the rest is in memory or one broker round trip."""

    def collect(self):
        now = timezone.now()
        database_up = 1
        for section in (self._work, self._handoffs, self._documents):
            try:
                families = list(section(now))
            except DatabaseError as exc:
                # The scrape still answers: the requests' series matter most during an outage.
                logger.warning("metrics: the database could not be read: %s", exc)
                database_up = 0
                break  # one wait for a server that does not answer, not three
            yield from families
        yield GaugeMetricFamily("salesagent_database_up",
                                "1 when the database answered this scrape's statements.",
                                value=database_up)
        yield from self._queue()
        yield from self._pool()
        yield self._breakers()
        yield from self._supervised()

    def _work(self, now: datetime):
        from calendars.models import MeetingCalendarWrite, WriteStatus
        from conversations.models import EmailStatus, OutboundEmail
        from webhooks.models import CLAIMABLE, Delivery, DeliveryStatus

        waiting = GaugeMetricFamily(
            "salesagent_work_waiting", "Retried work not settled yet, by kind, state and mode "
            f"(counted up to {COUNT_CAP}).", labels=["kind", "state", "mode"])
        oldest = GaugeMetricFamily(
            "salesagent_work_oldest_due_seconds", "How long the most overdue row of each kind has "
            "been due without being done (0: nothing overdue).", labels=["kind"])
        kinds = (
            ("webhook_delivery", Delivery,
             [DeliveryStatus.PENDING, DeliveryStatus.WAITING_RETRY, DeliveryStatus.DELIVERING],
             list(CLAIMABLE)),
            ("email", OutboundEmail, [EmailStatus.QUEUED], [EmailStatus.QUEUED]),
            ("calendar_write", MeetingCalendarWrite, [WriteStatus.PENDING], [WriteStatus.PENDING]),
        )
        for kind, model, statuses, due in kinds:
            if model is MeetingCalendarWrite:
                counts = self._calendar_counts(statuses)
            else:
                counts = _capped_counts(model, [str(s) for s in statuses])
            seen = {(status, mode) for status, mode, _ in counts}
            for status, livemode, count in counts:
                waiting.add_metric([kind, status, _mode(livemode)], count)
            for status in statuses:  # a state with nothing in it is a 0, not a missing series
                for livemode in (True, False):
                    if (str(status), livemode) not in seen:
                        waiting.add_metric([kind, str(status), _mode(livemode)], 0)
            first = (model._default_manager.filter(status__in=due, next_attempt_at__lte=now)
                     .aggregate(first=Min("next_attempt_at"))["first"])
            oldest.add_metric([kind], _age(now, first))
        yield waiting
        yield oldest

    @staticmethod
    def _calendar_counts(statuses) -> list[tuple[str, bool, int]]:
        """Calendar writes have no mode of their own (a rep's calendar is live): counted as live."""
        from calendars.models import MeetingCalendarWrite

        quote = connection.ops.quote_name
        marks = ", ".join(["%s"] * len(statuses))
        sql = (f"SELECT status, COUNT(*) FROM (SELECT {quote('status')} AS status FROM "
               f"{quote(MeetingCalendarWrite._meta.db_table)} WHERE {quote('status')} IN "
               f"({marks}) LIMIT %s) capped GROUP BY status")
        with connection.cursor() as cursor:
            cursor.execute(sql, [*[str(s) for s in statuses], COUNT_CAP])
            return [(status, True, count) for status, count in cursor.fetchall()]

    def _handoffs(self, now: datetime):
        from conversations.models import Conversation, ConversationStatus

        unassigned = Conversation.objects.filter(status=ConversationStatus.HANDED_OFF,
                                                 assigned_to__isnull=True)
        count = unassigned.values("pk")[:COUNT_CAP].count()
        first = unassigned.aggregate(first=Min("handed_off_at"))["first"]
        yield GaugeMetricFamily("salesagent_handoffs_waiting",
                                "Handed-off conversations that nobody has taken yet "
                                f"(counted up to {COUNT_CAP}).", value=count)
        yield GaugeMetricFamily("salesagent_handoffs_oldest_waiting_seconds",
                                "How long the longest-waiting unassigned handoff has waited.",
                                value=_age(now, first))

    def _documents(self, now: datetime):
        from knowledge.models import DOCUMENT_STATUSES, Document, DocumentStatus

        counts = _capped_counts(Document, list(DOCUMENT_STATUSES))
        documents = GaugeMetricFamily(
            "salesagent_knowledge_documents", "Knowledge documents by state and mode (counted up "
            f"to {COUNT_CAP} in all).", labels=["state", "mode"])
        totals = {(status, _mode(live)): 0 for status in DOCUMENT_STATUSES for live in (True, False)}
        for status, livemode, count in counts:
            totals[(status, _mode(livemode))] = count
        for (status, mode), count in sorted(totals.items()):
            documents.add_metric([status, mode], count)
        yield documents
        first = (Document.objects.filter(status=DocumentStatus.PROCESSING)
                 .aggregate(first=Min("updated_at"))["first"])
        yield GaugeMetricFamily(
            "salesagent_knowledge_indexing_oldest_seconds",
            "How long the document waiting longest for its indexing has waited (the backlog is "
            "salesagent_knowledge_documents{state=\"processing\"}).", value=_age(now, first))

    def _queue(self):
        from config.celery import app as celery_app
        from config.health import kept_broker

        queue = celery_app.conf.task_default_queue
        depth = GaugeMetricFamily("salesagent_celery_queue_depth",
                                  "Messages waiting on the broker's queue.", labels=["queue"])
        up = GaugeMetricFamily("salesagent_broker_up", "1 when the broker answered this scrape.")
        try:
            depth.add_metric([queue], kept_broker.queue_size(queue))
            up.add_metric([], 1)
        except Exception as exc:  # the broker is down: said by broker_up, not by a failed scrape
            logger.warning("metrics: the broker's queue could not be read: %s", exc)
            up.add_metric([], 0)
        yield depth
        yield up

    def _pool(self):
        pool = connection.pool if connection.vendor == "postgresql" else None
        if pool is None:  # SQLite, or PostgreSQL with DB_POOL off: nothing pooled to show
            return
        stats = pool.get_stats()
        connections = GaugeMetricFamily(
            "salesagent_db_pool_connections",
            "This web process's PostgreSQL pool: connections open, idle, and its maximum.",
            labels=["state"])
        connections.add_metric(["open"], stats.get("pool_size", 0))
        connections.add_metric(["idle"], stats.get("pool_available", 0))
        connections.add_metric(["max"], stats.get("pool_max", 0))
        yield connections
        yield GaugeMetricFamily("salesagent_db_pool_waiting",
                                "Requests of this web process waiting for a pooled connection.",
                                value=stats.get("requests_waiting", 0))

    @staticmethod
    def _breakers():
        family = GaugeMetricFamily(
            "salesagent_circuit_breaker_open",
            "1 while this web process's breaker in front of a server is open (calls fail at "
            "once), 0 while closed.", labels=["breaker"])
        states: dict[str, int] = {}
        for one in breakers.all_breakers():
            states[one.kind] = max(states.get(one.kind, 0), 0 if one.closed else 1)
        for kind, state in sorted(states.items()):
            family.add_metric([kind], state)
        return family

    @staticmethod
    def _supervised():
        from config.health import supervised_components

        components = supervised_components()
        if not components:
            return
        family = GaugeMetricFamily("salesagent_process_up",
                                   "1 while manage.py serve's worker and beat run.",
                                   labels=["process"])
        for name, component in sorted(components.items()):
            family.add_metric([name], 1 if component["status"] == "ok" else 0)
        yield family
