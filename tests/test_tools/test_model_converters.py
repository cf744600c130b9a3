"""Official <-> sapiens2_mm checkpoint conversion round trips and publishing."""
import os.path as osp
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from sapiens2_mm.utils import detect_task
from sapiens2_mm.utils.checkpoint_convert import (
    mmengine_to_official,
    official_to_mmengine,
    publish_checkpoint,
)
from tests.conftest import load_tool


@pytest.mark.parametrize('name,task', [
    ('tiny18_1k', 'pretrain'), ('tiny18_4k', 'pretrain'), ('tiny18_pose', 'pose'),
    ('tiny18_seg', 'seg'), ('tiny18_normal', 'normal'),
    ('tiny18_pointmap', 'pointmap'), ('tiny18_albedo', 'albedo')
])
def test_round_trip_is_bit_exact(tmp_path, parity_file, name, task):
    src = parity_file(f'{name}.safetensors')
    original = load_file(src)
    assert detect_task(original) == task
    pth = str(tmp_path / 'mm.pth')
    assert official_to_mmengine(src, pth) == task
    converted = torch.load(pth, weights_only=True)['state_dict']
    if task == 'pose':
        assert all(not k.startswith('decode_head.') for k in converted)
        assert 'head.conv_pose.weight' in converted
    else:
        assert set(converted) == set(original)
    back = str(tmp_path / 'back.safetensors')
    mmengine_to_official(pth, back)
    restored = load_file(back)
    assert list(restored) == sorted(original) or set(restored) == set(original)
    for key, value in original.items():
        assert restored[key].dtype == value.dtype, key
        assert torch.equal(restored[key], value), key


def test_refuses_to_overwrite(tmp_path, parity_file):
    dst = tmp_path / 'x.pth'
    dst.write_bytes(b'keep me')
    with pytest.raises(FileExistsError, match='--overwrite'):
        official_to_mmengine(parity_file('tiny18_1k.safetensors'), str(dst))
    assert dst.read_bytes() == b'keep me'


def test_unknown_layout_is_reported(tmp_path):
    src = tmp_path / 'other.pth'
    torch.save({'state_dict': {'fc.weight': torch.zeros(2, 2)}}, src)
    with pytest.raises(ValueError, match='Cannot tell the Sapiens2 task'):
        official_to_mmengine(str(src), str(tmp_path / 'out.pth'))


def test_publish_strips_training_state(tmp_path):
    src = tmp_path / 'iter_10.pth'
    weights = {'backbone.cls_token': torch.ones(1, 1, 4)}
    torch.save({'meta': {'iter': 10}, 'state_dict': weights,
                'optimizer': {'state': {}}, 'message_hub': {}}, src)
    final = publish_checkpoint(str(src), str(tmp_path / 'model.pth'))
    assert osp.basename(final).startswith('model-') and final.endswith('.pth')
    published = torch.load(final, weights_only=True)
    assert set(published) == {'meta', 'state_dict'}
    assert torch.equal(published['state_dict']['backbone.cls_token'],
                       weights['backbone.cls_token'])


def test_cli(tmp_path, parity_file, repo_path):
    dst = tmp_path / 'seg.pth'
    result = subprocess.run(
        [sys.executable,
         repo_path('tools', 'model_converters', 'sapiens2_official_to_mm.py'),
         parity_file('tiny18_seg.safetensors'), str(dst)],
        capture_output=True, text=True, cwd=repo_path())
    assert result.returncode == 0, result.stderr
    assert 'Converted seg checkpoint' in result.stdout
    assert dst.exists()


def _digest(path):
    import hashlib
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def _cli(repo_path, tool, *args):
    return subprocess.run(
        [sys.executable, repo_path('tools', 'model_converters', tool),
         *map(str, args)], capture_output=True, text=True, cwd=repo_path())


def _one_line_error(result, *needles):
    """Exit 1 and only an ``error:`` message on stderr (no traceback) naming
    ``needles`` (one line, but for what a wrapped library error, such as
    torch's unpickling report, prints on further lines)."""
    assert result.returncode == 1, (result.returncode, result.stderr[-2000:])
    assert 'Traceback' not in result.stderr, result.stderr
    assert result.stderr.startswith('error: '), result.stderr
    for needle in needles:
        assert needle in result.stderr.splitlines()[0], (needle,
                                                         result.stderr)


@pytest.mark.parametrize('through', ['same path', 'symlink', 'hard link'])
def test_safetensors_output_onto_its_input_is_refused(
        tmp_path, parity_file, repo_path, through):
    """Issue 18: ``X.safetensors X.safetensors --overwrite`` ended in a bus
    error (the memory-mapped input truncated under its reader) and left a
    9 KB unreadable file."""
    import os
    import shutil
    src = tmp_path / 'sapiens2_seg.safetensors'
    shutil.copy(parity_file('tiny18_seg.safetensors'), src)
    before = _digest(src)
    dst = src
    if through == 'symlink':
        dst = tmp_path / 'link.safetensors'
        os.symlink(src, dst)
    elif through == 'hard link':
        dst = tmp_path / 'hard.safetensors'
        os.link(src, dst)
    result = _cli(repo_path, 'sapiens2_official_to_mm.py', src, dst,
                  '--overwrite')
    _one_line_error(result, 'is the input file', 'another output path')
    assert _digest(src) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {src.name, dst.name})  # no temporary file left


def _training_checkpoint(tmp_path, parity_file):
    """A resumable training checkpoint (weights + optimizer state)."""
    pth = str(tmp_path / 'plain.pth')
    official_to_mmengine(parity_file('tiny18_seg.safetensors'), pth)
    ckpt = torch.load(pth, weights_only=True)
    ckpt['optimizer'] = {'state': {0: {'step': torch.tensor(4.0)}},
                         'param_groups': [{'lr': 0.1, 'params': [0]}]}
    ckpt['meta']['iter'] = 4
    path = tmp_path / 'iter_4.pth'
    torch.save(ckpt, path)
    return path


def test_pth_output_onto_its_input_is_refused_even_with_overwrite(
        tmp_path, parity_file):
    """``iter_4.pth iter_4.pth --overwrite`` silently replaced a resumable
    training checkpoint by a stripped one."""
    from sapiens2_mm.utils.output_paths import OutputPathError
    src = _training_checkpoint(tmp_path, parity_file)
    before = _digest(src)
    with pytest.raises(OutputPathError, match='is the input file'):
        official_to_mmengine(str(src), str(src), overwrite=True)
    (tmp_path / 'alias.pth').symlink_to(src)
    with pytest.raises(OutputPathError, match='is the input file'):
        official_to_mmengine(str(src), str(tmp_path / 'alias.pth'),
                             overwrite=True)
    out = tmp_path / 'out.safetensors'
    out.symlink_to(src)  # a .safetensors name resolving to the .pth input
    with pytest.raises(OutputPathError, match='is the input file'):
        mmengine_to_official(str(src), str(out), overwrite=True)
    assert _digest(src) == before
    assert 'optimizer' in torch.load(src, weights_only=True)


def test_overwrite_replaces_through_a_temporary_file(tmp_path, parity_file,
                                                     monkeypatch):
    """An --overwrite conversion that fails half-way keeps the old output
    complete, and a finished one replaces it whole."""
    dst = tmp_path / 'seg.pth'
    dst.write_bytes(b'old output')
    real_save = torch.save

    def failing_save(obj, f, *args, **kwargs):
        f.write(b'half')  # torch.save writes into the open temporary file
        raise OSError(28, 'No space left on device')

    monkeypatch.setattr(torch, 'save', failing_save)
    with pytest.raises(OSError, match='No space left'):
        official_to_mmengine(parity_file('tiny18_seg.safetensors'), str(dst),
                             overwrite=True)
    assert dst.read_bytes() == b'old output'
    assert [p.name for p in tmp_path.iterdir()] == ['seg.pth']
    monkeypatch.setattr(torch, 'save', real_save)
    official_to_mmengine(parity_file('tiny18_seg.safetensors'), str(dst),
                         overwrite=True)
    assert 'state_dict' in torch.load(dst, weights_only=True)


def test_safetensors_outputs_get_the_permissions_of_pth_files(
        tmp_path, parity_file):
    """safetensors' writer creates files 0600; a .pth written by torch.save
    gets 0666 less the umask. Both now read the same."""
    import os
    import stat
    old = os.umask(0o022)
    try:
        pth = tmp_path / 'mm.pth'
        official_to_mmengine(parity_file('tiny18_seg.safetensors'), str(pth))
        back = tmp_path / 'back.safetensors'
        mmengine_to_official(str(pth), str(back))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(pth).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(back).st_mode) == 0o644


def test_forced_task_must_match_the_checkpoint(tmp_path, parity_file,
                                               repo_path):
    """``--task pose`` on a seg checkpoint said "Converted pose checkpoint"."""
    seg = parity_file('tiny18_seg.safetensors')
    with pytest.raises(ValueError, match='--task pose was given, but .* is '
                       'a seg checkpoint'):
        official_to_mmengine(seg, str(tmp_path / 'x.pth'), task='pose')
    pth = str(tmp_path / 'seg.pth')
    official_to_mmengine(seg, pth, task='seg')  # agreeing: converted
    with pytest.raises(ValueError, match='--task pretrain was given'):
        mmengine_to_official(pth, str(tmp_path / 'x.safetensors'),
                             task='pretrain')
    result = _cli(repo_path, 'sapiens2_mm_to_official.py', pth,
                  tmp_path / 'y.safetensors', '--task', 'pose')
    _one_line_error(result, '--task pose', 'seg checkpoint')
    assert not (tmp_path / 'x.pth').exists()
    assert not (tmp_path / 'y.safetensors').exists()


def test_pretraining_checkpoint_points_to_export_pretrain(tmp_path,
                                                          repo_path):
    """A Sapiens2Pretrainer checkpoint (student, teacher, decoder, heads) is
    refused with the command that exports its teacher."""
    state = {'backbone.cls_token': torch.zeros(1, 1, 4),
             'teacher.module.backbone.cls_token': torch.ones(1, 1, 4),
             'neck.decoder_pos_embed': torch.zeros(1, 2, 4)}
    src = tmp_path / 'iter_8.pth'
    torch.save({'meta': {}, 'state_dict': state}, src)
    result = _cli(repo_path, 'sapiens2_mm_to_official.py', src,
                  tmp_path / 'out.safetensors')
    _one_line_error(result, 'pretraining checkpoint', 'export_pretrain.py')
    assert not (tmp_path / 'out.safetensors').exists()


@pytest.mark.parametrize('tool,args,needle', [
    ('sapiens2_official_to_mm.py', ['missing.safetensors', 'o.pth'],
     'missing.safetensors'),
    ('sapiens2_official_to_mm.py', ['not_a_checkpoint.pth', 'o.pth'],
     'Could not read checkpoint'),
    ('sapiens2_mm_to_official.py', ['missing.pth', 'o.safetensors'],
     'missing.pth'),
    ('sapiens2_mm_to_official.py', ['missing.pth', 'o.pth'],
     'must be a .safetensors'),
    ('export_pretrain.py', ['missing.pth', 'o.safetensors'], 'missing.pth'),
    ('export_pretrain.py', ['not_a_checkpoint.pth', 'o.safetensors'],
     'not_a_checkpoint.pth'),
    ('publish_model.py', ['missing.pth', 'o.pth'], 'missing.pth'),
    ('publish_model.py', ['not_a_checkpoint.pth', 'o.pth'],
     'Could not read checkpoint'),
])
def test_user_errors_are_one_line(tmp_path, repo_path, tool, args, needle):
    """Refusals and bad inputs end in one ``error:`` line, as train/test/
    infer do, never a traceback; nothing is written. (The tools' main() in
    this process: SystemExit('error: ...') is what Python prints as that
    line with exit status 1; the subprocess runs above show it.)"""
    (tmp_path / 'not_a_checkpoint.pth').write_bytes(b'not a zip')
    module = load_tool(f'model_converters/{tool[:-3]}')
    with pytest.raises(SystemExit) as exit_:
        module.main([str(tmp_path / a) for a in args])
    message = exit_.value.code
    assert isinstance(message, str) and message.startswith('error: ')
    assert needle in message.splitlines()[0], message
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'not_a_checkpoint.pth']


def test_publish_never_writes_over_its_input(tmp_path):
    src = tmp_path / 'iter_10.pth'
    torch.save({'meta': {}, 'state_dict': {'w': torch.ones(2)}}, src)
    first = publish_checkpoint(str(src), str(tmp_path / 'model.pth'))
    before = _digest(first)
    from sapiens2_mm.utils.output_paths import OutputPathError
    with pytest.raises(OutputPathError, match='published already'):
        publish_checkpoint(first, str(tmp_path / 'model.pth'))
    with pytest.raises(OutputPathError, match='is the input file'):
        publish_checkpoint(str(src), str(src))
    assert _digest(first) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ['iter_10.pth', osp.basename(first)])
