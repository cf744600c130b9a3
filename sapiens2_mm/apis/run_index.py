"""The inference index: one JSON line per finished frame, written as it ends.

``tools/infer.py`` appends a line to ``<output>/inference_index.jsonl`` (and
flushes it) as soon as a frame's outputs are on disk, so a run that is
interrupted (Ctrl-C, a crash, a full disk) keeps every finished frame, and the
same command run again skips them. Task summary files (the pose predictions
JSON) are rebuilt from the index when a run ends, however it ends.

Line 1 is the header (task, config, checkpoint, options); a re-run with other
settings is refused, so one folder never mixes two models' outputs. Then one
line per finished frame (``{"name": ..., "source": ..., "outputs": [...],
...task fields}``) and one ``{"video_done": name}`` per completed video. A
frame run again (a video interrupted half-way) supersedes its earlier line.
"""
import json
import os
import os.path as osp
from typing import Dict, List

INDEX_NAME = 'inference_index.jsonl'
FORMAT = 'sapiens2_mm inference index v1'


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
        differ = sorted(k for k in self.header
                        if old.get(k) != self.header[k])
        has_work = any(line.strip() for line in lines[1:])
        if differ and not has_work:
            # nothing was finished under the old settings: start afresh
            with open(self.path, 'w') as f:
                f.write(json.dumps(self.header) + '\n')
            return
        if differ:
            raise FileExistsError(
                f'{self.path} was written with other settings ('
                + '; '.join(f'{k}: {old.get(k)!r} then, {self.header[k]!r} '
                            'now' for k in differ)
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
            elif 'name' in record:
                self.done[record['name']] = record

    def _write(self, record: dict) -> None:
        self._file.write(json.dumps(record) + '\n')
        self._file.flush()

    def add(self, record: dict) -> None:
        """Record a finished frame (``record['name']``) on disk now."""
        self.done[record['name']] = record
        self._write(record)

    def add_video_done(self, name: str) -> None:
        """Record that every frame of video ``name`` was processed."""
        self.done_videos.append(name)
        self._write({'video_done': name})

    def records(self) -> List[dict]:
        """Finished frames, in the order they were first finished."""
        return list(self.done.values())

    def close(self) -> None:
        """Close the file (every line is already on disk)."""
        if not self._file.closed:
            self._file.close()

