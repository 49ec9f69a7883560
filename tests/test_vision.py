"""Patches and the shape-image generator of the vision lesson (issue #17, lesson 19).

patchify is checked against torch's own unfolding (two of them), by hand, and by its round trip
with unpatchify; the generator's labels against geometry written out here pixel by pixel.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.vision import SHAPES, ShapeLabel, patchify, shapes_image, unpatchify

SIZES = [(4, 4, 1, 2), (6, 9, 3, 3), (32, 32, 3, 8), (8, 12, 2, 4), (5, 5, 3, 1), (6, 6, 2, 6)]


def _image(H, W, C, seed=0):
    return np.random.default_rng(seed).normal(size=(H, W, C)).astype(np.float32)


def _torch_unfold(image, P):
    """F.unfold on (1, C, H, W) gives (1, C·P·P, N), channel slowest; reorder to (N, P·P·C)."""
    H, W, C = image.shape
    x = torch.from_numpy(image).permute(2, 0, 1)[None]  # (1, C, H, W)
    cols = F.unfold(x, kernel_size=P, stride=P)[0]  # (C·P·P, N)
    return cols.reshape(C, P, P, -1).permute(3, 1, 2, 0).reshape(-1, P * P * C).numpy()


def _tensor_unfold(image, P):
    """Tensor.unfold along rows, then columns: (H/P, W/P, C, P, P) -> (N, P·P·C)."""
    x = torch.from_numpy(image).unfold(0, P, P).unfold(1, P, P)  # (H/P, W/P, C, P, P)
    return x.permute(0, 1, 3, 4, 2).reshape(-1, P * P * image.shape[2]).numpy()


@pytest.mark.parametrize("H,W,C,P", SIZES)
def test_patchify_matches_torch_unfold(H, W, C, P):
    image = _image(H, W, C)
    patches = patchify(image, P)
    assert patches.shape == (H * W // P**2, P * P * C)
    np.testing.assert_array_equal(patches, _torch_unfold(image, P))
    np.testing.assert_array_equal(patches, _tensor_unfold(image, P))


@pytest.mark.parametrize("H,W,C,P", SIZES)
def test_unpatchify_undoes_patchify(H, W, C, P):
    image = _image(H, W, C, seed=1)
    np.testing.assert_array_equal(unpatchify(patchify(image, P), image.shape, P), image)
    patches = _image(H * W // P**2, P * P * C, 1, seed=2)[..., 0]
    np.testing.assert_array_equal(patchify(unpatchify(patches, (H, W, C), P), P), patches)


def test_patchify_by_hand():
    image = np.arange(16).reshape(4, 4, 1)
    assert patchify(image, 2).tolist() == [[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13],
                                           [10, 11, 14, 15]]
    # two channels: value = 100·channel + 10·row + column; inside a patch the channel runs fastest
    r, c, ch = np.meshgrid(np.arange(2), np.arange(4), np.arange(2), indexing="ij")
    image = 100 * ch + 10 * r + c  # (2, 4, 2)
    assert patchify(image, 2).tolist() == [[0, 100, 1, 101, 10, 110, 11, 111],
                                           [2, 102, 3, 103, 12, 112, 13, 113]]
    # P = 1: every pixel is a patch of C numbers
    np.testing.assert_array_equal(patchify(image, 1), image.reshape(8, 2))


def test_patchify_says_what_is_wrong():
    with pytest.raises(ValueError, match="multiples of 2"):
        patchify(np.zeros((5, 4, 3)), 2)
    with pytest.raises(ValueError, match="multiples of 3"):
        patchify(np.zeros((6, 4, 3)), 3)
    with pytest.raises(ValueError, match=r"\(H, W, C\)"):
        patchify(np.zeros((4, 4)), 2)
    with pytest.raises(ValueError, match="at least 1"):
        patchify(np.zeros((4, 4, 1)), 0)
    with pytest.raises(ValueError, match="4 patches of 12"):
        unpatchify(np.zeros((4, 11)), (4, 4, 3), 2)


def _covered(label, row, col):
    """Is the centre of pixel (row, col) inside the shape? Plain geometry, one pixel at a time."""
    y, x = row + 0.5, col + 0.5
    cy, cx = label.centre
    r = label.radius
    if label.kind == "circle":
        return np.hypot(y - cy, x - cx) <= r
    if label.kind == "square":
        return cy - r <= y <= cy + r and cx - r <= x <= cx + r
    # triangle: apex above the centre, base below; inside when on the inner side of all 3 edges
    corners = [(cy - r, cx), (cy + r, cx + r), (cy + r, cx - r)]
    sides = []
    for (y0, x0), (y1, x1) in zip(corners, corners[1:] + corners[:1]):
        sides.append((x1 - x0) * (y - y0) - (y1 - y0) * (x - x0))
    return all(s >= 0 for s in sides) or all(s <= 0 for s in sides)


@pytest.mark.parametrize("seed", range(12))
def test_the_shape_is_where_its_label_says(seed):
    image, label = shapes_image(seed, size=24, noise=0.0)
    inside = np.array([[_covered(label, i, j) for j in range(24)] for i in range(24)])
    assert inside.sum() > 10  # a visible shape
    colour = np.array(label.colour, dtype=np.float32)
    np.testing.assert_array_equal(image[inside], np.broadcast_to(colour, (inside.sum(), 3)))
    assert (image[~inside] == 0).all()
    # the whole shape lies on the canvas: its centre is at least a radius from every edge
    assert label.radius <= min(*label.centre, 24 - label.centre[0], 24 - label.centre[1])
    assert label.index == SHAPES.index(label.kind) and label.kind in SHAPES


def test_noise_leaves_the_label_and_stays_near_the_colour():
    clean, label = shapes_image(5, noise=0.0)
    noisy, noisy_label = shapes_image(5, noise=0.1)
    assert noisy_label == label
    inside = clean.any(-1)  # (32, 32): every drawn channel is at least 0.35
    np.testing.assert_allclose(noisy[inside].mean(0), label.colour, atol=0.03)
    assert noisy[~inside].mean() < 0.06  # half-normal noise clipped at 0: mean 0.1·√(2/π)/2
    assert 0.0 <= noisy.min() and noisy.max() <= 1.0 and noisy.dtype == np.float32


def test_same_seed_same_image_and_label():
    a, la = shapes_image(42)
    b, lb = shapes_image(42)
    np.testing.assert_array_equal(a, b)
    assert la == lb
    c, lc = shapes_image(43)
    assert not np.array_equal(a, c)
    assert shapes_image(42, size=48)[0].shape == (48, 48, 3)


def test_fixing_one_property_keeps_the_others():
    _, drawn = shapes_image(9)
    for kind in SHAPES:
        _, fixed = shapes_image(9, kind=kind)
        assert (fixed.kind, fixed.centre, fixed.radius, fixed.colour) == (
            kind, drawn.centre, drawn.radius, drawn.colour)
    _, red = shapes_image(9, colour=(1, 0, 0))
    assert red.colour == (1.0, 0.0, 0.0) and red.centre == drawn.centre
    image, placed = shapes_image(9, kind="circle", centre=(16, 16), radius=4, noise=0.0)
    assert placed == ShapeLabel("circle", (16.0, 16.0), 4.0, drawn.colour)
    assert image[15, 15].tolist() == list(np.float32(drawn.colour)) and (image[0, 0] == 0).all()


def test_every_class_is_drawn_about_as_often():
    counts = {k: 0 for k in SHAPES}
    for seed in range(300):
        counts[shapes_image(seed, size=8)[1].kind] += 1
    assert all(80 <= c <= 120 for c in counts.values()), counts


def test_generator_says_what_is_wrong():
    with pytest.raises(ValueError, match="unknown shape"):
        shapes_image(0, kind="star")
    with pytest.raises(ValueError, match="radius"):
        shapes_image(0, radius=20)
    with pytest.raises(ValueError, match="noise"):
        shapes_image(0, noise=-1)


def _patchify_by_loops(image, P):
    """The definition written out with loops: patch n = grid row n // (W/P), column n % (W/P);
    inside it pixel row i, pixel column j, channel c sit at (i·P + j)·C + c."""
    H, W, C = image.shape
    cols = W // P
    out = np.zeros((H * W // P**2, P * P * C), dtype=image.dtype)
    for n in range(out.shape[0]):
        r0, c0 = (n // cols) * P, (n % cols) * P
        for i in range(P):
            for j in range(P):
                for c in range(C):
                    out[n, (i * P + j) * C + c] = image[r0 + i, c0 + j, c]
    return out


@pytest.mark.parametrize("H,W,C,P", SIZES)
def test_patchify_matches_the_definition_by_loops(H, W, C, P):
    image = _image(H, W, C, seed=3)
    np.testing.assert_array_equal(patchify(image, P), _patchify_by_loops(image, P))


@pytest.mark.parametrize("H,W,C,P", SIZES + [(16, 16, 3, 2), (16, 16, 3, 4), (16, 16, 3, 16)])
def test_n_is_hw_over_p_squared(H, W, C, P):
    from tfviz.analysis.vision import patch_grid

    grid = patch_grid(H, W, C, P)
    counted = len(patchify(_image(H, W, C), P))  # count the patches the cut really makes
    assert grid.fits and grid.n == H * W // P**2 == counted == grid.rows * grid.cols
    assert grid.patch_dim == P * P * C == patchify(_image(H, W, C), P).shape[1]


def test_patch_size_table_and_a_size_that_does_not_fit():
    from tfviz.analysis.vision import patch_grid, patch_size_table

    rows = patch_size_table(16, 16, 3, [1, 2, 4, 8, 16])
    for row in rows:
        patches = patchify(_image(16, 16, 3), row["P"])
        assert (row["N"], row["P²·C"]) == patches.shape
        assert row["N·P²·C"] == patches.size == 16 * 16 * 3  # every number lands in one patch
        assert row["attention scores per head"] == (row["N"] + 1) ** 2  # with the class token
    assert [r["N"] for r in rows] == [256, 64, 16, 4, 1]
    assert not patch_grid(16, 16, 3, 3).fits and patch_grid(16, 16, 3, 3).n == 0


def test_shapes_dataset_is_the_generator_seed_by_seed():
    from tfviz.data.shapes import FIRST_SEED, noise_level, shapes_dataset

    images, labels = shapes_dataset(6, split="heldout")
    for i in range(6):
        seed = FIRST_SEED["heldout"] + i
        image, label = shapes_image(seed, 16, noise=noise_level(seed))
        np.testing.assert_array_equal(images[i], image)
        assert labels[i] == label.index
    assert 0.0 <= min(noise_level(s) for s in range(50)) and max(noise_level(s) for s in range(50)) <= 0.15
    with pytest.raises(ValueError, match="split"):
        shapes_dataset(1, split="test")
