"""Goldens and references for LayerNorm, MoE, beam search and BPE exercises."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from collections import Counter

from tfviz.exercises import ex_beam, ex_bpe
from tfviz.exercises.beam import all_paths, beam_search
from tfviz.exercises.ex_beam import SOURCE_P_A, tree_of
from tfviz.exercises.fmt import fmt_number
from tfviz.exercises.ex_moe import route
from tfviz.exercises.registry import make_instance


def test_layernorm_by_hand():
    # x = [2,4,6,8]: μ = 5; deviations -3,-1,1,3; σ² = (9+1+1+9)/4 = 5; σ = 2.23607
    # x̂ = [-1.34164, -0.44721, 0.44721, 1.34164]
    # γ = [1,1,2,0.5], β = [0,1,0,-1] -> [-1.34164, 0.55279, 0.89443, -0.32918]
    inst = make_instance("layernorm")
    assert inst.field("mean").expected == 5
    assert inst.field("std").expected == pytest.approx(2.23607, abs=1e-5)
    assert inst.field("output").expected == pytest.approx([-1.34164, 0.55279, 0.89443, -0.32918],
                                                          abs=1e-5)
    # n - 1 in the variance: σ = √(20/3) = 2.58199
    assert inst.check("std", "2.58").mistake == "sample_var"
    assert inst.check("std", "5").mistake == "variance"


@pytest.mark.parametrize("seed", range(10))
def test_layernorm_matches_torch(seed):
    inst = make_instance("layernorm", seed)
    x, g, b = (torch.tensor(np.asarray(inst.data[k])) for k in ("x", "gamma", "beta"))
    ref = F.layer_norm(x, x.shape, g, b, eps=0.0)
    assert np.allclose(inst.field("output").expected, ref.numpy(), atol=1e-9)


def test_moe_by_hand():
    # h = W_r x = [1, 2, 3, -1]; e^h = 2.71828, 7.38906, 20.08554, 0.36788; sum 30.56076
    # p = [0.08895, 0.24178, 0.65723, 0.01204]; top 2: experts 3 and 2
    # y = 0.65723·[2,-1] + 0.24178·[0,2] = [1.31446, -0.17367]
    inst = make_instance("moe-gate")
    assert inst.field("logits").expected.tolist() == [1, 2, 3, -1]
    assert inst.field("gates").expected == pytest.approx([0.08895, 0.24178, 0.65723, 0.01204],
                                                         abs=1e-5)
    assert sorted(inst.field("chosen").expected.tolist()) == [2, 3]
    assert inst.field("output").expected == pytest.approx([1.31446, -0.17367], abs=1e-5)
    assert inst.check("chosen", "2, 3").correct and inst.check("chosen", "3 2").correct
    # rescaled gates 0.73110, 0.26890 -> [1.46221, -0.19331]
    assert inst.check("output", "1.46 -0.19").mistake == "renormalized"


def test_moe_route_matches_torch_topk():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, W, E = rng.normal(size=3), rng.normal(size=(5, 3)), rng.normal(size=(5, 2))
        for k, renorm in ((1, False), (2, False), (2, True)):
            logits, gates, chosen, weights, y = route(x, W, E, k, renorm)
            p = torch.softmax(torch.tensor(W @ x), -1)
            top_p, top_i = p.topk(k)
            if renorm:
                top_p = top_p / top_p.sum()
            assert chosen.tolist() == top_i.tolist()
            assert np.allclose(y, (top_p[:, None] * torch.tensor(E)[top_i]).sum(0).numpy())


def test_beam_by_hand():
    # step 2: AA .2·.2 = .04, AB .2·.8 = .16, BA .8·.55 = .44, BB .8·.45 = .36 -> keep BA, BB
    # step 3: BAA .44·.45 = .198, BAB .44·.55 = .242, BBA .36·.9 = .324, BBB .036 -> BBA
    # greedy: B (.8), then A (.55), then B (.55) -> BAB .242
    tree = tree_of(SOURCE_P_A)
    run = beam_search(tree, 3, 2)
    assert [s for s, _ in run.kept[1]] == ["BA", "BB"]
    assert run.best == ("BBA", pytest.approx(0.324))
    assert beam_search(tree, 3, 1).best == ("BAB", pytest.approx(0.242))
    assert all_paths(tree, 3)[0][0] == "BBA"
    inst = make_instance("beam-search")
    assert inst.check("sequence", "B B A").correct and inst.check("kept", "BB, BA").correct
    assert inst.check("sequence", "bab").mistake == "greedy"
    assert inst.check("probability", "2.15").mistake == "added"  # .8 + .45 + .9


@pytest.mark.parametrize("seed", range(8))
def test_beam_variants_beat_greedy(seed):
    inst = make_instance("beam-search", seed)
    tree = inst.data["tree"]
    assert beam_search(tree, 3, 2).best[1] > beam_search(tree, 3, 1).best[1]
    for probs in tree.values():
        assert sum(probs.values()) == pytest.approx(1.0)


def test_bpe_by_hand():
    # tea ×4, team ×3, steam ×2, meat ×5, mat ×2 with </w> after each word
    # (e,a): tea 4 + team 3 + steam 2 + meat 5 = 14  -> "ea"
    # (t,ea): tea 4 + team 3 + steam 2 = 9; (t,</w>): meat 5 + mat 2 = 7 -> "tea"
    # then (t,</w>) 7 beats (ea,t) 5 and (m,</w>) 5 -> "t</w>"
    inst = make_instance("bpe-merges")
    assert inst.field("merges").expected == ("ea", "tea", "t</w>")
    assert inst.field("counts").expected.tolist() == [14, 9, 7]
    assert inst.check("merges", "ea tea t_").correct
    assert inst.check("merges", "ea, tea, m_").mistake == "ignore_freq"
    assert inst.check("merges", "ea te at").mistake == "no_recount"
    assert inst.check("merges", "ea tea eat").mistake == "no_eow"


# --------------------------------------------------- worked-solution text, checked by its numbers

def _greedy(tree: dict, steps: int) -> str:
    """Greedy decoding, written out again: the likeliest next token, every time."""
    seq = ""
    for _ in range(steps):
        seq += max(tree[seq], key=tree[seq].get)
    return seq


# A tree (ours) where greedy parts from beam search at the first token: P(A) .6 > P(B) .4, but
# B A A = .4·.95·.9 = .342 beats greedy's A B A = .6·.65·.8 = .312.
FIRST_TOKEN_SPLIT = (0.6, 0.35, 0.95, 0.85, 0.8, 0.9, 0.45)


@pytest.mark.parametrize("case", ["source", "first-token", *range(6)])
def test_beam_compare_step_says_where_greedy_parts(case):
    if case == "source":
        inst = make_instance("beam-search")
    elif case == "first-token":
        inst = ex_beam.build(FIRST_TOKEN_SPLIT, None)
    else:
        inst = make_instance("beam-search", case)
    tree = inst.data["tree"]
    greedy, (beam,) = _greedy(tree, 3), inst.field("sequence").expected
    split = next(i for i in range(3) if greedy[i] != beam[i])  # 0-based
    prefix = greedy[:split]
    text = inst.steps[-1].explanation
    assert "early choice" not in text and f"ends with {greedy} " in text
    if split == 0:
        assert "part at the very first token" in text
    else:
        assert f"Both start with {prefix}; they part at step {split + 1}," in text
    p_greedy, p_beam = tree[prefix][greedy[split]], tree[prefix][beam[split]]
    assert p_greedy > p_beam
    assert (f"greedy takes {greedy[split]} ({fmt_number(p_greedy)})" in text
            and f"takes the less likely {beam[split]} ({fmt_number(p_beam)})" in text)
    if case == "source":
        assert split == 1 and prefix == "B"  # B, then greedy A (.55) and beam B (.45)
    if case == "first-token":
        assert split == 0 and (greedy, beam) == ("ABA", "BAA")


def _pair_counts(words: dict[str, list[str]], freqs: dict[str, int]) -> Counter:
    counts: Counter = Counter()
    for word, symbols in words.items():
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += freqs[word]
    return counts


def test_bpe_next_best_keeps_every_tied_pair():
    # source corpus, before merge 3: (t,</w>) 7 wins; (ea,t) meat 5, (m,</w>) team 3 + steam 2,
    # (m,ea) meat 5, (tea,m) team 3 + steam 2: four pairs tied at 5, all of them named
    inst = make_instance("bpe-merges")
    text = inst.steps[3].explanation
    assert "Next best: 5 for (ea, t), (m, </w>), (m, ea) and (tea, m)." in text
    # two pairs tied at the third place: both appear, though that names four pairs
    counts = {("a", "b"): 9, ("b", "c"): 7, ("c", "d"): 6, ("d", "e"): 5, ("e", "f"): 5,
              ("f", "g"): 4}
    assert ex_bpe.next_best(counts, ("a", "b")) == \
        "7 for (b, c), then 6 for (c, d), then 5 for (d, e) and (e, f)"


@pytest.mark.parametrize("seed", [None, *range(6)])
def test_bpe_next_best_lists_whole_count_groups(seed):
    inst = make_instance("bpe-merges", seed)
    freqs = inst.data["corpus"]
    words = {w: [*w, "</w>"] for w in freqs}
    for step in inst.steps[1:-1]:
        counts = _pair_counts(words, freqs)
        (a, b), top = step.values["pair"], step.values["count"]
        assert counts[(a, b)] == top == max(counts.values())
        named = step.explanation.split("Next best: ")[1].split(". Glue")[0]
        for group in named.split(", then "):
            c = int(group.split(" for ")[0])
            tied = sorted(p for p, n in counts.items() if n == c and p != (a, b))
            for x, y in tied:  # every pair with a listed count is named
                assert f"({x}, {y})" in group, (seed, c, (x, y))
        words = {w: _merge(symbols, (a, b)) for w, symbols in words.items()}


def _merge(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    out, i = [], 0
    while i < len(symbols):
        if tuple(symbols[i:i + 2]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out
