"""Keep named upstream notices and the start-up dumps off the console.

Every run of mmengine's Runner printed, at console INFO, a ~400-line config
dump and the system environment (the torch build string among it), plus
notices of the pinned stack that the user can do nothing about:

* ``"FileClient" will be deprecated in future`` and ``"HardDiskBackend" is
  the alias of "LocalBackend"`` (mmengine.fileio.file_client):
  ``CheckpointHook.before_train`` builds a FileClient it never uses when
  ``file_client_args`` is None (mmengine 0.10.7);
* ``The prefix is not set in metric class X`` (mmengine.evaluator.metric):
  metrics without a ``default_prefix`` (mmseg's IoUMetric, ours) name their
  results without one, which is what the configs and docs use;
* ``build_loss`` would be deprecated soon (mmseg.models.builder, called by
  mmseg's own decode heads);
* ``pkg_resources is deprecated as an API`` (setuptools, imported by
  mmengine.utils.package_utils).

Each is matched by its message and, for Python warnings, the module that
emits it; nothing else is hidden. The dumps stay in the run's log file.
"""
import logging
import warnings

# (message regex, category, emitting module) of Python warnings
UPSTREAM_WARNINGS = (
    (r'``build_loss`` would be deprecated soon', UserWarning,
     r'mmseg\.models\.builder'),
    (r'pkg_resources is deprecated as an API', UserWarning,
     r'mmengine\.utils\.package_utils'),
)
# starts of mmengine log records (print_log, logger='current')
UPSTREAM_LOG_NOTICES = (
    '"FileClient" will be deprecated in future.',
    '"HardDiskBackend" is the alias of "LocalBackend"',
    'The prefix is not set in metric class ',
)
# starts of the Runner's start-up dumps, kept for the log file
CONSOLE_DUMPS = ('Config:\n', '\n' + '-' * 60 + '\nSystem environment:')


def silence_upstream_warnings() -> None:
    """Install the :data:`UPSTREAM_WARNINGS` filters (idempotent)."""
    for message, category, module in UPSTREAM_WARNINGS:
        warnings.filterwarnings('ignore', message=message, category=category,
                                module=module)


class UpstreamNoticeFilter(logging.Filter):
    """Drops the log records of :data:`UPSTREAM_LOG_NOTICES`."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith(UPSTREAM_LOG_NOTICES)


class ConsoleDumpFilter(logging.Filter):
    """Drops the config dump and the environment report (for a console
    handler; the file handler keeps them)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith(CONSOLE_DUMPS)


def quiet_logger(logger: logging.Logger) -> logging.Logger:
    """Add :class:`UpstreamNoticeFilter` to ``logger`` and
    :class:`ConsoleDumpFilter` to its console handlers (idempotent).

    Returns:
        ``logger``.
    """
    if not any(isinstance(f, UpstreamNoticeFilter) for f in logger.filters):
        logger.addFilter(UpstreamNoticeFilter())
    for handler in logger.handlers:
        console = (isinstance(handler, logging.StreamHandler)
                   and not isinstance(handler, logging.FileHandler))
        if console and not any(isinstance(f, ConsoleDumpFilter)
                               for f in handler.filters):
            handler.addFilter(ConsoleDumpFilter())
    return logger


def log_file_of(logger: logging.Logger):
    """Path of the logger's file handler, or None."""
    for handler in logger.handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return None
