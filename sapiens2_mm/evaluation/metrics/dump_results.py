"""mmengine's ``DumpResults`` that never costs the other metrics.

mmengine's ``Evaluator.evaluate`` computes the metrics in order and raises
from the first that fails. ``DumpResults`` writes the predictions ``.pkl``
there, so a dump that fails (a full disk, an unwritable path) throws away the
finished test's metrics, and a dump interrupted half-way leaves a truncated
``.pkl`` under the final name. :class:`AtomicDumpResults` writes under a
temporary name and renames when complete, and keeps a failure in
:attr:`AtomicDumpResults.error` (logged) instead of raising, so the evaluator
returns the other metrics; ``tools/test.py`` writes them to
``test_metrics.json`` and then reports the failed dump as its ``error:``.
"""
import logging
from typing import Optional

from mmengine.evaluator import DumpResults
from mmengine.fileio import dump
from mmengine.logging import print_log

from ...registry import METRICS
from ...utils.atomic_file import atomic_output


@METRICS.register_module()
class AtomicDumpResults(DumpResults):
    """Dump the raw predictions to ``out_file_path`` (a ``.pkl``) atomically.

    Args: as mmengine's ``DumpResults``.

    Attributes:
        error: why the last dump failed (``'OSError: ...'``), else None.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.error: Optional[str] = None

    def compute_metrics(self, results: list) -> dict:
        """Write ``results`` (temporary name, then rename); no metrics."""
        self.error = None
        try:
            with atomic_output(self.out_file_path) as tmp:
                dump(results, tmp, file_format='pkl')
        except Exception as err:  # noqa: BLE001 - kept, reported by test.py
            self.error = f'{type(err).__name__}: {err}'
            print_log(f'The predictions could not be written to '
                      f'{self.out_file_path} ({self.error}).',
                      logger='current', level=logging.ERROR)
            return {}
        print_log(f'Results has been saved to {self.out_file_path}.',
                  logger='current')
        return {}
