# expect: build_error
# reason: line 7, col 27
import torch
import triton
import triton.language as tl

def scale_add(x, y, alpha)
    return x
