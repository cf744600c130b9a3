"""Shared machinery of the task inferencers: model, test pipeline, batching."""
from abc import ABCMeta, abstractmethod
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, Union

import torch
from mmengine.config import Config
from mmengine.dataset import Compose, pseudo_collate
from torch import nn

from ..utils import register_all_modules
from .inputs import Frame, FrameReader, InputType, batched


def inference_pipeline(cfg: Config, task: Optional[str] = None) -> Compose:
    """The config's test pipeline without its loading steps.

    Frames arrive decoded (arrays, video frames), so the image loader and the
    ground-truth loaders (``Load*`` transforms) of the test pipeline are
    dropped; the remaining resize/crop/pack steps are exactly the test ones.
    The pipeline is ``test_dataloader.dataset.pipeline``, else
    ``test_pipeline``, else (bare model configs) the task's default one.
    """
    dataset = (cfg.get('test_dataloader') or {}).get('dataset') or {}
    pipeline = dataset.get('pipeline') or cfg.get('test_pipeline')
    if pipeline is None:
        from .tasks import find_task, get_task
        spec = get_task(task) if task else find_task(cfg)
        pipeline = spec.default_inference_pipeline(cfg)
    steps = [t for t in pipeline if 'Load' not in str(t['type'])]
    return Compose(steps)


class BaseInferencer(metaclass=ABCMeta):
    """Run a task model over images, folders, videos or arrays, batched.

    Args:
        model: a model from :func:`init_model`, or a config path/``Config``.
        checkpoint: weights, when ``model`` is a config.
        device: torch device, when ``model`` is a config.
        batch_size: frames per forward batch (pose: person crops per batch).
        flip_test: average with the horizontally flipped input; ``None`` keeps
            the config's setting.
        compile: ``torch.compile`` the network (see
            :func:`~sapiens2_mm.runtime.compilation.compile_model`).
        dtype: ``'fp32'`` or ``'bf16'`` (autocast).
    """
    task: str = ''

    def __init__(self, model: Union[nn.Module, str, Config],
                 checkpoint: Optional[str] = None, device: str = 'cpu',
                 batch_size: int = 4,
                 flip_test: Optional[bool] = None, compile: bool = False,
                 dtype: str = 'fp32') -> None:
        register_all_modules()
        if not isinstance(model, nn.Module):
            from .init_model import init_model
            model = init_model(model, checkpoint, device, compile=compile,
                               dtype=dtype)
        elif compile or dtype != 'fp32':
            from ..runtime.speedups import apply_speedups
            apply_speedups(model, compile=compile, dtype=dtype)
        if getattr(model, 'task', self.task) != self.task:
            raise ValueError(
                f'{type(self).__name__} runs {self.task!r} models, got a '
                f'{model.task!r} model; use build_inferencer(model).')
        if batch_size < 1:
            raise ValueError(f'batch_size must be >= 1, got {batch_size}.')
        self.model = model
        self.batch_size = batch_size
        self.flip_test = flip_test
        self.pipeline = inference_pipeline(model.cfg, self.task or None)
        self.reader: Optional[FrameReader] = None
        self.failed: List[Tuple[str, str]] = []

    @property
    def skipped(self) -> list:
        """(path, reason) of every input the last run could not read."""
        return self.reader.skipped if self.reader is not None else []

    def iter_results(self, inputs: Union[InputType, Sequence[InputType]],
                     reader: Optional[FrameReader] = None) -> Iterator:
        """Yield one result per readable frame, in input order."""
        for _, result in self.iter_frames(inputs, reader):
            yield result

    def iter_frames(self, inputs: Union[InputType, Sequence[InputType]],
                    reader: Optional[FrameReader] = None,
                    on_failure: Optional[Callable[[Frame, str], None]] = None
                    ) -> Iterator:
        """Yield ``(frame, result)`` pairs (the frame holds the image).

        A batch that raises is re-run frame by frame, so one bad frame never
        stops the others: each frame that still fails is left out, recorded
        in :attr:`failed` as ``(name, reason)`` and passed to ``on_failure``.
        """
        self.reader = reader if reader is not None else FrameReader(inputs)
        self.failed = []
        for frames in batched(self.reader, self.batch_size):
            try:
                with torch.no_grad():
                    results = self.run_batch(frames)
            except Exception:  # noqa: BLE001 - isolated below, per frame
                results = None
            if results is not None:
                yield from zip(frames, results)
                continue
            for frame in frames:
                try:
                    with torch.no_grad():
                        result = self.run_batch([frame])[0]
                except Exception as err:  # noqa: BLE001 - skip and count
                    reason = f'{type(err).__name__}: {err}'
                    self.failed.append((frame.name, reason))
                    if on_failure is not None:
                        on_failure(frame, reason)
                    continue
                yield frame, result

    def __call__(self, inputs: Union[InputType, Sequence[InputType]]) -> List:
        """All results as a list (see :meth:`iter_results` for streaming)."""
        return list(self.iter_results(inputs))

    @abstractmethod
    def run_batch(self, frames: List[Frame]) -> List:
        """Results of one batch of frames, in order."""

    def _test_step(self, data_list: List[dict]) -> list:
        return self.model.test_step(pseudo_collate(data_list))
