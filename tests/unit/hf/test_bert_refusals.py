"""A BERT folder that is not what ``tfviz.load`` can read is refused in words that name what
is wrong (the tensor, the setting, the file) and how to fix it, never with a traceback; and
``describe`` says the same of it. Each test breaks its own copy of a small random checkpoint
(tests/support/bert_folders.py). transformers, a test-only dependency, makes it."""
from __future__ import annotations

import pytest
import torch

pytest.importorskip("transformers")
from tokenizers import Tokenizer, models, trainers  # noqa: E402

from tests.support import hf_folders  # noqa: E402
from tests.support.bert_folders import copy, folder  # noqa: E402,F401
from tests.support.hf_folders import edit_config  # noqa: E402


def problem(path) -> str:
    """load's CheckpointError message, which names the folder; describe says the same."""
    return hf_folders.problem(path, described=True)


def test_unknown_model_type_names_both_families(copy):
    edit_config(copy, model_type="roberta", architectures=["RobertaForMaskedLM"])
    message = problem(copy)
    assert "model_type 'roberta'" in message and "RobertaForMaskedLM" in message
    assert "GPT-2 (model_type 'gpt2', GPT2LMHeadModel)" in message
    assert "BERT (model_type 'bert', BertForMaskedLM or BertModel)" in message


def test_shape_that_does_not_match_the_config_names_the_tensor(copy):
    edit_config(copy, max_position_embeddings=32)  # the file's position table has 64 rows
    message = problem(copy)
    assert "bert.embeddings.position_embeddings.weight has shape (64, 32)" in message
    assert "needs (32, 32)" in message and "max_position_embeddings=32" in message


def test_wider_config_names_a_tensor_that_disagrees(copy):
    edit_config(copy, intermediate_size=128)  # the file's feed-forward layers are 64 wide
    message = problem(copy)
    assert "bert.encoder.layer.0.intermediate.dense.bias has shape (64,)" in message
    assert "needs (128,)" in message and "intermediate_size=128" in message


def test_missing_tokenizer_says_how_to_save_one(copy):
    (copy / "tokenizer.json").unlink()
    message = problem(copy)
    assert "no tokenizer.json" in message and "AutoTokenizer.from_pretrained" in message


def test_truncated_safetensors_is_named(copy):
    path = copy / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 1000])
    message = problem(copy)
    assert "model.safetensors is truncated" in message
    assert f"the file has {len(data) - 1000:,} bytes" in message and "download it again" in message


def test_another_activation_is_refused_by_name(copy):
    edit_config(copy, hidden_act="gelu_new")
    message = problem(copy)
    assert "hidden_act is 'gelu_new'" in message and "'gelu' (the exact erf form" in message


def test_a_task_head_is_refused_by_name(copy):
    edit_config(copy, architectures=["BertForSequenceClassification"])
    message = problem(copy)
    assert "BertForSequenceClassification" in message and "BertForMaskedLM or BertModel" in message


def test_a_missing_layer_is_named(copy):
    edit_config(copy, num_hidden_layers=3)
    message = problem(copy)
    assert "lacks encoder.layer.2." in message and "config.json's 3 layers need" in message


def test_a_tokenizer_that_is_not_wordpiece_is_named(copy, tmp_path):
    hf = Tokenizer(models.BPE())
    hf.train_from_iterator(["the cat sat"] * 5, trainers.BpeTrainer(vocab_size=50, show_progress=False))
    hf.save(str(copy / "tokenizer.json"))
    assert "holds a BPE model; a BERT reads text with WordPiece" in problem(copy)


def test_pickle_weights_are_refused_with_the_conversion(copy):
    (copy / "model.safetensors").unlink()
    torch.save({"x": torch.zeros(1)}, copy / "pytorch_model.bin")
    message = problem(copy)
    assert "pickle" in message and "BertForMaskedLM" in message and "safe_serialization=True" in message
