"""The run index of an output folder: what an earlier run finished.

``<output>/inference_index.jsonl``: line 1 is the header (task, config,
checkpoint, options); a re-run with other settings is refused, so one folder
never mixes two models' outputs. Then one line per finished frame
(``{"name": ..., "source": ..., "source_file": [size, mtime_ns], "outputs":
[...], ...task fields}``) and one ``{"video_done": name, "source": ...,
"source_file": ...}`` per completed video. A frame run again (a video
interrupted half-way) supersedes its earlier line. Each line is appended and
flushed as soon as its files are on disk.

A finished input is skipped only when it is the same file: a re-run whose
input of that name is another file (``--input B/`` after ``--input A/``) or
the same file changed since is refused (:meth:`InferenceIndex.
check_sources`), never given the earlier results. :func:`resume_run` turns
the index into what a run leaves out, redoes and never overwrites;
:func:`open_run_folder` takes the folder's lock and opens its index.
"""
import json
import os
import os.path as osp
import re
from typing import Callable, Dict, List, Mapping, Sequence, Tuple

from ..utils.train_lock import INFERENCE_LOCK, WorkDirLock
from ..utils.user_errors import OutputExistsError
from .inputs import FrameReader, file_identity
from .writers import OutputLayout

INDEX_NAME = 'inference_index.jsonl'
FORMAT = 'sapiens2_mm inference index v1'


def _describe(record: dict) -> str:
    size = (record.get('source_file') or [None])[0]
    return repr(record.get('source')) + (f' ({size} bytes)'
                                         if size is not None else '')


class InferenceIndex:
    """Open (or create) the index of an output folder.

    Args:
        out_dir: the output folder.
        header: settings that must match for a re-run to reuse the folder.

    Raises:
        FileExistsError: the folder holds files but no index (they could be
            overwritten), or an index of other settings.
    """

    def __init__(self, out_dir: str, header: dict) -> None:
        self.out_dir = out_dir
        self.path = osp.join(out_dir, INDEX_NAME)
        self.header = dict(header, format=FORMAT)
        self.done: Dict[str, dict] = {}
        self.video_records: Dict[str, dict] = {}
        if osp.exists(self.path):
            self._load(out_dir)
            self._file = open(self.path, 'a')
            if not _ends_with_newline(self.path):
                # a line cut short (a crash, a full disk): the next line
                # starts on its own, not glued to it
                self._file.write('\n')
        else:
            others = [n for n in os.listdir(out_dir) if not n.startswith('.')]
            if others:
                raise OutputExistsError(
                    f'Output folder {out_dir!r} already holds files '
                    f'({", ".join(sorted(others)[:3])}, ...) but no '
                    f'{INDEX_NAME}: they were not written by tools/infer.py '
                    'and could be overwritten. Pass a new or empty --output '
                    'folder.')
            self._file = open(self.path, 'w')
            self._write(self.header)

    def _load(self, out_dir: str) -> None:
        with open(self.path) as f:
            lines = f.read().splitlines()
        try:
            old = json.loads(lines[0]) if lines else {}
        except json.JSONDecodeError:
            old = None
        has_work = any(line.strip() for line in lines[1:])
        if has_work and not (isinstance(old, dict)
                             and old.get('format') == FORMAT):
            raise OutputExistsError(
                f'{self.path}: line 1 is not a readable index header '
                f'({lines[0][:60]!r}); the index is damaged, so the settings '
                'its finished frames were made with are unknown. Pass a new '
                '--output folder (or move the index away to redo every '
                'frame here).')
        old = old if isinstance(old, dict) else {}
        # keys of either header: an option given then and left out now (its
        # default) differs too
        differ = sorted(k for k in set(self.header) | set(old)
                        if old.get(k) != self.header.get(k))
        if differ and not has_work:
            # nothing was finished under the old settings: start afresh
            with open(self.path, 'w') as f:
                f.write(json.dumps(self.header) + '\n')
            return
        if differ:
            raise OutputExistsError(
                f'{self.path} was written with other settings ('
                + '; '.join(f'{k}: {old.get(k)!r} then, '
                            f'{self.header.get(k)!r} now' for k in differ)
                + '). Pass a new --output folder, or the same settings to '
                'continue that run.')
        for line in lines[1:]:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                # a line cut short by a crash: that frame is simply redone
                continue
            if 'video_done' in record:
                self.video_records[record['video_done']] = record
            elif 'name' in record:
                self.done[record['name']] = record

    def _write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + '\n')
        self._file.flush()

    def add(self, record: dict) -> None:
        """Record a finished frame (``record['name']``) on disk now."""
        self._write(record)
        self.done[record['name']] = record

    def add_video_done(self, name: str, source: str = '',
                       outputs: Sequence[str] = (),
                       no_vis: bool = False) -> None:
        """Record that every frame of video ``name`` (the file ``source``)
        was processed; ``outputs``: its drawing (relative path), ``no_vis``:
        done without one."""
        record = {'video_done': name}
        if source:
            record.update(source=source, source_file=file_identity(source))
        if outputs:
            record['outputs'] = list(outputs)
        if no_vis:
            record['no_vis'] = True
        self._write(record)
        self.video_records[name] = record

    def check_sources(self, photos: Mapping[str, str],
                      videos: Mapping[str, tuple]) -> None:
        """Refuse a re-run whose input of a finished name is another file.

        Args:
            photos: photo name -> its file now.
            videos: video name -> (its file now, the base of its frame names
                ``<base>_<index:06d>.jpg``).

        Raises:
            FileExistsError: listing the names whose earlier source was
                another file or has changed (path, size or modification time
                differ), before anything is processed.
        """
        frame_of = [(re.compile(re.escape(base) + r'_\d{6,}\.jpg'), path)
                    for path, base in videos.values()]
        checks = [(r, photos[n]) for n, r in self.done.items() if n in photos]
        checks += [(r, videos[n][0]) for n, r in self.video_records.items()
                   if n in videos]
        checks += [(r, path) for n, r in self.done.items() if n not in photos
                   for pattern, path in frame_of if pattern.fullmatch(n)]
        conflicts = []
        for record, path in checks:
            if not record.get('source'):
                continue
            same_path = osp.realpath(record['source']) == osp.realpath(path)
            old = record.get('source_file')
            if same_path and (old is None or old == file_identity(path)):
                continue
            now = file_identity(path)
            what = record.get('name') or record.get('video_done')
            conflicts.append(
                f'{what!r}: done from {_describe(record)}, now '
                f'{path!r} ({now[0] if now else "?"} bytes'
                f'{", changed since" if same_path else ""})')
        if conflicts:
            raise OutputExistsError(
                f'{self.path} holds results of other files for '
                f'{len(conflicts)} input name(s): ' + '; '.join(conflicts[:3])
                + ('; ...' if len(conflicts) > 3 else '') + '. They are not '
                'taken for these inputs, nor replaced: pass a new --output '
                'folder (or the earlier inputs, unchanged, to continue that '
                'run).')

    def to_redo(self, drawings: bool) -> Dict[str, str]:
        """Finished photos and videos a re-run does again, with the reason:
        an output listed in their line is gone (deleted since), or
        ``drawings`` are wanted and they were finished under ``--no-vis``.
        A video is redone as a whole (its frames are not skipped one by
        one), when its drawing or any of its frames' outputs is missing.

        Returns:
            photo or video name -> why.
        """
        redo: Dict[str, str] = {}

        def check(name: str, record: dict, missing: List[str]) -> None:
            missing += [p for p in record.get('outputs') or () if not
                        osp.exists(osp.join(self.out_dir, *p.split('/')))]
            if missing:
                redo[name] = 'outputs missing: ' + ', '.join(missing[:3]) + (
                    ' ...' if len(missing) > 3 else '')
            elif drawings and record.get('no_vis'):
                redo[name] = 'done with --no-vis, drawn now'

        videos = {r.get('source') for r in self.video_records.values()}
        frames_of: Dict[str, List[str]] = {}
        for name, record in self.done.items():
            if record.get('source') and record['source'] in videos:
                frames_of.setdefault(record['source'], []).append(name)
            else:
                check(name, record, [])
        for name, record in self.video_records.items():
            missing = [p for frame in frames_of.get(record.get('source'), ())
                       for p in self.done[frame].get('outputs') or ()
                       if not osp.exists(osp.join(self.out_dir,
                                                  *p.split('/')))]
            check(name, record, missing)
        return redo

    def listed_outputs(self) -> Dict[str, str]:
        """Output path (relative to the folder) -> the frame or video name
        whose finished line lists it."""
        listed = {}
        for name, record in list(self.done.items()) + list(
                self.video_records.items()):
            for path in record.get('outputs') or ():
                listed[path] = name
        return listed

    def records(self) -> List[dict]:
        """Finished frames, in the order they were first finished."""
        return list(self.done.values())

    def close(self) -> None:
        """Close the file (every line is already on disk, but for one a full
        disk cut short: that frame is redone by the next run)."""
        if not self._file.closed:
            try:
                self._file.close()
            except OSError:
                pass


def _ends_with_newline(path: str) -> bool:
    """Whether the file is empty or its last byte is a newline."""
    with open(path, 'rb') as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return True
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b'\n'


def open_run_folder(out_dir: str, header: dict,
                    echo: Callable[[str], None]
                    ) -> Tuple[InferenceIndex, WorkDirLock]:
    """Take the folder's lock (``<out_dir>/.inference.lock``: one run per
    folder, two would do frames twice and mix index lines) and open its
    index; the caller closes the index and releases the lock.

    Raises:
        WorkDirLockedError: another run is writing into the folder.
        FileExistsError: see :class:`InferenceIndex` (the lock is released).
    """
    lock = WorkDirLock(out_dir, **INFERENCE_LOCK)
    note = lock.acquire()
    if note:
        echo(note)
    try:
        return InferenceIndex(out_dir, header), lock
    except BaseException:
        lock.release()
        raise


def resume_run(index: InferenceIndex, reader: FrameReader,
               layout: OutputLayout, drawings: bool) -> List[Tuple[str, str]]:
    """Continue the folder's run with ``reader``'s inputs.

    Refuses inputs that are other files than the finished ones of their
    name (:meth:`InferenceIndex.check_sources`); numbers this run's arrays
    after the finished ones; keeps the layout from writing onto the outputs
    the index lists for other inputs; leaves out (:meth:`FrameReader.
    leave_out`) the finished inputs but those to redo
    (:meth:`InferenceIndex.to_redo`: outputs deleted since, or drawings now
    wanted).

    Returns:
        ``(name, why)`` of the inputs redone, sorted.
    """
    photos, videos = reader.sources()
    index.check_sources(photos, videos)
    reader.number_arrays_after(index.done)
    # a later input never takes the name of an earlier one's output
    layout.keep_listed(index.listed_outputs())
    redo = {name: why for name, why in index.to_redo(drawings).items()
            if name in photos or name in videos}
    reader.leave_out(set(index.done) - set(redo),
                     set(index.video_records) - set(redo))
    return sorted(redo.items())
