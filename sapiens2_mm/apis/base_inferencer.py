"""What every task inferencer is: a model, its test pipeline and three steps.

A task inferencer implements ``prepare`` (CPU work before the network),
``forward`` (the network on a batch of items) and ``finish`` (CPU work
after it); :mod:`~sapiens2_mm.apis.runner` composes them, serially for the
Python API and overlapped for ``tools/infer.py`` (mmengine's and mmpose's
inferencers split the work the same way).
"""
from abc import ABCMeta, abstractmethod
from typing import (
    Any,
    Callable,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

from mmengine.config import Config
from mmengine.dataset import Compose
from torch import nn

from ..utils import in_config_scope, register_all_modules
from .inputs import Frame, FrameReader, InputType
from .runner import Runner


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
    with in_config_scope(cfg):  # a stock mmpose config's 'TopdownAffine'
        return Compose(steps)


class BaseInferencer(metaclass=ABCMeta):
    """Run a task model over images, folders, videos or arrays, batched.

    ``inferencer(inputs)`` / :meth:`iter_results` / :meth:`iter_frames` run
    the three steps over the inputs (``workers=N`` overlapped);
    :meth:`predict` runs already decoded frames.

    Args:
        model: a model from :func:`init_model`, or a config path/``Config``.
        checkpoint: weights, when ``model`` is a config.
        device: torch device, when ``model`` is a config.
        batch_size: model items per forward (a frame each; seg with
            ``flip_test``: two; pose: person crops), across frames.
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

    # -- the three steps (sapiens2_mm.apis.runner composes them) -------------
    @abstractmethod
    def prepare(self, frame: Frame) -> Tuple[Any, list]:
        """CPU work before the network (boxes, crops, resizing, packing).

        Returns:
            ``(context for finish, the frame's model items)``.
        """

    @abstractmethod
    def forward(self, items: list) -> list:
        """The network on a batch of items (of one or more frames), called
        under ``torch.no_grad``; one output per item."""

    @abstractmethod
    def finish(self, frame: Frame, context, outputs: list):
        """CPU work after the network (decoding, un-padding, resizing to the
        frame, argmax): the frame's result from its items' outputs."""

    def pack(self, frame: Frame, image=None, **info) -> dict:
        """The test pipeline on ``frame`` (or ``image``, e.g. its mirror of
        the same size), with extra ``info`` fields."""
        h, w = frame.image.shape[:2]
        return self.pipeline(dict(
            img=frame.image if image is None else image, img_path=frame.name,
            img_shape=(h, w), ori_shape=(h, w), **info))

    # -- their composition ---------------------------------------------------
    def iter_frames(self, inputs: Union[InputType, Sequence[InputType]] = None,
                    reader: Optional[Iterable] = None,
                    on_failure: Optional[Callable[[Frame, str], None]] = None,
                    workers: int = 1, overlap: Optional[bool] = None
                    ) -> Iterator:
        """Yield ``(frame, result)`` pairs in input order (the frame holds
        the image).

        A frame that fails is left out, recorded in :attr:`failed` as
        ``(name, reason)`` and passed to ``on_failure``; the others go on
        (:mod:`~sapiens2_mm.apis.runner`).

        Args:
            inputs: paths, folders, videos or arrays (see
                :class:`~sapiens2_mm.apis.FrameReader`).
            reader: a ``FrameReader`` (or any iterable of frames) instead.
            on_failure: called with ``(frame, "Type: message")``.
            workers: threads per CPU stage (1: everything on this thread).
            overlap: stages on threads of their own, the network never
                waiting for decoding (default: when ``workers > 1``).
        """
        self.reader = reader if reader is not None else FrameReader(inputs)
        runner = Runner(self, workers, overlap, on_failure=on_failure)
        self.failed = runner.failed = []
        return runner.iter_frames(self.reader)

    def iter_results(self, inputs: Union[InputType, Sequence[InputType]],
                     **kwargs) -> Iterator:
        """Yield one result per readable frame, in input order."""
        for _, result in self.iter_frames(inputs, **kwargs):
            yield result

    def __call__(self, inputs: Union[InputType, Sequence[InputType]],
                 **kwargs) -> List:
        """All results as a list (see :meth:`iter_frames` for the options
        and for streaming)."""
        return list(self.iter_results(inputs, **kwargs))

    def predict(self, frames: Sequence[Frame]) -> List:
        """Results of decoded frames, serially; a failure is raised."""
        return [r for _, r in Runner(self, strict=True).iter_frames(frames)]


def build_inferencer(model, task=None, **kwargs) -> BaseInferencer:
    """The inferencer of ``model``'s task (its registered description).

    Args:
        model: a model from :func:`init_model` (its ``task`` is used) or a
            config path, in which case ``checkpoint=`` / ``device=`` may be
            given in ``kwargs``.
        task: force a task name.
        **kwargs: inferencer arguments (batch_size, flip_test, boxes, ...).

    Raises:
        ValueError: the task is not registered (registered names listed).
    """
    from .init_model import load_config
    from .tasks import find_task, get_task
    if task is None:
        task = getattr(model, 'task', None)
    spec = find_task(load_config(model)) if task is None else get_task(task)
    return spec.build_inferencer(model, **kwargs)
