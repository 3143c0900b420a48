"""What an operator runs beside ``serve``: backup and restore, migrations, and the policy
simulator, each a command of ``countersign`` (wired in ``bot.operators.commands``).

- ``backup``: ``countersign backup`` and ``restore`` (SQLite's online backup; pg_dump's advice)
- ``upgrade``: ``countersign migrate [--check]``
- ``simulate``: ``countersign policy simulate`` and ``policy export-calls``
"""

from __future__ import annotations

__all__: list[str] = []
