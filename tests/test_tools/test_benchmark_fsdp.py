"""tools/analysis_tools/benchmark_fsdp.py on a tiny backbone: FSDP1, FSDP2
and DDP end equal, and both FSDP variants hold half of DDP's model state."""
import pytest

from .workflow_utils import load_tool


@pytest.mark.slow
def test_tiny_benchmark_variants_agree_and_shard(tmp_path):
    bench = load_tool('analysis_tools/benchmark_fsdp')
    out = tmp_path / 'bench.json'
    rows = bench.main(['--embed-dims', '64', '--num-layers', '2',
                       '--input-size', '32', '32', '--batch-size', '2',
                       '--iters', '1', '--out', str(out)])
    assert set(rows) == {'fsdp1', 'fsdp2', 'ddp'}
    for row in rows.values():
        assert row['max_param_diff'] <= 1e-6
    # 2 ranks: each FSDP rank holds about half the state DDP holds
    assert rows['ddp']['state_mib_vs_fsdp1'] == pytest.approx(2.0, rel=0.02)
    assert rows['fsdp2']['state_mib_vs_fsdp1'] == pytest.approx(1.0, rel=0.02)
    assert out.is_file()
