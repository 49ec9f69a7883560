"""Lesson 19: vision transformer. A drawn image cut into patches, flattened, projected by E,
a class token prepended, E_pos added; vit-tiny's prediction and where its class token looks."""
import random

import streamlit as st

from tfviz.analysis import vision as av
from tfviz.config import preset
from tfviz.model.vit import VisionTransformer, patches_of
from tfviz.ui.present import step
from tfviz.ui.vision_cache import drawn_image, get_vit, vit_trace
from tfviz.ui.views import instant, view_value
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.tables import table
from tfviz.viz import vision as iv
from tfviz.data.shapes import MAX_NOISE
from tfviz.viz.kit.style import unit_rgb
from tfviz.vision import MIN_CHANNEL, SHAPES, patchify, radius_range, shapes_image

bundle = get_vit()
cfg = bundle.config
TEXT_MODEL = preset("gpt-tiny")  # the text model vit-tiny's blocks are compared with
S, P, C = cfg.image_size, cfg.patch, cfg.channels
W = bundle.weights()


def _settings(seed: int) -> None:
    """Put the shape, place, size and colour that ``seed`` draws into the controls."""
    _, label = shapes_image(seed, S)
    st.session_state.update(vi_seed=seed, **{f"vi_{k}": v for k, v in av.label_settings(label).items()})


def _randomise() -> None:
    _settings(random.randrange(100_000))  # a fresh seed: a new image to draw


if "vi_kind" not in st.session_state:
    _settings(0)
    st.session_state.setdefault("vi_noise", 0.05)

st.title("Vision transformer")
st.markdown(
    "A transformer reads a sequence of vectors. To read a picture, a vision transformer (ViT) "
    "cuts it into square patches of P×P pixels, lays each patch's numbers out in one row, and "
    "treats every row as a token. A matrix E turns each row into a D-wide vector, one extra "
    "learned vector (the class token) goes in front, learned position vectors E_pos are added, "
    "and from there on the tokens pass through encoder blocks built by the same code as our text "
    "models' blocks, with a few settings changed (step 5 lists them). The class token's "
    f"vector after the last block decides the answer. Here the model is **vit-tiny**, trained by "
    f"us to say which shape ({', '.join(cfg.classes)}) a {S}×{S} picture holds; the pictures come "
    "from our own generator, nothing is downloaded.")

with step("1 · Draw an image"):
    c1, c2, c3 = st.columns(3)
    c1.number_input("Seed", 0, 99_999, key="vi_seed", on_change=lambda: _settings(int(st.session_state.vi_seed)),
                    help="Each seed draws a shape, place, size and colour; the controls take them up.")
    c1.button("Randomise", on_click=_randomise, icon=":material/casino:")
    kind = c1.selectbox("Shape", list(SHAPES), key="vi_kind")
    row = c2.slider("Centre row", 0.0, float(S), step=0.5, key="vi_row")
    col = c2.slider("Centre column", 0.0, float(S), step=0.5, key="vi_col")
    radius = c2.slider("Size (radius, pixels)", 1.0, S / 2, step=0.5, key="vi_radius")
    hex_colour = c3.color_picker("Colour", key="vi_colour")
    noise = c3.slider("Noise (standard deviation)", 0.0, 0.5, step=0.01, key="vi_noise")
    image, label = drawn_image(int(st.session_state.vi_seed), S, kind, (row, col), radius,
                               unit_rgb(hex_colour), noise)
    low, high = radius_range(S)
    st.caption(f"vit-tiny was trained on radii {low:g}–{high:g} pixels, shapes fully on the canvas, "
               f"colours with every channel at least {MIN_CHANNEL:g} and noise up to {MAX_NOISE:g}. "
               "Go beyond that to see where it stops knowing.")

    grid = av.patch_grid(S, S, C, P)
    left, right = st.columns([1, 1])
    with left:
        vega(iv.image_grid_figure, image, P, title=f"Your image, cut into {P}×{P} patches")
    with right:
        st.markdown(
            f"**Image:** H × W × C = {S} × {S} × {C}  \n"
            f"**Patch size:** P = {P}  \n"
            f"**Number of patches:** N = HW / P² = {S}·{S} / {P}² = **{grid.n}**  \n"
            f"**Numbers in one patch:** P²·C = {P}²·{C} = **{grid.patch_dim}**  \n"
            f"The grid numbers the patches row by row, left to right: that is the order of the "
            f"sequence, p0 … p{grid.n - 1}.")

with step("2 · Each patch becomes one row of numbers"):
    patches = patchify(image, P)  # (N, P²·C)
    vega(iv.patches_figure, patches, P, C)
    k = st.slider("Unfold one patch", 0, grid.n - 1, 5 if grid.n > 5 else 0, key="vi_patch")
    r0, c0 = grid.place(k)
    st.markdown(
        f"Patch p{k} is the block of rows {r0 * P}–{r0 * P + P - 1} and columns {c0 * P}–{c0 * P + P - 1}. "
        f"Read pixel by pixel, row after row, each pixel's {C} channels in turn, it gives row p{k} "
        f"of the matrix: {grid.patch_dim} numbers.")
    table(av.patch_table(patches, P, C, grid.cols, k), hide_index=True, key="vi_patch_table")
    show_code(patchify, av.patch_table)

with step("3 · The projection E"):
    steps = av.embedding_steps(image, W, P)
    D = steps.projected.shape[1]
    st.markdown(
        f"One matrix E ∈ R^{{(P²·C)×D}}, here **{grid.patch_dim} × {D}**, plus a bias b_E of {D} numbers, "
        f"turns every patch row into a {D}-wide token: (N × P²·C)·E = ({grid.n} × {grid.patch_dim})·"
        f"({grid.patch_dim} × {D}) = **{grid.n} × {D}**. Every patch uses the same E, as every word "
        "of a text model uses the same embedding table.")
    c1, c2 = st.columns(2)
    with c1:
        vega(iv.matrix_figure, W["E"], title=f"E: ({grid.patch_dim} × {D}), learned",
             y_labels=[f"{i}" for i in range(grid.patch_dim)], y_title="number in the patch")
    with c2:
        vega(iv.matrix_figure, steps.projected, title=f"patches · E + b_E: ({grid.n} × {D})",
             y_labels=[f"p{i}" for i in range(grid.n)], y_title="patch token")

with step("4 · The class token and the positions"):
    st.markdown(
        f"The class token is one learned vector of {D} numbers, the same for every image. It goes in "
        f"front, so the sequence has N + 1 = **{grid.n + 1}** tokens. Nothing in the patch rows says "
        f"where a patch was, so a learned position vector is added to each: E_pos ∈ R^{{(N+1)×D}}, "
        f"here **{grid.n + 1} × {D}**, row 0 for the class token. The first block reads "
        f"x₀ = [class token; patches·E + b_E] + E_pos, again **{grid.n + 1} × {D}**.")
    vega(iv.matrix_figure, W["class_token"][None], title=f"class token: (1 × {D}), learned",
         y_labels=["[CLS]"], y_title="", width=640)
    labels = ["[CLS]", *(f"p{i}" for i in range(grid.n))]
    c1, c2 = st.columns(2)
    with c1:
        vega(iv.matrix_figure, W["E_pos"], title=f"E_pos: ({grid.n + 1} × {D}), learned",
             y_labels=labels, y_title="position")
    with c2:
        vega(iv.matrix_figure, steps.x0, title=f"x₀ = tokens + E_pos: ({grid.n + 1} × {D})",
             y_labels=labels, y_title="token")
    sim = av.position_similarity(W["E_pos"], k, grid.rows, grid.cols)
    vega(iv.similarity_figure, sim, k)
    st.caption("Nobody told the model which patches are neighbours. This compares the learned "
               "position vector of the patch chosen under section 2 with every other one: whatever "
               "pattern shows up, training put there.")

    st.subheader("Every shape, end to end")
    table(av.shape_table(cfg), hide_index=True, key="vi_shapes")
    show_code(av.embedding_steps, VisionTransformer.embed, patches_of)

with step("5 · What vit-tiny says"):
    rows = av.block_comparison(cfg, TEXT_MODEL)
    same = [r.part for r in rows if r.same]
    differ = [r.part for r in rows if not r.same]
    st.markdown(
        f"x₀ now passes through vit-tiny's {cfg.n_layers} encoder blocks. They are built by the same "
        f"code as {TEXT_MODEL.name}'s, from a different set of settings. The same: "
        f"{', '.join(same)}. Different: {', '.join(differ)}.")
    table([{"": r.part, "vit-tiny": r.vit, TEXT_MODEL.name: r.text, "same?": "yes" if r.same else "no"}
           for r in rows], hide_index=True, key="vi_blocks")
    st.caption("Read from the two models' configs. Pre-LN with GELU is what the ViT paper used; "
               f"{TEXT_MODEL.name} keeps the original transformer's post-LN and ReLU. There is no "
               "mask in vit-tiny because it reads a whole image at once and writes nothing.")
    tr = vit_trace(image)
    probs, guess = av.prediction(tr.logits, cfg.classes)
    c1, c2 = st.columns([1, 2])
    c1.metric("Prediction", guess, help="The class with the highest probability.")
    c1.markdown(f"Drawn: **{label.kind}**. " + ("Right." if guess == label.kind else "Wrong."))
    with c2:
        vega(iv.probabilities_figure, cfg.classes, probs, label.kind)
    ev, recipe = bundle.evaluation, bundle.recipe
    if ev.heldout_accuracy is not None:
        by_class = ", ".join(f"{c} {a:.1%}" for c, a in ev.heldout_accuracy_by_class.items())
        st.caption(f"On {ev.heldout_images:,} held-out images it never saw in training, vit-tiny names "
                   f"the shape right {ev.heldout_accuracy:.1%} of the time ({by_class}). "
                   f"It trained for {recipe.train_seconds:.0f} s on one CPU thread: "
                   f"`{recipe.command}`.")

with step("6 · Where the class token looks"):
    L, H = cfg.n_layers, cfg.n_heads
    weights, kept = av.cls_attention([tr["pattern", layer] for layer in range(L)])
    instant(iv.cls_attention_chart, image, weights, kept, P,
            layer=view_value("layer", L - 1, L - 1), head=view_value("head", H - 1, 0))
    st.caption("The class token starts as the same vector for every image; it learns about this "
               "one only through attention. Move the sliders under the chart: the layer and head "
               "change in your browser. Row 0 of each head's attention map is drawn: its weights over "
               "the patches and the class token itself add up to 1.")
    show_code(av.cls_attention)

with step("7 · What if the patches were another size?"):
    st.markdown("This only cuts the same image differently: vit-tiny reads 4×4 patches and is not run here.")
    p2 = st.select_slider("Patch size P", [1, 2, 4, 8, 16], value=8, key="vi_what_if_p")
    g2 = av.patch_grid(S, S, C, p2)
    c1, c2 = st.columns([1, 1])
    with c1:
        vega(iv.image_grid_figure, image, p2, title=f"{p2}×{p2} patches", numbers=g2.n <= 16)
    with c2:
        rows, cols = patchify(image, p2).shape
        st.markdown(f"N = HW / P² = {S}·{S} / {p2}² = **{g2.n}** patches of P²·C = **{g2.patch_dim}** "
                    f"numbers: patchify gives a **{rows} × {cols}** matrix.")
        table(av.patch_size_table(S, S, C, [1, 2, 4, 8, 16]), hide_index=True, key="vi_sizes")
        st.caption("Smaller patches: more tokens, and attention's cost grows with their square. "
                   "Bigger patches: fewer, coarser tokens. The ViT paper used 16×16 patches of "
                   "224×224 images, N = 196.")
    show_code(av.patch_grid, av.patch_size_table)
