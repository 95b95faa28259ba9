"""The sales agent: one visitor message in, one reply and its outcome out.

``types`` holds the plain data that crosses the boundary; ``signals`` the deterministic analysis
every provider shares (contact extraction, intents, BANT signals, language); ``scoring`` the
explainable lead score; ``providers`` the language-model providers (builtin, OpenAI). The agent
never touches the database: ``conversations.services`` loads the context and applies the outcome.
"""
