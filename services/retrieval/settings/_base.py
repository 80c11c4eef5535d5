"""What every group of settings shares: the :class:`Env` marker and the :class:`Group` base."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

REPO_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True, slots=True)
class Env:
    """Field metadata: the environment variable a grouped setting is read from."""

    name: str


class Group(BaseModel):
    """A group of settings; each field names its variable with :class:`Env` metadata."""

    model_config = ConfigDict(frozen=True, extra="forbid")
