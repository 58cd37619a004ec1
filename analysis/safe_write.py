"""Writing files safely: atomically, and CSV cells that a spreadsheet cannot execute.

Two small public helpers that every writer of the package (the CLI's ``--out`` and
``--figure``, judged files, design files, downloads) goes through:

* **Atomic writes** (:func:`atomic_writer`, and on it :func:`atomic_write_bytes`,
  :func:`atomic_write_text`, :func:`write_table`; :func:`write_files` for several files
  that appear together): the data goes to a temporary file in the target's folder that
  is ``fsync``-ed and renamed over the target with :func:`os.replace` only once it is
  complete, then the folder is ``fsync``-ed. A full disk, a file-size limit or an
  exception half-way leaves no partial file (and an existing target untouched); the
  failure is an :class:`~analysis.errors.OutputError` naming the path and the reason.
  :func:`check_output_path` refuses a missing folder or
  a folder in the target's place *before* any work is done (or paid for).
* **Safe CSV** (:func:`neutralise_csv_cells`, :func:`csv_bytes`, :func:`write_csv`):
  text cells (and column names) that begin with ``=``, ``+``, ``-``, ``@``, a tab or a
  carriage return get a leading apostrophe, so a label such as
  ``=HYPERLINK("http://x","click")`` is shown as text in a spreadsheet instead of
  becoming a formula (OWASP "CSV injection"). Numbers stay numbers: numeric columns are
  untouched and so is text that reads as a number (``-1.5``).
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import os
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import pandas as pd

from analysis.errors import OutputError
from analysis.safe_text import UNSAFE_CHARS, clean_controls

__all__ = [
    "FORMULA_PREFIXES", "atomic_write_bytes", "atomic_write_text", "atomic_writer",
    "check_output_path", "csv_bytes", "neutralise_cell", "neutralise_csv_cells", "table_writer",
    "write_csv", "write_files", "write_table"
]


#: A text cell starting with one of these is read as a formula by spreadsheet programs.
FORMULA_PREFIXES: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")


# --- atomic writes ------------------------------------------------------------------------
def check_output_path(path: str | Path, *, create_parent: bool = False) -> Path:
    """Check that ``path`` can be written as a file; return it as a :class:`Path`.

    Parameters
    ----------
    path
        The file to be written.
    create_parent
        Create a missing parent folder instead of refusing.

    Raises
    ------
    OutputError
        The path is a folder, its parent is missing (unless ``create_parent``) or is not
        a folder, or the folder cannot be written to.
    """
    path = Path(path)
    if str(path).strip() == "" or path.name in ("", ".", ".."):
        raise OutputError(f"{str(path)!r} is not a file name to write to.")
    if path.is_dir():
        raise OutputError(f"{path} is a folder: give a file name to write to, such as "
                          f"{path / 'out.csv'}.")
    parent = path.parent
    if not parent.exists():
        if not create_parent:
            raise OutputError(f"Cannot write {path}: the folder {parent} does not exist. "
                              "Create it first or choose another path.")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"Cannot create the folder {parent} for {path}: "
                              f"{exc.strerror or exc}.") from None
    if not parent.is_dir():
        raise OutputError(f"Cannot write {path}: {parent} is not a folder.")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"Cannot write {path}: no permission to write in {parent}.")
    return path


def _create_temp(path: Path, mode: int = 0o666) -> tuple[int, Path]:
    """A new temporary file ``.<name>.<random>.tmp`` beside ``path``: its descriptor and path.

    ``O_EXCL`` never follows or clobbers an existing file; ``mode`` minus the umask (the
    default 0o666: the permissions an ordinary ``open()`` would give the final file).
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), tmp
    except OSError as exc:
        raise OutputError(f"Cannot write {path}: {exc.strerror or exc}.") from None


def _fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable; a file system or OS that cannot sync a folder
    (Windows, some network mounts) is left as it is."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EACCES):
            raise
    finally:
        os.close(fd)


def _commit(pairs: Sequence[tuple[Path, Path]]) -> None:
    """Rename each synced temporary file onto its target, then sync the targets' folders."""
    for _, path in pairs:
        if path.is_dir():  # appeared meanwhile: os.replace would fail with a bare error
            raise OutputError(f"{path} is a folder: give a file name to write to.")
    for tmp, path in pairs:
        os.replace(tmp, path)
    for folder in dict.fromkeys(path.parent for _, path in pairs):
        _fsync_folder(folder)


def _failed(path: Path, exc: OSError) -> OutputError:
    return OutputError(f"Could not write {path}: {exc.strerror or exc}. Nothing was "
                       "written (no partial file is left).")


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "wb", *, encoding: str | None = None,
                  newline: str | None = None, create_parent: bool = False
                  ) -> Iterator[IO[Any]]:
    """A file object whose content replaces ``path`` only if the ``with`` block succeeds.

    The package's one atomic writer (with :func:`write_files` for several files): the
    data goes to a temporary file in the same folder (a rename within one file system
    is atomic), named ``.<name>.<random>.tmp``, which is flushed and ``fsync``-ed, renamed
    over ``path`` with :func:`os.replace`, and the folder is ``fsync``-ed so the rename
    survives a crash. The temporary file is removed on any failure.

    Raises
    ------
    OutputError
        The path cannot be written (see :func:`check_output_path`), or writing failed
        (disk full, file-size limit, permission): no partial file is left.
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_writer writes whole files: mode 'wb' or 'w', not {mode!r}")
    path = check_output_path(path, create_parent=create_parent)
    fd, tmp = _create_temp(path)
    try:
        if mode == "wb":
            handle: IO[Any] = os.fdopen(fd, "wb")
        else:
            handle = os.fdopen(fd, "w", encoding=encoding or "utf-8", newline=newline)
        with handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        _commit([(tmp, path)])
    except OutputError:
        _remove_quietly(tmp)
        raise
    except OSError as exc:
        _remove_quietly(tmp)
        raise _failed(path, exc) from None
    except BaseException:
        _remove_quietly(tmp)
        raise


def write_files(outputs: Mapping[str | Path, Callable[[Path], None]], *,
                create_parent: bool = False, mode: int = 0o666) -> list[Path]:
    """Write several files so that all appear together or none does.

    Each writer is called with a temporary path beside its target (it writes the whole
    file there, e.g. ``frame.to_parquet``); each temporary file is ``fsync``-ed, and only
    when every writer has succeeded are they renamed onto their targets and the folders
    ``fsync``-ed (as :func:`atomic_writer`). On any failure the temporary files are
    removed and the targets are left as they were; an exception a writer raises that is
    not an :class:`OSError` passes through unchanged (the :class:`OSError` behind an
    :class:`OutputError` stays its ``__context__``). ``mode``: the files' permissions
    before the umask (``0o600``: private files such as a session's).

    Returns
    -------
    list of Path
        The targets written, in the order given.

    Raises
    ------
    OutputError
        A target cannot be written (missing folder, a folder in its place, no
        permission) or writing failed (disk full, file-size limit).
    """
    done: list[tuple[Path, Path]] = []
    try:
        for target, writer in outputs.items():
            path = check_output_path(target, create_parent=create_parent)
            fd, tmp = _create_temp(path, mode)
            os.close(fd)
            done.append((tmp, path))
            try:
                writer(tmp)
                with tmp.open("rb+") as handle:
                    os.fsync(handle.fileno())
            except OSError as exc:
                raise _failed(path, exc) from None
        _commit(done)
    except OSError as exc:
        for tmp, _ in done:
            _remove_quietly(tmp)
        raise OutputError(f"Could not write {', '.join(str(p) for _, p in done)}: "
                          f"{exc.strerror or exc}.") from None
    except BaseException:
        for tmp, _ in done:
            _remove_quietly(tmp)
        raise
    return [path for _, path in done]


def table_writer(frame: pd.DataFrame, target: str | Path) -> Callable[[Path], None]:
    """A writer for :func:`write_files`: Parquet if ``target`` ends in ``.parquet``,
    else CSV (gzip-compressed if it ends in ``.gz``) with cells neutralised as every CSV
    the package writes (:func:`csv_bytes`)."""
    name = str(target).lower()

    def write(tmp: Path) -> None:
        if name.endswith(".parquet"):
            frame.to_parquet(tmp, index=False)
            return
        data = csv_bytes(frame)
        tmp.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)

    return write


def _remove_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def atomic_write_bytes(path: str | Path, data: bytes, *, create_parent: bool = False) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_writer`); return the path."""
    with atomic_writer(path, "wb", create_parent=create_parent) as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: str | Path, text: str, *, encoding: str = "utf-8",
                      create_parent: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically; lone surrogates become ``?`` rather than fail."""
    return atomic_write_bytes(path, text.encode(encoding, errors="replace"),
                              create_parent=create_parent)


# --- safe CSV -----------------------------------------------------------------------------
def _unsafe(value: Any) -> bool:
    """Text that :func:`neutralise_cell` changes (a formula start or a control character)."""
    return isinstance(value, str) and (value.startswith(FORMULA_PREFIXES)
                                       or UNSAFE_CHARS.search(value) is not None)


def neutralise_cell(value: Any) -> Any:
    """``value`` with a leading ``'`` if it is text a spreadsheet would run as a formula,
    and control / bidirectional-override characters replaced (:func:`clean_controls`)."""
    if isinstance(value, str):
        value = clean_controls(value)
    if not isinstance(value, str) or not value.startswith(FORMULA_PREFIXES):
        return value
    if value[0] in "+-":
        try:
            float(value)
        except ValueError:
            pass
        else:
            return value  # a number written as text, e.g. "-1.5": not a formula
    return "'" + value


def neutralise_csv_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names cannot act as formulas nor
    hold control or bidirectional-override characters.

    Only object/string/categorical columns are looked at; numeric, boolean and date
    columns are returned unchanged. The input frame is never modified.
    """
    out = frame.copy(deep=False)
    out.columns = [neutralise_cell(str(c)) if isinstance(c, str) else c for c in frame.columns]
    for i in range(frame.shape[1]):
        s = frame.iloc[:, i]
        if isinstance(s.dtype, pd.CategoricalDtype):
            cats = s.cat.categories
            if cats.dtype == object or pd.api.types.is_string_dtype(cats):
                new = [neutralise_cell(c) for c in cats]
                if new != list(cats):
                    s = s.cat.rename_categories(new)
        elif s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
            starts = s.map(_unsafe)
            if starts.any():
                s = s.copy()
                s[starts] = s[starts].map(neutralise_cell)
        out.isetitem(i, s)
    return out


def _neutralise_index(index: pd.Index) -> pd.Index:
    """``index`` with its text labels and level names neutralised (a copy)."""
    if isinstance(index, pd.MultiIndex):
        out = pd.MultiIndex.from_tuples(
            [tuple(neutralise_cell(v) for v in t) for t in index], names=index.names)
    else:
        out = pd.Index([neutralise_cell(v) for v in index], name=index.name)
    return out.set_names([neutralise_cell(n) for n in out.names])


def csv_bytes(frame: pd.DataFrame, *, sep: str = ",", index: bool = False) -> bytes:
    """``frame`` as UTF-8 CSV bytes with :func:`neutralise_csv_cells` applied (and, with
    ``index``, to the index labels and names too: a confusion matrix's row labels)."""
    safe = neutralise_csv_cells(frame)
    if index:
        safe.index = _neutralise_index(frame.index)
    text = safe.to_csv(sep=sep, index=index)
    return text.encode("utf-8", errors="replace")


def write_csv(frame: pd.DataFrame, path: str | Path, *, sep: str = ",",
              create_parent: bool = False, index: bool = False) -> Path:
    """Write ``frame`` as a safe CSV (:func:`csv_bytes`), atomically."""
    return atomic_write_bytes(path, csv_bytes(frame, sep=sep, index=index),
                              create_parent=create_parent)


def write_table(frame: pd.DataFrame, path: str | Path, *, create_parent: bool = False) -> Path:
    """Write ``frame`` by extension, atomically: CSV (default), TSV, Parquet or JSON Lines.

    CSV and TSV cells are neutralised (:func:`neutralise_csv_cells`).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".tsv", ".tab"):
        return write_csv(frame, path, sep="\t", create_parent=create_parent)
    if suffix in (".parquet", ".pq"):
        with atomic_writer(path, "wb", create_parent=create_parent) as handle:
            try:
                frame.to_parquet(handle, index=False)
            except (ValueError, TypeError, ImportError) as exc:  # pyarrow type problems
                raise OutputError(f"Could not write {path} as Parquet: {exc}") from None
        return path
    if suffix in (".jsonl", ".ndjson", ".json"):
        text = frame.to_json(orient="records", lines=True, force_ascii=False) or ""
        return atomic_write_text(path, text, create_parent=create_parent)
    return write_csv(frame, path, create_parent=create_parent)
