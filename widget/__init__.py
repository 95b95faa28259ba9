"""The embeddable chat widget (``/widget.js``), its public configuration (``/api/widget``) and
its look (``WidgetSettings``). The staff's pages are the ``dashboard`` app."""
