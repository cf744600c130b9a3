"""What a task is to the generic code: one registered :class:`BaseTask`.

``init_model``, ``build_inferencer``, ``tools/infer.py`` and ``tools/test.py``
never name a task; they ask the :data:`~sapiens2_mm.registry.TASKS` registry:

* :func:`find_task` recognises the task of a config (an explicit top-level
  ``task = '<name>'`` wins, otherwise the one description whose
  :meth:`BaseTask.matches` accepts the config);
* :func:`get_task` returns the description of a task name;
* :func:`task_names` lists the registered names (the infer CLI choices).

A new task is one subclass registered with
``@TASKS.register_module(name='<task>')`` in a module imported by
``sapiens2_mm/apis/tasks/__init__.py`` (docs/inference.md lists the steps).
"""
import argparse
from abc import ABCMeta, abstractmethod
from typing import Callable, List, Optional, Type

import numpy as np
from mmengine.config import Config

from ...registry import TASKS
from ...utils.user_errors import ConfigError, OptionError
from .options import TaskOptions


class BaseTask(metaclass=ABCMeta):
    """The description of one task; subclasses fill in the task's parts
    (:meth:`matches` and :meth:`open_writer` at least).

    Class attributes:
        name: the registered name (CLI choice, ``model.task``).
        summary: one line for ``tools/infer.py --help``.
        inferencer: the :class:`~sapiens2_mm.apis.BaseInferencer` subclass.

    The key layout of official checkpoints is declared by the task's head
    (``official_layout``, read by :mod:`sapiens2_mm.utils.official_keys`).
    """
    name: str = ''
    summary: str = ''
    inferencer: Optional[Type] = None

    # -- configs and models -------------------------------------------------
    @abstractmethod
    def matches(self, cfg: Config) -> bool:
        """Whether ``cfg`` (a model config) builds a model of this task."""

    def dataset_meta(self, cfg: Config) -> dict:
        """The ``model.dataset_meta`` the inferencer and writers use."""
        return {}

    def prepare_model_config(self, cfg: Config) -> None:
        """Adjust ``cfg.model`` in place before an inference model is built
        (default: nothing to adjust)."""
        return None

    def default_inference_pipeline(self, cfg: Config) -> Optional[List[dict]]:
        """Test steps for a config without test_dataloader / test_pipeline
        (:func:`~sapiens2_mm.apis.init_model` records them as the model
        config's ``test_pipeline``), or None: the task has none."""
        return None

    # -- inference -----------------------------------------------------------
    #: The task's own options (name, type, default, help), declared once:
    #: ``tools/infer.py TASK`` flags, :func:`run_inference` keywords and the
    #: defaults all come from it (:mod:`.options`).
    options_class: Type[TaskOptions] = TaskOptions

    def add_cli_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the task's ``tools/infer.py`` options (:attr:`options_class`)."""
        self.options_class.add_arguments(parser)

    def options(self, **given) -> TaskOptions:
        """The task's options with their defaults, updated with ``given``
        (by name), checked.

        Raises:
            ValueError: a name that is not one of the task's options, or a
                value that is not allowed.
        """
        return self.options_class.from_keywords(self.name, **given)

    # The methods below take the task's options (:meth:`options`).
    def inferencer_kwargs(self, options: TaskOptions,
                          device: str = 'cpu') -> dict:
        """Extra inferencer arguments from the task's options (e.g. the
        person box source of pose).

        Raises:
            ValueError / FileNotFoundError: a source that cannot be read.
        """
        return {}

    def index_options(self, options: TaskOptions) -> dict:
        """Task options recorded in the run index header: a re-run into the
        same output folder with other values is refused (default: none;
        only non-default values, so earlier indexes stay valid)."""
        return {}

    def build_inferencer(self, model, load_model: Optional[Callable] = None,
                         **kwargs):
        """The task's inferencer around ``model``.

        Args:
            model: a model of this task (:func:`~sapiens2_mm.apis.
                init_model`).
            load_model: ``init_model``, for a task whose inferencer runs a
                second model given as a config and checkpoint (dense
                ``fg_seg``); the callers above the tasks pass it, so the
                tasks import no model loading.
            **kwargs: the inferencer's arguments.
        """
        if self.inferencer is None:
            raise ValueError(f'Task {self.name!r} registers no inferencer.')
        return self.inferencer(model, **kwargs)

    @abstractmethod
    def open_writer(self, layout, model, options: TaskOptions):
        """A :class:`~sapiens2_mm.apis.writers.TaskWriter` for one run."""

    def run_report(self, inferencer) -> List[str]:
        """Lines for the end of a run (e.g. how many boxes were dropped)."""
        return []

    def visualize(self, frame, result, meta: dict,
                  options: TaskOptions) -> Optional[np.ndarray]:
        """(H', W', 3) uint8 BGR drawing of ``result`` on ``frame``, or None."""
        return None

    # -- tools/test.py --show-dir --------------------------------------------
    def enable_show_dir(self, cfg: Config, show_dir: str) -> str:
        """Switch the config's visualization on, writing under ``show_dir``.

        Returns:
            The folder the images will actually be written to.
        """
        raise ConfigError(
            f'Task {self.name!r} has no visualization hook for --show-dir.')


def task_names() -> List[str]:
    """Names of every registered task, sorted."""
    TASKS.import_from_location()
    return sorted(TASKS.module_dict)


def get_task(name: str) -> BaseTask:
    """The registered description of task ``name``.

    Raises:
        ValueError: no such task (the registered names are listed).
    """
    TASKS.import_from_location()
    cls = TASKS.module_dict.get(name)
    if cls is None:
        raise OptionError(
            f'Unknown task {name!r}; registered tasks: {task_names()}. A new '
            'task registers a BaseTask subclass (docs/inference.md).')
    task = cls()
    task.name = name
    return task


def find_task(cfg: Config) -> BaseTask:
    """The task a config builds.

    A top-level ``task = '<name>'`` in the config decides; otherwise exactly
    one registered task must accept the config.

    Raises:
        ValueError: no ``model`` entry, no task or several tasks match.
    """
    model = cfg.get('model')
    if model is None:
        raise ConfigError('The config has no `model` entry; pass a task config '
                         'from configs/.')
    if cfg.get('task'):
        return get_task(cfg.task)
    found = [t for t in map(get_task, task_names()) if t.matches(cfg)]
    head = model.get('decode_head') or model.get('head') or {}
    if not found:
        raise ConfigError(
            f'No registered task runs model type {model.get("type")!r} with '
            f'head {head.get("type")!r}; registered tasks: {task_names()}. '
            "Set task='<name>' in the config or register a task.")
    if len(found) > 1:
        raise ConfigError(
            f'Several tasks accept this config ({[t.name for t in found]}); '
            "set task='<name>' in the config.")
    return found[0]


def visualization_hooks(cfg: Config) -> list:
    """The visualization hook configs of ``cfg`` (default and custom hooks),
    for :meth:`BaseTask.enable_show_dir`."""
    hooks = [h for h in (cfg.get('default_hooks') or {}).values()
             if isinstance(h, dict)]
    hooks += list(cfg.get('custom_hooks') or [])
    return [h for h in hooks if 'Visualization' in str(h.get('type'))]


def default_visualization_hooks(cfg: Config, hook: str,
                                visualizer: dict) -> list:
    """:func:`visualization_hooks`; a config without any gets ``hook`` as
    ``default_hooks.visualization`` (and ``visualizer`` if it has none)."""
    hooks = visualization_hooks(cfg)
    if hooks:
        return hooks
    cfg.setdefault('default_hooks', {})['visualization'] = dict(type=hook)
    if not cfg.get('visualizer'):
        cfg.visualizer = visualizer
    return visualization_hooks(cfg)
