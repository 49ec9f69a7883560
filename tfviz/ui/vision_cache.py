"""Cached loaders for lesson 19: the shared vit-tiny bundle and its traces of drawn images.

The bundle is shared by every learner (cache_resource) and never changed; an image is drawn
from its settings and traced once per distinct setting (cache_data: each caller gets a copy)."""
from __future__ import annotations

import numpy as np
import streamlit as st

import tfviz
from tfviz.trace import Trace
from tfviz.vision import ShapeLabel, shapes_image
from tfviz.vision_bundle import VisionBundle

VIT = "vit-tiny"


@st.cache_resource(show_spinner="Loading the vision model…")
def get_vit() -> VisionBundle:
    bundle = tfviz.load(VIT)
    for p in bundle.model.parameters():  # a shared model must never train by accident
        p.requires_grad_(False)
    return bundle


@st.cache_data(max_entries=256, show_spinner=False)
def drawn_image(seed: int, size: int, kind: str, centre: tuple[float, float], radius: float,
                colour: tuple[float, float, float], noise: float) -> tuple[np.ndarray, ShapeLabel]:
    """The image ``tfviz.vision.shapes_image`` draws with these settings, and its label."""
    return shapes_image(seed, size, kind=kind, centre=centre, radius=radius, colour=colour, noise=noise)


@st.cache_data(max_entries=256, show_spinner=False)
def vit_trace(image: np.ndarray) -> Trace:
    """Every activation of vit-tiny on ``image``."""
    return get_vit().trace(image)
