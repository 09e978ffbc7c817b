"""rankengine: a pure-Python, in-memory ranking engine.

Every score change keeps the order correct, so "top 10", "what is my rank"
and "who is around me" are O(log N) reads, never a sort and never a scan.

>>> from rankengine import Leaderboard
>>> board = Leaderboard()
>>> board.set_many({"ann": 120, "bob": 80, "cid": 95})
3
>>> [(e.rank, e.member, e.score) for e in board.top(3)]
[(1, 'ann', 120), (2, 'cid', 95), (3, 'bob', 80)]
"""

from rankengine.leaderboard import Entry, Leaderboard

__all__ = ["Entry", "Leaderboard"]

__version__ = "0.1.0"
