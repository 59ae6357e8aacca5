from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gauntlet.agents.base import Budget
from gauntlet.errors import ConfigError
from gauntlet.task import load_task
from gauntlet.workspace import (
    BRIEF_FILE,
    WS_CONFIG_FILE,
    build_workspace,
    digest,
    read_ws_config,
    turn_limit,
    workspace_changes,
)

TASK_DIR = Path(__file__).parent / "agents" / "task_scale"


@pytest.fixture
def task():  # noqa: ANN201
    return load_task(TASK_DIR)


def test_workspace_holds_only_what_the_agent_may_see(task, tmp_path: Path) -> None:
    ws = build_workspace(task, tmp_path / "ws", device="cpu", budget=Budget(wall_s=900))
    files = set(digest(ws.path))
    assert files == {
        "TASK.md",
        "kernel.py",
        "configs.json",
        "reference/baseline.py",
        WS_CONFIG_FILE,
    }
    everything = "\n".join((ws.path / f).read_text() for f in files)
    # The hidden config (n = 7777), the expert's block size and the input generator never appear.
    assert "7777" not in everything and "H1" not in everything
    assert "BLOCK=1024" not in everything
    assert "make_inputs" not in everything
    assert json.loads((ws.path / "configs.json").read_text()) == [
        {"name": "C1", "n": 1000, "dtype": "float32"},
        {"name": "C2", "n": 4096, "dtype": "float32"},
    ]
    assert (ws.path / "kernel.py").read_text() == (TASK_DIR / "baseline.py").read_text()
    assert not os.access(ws.path / "reference" / "baseline.py", os.W_OK) or os.geteuid() == 0
    assert ws.manifest == digest(ws.path)
    assert ws.submission_files == ("kernel.py",)
    config = read_ws_config(ws.path)
    assert (config.task_id, config.device) == ("test/scale", "cpu")


def test_brief_states_contract_tools_budget_and_unseen_configs(task, tmp_path: Path) -> None:
    budget = Budget(wall_s=900, tokens=50_000, cost_usd=2.5)
    ws = build_workspace(task, tmp_path / "ws", device="cpu", budget=budget)
    brief = (ws.path / BRIEF_FILE).read_text()
    assert brief == ws.brief
    assert "def kernel(x: torch.Tensor) -> torch.Tensor" in brief
    assert "`kernel.py`" in brief
    for tool in ("check", "test", "bench", "view <config>", "grep <pattern>"):
        assert f"`gauntlet-ws {tool}`" in brief
    assert "grep_manual" not in brief  # accel only
    assert "15 minutes" in brief and "Turns (model iterations): 15" in brief
    assert "Tokens: 50000" in brief and "$2.5" in brief
    assert "configurations you cannot see" in brief
    assert "C1 (n=1000, dtype=float32)" in brief


def test_turn_limit_run_then_task_then_level(task) -> None:
    assert turn_limit(task, Budget()) == 15
    assert turn_limit(task, Budget(turns=7)) == 7


def test_changes_against_the_manifest(task, tmp_path: Path) -> None:
    ws = build_workspace(task, tmp_path / "ws", device="cpu", budget=Budget())
    assert workspace_changes(ws) == {}
    (ws.path / "kernel.py").write_text("changed")
    (ws.path / "notes.txt").write_text("new")
    (ws.path / "reference" / "baseline.py").unlink()
    (ws.path / "configs.json").unlink()
    (ws.path / "configs.json").symlink_to("/etc/hostname")
    assert workspace_changes(ws) == {
        "kernel.py": "modified",
        "notes.txt": "added",
        "reference/baseline.py": "deleted",
        "configs.json": "modified",
    }


def test_changes_are_capped(task, tmp_path: Path) -> None:
    ws = build_workspace(task, tmp_path / "ws", device="cpu", budget=Budget())
    for index in range(520):
        (ws.path / f"f{index:03d}").write_text("x")
    changes = workspace_changes(ws)
    assert len(changes) == 501 and changes["..."] == "20 more changes"


def test_refuses_a_used_folder(task, tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "old.py").write_text("")
    with pytest.raises(ConfigError, match="not empty"):
        build_workspace(task, tmp_path / "ws", device="cpu", budget=Budget())


def test_accel_brief_lists_its_tools_and_rules(task, tmp_path: Path) -> None:
    relu = load_task(TASK_DIR.parents[2] / "tasks" / "accel" / "npu" / "relu")
    ws = build_workspace(relu, tmp_path / "ws", device="sim:npu", budget=Budget())
    tools, rules = ws.brief.split("## Tools")[1], ws.brief.split("## Rules")[1]
    for usage in ("check_syntax [<config>]", "run_eval", "view_output [<config>] [<rows>]"):
        assert f"`gauntlet-ws {usage}`" in tools
    assert "`gauntlet-ws profile [<config>]`" in tools and "roofline" in tools
    assert "not for the numbers of the visible configurations" in rules
    assert "PyTorch" not in rules and "try" not in rules
    plain = build_workspace(task, tmp_path / "plain", device="cpu", budget=Budget()).brief
    assert "PyTorch" in plain.split("## Rules")[1] and "check_syntax" not in plain
    assert (ws.path / "kernel.asm").read_text() == relu.path("baseline.asm").read_text()
