"""Install sapiens2_mm (``pip install -e .``)."""
import os.path as osp

from setuptools import find_packages, setup


def read_requirements(name):
    path = osp.join(osp.dirname(__file__), 'requirements', name)
    with open(path) as f:
        return [
            line.split('#')[0].strip() for line in f
            if line.split('#')[0].strip()
        ]


# Compatible ranges, so that `pip install -e .` into an existing OpenMMLab
# environment keeps its torch and its mmcv. The exact set measured to work
# together is requirements/runtime.txt (installed by tools/setup_env.sh).
# mmcv is not required here: full mmcv and mmcv-lite are different
# distributions of one module, and pip would install one beside the other.
# Without either, `register_all_modules` raises an ImportError saying what to
# install; the extras below install one of them.
MMCV_RANGE = '>=2.0.0,<2.2.0'  # what mmpose 1.3 and mmsegmentation 1.2 accept
INSTALL_REQUIRES = [
    'torch>=2.1',
    'torchvision>=0.16',
    'numpy<2',
    'mmengine>=0.10.0,<1.0.0',
    'mmpretrain>=1.2.0,<1.3.0',
    'mmpose>=1.3.0,<1.4.0',
    'mmsegmentation>=1.2.0,<1.3.0',
    'mmdet>=3.1.0,<3.4.0',
    'pycocotools>=2.0',
    'xtcocotools>=1.12',
    'safetensors>=0.4',
    'ftfy',
    'regex',
]


def read_version():
    scope = {}
    with open(osp.join('sapiens2_mm', 'version.py')) as f:
        exec(f.read(), scope)
    return scope['__version__']


setup(
    name='sapiens2_mm',
    version=read_version(),
    description='Sapiens2 human-centric vision transformers for OpenMMLab',
    long_description=open('README.md').read() if osp.exists('README.md') else '',
    long_description_content_type='text/markdown',
    packages=find_packages(exclude=('tests', 'tests.*', 'configs', 'tools')),
    package_data={'sapiens2_mm': ['metainfo/*.json']},
    include_package_data=True,
    python_requires='>=3.10',
    install_requires=INSTALL_REQUIRES,
    extras_require={
        'mmcv-lite': [f'mmcv-lite{MMCV_RANGE}'],
        'mmcv': [f'mmcv{MMCV_RANGE}'],
        'tests': read_requirements('tests.txt'),
        'optional': read_requirements('optional.txt'),
    },
    license='Apache-2.0',
)
