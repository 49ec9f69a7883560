"""Lessons 9-12: residual + LayerNorm, feed-forward, mixture of experts, parameter counts."""

from __future__ import annotations

import math

from tfviz import reference

from ..spec import KnownMistake, NumericQuestion, Question, choice, softmax, softmax_first

BLOCK: tuple[Question, ...] = (
    choice(
        id="residual-formula",
        lesson=9,
        prompt="What does a residual connection around a sublayer compute?",
        right="x + Sublayer(x)",
        explanation="The sublayer only adds a correction to its input. The identity path lets "
                    "gradients flow straight back (its derivative is 1) and lets a layer do "
                    "nearly nothing when that is best.",
        wrong={
            "Sublayer(x) · x (element-wise)":
                "A product would make the output vanish wherever x is small and gives no clean "
                "identity path for gradients.",
            "Sublayer(x) - x": "A residual connection adds the input back. Subtracting it would "
                               "remove the very information the shortcut is meant to carry "
                               "forward.",
            "Sublayer(Sublayer(x))": "Applying the sublayer twice just makes a deeper function "
                                     "with no shortcut. The point of the residual is the '+ x' "
                                     "that lets the input pass straight through.",
        },
    ),
    NumericQuestion(
        id="layernorm-value",
        lesson=9,
        prompt="LayerNorm with γ = 1, β = 0 and ε ≈ 0 is applied to the token vector "
               "x = (2, 4, 6, 8). What is the first entry of the output?",
        answer=(2 - 5) / math.sqrt(((2 - 5) ** 2 + (4 - 5) ** 2 + (6 - 5) ** 2 + (8 - 5) ** 2) / 4),
        tolerance=0.01,
        unit="a decimal, e.g. -0.5",
        explanation="Mean μ = 5; variance σ² = (9 + 1 + 1 + 9)/4 = 5; output = (2 - 5)/√5 "
                    "≈ -1.342.",
        mistakes=(
            KnownMistake(-3 / math.sqrt(20 / 3),
                         "That divides the squared deviations by d - 1 = 3; LayerNorm divides "
                         "by d = 4."),
            KnownMistake(-3 / 5, "That divides by the variance; divide by its square root."),
            KnownMistake(2 / math.sqrt(5), "The mean was not subtracted first."),
        ),
    ),
    choice(
        id="layernorm-axis",
        lesson=9,
        prompt="Over which numbers does LayerNorm compute its mean and standard deviation?",
        right="The d features of one token vector, separately for each token",
        explanation="Each token vector is normalised on its own, so the result does not depend "
                    "on the other sentences in the batch or on the batch size.",
        wrong={
            "One feature across all tokens in the batch":
                "That is BatchNorm, which needs batch statistics and behaves differently at "
                "training and inference time.",
            "All numbers of the whole batch at once":
                "One mean for the whole batch would make each token's result depend on every "
                "other sentence in it. LayerNorm keeps each token to itself.",
            "The n attention weights of a query":
                "Attention weights are already normalised by their softmax. LayerNorm works on "
                "the token vectors of the residual stream.",
        },
    ),
    choice(
        id="pre-ln-formula",
        lesson=9,
        prompt="Which formula describes the attention sublayer of a pre-LN transformer block?",
        right="x + SelfAttn(LN(x))",
        explanation="Pre-LN normalises the input of the sublayer and adds the result to the "
                    "untouched x, so the residual stream runs from embeddings to the last layer "
                    "with nothing in between but additions.",
        wrong={
            "LN(x + SelfAttn(x))": "That is post-LN, the layout of the original paper and of our "
                                   "sources: the normalisation sits on the residual path, after "
                                   "the addition.",
            "LN(SelfAttn(x))": "Without the '+ x' there is no residual connection at all.",
            "SelfAttn(x + LN(x))": "Here the addition happens before attention, so nothing "
                                   "bypasses attention. In pre-LN the residual addition comes "
                                   "last: x + SelfAttn(LN(x)).",
        },
    ),
    choice(
        id="why-pre-ln",
        lesson=9,
        prompt="Why do most deep modern transformers put LayerNorm before the sublayer (pre-LN) "
               "instead of after the residual addition (post-LN)?",
        right="Gradients reach early layers through a clean identity path, so deep stacks train "
              "stably, with little or no learning-rate warm-up",
        explanation="In post-LN every layer's output passes through a normalisation on the main "
                    "path, which distorts gradients in deep stacks and makes training sensitive "
                    "to the warm-up schedule. Pre-LN keeps the sum x + ... untouched.",
        wrong={
            "Pre-LN has fewer parameters":
                "Not fewer: both layouts have the same LayerNorms inside each block, and pre-LN "
                "usually adds one more after the last block, because its residual stream is "
                "never normalised on the way. The gain is in how well deep stacks train, not in "
                "size.",
            "Pre-LN removes the need for residual connections":
                "Pre-LN relies on the residual connections; they are what carries the clean "
                "path.",
            "Pre-LN makes attention order-aware":
                "Word order comes from position information (added vectors, RoPE or ALiBi). "
                "Where the LayerNorm sits has nothing to do with it.",
        },
    ),
    NumericQuestion(
        id="rmsnorm-value",
        lesson=9,
        prompt="RMSNorm, with γ = 1 and ε left out, normalises the vector x = (1, −1, 1, 3). "
               "What is the last entry of its output?",
        answer=float(reference.rms_norm([1.0, -1.0, 1.0, 3.0], eps=0.0).output[-1]),
        tolerance=0.005,
        unit="a number, e.g. 0.25",
        explanation="The mean of the squares is (1 + 1 + 1 + 9) / 4 = 3, so RMS(x) = √3 = 1.732, "
                    "and the last entry becomes 3 / 1.732 = 1.732. Nothing is subtracted first.",
        mistakes=(
            KnownMistake(float(reference.layer_norm([1.0, -1.0, 1.0, 3.0], eps=0.0).output[-1]),
                         "That is LayerNorm: it takes the mean 1 away first and divides by the "
                         "standard deviation √2. RMSNorm does neither."),
            KnownMistake(3 / math.sqrt(12), "That divides by the root of the sum of the squares "
                                            "(√12); RMSNorm averages them first (√(12 / 4))."),
            KnownMistake(3 / 3, "That divides by the mean square 3 itself; RMSNorm divides by "
                                "its square root."),
        ),
    ),
    choice(
        id="rmsnorm-vs-layernorm",
        lesson=9,
        prompt="What does RMSNorm, the norm of Llama, Mistral and Qwen, leave out of LayerNorm?",
        right="Taking the mean away, and the shift β",
        explanation="RMSNorm divides x by its root mean square √(mean(x²) + ε) and multiplies "
                    "by γ. Nothing is subtracted, so each vector keeps its direction, and no β is "
                    "added: a little less to compute and half the parameters, and models train "
                    "about as well with it.",
        wrong={
            "The division: it only takes the mean away":
                "The division is the part RMSNorm keeps: it is what holds every vector's size "
                "in check. What goes is the centring.",
            "The learned scale γ":
                "γ stays: the output is x / RMS(x) · γ. The learned shift β is the one that "
                "goes.",
            "The ε under the root":
                "ε stays, for the same reason as in LayerNorm: a vector of zeros would "
                "otherwise divide by zero.",
        },
    ),
    choice(
        id="why-ffn",
        lesson=10,
        prompt="Why does each transformer block need a feed-forward network after attention?",
        right="Attention only forms weighted averages of value vectors; the FFN adds a "
              "non-linear transformation of each token",
        explanation="Given the weights, attention's output is a linear mix of values. FFN(x) = "
                    "max(0, xW1 + b1)W2 + b2 applies a ReLU in a wider hidden layer to each "
                    "position, giving the block its non-linear processing power.",
        wrong={
            "The FFN lets tokens exchange information with each other":
                "The FFN works on each position separately with the same weights; mixing between "
                "tokens is attention's job.",
            "The FFN applies the causal mask":
                "The causal mask belongs to attention, where it hides the scores of later "
                "tokens. The FFN never looks at other tokens, so it has nothing to mask.",
            "The FFN turns the vectors into vocabulary probabilities":
                "That is the LM head at the very top, not the FFN inside each block.",
        },
    ),
    NumericQuestion(
        id="ffn-forward",
        lesson=10,
        prompt="In FFN(x) = max(0, xW1 + b1)W2 + b2, suppose xW1 + b1 = (1.5, -2, 0.5), "
               "W2 is the column (2, 3, -4) and b2 = 0.5. What is FFN(x)?",
        answer=max(0, 1.5) * 2 + max(0, -2) * 3 + max(0, 0.5) * -4 + 0.5,
        tolerance=0.01,
        unit="a number",
        explanation="ReLU zeroes the negative entry: (1.5, 0, 0.5). Then 1.5·2 + 0·3 + "
                    "0.5·(-4) + 0.5 = 3 - 2 + 0.5 = 1.5.",
        mistakes=(
            KnownMistake(1.5 * 2 + -2 * 3 + 0.5 * -4 + 0.5,
                         "The ReLU was skipped: -2 must become 0 before multiplying by W2."),
            KnownMistake(1.5 * 2 + 0.5 * -4, "The bias b2 = 0.5 is missing."),
        ),
    ),
    NumericQuestion(
        id="swiglu-unit",
        lesson=10,
        prompt="In a SwiGLU feed-forward block, one hidden unit reads the gate value g = 2 "
               "(from x W_gate) and the up value u = −1 (from x W_up). What does the unit pass "
               "on to W_down? SiLU(z) = z · σ(z) = z / (1 + e^−z).",
        answer=float(reference.silu(2.0) * -1.0),
        tolerance=0.005,
        unit="a number, e.g. 0.5",
        explanation="The gate is bent, the up value is not: SiLU(2) = 2 / (1 + e^−2) = 1.762, "
                    "times u = −1 gives −1.762.",
        mistakes=(
            KnownMistake(-1.0 / (1.0 + math.exp(-2.0)), "That multiplies u by the sigmoid "
                                                         "σ(2) = 0.881; SiLU(2) is 2 · σ(2)."),
            KnownMistake(float(2.0 * reference.silu(-1.0)),
                         "That bends the up value, 2 · SiLU(−1); SiLU belongs on the gate."),
            KnownMistake(float(reference.silu(-2.0)), "That applies SiLU after multiplying, "
                                                      "SiLU(2 · (−1)); bend the gate first."),
            KnownMistake(-2.0, "That is g · u with no SiLU at all; the gate goes through SiLU "
                               "first."),
        ),
    ),
    choice(
        id="swiglu-matrices",
        lesson=10,
        prompt="How many weight matrices does a SwiGLU feed-forward block have, and where "
               "does its SiLU act?",
        right="Three (W_gate, W_up, W_down); SiLU bends x W_gate, which then multiplies x W_up",
        explanation="FFN(x) = (SiLU(x W_gate) ⊙ x W_up) W_down. Two projections go up to d_ff: "
                    "one is bent by SiLU and acts as a gate on the other, unit by unit, and the "
                    "product comes back down through W_down. That is why such blocks use a "
                    "smaller d_ff (about 8/3 · d) for the same parameter count.",
        wrong={
            "Two (W_1, W_2), with SiLU between them, as in the original block":
                "That is the plain block with SiLU for ReLU. The gated block adds a third "
                "matrix, whose bent output multiplies the other projection.",
            "Three; SiLU bends both x W_gate and x W_up before they are multiplied":
                "Only the gate is bent. The up projection passes as it is and is scaled by "
                "SiLU(x W_gate).",
            "Three; SiLU is applied last, after W_down":
                "W_down is the last, linear step, whose output is added to the residual "
                "stream. SiLU acts on the gate, before the product.",
        },
    ),
    choice(
        id="moe-top1-experts",
        lesson=11,
        prompt="A Switch (top-1) mixture-of-experts layer has 8 expert FFNs. How many of them "
               "run for a single token?",
        right="1",
        explanation="The router picks the top-k experts, and k = 1 for a Switch layer. The layer "
                    "has 8 experts' worth of parameters but each token pays for one FFN: "
                    "capacity grows, compute per token does not.",
        wrong={
            "8": "Running all experts would be a dense mixture; the point of sparse MoE is that "
                 "most experts stay idle for any given token.",
            "2": "Top-2 routing is common too, but with k = 1 (Switch) it is one expert.",
            "4": "Four would be top-4 routing, half of the experts here. A Switch layer sends "
                 "each token to its single best expert.",
        },
    ),
    NumericQuestion(
        id="moe-gate-value",
        lesson=11,
        prompt="A router gives logits h(x) = (2, 1, 0, 0) for 4 experts. Using top-1 routing "
               "with y = Σ_{i∈T} p_i(x) E_i(x), where p is the softmax over all experts, what "
               "gate value multiplies the chosen expert's output?",
        answer=softmax_first(2, 1, 0, 0),
        tolerance=0.005,
        unit="a number between 0 and 1",
        explanation="Expert 1 has the largest logit. Its gate is e² / (e² + e + 1 + 1) "
                    "≈ 7.389 / 12.107 ≈ 0.610; the output is 0.610 · E_1(x).",
        mistakes=(
            KnownMistake(2 / 3, "That divides the logits by their sum; the gate is a softmax "
                                "of the logits."),
            KnownMistake(1.0, "That renormalises over the chosen set; in this formula the gate "
                              "keeps its softmax value over all experts."),
        ),
    ),
    NumericQuestion(
        id="moe-dropped-tokens",
        lesson=11,
        prompt="A batch of 64 tokens is routed to 8 experts with capacity factor 1.25, so each "
               "expert takes at most 1.25 · 64/8 tokens. The router sends 14 tokens to expert "
               "3. How many of them are dropped (skip the expert)?",
        answer=14 - 1.25 * 64 / 8,
        tolerance=0.5,
        unit="a whole number",
        explanation="Capacity = 1.25 · 64 / 8 = 10 tokens. The 4 tokens beyond that are not "
                    "processed by the expert; they continue only through the residual "
                    "connection.",
        mistakes=(
            KnownMistake(14 - 64 / 8, "That ignores the capacity factor: capacity is "
                                      "1.25 · 8 = 10, not 8."),
            KnownMistake(1.25 * 64 / 8, "10 is the capacity, not the number dropped."),
        ),
    ),
    choice(
        id="moe-load-balancing",
        lesson=11,
        prompt="Why do mixture-of-experts models add a load-balancing loss for the router?",
        right="Without it, the router tends to send most tokens to a few experts, which overflow "
              "and drop tokens while others stay idle and untrained",
        explanation="Early favourites get more tokens, train faster and win even more tokens. "
                    "The auxiliary loss rewards spreading the batch's tokens "
                    "(and router probability) evenly, so every expert is used and capacity is "
                    "not exceeded.",
        wrong={
            "To make every token use all experts equally":
                "Balance is measured over the batch, not per token: each token should still go "
                "to its top-k experts only, or the layer would lose its sparsity.",
            "To keep the experts' weights identical":
                "Identical experts would be useless; the aim is even load, with specialised "
                "experts.",
            "To reduce the number of experts during training":
                "The number of experts is fixed when the model is built. The loss only spreads "
                "the tokens more evenly across them.",
        },
    ),
    NumericQuestion(
        id="encoder-layer-weights",
        lesson=12,
        prompt="One encoder layer has d_model = 512 and d_ff = 2048, with four attention "
               "matrices (W^Q, W^K, W^V, W^O, each 512 × 512) and the two FFN matrices. "
               "Ignoring biases and LayerNorm, how many weights does it have?",
        answer=4 * 512 * 512 + 2 * 512 * 2048,
        tolerance=0.5,
        unit="a whole number (commas allowed)",
        explanation="Attention: 4 · 512² = 1,048,576. FFN: 512·2048 + 2048·512 = 2,097,152. "
                    "Total 3,145,728: the FFN holds two thirds of the layer.",
        mistakes=(
            KnownMistake(3 * 512 * 512 + 2 * 512 * 2048, "W^O is missing: there are four "
                                                         "512 × 512 attention matrices."),
            KnownMistake(4 * 512 * 512, "That counts attention only; add the FFN's "
                                        "2 · 512 · 2048."),
            KnownMistake(2 * 512 * 2048, "That counts the FFN only; add attention's 4 · 512²."),
        ),
    ),
)
