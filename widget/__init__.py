"""The embeddable chat widget (``/widget.js``), its public configuration (``/api/widget``), and
the sales staff's dashboard pages. Filled by the widget and dashboard issue."""
