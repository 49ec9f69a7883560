"""Model folders found in TFVIZ_MODELS and in a Hugging Face cache, named, offered or skipped
with the reason, without a weight read; and what opening one costs in memory.

The folders are random GPT-2 checkpoints saved by transformers (test-only), copied into the
layouts a lecturer's machine has: a model folder, a folder of model folders, and the hub
cache's models--ORG--NAME/snapshots/REV with symbolic links into blobs/.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")
from tests.unit.hf.test_gpt2 import make_checkpoint  # noqa: E402

import tfviz  # noqa: E402
from tfviz.hf import CheckpointError  # noqa: E402
from tfviz.hf.discover import ENV_VAR, discover, hub_cache, short_count, unique_name, without_paths  # noqa: E402
from tfviz.hf.memory import OPEN_FACTOR, available_bytes, opening_cost, refusal  # noqa: E402
from tfviz.ui.checkpoints import taken_names  # noqa: E402

NO_CACHE = "/no/such/hub/cache"


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """One random GPT-2 folder (2 layers × 2 heads, d = 32) and transformers' parameter count."""
    path = tmp_path_factory.mktemp("gpt2-src")
    model = make_checkpoint(path)
    (path / "generation_config.json").unlink(missing_ok=True)
    return path, model.num_parameters()


def copy_to(source, dest: Path) -> Path:
    shutil.copytree(source[0], dest)
    return dest


def fake_cache(hub: Path, source, repo: str, rev: str = "a" * 40, old_rev: str | None = None) -> Path:
    """The hub cache's layout for ``repo`` ("ORG/NAME"): files stored once under blobs/ by
    hash, and snapshots/REV/FILE as relative symbolic links to them; refs/main names REV."""
    root = hub / ("models--" + repo.replace("/", "--"))
    (root / "blobs").mkdir(parents=True)
    for r in filter(None, (old_rev, rev)):  # the old snapshot first, so it is not the newest
        snap = root / "snapshots" / r
        snap.mkdir(parents=True)
        for f in source[0].iterdir():
            blob = root / "blobs" / f"{r[:8]}-{f.name}"
            shutil.copyfile(f, blob)
            (snap / f.name).symlink_to(os.path.relpath(blob, snap))
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(rev)
    return root / "snapshots" / rev


def env(paths=(), hub=NO_CACHE) -> dict:
    return {ENV_VAR: os.pathsep.join(str(p) for p in paths), "HF_HUB_CACHE": str(hub)}


def test_a_model_folder_is_offered_with_its_family_size_and_count(source, tmp_path):
    folder = copy_to(source, tmp_path / "gpt2")
    d = discover(env([folder]))
    (m,) = d.models
    assert d.skipped == ()
    assert (m.name, m.folder, m.source) == ("gpt2", folder, "TFVIZ_MODELS")
    n = source[1]  # transformers' own count (tied unembedding counted once)
    assert m.info.n_params == n == sum(p.numel() for p in tfviz.load(folder).model.parameters())
    assert m.label == f"gpt2 · GPT-2, 2 layers × 2 heads, {short_count(n)} parameters"
    assert m.info.bytes_on_disk == (folder / "model.safetensors").stat().st_size


def test_parameter_counts_read_as_model_cards_write_them():
    assert [short_count(n) for n in (999, 1234, 56_789, 124_439_808, 2_700_000_000)] == \
        ["999", "1.2k", "57k", "124M", "2.7B"]


def test_a_folder_of_model_folders_offers_each_and_ignores_other_folders(source, tmp_path):
    parent = tmp_path / "models"
    for name in ("small", "another"):
        copy_to(source, parent / name)
    (parent / "notes").mkdir()  # no model file in it: not a model folder, not named
    (parent / "notes" / "readme.txt").write_text("hello")
    d = discover(env([parent]))
    assert d.names == ["another", "small"] and d.skipped == ()


def test_hf_cache_snapshot_named_by_refs_main_through_blob_links(source, tmp_path):
    hub = tmp_path / "hub"
    snap = fake_cache(hub, source, "openai-community/gpt2", rev="b" * 40, old_rev="a" * 40)
    assert (snap / "model.safetensors").is_symlink()
    (m,) = discover(env(hub=hub)).models
    assert (m.name, m.folder) == ("gpt2", snap)
    assert m.source == "Hugging Face cache (openai-community/gpt2)"
    text = "The cat sat near the lake."
    through_links = tfviz.load(m.folder).trace(text)["logits"]
    direct = tfviz.load(source[0]).trace(text)["logits"]
    assert np.array_equal(np.asarray(through_links), np.asarray(direct))  # the same bytes


def test_cache_without_refs_main_takes_its_snapshot(source, tmp_path):
    hub = tmp_path / "hub"
    snap = fake_cache(hub, source, "gpt2")
    (snap.parents[1] / "refs" / "main").unlink()
    (m,) = discover(env(hub=hub)).models
    assert (m.name, m.folder) == ("gpt2", snap)


def test_where_the_cache_is_follows_huggingface_hubs_rules(tmp_path):
    home = Path("~").expanduser()
    assert hub_cache({}) == home / ".cache" / "huggingface" / "hub"
    assert hub_cache({"XDG_CACHE_HOME": "/x"}) == Path("/x/huggingface/hub")
    assert hub_cache({"HF_HOME": "/h", "XDG_CACHE_HOME": "/x"}) == Path("/h/hub")
    assert hub_cache({"HF_HUB_CACHE": "/c", "HF_HOME": "/h"}) == Path("/c")
    assert hub_cache({"HUGGINGFACE_HUB_CACHE": "/old", "HF_HOME": "/h"}) == Path("/old")


def test_names_never_take_a_bundled_name_and_stay_unique(source, tmp_path):
    hub = tmp_path / "hub"
    fake_cache(hub, source, "gpt2")
    fake_cache(hub, source, "openai-community/gpt2")
    folders = [copy_to(source, tmp_path / "a" / "gpt-tiny"), copy_to(source, tmp_path / "b" / "gpt2"),
               copy_to(source, tmp_path / "c" / "gpt2")]
    reserved = taken_names()
    assert {"gpt-tiny", "bert-tiny", "vit-tiny", "gqa-tiny", "gpt-tiny-rope", "my-run"} <= reserved
    d = discover(env(folders, hub), reserved=reserved)
    # TFVIZ_MODELS first, in order; then the cache by repository name
    assert d.names == ["gpt-tiny-2", "gpt2", "gpt2-2", "gpt2-3", "openai-community-gpt2"]
    assert discover(env(folders, hub), reserved=reserved).names == d.names  # same folders, same names
    assert not set(d.names) & reserved


def test_each_folder_has_a_place_that_names_no_path(source, tmp_path):
    """Where a folder was found, as the pages say it: the TFVIZ_MODELS entry (counted from 1,
    empty entries skipped) and the folder's own name, or the cached repository."""
    hub = tmp_path / "hub"
    fake_cache(hub, source, "openai-community/gpt2")
    direct = copy_to(source, tmp_path / "home" / "lecturer" / "gpt2")
    inner = copy_to(source, tmp_path / "srv" / "zoo" / "gpt2")
    missing = tmp_path / "srv" / "gone"
    d = discover({ENV_VAR: os.pathsep.join(["", str(direct), str(inner.parent), str(missing)]),
                  "HF_HUB_CACHE": str(hub)})
    assert [(m.name, m.place) for m in d.models] == [
        ("gpt2", "TFVIZ_MODELS entry 1, folder gpt2"), ("gpt2-2", "TFVIZ_MODELS entry 2, folder gpt2"),
        ("openai-community-gpt2", "Hugging Face cache (openai-community/gpt2)")]
    assert [(s.folder, s.place) for s in d.skipped] == [(missing, "TFVIZ_MODELS entry 3, folder gone")]
    assert not any(str(tmp_path) in m.place or "lecturer" in m.place for m in d.models)


def test_paths_in_a_message_are_cut_to_their_last_name(tmp_path):
    folder = tmp_path / "my models" / "gpt2"
    message = (f"convert it: from_pretrained('{folder}'); cannot read {folder}/model.safetensors "
               "or /root/.cache/huggingface/hub/models--gpt2/blobs/abc12 (2 layers/4 heads).")
    assert without_paths(message, [folder]) == (
        "convert it: from_pretrained('…/gpt2'); cannot read …/gpt2/model.safetensors "
        "or …/abc12 (2 layers/4 heads).")


def test_names_are_made_of_safe_characters():
    assert unique_name(["My GPT-2 (fine-tuned)!"], set()) == "My-GPT-2-fine-tuned"
    assert unique_name(["GPT2"], {"gpt2"}) == "GPT2-2"  # compared without case


def test_a_folder_reached_twice_is_offered_once(source, tmp_path):
    hub = tmp_path / "hub"
    snap = fake_cache(hub, source, "openai-community/gpt2")
    d = discover(env([snap], hub))
    assert len(d.models) == 1 and d.skipped == ()


def expected_problem(folder: Path) -> str:
    """What tfviz.load says of the folder: discovery must give the same reason."""
    with pytest.raises(CheckpointError) as info:
        tfviz.load(folder)
    return info.value.problem


def test_folders_that_cannot_be_offered_are_listed_with_the_reason(source, tmp_path):
    bad = {}
    bad["shared"] = copy_to(source, tmp_path / "m" / "shared")
    data = json.loads((bad["shared"] / "config.json").read_text())
    (bad["shared"] / "config.json").write_text(json.dumps({**data, "model_type": "granitemoeshared"}))
    bad["pickle"] = copy_to(source, tmp_path / "m" / "pickle")
    (bad["pickle"] / "model.safetensors").rename(bad["pickle"] / "pytorch_model.bin")
    bad["notok"] = copy_to(source, tmp_path / "m" / "notok")
    (bad["notok"] / "tokenizer.json").unlink()
    bad["cut"] = copy_to(source, tmp_path / "m" / "cut")
    weights = bad["cut"] / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    good = copy_to(source, tmp_path / "m" / "good")
    empty = tmp_path / "empty"
    empty.mkdir()
    hub = tmp_path / "hub"
    (hub / "models--org--half" / "refs").mkdir(parents=True)  # a download that never began
    d = discover(env([tmp_path / "m", empty, tmp_path / "nowhere"], hub))
    assert d.names == ["good"] and d.get("good").folder == good
    reasons = {s.folder: s.reason for s in d.skipped}
    for folder in bad.values():
        assert reasons[folder] == expected_problem(folder), folder.name
    assert "model_type 'granitemoeshared'" in reasons[bad["shared"]]
    assert "pickle" in reasons[bad["pickle"]]
    assert "tokenizer.json" in reasons[bad["notok"]]
    assert "truncated" in reasons[bad["cut"]]
    assert reasons[empty] == "it holds no config.json, and no folder in it does: name the model's own folder."
    assert reasons[tmp_path / "nowhere"] == "there is no such folder."
    assert reasons[hub / "models--org--half"] == "it has no downloaded snapshot."
    assert len(d.skipped) == len(bad) + 3


def test_a_cached_link_to_a_missing_blob_is_skipped_not_offered(source, tmp_path):
    hub = tmp_path / "hub"
    snap = fake_cache(hub, source, "gpt2")
    (snap / "model.safetensors").resolve().unlink()  # the blob is gone; the link dangles
    d = discover(env(hub=hub))
    assert d.models == () and d.skipped[0].folder == snap
    assert d.skipped[0].reason == expected_problem(snap)


def test_nothing_found_where_nothing_is(tmp_path):
    d = discover(env(hub=tmp_path / "empty-hub"))
    assert d.models == () and d.skipped == ()


# ----- memory -------------------------------------------------------------------------------

def test_opening_cost_and_refusal():
    assert opening_cost(1_000_000) == int(1_000_000 * OPEN_FACTOR)
    assert refusal("gpt2", 10, 10) is None and refusal("gpt2", 10, None) is None
    why = refusal("gpt2", 3 * 2**30, 2**30)
    assert why == ("gpt2 is not opened: it needs about 3.00 GiB of memory and this server has "
                   "1.00 GiB free. The lessons go on with a bundled model.")


def test_available_memory_is_memavailable(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683776 kB\nMemFree:        19860000 kB\n"
                       "MemAvailable:   21293568 kB\nBuffers:          123 kB\n")
    assert available_bytes(meminfo) == 21293568 * 1024
    # without /proc: the free physical pages, as the C library reports them
    fallback = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert abs(available_bytes(tmp_path / "none") - fallback) < 256 * 2**20  # free pages move


def test_a_llama_folder_is_offered_with_its_family_and_size(tmp_path):
    """The modern decoders are offered (the lessons teach their block): a Llama folder in
    TFVIZ_MODELS is found, named by its folder, with family and size, and nothing is skipped."""
    from tests.support.llama_folders import make_checkpoint as make_llama

    make_llama(tmp_path / "smol", kv_heads=2)
    found = discover({ENV_VAR: str(tmp_path)})
    assert [(m.name, m.info.family, m.info.n_layers, m.info.n_heads) for m in found.models] == [
        ("smol", "Llama", 2, 4)]
    assert not found.skipped
