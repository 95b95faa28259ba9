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
from tenants.models import User, UserRole


class UserSerializer(serializers.ModelSerializer):
    id = PrefixedIdField("user", read_only=True)
    name = serializers.CharField(source="display_name", read_only=True)
    role = serializers.ChoiceField(choices=UserRole.choices, read_only=True)
    createdAt = TimestampField(source="date_joined", read_only=True)

    class Meta:
        model = User
        fields = ["id", "email", "name", "role", "createdAt"]


class UserViewSet(V1ViewSet):
    """Members of the tenant's sales staff, to whom leads and conversations are assigned.

    Users are people, not live or test data: both key modes see the same list.
    """

    queryset = User.objects.filter(is_active=True).order_by("date_joined", "id")
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
