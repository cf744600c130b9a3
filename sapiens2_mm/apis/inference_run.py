"""One ``tools/infer.py`` run: inputs -> task inferencer -> files, resumable.

Generic over tasks: everything task-specific comes from the task's registered
description (:class:`~sapiens2_mm.apis.tasks.BaseTask`): its options, its
inferencer arguments, its writer, its visualizer and its end-of-run report.

:func:`run_inference` checks the options, opens the output folder (its lock
and run index, :mod:`~sapiens2_mm.apis.inference_index`), loads the model,
then drives the task inferencer with a frame pipeline of its own
(:class:`~sapiens2_mm.apis.frame_pipeline.FramePipeline`, drawings rendered
on its workers) and writes each finished frame (:class:`FrameLoop`).

What is guaranteed (docs/inference.md, "What is guaranteed"):

* inputs are never overwritten (an output folder in an input folder is
  refused) and frames never share an output file;
* each finished frame is in ``<output>/inference_index.jsonl`` (a line
  appended and flushed) as soon as its files are on disk; a run interrupted
  (Ctrl-C, a crash, a full disk) keeps them and the same command run again
  skips them;
* a frame that fails (in the model, the writer or the drawing) is skipped,
  counted and listed in the one failure list (:attr:`RunSummary.failed`),
  and the run goes on; a full disk stops the run (:attr:`RunSummary.
  stopped`), since every later frame would fail too;
* unreadable inputs are skipped and listed; damaged ones (truncated JPEG)
  are processed, counted and listed as warnings.

Task summary files (the pose predictions JSON) are rebuilt from the index when
a run ends, however it ends.
"""
import json
import os.path as osp
from contextlib import closing
from dataclasses import dataclass, field
from typing import Callable, Iterable, List, Optional, Tuple

from ..runtime.devices import check_device
from ..utils.output_paths import is_disk_full
from ..utils.user_errors import ConfigError
from .frame_pipeline import (
    FramePipeline,
    check_batch_size,
    check_workers,
    default_workers,
    render_frames,
)
from .inference_index import (
    INDEX_NAME,
    InferenceIndex,
    open_run_folder,
    resume_run,
)
from .init_model import init_model
from .inputs import Frame, FrameReader, file_identity
from .tasks import BaseTask, get_task
from .tasks.options import TaskOptions
from .writers import FrameSink, OutputLayout, TaskWriter

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
        failed: ``(frame name, reason)`` of frames that raised: in the
            model's steps (the frame pipeline appends them here), the writer
            or the drawing; the run's one failure list.
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

    def read_from(self, reader: FrameReader) -> None:
        """Take the reader's counts: inputs left out as done, unreadable
        and damaged ones."""
        self.resumed = reader.num_done
        self.skipped = list(reader.skipped)
        self.warnings = list(reader.warnings)


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
        **task_options: the task's own options (its ``options_class``;
            ``tools/infer.py TASK -h`` lists them).

    Raises:
        UserError: bad options, inputs, config, checkpoint or output folder,
            before any frame is processed (its kinds in
            :mod:`sapiens2_mm.utils.user_errors`, each also the ValueError /
            FileNotFoundError / FileExistsError ... it is).
        WorkDirLockedError: another run is writing into ``output``
            (``<output>/.inference.lock``).
    """
    spec = get_task(task)
    options = spec.options(**task_options)
    check_device(device)
    check_batch_size(batch_size)
    workers = default_workers() if workers is None else check_workers(workers)
    reader = FrameReader(inputs)
    task_kwargs = spec.inferencer_kwargs(options, device)
    layout = OutputLayout(output, reader)
    header = run_header(spec, options, config, checkpoint, flip_test,
                        cfg_options)
    if not checkpoint:
        echo(RANDOM_WEIGHTS_WARNING)
    index, lock = open_run_folder(layout.out_dir, header, echo)
    try:
        redone = resume_run(index, reader, layout, drawings=not no_vis)
        model = init_model(config, checkpoint, device,
                           cfg_options=cfg_options, compile=compile,
                           dtype=dtype)
        inferencer = _task_inferencer(spec, model, config, dict(
            task_kwargs, batch_size=batch_size,
            flip_test=True if flip_test else None))
        writer = spec.open_writer(layout, model, options)
    except BaseException:
        index.close()
        lock.release()
        raise
    loop = FrameLoop(layout, index, writer, no_vis, RunSummary(redone=redone))
    threads = 1 if serial else workers
    bar = _progress(reader.num_frames())
    try:
        pipeline = FramePipeline(inferencer, threads, overlap=not serial,
                                 failures=loop.summary.failed)
        loop.run(pipeline.iter_frames(reader), None if no_vis else (
            lambda frame, result: spec.visualize(
                frame, result, model.dataset_meta, options)), threads, bar)
    except KeyboardInterrupt:
        loop.summary.interrupted = True
    finally:
        loop.close(bar)
        loop.summary.lines += spec.run_report(inferencer)
        index.close()
        lock.release()
        loop.summary.read_from(reader)
        _echo_summary(loop.summary, bool(checkpoint), output, no_vis,
                      index.path, loop.sink, echo)
    return loop.summary


def _task_inferencer(spec: BaseTask, model, config: str, kwargs: dict):
    """The task's inferencer of ``model``, after checking the config is of
    the task asked for."""
    if model.task != spec.name:
        raise ConfigError(f'{config} is a {model.task!r} config, not '
                         f'{spec.name!r}.')
    return spec.build_inferencer(model, load_model=init_model, **kwargs)


def run_header(spec: BaseTask, options: TaskOptions, config: str,
               checkpoint: Optional[str], flip_test: bool,
               cfg_options: Optional[dict]) -> dict:
    """The index header: the settings a re-run into the folder must share
    (task, config, checkpoint file, flip test, config overrides, the task's
    non-default options; random weights)."""
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
    header.update(spec.index_options(options))
    if not checkpoint:
        header['weights'] = 'random'
    return header


class FrameLoop:
    """Writes each finished frame of a run: its drawing, the task writer's
    files and its index line, in input order; a video's drawing is
    finished when its last frame is written.

    Args:
        layout / index / writer: the run's output paths, run index and task
            writer.
        no_vis: no drawings (photos are marked ``no_vis`` in the index, so a
            later run with drawings redoes them).
        summary: what the run did; this loop counts ``processed`` and
            appends writer and drawing failures to ``failed``.
    """

    def __init__(self, layout: OutputLayout, index: InferenceIndex,
                 writer: TaskWriter, no_vis: bool,
                 summary: RunSummary) -> None:
        self.layout, self.index, self.writer = layout, index, writer
        self.no_vis, self.summary = no_vis, summary
        self.sink = FrameSink(layout)
        self.last: Optional[Frame] = None  # for the end of its video

    def run(self, frames: Iterable, draw: Optional[Callable],
            workers: int, bar) -> None:
        """Draw (on ``workers`` threads) and write every ``(frame,
        result)`` of ``frames``; stops early on a full disk."""
        rendered = render_frames(frames, draw, workers)
        with closing(frames), closing(rendered):
            for item in rendered:
                bar.update()
                self._video_boundary(item.frame)
                if item.error is not None:
                    self.summary.failed.append((item.frame.name, item.error))
                elif not self.write(item):
                    break
        last = self.last
        if last is not None and last.video_name is not None and \
                self.summary.stopped is None:
            self.finish_video(last)

    def _video_boundary(self, frame: Frame) -> None:
        last = self.last
        if last is not None and last.video_name not in (None,
                                                        frame.video_name):
            self.finish_video(last)
        self.last = frame

    def write(self, item) -> bool:
        """Write one rendered frame and its index line; False when the disk
        is full (the run stops), a failure of this frame otherwise
        listed."""
        frame = item.frame
        try:
            record = self.writer.write(frame, item.result)
            if item.image is not None:
                path = self.sink.write(item.image, frame, item.encoded)
                if frame.video_name is None:
                    record['outputs'].append(self.layout.relative(path))
            record.update(name=frame.name, source=frame.source,
                          source_file=file_identity(frame.source))
            if frame.warning:
                record['warning'] = frame.warning
            if self.no_vis and frame.video_name is None:
                record['no_vis'] = True  # drawn by a later run
            self.index.add(record)
        except Exception as err:  # noqa: BLE001 - skip, count, list
            if is_disk_full(err):
                # every later frame would fail the same way: stop, the index
                # keeps what is finished
                self.summary.stopped = (f'disk full while writing '
                                        f'{frame.name} ({err})')
                return False
            self.summary.failed.append((frame.name,
                                        f'{type(err).__name__}: {err}'))
            return True
        self.summary.processed += 1
        return True

    def finish_video(self, frame: Frame) -> None:
        """Give the video of ``frame`` its final name; record it done."""
        path = self.sink.finish_video(frame.video_name)
        self.index.add_video_done(
            frame.video_name, frame.video,
            outputs=[self.layout.relative(path)] if path else (),
            no_vis=self.no_vis)

    def close(self, bar) -> None:
        """Release unfinished videos, close the bar and rebuild the task's
        summary files from every finished frame in the index (this run and
        earlier ones)."""
        self.sink.close()
        if hasattr(bar, 'close'):
            bar.close()
        try:
            self.summary.lines = self.writer.finalize(self.index.records())
        except OSError as err:  # the index has it all: the next run rebuilds
            self.summary.lines = [f'summary files not written ({err}); the '
                                  'next run into this folder writes them']


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
