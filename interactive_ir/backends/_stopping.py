"""A transformers `StoppingCriteria` that ends a generation once its work is cancelled. Imported only by
the transformers LLM backend when it generates (it imports transformers)."""

from __future__ import annotations

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from interactive_ir.backends.cancel import CancelToken


class StopWhenCancelled(StoppingCriteria):
    """Checked after every generated token: every sequence is done once `cancel` is set."""

    def __init__(self, cancel: CancelToken):
        self.cancel = cancel

    def __call__(self, input_ids: torch.LongTensor, scores, **kwargs) -> torch.BoolTensor:
        return torch.full((input_ids.shape[0],), self.cancel.cancelled, device=input_ids.device, dtype=torch.bool)


def stopping(cancel: CancelToken | None) -> dict:
    """`model.generate` keyword arguments that stop it when `cancel` is set ({} for None)."""
    return {} if cancel is None else {"stopping_criteria": StoppingCriteriaList([StopWhenCancelled(cancel)])}
