"""The Content-Security-Policy of the pages: the dashboard, the admin, the demo and meeting pages,
the home and docs pages (django-csp, ``config.middleware.PagesContentSecurityPolicyMiddleware``;
the REST API under ``/api/`` answers JSON and gets none). Why each directive:
docs/dashboard.md, "Content-Security-Policy".

Every script and style sheet of these pages is a file of the service: no inline ``<script>`` or
``<style>``, no event handler attribute, no ``eval``. The one allowance is ``style=""`` attributes
(``style-src-attr``): docs/decisions.md, "Content-Security-Policy: style attributes allowed".
"""

from csp.constants import NONE, SELF, UNSAFE_INLINE

__all__ = ["CONTENT_SECURITY_POLICY"]

CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        # The pages' scripts and /widget.js, as files: an injected <script> never runs.
        "script-src": [SELF],
        # Style sheets and <style> elements: files only. The widget styles its shadow root with a
        # constructed style sheet, which needs no allowance (static/widget/widget.js).
        "style-src": [SELF],
        # style="" attributes: widths of bars and colours of legends drawn from data.
        "style-src-attr": [UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        # The live transcript's EventSource, the knowledge page's refresh, the widget's chat.
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}
