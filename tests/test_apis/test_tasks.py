"""The task registry: one registered description per task, nothing else.

A toy task registered here runs through init_model, tools/infer.py and
tools/test.py --show-dir without any change to those files.
"""
import json
import os
import os.path as osp
from dataclasses import dataclass

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config
from mmengine.dataset import pseudo_collate
from mmengine.hooks import Hook

from sapiens2_mm.apis import (
    BaseInferencer,
    BaseTask,
    TaskWriter,
    find_task,
    get_task,
    init_model,
    task_names,
)
from sapiens2_mm.apis.tasks.options import TaskOptions, option
from sapiens2_mm.registry import HOOKS, TASKS
from tests.conftest import COCO_DIR, DATA_DIR, REPO_DIR, load_tool
from tests.test_apis.tiny_configs import tiny_config, tiny_model
from tests.tiny_variants import INFERENCE, NOT_INFERENCE, task_of

SEG_SAMPLE = osp.join(DATA_DIR, 'seg_sample')


def test_pose_and_seg_are_registered_and_resolve():
    assert {'pose', 'seg'} <= set(task_names())
    for name in task_names():
        spec = get_task(name)
        assert isinstance(spec, BaseTask) and spec.name == name
        assert TASKS.get(name) is type(spec)
    with pytest.raises(ValueError, match="Unknown task 'nope'.*registered"):
        get_task('nope')


@pytest.mark.parametrize('path', INFERENCE,
                         ids=lambda p: osp.relpath(p, REPO_DIR))
def test_every_shipped_config_is_recognised(path):
    """Its folder's task (the linear probe in configs/pretrain is seg)."""
    assert find_task(Config.fromfile(path)).name == task_of(path)


@pytest.mark.parametrize('rel', sorted(NOT_INFERENCE))
def test_pretrain_configs_have_no_task(rel):
    """The configs excluded from inference are the pretrainer's, and no task
    claims them (find_task names the model type)."""
    cfg = Config.fromfile(osp.join(REPO_DIR, rel))
    assert cfg.model.type == 'Sapiens2Pretrainer'
    with pytest.raises(ValueError,
                       match="No registered task.*'Sapiens2Pretrainer'"):
        find_task(cfg)


def test_unknown_model_is_named():
    cfg = Config(dict(model=dict(type='mmdet.RTMDet', head=dict(type='X'))))
    with pytest.raises(ValueError, match="model type 'mmdet.RTMDet'"):
        find_task(cfg)


def test_infer_cli_choices_come_from_the_registry(capsys):
    infer = load_tool('infer')
    with pytest.raises(SystemExit):
        infer.parse_args(['no_such_task', 'x.py', '--input', 'a',
                          '--output', 'b'])
    err = capsys.readouterr().err
    for name in task_names():
        assert repr(name) in err


# ---------------------------------------------------------------- toy task
class ToyInferencer(BaseInferencer):
    """Fraction of foreground pixels of the seg model's label map."""
    task = 'toy'

    def __init__(self, model, batch_size=4, flip_test=None, scale=1.0):
        super().__init__(model, batch_size=batch_size, flip_test=flip_test)
        self.scale = scale

    def prepare(self, frame):
        return None, [self.pack(frame)]

    def forward(self, items):
        return self.model.test_step(pseudo_collate(items))

    def finish(self, frame, context, outputs):
        return dict(name=frame.name, value=self.scale * float(
            (outputs[0].pred_sem_seg.data > 0).float().mean()))


class ToyWriter(TaskWriter):

    def write(self, frame, result):
        path = self.layout.frame_path(frame, '_toy.json')
        with open(path, 'w') as f:
            json.dump(result, f)
        return {'outputs': [self.layout.relative(path)],
                'value': result['value']}

    def finalize(self, records):
        path = osp.join(self.layout.out_dir, 'toy_summary.json')
        with open(path, 'w') as f:
            json.dump({r['name']: r['value'] for r in records}, f)
        return [f'toy summary: {path}']


class ToyShowHook(Hook):
    """Writes one grey image per test sample into ``out_dir``."""

    def __init__(self, out_dir=None):
        self.out_dir = out_dir

    def after_test_iter(self, runner, batch_idx, data_batch=None,
                        outputs=None):
        for sample in outputs:
            name = osp.splitext(osp.basename(sample.img_path))[0]
            cv2.imwrite(osp.join(self.out_dir, f'{name}_toy.png'),
                        np.full((4, 4, 3), 128, np.uint8))


@dataclass(frozen=True)
class ToyOptions(TaskOptions):
    toy_scale: float = option(1.0, 'scale of the toy value')


class ToyTask(BaseTask):
    summary = 'toy task of the registry test'
    inferencer = ToyInferencer
    options_class = ToyOptions

    def matches(self, cfg):
        return bool(cfg.get('toy_model'))

    def dataset_meta(self, cfg):
        return {'classes': ('background', 'person')}

    def inferencer_kwargs(self, options, device='cpu'):
        return {'scale': options.toy_scale}

    def open_writer(self, layout, model, options):
        return ToyWriter(layout, model.dataset_meta, options)

    def visualize(self, frame, result, meta, options):
        return cv2.rectangle(frame.image.copy(), (0, 0), (15, 15), (0, 0, 255),
                             -1)

    def enable_show_dir(self, cfg, show_dir):
        hooks = list(cfg.get('custom_hooks') or [])
        hooks.append(dict(type='ToyShowHook', out_dir=show_dir))
        cfg.custom_hooks = hooks
        return show_dir


@pytest.fixture
def toy_task():
    TASKS.register_module(name='toy', module=ToyTask)
    HOOKS.register_module(module=ToyShowHook)
    yield
    TASKS._module_dict.pop('toy')
    HOOKS._module_dict.pop('ToyShowHook')


@pytest.fixture
def toy_config(tmp_path):
    """The tiny seg model declared as the toy task, on the seg sample."""
    path = tmp_path / 'toy_config.py'
    path.write_text(
        f'_base_ = [{tiny_config("seg")!r}]\n'
        "task = 'toy'\n"
        'toy_model = True\n'
        f'test_dataloader = dict(dataset=dict(data_root={SEG_SAMPLE + "/"!r}))\n'
        'val_dataloader = test_dataloader\n')
    return str(path)


def test_toy_task_runs_through_init_model_infer_and_test(
        toy_task, toy_config, tmp_path, capsys):
    # init_model: the explicit task wins; without it two tasks would match
    model = init_model(toy_config)
    assert model.task == 'toy'
    assert model.dataset_meta == {'classes': ('background', 'person')}
    cfg = Config.fromfile(toy_config)
    cfg.pop('task')
    with pytest.raises(ValueError, match=r"Several tasks.*'seg'.*'toy'"):
        find_task(cfg)

    # tools/infer.py toy ...: the task's option, writer and visualizer
    infer = load_tool('infer')
    images = osp.join(SEG_SAMPLE, 'images')
    out = tmp_path / 'infer'
    assert infer.main(['toy', toy_config, '--input', images, '--output',
                       str(out), '--toy-scale', '2.0']) == 0
    names = sorted(os.listdir(images))
    for name in names:
        stem = osp.splitext(name)[0]
        with open(out / f'{stem}_toy.json') as f:
            value = json.load(f)['value']
        assert 0.0 <= value <= 2.0
        vis = cv2.imread(str(out / name))
        # the toy visualizer's red square (JPEG-compressed)
        assert np.abs(vis[4, 4].astype(int) - (0, 0, 255)).max() < 30
    with open(out / 'toy_summary.json') as f:
        assert sorted(json.load(f)) == names
    assert 'toy summary' in capsys.readouterr().out

    # tools/test.py --show-dir: the task's show hook, the folder printed
    test_tool = load_tool('test')
    ckpt = str(tmp_path / 'toy.pth')
    torch.save({'state_dict': model.state_dict()}, ckpt)
    show = tmp_path / 'show'
    test_tool.main([toy_config, ckpt, '--work-dir', str(tmp_path / 'work'),
                    '--show-dir', str(show)])
    assert sorted(os.listdir(show)) == sorted(
        osp.splitext(n)[0] + '_toy.png' for n in names)
    assert f'Visualizations written to {show}' in capsys.readouterr().out


def test_seg_show_dir_says_where_the_images_are(tmp_path, capsys):
    """tools/test.py --show-dir for seg prints the folder mmseg writes to
    (DIR/vis_data/vis_image) and the images are there."""
    model = tiny_model('seg')
    ckpt = str(tmp_path / 'seg.pth')
    torch.save({'state_dict': model.state_dict()}, ckpt)
    show = tmp_path / 'show'
    test_tool = load_tool('test')
    test_tool.main([tiny_config('seg'), ckpt, '--work-dir',
                    str(tmp_path / 'work'), '--show-dir', str(show),
                    '--cfg-options',
                    f'test_dataloader.dataset.data_root={SEG_SAMPLE}/',
                    'experiment_name=seg_show_dir_test'])
    where = show / 'vis_data' / 'vis_image'
    assert f'Visualizations written to {where}' in capsys.readouterr().out
    # mmengine's LocalVisBackend names them test_<image>_<step>.png
    drawn = sorted(n[len('test_'):].rsplit('_', 1)[0]
                   for n in os.listdir(where))
    assert drawn == sorted(os.listdir(osp.join(SEG_SAMPLE, 'images')))


def test_pose_show_dir_is_the_folder_asked_for(tmp_path):
    cfg = Config.fromfile(tiny_config('pose'))
    assert get_task('pose').enable_show_dir(cfg, str(tmp_path)) == str(
        tmp_path)
    hook = cfg.default_hooks.visualization
    assert hook.enable and hook.out_dir == str(tmp_path)


def test_task_options_are_keywords_with_their_cli_defaults():
    options = get_task('pose').options(kpt_thr=0.5)
    assert options.kpt_thr == 0.5 and options.radius == 3
    assert options.bboxes is None
    assert get_task('pointmap').options().ply_step == 'auto'
    with pytest.raises(ValueError, match=r"no option\(s\) \['kpt_thr'\].*"
                       r"no_legend"):
        get_task('seg').options(kpt_thr=0.5)


def test_run_inference_from_python_with_keywords(tmp_path):
    """The library call behind tools/infer.py takes keyword arguments."""
    from sapiens2_mm.apis import run_inference
    photo = osp.join(COCO_DIR, '000000040083.jpg')
    lines = []
    summary = run_inference('seg', tiny_config('seg'), [photo],
                            str(tmp_path / 'out'), no_legend=True,
                            echo=lines.append)
    assert summary.processed == 1 and not summary.failed
    assert (tmp_path / 'out' / '000000040083_seg.npy').is_file()
    assert any('1 frame(s) processed' in line for line in lines)
    with pytest.raises(ValueError, match='no option'):
        run_inference('seg', tiny_config('seg'), [photo],
                      str(tmp_path / 'other'), kpt_thr=0.5)
