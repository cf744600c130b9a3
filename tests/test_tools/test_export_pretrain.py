"""Export of pretrained teacher/student backbones in the official layout."""
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from sapiens2_mm.models.backbones import Sapiens2
from sapiens2_mm.registry import MODELS
from sapiens2_mm.utils.pretrain_export import export_pretrain

TINY18 = dict(embed_dims=32, num_layers=18, num_heads=4,
              feedforward_channels=128, num_tokenizer_layers=2)


def _official_keys(parity_file):
    with open(parity_file('keys_tiny18.txt')) as f:
        rows = [line.rstrip('\n').split('\t') for line in f if line.strip()]
    return [(key, eval(shape), dtype) for key, shape, dtype in rows]


@pytest.fixture(scope='module')
def pretrain_ckpt(tmp_path_factory):
    cfg = dict(
        type='Sapiens2Pretrainer',
        backbone=dict(type='Sapiens2', arch=TINY18, img_size=(64, 48)),
        neck=dict(type='RectMAEDecoder', in_channels=32, decoder_embed_dims=16,
                  depth=1, num_heads=2),
        head=dict(type='RectMAEHead'),
        dino_head=dict(type='DINOHead', in_channels=32, hidden_channels=16,
                       bottleneck_channels=8, num_prototypes=16),
        dino_loss=dict(type='DINOClsLoss', out_dim=16))
    model = MODELS.build(cfg)
    model.init_weights()
    with torch.no_grad():  # make teacher and student differ
        for p in model.teacher.module.parameters():
            p.add_(0.5)
    path = tmp_path_factory.mktemp('ckpt') / 'iter_4.pth'
    torch.save(dict(meta=dict(iter=4), state_dict=model.state_dict()), path)
    return str(path), model


@pytest.mark.parametrize('which', ['teacher', 'student'])
def test_export_matches_official_layout_and_loads_strictly(
        tmp_path, parity_file, pretrain_ckpt, which):
    src, model = pretrain_ckpt
    dst = str(tmp_path / 'sapiens2_tiny18_pretrain.safetensors')
    pth = str(tmp_path / 'teacher.pth')
    export_pretrain(src, dst, which=which, pth=pth)
    exported = load_file(dst)
    official = _official_keys(parity_file)
    assert sorted(k for k, _, _ in official) == sorted(exported)
    assert len(exported) == len(official) == 6 + 17 * 18
    for key, shape, dtype in official:
        assert tuple(exported[key].shape) == shape, key
        assert str(exported[key].dtype) == dtype, key
    assert exported['rope_embed.periods'].dtype == torch.bfloat16
    # Same layout as the official tiny18 pretrain file (safetensors stores
    # keys in its own order; both files must agree on it).
    reference = load_file(parity_file('tiny18_1k.safetensors'))
    assert list(reference) == list(exported)
    source = model.teacher.module.backbone if which == 'teacher' else \
        model.backbone
    for path in (dst, pth):
        backbone = Sapiens2(arch=TINY18, img_size=(64, 48),
                            init_cfg=dict(type='Pretrained', checkpoint=path))
        backbone.init_weights()  # checked (strict) load
        for (name, got), want in zip(backbone.state_dict().items(),
                                     source.state_dict().values()):
            assert torch.equal(got, want.to(got.dtype)), name
        assert Sapiens2(arch=TINY18).load_state_dict(
            backbone.state_dict(), strict=True) is not None
    raw = torch.load(pth, weights_only=True)
    assert set(raw['teacher']) == {f'backbone.{k}' for k in exported}


def test_export_errors(tmp_path, pretrain_ckpt):
    src, model = pretrain_ckpt
    no_teacher = tmp_path / 'student_only.pth'
    torch.save(dict(state_dict={k: v for k, v in model.state_dict().items()
                                if not k.startswith('teacher.')}), no_teacher)
    with pytest.raises(ValueError, match='has no teacher backbone'):
        export_pretrain(str(no_teacher), str(tmp_path / 'x.safetensors'))
    dst = tmp_path / 'exists.safetensors'
    dst.write_bytes(b'keep me')
    with pytest.raises(FileExistsError, match='refusing to overwrite'):
        export_pretrain(src, str(dst))
    assert dst.read_bytes() == b'keep me'
    with pytest.raises(ValueError, match='.safetensors'):
        export_pretrain(src, str(tmp_path / 'x.pth'))
    with pytest.raises(FileNotFoundError):
        export_pretrain(str(tmp_path / 'missing.pth'),
                        str(tmp_path / 'y.safetensors'))


def test_cli(tmp_path, pretrain_ckpt, repo_path):
    src, _ = pretrain_ckpt
    dst = str(tmp_path / 'cli.safetensors')
    out = subprocess.run(
        [sys.executable, repo_path('tools', 'model_converters',
                                   'export_pretrain.py'), src, dst],
        capture_output=True, text=True, cwd=repo_path())
    assert out.returncode == 0, out.stderr
    assert 'Exported the teacher backbone (312 tensors)' in out.stdout


@pytest.mark.parametrize('case', ['pth is src', 'dst links to src',
                                  'pth is dst'])
def test_outputs_onto_the_input_are_refused_even_with_overwrite(
        tmp_path, pretrain_ckpt, case):
    """``export_pretrain.py pre.pth o.safetensors --pth pre.pth
    --overwrite`` silently replaced the resumable pretraining checkpoint by
    the stripped teacher."""
    import hashlib
    import shutil

    from sapiens2_mm.utils.output_paths import OutputPathError
    src = tmp_path / 'pre.pth'
    shutil.copy(pretrain_ckpt[0], src)
    before = hashlib.sha256(src.read_bytes()).hexdigest()
    dst, pth = tmp_path / 'o.safetensors', None
    if case == 'pth is src':
        pth = src
    elif case == 'dst links to src':
        dst.symlink_to(src)
    else:
        pth = tmp_path / 'o.safetensors'
    with pytest.raises(OutputPathError, match='is the input file|one file'):
        export_pretrain(str(src), str(dst), pth=pth and str(pth),
                        overwrite=True)
    assert hashlib.sha256(src.read_bytes()).hexdigest() == before
    expected = {'pre.pth'} | ({'o.safetensors'} if case == 'dst links to src'
                              else set())
    assert {p.name for p in tmp_path.iterdir()} == expected


def test_cli_refusal_is_one_line_and_safetensors_mode_matches_pth(
        tmp_path, pretrain_ckpt, repo_path):
    import os
    import stat
    src, _ = pretrain_ckpt
    tool = repo_path('tools', 'model_converters', 'export_pretrain.py')
    out = subprocess.run(
        [sys.executable, tool, src, str(tmp_path / 'o.safetensors'), '--pth',
         src, '--overwrite'], capture_output=True, text=True,
        cwd=repo_path())
    assert out.returncode == 1 and 'Traceback' not in out.stderr
    assert out.stderr.strip().startswith('error: The output')
    assert len(out.stderr.strip().splitlines()) == 1
    # exported files: the mode torch.save gives a .pth (0666 - umask)
    old = os.umask(0o027)
    try:
        export_pretrain(src, str(tmp_path / 'a.safetensors'),
                        pth=str(tmp_path / 'a.pth'))
    finally:
        os.umask(old)
    for name in ('a.safetensors', 'a.pth'):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o640, name
