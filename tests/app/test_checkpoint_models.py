"""Hugging Face folders in the app: listed in the sidebar's picker with family and size, opened
when picked (or by ``?model=``), refused in words when memory is short, and a folder that fails
to open puts the sidebar back on the default model with its message, never a traceback."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

pytest.importorskip("transformers")
from tests.app.conftest import APP  # noqa: E402
from tests.support.bert_folders import make_checkpoint as make_bert  # noqa: E402
from tests.unit.hf.test_gpt2 import make_checkpoint  # noqa: E402

import tfviz  # noqa: E402
from tfviz.decoding.memory import human_bytes  # noqa: E402
from tfviz.hf.memory import opening_cost  # noqa: E402
from tfviz.ui import checkpoints  # noqa: E402
from tfviz.ui.state import DEFAULT_MODEL  # noqa: E402

SELF_ATTENTION = "lessons/05_self_attention.py"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A folder of model folders: gpt2 and bert (2 layers × 2 heads, d = 32), badtok, whose
    tokenizer.json is not JSON (describe() reads no tokenizer and offers it, opening it fails),
    and shared, a model_type tfviz does not build (GraniteMoeShared: experts and a shared one)."""
    root = tmp_path_factory.mktemp("models")
    n = make_checkpoint(root / "gpt2").num_parameters()
    make_bert(root / "bert")
    shutil.copytree(root / "gpt2", root / "badtok")
    (root / "badtok" / "tokenizer.json").write_text("{ not json")
    shutil.copytree(root / "gpt2", root / "shared")
    cfg = (root / "shared" / "config.json")
    cfg.write_text(cfg.read_text().replace('"model_type": "gpt2"', '"model_type": "granitemoeshared"'))
    return root, n


def start(**query):
    """The app's first run, with ``query`` as the link's parameters."""
    at = AppTest.from_file(APP, default_timeout=90)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def app(models, monkeypatch):
    monkeypatch.setenv("TFVIZ_MODELS", str(models[0]))  # no_model_folders (conftest) empties the cache
    return start


def ok(at):
    assert not at.exception, at.exception
    return at


def picker(at):
    return at.sidebar.selectbox(key="model")


def test_found_folders_join_the_picker_labelled_with_family_and_size(app, models):
    at = app()
    n = models[1]
    assert 10_000 <= n < 1_000_000
    k = f"{round(n / 1000)}k"  # model cards' way: "40k", as from 40,320
    options = picker(at).options
    assert options[:6] == ["gpt-tiny", "moe-tiny", "bert-tiny", "reverse-encdec", "llama-tiny", "mixtral-tiny"]
    assert options[6] == f"badtok · GPT-2, 2 layers × 2 heads, {k} parameters"
    assert options[7].startswith("bert · BERT, 2 layers × 2 heads, ")
    assert options[8:] == [f"gpt2 · GPT-2, 2 layers × 2 heads, {k} parameters"]
    # nothing was opened to list them: the picker's model is still the default
    assert at.session_state["model"] == DEFAULT_MODEL
    notes = " ".join(e.proto.body for e in at.sidebar.markdown)
    assert f"about {human_bytes(opening_cost(4 * n))} of memory" in notes
    assert "Not offered" in notes and "model_type 'granitemoeshared'" in notes  # and why


def test_picking_a_folder_opens_it_for_the_lessons(app, models):
    at = app()
    picker(at).set_value("gpt2")
    ok(at.run())
    ok(at.switch_page(SELF_ATTENTION).run())
    assert at.session_state["model"] == "gpt2"
    assert picker(at).value == "gpt2"
    assert at.query_params["model"] == "gpt2"  # a shared link names it
    assert not at.sidebar.warning
    assert at.session_state["sa_for_model"] == "gpt2"  # the page ran its what-ifs on gpt2
    n = models[1]
    (caption,) = [c.value for c in at.sidebar.caption if c.value.startswith("GPT-2")]
    assert caption == (f"GPT-2, 2 layers × 2 heads, {round(n / 1000)}k parameters, from TFVIZ_MODELS. "
                       f"It takes about {human_bytes(opening_cost(4 * n))} of this server's "
                       "memory, once for every learner.")


def test_a_link_opens_the_folder_and_the_shared_copy_is_the_files_model(app, models):
    at = app(model="gpt2")
    ok(at.switch_page(SELF_ATTENTION).run())
    assert at.session_state["model"] == "gpt2"
    shared = checkpoints.open_bundle("gpt2")
    assert shared is checkpoints.open_bundle("gpt2")  # one copy for every learner
    text = "The cat sat near the lake."
    direct = tfviz.load(models[0] / "gpt2").trace(text)["logits"]
    assert np.array_equal(np.asarray(shared.trace(text)["logits"]), np.asarray(direct))
    assert not any(p.requires_grad for p in shared.model.parameters())


def test_not_enough_memory_refuses_before_reading_and_keeps_the_default(app, monkeypatch):
    checkpoints._opened.clear()
    monkeypatch.setattr(checkpoints, "available_bytes", lambda: 1000)
    at = app(model="gpt2")
    assert at.session_state["model"] == DEFAULT_MODEL
    (warning,) = at.sidebar.warning
    assert warning.value.startswith("gpt2 is not opened: it needs about ")
    assert "this server has 1000 bytes free" in warning.value
    assert warning.value.endswith(f"Showing {DEFAULT_MODEL}.")
    ok(at.switch_page(SELF_ATTENTION).run())
    assert at.session_state["model"] == DEFAULT_MODEL


def test_a_folder_that_fails_to_open_says_why_and_keeps_the_default(app, models):
    at = app()
    picker(at).set_value("badtok")
    ok(at.run())
    assert at.session_state["model"] == DEFAULT_MODEL
    assert picker(at).value == DEFAULT_MODEL
    (warning,) = at.sidebar.warning
    assert warning.value.startswith("Cannot open badtok (TFVIZ_MODELS entry 1, folder badtok): "
                                    "tokenizer.json cannot be read")
    assert "Traceback" not in warning.value and str(models[0]) not in warning.value
    ok(at.switch_page(SELF_ATTENTION).run())  # the lessons go on with the default


def test_a_folder_gone_while_chosen_falls_back_to_the_default(app, monkeypatch):
    """A session chose gpt2, then the server stopped finding it (its folder moved, TFVIZ_MODELS
    changed on a replica): the sidebar goes back to the default instead of failing. (Called
    directly: AppTest cannot replay a picker whose chosen option has disappeared.)"""
    state = {"model": "gpt2"}
    monkeypatch.setattr(checkpoints.st, "session_state", state)
    assert checkpoints.settle(DEFAULT_MODEL, ["gpt-tiny", "gpt2"]) is None  # still found: opened
    assert state["model"] == "gpt2"
    monkeypatch.setenv("TFVIZ_MODELS", "")  # the folder is no longer listed
    assert checkpoints.settle(DEFAULT_MODEL, ["gpt-tiny"]) == (
        f"gpt2 is no longer among the models this server finds. Showing {DEFAULT_MODEL}.")
    assert state["model"] == DEFAULT_MODEL
    state["model"] = "my run 1: sort, 2 layers × 2 heads"  # a lab run is the session's own
    assert checkpoints.settle(DEFAULT_MODEL, ["gpt-tiny"]) is None


# ----- lessons that cannot show the sidebar's model offer one they can -----------------------

@pytest.mark.parametrize("lesson, model, key, offered", [
    ("lessons/14_decoding.py", "bert", "decoding_switch", "gpt-tiny"),
    ("lessons/16_kv_cache.py", "bert", "kv_switch", "gpt-tiny"),
    ("lessons/11_moe.py", "gpt2", "moe_switch", "moe-tiny"),
])
def test_a_lesson_that_does_not_apply_offers_a_bundled_model(app, lesson, model, key, offered):
    at = app(model=model)
    ok(at.switch_page(lesson).run())
    assert at.session_state["model"] == model
    (line,) = [i.value for i in at.info if i.value.startswith(f"**{model}** is ")]
    assert "not a decoder" in line or "dense model" in line
    ok(at.button(key=key).click().run())
    assert at.session_state["model"] == offered
    assert picker(at).value == offered


def test_the_servers_warm_up_opens_no_model_folder(app, monkeypatch):
    """server.py warms up the bundled models in the background; a folder waits for a learner."""
    from tfviz.ui import warmup

    opened = []
    monkeypatch.setattr(checkpoints, "open_bundle", lambda name: opened.append(name))
    monkeypatch.setattr(warmup.FIRST_PAGE, "wait", lambda timeout=None: True)
    warmup.warm_up()
    assert checkpoints.discovery().names == ["badtok", "bert", "gpt2"]  # listed all the same
    assert opened == []


def test_an_unexpected_failure_while_opening_is_said_not_raised(app, monkeypatch):
    """Not a CheckpointError (a disk that fails mid-read, torch refusing a tensor): the sidebar
    still says what happened and goes back to the default; running out of memory is not kept,
    so a later learner may try again."""
    checkpoints._opened.clear()
    real = checkpoints.tfviz.load

    def failing(error):
        def load(folder):
            raise error
        return load

    monkeypatch.setattr(checkpoints.tfviz, "load", failing(OSError(5, "Input/output error")))
    at = app(model="gpt2")
    assert at.session_state["model"] == DEFAULT_MODEL
    (warning,) = at.sidebar.warning
    assert warning.value.endswith(": OSError: [Errno 5] Input/output error Showing gpt-tiny.")
    checkpoints._opened.clear()
    monkeypatch.setattr(checkpoints.tfviz, "load", failing(MemoryError()))
    at = app(model="gpt2")
    (warning,) = at.sidebar.warning
    assert warning.value.startswith("gpt2 is not opened: this server ran out of memory opening it.")
    monkeypatch.setattr(checkpoints.tfviz, "load", real)  # memory is back: the next one opens it
    at = app(model="gpt2")
    assert at.session_state["model"] == "gpt2" and not at.sidebar.warning


# ----- learners see names and places, never the server's paths ------------------------------

@pytest.fixture
def two_gpt2(tmp_path, monkeypatch):
    """Two folders called gpt2 with different weights, in two TFVIZ_MODELS entries, and a folder
    with weights only as pytorch_model.bin, whose message names the folder in a command."""
    first, second = tmp_path / "lecturer" / "models", tmp_path / "shared" / "zoo"
    make_checkpoint(first / "gpt2", seed=1)
    make_checkpoint(second / "gpt2", seed=2)
    shutil.copytree(first / "gpt2", second / "binonly")
    (second / "binonly" / "model.safetensors").rename(second / "binonly" / "pytorch_model.bin")
    monkeypatch.setenv("TFVIZ_MODELS", f"{first}:{second}")
    checkpoints._discovered.clear()
    checkpoints._logged.clear()
    return tmp_path, first / "gpt2", second / "gpt2"


def sidebar_words(at) -> str:
    """Everything the sidebar shows in words: the picker's options, notes, captions, warnings."""
    parts = [*picker(at).options, *(e.proto.body for e in at.sidebar.markdown)]
    parts += [e.value for kind in ("caption", "warning", "info") for e in at.sidebar.get(kind)]
    return "\n".join(parts)


def test_the_sidebar_names_folders_by_place_and_keeps_their_paths_for_the_log(two_gpt2, caplog):
    root, first, second = two_gpt2
    with caplog.at_level("WARNING", logger="tfviz.ui.checkpoints"):
        at = start()
    words = sidebar_words(at)
    assert str(root) not in words and "/lecturer/" not in words  # no path, not even a part of one
    options = picker(at).options
    assert [o.split(" · ")[0] for o in options[-2:]] == ["gpt2", "gpt2-2"]  # after the bundled models
    notes = [e.proto.body for e in at.sidebar.markdown]
    assert any(n.startswith("**gpt2**: GPT-2, 2 layers × 2 heads, ") and
               "from TFVIZ_MODELS entry 1, folder gpt2." in n for n in notes)
    assert any(n.startswith("**gpt2-2**: ") and "from TFVIZ_MODELS entry 2, folder gpt2." in n for n in notes)
    (bad,) = [n for n in notes if n.startswith("Not offered")]
    assert bad.startswith("Not offered: TFVIZ_MODELS entry 2, folder binonly: it holds its weights "
                          "only as pytorch_model.bin.")
    assert "from_pretrained('…/binonly').save_pretrained('…/binonly'" in bad  # the command still reads
    # the server's log: which folder each name is, and the bad one's whole message
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert f"model folder gpt2: {first} (TFVIZ_MODELS entry 1, folder gpt2)" in logged
    assert f"model folder gpt2-2: {second} (TFVIZ_MODELS entry 2, folder gpt2)" in logged
    assert f"from_pretrained('{second.parent / 'binonly'}')" in logged


def test_a_link_names_a_folder_by_its_name_and_never_by_a_path(two_gpt2):
    """?model=gpt2-2 opens the second folder (its own weights), named gpt2-2 wherever a page
    reads the model's name; a path in the link, even a found folder's, opens nothing."""
    root, first, second = two_gpt2
    at = start(model="gpt2-2")
    assert at.session_state["model"] == "gpt2-2"
    shared = checkpoints.open_bundle("gpt2-2")
    text = "The cat sat near the lake."
    assert np.array_equal(np.asarray(shared.trace(text)["logits"]),
                          np.asarray(tfviz.load(second).trace(text)["logits"]))
    assert not np.array_equal(np.asarray(shared.trace(text)["logits"]),
                              np.asarray(tfviz.load(first).trace(text)["logits"]))
    assert (shared.name, shared.config.name) == ("gpt2-2", "gpt2-2")
    assert shared.manifest["source"] == "TFVIZ_MODELS entry 2, folder gpt2"
    for path in (str(second), str(root / "elsewhere"), "/etc", "../gpt2"):
        at = start(model=path)
        assert at.session_state["model"] == DEFAULT_MODEL
        assert at.query_params["model"] == DEFAULT_MODEL
        notices = " ".join(t.value for t in at.toast)
        assert "asked for a model we don't have" in notices and path not in notices


def test_a_folder_that_fails_to_open_is_logged_whole_and_shown_without_its_path(two_gpt2, monkeypatch,
                                                                               caplog):
    root, first, second = two_gpt2
    checkpoints._opened.clear()

    def load(folder):
        raise OSError(13, "Permission denied", str(folder / "model.safetensors"))

    monkeypatch.setattr(checkpoints.tfviz, "load", load)
    with caplog.at_level("WARNING", logger="tfviz.ui.checkpoints"):
        at = start(model="gpt2")
    (warning,) = at.sidebar.warning
    assert warning.value == ("Cannot open gpt2 (TFVIZ_MODELS entry 1, folder gpt2): PermissionError: "
                             "[Errno 13] Permission denied: '…/gpt2/model.safetensors' Showing gpt-tiny.")
    assert f"'{first / 'model.safetensors'}'" in "\n".join(r.getMessage() for r in caplog.records)
    checkpoints._opened.clear()
