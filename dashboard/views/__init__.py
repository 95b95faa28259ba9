"""Dashboard pages for a tenant's sales staff: one module per section."""
