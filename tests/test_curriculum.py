"""One curriculum table: the navigation and the quiz read the same lessons, sections and names."""
from tfviz import curriculum
from tfviz.exercises import quiz
from tfviz.ui import lessons as nav


def test_the_quiz_reads_the_curriculum_itself():
    assert quiz.LESSONS is curriculum.LESSONS and quiz.SECTIONS is curriculum.SECTIONS
    assert quiz.SECTIONS == ("Foundations", "Attention", "The block", "Architectures and outputs",
                             "Efficiency and beyond", "Looking inside", "Practice")


def test_golden_names_and_sections():
    assert sorted(curriculum.LESSONS) == [*range(1, 22), *range(24, 28)]
    assert (curriculum.LESSONS[6].section, curriculum.LESSONS[6].topic) == ("Attention", "Why ÷√d_k")
    assert curriculum.LESSONS[13].topic == "Encoder, decoder, encoder-decoder"
    assert curriculum.LESSONS[13].file == "13_encoder_decoder.py"
    assert curriculum.LESSONS[19].section == "Efficiency and beyond"
    assert (curriculum.LESSONS[14].url, curriculum.LESSONS[14].file) == ("decoding", "14_decoding.py")
    kept = {13: "encoder-decoder", 14: "decoding", 15: "bert", 16: "kv-cache", 17: "long-sequences",
            19: "vision", 24: "logit-lens", 25: "direct-attribution", 26: "activation-patching",
            27: "induction-heads"}
    assert {n: curriculum.LESSONS[n].url for n in kept} == kept  # built or not, the URLs stay
    assert dict(curriculum.PLANNED) == {n: url for n, url in kept.items()  # planned: no page yet
                                        if curriculum.LESSONS[n].file is None}


def test_navigation_is_built_from_the_curriculum():
    entries = [e for e in curriculum.CURRICULUM if e.file is not None]
    assert [(p.file, p.url, p.section, p.icon, p.number) for p in nav.LESSONS] == [
        (e.file, e.url, e.section, e.icon, e.number) for e in entries]
    assert nav.LESSONS[0].file == nav.HOME and nav.LESSONS[0].title == "Welcome"
    assert nav.by_url("scaling").title == "6 · Why divide by √d_k"
    for page in nav.LESSONS:
        if page.number is not None:
            assert page.title == f"{page.number} · {curriculum.LESSONS[page.number].title}"


def test_every_lesson_file_is_in_the_curriculum():
    files = {p.name for p in (nav.ROOT / "lessons").glob("*.py")}
    assert files == {page.file for page in nav.available()}


def test_a_question_takes_its_section_from_the_curriculum():
    q = quiz.NumericQuestion(id="demo", lesson=11, prompt="Experts?", answer=4, tolerance=0.5,
                             unit="a whole number", explanation="Four experts.")
    assert q.section == curriculum.LESSONS[11].section == "The block"
