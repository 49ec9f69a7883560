"""AppTest helpers: run the real app.py frame and switch to a lesson by its file."""
import os
from pathlib import Path

import pytest

APP = str(Path(__file__).resolve().parents[2] / "app.py")

os.environ["TFVIZ_RAISE"] = "1"  # the error boundary re-raises, so tests see real errors


@pytest.fixture
def app_page():
    from streamlit.testing.v1 import AppTest

    def run(lesson_file: str, **query):
        at = AppTest.from_file(APP, default_timeout=90)
        for key, value in query.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception, at.exception
        at.switch_page(f"lessons/{lesson_file}").run()
        assert not at.exception, at.exception
        return at

    return run


@pytest.fixture(autouse=True)
def no_model_folders(tmp_path, monkeypatch):
    """The sidebar lists only the bundled models, whatever Hugging Face cache or TFVIZ_MODELS
    the machine running the tests has; tests of model folders set their own."""
    monkeypatch.delenv("TFVIZ_MODELS", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "no-hub-cache"))


@pytest.fixture(autouse=True)
def own_live_store(tmp_path, monkeypatch):
    """Every app test gets an empty live-class store of its own. AppTest gives every session the
    same id, so the store's per-client limits (10 classes started an hour) would otherwise
    carry over from one test to the next."""
    from tfviz.ui.live_route import class_watch
    from tfviz.ui.live_session import live_store

    monkeypatch.setenv("TFVIZ_STORE", f"sqlite:///{tmp_path / 'live.sqlite3'}")
    live_store.clear()
    class_watch.clear()
    yield
    live_store.clear()
    class_watch.clear()
