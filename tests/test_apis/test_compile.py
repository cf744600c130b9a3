"""torch.compile of the network: one graph, dynamic batch, official numerics.

Compiling takes minutes on a loaded 2-core CPU, so one module-scoped
compiled tiny18 backbone serves every compiled check (two compilations in
all: batches >= 2 share one graph, a batch of 1 gets its own).
"""
import os.path as osp
import warnings

import pytest
import torch
from mmengine.config import Config
from safetensors.torch import load_file

from sapiens2_mm.registry import MODELS
from sapiens2_mm.runtime.compilation import (
    CompileFallbackWarning,
    compile_model,
    compiler_problem,
)
from tests.conftest import (
    OFFICIAL_TOLERANCE,
    PARITY_DIR,
    REPO_DIR,
    max_diff_to_official,
)


def _tiny18():
    cfg = Config.fromfile(
        osp.join(REPO_DIR, 'tests', 'configs', 'parity',
                 'tiny18_backbone_1k.py'))
    model = MODELS.build(cfg.model).eval()
    model.load_state_dict(
        load_file(osp.join(PARITY_DIR, 'tiny18_1k.safetensors')))
    return model


@pytest.fixture(scope='module')
def parity_io():
    return load_file(osp.join(PARITY_DIR, 'tiny18_1k_io.safetensors'))


def test_backbone_forward_has_no_graph_break(parity_io):
    model = _tiny18()
    torch._dynamo.reset()
    with torch.no_grad():
        explained = torch._dynamo.explain(model)(parity_io['input'])
    assert explained.graph_break_count == 0, explained.break_reasons
    assert explained.graph_count == 1


@pytest.fixture(scope='module')
def compiled_tiny18():
    if compiler_problem('cpu') is not None:
        pytest.skip(compiler_problem('cpu'))
    torch._dynamo.reset()
    model = _tiny18()
    assert compile_model(model) == ['Sapiens2']
    return model


@pytest.mark.slow
def test_compiled_backbone_matches_official(compiled_tiny18, parity_io):
    from torch._dynamo.utils import counters
    before = counters['stats']['unique_graphs']
    with torch.no_grad():
        out = compiled_tiny18(parity_io['input'])[0]
    assert counters['stats']['unique_graphs'] == before + 1  # it compiled
    diff = max_diff_to_official(out, '1k')
    assert diff <= OFFICIAL_TOLERANCE, f'max abs diff {diff:.3g}'


@pytest.mark.slow
def test_batch_sizes_share_compiled_graphs(compiled_tiny18, parity_io):
    from torch._dynamo.utils import counters
    image = parity_io['input'][:1]
    eager = compiled_tiny18.forward.eager
    graphs = []
    with torch.no_grad():
        for batch in (2, 3, 1, 4, 1, 3):
            x = image.expand(batch, -1, -1, -1).contiguous()
            out = compiled_tiny18(x)[0]
            graphs.append(counters['stats']['unique_graphs'])
            # inductor's kernels against eager's: another set of float32
            # kernels for the same function, as another CPU's
            diff = (out - eager(x)[0]).abs().max().item()
            assert diff <= OFFICIAL_TOLERANCE
    # The batch of 2 compiled a dynamic graph (or the parity test did):
    # 3 and 4 reuse it, 1 adds its own graph once.
    assert graphs[1] == graphs[0]
    assert graphs[2] == graphs[0] + 1
    assert graphs[-1] == graphs[2]


def test_missing_compiler_falls_back_with_one_warning(parity_io):
    import torch._inductor.config as inductor_config
    model = _tiny18()
    # inductor's own config.patch (monkeypatch.setattr on the cpp sub-config
    # proxy fails in workers where other tests touched inductor first).
    with inductor_config.patch({'cpp.cxx': ('no-such-c++',)}), \
            warnings.catch_warnings(record=True) as caught:
        assert 'C++ compiler' in compiler_problem('cpu')
        warnings.simplefilter('always')
        assert compile_model(model) == []
    fallback = [w for w in caught
                if issubclass(w.category, CompileFallbackWarning)]
    assert len(fallback) == 1
    assert 'C++ compiler' in str(fallback[0].message)
    assert 'eager' in str(fallback[0].message)
    with torch.no_grad():
        out = model(parity_io['input'])[0]
    assert max_diff_to_official(out, '1k') <= OFFICIAL_TOLERANCE


def test_compile_disabled_is_a_no_op():
    model = _tiny18()
    forward = model.forward
    assert compile_model(model, enabled=False) == []
    assert model.forward == forward
