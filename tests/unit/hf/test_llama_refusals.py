"""What a Llama, Mistral or Qwen folder may ask for that tfviz does not build is refused by name,
in words, before any weight is read (``tfviz.load`` and ``describe`` say the same); what it may
write in an older way is read.

Each test breaks its own copy of one small random Llama folder (tests/support/llama_folders.py)
by editing its config.json or its files.
"""
from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("transformers")

import tfviz  # noqa: E402
from tests.support.hf_folders import edit_config, problem  # noqa: E402
from tests.support.llama_folders import make_checkpoint  # noqa: E402
from tfviz.config import RopeScaling  # noqa: E402


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama-random-tiny")
    make_checkpoint(path, "llama", tokenizer="llama3")
    return path


@pytest.fixture
def copy(folder, tmp_path):
    target = tmp_path / "my-llama"
    shutil.copytree(folder, target)
    return target


def test_mistral_sliding_window_that_hides_tokens_is_refused(copy):
    edit_config(copy, model_type="mistral", architectures=["MistralForCausalLM"], sliding_window=16)
    message = problem(copy, described=True)
    assert "sliding window of 16 tokens" in message and "max_position_embeddings" in message
    assert "full causal attention" in message


def test_mistral_window_as_long_as_the_context_hides_nothing(copy):
    """Mistral 7B v0.1 says sliding_window 4096; with a context no longer than that, no token
    is ever out of the window, and the folder opens."""
    edit_config(copy, model_type="mistral", architectures=["MistralForCausalLM"], sliding_window=64)
    assert tfviz.load(copy).manifest["family"] == "Mistral"


def test_qwen_sliding_window_in_use_is_refused_and_unused_is_not(copy):
    edit_config(copy, model_type="qwen3", architectures=["Qwen3ForCausalLM"], head_dim=8,
                use_sliding_window=True, sliding_window=16, max_window_layers=1)
    with pytest.raises(tfviz.CheckpointError, match="sliding window of 16 tokens"):
        tfviz.load(copy)
    # max_window_layers = 2: neither of the two layers slides (transformers' own rule)
    edit_config(copy, max_window_layers=2)
    with pytest.raises(tfviz.CheckpointError, match="lacks"):  # a Llama's file, no q_norm: it got past
        tfviz.load(copy)


@pytest.mark.parametrize("rope_type", ["yarn", "dynamic", "longrope"])
def test_another_rope_is_refused(copy, rope_type):
    edit_config(copy, rope_parameters={"rope_type": rope_type, "factor": 4.0, "rope_theta": 10000.0,
                                       "original_max_position_embeddings": 32})
    message = problem(copy, described=True)
    assert f"rope_type '{rope_type}'" in message and "'linear' and 'llama3'" in message


def test_partial_rotary_is_refused(copy):
    edit_config(copy, partial_rotary_factor=0.5)
    assert "partial_rotary_factor is 0.5" in problem(copy, described=True)


def test_bias_mixtures_are_refused(copy):
    edit_config(copy, attention_bias=True, mlp_bias=False)
    message = problem(copy, described=True)
    assert "attention_bias = true and mlp_bias = false" in message and "not this mixture" in message
    edit_config(copy, model_type="qwen3", attention_bias=True)
    assert "attention_bias = true puts biases on q, k, v and o" in problem(copy, described=True)


def test_another_activation_is_refused(copy):
    edit_config(copy, hidden_act="gelu_pytorch_tanh")
    assert "hidden_act is 'gelu_pytorch_tanh'" in problem(copy, described=True)


def test_a_task_head_is_refused(copy):
    edit_config(copy, architectures=["LlamaForSequenceClassification"])
    message = problem(copy, described=True)
    assert "LlamaForSequenceClassification" in message and "LlamaForCausalLM" in message


def test_a_wordpiece_tokenizer_is_refused(copy):
    from tests.support.bert_folders import train_tokenizer

    train_tokenizer().save(str(copy / "tokenizer.json"))
    assert "holds a WordPiece model" in problem(copy)


def test_no_tokenizer_is_refused(copy):
    (copy / "tokenizer.json").unlink()
    assert "no tokenizer.json" in problem(copy, described=True)


def test_model_type_message_names_every_family(copy):
    edit_config(copy, model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"])
    message = problem(copy, described=True)
    for family in ("GPT-2", "BERT", "Llama", "Mistral", "Qwen2", "Qwen3", "Mixtral", "GraniteMoe"):
        assert family in message


def test_older_config_spelling_of_rope_is_read(copy):
    """Before transformers 5, config.json had rope_theta beside rope_scaling, whose kind was
    once called ``type``: read as the same RoPE."""
    data = json.loads((copy / "config.json").read_text())
    data.pop("rope_parameters", None)
    data.update(rope_theta=20000.0, rope_scaling={"type": "linear", "factor": 2.0})
    (copy / "config.json").write_text(json.dumps(data))
    cfg = tfviz.load(copy).config
    assert cfg.pos_base == 20000.0 and cfg.rope_scaling == RopeScaling("linear", 2.0)


def test_a_family_the_lessons_do_not_teach_is_listed_as_not_offered(folder, monkeypatch):
    """The app offers only the families whose block the lessons teach (APP_FAMILIES, which now
    holds the Llama family: tests/unit/hf/test_discover.py); a family tfviz.load opens but the lessons
    do not teach is named among the folders not offered, with the reason."""
    from tfviz.hf import discover as disc

    monkeypatch.setattr(disc, "APP_FAMILIES", ("GPT-2", "BERT"))
    d = disc.discover({"TFVIZ_MODELS": str(folder), "HF_HUB_CACHE": str(folder / "no-cache")})
    assert d.models == ()
    (skipped,) = [s for s in d.skipped if s.folder == folder]
    assert "it is a Llama, which tfviz.load opens in a notebook" in skipped.reason
    assert "the app offers GPT-2, BERT folders" in skipped.reason
