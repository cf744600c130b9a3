"""CheckpointHook whose saves never leave the work dir without a checkpoint.

mmengine's ``CheckpointHook`` deletes the oldest kept checkpoint *before*
writing the new one and writes straight to the final name. With
``max_keep_ckpts=1`` a save that fails half-way (Ctrl-C, disk full, a killed
job) leaves no checkpoint at all, or a truncated one that ``last_checkpoint``
points to. This subclass writes ``.<name>.part``, flushes it to the disk,
renames it to ``<name>`` (atomic on one file system), then rewrites
``last_checkpoint`` atomically, and only then deletes checkpoints beyond
``max_keep_ckpts``. A failed save removes its partial file and leaves the
previous checkpoints and ``last_checkpoint`` as they were. The same deferral
applies to the old ``best_*.pth`` files of ``save_best``.

Other storage backends (``backend_args`` for object stores) have no rename:
they keep mmengine's behavior.
"""
import copy
import difflib
import os
import os.path as osp
import shutil

from mmengine.dist import barrier, is_main_process
from mmengine.fileio.backends import LocalBackend
from mmengine.hooks import CheckpointHook

from ...registry import HOOKS
from ...utils.atomic_file import fsync_path, write_text_atomic
from ...utils.work_dir import LAST_CHECKPOINT

PART_SUFFIX = '.part'


def _hook_arguments() -> list:
    import inspect
    params = inspect.signature(CheckpointHook.__init__).parameters.values()
    return [p.name for p in params
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)][1:]


def _remove(path: str) -> None:
    if osp.isdir(path):
        shutil.rmtree(path)  # DeepSpeed checkpoints are directories
    elif osp.lexists(path):
        os.remove(path)


class _DeferredRemoval:
    """File-backend proxy that records ``remove``/``rmtree`` instead of doing
    them, so old checkpoints are deleted only once the new one is complete."""

    def __init__(self, backend):
        self._backend = backend
        self.pending = []

    def remove(self, path):
        self.pending.append(str(path))

    rmtree = remove

    def __getattr__(self, name):
        return getattr(self._backend, name)


@HOOKS.register_module()
class AtomicCheckpointHook(CheckpointHook):
    """mmengine ``CheckpointHook`` with atomic saves and deferred deletion.

    Takes exactly the arguments of ``mmengine.hooks.CheckpointHook``. mmengine
    forwards unknown keyword arguments to ``Runner.save_checkpoint``, which
    accepts none beyond those the hook passes itself, so a misspelt argument
    (``intervall=1``) would crash the first save, possibly hours in; here it is
    refused when the hook is built, before training starts.
    """

    def __init__(self, *args, **kwargs):
        known = _hook_arguments()
        unknown = sorted(set(kwargs) - set(known))
        if unknown:
            hints = []
            for name in unknown:
                close = difflib.get_close_matches(name, known, 1)
                hints.append(f'{name!r}' + (f' (did you mean {close[0]!r}?)'
                                            if close else ''))
            raise TypeError(
                f'{type(self).__name__} got unknown argument(s) '
                f'{", ".join(hints)}. It takes: {", ".join(known)}.')
        super().__init__(*args, **kwargs)

    def _atomic(self) -> bool:
        return isinstance(self.file_backend, LocalBackend)

    def _save_checkpoint_with_step(self, runner, step, meta):
        """Save ``step``; drop checkpoints beyond ``max_keep_ckpts`` after."""
        if not self._atomic():
            return super()._save_checkpoint_with_step(runner, step, meta)
        expired = []
        keep_before = list(getattr(self, 'keep_ckpt_ids', []))
        if self.max_keep_ckpts > 0 and not (
                self.keep_ckpt_ids and self.keep_ckpt_ids[-1] == step):
            if len(self.keep_ckpt_ids) == self.max_keep_ckpts:
                expired.append(self.keep_ckpt_ids.popleft())
            self.keep_ckpt_ids.append(step)
            # the checkpoint records the list as it is once the save is done
            runner.message_hub.update_info('keep_ckpt_ids',
                                           list(self.keep_ckpt_ids))
        filename = self.filename_tmpl.format(step)
        final = osp.join(self.out_dir, filename)
        previous_last = getattr(self, 'last_ckpt', None)
        self.last_ckpt = final
        runner.message_hub.update_info('last_ckpt', final)
        try:
            save_atomic(runner, self.out_dir, filename,
                        file_client_args=self.file_client_args,
                        save_optimizer=self.save_optimizer,
                        save_param_scheduler=self.save_param_scheduler,
                        meta=meta, by_epoch=self.by_epoch,
                        backend_args=self.backend_args)
        except BaseException:
            if self.max_keep_ckpts > 0:
                self.keep_ckpt_ids.clear()
                self.keep_ckpt_ids.extend(keep_before)
                runner.message_hub.update_info('keep_ckpt_ids', keep_before)
            if previous_last is not None:
                self.last_ckpt = previous_last
                runner.message_hub.update_info('last_ckpt', previous_last)
            raise
        if not is_main_process():
            return
        write_text_atomic(osp.join(runner.work_dir, LAST_CHECKPOINT), final)
        for old in expired:
            _remove(osp.join(self.out_dir, self.filename_tmpl.format(old)))

    def _best_state(self, runner) -> dict:
        """What mmengine changes before a best save (to undo if it fails,
        so the next evaluation still compares with the saved best)."""
        info = runner.message_hub.runtime_info
        return dict(path=getattr(self, 'best_ckpt_path', None),
                    paths=copy.copy(getattr(self, 'best_ckpt_path_dict', None)),
                    info={k: copy.deepcopy(info[k]) for k in _best_keys(runner)})

    def _restore_best_state(self, runner, state: dict) -> None:
        if hasattr(self, 'best_ckpt_path'):
            self.best_ckpt_path = state['path']
        if state['paths'] is not None:
            self.best_ckpt_path_dict = state['paths']
        for key in _best_keys(runner):
            if key not in state['info']:
                runner.message_hub.runtime_info.pop(key)
        for key, value in state['info'].items():
            runner.message_hub.update_info(key, value)

    def _save_best_checkpoint(self, runner, metrics) -> None:
        """mmengine's best-checkpoint logic, saved atomically, with the old
        ``best_*.pth`` removed only after the new one is complete."""
        if not self.save_best:
            # Nothing to save; also true of runner.val() before training,
            # where before_train has not set file_backend yet.
            return
        if not self._atomic():
            return super()._save_best_checkpoint(runner, metrics)
        real_backend = self.file_backend
        self.file_backend = _DeferredRemoval(real_backend)
        state = self._best_state(runner)
        try:
            super()._save_best_checkpoint(_AtomicSaveRunner(runner), metrics)
        except BaseException:
            self._restore_best_state(runner, state)
            raise
        finally:
            pending = self.file_backend.pending
            self.file_backend = real_backend
        current = {self.best_ckpt_path} if hasattr(
            self, 'best_ckpt_path') else set(
                getattr(self, 'best_ckpt_path_dict', {}).values())
        current = {osp.realpath(p) for p in current if p}
        if is_main_process():
            for path in pending:
                if osp.realpath(path) not in current:
                    _remove(path)


def _best_keys(runner) -> list:
    return [k for k in runner.message_hub.runtime_info
            if k.startswith(('best_score', 'best_ckpt'))]


def save_atomic(runner, out_dir: str, filename: str, **kwargs) -> str:
    """``runner.save_checkpoint`` into ``.<filename>.part``, then rename.

    Every rank calls it (sharded strategies write from all ranks); the rename
    happens on the main process after all have written.

    Returns:
        The final path.
    """
    runner = getattr(runner, 'unwrapped_runner', runner)
    final = osp.join(out_dir, filename)
    part_name = f'.{filename}{PART_SUFFIX}'
    part = osp.join(out_dir, part_name)
    try:
        runner.save_checkpoint(out_dir, part_name, **kwargs)
        barrier()
        if is_main_process():
            if osp.isfile(part):
                fsync_path(part)
            _replace(part, final)
            fsync_path(out_dir)
    except BaseException:
        if is_main_process():
            _remove(part)
        raise
    return final


def _replace(part: str, final: str) -> None:
    """``os.replace(part, final)``, also when ``final`` is a folder (sharded
    and DeepSpeed checkpoints), which os.replace cannot replace: the old one
    is renamed aside (hidden) and removed only once the new one is in place,
    so there is no moment without either."""
    if not osp.isdir(final):
        os.replace(part, final)
        return
    head, name = osp.split(final)
    aside = osp.join(head, f'.{name}.replaced{PART_SUFFIX}')
    _remove(aside)
    os.replace(final, aside)
    try:
        os.replace(part, final)
    except BaseException:
        os.replace(aside, final)  # the old one back under its name
        raise
    _remove(aside)


class _AtomicSaveRunner:
    """Runner proxy whose ``save_checkpoint`` goes through :func:`save_atomic`
    (given to mmengine's hook code, which calls ``runner.save_checkpoint``)."""

    def __init__(self, runner):
        self.unwrapped_runner = runner

    def save_checkpoint(self, out_dir, filename, file_client_args=None,
                        **kwargs):
        return save_atomic(self.unwrapped_runner, out_dir, filename,
                           file_client_args=file_client_args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.unwrapped_runner, name)
