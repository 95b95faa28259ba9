"""An app of sample migrations for tests/config/test_lint_migrations.py: three that the check
must refuse, the safe ways of doing two of those things, and a reviewed exception. Installed
only by that test."""
