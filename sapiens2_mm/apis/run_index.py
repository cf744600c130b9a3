"""The inference index: one JSON line per finished frame, written as it ends.

``tools/infer.py`` appends a line to ``<output>/inference_index.jsonl`` (and
flushes it) as soon as a frame's outputs are on disk, so a run that is
interrupted (Ctrl-C, a crash, a full disk) keeps every finished frame, and the
same command run again skips them. Task summary files (the pose predictions
JSON) are rebuilt from the index when a run ends, however it ends.

Line 1 is the header (task, config, checkpoint, options); a re-run with other
settings is refused, so one folder never mixes two models' outputs. Then one
line per finished frame (``{"name": ..., "source": ..., "source_file": [size,
mtime_ns], "outputs": [...], ...task fields}``) and one ``{"video_done": name,
"source": ..., "source_file": ...}`` per completed video. A frame run again
(a video interrupted half-way) supersedes its earlier line.

A finished input is skipped only when it is the same file: a re-run whose
input of that name is another file (``--input B/`` after ``--input A/``) or
the same file changed since is refused (:meth:`InferenceIndex.
check_sources`), never given the earlier results.
"""
import json
import os
import os.path as osp
import re
from typing import Dict, List, Mapping, Optional

INDEX_NAME = 'inference_index.jsonl'
FORMAT = 'sapiens2_mm inference index v1'


def file_identity(path: Optional[str]) -> Optional[list]:
    """[size, modification time in ns] of a file, ``None`` if absent."""
    if not path or not osp.isfile(path):
        return None
    stat = os.stat(path)
    return [stat.st_size, stat.st_mtime_ns]


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
        self.path = osp.join(out_dir, INDEX_NAME)
        self.header = dict(header, format=FORMAT)
        self.done: Dict[str, dict] = {}
        self.done_videos: List[str] = []
        self.video_records: Dict[str, dict] = {}
        self.num_bad_lines = 0
        if osp.exists(self.path):
            self._load(out_dir)
            self._file = open(self.path, 'a')
        else:
            others = [n for n in os.listdir(out_dir) if not n.startswith('.')]
            if others:
                raise FileExistsError(
                    f'Output folder {out_dir!r} already holds files '
                    f'({", ".join(sorted(others)[:3])}, ...) but no '
                    f'{INDEX_NAME}: they were not written by tools/infer.py '
                    'and could be overwritten. Pass a new or empty --output '
                    'folder.')
            self._file = open(self.path, 'w')
            self._write(self.header)
        self.resumed = len(self.done)

    def _load(self, out_dir: str) -> None:
        with open(self.path) as f:
            lines = f.read().splitlines()
        try:
            old = json.loads(lines[0]) if lines else {}
        except json.JSONDecodeError:
            old = {}
        # keys of either header: an option given then and left out now (its
        # default) differs too
        differ = sorted(k for k in set(self.header) | set(old)
                        if old.get(k) != self.header.get(k))
        has_work = any(line.strip() for line in lines[1:])
        if differ and not has_work:
            # nothing was finished under the old settings: start afresh
            with open(self.path, 'w') as f:
                f.write(json.dumps(self.header) + '\n')
            return
        if differ:
            raise FileExistsError(
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
                self.num_bad_lines += 1
                continue
            if 'video_done' in record:
                self.done_videos.append(record['video_done'])
                self.video_records[record['video_done']] = record
            elif 'name' in record:
                self.done[record['name']] = record

    def _write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + '\n')
        self._file.flush()

    def add(self, record: dict) -> None:
        """Record a finished frame (``record['name']``) on disk now."""
        self.done[record['name']] = record
        self._write(record)

    def add_video_done(self, name: str, source: str = '') -> None:
        """Record that every frame of video ``name`` (the file ``source``)
        was processed."""
        record = {'video_done': name}
        if source:
            record.update(source=source, source_file=file_identity(source))
        self.done_videos.append(name)
        self.video_records[name] = record
        self._write(record)

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
        frame_of = {}
        for name, (path, base) in videos.items():
            frame_of[name] = (re.compile(re.escape(base) + r'_\d{6,}\.jpg'),
                              path)
        conflicts = []
        checks = [(r, photos.get(n)) for n, r in self.done.items()]
        checks += [(r, videos[n][0]) for n, r in self.video_records.items()
                   if n in videos]
        for name, record in self.done.items():
            if name in photos:
                continue
            for pattern, path in frame_of.values():
                if pattern.fullmatch(name):
                    checks.append((record, path))
        for record, path in checks:
            if path is None or not record.get('source'):
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
            raise FileExistsError(
                f'{self.path} holds results of other files for '
                f'{len(conflicts)} input name(s): ' + '; '.join(conflicts[:3])
                + ('; ...' if len(conflicts) > 3 else '') + '. They are not '
                'taken for these inputs, nor replaced: pass a new --output '
                'folder (or the earlier inputs, unchanged, to continue that '
                'run).')

    def records(self) -> List[dict]:
        """Finished frames, in the order they were first finished."""
        return list(self.done.values())

    def close(self) -> None:
        """Close the file (every line is already on disk)."""
        if not self._file.closed:
            self._file.close()

