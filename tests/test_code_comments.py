"""Comments state facts in place: no citations of files outside the repository.

The project's design notes and the reference write-up are not shipped, so a
comment such as "see <design file>" or "<reference> 5.5" points nowhere for a
reader of the repository.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ('sapiens2_mm', 'configs', 'tools', 'tests', 'projects')
# Built from pieces so that this file does not match itself.
CITATION = re.compile(
    r'[Rr]eference\s+(section|§|\d)|' + 'DESIGN' + r'\.md|'
    + 'SAPIENS2_' + 'REFERENCE')


def test_no_comment_cites_files_outside_the_repository():
    hits = []
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob('*')):
            if path.suffix not in ('.py', '.sh') or path == Path(__file__):
                continue
            text = path.read_text(encoding='utf-8')
            for match in CITATION.finditer(text):
                line = text.count('\n', 0, match.start()) + 1
                hits.append(f'{path.relative_to(ROOT)}:{line}')
    assert not hits, (
        'Comments cite files that are not in the repository; state the fact '
        'in place or point to docs/: ' + ', '.join(hits))
