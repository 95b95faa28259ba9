"""The sales agent: one visitor message in, one reply and its outcome out (docs/agent.md).

``interface`` is what the rest of the service calls (``conversations`` imports nothing else of
the agent). Behind it: ``types`` holds the plain data that crosses the boundary; ``rules`` the
deterministic reading every provider shares (contact extraction, intents, BANT signals,
language); ``answers`` the builtin's sentences from the knowledge passages; ``scoring`` the
explainable lead score; ``summary`` the builtin subject and summary of a conversation;
``phrases`` the builtin wording; ``prompts`` the instructions a language model reads;
``guard`` what every reply obeys; ``providers`` the providers (builtin, OpenAI); ``eval`` the
sales evaluation (``manage.py eval_agent``). In a turn the agent never touches the database (only
the evaluation writes: its throwaway tenants, rolled back), and it imports no
``conversations``: ``conversations.services`` loads the context and applies the outcome.
"""
