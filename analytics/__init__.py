"""Analytics of both surfaces: overview, funnel and activity, read from the domain tables and the
event log. Filled by the analytics issue."""
