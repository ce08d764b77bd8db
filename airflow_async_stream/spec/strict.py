"""The base of every spec model: an unknown field is refused, and a model once made never changes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
