"""Lesson 15's fine-tune, served: one job per (model, settings) on the server, waiting its turn
in the training lab's queue (``tfviz.ui.lab.lab_runner``), so the server's cap on trainings
at once holds for fine-tunes and lab runs together.

The job (``tfviz.training.finetune_job``) trains in its own thread from a copy of the shared
model, so the page keeps answering while it runs and the shared model is never touched. Its
result is frozen dataclasses only, so every learner may be handed the same one: a class that
presses the button with the default settings trains once, and everyone after the first sees the
numbers at once.
"""
from __future__ import annotations

import os

import streamlit as st

from tfviz.training.finetune import DEFAULT_MODES, FinetuneSettings
from tfviz.training.finetune_job import FinetuneJob, JobStatus
from tfviz.ui.cache import get_bundle, per_model
from tfviz.ui.lab import lab_runner
ASKED = "bert_ft_asked"  # session key: the settings this learner pressed the button for


def settings(task: str, rank: int, modes: tuple[str, ...] = DEFAULT_MODES) -> FinetuneSettings:
    """The page's settings. TFVIZ_FINETUNE_STEPS shortens every mode's training (app and
    browser tests do; the lesson's text and BENCHMARKS.md speak of the default budget)."""
    steps = os.environ.get("TFVIZ_FINETUNE_STEPS")
    if steps:
        return FinetuneSettings(task=task, rank=rank, modes=modes, steps=max(1, int(steps)))
    return FinetuneSettings(task=task, rank=rank, modes=modes)


@per_model(st.cache_resource(max_entries=8, show_spinner=False), copies=False)
def finetune_job(model: str, chosen: FinetuneSettings) -> FinetuneJob:
    """The server's job for these settings, started on the first call (a learner's own model's
    job stays in that learner's session: ``per_model``)."""
    bundle = get_bundle(model)
    return FinetuneJob(bundle.model, bundle.tokenizer, chosen, lab_runner().ticket(f"fine-tune {model}"),
                       name=model)


def ask(chosen: FinetuneSettings) -> None:
    """The learner pressed the button: remember what for, and start (or find) the job."""
    st.session_state[ASKED] = chosen


def asked() -> FinetuneSettings | None:
    return st.session_state.get(ASKED)


def status(model: str, chosen: FinetuneSettings) -> JobStatus:
    """Where the server's job for these settings is (started now if there is none)."""
    return finetune_job(model, chosen).status()


def forget(model: str, chosen: FinetuneSettings) -> None:
    """Forget a failed or stopped job, on the server and in this session, so that pressing
    the button again starts it anew."""
    finetune_job.clear(model, chosen)
    st.session_state.pop(ASKED, None)
