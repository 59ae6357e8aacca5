import torch


def generate_input(rows: int, cols: int, seed: int):
    x = torch.randn(rows, cols)
    weights = {"w": torch.randn(cols)}
    return x, weights


def ref_kernel(data):
    x, weights = data
    return x * weights["w"]


def check_implementation(data, output):
    return True, ""
