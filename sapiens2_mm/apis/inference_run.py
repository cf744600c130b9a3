"""One ``tools/infer.py`` run: inputs -> task inferencer -> files, resumable.

Generic over tasks: everything task-specific comes from the task's registered
description (:class:`~sapiens2_mm.apis.tasks.BaseTask`): its inferencer
arguments, its writer, its visualizer and its end-of-run report.

What is guaranteed (docs/inference.md, "What is guaranteed"):

* inputs are never overwritten (an output folder in an input folder is
  refused) and frames never share an output file;
* each finished frame is in ``inference_index.jsonl`` as soon as its files
  are written; an interrupted run keeps them and a re-run skips them;
* a frame that fails (in the model, the writer or the drawing) is skipped,
  counted and listed, and the run goes on;
* unreadable inputs are skipped and listed; damaged ones (truncated JPEG)
  are processed, counted and listed as warnings.
"""
import json
import os.path as osp
from contextlib import closing
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

from ..runtime.devices import check_device
from .inputs import FrameReader
from .run_index import INDEX_NAME, InferenceIndex, file_identity
from .runner import default_workers, render_frames
from .tasks import get_task
from .writers import FrameSink, OutputLayout

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
        interrupted: the run was stopped (Ctrl-C) before the end.
        lines: the task writer's and box source's report lines.
    """
    processed: int = 0
    resumed: int = 0
    failed: List[Tuple[str, str]] = field(default_factory=list)
    skipped: List[Tuple[str, str]] = field(default_factory=list)
    warnings: List[Tuple[str, str]] = field(default_factory=list)
    interrupted: bool = False
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
    index = InferenceIndex(layout.out_dir, header)
    try:
        index.check_sources(*reader.sources())
        reader.done = set(index.done)
        reader.done_videos = set(index.done_videos)
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
        raise
    summary = RunSummary()
    sink = FrameSink(layout)
    meta = model.dataset_meta
    bar = _progress(reader.num_frames())
    current_video: Optional[str] = None
    current_source = ''

    def fail(name: str, reason: str) -> None:
        summary.failed.append((name, reason))

    def finish_video(name: str, source: str) -> None:
        sink.finish_video(name)
        index.add_video_done(name, source)

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
                if frame.video_name != current_video:
                    if current_video is not None:
                        finish_video(current_video, current_source)
                    current_video = frame.video_name
                    current_source = frame.video
                if item.error is not None:
                    fail(frame.name, item.error)
                    continue
                try:
                    record = writer.write(frame, result)
                    if item.image is not None:
                        path = sink.write(item.image, frame, item.encoded)
                        if frame.video_name is None:
                            record['outputs'].append(layout.relative(path))
                except Exception as err:  # noqa: BLE001 - skip, count, list
                    fail(frame.name, f'{type(err).__name__}: {err}')
                    continue
                record.update(name=frame.name, source=frame.source,
                              source_file=file_identity(frame.source))
                if frame.warning:
                    record['warning'] = frame.warning
                index.add(record)
                summary.processed += 1
        if current_video is not None:
            finish_video(current_video, current_source)
    except KeyboardInterrupt:
        summary.interrupted = True
    finally:
        sink.close()
        if hasattr(bar, 'close'):
            bar.close()
        summary.lines = writer.finalize(index.records())
        summary.lines += spec.run_report(inferencer)
        index.close()
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
    echo(f'{summary.processed} frame(s) processed; outputs in {output}')
    if summary.resumed:
        echo(f'{summary.resumed} input(s) finished by an earlier run were '
             f'skipped (see {INDEX_NAME})')
    for line in summary.lines:
        echo(line)
    if not no_vis:
        echo(f'visualizations: {len(sink.written)} file(s)')
    if summary.warnings:
        echo(f'warnings for {len(summary.warnings)} input(s) (processed):')
        for path, reason in summary.warnings:
            echo(f'  {path}: {reason}')
    if summary.skipped:
        echo(f'skipped {len(summary.skipped)} unreadable input(s):')
        for path, reason in summary.skipped:
            echo(f'  {path}: {reason}')
    if summary.failed:
        echo(f'failed {len(summary.failed)} frame(s) (left out, the others '
             'went on):')
        for name, reason in summary.failed:
            echo(f'  {name}: {reason}')
    echo(f'index of finished frames: {index_path}')
