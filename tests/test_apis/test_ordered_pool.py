"""ordered_map: results in input order whatever order the threads finish."""
import threading
import time

import pytest

from sapiens2_mm.apis.ordered_pool import (
    check_workers,
    default_workers,
    ordered_map,
)


def _slow_square(i):
    # later items finish first: 0 sleeps longest
    time.sleep(0.002 * (10 - i % 10))
    return i * i, threading.current_thread().name


def test_results_keep_input_order_across_threads():
    out = list(ordered_map(_slow_square, range(40), workers=4))
    assert [v for v, _ in out] == [i * i for i in range(40)]
    threads = {name for _, name in out}
    assert len(threads) > 1 and all('sapiens2-prep' in t for t in threads)


def test_one_worker_runs_inline():
    out = list(ordered_map(_slow_square, range(3), workers=1))
    assert {name for _, name in out} == {threading.current_thread().name}


def test_error_is_raised_at_its_items_turn():
    def fn(i):
        if i == 5:
            raise RuntimeError('item 5 broke')
        return i

    got = []
    with pytest.raises(RuntimeError, match='item 5 broke'):
        for value in ordered_map(fn, range(10), workers=3):
            got.append(value)
    assert got == [0, 1, 2, 3, 4]


def test_closing_early_stops_submitting():
    calls = []

    def fn(i):
        calls.append(i)
        time.sleep(0.01)
        return i

    stream = ordered_map(fn, range(1000), workers=2, ahead=4)
    assert [next(stream) for _ in range(3)] == [0, 1, 2]
    stream.close()
    # the three taken plus at most the window in flight
    assert len(calls) <= 3 + 4 + 2


@pytest.mark.parametrize('bad', [0, -1, 1.5, True, None])
def test_bad_worker_count_is_refused(bad):
    with pytest.raises(ValueError, match='workers must be an integer'):
        check_workers(bad)


def test_default_workers_in_range():
    assert 1 <= default_workers() <= 4
