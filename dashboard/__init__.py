"""The sales staff's dashboard (``/dashboard/``): pages that read through the apps' selectors
and write through their services, scoped to one tenant and mode by ``auth.Actor``."""
