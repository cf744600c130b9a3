"""A task's own options, declared once: a dataclass of :class:`TaskOptions`.

Each field is one option: its name (the Python keyword of
:func:`~sapiens2_mm.apis.run_inference` and the ``--flag`` of
``tools/infer.py TASK``, ``_`` written ``-``), its type, its default and its
help, given with :func:`option`::

    @dataclass(frozen=True)
    class SegOptions(TaskOptions):
        no_legend: bool = option(False, 'draw no class key under drawings')

The command line (:meth:`TaskOptions.add_arguments`), the keywords
(:meth:`TaskOptions.from_keywords`) and every default read that declaration;
nothing else writes a default down. The values are checked when the options
are made, from the command line or from Python alike (:meth:`TaskOptions.
check`): before any model loads.
"""
import argparse
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from ...utils.user_errors import OptionError


def option(default: Any, text: Optional[str] = None, *,
           choices: Optional[Sequence] = None,
           parse: Optional[Callable[[str], Any]] = None,
           check: Optional[Callable[[Any], Any]] = None,
           metavar: Any = None, nargs: Optional[int] = None,
           group: Optional[str] = None, exclusive: Optional[str] = None,
           head: bool = False):
    """A field of a :class:`TaskOptions` dataclass.

    Args:
        default: the default value (``False`` for a switch).
        text: the help line of ``tools/infer.py TASK -h``.
        choices: the allowed values (checked on the command line and in
            Python).
        parse: argparse ``type`` (from the text of the command line).
        check: called with the value given in Python (returns it or raises
            ``ValueError``), where ``parse`` or ``choices`` do not say it all.
        metavar / nargs: as argparse's.
        group: the title of the help section the option is listed in
            (options of one title form one section).
        exclusive: options of one name here cannot be given together on the
            command line (an argparse mutually exclusive group).
        head: an option of the model head's post-processing
            (``head.set_postprocess``).
    """
    return field(default=default, metadata=dict(
        help=text, choices=tuple(choices) if choices else None, parse=parse,
        check=check, metavar=metavar, nargs=nargs, group=group,
        exclusive=exclusive, head=head))


def flag(name: str) -> str:
    """The command-line flag of option ``name`` (``kpt_thr`` ->
    ``--kpt-thr``)."""
    return '--' + name.replace('_', '-')


@dataclass(frozen=True)
class TaskOptions:
    """The options of a task without options of its own; tasks subclass it
    (module docstring)."""

    def __post_init__(self) -> None:
        self.check()

    # -- the declaration -----------------------------------------------------
    @classmethod
    def names(cls) -> Tuple[str, ...]:
        """The option names, in declaration order."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def defaults(cls) -> Dict[str, Any]:
        """Option name -> default."""
        return {f.name: f.default for f in fields(cls)
                if f.default is not MISSING}

    @classmethod
    def head_options(cls) -> Tuple[str, ...]:
        """The options of the head's post-processing."""
        return tuple(f.name for f in fields(cls) if f.metadata.get('head'))

    # -- making them -----------------------------------------------------------
    @classmethod
    def from_keywords(cls, task: str, **given) -> 'TaskOptions':
        """The options with ``given`` values (the others their defaults).

        Raises:
            ValueError: a name that is not one of the task's options, or a
                value that is not allowed (named).
        """
        unknown = sorted(set(given) - set(cls.names()))
        if unknown:
            raise OptionError(
                f'Task {task!r} has no option(s) {unknown}; its options '
                f'are {sorted(cls.names())}.')
        return cls(**given)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add one ``--flag`` per option to ``parser`` (its ``dest`` is the
        option name), in declaration order."""
        sections: Dict[str, Any] = {}
        for f in fields(cls):
            meta = f.metadata
            where = parser
            if meta['group']:
                if meta['group'] not in sections:
                    sections[meta['group']] = parser.add_argument_group(
                        meta['group'])
                where = sections[meta['group']]
            if meta['exclusive']:
                key = ('exclusive', meta['exclusive'])
                if key not in sections:
                    sections[key] = where.add_mutually_exclusive_group()
                where = sections[key]
            kwargs = dict(dest=f.name, default=f.default, help=meta['help'])
            if f.type is bool:
                kwargs['action'] = 'store_true'
            else:
                kind = meta['parse'] or (f.type if f.type in (int, float)
                                         else None)
                for key, value in (('type', kind),
                                   ('choices', meta['choices']),
                                   ('metavar', meta['metavar']),
                                   ('nargs', meta['nargs'])):
                    if value is not None:
                        kwargs[key] = value
            where.add_argument(flag(f.name), **kwargs)

    # -- checking and reading them ---------------------------------------------
    def check(self) -> None:
        """Refuse values that are not allowed (each option's ``choices`` and
        ``check``); a subclass adds checks across options.

        Raises:
            ValueError: naming the option, the value and what is allowed.
        """
        for f in fields(self):
            value = getattr(self, f.name)
            choices = f.metadata['choices']
            if choices and value not in choices:
                raise OptionError(
                    f'{f.name} ({flag(f.name)}) must be one of '
                    f'{", ".join(map(repr, choices))}; got {value!r}.')
            if f.metadata['check'] is not None:
                f.metadata['check'](value)

    def changed(self) -> Dict[str, Any]:
        """Option name -> value of the options that differ from their
        default, in declaration order."""
        defaults = self.defaults()
        return {name: getattr(self, name) for name in self.names()
                if getattr(self, name) != defaults.get(name)}
