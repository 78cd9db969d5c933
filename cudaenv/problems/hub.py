"""Load a suite from the Hugging Face hub: ``hf://<repo_id>[@<revision>][/<path>]``.

Uses ``hf_hub_download`` on a dataset repo, so the hub cache and ``HF_HUB_OFFLINE`` are
honoured; a revision pins the exact commit.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from cudaenv.errors import SourceNotFoundError, SpecError

DEFAULT_FILE = "problems.tar.gz"


class HubRef(BaseModel):
    repo_id: str
    revision: str | None = None
    filename: str = DEFAULT_FILE


def parse_hub_ref(source: str) -> HubRef:
    """``hf://org/name@rev/dir/file.tar.gz`` → HubRef; the repo id is the first two segments."""
    if not source.startswith("hf://"):
        raise SpecError(f"not a hub reference: {source!r}", field="source")
    rest = source[len("hf://") :]
    parts = rest.split("/")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise SpecError(f"hub reference needs org/name: {source!r}", field="source")
    name, _, revision = parts[1].partition("@")
    filename = "/".join(parts[2:]) or DEFAULT_FILE
    return HubRef(repo_id=f"{parts[0]}/{name}", revision=revision or None, filename=filename)


def download_datapack(source: str, *, cache_dir: str | Path | None = None) -> Path:
    """Fetch (or find in the cache) the datapack a hub reference names."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    ref = parse_hub_ref(source)
    try:
        local = hf_hub_download(
            repo_id=ref.repo_id,
            filename=ref.filename,
            revision=ref.revision,
            repo_type="dataset",
            cache_dir=str(cache_dir) if cache_dir else None,
        )
    except LocalEntryNotFoundError as exc:
        raise SourceNotFoundError(
            f"{source}: not in the hub cache and the hub is unreachable or HF_HUB_OFFLINE is set"
        ) from exc
    except (HfHubHTTPError, OSError, ValueError) as exc:
        raise SourceNotFoundError(f"{source}: {exc}") from exc
    return Path(local)
