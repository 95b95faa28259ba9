"""Tenants (customers of the service), their plan and agent settings, and their staff users."""
