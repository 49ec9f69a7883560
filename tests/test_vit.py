"""vit-tiny (issue #17, lesson 19): the model's shapes, its trace against a rebuild from the
exported weights in numpy, the lesson's numbers, and the shipped bundle: files, targets, and
the manifest's accuracy measured again on the held-out images."""
import json
import math

import numpy as np
import pytest
import torch

import tfviz
from tfviz.analysis import vision as av
from tfviz.bundle import ASSETS, bundled_names
from tfviz.config import PRESET_NAMES
from tfviz.data.shapes import FIRST_SEED, shapes_dataset
from tfviz.model.vit import VIT_PRESETS, ViTConfig, VisionTransformer, patch_labels, patches_of
from tfviz.trace import trace_image
from tfviz.reference import attention, layer_norm
from tfviz.training import vit as vit_recipe
from tfviz.training.recipes import RECIPES
from tfviz.training.save import sha256
from tfviz.vision import patchify, shapes_image
from tfviz.vision_bundle import VisionBundle

CFG = VIT_PRESETS["vit-tiny"]
ATOL = 1e-4  # float32 model against a float64 rebuild through two blocks


@pytest.fixture(scope="module")
def vit() -> VisionBundle:
    return tfviz.load("vit-tiny")


def _images(n=3, seed=0):
    return np.stack([shapes_image(seed + i, 16)[0] for i in range(n)])


def test_config_sizes_follow_the_formulas():
    assert (CFG.n_patches, CFG.patch_dim, CFG.seq_len) == (16 * 16 // 4**2, 4 * 4 * 3, 17)
    assert ViTConfig(image_size=32, patch=8).n_patches == 16
    assert ViTConfig.from_dict(json.loads(json.dumps(CFG.to_dict()))) == CFG
    with pytest.raises(ValueError, match="does not cut"):
        ViTConfig(image_size=16, patch=3)
    with pytest.raises(ValueError, match="divisible"):
        ViTConfig(d_model=30, n_heads=4)


def test_forward_shapes_and_a_clear_error_for_the_wrong_image():
    model = VisionTransformer(CFG).eval()
    x = torch.from_numpy(_images(5))
    assert model(x).shape == (5, 3)
    assert model.embed(x).shape == (5, 17, 32)
    tr = trace_image(model, x[0].numpy())
    assert tr["hook_patches"].shape == (16, 48) and tr["hook_embed"].shape == (16, 32)
    assert tr["pattern", 1].shape == (4, 17, 17) and tr["hook_cls"].shape == (32,)
    assert tr.logits.shape == (3,) and tr.tokens == patch_labels(CFG) and tr.tokens[0] == "[CLS]"
    with pytest.raises(ValueError, match="16×16×3"):
        model(torch.zeros(1, 8, 8, 3))


def test_the_models_patches_are_patchify():
    images = _images(4)
    got = patches_of(torch.from_numpy(images), 4).numpy()
    for i, image in enumerate(images):
        np.testing.assert_array_equal(got[i], patchify(image, 4))


def test_same_seed_same_weights_and_no_global_rng_touched():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a, b = VisionTransformer(CFG), VisionTransformer(CFG)
    assert torch.equal(torch.rand(1), before)  # building a model drew nothing from the global RNG
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert na == nb and torch.equal(pa, pb)


def test_load_gives_the_trained_vision_bundle_outside_the_text_models(vit):
    assert isinstance(vit, VisionBundle) and vit.trained and vit.config == CFG
    assert "vit-tiny" not in PRESET_NAMES  # the sidebar's model list stays the text models
    assert "vit-tiny" not in bundled_names()  # no tokenizer: not a text bundle


def _gelu(x):
    erf = np.vectorize(math.erf)  # the standard library's erf: no scipy in our requirements
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))  # torch's default (exact) GELU


def _rebuild(W, image):
    """The forward pass in float64 numpy from the exported weights alone: pre-LN blocks."""
    steps = av.embedding_steps(image, W, CFG.patch)
    x = steps.x0  # (N+1, D)
    patterns = []
    for l in range(CFG.n_layers):
        h = layer_norm(x, W["ln1.w"][l], W["ln1.b"][l]).output
        q = np.einsum("td,hde->hte", h, W["W_Q"][l]) + W["b_Q"][l][:, None]  # (H, T, dh)
        k = np.einsum("td,hde->hte", h, W["W_K"][l]) + W["b_K"][l][:, None]
        v = np.einsum("td,hde->hte", h, W["W_V"][l]) + W["b_V"][l][:, None]
        att = attention(q, k, v)  # no mask: every patch sees every patch
        patterns.append(att.weights)
        x = x + np.einsum("hte,hed->td", att.output, W["W_O"][l]) + W["b_O"][l]
        h = layer_norm(x, W["ln2.w"][l], W["ln2.b"][l]).output
        x = x + _gelu(h @ W["W_in"][l] + W["b_in"][l]) @ W["W_out"][l] + W["b_out"][l]
    x = layer_norm(x, W["ln_final.w"], W["ln_final.b"]).output
    return steps, patterns, x[0] @ W["W_head"] + W["b_head"]


@pytest.mark.parametrize("seed", [0, 7, 42])
def test_trace_matches_a_numpy_rebuild_from_the_weights(vit, seed):
    image = shapes_image(seed, 16, noise=0.1)[0]
    tr = vit.trace(image)
    steps, patterns, logits = _rebuild(vit.weights(), image)
    np.testing.assert_allclose(tr["hook_patches"], steps.patches, atol=1e-7)  # the same pixels, moved
    np.testing.assert_allclose(tr["hook_embed"], steps.projected, atol=1e-5)
    np.testing.assert_allclose(tr["blocks.0.hook_resid_pre"], steps.x0, atol=1e-5)
    for l, p in enumerate(patterns):
        np.testing.assert_allclose(tr["pattern", l], p, atol=ATOL)
    np.testing.assert_allclose(tr.logits, logits, atol=ATOL)


def test_class_token_rows_sum_to_one(vit):
    tr = vit.trace(shapes_image(3, 16)[0])
    weights, kept = av.cls_attention([tr["pattern", l] for l in range(CFG.n_layers)])
    assert weights.shape == (2, 4, 16) and kept.shape == (2, 4)
    np.testing.assert_allclose(weights.sum(-1) + kept, 1.0, atol=1e-5)  # float32 softmax rows
    np.testing.assert_array_equal(weights[1, 2], tr["blocks.1.attn.hook_pattern"][2, 0, 1:])


def test_weights_are_read_only_and_add_up_to_the_parameter_count(vit):
    W = vit.weights()
    assert W["E"].shape == (48, 32) and W["E_pos"].shape == (17, 32) and W["class_token"].shape == (32,)
    assert W["W_head"].shape == (32, 3) and not W["E"].flags.writeable
    assert sum(a.size for a in W.values()) == sum(p.numel() for p in vit.model.parameters())
    assert sum(av.parameter_counts(W).values()) == sum(a.size for a in W.values())
    np.testing.assert_array_equal(W["E"], vit.model.patch_embed.weight.detach().numpy().T)


def test_probabilities_are_the_softmax_of_the_logits(vit):
    image = shapes_image(11, 16)[0]
    logits = vit.model(torch.from_numpy(image)[None])[0]
    # the same forward pass on the same image in this thread, each softmax in float64
    np.testing.assert_allclose(vit.probabilities(image), torch.softmax(logits.double(), -1).detach().numpy(),
                               atol=1e-6)
    np.testing.assert_allclose(av.softmax(logits.detach().numpy()), vit.probabilities(image), atol=1e-12)


def test_position_similarity_is_the_cosine_by_hand(vit):
    E_pos = vit.weights()["E_pos"]
    sim = av.position_similarity(E_pos, 5, 4, 4)
    a = E_pos[6].astype(np.float64)  # patch 5 is row 6: row 0 belongs to the class token
    for p in range(16):
        b = E_pos[p + 1].astype(np.float64)
        assert sim[p // 4, p % 4] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert sim[1, 1] == pytest.approx(1.0)


def test_shape_table_says_the_shapes_the_trace_has(vit):
    tr = vit.trace(shapes_image(1, 16)[0])
    table = {row["step"]: row["shape"] for row in av.shape_table(CFG)}

    def shape(a):
        return " × ".join(map(str, np.shape(a)))

    W = vit.weights()
    assert table["patches"] == shape(tr["hook_patches"]) and table["projection E"] == shape(W["E"])
    assert table["patch tokens"] == shape(tr["hook_embed"]) and table["positions E_pos"] == shape(W["E_pos"])
    assert table["x₀ (first block's input)"] == shape(tr["blocks.0.hook_resid_pre"])
    assert table["classifier head"] == shape(W["W_head"]) and table["class scores (logits)"] == shape(tr.logits)
    assert table["class token after the last block"] == shape(tr["hook_cls"])


# --- the shipped bundle -------------------------------------------------------------------


def test_bundle_files_belong_together_and_are_small(vit):
    folder = ASSETS / "vit-tiny"
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "manifest.json", "model.safetensors"]
    assert sum(p.stat().st_size for p in folder.iterdir()) < 200_000
    for f, digest in vit.manifest["files"].items():
        assert sha256(folder / f) == digest, f
    assert vit.manifest["command"] == "python -m tfviz.train --preset vit-tiny"
    assert vit.manifest["name"] == vit.name == "vit-tiny"


def test_targets_are_met(vit):
    ev, train = vit.manifest["eval"], vit.manifest["train"]
    assert ev["heldout_accuracy"] >= 0.95 and ev["heldout_images"] == vit_recipe.HELDOUT_IMAGES
    assert sum(ev["heldout_images_by_class"].values()) == ev["heldout_images"]
    assert train["threads"] == 1 and train["wall_seconds"] <= 180  # a recorded number, not a timing here
    assert train["steps"] == RECIPES["vit-tiny"].steps


def test_manifest_accuracy_is_measured_again_on_the_heldout_images(vit):
    """Another CPU rounds float32 sums in another order, which can flip an image whose two best
    logits nearly tie: one image either way is allowed (plus the 4-decimal rounding); the
    counts of images involve no floats and must be equal."""
    recorded, measured = vit.manifest["eval"], vit_recipe.evaluate(vit.model)
    n = recorded["heldout_images"]
    assert measured["heldout_images"] == n and measured["heldout_images_by_class"] == recorded["heldout_images_by_class"]
    assert measured["heldout_accuracy"] == pytest.approx(recorded["heldout_accuracy"], abs=1 / n + 1.5e-4)
    for c, count in recorded["heldout_images_by_class"].items():
        assert measured["heldout_accuracy_by_class"][c] == pytest.approx(
            recorded["heldout_accuracy_by_class"][c], abs=1 / count + 1.5e-4)
    # and by hand, without the recipe's helper: argmax of the logits against the labels
    images, labels = shapes_dataset(n, split="heldout")
    with torch.no_grad():
        right = (vit.model(torch.from_numpy(images)).argmax(-1).numpy() == labels).mean()
    assert right == pytest.approx(recorded["heldout_accuracy"], abs=1 / n + 1.5e-4)


def test_heldout_and_training_images_never_share_a_seed():
    assert FIRST_SEED["heldout"] >= FIRST_SEED["train"] + vit_recipe.TRAIN_IMAGES
    a, la = shapes_dataset(5, split="heldout")
    b, lb = shapes_dataset(5, split="heldout")
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(la, lb)
    image, label = shapes_image(FIRST_SEED["heldout"] + 2, 16, noise=0.0)
    assert la[2] == label.index


def test_twenty_steps_twice_give_identical_files(tmp_path):
    from tfviz.train import main

    for run in ("a", "b"):
        assert main(["--preset", "vit-tiny", "--steps", "20", "--out", str(tmp_path / run), "--quiet"]) == 0
    for f in ("model.safetensors", "config.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    assert not (tmp_path / "a" / "tokenizer.json").exists()
    a, b = (json.loads((tmp_path / r / "manifest.json").read_text()) for r in "ab")
    a["train"].pop("wall_seconds"), b["train"].pop("wall_seconds")
    assert a == b and a["command"].endswith("--steps 20")
    assert isinstance(tfviz.load(tmp_path / "a"), VisionBundle)


def test_block_comparison_is_what_the_two_models_compute(vit):
    """Each row the lesson shows, checked on the models' own activations instead of their configs:
    the same Block code; LayerNorm before the sublayer (pre-LN: resid_mid = resid_pre + attn_out)
    or after the sum (post-LN: resid_mid = LN(resid_pre + attn_out)); the activation between
    mlp.hook_pre and mlp.hook_post; the mask in the attention pattern; a final LayerNorm."""
    gpt = tfviz.load("gpt-tiny")
    rows = {r.part: r for r in av.block_comparison(vit.config, gpt.config)}
    assert type(vit.model.blocks[0]) is type(gpt.model.blocks[0])
    traces = {"vit": vit.trace(_images(1)[0]), "text": gpt.trace("the cat sat on the mat")}
    names = {"vit": vit, "text": gpt}
    for side, tr in traces.items():
        row = lambda part: getattr(rows[part], side)  # noqa: E731
        pre = tr["blocks.0.hook_resid_pre"] + tr["blocks.0.hook_attn_out"]
        mid = tr["blocks.0.hook_resid_mid"]
        if row("LayerNorm").startswith("pre-LN"):
            np.testing.assert_allclose(mid, pre, atol=1e-5)
        else:
            w = names[side].weights()
            np.testing.assert_allclose(mid, layer_norm(pre, w["ln1.w"][0], w["ln1.b"][0]).output, atol=1e-4)
        h_pre = torch.as_tensor(np.asarray(tr["blocks.0.mlp.hook_pre"]))
        want = {"GELU": torch.nn.functional.gelu, "ReLU": torch.relu}[row("feed-forward activation")]
        # torch's own activation on the same float32 numbers, in this thread: as the model did
        np.testing.assert_allclose(tr["blocks.0.mlp.hook_post"], want(h_pre).numpy(), atol=1e-6)
        upper = np.triu(np.asarray(tr["pattern", 0]), k=1)  # (heads, T, T): weights on later tokens
        assert (upper.max() > 0) == row("mask").startswith("none")
        assert ("ln_final.w" in names[side].weights()) == (row("LayerNorm after the last block") == "yes")
    differ = {p for p, r in rows.items() if not r.same}
    assert differ == {"mask", "LayerNorm", "LayerNorm after the last block", "feed-forward activation",
                      "sizes"}
