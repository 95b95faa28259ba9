"""v1 surface of the tenant's people: ``GET /api/v1/users``."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from config.api.fields import PrefixedIdField, TimestampField
from config.api.query import PageQuery, parse_query
from config.api.schema import paginated, v1_errors
from config.api.views import V1ViewSet
from core.pagination import paginate
from tenants.models import User, UserRole, UserStatus


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
