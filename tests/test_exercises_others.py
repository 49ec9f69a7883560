"""Goldens and references for LayerNorm, MoE, beam search and BPE exercises."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from tfviz.exercises.beam import all_paths, beam_search
from tfviz.exercises.ex_beam import SOURCE_P_A, tree_of
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
