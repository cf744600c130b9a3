"""Every registered name resolves under the default scope; no root shadowing."""
import mmengine.registry as mmengine_registry

from sapiens2_mm import registry
from sapiens2_mm.registry import ALL_REGISTRIES, SCOPE


def _root_of(node):
    while node.parent is not None:
        node = node.parent
    return node


def test_nodes_have_scope_and_mmengine_parent():
    roots = {id(getattr(mmengine_registry, name))
             for name in dir(mmengine_registry)
             if isinstance(getattr(mmengine_registry, name),
                           mmengine_registry.Registry)}
    for node in ALL_REGISTRIES:
        assert node.scope == SCOPE
        assert id(node.parent) in roots


def test_every_registered_name_resolves_and_is_not_a_root_name():
    total = 0
    for node in ALL_REGISTRIES:
        root = _root_of(node)
        for name, cls in node.module_dict.items():
            total += 1
            assert node.get(name) is cls
            assert root.get(f'{SCOPE}.{name}') is cls
            assert name not in root.module_dict, (
                f'{name} in {node.name} shadows an mmengine root entry')
    assert total >= 2  # at least the backbone and the optimizer constructor
    assert registry.MODELS.get('Sapiens2') is not None


def test_every_root_the_runner_searches_has_a_child_of_our_scope():
    """mmengine warns "Failed to search registry with scope sapiens2_mm" for a
    root without such a child; mmpose's codec registry is a root too."""
    from mmpose.registry import KEYPOINT_CODECS

    import sapiens2_mm.codecs  # noqa: F401 - creates the codec child
    roots = [getattr(mmengine_registry, name) for name in dir(mmengine_registry)
             if isinstance(getattr(mmengine_registry, name),
                           mmengine_registry.Registry)]
    roots.append(KEYPOINT_CODECS)
    missing = [root.name for root in roots if root._search_child(SCOPE) is None]
    assert not missing
    # The children hold nothing: names resolve through the parent.
    assert registry.LOG_PROCESSORS.get('LogProcessor') is \
        mmengine_registry.LOG_PROCESSORS.get('LogProcessor')
    assert KEYPOINT_CODECS._search_child(SCOPE).get('UDPHeatmap') is \
        KEYPOINT_CODECS.get('UDPHeatmap')
