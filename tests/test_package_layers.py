"""The package's layers point down: apis -> engine, evaluation, datasets,
models, visualization -> codecs, structures, utils, runtime, registry.

Every module of ``sapiens2_mm`` is parsed (not imported) and each import,
including those inside functions, is resolved to the subpackage it reaches.
A subpackage may import its own floor (without forming a circle) or a lower
one, never a higher one: nothing below ``apis`` imports ``apis``.

Run as a script on another checkout to list what it breaks:
``python tests/test_package_layers.py /path/to/checkout``.
"""
import ast
import builtins
import os
import os.path as osp
import sys
from typing import Dict, List, Set, Tuple

PACKAGE = 'sapiens2_mm'
REPO_DIR = osp.dirname(osp.dirname(osp.abspath(__file__)))

#: Floor of each subpackage (and top-level module): 3 inference, 2 models,
#: data, training and drawing, 1 what they all share.
FLOORS = {
    'apis': 3, 'upstream': 3,
    'engine': 2, 'evaluation': 2, 'datasets': 2, 'models': 2,
    'visualization': 2,
    'codecs': 1, 'structures': 1, 'utils': 1, 'runtime': 1, 'metainfo': 1,
    'registry': 1, 'version': 1,
}

Import = Tuple[str, str]  # (importing module, imported module)


def package_modules(repo: str) -> Dict[str, str]:
    """Dotted name -> file of every module of the package under ``repo``."""
    modules = {}
    for folder, _, files in os.walk(osp.join(repo, PACKAGE)):
        for name in files:
            if name.endswith('.py'):
                path = osp.join(folder, name)
                parts = osp.relpath(path, repo)[:-3].split(os.sep)
                if parts[-1] == '__init__':
                    parts = parts[:-1]
                modules['.'.join(parts)] = path
    return modules


def package_imports(repo: str) -> List[Import]:
    """Every import of a package module by a package module, relative
    imports resolved; ``from a import b`` reaches ``a.b`` if that is a
    module, else ``a``."""
    modules = package_modules(repo)
    found = []
    for module, path in sorted(modules.items()):
        is_package = path.endswith('__init__.py')
        here = module.split('.') if is_package else module.split('.')[:-1]
        with open(path, encoding='utf-8') as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ''
                if node.level:
                    parent = here[:len(here) - node.level + 1]
                    base = '.'.join(parent + ([base] if base else []))
                targets = [f'{base}.{alias.name}'
                           if f'{base}.{alias.name}' in modules else base
                           for alias in node.names]
            else:
                continue
            found += [(module, target) for target in targets
                      if target.split('.')[0] == PACKAGE]
    return sorted(set(found))


def subpackage(module: str) -> str:
    """``sapiens2_mm.utils.checkpoint`` -> ``utils`` (``''`` for the
    package's own ``__init__``)."""
    parts = module.split('.')
    return parts[1] if len(parts) > 1 else ''


def upward_imports(imports: List[Import]) -> List[str]:
    """``importer -> imported`` for each import of a higher floor."""
    return [f'{src} -> {dst} (floor {FLOORS[subpackage(src)]} -> '
            f'{FLOORS[subpackage(dst)]})' for src, dst in imports
            if subpackage(src) in FLOORS and subpackage(dst) in FLOORS
            and FLOORS[subpackage(dst)] > FLOORS[subpackage(src)]]


def subpackage_circles(imports: List[Import]) -> List[List[str]]:
    """One circle (``[a, b, ..., a]``) through each subpackage that can
    reach itself in the subpackage import graph."""
    graph: Dict[str, Set[str]] = {}
    for src, dst in imports:
        if subpackage(src) != subpackage(dst):
            graph.setdefault(subpackage(src), set()).add(subpackage(dst))

    def path_back(start: str) -> List[str]:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    return path + [start]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, path + [nxt]))
        return []

    circles = [path_back(name) for name in sorted(graph)]
    return [circle for circle in circles if circle]


def test_every_subpackage_has_a_floor():
    names = {subpackage(m) for m in package_modules(REPO_DIR)} - {''}
    assert names <= set(FLOORS), (
        f'Place {sorted(names - set(FLOORS))} on a floor in FLOORS.')


def test_no_module_is_named_after_a_builtin():
    """E.g. ``apis/compile.py`` (was): ``from . import compile`` hides it."""
    names = {m.rsplit('.', 1)[-1] for m in package_modules(REPO_DIR)}
    assert not names & set(dir(builtins))


def test_no_import_points_up():
    """E.g. ``utils.official_keys`` importing ``apis.tasks`` (was)."""
    upward = upward_imports(package_imports(REPO_DIR))
    assert not upward, 'Imports pointing up:\n' + '\n'.join(upward)


def test_no_circle_between_subpackages():
    circles = subpackage_circles(package_imports(REPO_DIR))
    assert not circles, 'Import circles between subpackages:\n' + '\n'.join(
        ' -> '.join(circle) for circle in circles)


if __name__ == '__main__':
    checkout = sys.argv[1] if len(sys.argv) > 1 else REPO_DIR
    walked = package_imports(checkout)
    print('\n'.join(['imports pointing up:', *upward_imports(walked),
                     'circles:', *(' -> '.join(c)
                                   for c in subpackage_circles(walked))]))
