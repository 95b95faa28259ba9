"""Webhooks: subscriptions of both surfaces, signed at-least-once delivery as rows with attempts,
retries by a beat sweeper, manual replay. Filled by the webhooks issue."""
