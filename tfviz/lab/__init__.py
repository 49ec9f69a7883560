"""The training lab's engine: tasks, bounded settings, background runs, ready-made comparisons.

No streamlit here: the page (lessons/23_training_lab.py) shares one :class:`LabRunner` through
``tfviz.ui.lab``; everything else runs in tests and in ``python -m bench.bench_lab``.
"""
from tfviz.lab.settings import LabSettings
from tfviz.lab.tasks import TASK_NAMES, TASKS, LabTask

__all__ = ["LabSettings", "LabTask", "TASKS", "TASK_NAMES"]
