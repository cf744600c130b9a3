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
    package_data={'sapiens2_mm': ['metainfo/*.json', 'metainfo/*.py']},
    include_package_data=True,
    python_requires='>=3.10',
    install_requires=read_requirements('runtime.txt'),
    extras_require={
        'tests': read_requirements('tests.txt'),
        'optional': read_requirements('optional.txt'),
    },
    license='Apache-2.0',
)
