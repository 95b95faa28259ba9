"""Django's PostgreSQL backend, failing at once while the server cannot be reached (``base``)."""
