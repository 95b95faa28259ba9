"""Every table with a text, JSON or binary column, and what an erasure does with it
(docs/privacy.md, "Where a person is kept").

A test fails when a model with such a column is missing here (tests/privacy/test_inventory.py):
a new table that could hold a person must say how it is erased, or why it holds nobody. The
erasure scan (tests/privacy/test_erasure.py) then proves it, column by column.
"""

from __future__ import annotations

ERASED = "erased"
NOBODY = "holds no visitor's data"

INVENTORY: dict[str, tuple[str, str]] = {
    # The person's own records.
    "leads.Lead": (ERASED, "deleted through lead_delete (lead.deleted fires with the id)"),
    "leads.LeadSearch": (ERASED, "the lead's search row, forgotten with the lead"),
    "leads.LeadSearchWord": (ERASED, "the lead's search words, forgotten with the lead"),
    "conversations.Conversation": (ERASED, "deleted through conversation_delete"),
    "conversations.Message": (ERASED, "deleted with their conversation"),
    "conversations.Attachment": (ERASED, "files sent in the conversation: rows deleted with it, "
                                         "the stored bytes removed once the erasure commits"),
    "conversations.Meeting": (ERASED, "deleted; the event in the host's calendar is removed"),
    "conversations.OutboundEmail": (ERASED, "every email to the person, about their lead, "
                                            "meeting or conversation, deleted (a note's "
                                            "mention emails keep the lead and conversation)"),
    "conversations.Note": (ERASED, "the staff's notes on the person's lead or conversations, "
                                   "deleted with them"),
    "calendars.MeetingCalendarWrite": (ERASED, "deleted with the meeting"),
    "analytics.LeadJourney": (ERASED, "deleted with the lead"),
    "analytics.VisitorDay": (ERASED, "the visitor id replaced by a random pseudonym; the "
                                     "counts stay"),
    "core.Event": (ERASED, "kept with ids, counts, statuses and times: the person's fields "
                           "in the facts emptied, their strings in any text replaced"),
    "webhooks.DeliveryAttempt": (ERASED, "the receiver's answer (which may echo the payload) "
                                         "of attempts about the person, emptied"),
    "apikeys.IdempotencyKey": (ERASED, "stored answers that showed the person, deleted"),
    "admin.LogEntry": (ERASED, "the Django admin's history of the person's records: their "
                               "text replaced"),
    "leads.LeadImportRow": (ERASED, "an uploaded file's rows, kept only until its import ends "
                                    "(a day at most if never started); the rows holding the "
                                    "person's address deleted"),
    "integrations.CrmSync": (ERASED, "the links to the person's records in connected CRMs (the "
                                     "CRM's ids, statuses and last error), deleted; the "
                                     "records in the CRM stay, for the CRM's own erasure"),
    "privacy.Erasure": (ERASED, "the value that named the person is kept, encrypted, only "
                                "until the erasure has found them"),
    # The tenant's own data: no visitor is in it.
    "leads.LeadDailyCount": (NOBODY, "counts by status and source"),
    "leads.LeadUpdatedDayCount": (NOBODY, "counts by status and source"),
    "leads.LeadScoreCount": (NOBODY, "counts by status and source"),
    "leads.LeadImport": (NOBODY, "an import's file name, header, mapping, counts and per-row "
                                 "errors (row, column, reason: never a cell's value)"),
    "leads.LeadBulkJob": (NOBODY, "a bulk action's counts; its filter (a search term may name "
                                  "someone) emptied when it ends"),
    "leads.SavedView": (NOBODY, "the staff's named filters of the list of leads"),
    "analytics.ChannelDailyStat": (NOBODY, "counts per channel and day"),
    "analytics.LeadDailyStat": (NOBODY, "counts per source, channel and day"),
    "webhooks.Delivery": (NOBODY, "statuses and times; the payload is rendered from the "
                                  "event's facts when it leaves"),
    "webhooks.Subscription": (NOBODY, "the tenant's receivers"),
    "webhooks.LegacyWebhook": (NOBODY, "the tenant's receivers"),
    "knowledge.Document": (NOBODY, "the tenant's documents"),
    "knowledge.DocumentSource": (NOBODY, "the tenant's documents"),
    "knowledge.Chunk": (NOBODY, "the tenant's documents"),
    "knowledge.TermFrequency": (NOBODY, "the tenant's documents"),
    "knowledge.ChunkVector": (NOBODY, "the tenant's documents"),
    "agent.AgentTestSet": (NOBODY, "questions the staff wrote to test the agent"),
    "tenants.Tenant": (NOBODY, "the tenant's settings"),
    "tenants.ProviderHealth": (NOBODY, "when the tenant's model provider last answered and "
                                       "failed, and why, in the service's words"),
    "tenants.User": (NOBODY, "the staff"),
    "tenants.Invitation": (NOBODY, "invitations of staff"),
    "tenants.StaffAccess": (NOBODY, "who of the staff opened whose data: the staff member's "
                                    "name and the lead's or conversation's id"),
    "apikeys.ApiKey": (NOBODY, "the tenant's keys"),
    "widget.WidgetSettings": (NOBODY, "the widget's look"),
    "conversations.Tag": (NOBODY, "the tenant's labels; which conversation has one is a row "
                                  "without text, deleted with the conversation"),
    "conversations.CannedReply": (NOBODY, "replies the staff wrote, with placeholders"),
    "conversations.ProactiveMessage": (NOBODY, "messages the staff wrote for the widget to show, "
                                               "with their conditions and counts"),
    "integrations.CrmConnection": (NOBODY, "the tenant's CRM connections: tokens (encrypted), "
                                           "mappings, cursors and the last error reading "
                                           "changes"),
    "calendars.CalendarConnection": (NOBODY, "the reps' calendars"),
    "otp_totp.TOTPDevice": (NOBODY, "the staff's second factor"),
    "otp_static.StaticDevice": (NOBODY, "the staff's backup codes"),
    "otp_static.StaticToken": (NOBODY, "the staff's backup codes (hashed)"),
    "sessions.Session": (NOBODY, "the staff's dashboard sessions; visitors have none"),
    "auth.Permission": (NOBODY, "Django's permissions"),
    "auth.Group": (NOBODY, "Django's groups"),
    "contenttypes.ContentType": (NOBODY, "Django's model registry"),
}
