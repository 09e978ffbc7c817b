"""Output files written whole or not at all (:mod:`rankengine.cli.files`)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rankengine.cli.files import OutputError, output_file

#: uid and gid the permission tests run as when the suite runs as root
#: (root may write any file, so a refusal could not show).
NOBODY: int = 65534


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A folder the test's unprivileged user may write (not under tmp_path,
    whose parents only root may enter)."""
    folder = Path(tempfile.mkdtemp())
    if os.geteuid() == 0:
        os.chown(folder, NOBODY, NOBODY)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


def _unprivileged(body: Callable[[], int]) -> int:
    """Run ``body`` as an ordinary user; return what it returns (0..255).
    As root it runs in a forked child that drops to :data:`NOBODY`."""
    if os.geteuid() != 0:
        return body()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test runner
        code = 255
        try:
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code = body()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_read_only_file_is_not_replaced(shared_dir: Path) -> None:
    """``open(path, "w")`` refuses a file its user may not write; writing
    beside it and renaming must not get round that."""
    target = shared_dir / "export.csv"

    def attempt() -> int:
        target.write_text("keep me\n", encoding="utf-8")
        target.chmod(0o444)
        try:
            with output_file(str(target)) as out:
                out.write("replaced\n")
        except OutputError as exc:
            return 3 if "Permission denied" in str(exc) and str(target) in str(exc) else 2
        return 1

    assert _unprivileged(attempt) == 3
    assert target.read_text(encoding="utf-8") == "keep me\n"
    assert [p.name for p in shared_dir.iterdir()] == ["export.csv"]


def test_a_file_with_the_longest_name_the_folder_allows_is_written(tmp_path: Path) -> None:
    """The temporary file beside FILE is named after it; a name open()
    accepts must not become one the file system refuses."""
    longest = os.pathconf(tmp_path, "PC_NAME_MAX")
    target = tmp_path / ("x" * longest)
    with output_file(str(target)) as out:
        out.write("whole\n")
    assert target.read_text(encoding="utf-8") == "whole\n"
    assert [p.name for p in tmp_path.iterdir()] == [target.name]


def test_the_new_text_is_on_disk_before_it_replaces_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an fsync before the rename, a power cut can keep the rename
    and lose the text: FILE empty or cut short, the previous export gone."""
    target = tmp_path / "export.csv"
    target.write_text("the previous export\n", encoding="utf-8")
    steps: list[tuple[str, int]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        steps.append(("fsync", os.fstat(fd).st_ino))
        real_fsync(fd)

    def replace(src: str, dst: str) -> None:
        steps.append(("replace", os.lstat(src).st_ino))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    with output_file(str(target)) as out:
        out.write("whole\n")
    assert target.read_text(encoding="utf-8") == "whole\n"
    new = target.stat().st_ino
    assert ("replace", new) in steps
    assert ("fsync", new) in steps[: steps.index(("replace", new))]


@pytest.fixture
def umask_027() -> Iterator[int]:
    """The process umask set to 0o027 for the test (not the usual 0o022, so
    that a mode computed from a remembered default would show)."""
    previous = os.umask(0o027)
    try:
        yield 0o027
    finally:
        os.umask(previous)


@pytest.fixture
def umask_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every mask ``os.umask`` is called with from here on."""
    calls: list[int] = []
    real_umask = os.umask

    def umask(mask: int) -> int:
        calls.append(mask)
        return real_umask(mask)

    monkeypatch.setattr(os, "umask", umask)
    return calls


def test_a_new_file_gets_the_mode_open_gives_and_the_umask_is_left_alone(
    tmp_path: Path, umask_027: int, umask_calls: list[int]
) -> None:
    """A new FILE gets ``0o666`` less the umask, as ``open()`` gives it;
    and the umask is never changed to read it: setting it to 0, even for a
    moment, gives another thread's new files mode 0o666 (or 0o777)."""
    target = tmp_path / "export.csv"
    with output_file(str(target)) as out:
        out.write("whole\n")
    with open(tmp_path / "by-open.csv", "w", encoding="utf-8") as plain:
        plain.write("whole\n")
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask_027 == 0o640
    assert stat.S_IMODE(target.stat().st_mode) == stat.S_IMODE(
        (tmp_path / "by-open.csv").stat().st_mode
    )
    assert umask_calls == []


@pytest.mark.parametrize("mode", [0o600, 0o604, 0o664])
def test_a_replaced_file_keeps_its_mode(
    tmp_path: Path, umask_027: int, umask_calls: list[int], mode: int
) -> None:
    """A replaced FILE keeps its own permissions, whatever the umask, and
    the text is not readable by more users while it is being written than
    the file is before and after."""
    target = tmp_path / "export.csv"
    target.write_text("the previous export\n", encoding="utf-8")
    target.chmod(mode)
    with output_file(str(target)) as out:
        (temp,) = [p for p in tmp_path.iterdir() if p != target]
        assert stat.S_IMODE(temp.stat().st_mode) & ~mode == 0
        out.write("whole\n")
    assert target.read_text(encoding="utf-8") == "whole\n"
    assert stat.S_IMODE(target.stat().st_mode) == mode
    assert umask_calls == []


def test_an_empty_file_name_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a temporary file was created in the parent of the working folder, and
    # the error named it: "No such file or directory: '/x/..1a2b3c4d.tmp' -> ''"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    refused = r"^cannot write '': the file name is empty$"
    with pytest.raises(OutputError, match=refused), output_file(""):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]
    assert list(work.iterdir()) == []
