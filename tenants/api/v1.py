"""v1 surface of the tenant: its people (``GET /api/v1/users``), its agent's own example
phrasings (``/api/v1/agent/phrasings``) and its consent settings (``/api/v1/settings/consent``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from config.api.fields import PrefixedIdField, StatedLineField, TimestampField, V1Input
from config.api.query import PageQuery, parse_query
from config.api.schema import paginated, v1_errors
from config.api.views import V1APIView, V1ViewSet
from core import ids
from core.pagination import Page, paginate
from tenants import selectors, services
from tenants.models import AgentDecision, User, UserRole, UserStatus


class UserSerializer(serializers.ModelSerializer):
    id = PrefixedIdField("user", read_only=True)
    name = serializers.CharField(source="display_name", read_only=True)
    role = serializers.ChoiceField(choices=UserRole.choices, read_only=True)
    status = serializers.ChoiceField(
        choices=UserStatus.choices, read_only=True,
        help_text="Presence: online (a dashboard page open and in use), away (idle, or chosen), "
                  "offline. Handoffs are routed only to people online.")
    timezone = serializers.SerializerMethodField(
        help_text="The person's IANA time zone: their own, else the tenant's.")
    active = serializers.BooleanField(source="is_active", read_only=True,
                                      help_text="False once deactivated: they can no longer sign in.")
    createdAt = TimestampField(source="date_joined", read_only=True)

    class Meta:
        model = User
        fields = ["id", "email", "name", "role", "status", "timezone", "active", "createdAt"]

    def get_timezone(self, user: User) -> str:
        return user.timezone or user.tenant.meeting_timezone


class UserViewSet(V1ViewSet):
    """Members of the tenant's sales staff, to whom leads and conversations are assigned, with
    their role, presence and time zone; deactivated people stay listed (``active: false``), as
    the leads and conversations assigned to them still name them.

    Users are people, not live or test data: both key modes see the same list.
    """

    queryset = User.objects.select_related("tenant").order_by("date_joined", "id")
    livemode_scoped = False
    id_prefix = "user"

    @extend_schema(
        operation_id="v1_users_list",
        parameters=[PageQuery],
        responses={200: paginated("UserList", UserSerializer), **v1_errors(400)},
    )
    def list(self, request):
        query = parse_query(request, PageQuery)
        page = paginate(self.get_queryset(), page=query["page"], limit=query["limit"])
        return Response({"data": UserSerializer(page.items, many=True).data,
                         "pagination": page.meta})

    @extend_schema(operation_id="v1_users_retrieve",
                   responses={200: UserSerializer, **v1_errors(404)})
    def retrieve(self, request, id: str):
        return Response(UserSerializer(self.get_object()).data)


# --- The agent's own example phrasings (docs/agent.md, "Adding phrasings") ------------------

PHRASING_PREFIX = "phr"


class AgentPhrasingSerializer(serializers.Serializer):
    id = PrefixedIdField(PHRASING_PREFIX)
    decision = serializers.ChoiceField(choices=AgentDecision.values)
    text = serializers.CharField()
    createdAt = TimestampField()


class AgentPhrasingCreateSerializer(V1Input):
    """``POST /api/v1/agent/phrasings``."""

    decision = serializers.ChoiceField(
        choices=AgentDecision.values,
        help_text="The decision a visitor's message close to the text takes: " + "; ".join(
            f"{value}: {label.lower()}" for value, label in AgentDecision.choices) + ".")
    text = StatedLineField(
        min_length=1, max_length=services.AGENT_PHRASING_CHARS,
        help_text=f"What a visitor might write, one line of 1 to "
                  f"{services.AGENT_PHRASING_CHARS} characters (trimmed).")


def v1_phrasing(phrasing: dict[str, str]) -> dict[str, str]:
    return {"id": f"{PHRASING_PREFIX}_{phrasing['id']}", "decision": phrasing["decision"],
            "text": phrasing["text"], "createdAt": phrasing["createdAt"]}


_SETTINGS_NOTE = (" Phrasings are a setting of the tenant, not live or test data: keys of both "
                  "modes see and change the same list.")


class PhrasingsView(V1APIView):
    """The tenant's own example phrasings of the agent's decisions: a visitor's message close
    in meaning to one takes its decision (a handoff for ``person``), from the next chat turn
    on. Listing needs the read scope; adding and removing one, as any change of the
    organization's settings, the admin scope."""

    # apikeys.models.Scope.ADMIN, by value: apikeys sits above tenants and may not be imported.
    min_scope = {"POST": "admin"}

    @extend_schema(
        operation_id="v1_agent_phrasings_list",
        description="The phrasings, oldest first." + _SETTINGS_NOTE,
        parameters=[PageQuery],
        responses={200: paginated("AgentPhrasingList", AgentPhrasingSerializer), **v1_errors(400)},
    )
    def get(self, request):
        query = parse_query(request, PageQuery)
        phrasings = selectors.agent_phrasings(tenant=request.user.tenant)
        start = (query["page"] - 1) * query["limit"]
        page = Page(items=phrasings[start:start + query["limit"]], page=query["page"],
                    limit=query["limit"], total=len(phrasings))
        return Response({"data": [v1_phrasing(p) for p in page.items], "pagination": page.meta})

    @extend_schema(
        operation_id="v1_agent_phrasings_create",
        description=(f"Adds a phrasing. At most {services.MAX_AGENT_PHRASINGS} per tenant, and "
                     "none twice for a decision (case and spacing aside): either is a 409 "
                     "conflict. A text too long or holding a line break is a 422." + _SETTINGS_NOTE),
        request=AgentPhrasingCreateSerializer,
        responses={201: AgentPhrasingSerializer, **v1_errors(409, 422, body=True)},
    )
    def post(self, request):
        body = AgentPhrasingCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        phrasing = services.agent_phrasing_add(tenant=request.user.tenant,
                                               **body.validated_data)
        return Response(v1_phrasing(phrasing), status=201)


class PhrasingView(V1APIView):
    @extend_schema(
        operation_id="v1_agent_phrasings_delete",
        description="Removes a phrasing: it counts no more from the next chat turn on." + _SETTINGS_NOTE,
        responses={204: None, **v1_errors(404)},
    )
    def delete(self, request, id: str):
        services.agent_phrasing_remove(tenant=request.user.tenant,
                                       phrasing_id=ids.decode_or_404(PHRASING_PREFIX, id).hex)
        return Response(status=204)


# --- Consent and Do Not Track (docs/widget.md, "Consent", "Do Not Track") --------------------


class ConsentSettingsSerializer(serializers.Serializer):
    consentRequired = serializers.BooleanField(
        help_text="The widget shows the notice and sends nothing until the visitor accepts it; "
                  "the public chat refuses a message without the acceptance.")
    consentText = serializers.CharField(
        allow_blank=True,
        help_text=f"The notice, plain text (line breaks kept), at most "
                  f"{services.CONSENT_TEXT_CHARS} characters; required while consent is.")
    consentLink = serializers.URLField(
        allow_null=True, help_text="An https:// link to the tenant's privacy policy, or null.")
    consentVersion = serializers.IntegerField(
        read_only=True, help_text="Read-only: one more whenever the text or the link changes "
                                  "(the widget then asks again).")
    honourDoNotTrack = serializers.BooleanField(
        help_text="A visitor whose browser sends DNT: 1 or Sec-GPC: 1 leaves no page metadata "
                  "(userAgent, referrer, landingPage...) on the conversation.")


class ConsentSettingsUpdateSerializer(V1Input):
    """``PATCH /api/v1/settings/consent``: any of the fields; ``consentVersion`` is the
    service's, and ignored here as every read-only field is."""

    consentRequired = serializers.BooleanField(required=False)
    consentText = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False,
                                        max_length=10_000)
    consentLink = serializers.CharField(required=False, allow_blank=True, allow_null=True,
                                        max_length=10_000)
    honourDoNotTrack = serializers.BooleanField(required=False)


# The service's field names -> this surface's, for the details of a refusal.
_CONSENT_FIELDS = {"consent_required": "consentRequired", "consent_text": "consentText",
                   "consent_link": "consentLink", "honour_do_not_track": "honourDoNotTrack"}


def v1_consent_settings(tenant) -> dict[str, object]:
    return {"consentRequired": tenant.consent_required, "consentText": tenant.consent_text,
            "consentLink": tenant.consent_link or None, "consentVersion": tenant.consent_version,
            "honourDoNotTrack": tenant.honour_do_not_track}


class ConsentSettingsView(V1APIView):
    """The notice the widget's visitors accept before chatting, and whether their browser's
    Do Not Track or Global Privacy Control keeps their page metadata out. A setting of the
    tenant, not live or test data: keys of both modes see and change the same. Reading needs
    the read scope; changing it, as any change of the organization's settings, the admin."""

    min_scope = {"PATCH": "admin"}  # apikeys.models.Scope.ADMIN, by value (see PhrasingsView)
    field_names = _CONSENT_FIELDS

    @extend_schema(operation_id="v1_settings_consent_retrieve",
                   responses={200: ConsentSettingsSerializer, **v1_errors()})
    def get(self, request):
        return Response(v1_consent_settings(request.user.tenant))

    @extend_schema(
        operation_id="v1_settings_consent_update",
        description=("Changes any of the fields. consentText is required (not blank) while "
                     "consentRequired is true; a text over the limit or with control characters "
                     "other than line breaks, or a link that is not https, is a 422 naming the "
                     "field. consentVersion goes up by one when the text or the link changes."),
        request=ConsentSettingsUpdateSerializer,
        responses={200: ConsentSettingsSerializer, **v1_errors(422, body=True)},
    )
    def patch(self, request):
        body = ConsentSettingsUpdateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        values = {name: body.validated_data[field] for name, field in _CONSENT_FIELDS.items()
                  if field in body.validated_data}
        if "consent_link" in values:
            values["consent_link"] = values["consent_link"] or ""  # null: no link
        tenant = services.tenant_set_consent(tenant=request.user.tenant, **values)
        return Response(v1_consent_settings(tenant))
