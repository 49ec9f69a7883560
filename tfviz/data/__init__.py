"""Our own corpora and task generators; nothing is downloaded, everything takes a seed.

- ``lexicon``: word lists, regular inflection, ``word_class``
- ``coref``: the "it refers to the ..." probe and its train / held-out split
- ``stories``: ``story_corpus`` for the small language model
- ``tasks``: reverse / sort / copy examples and ``TaskVocab``
"""

from tfviz.data.coref import CorefCombo, coref_eval_items, coref_sentence, coref_split
from tfviz.data.lexicon import word_class
from tfviz.data.stories import story_corpus, words_of
from tfviz.data.tasks import TaskVocab, make_copy, make_reverse, make_sort

__all__ = ["CorefCombo", "TaskVocab", "coref_eval_items", "coref_sentence", "coref_split", "make_copy",
           "make_reverse", "make_sort", "story_corpus", "word_class", "words_of"]
