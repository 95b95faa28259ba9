"""Django REST framework and OpenAPI settings shared by both surfaces.

Authentication, permissions, renderers and the error envelope are set per surface by the base
views in ``config/api/views.py``; the defaults here are the strict ones so that a view that
forgot its base class serves nothing.
"""

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["config.api.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["config.api.input.JSONParser"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "config.api.renderers.ContentNegotiation",
    "DEFAULT_SCHEMA_CLASS": "config.api.schema.AutoSchema",
    "DEFAULT_METADATA_CLASS": "config.api.metadata.Metadata",
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "config.api.errors.v1_exception_handler",
    "UNICODE_JSON": True,
    "COERCE_DECIMAL_TO_STRING": False,
    "DATETIME_FORMAT": "%Y-%m-%dT%H:%M:%S.%fZ",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Sales Agent Service API",
    "DESCRIPTION": (
        "The AI sales agent service. Two surfaces coexist: the legacy surface under `/api/` "
        "and the v1 surface under `/api/v1/`. See `/docs/errors` for the error reference."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # An enum lists its values; "* `asc` - asc" descriptions would only repeat them.
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    "ENUM_NAME_OVERRIDES": {
        "V1LeadStatusEnum": "leads.vocabulary.V1_STATUSES",
        "LegacyLeadStatusEnum": "leads.vocabulary.LEGACY_STATUSES",
        "FunnelStageEnum": "analytics.selectors.FUNNEL_STAGES",
        "DocumentStatusEnum": "knowledge.models.DOCUMENT_STATUSES",
        "DocumentTypeEnum": "knowledge.models.DOCUMENT_TYPES",
        "UserStatusEnum": "tenants.models.UserStatus",
        "ErasureStatusEnum": "privacy.models.ErasureStatus",
        "ErasureSubjectKindEnum": "privacy.models.SubjectKind",
    },
    "SCHEMA_PATH_PREFIX_TRIM": False,
    # Swagger UI's assets are served by the service itself: no third-party requests.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Rate-limit headers and 429 on every operation, Idempotency-Key on v1 POSTs.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.schema.document_limits",
    ],
}
