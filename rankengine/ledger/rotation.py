"""A ledger's open adopting the segment a log rotation a crash cut short.

A replayed compaction rotates the log in two halves
(:meth:`~rankengine.ledger.storage.LedgerFiles.switch`, then
:meth:`~rankengine.ledger.storage.LedgerFiles.finish_rotation`): records
go into segment ``s + 1`` before the manifest on disk names it.  A crash
between the two leaves that segment unnamed; an open *adopts* it -- reads
its records after the log's and lists it in the manifest -- when it is
numbered after the manifest's last segment, its header reads, and its
first record follows the last record of the log exactly, from a clean end
(no torn tail before it).  The durable board's rule
(:mod:`rankengine.durable.rotation`, :func:`~rankengine.durable.recovery.unnamed_after`).

Anything else unnamed is not the log's: the open removes it, or sets it
aside as ``.orphan`` when it holds records
(:func:`~rankengine.durable.recovery.remove_leftovers`), after adopting.

Runtime complexity: O(files in the directory), plus reading each adopted
segment twice (once to check it reads whole, once into the views)

>>> import tempfile
>>> from rankengine.ledger.ledger import Ledger
>>> with tempfile.TemporaryDirectory() as tmp:
...     ledger = Ledger(tmp, fsync="never")
...     ledger.add_view("alltime")
...     done = ledger.record("ann", 5)
...     files = ledger._files
...     with ledger._lock:
...         _ = files.switch(2)          # the switch, never finished: a crash
...     done = ledger.record("bob", 7)   # lands in the unnamed segment
...     files.writer.sync()
...     files.lock.release()             # (as the kill would)
...     again = Ledger(tmp, fsync="never")
...     print(again.recovery_notes[-1], again.view("alltime").items())
...     again.close()
adopted log-00000000000000000002.seg (a log rotation a crash cut short) [('bob', 7), ('ann', 5)]
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from rankengine.durable.eventlog import SegmentReader
from rankengine.durable.manifest import Manifest
from rankengine.durable.records import CorruptionError
from rankengine.durable.recovery import remove_leftovers, trim_segments, unnamed_after
from rankengine.ledger.fold import replay_log
from rankengine.ledger.storage import LedgerFiles, LogTail
from rankengine.ledger.views import View

__all__ = ["adopt_rotated"]


def adopt_rotated(
    files: LedgerFiles,
    tail: LogTail,
    views: Mapping[str, View],
    time_ms: int,
    notes: list[str],
) -> int:
    """After the replay of the segments the manifest names (``tail`` says
    where it ended): replay into ``views`` the unnamed segments that
    continue the log (see the module docstring), list them in the manifest
    and write it, cut the reserved zeros after the records of each segment
    an adopted one follows; then remove or set aside what else the
    manifest does not name.  Appends what it did to ``notes``; returns
    the ledger's time after the records.

    Runtime complexity: see the module docstring
    """
    directory, manifest = files.path, files.manifest
    adopted: list[tuple[str, int]] = []
    followed: list[tuple[str, int]] = []
    for name, first in unnamed_after(directory, manifest):
        if tail.torn is not None or tail.active is None or first != tail.last_seq + 1:
            break
        try:
            with SegmentReader(os.path.join(directory, name)) as reader:
                if reader.first_seq != first:
                    break
                for _batch in reader.batches():  # (read whole before a view takes any)
                    pass
        except (CorruptionError, OSError):
            break  # (unreadable: set aside below, as any unnamed segment)
        end = tail.active[3]
        followed.append((tail.active[0], end))
        probe = Manifest(manifest.config, [], [(name, first)])
        time_ms = replay_log(
            directory, probe, tail.last_seq, tail, views=views.values(), time_ms=time_ms
        )
        adopted.append((name, first))
    if adopted:
        trim_segments(directory, followed)
        manifest.segments += adopted
        files.write_manifest("adopt_manifest")
        notes += [f"adopted {name} (a log rotation a crash cut short)" for name, _ in adopted]
    notes += remove_leftovers(directory, manifest)
    return time_ms
