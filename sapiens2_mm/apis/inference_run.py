"""One ``tools/infer.py`` run: inputs -> task inferencer -> files, resumable.

Generic over tasks: everything task-specific comes from the task's registered
description (:class:`~sapiens2_mm.apis.tasks.BaseTask`): its inferencer
arguments, its writer, its visualizer and its end-of-run report.

What is guaranteed (docs/inference.md, "What is guaranteed"):

* inputs are never overwritten (an output folder in an input folder is
  refused) and frames never share an output file;
* each finished frame is in ``<output>/inference_index.jsonl`` (a line
  appended and flushed) as soon as its files are on disk; a run interrupted
  (Ctrl-C, a crash, a full disk) keeps them and the same command run again
  skips them;
* a frame that fails (in the model, the writer or the drawing) is skipped,
  counted and listed, and the run goes on; a full disk stops the run
  (:attr:`RunSummary.stopped`), since every later frame would fail too;
* unreadable inputs are skipped and listed; damaged ones (truncated JPEG)
  are processed, counted and listed as warnings.

Task summary files (the pose predictions JSON) are rebuilt from the index when
a run ends, however it ends. Index line 1 is the header (task, config,
checkpoint, options); a re-run with other settings is refused, so one folder
never mixes two models' outputs. Then one line per finished frame (``{"name":
..., "source": ..., "source_file": [size, mtime_ns], "outputs": [...], ...task
fields}``) and one ``{"video_done": name, "source": ..., "source_file": ...}``
per completed video. A frame run again (a video interrupted half-way)
supersedes its earlier line.

A finished input is skipped only when it is the same file: a re-run whose
input of that name is another file (``--input B/`` after ``--input A/``) or
the same file changed since is refused (:meth:`InferenceIndex.
check_sources`), never given the earlier results.
"""
import json
import os
import os.path as osp
import re
from contextlib import closing
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..runtime.devices import check_device
from ..utils.output_paths import is_disk_full
from ..utils.train_lock import INFERENCE_LOCK, WorkDirLock
from .inputs import Frame, FrameReader, file_identity
from .runner import default_workers, render_frames
from .tasks import get_task
from .writers import FrameSink, OutputLayout

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
                raise FileExistsError(
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
            raise FileExistsError(
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
            raise FileExistsError(
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


RANDOM_WEIGHTS_WARNING = (
    'WARNING: no CHECKPOINT was given, so the model has RANDOM weights and '
    'every output is meaningless (smoke tests only). Pass an official '
    '.safetensors or a .pth after the config.')


@dataclass
class RunSummary:
    """What a run did.

    Attributes:
        processed: frames finished by this run.
        resumed: inputs skipped because an earlier run finished them.
        failed: ``(frame name, reason)`` of frames that raised.
        skipped: ``(path, reason)`` of unreadable inputs.
        warnings: ``(path, reason)`` of damaged inputs that were processed.
        redone: ``(name, reason)`` of inputs an earlier run finished that
            this run did again (outputs deleted since, or drawings asked
            for after ``--no-vis``).
        interrupted: the run was stopped (Ctrl-C) before the end.
        stopped: why the run stopped early on its own (the disk is full),
            else None.
        lines: the task writer's and box source's report lines.
    """
    processed: int = 0
    resumed: int = 0
    failed: List[Tuple[str, str]] = field(default_factory=list)
    skipped: List[Tuple[str, str]] = field(default_factory=list)
    warnings: List[Tuple[str, str]] = field(default_factory=list)
    redone: List[Tuple[str, str]] = field(default_factory=list)
    interrupted: bool = False
    stopped: Optional[str] = None
    lines: List[str] = field(default_factory=list)


def _progress(total: int):
    try:
        from tqdm import tqdm
        return tqdm(total=total or None, unit='frame')
    except ImportError:  # tqdm is optional; mmengine's bar is always there
        from mmengine.utils import ProgressBar
        return ProgressBar(total)


def run_inference(task: str, config: str, inputs, output: str,
                  checkpoint: Optional[str] = None, device: str = 'cpu',
                  batch_size: int = 4, flip_test: bool = False,
                  no_vis: bool = False, compile: bool = False,
                  dtype: str = 'fp32', workers: Optional[int] = None,
                  serial: bool = False, cfg_options: Optional[dict] = None,
                  echo: Callable[[str], None] = print,
                  **task_options) -> RunSummary:
    """Run ``task`` over ``inputs`` into the folder ``output``.

    Args:
        task: a registered task name.
        config / checkpoint: the task config and its weights (None: random
            weights, with a warning).
        inputs: image(s), folder(s), video(s) or arrays (``FrameReader``).
        output: the output folder (new, empty, or of an earlier run).
        device / batch_size / flip_test / compile / dtype: the model and
            the inferencer (:class:`~sapiens2_mm.apis.BaseInferencer`).
        no_vis: write no visualizations.
        workers: threads per CPU stage (default: half the cores, 1 to 4).
        serial: one thread, nothing overlapped (debugging).
        cfg_options: config overrides (recorded in the index).
        echo: where the summary lines go.
        **task_options: the task's own options (:meth:`BaseTask.options`;
            ``tools/infer.py TASK -h`` lists them).

    Raises:
        ValueError / FileNotFoundError / FileExistsError / PermissionError /
        NotADirectoryError: bad options, inputs or output folder, before any
        frame is processed.
        WorkDirLockedError: another run is writing into ``output``
            (``<output>/.inference.lock``).
    """
    from .init_model import init_model
    spec = get_task(task)
    options = spec.options(**task_options)
    check_device(device)
    if batch_size < 1:
        raise ValueError(f'--batch-size must be >= 1, got {batch_size}.')
    if workers is not None and workers < 1:
        raise ValueError(f'--workers must be >= 1, got {workers} (1 '
                         'decodes and draws in one thread).')
    workers = workers or default_workers()
    reader = FrameReader(inputs)
    task_kwargs = spec.inferencer_kwargs(device=device, **options)
    layout = OutputLayout(output, reader)
    header = dict(
        task=spec.name, config=osp.abspath(config),
        checkpoint=osp.abspath(checkpoint) if checkpoint else None,
        # a retrained file at the same path is another model
        checkpoint_file=file_identity(checkpoint),
        flip_test=bool(flip_test))
    if cfg_options:  # only when given: indexes of earlier runs stay valid
        # as JSON reads it back (tuples become lists) for the re-run check
        header['cfg_options'] = json.loads(json.dumps(
            {k: cfg_options[k] for k in sorted(cfg_options)}))
    header.update(spec.index_options(**options))
    if not checkpoint:
        header['weights'] = 'random'
        echo(RANDOM_WEIGHTS_WARNING)
    # one run per folder: two would do frames twice and mix index lines
    lock = WorkDirLock(layout.out_dir, **INFERENCE_LOCK)
    note = lock.acquire()
    if note:
        echo(note)
    try:
        index = InferenceIndex(layout.out_dir, header)
    except BaseException:
        lock.release()
        raise
    try:
        photos, videos = reader.sources()
        index.check_sources(photos, videos)
        reader.number_arrays_after(index.done)
        # a later input never takes the name of an earlier one's output
        layout.keep_listed(index.listed_outputs())
        redo = {name: why for name, why in index.to_redo(not no_vis).items()
                if name in photos or name in videos}
        reader.done = set(index.done) - set(redo)
        reader.done_videos = set(index.video_records) - set(redo)
        model = init_model(config, checkpoint, device,
                           cfg_options=cfg_options, compile=compile,
                           dtype=dtype)
        if model.task != spec.name:
            raise ValueError(f'{config} is a {model.task!r} config, not '
                             f'{spec.name!r}.')
        inferencer = spec.build_inferencer(
            model, batch_size=batch_size,
            flip_test=True if flip_test else None, **task_kwargs)
        writer = spec.open_writer(layout, model, **options)
    except BaseException:
        index.close()
        lock.release()
        raise
    summary = RunSummary(redone=sorted(redo.items()))
    sink = FrameSink(layout)
    meta = model.dataset_meta
    bar = _progress(reader.num_frames())
    last: Optional[Frame] = None  # the frame before, for its video's end

    def fail(name: str, reason: str) -> None:
        summary.failed.append((name, reason))

    def finish_video(frame: Frame) -> None:
        path = sink.finish_video(frame.video_name)
        index.add_video_done(
            frame.video_name, frame.video,
            outputs=[layout.relative(path)] if path else (), no_vis=no_vis)

    try:
        # Overlapped by default (decoding, crops, heatmap decoding, drawing
        # and the writing below run while the network does); --serial: one
        # thread.
        frames = inferencer.iter_frames(
            None, reader, on_failure=lambda f, reason: fail(f.name, reason),
            workers=1 if serial else workers, overlap=not serial)
        draw = None if no_vis else (
            lambda frame, result: spec.visualize(frame, result, meta,
                                                 **options))
        rendered = render_frames(frames, draw, 1 if serial else workers)
        with closing(frames), closing(rendered):
            for item in rendered:
                frame, result = item.frame, item.result
                bar.update()
                if last is not None and last.video_name not in (
                        None, frame.video_name):
                    finish_video(last)
                last = frame
                if item.error is not None:
                    fail(frame.name, item.error)
                    continue
                try:
                    record = writer.write(frame, result)
                    if item.image is not None:
                        path = sink.write(item.image, frame, item.encoded)
                        if frame.video_name is None:
                            record['outputs'].append(layout.relative(path))
                    record.update(name=frame.name, source=frame.source,
                                  source_file=file_identity(frame.source))
                    if frame.warning:
                        record['warning'] = frame.warning
                    if no_vis and frame.video_name is None:
                        record['no_vis'] = True  # drawn by a later run
                    index.add(record)
                except Exception as err:  # noqa: BLE001 - skip, count, list
                    if is_disk_full(err):
                        # every later frame would fail the same way: stop,
                        # the index keeps what is finished
                        summary.stopped = (f'disk full while writing '
                                           f'{frame.name} ({err})')
                        break
                    fail(frame.name, f'{type(err).__name__}: {err}')
                    continue
                summary.processed += 1
        if last is not None and last.video_name is not None and \
                summary.stopped is None:
            finish_video(last)
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        sink.close()
        if hasattr(bar, 'close'):
            bar.close()
        try:
            summary.lines = writer.finalize(index.records())
        except OSError as err:  # the index has it all: the next run rebuilds
            summary.lines = [f'summary files not written ({err}); the next '
                             'run into this folder writes them']
        summary.lines += spec.run_report(inferencer)
        index.close()
        lock.release()
        summary.resumed = reader.num_done
        summary.skipped = list(reader.skipped)
        summary.warnings = list(reader.warnings)
        _echo_summary(summary, bool(checkpoint), output, no_vis, index.path,
                      sink, echo)
    return summary


def _echo_summary(summary: RunSummary, trained: bool, output: str,
                  no_vis: bool, index_path: str, sink: FrameSink,
                  echo: Callable[[str], None]) -> None:
    echo('')
    if not trained:
        echo(RANDOM_WEIGHTS_WARNING)
    if summary.interrupted:
        echo(f'Interrupted. {summary.processed} frame(s) finished and kept; '
             'run the same command again to continue (finished inputs are '
             'skipped).')
    if summary.stopped:
        echo(f'Stopped: {summary.stopped}. {summary.processed} frame(s) '
             'finished and kept; free some space and run the same command '
             'again to continue (finished inputs are skipped).')
    echo(f'{summary.processed} frame(s) processed; outputs in {output}')
    if summary.resumed:
        echo(f'{summary.resumed} input(s) finished by an earlier run were '
             f'skipped (see {INDEX_NAME})')
    for line in summary.lines:
        echo(line)
    if not no_vis:
        echo(f'visualizations: {len(sink.written)} file(s)')
    for listed, heading in (
            (summary.redone, 'redid {} input(s) an earlier run had finished:'),
            (summary.warnings, 'warnings for {} input(s) (processed):'),
            (summary.skipped, 'skipped {} unreadable input(s):'),
            (summary.failed, 'failed {} frame(s) (left out, the others went '
             'on):')):
        if listed:
            echo(heading.format(len(listed)))
            for what, reason in listed:
                echo(f'  {what}: {reason}')
    echo(f'index of finished frames: {index_path}')
