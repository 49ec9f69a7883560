"""The README stays a front page: every note in docs/ is linked from it and short enough to read
at a sitting, and BENCHMARKS.md opens with one table that names every benchmark in bench/."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
MAX_LINES = 220  # "about 200 lines": a note that outgrows this wants splitting by idea


def first_table(markdown: str) -> str:
    """The first Markdown table of a text: its consecutive lines that start with '|'."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end])


def test_first_table_stops_at_the_first_line_that_is_not_a_row():
    text = "intro\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nafter\n| c |\n"
    assert first_table(text) == "| a | b |\n|---|---|\n| 1 | 2 |"


def test_there_are_notes_in_docs():
    names = {p.name for p in DOCS}
    assert {"layout.md", "checkpoints.md", "serving-a-class.md", "accessibility.md"} <= names


def test_every_note_in_docs_is_linked_from_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = set(re.findall(r"\]\((docs/[^)#\s]+)\)", readme))
    missing = [p.name for p in DOCS if f"docs/{p.name}" not in links]
    assert not missing, f"README.md links to none of {missing}"
    dangling = [link for link in links if not (ROOT / link).is_file()]
    assert not dangling, f"README.md links to notes that do not exist: {dangling}"


def test_every_note_in_docs_is_about_200_lines_at_most():
    long = {p.name: n for p in DOCS if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"notes longer than {MAX_LINES} lines: {long}"


def test_benchmarks_first_table_names_every_benchmark_and_its_history():
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    table = first_table(text)
    header = [c.strip() for c in table.splitlines()[0].strip("|").split("|")]
    assert header[:7] == ["benchmark", "command (`python -m …`)", "today's figure", "target",
                          "stands", "date", "machine"]
    benches = sorted(p.stem for p in (ROOT / "bench").glob("bench_*.py"))
    assert benches, "no bench/bench_*.py found"
    missing = [b for b in benches if f"bench.{b}" not in table]
    assert not missing, f"BENCHMARKS.md's first table has no row running {missing}"
    histories = set(re.findall(r"\]\((bench/history/[^)]+\.md)\)", table))
    absent = [h for h in histories if not (ROOT / h).is_file()]
    assert histories and not absent, f"rows link to history files that do not exist: {absent}"
    unlinked = [p.name for p in (ROOT / "bench" / "history").glob("*.md")
                if f"bench/history/{p.name}" not in histories]
    assert not unlinked, f"history files no row of the table links to: {unlinked}"


def test_benchmarks_first_screen_says_where_the_targets_stand():
    """Before the table: a sentence naming what is met and what is not."""
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    before_table = text[: text.index("\n|")]
    assert "Met:" in before_table and "Not met:" in before_table
    rows = first_table(text).splitlines()[2:]
    stands = [row.strip("|").split("|")[4] for row in rows]
    assert all(s.strip() for s in stands), "a row says nothing of where its target stands"
