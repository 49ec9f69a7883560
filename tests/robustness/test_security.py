"""Static and runtime checks: no eval of user text, safe model loading, quiet config."""
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [p for p in [ROOT / "app.py", *ROOT.glob("lessons/*.py"), *ROOT.glob("tfviz/**/*.py")]]


def _code_lines(path: Path):
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.split("#", 1)[0]
        yield number, stripped


def test_no_eval_or_exec_anywhere():
    pattern = re.compile(r"(?<![\.\w])(eval|exec|compile|__import__)\s*\(")
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in SOURCES for n, line in _code_lines(p)
            if pattern.search(line)]
    assert not hits, hits


def test_models_load_only_through_safetensors_or_weights_only():
    hits = []
    for p in SOURCES:
        for n, line in _code_lines(p):
            if re.search(r"\bimport pickle\b|\bpickle\.load|\bdill\b", line):
                hits.append(f"{p.relative_to(ROOT)}:{n}")
            if "torch.load(" in line and "weights_only=True" not in line:
                hits.append(f"{p.relative_to(ROOT)}:{n}")
    assert not hits, hits
    assert "load_file" in (ROOT / "tfviz/bundle.py").read_text()


def test_no_file_uploads_and_a_small_upload_limit():
    pages = [ROOT / "app.py", *ROOT.glob("lessons/*.py"), *ROOT.glob("tfviz/ui/*.py")]
    assert not [p for p in pages if "file_uploader" in p.read_text()]
    config = tomllib.loads((ROOT / ".streamlit/config.toml").read_text())
    assert config["server"]["maxUploadSize"] <= 1


def test_streamlit_config_is_quiet_and_local():
    config = tomllib.loads((ROOT / ".streamlit/config.toml").read_text())
    assert config["browser"]["gatherUsageStats"] is False
    assert config["server"]["headless"] is True
    assert config["server"]["address"] in ("localhost", "127.0.0.1")
    assert config["client"]["showErrorDetails"] in ("none", False)
    # no full garbage collection after every run: 150 ms under the lock all sessions share
    assert config["runner"]["postScriptGC"] is False


def test_server_start_makes_no_outbound_connection():
    psutil = pytest.importorskip("psutil")
    import urllib.request

    from tests.support.serve import streamlit_server

    with streamlit_server() as (url, proc, _):
        for path in ("/", "/tour", "/self-attention"):
            urllib.request.urlopen(url + path, timeout=10).read()
        server = psutil.Process(proc.pid)
        remote = [c.raddr for p in [server, *server.children(recursive=True)]
                  for c in p.net_connections(kind="inet") if c.raddr]
    assert all(addr.ip in ("127.0.0.1", "::1", "::ffff:127.0.0.1") for addr in remote), remote
