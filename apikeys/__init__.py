"""API keys: issuing, rotating and revoking them, and authenticating callers of both surfaces."""
