"""The sales staff's dashboard, under ``/dashboard/``."""

from django.urls import path

from .views import conversations, home, keys, leads, session, settings

app_name = "dashboard"

urlpatterns = [
    path("", home.home, name="home"),
    path("login/", session.DashboardLoginView.as_view(), name="login"),
    path("login/token/", session.token_login, name="token-login"),
    path("logout/", session.sign_out, name="logout"),
    path("mode/", session.switch_mode, name="mode"),
    path("leads/", leads.lead_index, name="leads"),
    path("leads/<uuid:lead_id>/", leads.lead_detail, name="lead"),
    path("leads/<uuid:lead_id>/status/", leads.lead_set_status, name="lead-status"),
    path("conversations/", conversations.conversation_index, name="conversations"),
    path("conversations/<uuid:conversation_id>/", conversations.conversation_detail,
         name="conversation"),
    path("conversations/<uuid:conversation_id>/events/", conversations.conversation_events,
         name="conversation-events"),
    path("conversations/<uuid:conversation_id>/reply/", conversations.conversation_reply,
         name="conversation-reply"),
    path("conversations/<uuid:conversation_id>/take-over/", conversations.conversation_take_over,
         name="conversation-take-over"),
    path("conversations/<uuid:conversation_id>/assign/", conversations.conversation_assign_to,
         name="conversation-assign"),
    path("conversations/<uuid:conversation_id>/hand-back/", conversations.conversation_give_back,
         name="conversation-hand-back"),
    path("conversations/<uuid:conversation_id>/close/", conversations.conversation_end,
         name="conversation-close"),
    path("keys/", keys.key_index, name="keys"),
    path("keys/new/", keys.key_create, name="key-create"),
    path("keys/<uuid:key_id>/rotate/", keys.key_rotate, name="key-rotate"),
    path("keys/<uuid:key_id>/revoke-old/", keys.key_revoke_old, name="key-revoke-old"),
    path("keys/<uuid:key_id>/revoke/", keys.key_revoke, name="key-revoke"),
    path("settings/", settings.settings_page, name="settings"),
    path("settings/plan/", settings.settings_plan, name="settings-plan"),
    path("settings/agent/", settings.settings_agent, name="settings-agent"),
    path("settings/meetings/", settings.settings_meetings, name="settings-meetings"),
    path("settings/widget/", settings.settings_widget, name="settings-widget"),
    path("settings/origins/", settings.settings_origins, name="settings-origins"),
    path("settings/widget/preview/", settings.widget_preview, name="widget-preview"),
]
