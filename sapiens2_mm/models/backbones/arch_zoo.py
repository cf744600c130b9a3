"""Official Sapiens2 sizes and the grouped-query attention rule."""
from typing import Dict, Union

ARCH_KEYS = ('embed_dims', 'num_layers', 'num_heads', 'feedforward_channels',
             'num_tokenizer_layers')

# Published sizes (Sapiens2 README and model cards). The 4K model is
# ``sapiens2_1b`` built with ``use_tokenizer=True``; it has no arch of its own.
ARCH_ZOO: Dict[str, Dict[str, int]] = {
    'sapiens2_0.1b': dict(embed_dims=768, num_layers=12, num_heads=12,
                          feedforward_channels=3072, num_tokenizer_layers=2),
    'sapiens2_0.4b': dict(embed_dims=1024, num_layers=24, num_heads=16,
                          feedforward_channels=4096, num_tokenizer_layers=2),
    'sapiens2_0.8b': dict(embed_dims=1280, num_layers=32, num_heads=16,
                          feedforward_channels=5120, num_tokenizer_layers=3),
    'sapiens2_1b': dict(embed_dims=1536, num_layers=40, num_heads=24,
                        feedforward_channels=6144, num_tokenizer_layers=4),
    'sapiens2_5b': dict(embed_dims=2432, num_layers=56, num_heads=32,
                        feedforward_channels=9728, num_tokenizer_layers=6),
}

# Blocks [FULL_ATTENTION_HEAD, L - FULL_ATTENTION_TAIL) use grouped-query
# attention with half the K/V heads; the official code hard-codes 8 and 8.
FULL_ATTENTION_HEAD = 8
FULL_ATTENTION_TAIL = 8


def resolve_arch(arch: Union[str, dict]) -> Dict[str, int]:
    """Return the size settings of ``arch`` (a zoo name or a dict of ARCH_KEYS).

    Raises:
        ValueError: unknown name, or a dict missing keys / with extra keys.
    """
    if isinstance(arch, str):
        key = arch.lower()
        if key not in ARCH_ZOO:
            raise ValueError(
                f'Unknown Sapiens2 arch {arch!r}. Choose one of '
                f'{sorted(ARCH_ZOO)}, or pass a dict with keys {ARCH_KEYS}. '
                'The 4K model is arch="sapiens2_1b" with use_tokenizer=True.')
        return dict(ARCH_ZOO[key])
    if isinstance(arch, dict):
        missing = set(ARCH_KEYS) - set(arch)
        extra = set(arch) - set(ARCH_KEYS)
        if missing or extra:
            raise ValueError(
                f'A custom Sapiens2 arch dict needs exactly the keys '
                f'{ARCH_KEYS}; missing {sorted(missing)}, unexpected '
                f'{sorted(extra)}.')
        return {k: int(arch[k]) for k in ARCH_KEYS}
    raise TypeError(
        f'arch must be a str or dict, got {type(arch).__name__}: {arch!r}')


def num_kv_heads_of_block(index: int, num_layers: int, num_heads: int) -> int:
    """K/V heads of block ``index``: all heads at both ends, half in between."""
    if FULL_ATTENTION_HEAD <= index < num_layers - FULL_ATTENTION_TAIL:
        return num_heads // 2
    return num_heads
