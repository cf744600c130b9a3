"""tools/test.py --show-dir never replaces a file and never writes into the
test data (issue 18, item 1: ``--show-dir data/rgb`` replaced every photo of
a dense dataset with its drawing, exit 0)."""
import hashlib
import os
import os.path as osp
import shutil

import cv2
import numpy as np
import pytest
import torch
from mmengine.config import Config

from sapiens2_mm.apis import run_config, test_config
from tests.conftest import DATA_DIR, load_tool
from tests.test_apis.tiny_configs import tiny_config

test_tool = load_tool('test')


def _digests(folder):
    return {name: hashlib.sha256(open(osp.join(folder, name), 'rb').read())
            .hexdigest() for name in sorted(os.listdir(folder))}


def _checkpoint(task, path):
    from sapiens2_mm.registry import MODELS
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(tiny_config(task)).model)
    model.init_weights()
    torch.save({'state_dict': model.state_dict()}, str(path))
    return str(path)


@pytest.fixture
def dense_copy(tmp_path):
    data = tmp_path / 'data'
    shutil.copytree(osp.join(DATA_DIR, 'dense_sample'), data)
    return data


@pytest.mark.usefixtures('one_torch_thread')  # restored after (conftest)
def test_show_dir_in_the_image_folder_is_refused_and_photos_kept(
        tmp_path, dense_copy, capsys):
    """The reported case, end to end: the photos are byte-identical after."""
    rgb = dense_copy / 'rgb'
    before = _digests(rgb)
    ckpt = _checkpoint('normal', tmp_path / 'init.pth')
    with pytest.raises(SystemExit) as exc:
        test_tool.main([
            tiny_config('normal'), ckpt, '--work-dir', str(tmp_path / 'w'),
            '--show-dir', str(rgb), '--cfg-options',
            f'test_dataloader.dataset.data_root={dense_copy}',
            'experiment_name=show_dir_in_data'])
    message = str(exc.value.code)
    assert message.startswith('error: ') and 'input folder' in message
    assert str(rgb) in message
    assert _digests(rgb) == before


@pytest.mark.parametrize('task', ['pose', 'seg', 'normal', 'pointmap',
                                  'albedo'])
def test_every_task_refuses_a_show_dir_inside_its_data(tmp_path, task):
    cfg = Config.fromfile(tiny_config(task))
    root = cfg.test_dataloader.dataset.data_root
    inside = osp.join(root, 'drawings')
    args = test_tool.parse_args([
        tiny_config(task), tiny_config(task), '--work-dir',
        str(tmp_path / 'w'), '--show-dir', inside])
    with pytest.raises(run_config.RunConfigError, match='input folder'):
        test_tool.build_cfg(args)
    assert not osp.exists(inside)  # not even created


@pytest.mark.parametrize('task', ['pose', 'seg', 'normal'])
def test_a_show_dir_holding_files_is_refused(tmp_path, task):
    """Pose numbers its drawings by counting files (``a_1.jpg`` of the user
    is replaced), seg writes ``<name>_<step>.png`` over an earlier run's: a
    folder holding files is refused for every task."""
    show = tmp_path / 'show'
    args = test_tool.parse_args([
        tiny_config(task), tiny_config(task), '--work-dir',
        str(tmp_path / 'w'), '--show-dir', str(show)])
    images_dir = test_tool.build_cfg(args) and args.show_images_dir
    os.makedirs(images_dir, exist_ok=True)
    kept = osp.join(images_dir, 'mine.png')
    cv2.imwrite(kept, np.zeros((4, 4, 3), np.uint8))
    args = test_tool.parse_args([
        tiny_config(task), tiny_config(task), '--work-dir',
        str(tmp_path / 'w'), '--show-dir', str(show)])
    with pytest.raises(run_config.RunConfigError, match='already holds 1 file'):
        test_tool.build_cfg(args)
    assert os.listdir(images_dir) == ['mine.png']


def test_dataset_input_folders_reads_wrappers():
    dataset = dict(type='ConcatDataset', datasets=[
        dict(data_root='/d/a', data_prefix=dict(img_path='rgb'),
             ann_file='ann/x.json'),
        dict(type='RepeatDataset', dataset=dict(
            data_root='', data_prefix=dict(img='/abs/img')))])
    assert test_config.dataset_input_folders(dataset) == [
        '/d/a', '/d/a/rgb', '/d/a/ann', '/abs/img']


def test_dense_hook_never_replaces_a_file(tmp_path):
    """Two images of one name (two folders) and a file already there: three
    drawings, nothing replaced."""
    from sapiens2_mm.engine.hooks.dense_visualization_hook import DenseVisualizationHook
    kept = tmp_path / 'a.png'
    kept.write_bytes(b'not a drawing')
    image = np.full((4, 6, 3), 7, np.uint8)
    first = DenseVisualizationHook._write(str(kept), image)
    second = DenseVisualizationHook._write(str(kept), image + 1)
    assert kept.read_bytes() == b'not a drawing'
    assert (first, second) == (str(tmp_path / 'a_1.png'),
                               str(tmp_path / 'a_2.png'))
    assert cv2.imread(second)[0, 0, 0] == 8
    assert sorted(os.listdir(tmp_path)) == ['a.png', 'a_1.png', 'a_2.png']
