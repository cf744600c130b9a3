"""Map a function over a stream on several threads, results in input order.

The pipeline's CPU stages (decoding photos and cutting crops, heatmap
decoding or resize + argmax, drawing and encoding) each become the
bottleneck on one thread when the network is fast (a GPU) and the photos
large (a 12 MP JPEG takes about 0.1 s to decode). ``cv2`` decoding, warping
and resizing release the GIL, so threads scale on them without copying
frames between processes (DataLoader workers would pickle every frame and
crop twice). Order is kept with a window of futures: item ``i`` is yielded
before item ``i + 1`` however the threads finish.
"""
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Optional, TypeVar

Item = TypeVar('Item')
Result = TypeVar('Result')


def default_workers() -> int:
    """Threads per CPU stage (read, post-processing, drawing): half the
    cores, 1 to 4 (1 on the 2-core CPUs where the network needs both)."""
    return max(1, min(4, (os.cpu_count() or 1) // 2))


def check_workers(workers: int) -> int:
    """``workers`` if it is a positive int, else a ValueError saying so."""
    if not isinstance(workers, int) or isinstance(workers, bool) \
            or workers < 1:
        raise ValueError(f'workers must be an integer >= 1, got '
                         f'{workers!r}; use 1 for one thread per stage.')
    return workers


def ordered_map(fn: Callable[[Item], Result], items: Iterable[Item],
                workers: int, ahead: Optional[int] = None
                ) -> Iterator[Result]:
    """``fn(item)`` for every item, computed on ``workers`` threads.

    Args:
        fn: called once per item; an exception it raises is re-raised here
            when its item's turn comes (catch per-item errors inside ``fn``
            to skip an item instead).
        items: consumed on the calling thread, ``ahead`` items before the
            result of the oldest is yielded.
        workers: threads (1: ``fn`` runs inline, no pool).
        ahead: items in flight (default ``2 * workers``).

    Yields:
        The results in the order of ``items``. Closing the generator early
        cancels the items not started and waits for the running ones.
    """
    check_workers(workers)
    if workers == 1:
        for item in items:
            yield fn(item)
        return
    ahead = max(workers, ahead or 2 * workers)
    pool = ThreadPoolExecutor(workers, thread_name_prefix='sapiens2-prep')
    pending = deque()
    try:
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
