"""mmpose's dataset classes read their installed metainfo without a warning.

mmpose names the file relative to its own source tree and warns "The metainfo
config file ... does not exist" on every run elsewhere; importing our datasets
points the class defaults at the installed copy, which mmpose would have read.
"""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# COCO-17 OKS sigmas as published with the COCO keypoint evaluation.
COCO_SIGMAS = [.026, .025, .025, .035, .035, .079, .079, .072, .072, .062,
               .062, .107, .107, .087, .087, .089, .089]

CODE = '''
import warnings
warnings.simplefilter('always')
import sapiens2_mm.datasets  # noqa: F401
from mmpose.datasets.datasets.utils import parse_pose_metainfo
from mmpose.registry import DATASETS
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter('always')
    for name in ('CocoDataset', 'CocoWholeBodyDataset'):
        meta = parse_pose_metainfo(DATASETS.get(name).METAINFO)
        print(name, meta['num_keypoints'], list(meta['sigmas'][:17].round(3)))
for w in caught:
    print('WARNING', w.message)
'''


def test_coco_metainfo_loads_without_the_missing_file_warning(tmp_path):
    # Run outside the repository, as a user's project directory would be.
    result = subprocess.run([sys.executable, '-c', CODE], capture_output=True,
                            text=True, cwd=tmp_path,
                            env={'PYTHONPATH': str(ROOT), 'PATH': '/usr/bin'})
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'does not exist' not in result.stdout + result.stderr
    lines = dict(line.split(' ', 1) for line in result.stdout.splitlines()
                 if line.startswith('Coco'))
    count, sigmas = lines['CocoDataset'].split(' ', 1)
    assert int(count) == 17
    assert eval(sigmas) == COCO_SIGMAS
    assert lines['CocoWholeBodyDataset'].startswith('133 ')
