"""The agent API's wire format, one definition for both sides.

The server (countersign-server: bot, contracts, store) answers with these models and the client
parses its answers into the same ones: the server's ``contracts`` imports them from here, so an
agent installs them without installing the server. Only the standard library and pydantic are
imported here, and nothing of the rest of the client.

- ``countersign.wire.base``: the frozen base, a preview, a field at fault;
- ``countersign.wire.outcomes``: what happened when a proposal was carried out;
- ``countersign.wire.escalation``: an escalation's summary, trigger and verdict;
- ``countersign.wire.api``: the bodies agents send and the documents they read back;
- ``countersign.wire.canonical``: canonical JSON (standard library only);
- ``countersign.wire.signing``: the signatures on the requests Countersign sends (standard library
  only: the Claude Code hook's path imports no pydantic).

Importing this package imports none of its modules.
"""
