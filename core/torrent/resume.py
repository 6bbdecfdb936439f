"""Resume data and download jobs on disk, written atomically (tmp, fsync, rename; the previous copy kept as .bak),
and the marker file that tells a clean shutdown from a crash."""
from __future__ import annotations

import json
import os
from pathlib import Path

from core.archive.folder import fsync_dir


def write_with_backup(path: Path, data: bytes) -> None:
    """After a crash at any point, `path` or `path.bak` holds a complete copy (old or new)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if path.exists():
        os.replace(path, path.with_name(path.name + ".bak"))
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_with_backup(path: Path, valid=lambda b: True) -> bytes | None:
    for p in (path, path.with_name(path.name + ".bak")):
        try:
            data = p.read_bytes()
        except OSError:
            continue
        if data and valid(data):
            return data
    return None


def _valid_resume(data: bytes) -> bool:
    import libtorrent as lt
    try:
        lt.read_resume_data(data)
        return True
    except Exception:  # libtorrent raises RuntimeError/system_error on junk
        return False


class ResumeStore:
    """`<state>/resume/<infohash>.fastresume` and `<state>/jobs/<community id>.json`."""

    def __init__(self, state_dir: Path | str):
        self.root = Path(state_dir)
        self.resume_dir = self.root / "resume"
        self.jobs_dir = self.root / "jobs"

    def resume_path(self, infohash: str) -> Path:
        return self.resume_dir / f"{infohash}.fastresume"

    def save_resume(self, infohash: str, data: bytes) -> None:
        write_with_backup(self.resume_path(infohash), data)

    def load_resume(self, infohash: str) -> bytes | None:
        return read_with_backup(self.resume_path(infohash), _valid_resume)

    def delete_resume(self, infohash: str) -> None:
        for suffix in ("", ".bak", ".tmp"):
            Path(str(self.resume_path(infohash)) + suffix).unlink(missing_ok=True)

    def job_path(self, community_id: str) -> Path:
        return self.jobs_dir / f"{community_id}.json"

    def save_job(self, community_id: str, job: dict) -> None:
        write_with_backup(self.job_path(community_id), json.dumps(job, sort_keys=True).encode())

    def load_job(self, community_id: str) -> dict | None:
        def ok(b: bytes) -> bool:
            try:
                return isinstance(json.loads(b), dict)
            except ValueError:
                return False
        raw = read_with_backup(self.job_path(community_id), ok)
        return json.loads(raw) if raw else None

    def jobs(self) -> list[dict]:
        if not self.jobs_dir.is_dir():
            return []
        out = []
        for p in sorted(self.jobs_dir.glob("*.json")):
            job = self.load_job(p.stem)
            if job:
                out.append(job)
        return out


class ShutdownMarker:
    """Exists while a service runs. Found at start = the previous run did not shut down cleanly."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def acquire(self) -> bool:
        unclean = self.path.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(str(os.getpid()))
        return unclean

    def release(self) -> None:
        self.path.unlink(missing_ok=True)
