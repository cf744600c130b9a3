"""Print a config with every ``_base_`` resolved and the options applied.

Usage::

    python tools/analysis_tools/print_config.py CONFIG [--cfg-options k=v ...]
        [--save-path resolved.py]

Unknown ``--cfg-options`` keys are refused exactly as tools/train.py does, so
this is also the way to check an override before launching a job.
"""
import argparse
import os.path as osp
import sys

from mmengine.config import Config

from sapiens2_mm.utils.cfg_options import CfgOptionsAction


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Print the resolved config')
    parser.add_argument('config', help='config file path')
    parser.add_argument('--cfg-options', nargs='+', action=CfgOptionsAction,
                        help='override config keys (see tools/train.py)')
    parser.add_argument('--save-path', help='also write the resolved config '
                        '(.py, .json or .yaml) here')
    return parser.parse_args(argv)


def main(argv=None) -> Config:
    args = parse_args(argv)
    from sapiens2_mm.utils import register_all_modules
    from sapiens2_mm.utils.cfg_options import UnknownConfigKeyError, apply_cfg_options
    from sapiens2_mm.utils.output_paths import OutputPathError, check_output_file
    register_all_modules(init_default_scope=False)
    if not osp.isfile(args.config):
        sys.exit(f'error: config file not found: {args.config!r}')
    try:
        if args.save_path:
            check_output_file(args.save_path, inputs=[args.config],
                              what='--save-path file')
        cfg = Config.fromfile(args.config)
        # the same checks and propagation as tools/train.py
        for note in apply_cfg_options(cfg, args.cfg_options):
            print(note)
    except (UnknownConfigKeyError, OutputPathError) as err:
        sys.exit(f'error: {err}')
    print(f'Config:\n{cfg.pretty_text}')
    if args.save_path:
        cfg.dump(args.save_path)
        print(f'Saved the resolved config to {args.save_path}')
    return cfg


if __name__ == '__main__':
    main()
