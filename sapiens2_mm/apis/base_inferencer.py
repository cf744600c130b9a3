"""What every task inferencer is: a model, its test pipeline and three steps.

A task inferencer implements ``prepare`` (CPU work before the network),
``forward`` (the network on a batch of items) and ``finish`` (CPU work
after it); the frame pipeline (:mod:`~sapiens2_mm.apis.frame_pipeline`)
composes them. ``tools/infer.py`` (:func:`~sapiens2_mm.apis.run_inference`)
builds that pipeline itself; the Python API's ``inferencer(inputs)``,
:meth:`BaseInferencer.iter_frames` and :meth:`BaseInferencer.predict` are
shorthands that build one for the call (mmengine's and mmpose's inferencers
split the work the same way).
"""
from abc import ABCMeta, abstractmethod
from typing import (
    Any,
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
from ..utils.user_errors import ConfigError, OptionError
from .frame_pipeline import FramePipeline, check_batch_size
from .inputs import Frame, FrameReader, InputType


def config_test_pipeline(cfg: Config) -> Optional[list]:
    """The config's test steps: ``test_dataloader.dataset.pipeline``, else
    ``test_pipeline``, else None (a bare model config: :func:`~sapiens2_mm.
    apis.init_model` gives it the task's default steps)."""
    dataset = (cfg.get('test_dataloader') or {}).get('dataset') or {}
    return dataset.get('pipeline') or cfg.get('test_pipeline')


def inference_pipeline(cfg: Config, task: str = '') -> Compose:
    """The config's test pipeline without its loading steps.

    Frames arrive decoded (arrays, video frames), so the image loader and the
    ground-truth loaders (``Load*`` transforms) of the test pipeline are
    dropped; the remaining resize/crop/pack steps are exactly the test ones.

    Raises:
        ValueError: the config has no test steps (and its task no default
            ones).
    """
    pipeline = config_test_pipeline(cfg)
    if pipeline is None:
        raise ConfigError(
            f'The {task!r} config has no test_dataloader.dataset.pipeline '
            'or test_pipeline; inference needs it to resize/crop inputs like '
            'the test set.')
    steps = [t for t in pipeline if 'Load' not in str(t['type'])]
    with in_config_scope(cfg):  # a stock mmpose config's 'TopdownAffine'
        return Compose(steps)


class BaseInferencer(metaclass=ABCMeta):
    """Run a task model over images, folders, videos or arrays, batched.

    ``inferencer(inputs)`` / :meth:`iter_results` / :meth:`iter_frames` run
    the three steps over the inputs (``workers=N`` overlapped);
    :meth:`predict` runs already decoded frames.

    Args:
        model: a model from :func:`~sapiens2_mm.apis.init_model` (a config
            path: :func:`~sapiens2_mm.apis.build_inferencer`).
        batch_size: model items per forward (a frame each; seg with
            ``flip_test``: two; pose: person crops), across frames.
        flip_test: average with the horizontally flipped input; ``None`` keeps
            the config's setting.
        compile: ``torch.compile`` the network (see
            :func:`~sapiens2_mm.runtime.compilation.compile_model`).
        dtype: ``'fp32'`` or ``'bf16'`` (autocast).

    Attributes:
        failed: ``(frame name, reason)`` of the frames the last
            :meth:`iter_frames` (or call) left out.
        reader: the :class:`~sapiens2_mm.apis.FrameReader` of the last call.
    """
    task: str = ''

    def __init__(self, model: nn.Module, batch_size: int = 4,
                 flip_test: Optional[bool] = None, compile: bool = False,
                 dtype: str = 'fp32') -> None:
        register_all_modules()
        if not isinstance(model, nn.Module):
            raise TypeError(
                f'{type(self).__name__} takes a model from init_model, got '
                f'{type(model).__name__}; build_inferencer(config, '
                'checkpoint=...) builds one from a config.')
        if compile or dtype != 'fp32':
            from ..runtime.speedups import apply_speedups
            apply_speedups(model, compile=compile, dtype=dtype)
        if getattr(model, 'task', self.task) != self.task:
            raise OptionError(
                f'{type(self).__name__} runs {self.task!r} models, got a '
                f'{model.task!r} model; use build_inferencer(model).')
        self.model = model
        self.batch_size = check_batch_size(batch_size)
        self.flip_test = flip_test
        self.pipeline = inference_pipeline(model.cfg, self.task)
        self.reader: Optional[FrameReader] = None
        self.failed: List[Tuple[str, str]] = []

    @property
    def skipped(self) -> list:
        """(path, reason) of every input the last run could not read."""
        return self.reader.skipped if self.reader is not None else []

    # -- the three steps (sapiens2_mm.apis.frame_pipeline composes them) -----
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

    # -- the Python API: a frame pipeline for the call -----------------------
    def iter_frames(self, inputs: Union[InputType, Sequence[InputType]] = None,
                    reader: Optional[Iterable] = None, workers: int = 1,
                    overlap: Optional[bool] = None) -> Iterator:
        """Yield ``(frame, result)`` pairs in input order (the frame holds
        the image).

        A frame that fails is left out and listed in :attr:`failed` as
        ``(name, reason)``; the others go on
        (:mod:`~sapiens2_mm.apis.frame_pipeline`).

        Args:
            inputs: paths, folders, videos or arrays (see
                :class:`~sapiens2_mm.apis.FrameReader`).
            reader: a ``FrameReader`` (or any iterable of frames) instead.
            workers: threads per CPU stage (1: everything on this thread).
            overlap: stages on threads of their own, the network never
                waiting for decoding (default: when ``workers > 1``).
        """
        self.reader = reader if reader is not None else FrameReader(inputs)
        self.failed = []
        pipeline = FramePipeline(self, workers, overlap, failures=self.failed)
        return pipeline.iter_frames(self.reader)

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
        pipeline = FramePipeline(self, strict=True)
        return [r for _, r in pipeline.iter_frames(frames)]
