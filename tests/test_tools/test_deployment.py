"""torch.export of pose/seg tensor forwards: dynamic batch, eager parity."""
import os.path as osp

import export_model
import pytest
import torch
from safetensors.torch import load_file

from sapiens2_mm.apis import init_model
from tests.conftest import (
    OFFICIAL_TOLERANCE,
    PARITY_DIR,
    REPO_DIR,
    max_diff_to_official,
)


@pytest.mark.slow  # torch.export of two models: 53 s
@pytest.mark.parametrize('task', ['pose', 'seg'])
def test_exported_program_matches_official_output(task, tmp_path):
    cfg = osp.join(REPO_DIR, f'tests/configs/parity/tiny18_{task}.py')
    model = init_model(cfg, osp.join(PARITY_DIR, f'tiny18_{task}.safetensors'))
    path = str(tmp_path / f'{task}.pt2')
    torch.export.save(export_model.export_program(model, (128, 96), 8), path)
    program = torch.export.load(path).module()
    io = load_file(osp.join(PARITY_DIR, f'tiny18_{task}_io.safetensors'))
    x = io['input']
    # official output for the official input, and a batch of 3 (dynamic dim)
    out = program(x)
    assert max_diff_to_official(out, task) <= OFFICIAL_TOLERANCE
    batch = torch.cat([x, x.flip(-1), x * 0.5])
    with torch.no_grad():
        eager = model(batch, None, mode='tensor')
    eager = eager[0] if isinstance(eager, (tuple, list)) else eager
    out3 = program(batch)
    assert out3.shape[0] == 3
    # the exported graph's (decomposed) kernels against eager's: another set
    # of float32 kernels for the same function, as another CPU's
    assert (out3 - eager).abs().max().item() <= OFFICIAL_TOLERANCE


@pytest.mark.slow  # torch.export and its check: 55 s
def test_cli_exports_and_verifies(tmp_path, capsys):
    """The documented command, in this process (its ``__main__`` only passes
    ``main()``'s return code to ``sys.exit``): no subprocess to time out on a
    loaded machine."""
    cfg = osp.join(REPO_DIR, 'tests/configs/parity/tiny18_seg.py')
    rc = export_model.main([cfg, '--output', str(tmp_path), '--verify',
                            '--max-batch', '4'])
    out, err = capsys.readouterr()
    assert rc == 0, err[-2000:]
    assert 'verify torch.export b2' in out
    assert osp.isfile(tmp_path / 'tiny18_seg.pt2')


def test_onnx_without_onnxscript_says_what_to_install(tmp_path):
    pytest.importorskip('onnx')
    try:
        import onnxscript  # noqa: F401
        pytest.skip('onnxscript installed: the error path does not apply')
    except ImportError:
        pass
    model = init_model(osp.join(REPO_DIR, 'tests/configs/parity/tiny18_seg.py'))
    with pytest.raises(ImportError, match='onnxscript'):
        export_model.export_onnx(model, (128, 96), str(tmp_path / 'm.onnx'))


@pytest.mark.slow  # ONNX export: 119 s
def test_onnx_export_reproduces_eager(tmp_path):
    pytest.importorskip('onnxscript')
    cfg = osp.join(REPO_DIR, 'tests/configs/parity/tiny18_seg.py')
    model = init_model(cfg, osp.join(PARITY_DIR, 'tiny18_seg.safetensors'))
    path = export_model.export_onnx(model, (128, 96), str(tmp_path / 'm.onnx'))
    diffs = export_model.verify(model, (128, 96), onnx_path=path)
    assert set(diffs) == {'onnx b1', 'onnx b2'}  # batch is dynamic
    # ONNX evaluates the bf16 RoPE casts with its own kernels: float32-level
    # agreement, not bit equality.
    assert max(diffs.values()) <= 1e-4


@pytest.mark.parametrize('config,checkpoint,needle', [
    ('tests/configs/parity/tiny18_seg.py', 'missing.safetensors',
     'Checkpoint file not found'),
    ('tests/configs/parity/tiny18_pose.py',
     'tests/data/official_parity/tiny18_seg.safetensors',
     "is a 'seg' checkpoint but the config builds a 'pose' model"),
    ('missing_config.py', None, 'Config file not found'),
])
def test_user_errors_are_one_error_line(tmp_path, config, checkpoint,
                                        needle):
    """Issue 18: export_model.py showed tracebacks for a wrong path or a
    checkpoint of another task; now one ``error:`` line, nothing written."""
    args = [osp.join(REPO_DIR, config)]
    if checkpoint:
        args.append(osp.join(REPO_DIR, checkpoint) if '/' in checkpoint
                    else str(tmp_path / checkpoint))
    out = tmp_path / 'out'
    with pytest.raises(SystemExit) as err:
        export_model.main(args + ['--output', str(out)])
    message = str(err.value.code)
    assert message.startswith('error: ') and needle in message, message
    assert '\n' not in message
    assert list(out.iterdir()) == []


def test_missing_onnx_package_is_an_error_line(tmp_path, monkeypatch):
    def no_onnx(*args, **kwargs):
        raise ImportError("--onnx needs the 'onnxscript' package")

    monkeypatch.setattr(export_model, 'export_onnx', no_onnx)
    cfg = osp.join(REPO_DIR, 'tests/configs/parity/tiny18_seg.py')
    with pytest.raises(SystemExit, match="^error: --onnx needs the "
                       "'onnxscript'"):
        export_model.main([cfg, '--output', str(tmp_path), '--onnx',
                           '--max-batch', '2'])


def test_an_earlier_export_is_never_replaced(tmp_path, monkeypatch):
    """Issue 29: export_model.py replaced an existing .pt2 silently."""
    cfg = osp.join(REPO_DIR, 'tests/configs/parity/tiny18_seg.py')
    earlier = tmp_path / 'tiny18_seg.pt2'
    earlier.write_bytes(b'earlier export')
    exported = []
    monkeypatch.setattr(export_model, '_export',
                        lambda args: exported.append(args) or (None,) * 4)
    with pytest.raises(SystemExit, match=r'^error: .*tiny18_seg\.pt2.* '
                       r'exists; refusing to overwrite it. Pass --overwrite'):
        export_model.main([cfg, '--output', str(tmp_path)])
    assert earlier.read_bytes() == b'earlier export' and not exported
    export_model.main([cfg, '--output', str(tmp_path), '--overwrite'])
    assert len(exported) == 1
