"""Only the named upstream notices are silenced, only where they come from."""
import logging
import warnings

import pytest

from sapiens2_mm.utils.upstream_notices import (
    ConsoleDumpFilter,
    UpstreamNoticeFilter,
    quiet_logger,
    silence_upstream_warnings,
)


def _shown(message, module):
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter('always')
        silence_upstream_warnings()
        warnings.warn_explicit(message, UserWarning, f'{module}.py', 1,
                               module=module)
    return len(caught) == 1


@pytest.mark.parametrize('message,module', [
    ('``build_loss`` would be deprecated soon, please use ...',
     'mmseg.models.builder'),
    ('pkg_resources is deprecated as an API. See ...',
     'mmengine.utils.package_utils'),
])
def test_named_warning_hidden_at_its_source_only(message, module):
    assert not _shown(message, module)
    assert _shown(message, 'sapiens2_mm.models.heads')  # elsewhere: shown
    assert _shown('another notice', module)  # other text there: shown


def _record(message, level=logging.WARNING):
    return logging.LogRecord('mmengine', level, __file__, 1, message, None,
                             None)


def test_log_filters_drop_the_named_records_only():
    notices = UpstreamNoticeFilter()
    assert not notices.filter(_record(
        'The prefix is not set in metric class IoUMetric.'))
    assert not notices.filter(_record(
        '"FileClient" will be deprecated in future. Please use io ...'))
    assert not notices.filter(_record(
        '"HardDiskBackend" is the alias of "LocalBackend" and ...'))
    assert notices.filter(_record('param_scheduler.0.end: 5 -> 1'))
    dumps = ConsoleDumpFilter()
    assert not dumps.filter(_record('Config:\nmodel = dict(...)',
                                    logging.INFO))
    assert not dumps.filter(_record(
        '\n' + '-' * 60 + '\nSystem environment:\n    sys.platform: linux',
        logging.INFO))
    assert dumps.filter(_record('Iter(train) [1/6] loss: 1.0', logging.INFO))


def test_quiet_logger_keeps_the_dumps_in_the_file(tmp_path):
    import io
    logger = logging.getLogger('sapiens2_test_quiet_logger')
    logger.setLevel(logging.INFO)
    console = io.StringIO()
    logger.addHandler(logging.StreamHandler(console))
    logger.addHandler(logging.FileHandler(tmp_path / 'run.log'))
    quiet_logger(logger)
    quiet_logger(logger)  # idempotent
    logger.info('Config:\nmodel = dict(type="X")')
    logger.warning('The prefix is not set in metric class IoUMetric.')
    logger.info('Iter 1')
    for handler in logger.handlers:
        handler.flush()
    assert console.getvalue() == 'Iter 1\n'
    assert (tmp_path / 'run.log').read_text() == (
        'Config:\nmodel = dict(type="X")\nIter 1\n')
    assert len(logger.filters) == 1


def test_model_building_outside_a_runner_is_quiet_too():
    """tools/infer.py builds models without a Runner: register_all_modules
    installs the warning filters, so mmseg's build_loss notice is gone."""
    from mmengine.config import Config

    from sapiens2_mm.registry import MODELS
    from sapiens2_mm.utils import register_all_modules
    from tests.conftest import REPO_DIR
    cfg = Config.fromfile(f'{REPO_DIR}/configs/seg/'
                          'sapiens2-tiny_1xb2-30_seg29sample-128x96.py')
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        warnings.simplefilter('always')
        register_all_modules()
        MODELS.build(cfg.model)
    messages = [str(w.message) for w in caught]
    assert not any('build_loss' in m for m in messages), messages
