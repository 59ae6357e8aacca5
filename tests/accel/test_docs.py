"""The generated manual: checked-in copy is current, content is complete, grep finds entries."""

from __future__ import annotations

import re

import pytest

from gauntlet.accel import Platform, assemble, get_platform, platform_names
from gauntlet.accel.__main__ import main
from gauntlet.accel.docs import GENERATOR, HEADER, grep_manual, manual, manual_path


@pytest.mark.parametrize("name", platform_names())
def test_checked_in_manual_is_current(name: str) -> None:
    """CI's regenerate-and-diff: edit the ISA table, then run the generator."""
    path = manual_path(name)
    assert path.exists(), f"{path} is missing; run '{GENERATOR}'"
    assert path.read_text(encoding="utf-8") == manual(get_platform(name)), (
        f"{path} is stale; regenerate it with '{GENERATOR}'"
    )


def test_check_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0


def test_manual_documents_every_instruction_and_chapter(npu: Platform) -> None:
    text = manual(npu)
    assert text.startswith(HEADER) and "do not edit" in HEADER
    for ins in npu.isa.instructions:
        entry = re.search(rf"^### {re.escape(ins.mnemonic)} .*?(?=^### |^## )", text, re.M | re.S)
        assert entry, ins.mnemonic
        for part in ("Format: `", "Operation:", "Unit: ", "Cost: ", "Example:"):
            assert part in entry.group(0), (ins.mnemonic, part)
    for title in (
        "Memory model",
        "Calling convention",
        "Timing model",
        "Faults",
        "Cost model microbenchmarks",
        "Hardware parameters",
    ):
        assert f"## {title}" in text
    for bench in npu.microbenchmarks:
        assert f"| {bench.name} | `{bench.mnemonic}` |" in text


def test_manual_follows_the_configuration() -> None:
    small = manual(get_platform("npu", {"mlen": 16}))
    assert "| `MLEN` | 16 |" in small
    assert "This configuration changes the default hardware: mlen = 16." in small


def test_examples_assemble(npu: Platform) -> None:
    for ins in npu.isa.instructions:
        assemble(npu, ins.example, {"x": 0x10000, "y": 0x20000, "M": 128})


def test_grep_manual(npu: Platform) -> None:
    vexp = grep_manual(npu, "exponential")
    assert vexp.startswith("### vexp vector exponential") and "Example:" in vexp
    prose = grep_manual(npu, "double buffering")
    assert "[Timing model]" in prose or "[Machine overview]" in prose
    assert grep_manual(npu, "hbm_latency").count("### ") >= 3  # the three transfers
    assert grep_manual(npu, "[unbalanced").startswith("No match")
    nothing = grep_manual(npu, "quantum entanglement")
    assert nothing.startswith("No match for 'quantum entanglement'") and "vadd" in nothing
    assert len(grep_manual(npu, ".", max_chars=500)) < 600
