"""Knowledge base: uploaded documents, their parsing and indexing (a Celery task), and the
retrieval the agent answers from. Filled by the knowledge-base issue."""
