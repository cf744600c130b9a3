"""Run an OpenMMLab package's own tool in this environment.

mmpose's, mmseg's and mmpretrain's tools (``train.py``, ``test.py``,
``analysis_tools/get_flops.py`` ...) are not installed as scripts; the pip
packages ship them under ``<package>/.mim/tools/``. Run there directly they
fail on mmcv-lite (``No module named 'mmcv._ext'``) unless the config imports
sapiens2_mm first (``custom_imports = dict(imports=['sapiens2_mm'])``), and a
tool that imports mmpose before it reads the config (mmpose's get_flops.py)
fails even then. This entry imports sapiens2_mm (the mmcv-lite stand-in, the
safe checkpoint loading) and registers its modules, then runs the tool as
``python <tool> ARGS`` would::

    python -m sapiens2_mm.upstream mmpose train CONFIG [ARGS ...]
    python -m sapiens2_mm.upstream mmseg test CONFIG CHECKPOINT [ARGS ...]
    python -m sapiens2_mm.upstream mmpose analysis_tools/get_flops CONFIG

docs/baselines.md has the details.
"""
import argparse
import importlib.util
import os
import os.path as osp
import runpy
import sys
from typing import List, Optional

PACKAGES = ('mmpose', 'mmseg', 'mmpretrain')


def tools_dir(package: str) -> str:
    """``<package>/.mim/tools`` of an installed package.

    Raises:
        ValueError: an unknown or uninstalled package, or one whose install
            has no tools folder.
    """
    if package not in PACKAGES:
        raise ValueError(f'Unknown package {package!r}; choose one of '
                         f'{list(PACKAGES)}.')
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f'{package} is not installed in this environment.')
    folder = osp.join(list(spec.submodule_search_locations)[0], '.mim',
                      'tools')
    if not osp.isdir(folder):
        raise ValueError(
            f'{package} is installed without its tools ({folder} does not '
            'exist); clone its repository and run the tool from there with '
            "custom_imports = dict(imports=['sapiens2_mm']) in the config.")
    return folder


def available_tools(package: str) -> List[str]:
    """The tool names of ``package`` (``train``, ``analysis_tools/...``)."""
    root = tools_dir(package)
    names = []
    for folder, _, files in os.walk(root):
        for name in files:
            if name.endswith('.py') and not name.startswith('_'):
                rel = osp.relpath(osp.join(folder, name), root)
                names.append(rel[:-3].replace(os.sep, '/'))
    return sorted(names)


def tool_path(package: str, tool: str) -> str:
    """The file of ``tool`` (``train``, ``test.py``,
    ``analysis_tools/get_flops``) in ``package``'s tools.

    Raises:
        ValueError: no such tool (the available ones are listed).
    """
    name = tool[:-3] if tool.endswith('.py') else tool
    path = osp.join(tools_dir(package), *name.split('/')) + '.py'
    if not osp.isfile(path):
        raise ValueError(
            f'{package} has no tool {tool!r}; its tools: '
            f'{", ".join(available_tools(package))}.')
    return path


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        prog='python -m sapiens2_mm.upstream',
        description='Run an mmpose / mmseg / mmpretrain tool with sapiens2_mm '
        'loaded (mmcv-lite stand-in, sapiens2_mm types registered).')
    parser.add_argument('package', help=f'one of {", ".join(PACKAGES)}')
    parser.add_argument('tool', help='train, test, analysis_tools/get_flops, '
                        '... (a path under <package>/.mim/tools)')
    parser.add_argument('args', nargs=argparse.REMAINDER,
                        help="the tool's own arguments")
    args = parser.parse_args(argv)
    try:
        path = tool_path(args.package, args.tool)
    except ValueError as err:
        parser.exit(2, f'error: {err}\n')
    from sapiens2_mm.utils import register_all_modules
    register_all_modules(init_default_scope=False)
    argv, sys.argv = sys.argv, [path, *args.args]
    sys.path.insert(0, osp.dirname(path))  # the tool's sibling imports
    try:
        runpy.run_path(path, run_name='__main__')
    finally:  # restored for a caller in the same process (tests)
        sys.argv = argv
        sys.path.remove(osp.dirname(path))


if __name__ == '__main__':
    main()
