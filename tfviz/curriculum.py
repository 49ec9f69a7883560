"""The curriculum: every page of the app and every lesson still to come, in one table.

The navigation (``tfviz.ui.lessons``) builds its pages from it, and the quiz reads which
section a lesson belongs to and what to call it (``tfviz.exercises.quiz``), so the two can
never disagree. Numbers, titles and sections follow shared/CURRICULUM.md, except its training
lab (number 22 there): here it is an unnumbered page in "Practice", because 22 is the teacher's.

>>> LESSONS[5].title, LESSONS[5].section, LESSONS[5].url, LESSONS[5].file
('Self-attention step by step', 'Attention', 'self-attention', '05_self_attention.py')
>>> LESSONS[5].nav_title, LESSONS[6].topic
('5 · Self-attention step by step', 'Why ÷√d_k')
>>> LESSONS[17].url, LESSONS[17].file
('long-sequences', '17_long_sequences.py')
>>> SECTIONS[:3]
('Foundations', 'Attention', 'The block')
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, Mapping, get_args

Section = Literal["Start here", "Foundations", "Attention", "The block",
                  "Architectures and outputs", "Efficiency and beyond", "Looking inside",
                  "Practice"]


@dataclass(frozen=True)
class Entry:
    """One page or planned lesson. ``number`` is None for pages that are not numbered lessons
    (home, the teacher's page); ``file`` (under lessons/) is None until the page is written."""

    title: str  # "Self-attention step by step"; the navigation puts the number in front
    section: Section
    number: int | None = None
    url: str | None = None  # None: a planned lesson nothing links to yet
    file: str | None = None
    icon: str = ""
    short: str = ""  # how the quiz names the lesson, when not by its title

    def __post_init__(self) -> None:
        if self.section not in get_args(Section):
            raise ValueError(f"{self.title}: unknown section {self.section!r}")

    @property
    def nav_title(self) -> str:
        """The title in the navigation: "5 · Self-attention step by step", or "Welcome"."""
        return self.title if self.number is None else f"{self.number} · {self.title}"

    @property
    def topic(self) -> str:
        """How a quiz question or an exercise names the lesson it practises."""
        return self.short or self.title


HOME = "00_home.py"  # served at "/": a lesson marked default would lose its own URL

CURRICULUM: tuple[Entry, ...] = (
    Entry("Welcome", "Start here", None, "home", HOME, ":material/home:"),
    Entry("Tour", "Foundations", 1, "tour", "01_tour.py", ":material/explore:"),
    Entry("Tokenizer (BPE)", "Foundations", 2, "tokenizer", "02_tokenizer.py",
          ":material/content_cut:"),
    Entry("Embeddings and positions", "Foundations", 3, "embeddings", "03_embeddings.py",
          ":material/place:"),
    Entry("Attention as soft lookup", "Attention", 4, "attention-lookup", "04_lookup.py",
          ":material/search:"),
    Entry("Self-attention step by step", "Attention", 5, "self-attention",
          "05_self_attention.py", ":material/center_focus_strong:"),
    Entry("Why divide by √d_k", "Attention", 6, "scaling", "06_scaling.py",
          ":material/straighten:", short="Why ÷√d_k"),
    Entry("Multi-head attention", "Attention", 7, "multi-head", "07_multihead.py",
          ":material/view_module:"),
    Entry("Masking", "Attention", 8, "masking", "08_masking.py", ":material/visibility_off:"),
    Entry("Residual and LayerNorm", "The block", 9, "layernorm", "09_layernorm.py",
          ":material/add_circle:"),
    Entry("Feed-forward", "The block", 10, "feed-forward", "10_ffn.py", ":material/settings:"),
    Entry("Mixture of experts", "The block", 11, "mixture-of-experts", "11_moe.py",
          ":material/call_split:"),
    Entry("Full forward walk", "The block", 12, "forward-walk", "12_forward.py",
          ":material/directions_walk:"),
    Entry("Encoder, decoder, encoder-decoder", "Architectures and outputs", 13, "encoder-decoder",
          "13_encoder_decoder.py", ":material/translate:"),
    Entry("LM head and decoding", "Architectures and outputs", 14, "decoding", "14_decoding.py",
          ":material/account_tree:"),
    Entry("BERT and pretraining", "Architectures and outputs", 15, "bert", "15_bert.py",
          ":material/theater_comedy:"),
    Entry("KV cache", "Efficiency and beyond", 16, "kv-cache", "16_kv_cache.py", ":material/memory:"),
    Entry("Long sequences", "Efficiency and beyond", 17, "long-sequences", "17_long_sequences.py",
          ":material/linear_scale:"),
    Entry("MQA and GQA", "Efficiency and beyond", 18, "gqa", "18_gqa.py", ":material/group_work:"),
    Entry("Vision transformer", "Efficiency and beyond", 19, "vision", "19_vision.py", ":material/grid_on:"),
    # Looking inside: numbered 24-27 as in shared/CURRICULUM.md, shown before Practice.
    Entry("Logit lens", "Looking inside", 24, "logit-lens", "24_logit_lens.py", ":material/layers:"),
    Entry("Who wrote the answer", "Looking inside", 25, "direct-attribution",
          "25_direct_attribution.py", ":material/bar_chart:"),
    Entry("Causes, not correlations", "Looking inside", 26, "activation-patching",
          "26_activation_patching.py", ":material/swap_horiz:", short="Activation patching"),
    Entry("Induction heads", "Looking inside", 27, "induction-heads", "27_induction_heads.py",
          ":material/content_copy:"),
    Entry("Worked exercises", "Practice", 20, "exercises", "20_exercises.py",
          ":material/edit_note:"),
    Entry("Quiz", "Practice", 21, "quiz", "21_quiz.py", ":material/quiz:"),
    Entry("Teacher: class sheets", "Practice", None, "teacher", "22_teacher.py",
          ":material/school:"),
    Entry("Training lab", "Practice", None, "training-lab", "23_training_lab.py", ":material/model_training:"),
)

#: lesson number -> its entry, built or planned; read-only.
LESSONS: Mapping[int, Entry] = MappingProxyType(
    {e.number: e for e in CURRICULUM if e.number is not None})
#: the sections numbered lessons belong to, in curriculum order ("Start here" holds only home).
SECTIONS: tuple[Section, ...] = tuple(dict.fromkeys(e.section for e in LESSONS.values()))
#: URLs kept for lessons still to be written: lesson number -> URL.
PLANNED: Mapping[int, str] = MappingProxyType(
    {n: e.url for n, e in LESSONS.items() if e.file is None and e.url is not None})
