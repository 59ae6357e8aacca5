"""The KernelBench probe's time limit: CPU seconds of its own, not the host's wall clock.

A probe on a loaded host gets a fraction of a core, so a wall-clock limit refused problems for
the host's load (level 3's ResNet101 and DenseNets on a 2-core machine at load 11). The probe
now limits its own CPU time; these tests run real probe processes.
"""

from __future__ import annotations

from gauntlet.importers import kernelbench
from gauntlet.importers.kbprobe import Analysis, AnalyzeRequest

#: CPU seconds for the probes below: twice the imports' (about 3 s of torch and pydantic).
LIMIT_S = 6


def _request(module_text: str) -> AnalyzeRequest:
    return AnalyzeRequest(module_text=module_text, constants={}, forward_args=[],
                          max_bytes=1 << 20, max_flops=1e6)  # fmt: skip


def test_a_probe_past_its_cpu_time_is_refused_with_that_reason() -> None:
    spins = "import time\nstart = time.process_time()\n" + (
        "while time.process_time() - start < 120:\n    pass\n"
    )
    found = kernelbench._probe("analyze", _request(spins), Analysis, LIMIT_S)
    assert found == f"the probe (analyze) ran past {LIMIT_S} s of CPU time"


def test_wall_time_without_computation_does_not_count_against_the_limit() -> None:
    # Sleeping longer than the CPU limit (as a probe waits for a core on a loaded host), then
    # a problem that cannot be built: the probe finishes and says why, within its CPU time.
    sleeps = f"import time\ntime.sleep({LIMIT_S + 1})\n"
    sleeps += "def _problem():\n    raise ValueError('no model here')\n"
    found = kernelbench._probe("analyze", _request(sleeps), Analysis, LIMIT_S)
    assert isinstance(found, Analysis)
    assert found.refused is not None and "no model here" in found.refused
