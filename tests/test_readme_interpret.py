"""The README's notebook example of tfviz.interpret runs as written and prints what it shows."""
import doctest
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_interpret_example_gives_its_outputs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    [example] = [b for b in blocks if "from tfviz.interpret import" in b and ">>>" in b]
    test = doctest.DocTestParser().get_doctest(example, {}, "README interpret", str(README), 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
