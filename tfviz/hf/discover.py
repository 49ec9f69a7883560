"""Which Hugging Face model folders this machine already holds, found without reading a weight.

Two places are looked at, and nothing is ever downloaded:

- ``TFVIZ_MODELS``: a list of paths (``:`` between them, ``;`` on Windows). Each entry is a
  model folder (it holds config.json), or a folder of model folders (``~/models`` holding
  ``gpt2/`` and ``bert-base-uncased/``).
- The Hugging Face cache, where ``huggingface-cli download`` and ``from_pretrained`` keep what
  they fetched: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else ``~/.cache/huggingface/hub``. A
  model there is ``models--ORG--NAME/snapshots/REV/``, with ``refs/main`` naming REV; its files
  are usually symbolic links into ``blobs/``, which every check here follows.

A folder is offered when :func:`tfviz.hf.describe` finds in it config.json, model.safetensors
(or its shards) and tokenizer.json of a family :mod:`tfviz.hf` can build, its safetensors file
whole and every shape config.json's, and the family is one the lessons teach
(:data:`APP_FAMILIES`). Anything else found there is kept as :class:`Skipped`, with the reason
:class:`~tfviz.hf.CheckpointError` gives (or the lessons' reason), so a lecturer learns why their
folder is not in the list. Only config.json and the safetensors header (a few kilobytes) are read.

Each offered model gets a name, the one the app's sidebar, ``session_state["model"]`` and the
``?model=`` link use: the cached repository's name (``gpt2`` for
``models--openai-community--gpt2``) or the folder's name, made of letters, digits, ``.``,
``_`` and ``-``. A name already taken (a bundled model's, such as ``gpt-tiny``, or an earlier
folder's) becomes ``ORG-NAME`` for a cached repository, else gets ``-2``, ``-3``...: the same
folders give the same names on every start.

Where each folder is, is said two ways. ``folder`` is its path on this machine, for the
notebook and the server's log. ``place`` says where it was found without the machine's file
system ("TFVIZ_MODELS entry 2, folder gpt2", "Hugging Face cache (openai-community/gpt2)"), for
pages every learner of a shared server reads: enough for the lecturer who set TFVIZ_MODELS to
tell two folders called gpt2 apart, nothing about anyone's home directory.
:func:`without_paths` takes the paths out of a reason the same way.

>>> d = discover({"TFVIZ_MODELS": "/no/such/folder", "HF_HUB_CACHE": "/no/such/cache"})
>>> d.models, [(s.place, s.reason) for s in d.skipped]
((), [('TFVIZ_MODELS entry 1, folder folder', 'there is no such folder.')])
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from tfviz.hf.folder import CheckpointError, FolderInfo, describe

ENV_VAR = "TFVIZ_MODELS"
#: The families whose folders the app offers: every family tfviz.load opens whose block the
#: lessons teach. The modern decoders (RMSNorm, the gated feed-forward, RoPE, GQA) joined when
#: every lesson ran on them and the claims matrix (tests/app/test_claims.py) walked a Llama and
#: a Qwen2 folder clean; the mixtures of experts (Mixtral, GraniteMoe) joined once tfviz.load
#: matched transformers on them, experts included. A family added to tfviz.hf is offered only
#: once it is added here.
APP_FAMILIES = ("GPT-2", "BERT", "Llama", "Mistral", "Qwen2", "Qwen3", "Mixtral", "GraniteMoe")
# What a folder needs beside its weights; config.json also marks a folder as a model's.
MARKERS = ("config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json")


@dataclass(frozen=True)
class Found:
    """A model folder the app can open: its name in the app, where it was found, and what
    :func:`tfviz.hf.describe` read of it (family, sizes, parameters, bytes; no weights)."""

    name: str  # unique in the app, never a bundled model's name
    source: str  # where it was found: "TFVIZ_MODELS" or "Hugging Face cache (openai-community/gpt2)"
    info: FolderInfo
    place: str = ""  # where, without the file system: "TFVIZ_MODELS entry 2, folder gpt2"

    @property
    def folder(self) -> Path:
        return self.info.folder

    @property
    def size(self) -> str:
        """ "GPT-2, 12 layers × 12 heads, 124M parameters" """
        i = self.info
        return f"{i.family}, {i.n_layers} layers × {i.n_heads} heads, {short_count(i.n_params)} parameters"

    @property
    def label(self) -> str:
        """What the model picker shows: "gpt2 · GPT-2, 12 layers × 12 heads, 124M parameters"."""
        return f"{self.name} · {self.size}"


@dataclass(frozen=True)
class Skipped:
    """A folder that looked like a model's but cannot be offered, and why."""

    folder: Path
    source: str
    reason: str
    place: str = ""  # where, without the file system (as Found.place)


@dataclass(frozen=True)
class Discovery:
    models: tuple[Found, ...]
    skipped: tuple[Skipped, ...]

    def get(self, name: str) -> Found | None:
        return next((m for m in self.models if m.name == name), None)

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.models]


def short_count(n: int) -> str:
    """1234 -> "1.2k", 124_439_808 -> "124M", 2_700_000_000 -> "2.7B": a parameter count as
    model cards write it."""
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            value = n / size
            return f"{value:.0f}{unit}" if value >= 10 else f"{value:.1f}{unit}"
    return str(n)


def hub_cache(env: Mapping[str, str]) -> Path:
    """Where huggingface_hub keeps its downloads, by its own rules: HF_HUB_CACHE (or the older
    HUGGINGFACE_HUB_CACHE), else HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
    ~/.cache/huggingface/hub."""
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(key):
            return Path(env[key]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    base = Path(env["XDG_CACHE_HOME"]).expanduser() if env.get("XDG_CACHE_HOME") else Path("~/.cache").expanduser()
    return base / "huggingface" / "hub"


# An absolute path in a message (an OSError's file, a command that names the folder): from a
# "/" or "~/" that does not continue a word, URL or relative path, up to a space or quote.
_PATH = re.compile(r"(?<![\w.~/:…-])~?/(?:[^\s'\"`/()]+/)*([^\s'\"`/()]+)")


def without_paths(text: str, folders: Iterable[Path] = ()) -> str:
    """``text`` with each path shown by its last name only, "…/gpt2": a message about a
    folder stays clear to the lecturer, and tells learners nothing of the server's file
    system. ``folders`` are replaced first, whole, so a name with spaces goes too.

    >>> without_paths("Cannot read /home/lecturer/models/gpt2/model.safetensors (see ~/x).")
    'Cannot read …/model.safetensors (see …/x).'
    >>> gpt2 = Path("/srv/my models/gpt2")
    >>> without_paths(f"from_pretrained('{gpt2}'): {gpt2}/model.safetensors", [gpt2])
    "from_pretrained('…/gpt2'): …/gpt2/model.safetensors"
    >>> without_paths("2 layers/4 heads, https://huggingface.co/gpt2, models--a--b/snapshots")
    '2 layers/4 heads, https://huggingface.co/gpt2, models--a--b/snapshots'
    """
    for folder in folders:
        for spelled in {str(folder), str(folder.expanduser().resolve())}:
            if len(spelled) > 1:  # the whole path only, not the start of a longer name
                text = re.sub(re.escape(spelled) + r"(?![^/\s'\"`()])", f"…/{Path(spelled).name}", text)
    return _PATH.sub(lambda m: f"…/{m.group(1)}", text)


def _looks_like_model(folder: Path) -> bool:
    return any((folder / m).exists() for m in MARKERS)


def from_paths(value: str) -> tuple[list[tuple[Path, str, str, list[str]]], list[Skipped]]:
    """``TFVIZ_MODELS``'s folders as (folder, source, place, names to try), and the entries
    that name no model folder. An entry is numbered from 1, empty ones not counted."""
    found, skipped = [], []
    entries = [e.strip() for e in value.split(os.pathsep) if e.strip()]
    for k, entry in enumerate(entries, 1):
        path = Path(entry).expanduser()
        place = f"{ENV_VAR} entry {k}"
        if not path.is_dir():
            skipped.append(Skipped(path, ENV_VAR, "there is no such folder.", f"{place}, folder {path.name}"))
        elif _looks_like_model(path):
            name = path.resolve().name
            found.append((path, ENV_VAR, f"{place}, folder {name}", [name]))
        else:
            inner = sorted(p for p in path.iterdir() if p.is_dir() and _looks_like_model(p))
            if not inner:
                skipped.append(Skipped(path, ENV_VAR, "it holds no config.json, and no folder in "
                                                      "it does: name the model's own folder.",
                                       f"{place}, folder {path.resolve().name}"))
            found.extend((p, ENV_VAR, f"{place}, folder {p.name}", [p.name]) for p in inner)
    return found, skipped


def snapshot(repo: Path) -> Path | None:
    """The snapshot folder of a cached repository: the revision refs/main names, else the only
    (or newest) snapshot there is."""
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        rev = ref.read_text(encoding="utf-8", errors="replace").strip()
        if rev and (snapshots / rev).is_dir():
            return snapshots / rev
    kept = [p for p in snapshots.iterdir() if p.is_dir()] if snapshots.is_dir() else []
    return max(kept, key=lambda p: p.stat().st_mtime) if kept else None


def from_cache(hub: Path) -> tuple[list[tuple[Path, str, str, list[str]]], list[Skipped]]:
    """The cached models' snapshot folders as (folder, source, place, names to try)."""
    found, skipped = [], []
    repos = sorted(hub.glob("models--*")) if hub.is_dir() else []
    for repo in repos:
        parts = repo.name.split("--")[1:]  # models--ORG--NAME, or models--NAME
        repo_id = "/".join(parts)
        source = f"Hugging Face cache ({repo_id})"
        folder = snapshot(repo)
        if folder is None:
            skipped.append(Skipped(repo, source, "it has no downloaded snapshot.", source))
        else:
            found.append((folder, source, source, [parts[-1], "-".join(parts)]))
    return found, skipped


def _sanitize(name: str) -> str:
    """A folder's or repository's name as a model name: "GPT2 small!" -> "GPT2-small"."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "model"


def unique_name(tries: list[str], taken: set[str]) -> str:
    """The first of ``tries`` not in ``taken`` (compared without case), else the first with
    -2, -3... appended. ``taken`` is lower case.

    >>> unique_name(["gpt2", "openai-community-gpt2"], {"gpt2"})
    'openai-community-gpt2'
    >>> unique_name(["gpt-tiny"], {"gpt-tiny", "gpt-tiny-2"})
    'gpt-tiny-3'
    """
    names = [_sanitize(t) for t in tries]
    for name in names:
        if name.lower() not in taken:
            return name
    k = 2
    while f"{names[0]}-{k}".lower() in taken:
        k += 1
    return f"{names[0]}-{k}"


def discover(env: Mapping[str, str] | None = None, reserved: Iterable[str] = ()) -> Discovery:
    """Every model folder named in ``TFVIZ_MODELS`` and in the Hugging Face cache, in that
    order, each offered (:class:`Found`) or not (:class:`Skipped`, with the reason). ``env``
    defaults to the process's environment; ``reserved`` are names already in use (the bundled
    models'), which no folder's name may take. A folder reached twice is offered once."""
    env = os.environ if env is None else env
    paths, skipped = from_paths(env.get(ENV_VAR, ""))
    cached, cache_skipped = from_cache(hub_cache(env))
    taken = {r.lower() for r in reserved}
    seen: set[Path] = set()
    models: list[Found] = []
    for folder, source, place, tries in paths + cached:
        real = folder.resolve()
        if real in seen:
            continue
        seen.add(real)
        name = unique_name(tries, taken)
        try:
            info = describe(folder)
        except CheckpointError as e:
            skipped.append(Skipped(folder, source, e.problem, place))
            continue
        except OSError as e:  # unreadable: permissions, a link into a missing blob...
            skipped.append(Skipped(folder, source, f"it cannot be read ({e}).", place))
            continue
        if info.family not in APP_FAMILIES:
            skipped.append(Skipped(folder, source, (
                f"it is a {info.family}, which tfviz.load opens in a notebook but the lessons do not "
                f"teach yet: the app offers {', '.join(APP_FAMILIES)} folders."), place))
            continue
        taken.add(name.lower())
        models.append(Found(name, source, info, place))
    return Discovery(tuple(models), tuple(skipped + cache_skipped))
