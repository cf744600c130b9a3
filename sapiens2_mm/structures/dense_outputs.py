"""What each dense task predicts, declared once.

A dense task declares its output maps here, at the bottom of the package, so
that every floor above reads one declaration instead of naming the task:

* the data sample and the dense transforms carry, resize and flip the
  target ``gt_<name>`` of every declared map (:func:`dense_target_fields`,
  :attr:`DenseField.resize`, :attr:`DenseField.flip`);
* the heads merge a flip test with the map's flip rule and predict
  :attr:`DenseField.channels` channels;
* the drawer, the ``--show-dir`` hook and the writers color a map with its
  :attr:`DenseField.coloring`;
* the writers save ``<stem>_<name>.npy`` (and ``<stem>_<name>.png`` when the
  map has a coloring), and the inference results hold one array per map.

The key layout of official checkpoints is not part of this declaration.
docs/dense.md ("Adding a dense task") lists what else a new task brings: a
head, a task description in ``apis/tasks``, a dataset and a metric.
"""
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple, Union

#: How a horizontal mirror changes a map: its pixels move ('mirror'), and
#: for camera-frame vectors (x right) channel 0 also changes sign
#: ('negate_x').
FLIP_RULES = ('mirror', 'negate_x')
#: How a target map is resized by the geometric transforms.
RESIZE_RULES = ('nearest', 'bilinear')
#: The validity mask every dense sample carries beside its targets.
MASK_FIELD = 'gt_mask'


@dataclass(frozen=True)
class DenseField:
    """One predicted map of a dense task.

    Attributes:
        name: the map's name: prediction ``pred_<name>``, target
            ``gt_<name>``, inference result attribute ``<name>``, files
            ``<stem>_<name>.npy`` / ``.png``.
        channels: C of the (C, H, W) map; a one-channel map is (H, W) in
            the inference results and files.
        flip: one of :data:`FLIP_RULES`.
        resize: one of :data:`RESIZE_RULES` (targets only; predictions are
            resized bilinearly by the heads).
        coloring: how the map is drawn: the name of a coloring of
            :mod:`sapiens2_mm.visualization.dense_drawer` (``'normal'``,
            ``'inverse_depth'``, ``'rgb'``), a coloring object with the same
            methods, or None (saved as an array only, never drawn).
        meaning: what the saved array holds, for the run summary, e.g.
            ``'H, W, 3 float32 unit vectors, camera frame'``.
    """
    name: str
    channels: int = 3
    flip: str = 'mirror'
    resize: str = 'nearest'
    coloring: Union[None, str, object] = None
    meaning: str = ''

    def __post_init__(self) -> None:
        if self.gt == MASK_FIELD:
            raise ValueError(f'{MASK_FIELD!r} is the validity mask of every '
                             'dense sample; name the map otherwise.')
        if self.flip not in FLIP_RULES:
            raise ValueError(f'DenseField {self.name!r}: flip must be one of '
                             f'{FLIP_RULES}, got {self.flip!r}.')
        if self.resize not in RESIZE_RULES:
            raise ValueError(f'DenseField {self.name!r}: resize must be one '
                             f'of {RESIZE_RULES}, got {self.resize!r}.')

    @property
    def pred(self) -> str:
        """The prediction field of the data sample."""
        return f'pred_{self.name}'

    @property
    def gt(self) -> str:
        """The target field of the data sample."""
        return f'gt_{self.name}'

    @property
    def suffix(self) -> str:
        """The file suffix before the extension: ``<stem>_<name>``."""
        return f'_{self.name}'

    def as_map(self, value):
        """A channels-last array of this map as the results and files hold
        it: (H, W) for a one-channel map, (H, W, C) otherwise."""
        if self.channels == 1 and value.ndim == 3:
            return value[..., 0]
        return value


@dataclass(frozen=True)
class DenseOutputs:
    """The maps of one dense task, in the order they are saved.

    Attributes:
        task: the task name (as registered in ``apis/tasks``).
        fields: its maps; the first one with a coloring is the one drawn.
        label: what the run summary calls the outputs (e.g. ``'normals'``).
    """
    task: str
    fields: Tuple[DenseField, ...]
    label: str = ''


_TASKS: Dict[str, DenseOutputs] = {}


def declare_dense_task(task: str, fields: Sequence[DenseField],
                       label: str = '') -> DenseOutputs:
    """Declare the maps of dense task ``task``; returns the declaration.

    Declaring the same task again with the same maps is a no-op (a module
    imported twice).

    Raises:
        ValueError: the task was declared with other maps, or a map name is
            declared differently by another task.
    """
    outputs = DenseOutputs(task, tuple(fields), label or task)
    known = _TASKS.get(task)
    if known is not None and known != outputs:
        raise ValueError(f'Dense task {task!r} is already declared with '
                         f'{known}; declare it once.')
    for field in outputs.fields:
        other = dense_field(field.name)
        if other is not None and other != field:
            raise ValueError(f'Dense map {field.name!r} is already declared '
                             f'differently: {other}.')
    _TASKS[task] = outputs
    return outputs


def forget_dense_task(task: str) -> None:
    """Remove a declaration (tests that declare a task for a while)."""
    _TASKS.pop(task, None)


def dense_outputs(task: str) -> DenseOutputs:
    """The declaration of dense task ``task``.

    Raises:
        KeyError: an undeclared task (the declared ones are named).
    """
    if task not in _TASKS:
        raise KeyError(f'No dense task {task!r} is declared; declared: '
                       f'{sorted(_TASKS)} (sapiens2_mm.structures.'
                       'declare_dense_task).')
    return _TASKS[task]


def dense_fields() -> Tuple[DenseField, ...]:
    """Every declared map, in declaration order, each name once."""
    seen: Dict[str, DenseField] = {}
    for outputs in _TASKS.values():
        for field in outputs.fields:
            seen.setdefault(field.name, field)
    return tuple(seen.values())


def dense_field(name: str) -> Optional[DenseField]:
    """The declared map ``name`` (also ``pred_<name>`` / ``gt_<name>``), or
    None."""
    for prefix in ('pred_', 'gt_'):
        if name.startswith(prefix):
            name = name[len(prefix):]
            break
    return next((f for f in dense_fields() if f.name == name), None)


def dense_target_fields() -> Tuple[str, ...]:
    """The target fields the dense transforms act on (mmseg's
    ``seg_fields`` idea): ``gt_<name>`` of every declared map, then
    ``gt_mask``."""
    return tuple(f.gt for f in dense_fields()) + (MASK_FIELD, )


# -- the shipped tasks ------------------------------------------------------
declare_dense_task('normal', [
    DenseField('normal', channels=3, flip='negate_x', coloring='normal',
               meaning='H, W, 3 float32 unit vectors, camera frame'),
], label='normals')
declare_dense_task('pointmap', [
    DenseField('pointmap', channels=3, flip='negate_x',
               meaning='H, W, 3 float32 metres, camera frame'),
    DenseField('depth', channels=1, coloring='inverse_depth',
               meaning='H, W float32 metres'),
], label='pointmaps')
declare_dense_task('albedo', [
    DenseField('albedo', channels=3, resize='bilinear', coloring='rgb',
               meaning='H, W, 3 float32 RGB in [0, 1]'),
], label='albedo')
