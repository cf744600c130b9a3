"""How often skipped samples are logged."""


def should_log(count: int) -> bool:
    """Log the first ten skips of a reason, then the 100th, 1000th, ...
    so frequent skips stay visible without flooding the log."""
    return count <= 10 or str(count).rstrip('0') == '1'
