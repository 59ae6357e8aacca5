# Fixture helpers in the shape of GPU MODE's utils.py (written for these tests).
import os

import torch


def allclose_reasons(received, expected, rtol=1e-5, atol=1e-8):
    if received.shape != expected.shape:
        return ["SIZE MISMATCH"]
    wrong = (received - expected).abs() > atol + rtol * expected.abs()
    count = int(wrong.sum())
    return [f"{count} mismatched elements"] if count else []


def make_match_reference(reference, **kwargs):
    def wrapped(data, output):
        reasons = allclose_reasons(output, reference(data), **kwargs)
        return (False, " ".join(reasons)) if reasons else (True, "")

    return wrapped


class DeterministicContext:
    def __enter__(self):
        self.tf32 = torch.backends.cudnn.allow_tf32
        self.saved = os.environ.get("CUBLAS_WORKSPACE_CONFIG", "")
        torch.backends.cudnn.allow_tf32 = False
        return self

    def __exit__(self, *exc):
        torch.backends.cudnn.allow_tf32 = self.tf32
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = self.saved
