"""tools/infer.py with 4K-shaped models: photos of any size (letterboxed or
resized to the 4K input, half-size predictions mapped back to each photo),
the 1K guarantees (bad inputs skipped and counted, a finished run resumed
without rewriting its outputs) and a large photo's label map at its size.

The tiny 4K-shaped configs (tokenizer on, stride 64, heads at half the
input) stand in for the 1B-4K ones, which tests/test_all_configs_inference.py
runs through the same CLI as tiny variants at 4096x3072.
"""
import os.path as osp

import cv2
import infer
import numpy as np
import pytest

from tests.conftest import PHOTO, REPO_DIR

NORMAL_4K = osp.join(REPO_DIR, 'configs', 'normal',
                     'sapiens2-tiny-4k_1xb2-30_densesample-512x384.py')
SEG_4K = osp.join(REPO_DIR, 'configs', 'seg',
                  'sapiens2-tiny-4k_1xb2-30_seg29sample-512x384.py')
# (H, W): odd sizes whose plain letterbox into 512x384 has odd padding
SIZES = {'wide.jpg': (101, 203), 'tall.jpg': (333, 101)}


def _snapshot(folder):
    return {p: p.read_bytes() for p in sorted(folder.rglob('*'))
            if p.is_file()}


@pytest.fixture
def photos(tmp_path):
    folder = tmp_path / 'in'
    folder.mkdir()
    image = cv2.imread(PHOTO)
    for name, (h, w) in SIZES.items():
        cv2.imwrite(str(folder / name), cv2.resize(image, (w, h)))
    (folder / 'broken.jpg').write_bytes(b'\xff\xd8 truncated')
    return folder


def test_4k_normal_run_of_odd_sizes_skips_bad_input_and_resumes(
        photos, tmp_path, capsys):
    out = tmp_path / 'out'
    args = ['normal', NORMAL_4K, '--input', str(photos), '--output',
            str(out), '--batch-size', '2']
    assert infer.main(args) == 0
    log = capsys.readouterr().out
    assert 'skipped 1 unreadable input(s)' in log and 'broken.jpg' in log
    for name, size in SIZES.items():
        normal = np.load(out / f'{osp.splitext(name)[0]}_normal.npy')
        assert normal.shape == (*size, 3) and np.isfinite(normal).all()
        # unit length at 2K, then resized (official order): at most 1
        assert np.linalg.norm(normal, axis=-1).max() <= 1.0 + 1e-5
    kept = _snapshot(out)
    assert infer.main(args) == 0
    assert '2 input(s) finished by an earlier run were skipped' in \
        capsys.readouterr().out
    assert _snapshot(out) == kept  # nothing rewritten


def test_4k_seg_label_map_of_a_large_photo_at_its_size(tmp_path):
    """A 3000x4000 photo: the 256x192 logits go once, in bands, to the
    photo's size (no full-size float logits)."""
    folder = tmp_path / 'in'
    folder.mkdir()
    cv2.imwrite(str(folder / 'large.jpg'),
                cv2.resize(cv2.imread(PHOTO), (4000, 3000)))
    out = tmp_path / 'out'
    assert infer.main(['seg', SEG_4K, '--input', str(folder), '--output',
                       str(out), '--no-vis']) == 0
    label = np.load(out / 'large_seg.npy')
    assert label.shape == (3000, 4000) and label.dtype == np.uint8
    assert label.max() < 29


def test_a_4k_model_config_without_test_pipeline_letterboxes_evenly(tmp_path):
    """A bare model config (no test_dataloader) of a tokenizer backbone:
    the default inference pipeline letterboxes with align=2, so the
    half-size prediction of an odd-sized photo is un-letterboxed."""
    from mmengine.config import Config

    from sapiens2_mm.apis import build_inferencer, init_model
    cfg = Config.fromfile(NORMAL_4K)
    bare = Config(dict(model=cfg.model.to_dict(), default_scope='sapiens2_mm'))
    model = init_model(bare)
    inferencer = build_inferencer(model)
    assert inferencer.pipeline.transforms[0].align == 2
    image = cv2.resize(cv2.imread(PHOTO), (203, 101))  # odd padding if plain
    result, = inferencer([image])
    assert result.normal.shape == (101, 203, 3)
