"""Conversations and messages, the chat endpoints of both surfaces (streaming included), and the
``agent`` package that talks to the language-model providers. Filled by the chat issue."""
