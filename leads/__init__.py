"""Leads: the people the agent captures and qualifies, their scores and meetings.

Models, services (every write emits its domain event), selectors for lists and search, and the
two API surfaces (``api/v1.py``, ``api/legacy.py``). Filled by the leads issue.
"""
