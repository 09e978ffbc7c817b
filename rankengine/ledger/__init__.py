"""The ledger: one durable stream of score events, many views.

The layer above ``durable``, ``timed``, ``trending``, ``redis`` and
``sharded``: events (``events.py``) logged in the durable record format,
routes (``routes.py``), the view adapters of every board kind
(``adapters.py``), registered views (``views.py``), the directory
(``storage.py``), the replay of the log by folding (``fold.py``), the
Redis view (``redis_view.py``), subscriptions (``subscriptions.py``),
what inspect and verify report (``report.py``), forgetting a member
(``forget.py``), the
:class:`~rankengine.ledger.ledger.Ledger` itself (``ledger.py``) and its
asyncio face with group commit (``aio.py``).
"""

from __future__ import annotations

__all__: list[str] = []
