"""The training lab: pick a task and an architecture, train it here, watch attention form,
compare runs and the ready-made design choices. Training runs in the server's background queue
(tfviz.lab.runs); this page only submits, polls and draws."""
import streamlit as st

from tfviz.lab.comparisons import COMPARISONS, comparison_table
from tfviz.lab.induction import INDUCTION_HEAD, induction_summary
from tfviz.lab.opened import lab_lesson_links
from tfviz.lab.runs import LabBusy
from tfviz.lab.settings import LAB_POSITIONALS, LIMITS, LabSettings, differing, label, value_text
from tfviz.lab.tasks import TASK_NAMES, TASKS
from tfviz.ui import lab as ul
from tfviz.ui import own_model
from tfviz.ui.errors import safe_fragment
from tfviz.ui.lessons import by_url
from tfviz.ui.present import step
from tfviz.ui.views import view_value
from tfviz.ui.code import show_code
from tfviz.ui.drawing import vega
from tfviz.ui.pickers import stable_select
from tfviz.ui.tables import table
from tfviz.viz import interpret as iv
from tfviz.viz import lab as lv

LR_CHOICES = (1e-4, 3e-4, 1e-3, 3e-3, 5e-3, 1e-2, 2e-2, 3e-2)
STEP_CHOICES = (10, 25, 50, 100, 200, 300, 400, 500, 600, 800, 1000, 1500)

runner = ul.lab_runner()
sid = ul.session_id()
ul.tidy(runner)
ul.start_state()

st.title("Training lab")
st.markdown(
    "Train a small transformer here, on a task of your choice, and watch it learn: the loss "
    "falls, the share of held-out examples it solves climbs, and its attention maps sharpen "
    "from a blur into a pattern. Then change one design choice and train again: the curves "
    "side by side show what the √d_k scale, positions, LayerNorm's place, residual connections, "
    "heads and experts are for. Each task's default setting reaches 95% held-out accuracy in well "
    "under a minute.")

with step("1 · The task"):
    task_key = st.selectbox("Task", TASK_NAMES, key="lab_task", format_func=lambda k: TASKS[k].title,
                            on_change=ul.load_defaults)
    task = TASKS[task_key]
    st.markdown(task.blurb)
    example = task.examples(1, seed=7, split="heldout")[0]
    ids, targets = task.encode(example)
    st.caption("What the model reads: " + " ".join(task.vocab.decode(ids)) + " — scored on: "
               + " ".join(task.vocab.tokens[t] for t in targets if t >= 0)
               + f". Guessing would solve at most {task.chance:.2%} of the held-out examples.")

with step("2 · The architecture"):
    defaults = LabSettings.default(task_key)
    c1, c2, c3 = st.columns(3)
    ul.whole("lab_layers", *LIMITS["n_layers"], defaults.n_layers)
    c1.slider("Layers", *LIMITS["n_layers"], key="lab_layers")
    stable_select("Heads", [1, 2, 4], "lab_heads", default=defaults.n_heads, slider=True, where=c1)
    stable_select("d_model (width)", [16, 32, 64, 128], "lab_d_model", default=defaults.d_model,
                  slider=True, where=c1)
    stable_select("Positions", LAB_POSITIONALS, "lab_pos", default=defaults.positional, where=c2,
                  format_func=lambda p: value_text("positional", p),
                  help="none adds nothing to the tokens: an encoder is then blind to order, while a "
                       "decoder's causal mask still hints at it (a token sees how many came before).")
    ul.boolean("lab_scale", defaults.scale)
    c2.toggle("Divide scores by √d_k", key="lab_scale")
    stable_select("LayerNorm", ["pre", "post"], "lab_norm", default=defaults.norm, where=c2,
                  format_func=lambda n: f"{n}-LN")
    ul.boolean("lab_residual", defaults.residual)
    c2.toggle("Residual connections", key="lab_residual",
              help="Off, each sublayer's output replaces its input instead of being added to it: "
                   "no skip path around attention and the feed-forward block.")
    ul.boolean("lab_ffn", defaults.ffn)
    c3.toggle("Feed-forward sublayer", key="lab_ffn",
              help="Off, each block is attention alone: the induction task's model, where only "
                   "heads write into the residual stream.")
    if st.session_state["lab_ffn"]:
        experts = stable_select("Feed-forward", [0, 2, 4, 8], "lab_experts", default=0, where=c3,
                                format_func=lambda e: value_text("n_experts", e) + (" (mixture)" if e else ""))
    else:
        experts = st.session_state["lab_experts"] = 0
    if experts:
        ul.whole("lab_topk", 1, experts, 1)
        c3.slider("Experts per token (top-k)", 1, experts, key="lab_topk")
    else:
        st.session_state["lab_topk"] = 1
    stable_select("Learning rate", LR_CHOICES, "lab_lr", default=defaults.lr, slider=True, where=c3,
                  format_func=lambda x: f"{x:g}")
    stable_select("Steps", STEP_CHOICES, "lab_steps", default=defaults.steps, slider=True, where=c3)
    ul.whole("lab_seed", 0, 10_000, 0)
    c3.number_input("Seed", 0, 10_000, key="lab_seed")
    st.button("Back to this task's default", key="lab_reset", on_click=ul.load_defaults)

    settings, problem = ul.chosen_settings(task_key)
    if settings is not None:
        st.caption(f"Will train: {settings.describe()}. Head size d_head = {settings.d_head}.")
    else:
        st.warning(problem)

with step("3 · Train"):
    job = runner.status(sid)
    busy = job is not None and not job.finished
    b1, b2, _ = st.columns([1, 1, 4])
    if b1.button("Train", key="lab_train", type="primary", disabled=settings is None or busy):
        try:
            job = ul.submit(runner, sid, settings)
            busy = True
        except (LabBusy, ValueError) as err:
            st.warning(str(err))
    if b2.button("Stop", key="lab_stop", disabled=not busy):
        runner.stop(sid)
        job = runner.status(sid)

    @safe_fragment(run_every=1.0 if busy else None)
    def progress() -> None:
        now = runner.status(sid)
        running, queued = runner.counts()
        st.caption(f"On this server now: {running} training, {queued} waiting.")
        if now is None:
            st.info("Nothing trained yet: press Train.")
            return
        if now.state == "queued":
            st.info(f"Waiting for a free place: you are number {now.position} in the queue. "
                    "The server trains two models at a time.")
        run = now.current
        n = len(now.runs)
        which = f"run {now.runs.index(run) + 1} of {n}: " if n > 1 else ""
        acc = "" if run.accuracy is None else f", held-out accuracy {run.accuracy:.0%}"
        st.progress(now.progress, text=f"{which}step {run.step} of {run.settings.steps}{acc} "
                                       f"({now.state})")
        for r in now.runs:
            if r.state == "failed":
                st.error(f"This run failed: {r.error}")
        shown = [r for r in now.runs if r.checkpoints]
        if shown:
            fields = differing([r.settings for r in shown])
            ul.live_chart(lv.curves_chart([label(r.settings, fields) for r in shown],
                                          [r.losses for r in shown],
                                          [[c.step for c in r.checkpoints] for r in shown],
                                          [[c.accuracy for c in r.checkpoints] for r in shown],
                                          chance=run.settings.spec.chance))
            probed = [c for c in run.checkpoints if c.induction is not None]
            if probed:  # the induction task: the heads' scores and the two copies' losses, live
                ul.live_chart(iv.induction_training(
                    [c.step for c in probed], [c.induction.induction for c in probed],
                    [c.induction.first_loss for c in probed], [c.induction.second_loss for c in probed],
                    INDUCTION_HEAD))
                st.caption(induction_summary(probed))
        if now.finished:
            ul.collect(now)
            if busy:  # the run ended since the page was drawn: redraw it all, and stop polling
                st.rerun()


    progress()

with step("4 · Attention forming"):
    runs = ul.kept_runs()
    if not runs:
        st.info("Train a run (or a ready-made comparison below) to see its attention maps form.")
    else:
        fields = differing([r.settings for r in runs])
        # Options are the labels themselves, numbered so they are unique: a label kept by the
        # browser from a run since forgotten is simply not found, and the newest run shows
        run_labels = [f"{i + 1}: {r.settings.spec.title}, {label(r.settings, fields)}" for i, r in enumerate(runs)]
        chosen = st.selectbox("Run", run_labels, index=len(runs) - 1, key="lab_map_run")
        pick = run_labels.index(chosen) if chosen in run_labels else len(runs) - 1
        run = runs[pick]
        cfg = run.settings
        layer = view_value("layer", cfg.n_layers - 1)
        head = view_value("head", cfg.n_heads - 1)
        steps = tuple(c.step for c in run.checkpoints)
        vega(lv.attention_forming, tuple(c.patterns for c in run.checkpoints), steps,
             run.shown_tokens, layer=layer, head=head)
        st.caption("Move the checkpoint slider under the map to go through training (the layer and "
                   "head sliders and the example box pick the map; all of them change it in your "
                   "browser at once): each row is a query, and its cells show how much it reads "
                   "each key. Before training (checkpoint 0) the weights are spread almost evenly; "
                   "the pattern the task needs appears as the accuracy climbs.")
        probed = [c for c in run.checkpoints if c.induction is not None]
        if probed:
            vega(iv.induction_training, tuple(c.step for c in probed),
                 tuple(c.induction.induction for c in probed),
                 tuple(c.induction.first_loss for c in probed),
                 tuple(c.induction.second_loss for c in probed), INDUCTION_HEAD)
            st.caption(induction_summary(probed) + (
                " In the maps above, pick the best head's layer and head: from each letter of the "
                "second copy it reads the letter after its first copy; the previous-token head "
                "reads the letter just before." if cfg.n_layers > 1 else
                " With one layer no head can do it: an induction head needs a previous-token head "
                "in an earlier layer."))
            interp = by_url("induction-heads")
            if interp is not None:
                st.page_link(f"lessons/{interp.file}", label=f"Lesson: {interp.title}")
        loads = tuple(c.expert_load for c in run.checkpoints)
        if loads[-1] is not None:
            vega(lv.expert_load_chart, steps, loads, layer=layer)
        st.button("Open in the lessons", key="lab_open", on_click=own_model.open_run, args=(run,),
                  disabled=run.weights is None or not run.settings.residual or not run.settings.ffn,
                  help="This run failed, so it left no model to open." if run.weights is None else
                       "A model without residual connections is not the block the lessons explain "
                       "(their sentences and formulas add every sublayer to its input), so it stays "
                       "here." if not run.settings.residual else
                       "A model without feed-forward blocks is not the block the lessons explain, so "
                       "it stays here." if not run.settings.ffn else
                       "This run's model becomes a model of your own in the sidebar, for this browser "
                       "session only: the lessons then show its numbers on its task's examples.")
        opened = own_model.chosen()
        if opened is not None:
            st.success(f"**{opened.name}** is the sidebar's model now. It reads its task's symbols, so "
                       "the sidebar's text is one of its held-out examples. Only you see it, until "
                       "you close this tab; choose a shared model in the sidebar to go back.")
            links = st.columns(4)
            for i, (url, link_label) in enumerate(lab_lesson_links(opened.bundle.config)):
                lesson = by_url(url)
                if lesson is not None:
                    links[i % 4].page_link(f"lessons/{lesson.file}", label=link_label)

with step("5 · Compare runs"):
    if len(runs) < 2:
        st.info(f"Train two or more runs (up to {ul.KEPT} are kept) and their curves appear here "
                "side by side, named by the settings that differ.")
    else:
        fields = differing([r.settings for r in runs])
        names = [f"{i + 1}: {label(r.settings, fields)}" for i, r in enumerate(runs)]
        vega(lv.curves_chart, tuple(names), tuple(tuple(r.losses) for r in runs),
             tuple(tuple(c.step for c in r.checkpoints) for r in runs),
             tuple(tuple(c.accuracy for c in r.checkpoints) for r in runs))
        table(comparison_table(runs, names), hide_index=True)
        st.caption("They differ in: " + (", ".join(fields) or "nothing (the same setting twice)") + ".")
        # a run stopped before its first step has no gradient to show
        stepped = [(name, [c for c in r.checkpoints if c.grad_norms is not None]) for name, r in zip(names, runs)]
        stepped = [(name, cs) for name, cs in stepped if cs]
        if stepped:
            vega(lv.grad_norms_chart, tuple(name for name, _ in stepped),
                 tuple(tuple(c.step for c in cs) for _, cs in stepped),
                 tuple(tuple(c.grad_norms for c in cs) for _, cs in stepped))
            st.caption("How much each layer's weights were pushed: the size of the loss's gradient "
                       "with respect to each layer's weights, averaged over the steps before each "
                       "checkpoint (before clipping). Move the checkpoint slider to go through "
                       "training. A line that falls towards layer 0 means the first layers hear "
                       "less and less of the loss.")
    if runs and st.button("Forget these runs", key="lab_clear"):
        ul.forget_runs()
        st.rerun()

with step("6 · Ready-made comparisons"):
    st.markdown("Each button trains settings that differ in one choice, one after the other: two, "
                "or four for positions (none, the sines added to the tokens, and Shaw's and T5's "
                "relative schemes inside attention). When all are done, the sentence below says what "
                "happened, in the numbers of your runs.")
    cols = [c for _ in range(-(-len(COMPARISONS) // 3)) for c in st.columns(3)]
    for col, (key, comp) in zip(cols, COMPARISONS.items()):
        if col.button(comp.title, key=f"lab_cmp_{key}", disabled=busy):
            try:
                ul.submit(runner, sid, comp.settings, comparison=key)
                st.rerun()
            except LabBusy as err:
                st.warning(str(err))
    if ul.SUMMARY_KEY in st.session_state:
        title, summary = st.session_state[ul.SUMMARY_KEY]
        st.success(f"**{title}.** {summary}")
    bert = by_url("bert")
    if bert is not None:
        st.markdown("**Pretrained / from scratch** is lesson 15's: its fine-tune can also train the "
                    "same model from random weights, the same steps on the same sentences, and "
                    "say how many steps each needed (tick *from scratch* there).")
        st.page_link(f"lessons/{bert.file}", label=f"Lesson: {bert.title}")

    show_code(LabSettings.model_config, lv.binned)
