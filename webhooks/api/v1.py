"""v1 surface of webhooks: ``/api/v1/webhooks`` (subscriptions), their deliveries log, and the
manual retry of a delivery. Every operation needs the admin scope ("managing webhook
subscriptions" in the specification's scope table); docs/webhooks.md documents the additions.

Input shapes are checked here (400 with field details); the services check the URL's target
(422), the event types and the secret, so the dashboard and commands get the same rules.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.response import Response

from apikeys.models import Scope
from config.api.fields import NOT_WHITESPACE, WHITESPACE, TimestampField, V1Input
from config.api.query import PageQuery, parse_query
from config.api.schema import paginated, v1_errors
from config.api.views import V1ViewSet
from core.pagination import paginate

from .. import presenters, selectors, services, transport
from ..envelopes import V1_EVENT_TYPES
from ..models import Delivery, DeliveryStatus, Subscription, SubscriptionStatus, Surface

# --- output shapes (schema) -----------------------------------------------------------------


class SubscriptionSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="wh_ followed by 32 hex digits")
    url = serializers.CharField()
    events = serializers.ListField(child=serializers.ChoiceField(choices=V1_EVENT_TYPES))
    status = serializers.ChoiceField(choices=SubscriptionStatus.values)
    disabledReason = serializers.CharField(
        allow_null=True, help_text="Why the subscription is disabled (null while active).")
    createdAt = TimestampField()
    updatedAt = TimestampField()


class SubscriptionCreatedSerializer(SubscriptionSerializer):
    secret = serializers.CharField(help_text="The signing secret: shown in this response only.")


class AttemptSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="wha_ id: the X-Service-Delivery header of the request")
    number = serializers.IntegerField(min_value=1)
    trigger = serializers.ChoiceField(choices=["scheduled", "manual"])
    attemptedAt = TimestampField()
    statusCode = serializers.IntegerField(allow_null=True)
    durationMs = serializers.IntegerField(min_value=0)
    success = serializers.BooleanField()
    error = serializers.CharField(allow_null=True)
    responseExcerpt = serializers.CharField(allow_null=True,
                                            help_text="The first 1,024 characters of the answer")


class DeliverySerializer(serializers.Serializer):
    id = serializers.CharField(help_text="whd_ followed by 32 hex digits")
    webhookId = serializers.CharField()
    eventId = serializers.CharField(help_text="evt_ id: the envelope id, the same on every attempt")
    eventType = serializers.ChoiceField(choices=V1_EVENT_TYPES)
    status = serializers.ChoiceField(choices=DeliveryStatus.values)
    attemptCount = serializers.IntegerField(min_value=0)
    nextAttemptAt = TimestampField(allow_null=True)
    lastAttemptAt = TimestampField(allow_null=True)
    deliveredAt = TimestampField(allow_null=True)
    createdAt = TimestampField()
    attempts = AttemptSerializer(many=True)


# --- input ----------------------------------------------------------------------------------


def _validate_event_types(value: list[str]) -> list[str]:
    """Each unknown type is its own detail (``events[2]``, invalid_enum)."""
    errors = [[] if item in V1_EVENT_TYPES else
              [ErrorDetail("One of " + ", ".join(V1_EVENT_TYPES) + ".", code="invalid_enum")]
              for item in value]
    if any(errors):
        raise ValidationError(errors)
    return value


@extend_schema_field({"type": "string", "enum": list(V1_EVENT_TYPES)})
class EventTypeField(serializers.CharField):
    """One event type; an unknown one is refused by ``_validate_event_types``, which names it
    by its place in the list."""


# The shape of a webhook URL that webhooks.transport.parse_url checks (https, a host and an
# optional port, no credentials, no whitespace but around it, which is trimmed), for the schema;
# the transport then checks the host's addresses (422 when they are not public or do not
# resolve).
_URL_PATTERN = (f"^{WHITESPACE}*https://" + NOT_WHITESPACE[:-1] + r"/?#@:\[\]]+"
                r"(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5]?[0-9]{1,4}))?"
                rf"(?:[/?#]{NOT_WHITESPACE}*)?{WHITESPACE}*$")


@extend_schema_field({"type": "string", "maxLength": transport.MAX_URL_LENGTH,
                      "pattern": _URL_PATTERN, "example": "https://example.com/hooks"})
class WebhookURLField(serializers.CharField):
    """The URL deliveries go to, checked by the service (``webhooks.transport``)."""


def _url(**kwargs) -> serializers.CharField:
    return WebhookURLField(max_length=transport.MAX_URL_LENGTH, help_text=(
        "https URL of a public host (http too where the operator allows it: "
        "WEBHOOKS_ALLOW_HTTP); a host that does not resolve, or resolves to a private address, "
        "is 422."), **kwargs)


def _events(**kwargs) -> serializers.ListField:
    return serializers.ListField(child=EventTypeField(), allow_empty=False,
                                 max_length=len(V1_EVENT_TYPES) * 4,
                                 help_text="Event types, at least one.", **kwargs)


class SubscriptionCreateSerializer(V1Input):
    """``POST /api/v1/webhooks``."""

    url = _url()
    events = _events()
    secret = serializers.CharField(
        required=False, allow_null=True, trim_whitespace=False,
        min_length=services.SECRET_MIN_LENGTH, max_length=services.SECRET_MAX_LENGTH,
        help_text="Signing secret; omitted, a strong one is generated and returned once.")

    def validate_events(self, value):
        return _validate_event_types(value)


class SubscriptionUpdateSerializer(V1Input):
    """``PATCH /api/v1/webhooks/{id}``: the fields given change."""

    url = _url(required=False)
    events = _events(required=False)
    status = serializers.ChoiceField(choices=SubscriptionStatus.values, required=False,
                                     help_text="active re-enables a disabled subscription")

    def validate_events(self, value):
        return _validate_event_types(value)


class DeliveryListQuery(PageQuery):
    status = serializers.ChoiceField(choices=DeliveryStatus.values, required=False)


class WebhookViewSet(V1ViewSet):
    """Webhook subscriptions of the caller's tenant, in the caller's mode."""

    queryset = Subscription.objects.all()
    id_prefix = "wh"
    min_scope = Scope.ADMIN

    @extend_schema(operation_id="v1_webhooks_list", parameters=[PageQuery],
                   responses={200: paginated("WebhookList", SubscriptionSerializer),
                              **v1_errors(400)})
    def list(self, request):
        query = parse_query(request, PageQuery)
        page = paginate(self.get_queryset().order_by("-created_at", "-id"),
                        page=query["page"], limit=query["limit"])
        return Response({"data": [presenters.v1_subscription(s) for s in page.items],
                         "pagination": page.meta})

    @extend_schema(operation_id="v1_webhooks_create", request=SubscriptionCreateSerializer,
                   responses={201: SubscriptionCreatedSerializer, **v1_errors(422, body=True)})
    def create(self, request):
        body = SubscriptionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        subscription, secret = services.subscription_create(
            **self.owner(), url=body.validated_data["url"],
            events=body.validated_data["events"], secret=body.validated_data.get("secret"))
        return Response(presenters.v1_subscription(subscription, secret=secret), status=201)

    @extend_schema(operation_id="v1_webhooks_retrieve",
                   responses={200: SubscriptionSerializer, **v1_errors(404)})
    def retrieve(self, request, id: str):
        return Response(presenters.v1_subscription(self.get_object()))

    @extend_schema(operation_id="v1_webhooks_update", request=SubscriptionUpdateSerializer,
                   responses={200: SubscriptionSerializer, **v1_errors(404, 422, body=True)})
    def partial_update(self, request, id: str):
        subscription = self.get_object()
        body = SubscriptionUpdateSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        subscription = services.subscription_update(subscription=subscription,
                                                    **body.validated_data)
        return Response(presenters.v1_subscription(subscription))

    @extend_schema(operation_id="v1_webhooks_delete", responses={204: None, **v1_errors(404)})
    def destroy(self, request, id: str):
        services.subscription_delete(subscription=self.get_object())
        return Response(status=204)

    @extend_schema(
        operation_id="v1_webhooks_deliveries",
        parameters=[DeliveryListQuery],
        responses={200: paginated("WebhookDeliveryList", DeliverySerializer),
                   **v1_errors(400, 404)},
    )
    def deliveries(self, request, id: str):
        subscription = self.get_object()
        query = parse_query(request, DeliveryListQuery)
        page = paginate(
            selectors.delivery_log(**self.owner(), subscription_id=subscription.pk,
                                   status=query.get("status")),
            page=query["page"], limit=query["limit"])
        return Response({"data": [presenters.v1_delivery(d) for d in page.items],
                         "pagination": page.meta})


class WebhookDeliveryViewSet(V1ViewSet):
    """Deliveries of the caller's v1 subscriptions: the manual retry."""

    queryset = Delivery.objects.filter(surface=Surface.V1)
    id_prefix = "whd"
    min_scope = Scope.ADMIN

    @extend_schema(operation_id="v1_webhook_deliveries_retry", request=None,
                   responses={202: DeliverySerializer, **v1_errors(404, 409)})
    def retry(self, request, id: str):
        delivery = services.delivery_retry(delivery=self.get_object())
        shown = selectors.with_attempts(Delivery.objects.filter(pk=delivery.pk)).get()
        return Response(presenters.v1_delivery(shown), status=202)
