"""The feedback tools: one implementation for every agent.

`TOOLS` is the one table of tools. The `toolcall` agent offers them as functions, `gauntlet-ws`
as subcommands, and the brief lists them, all read from this table. A `Toolbox` runs them for one
workspace: the feedback tools are the judge in feedback mode on the visible configs (never the
hidden ones), and every call is appended to the workspace's `.gauntlet-ws.log`.

Tools scoped `agent` (reading, writing and listing files, submitting) are offered only to
function-calling agents; CLI agents have their own. Tools limited to the `accel` track (the
manual, syntax, eval, output, instruction count and profile of `gauntlet.accel.tools`, run on
the contract's assembly file with the visible configs) are absent from every other track's list.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from gauntlet.errors import ConfigError

if TYPE_CHECKING:
    from gauntlet.judge.verdict import ConfigResult, Verdict
    from gauntlet.task import Task

logger = logging.getLogger(__name__)

ToolScope = Literal["feedback", "agent"]
ParamKind = Literal["string", "integer"]
JudgeFunction = Callable[..., "Verdict"]

#: Largest file `read_file` returns in one call and `write_file` accepts, in characters.
MAX_FILE_CHARS = 200_000
#: Most lines `grep` returns.
MAX_GREP_HITS = 60
#: Characters of a tool's output kept in `.gauntlet-ws.log`.
LOG_OUTPUT_CHARS = 4_000
#: Files the harness writes in the workspace; the file tools refuse to write them.
HARNESS_FILES = frozenset({".gauntlet-ws.json", ".gauntlet-ws.log"})
#: Folders skipped by `list_files` and `grep` (caches, not the agent's work).
SKIPPED_DIRS = frozenset({"__pycache__", ".git"})
#: Most rows `view_output` shows.
MAX_VIEW_ROWS = 256


@dataclass(frozen=True)
class Param:
    """One argument of a tool."""

    name: str
    kind: ParamKind
    description: str
    required: bool = True


@dataclass(frozen=True)
class ToolSpec:
    """A tool: its name, what it does, its arguments, who is offered it."""

    name: str
    summary: str
    params: tuple[Param, ...] = ()
    scope: ToolScope = "feedback"
    tracks: tuple[str, ...] | None = None
    """Tracks the tool exists for (None: every track)."""

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments, as function-calling APIs take it."""
        return {
            "type": "object",
            "properties": {
                p.name: {"type": p.kind, "description": p.description} for p in self.params
            },
            "required": [p.name for p in self.params if p.required],
            "additionalProperties": False,
        }

    def openai_tool(self) -> dict[str, Any]:
        """The tool as an OpenAI chat-completions `tools` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.summary,
                "parameters": self.json_schema(),
            },
        }

    def usage(self) -> str:
        """`name <arg> [<optional>]`, for help texts and error messages."""
        parts = [self.name] + [
            f"<{p.name}>" if p.required else f"[<{p.name}>]" for p in self.params
        ]
        return " ".join(parts)


_CONFIG = Param("config", "string", "name of a visible config, e.g. C1")
_SOME_CONFIG = Param(
    "config", "string", "name of a visible config, e.g. C2 (default: the first)", required=False
)
_ACCEL = ("accel",)

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "check",
        "Check the submission without running it on data: contract (files present), static "
        "guards (forbidden constructs), build (compile, or assemble for accel).",
    ),
    ToolSpec(
        "check_syntax",
        "Assemble the submission with the symbols of one visible config: 'All checks passed. "
        "0 error(s), 0 warning(s)', or each error and warning with its line and column.",
        (_SOME_CONFIG,),
        tracks=_ACCEL,
    ),
    ToolSpec(
        "test",
        "Judge the submission on the visible configs: pass or fail per config, with the reason "
        "(which trial, element, expected and found values).",
    ),
    ToolSpec(
        "run_eval",
        "Run the submission in the simulator on every visible config: the share of output "
        "elements that match the reference, cycles and speedup over the baseline, why it fails.",
        tracks=_ACCEL,
    ),
    ToolSpec(
        "bench",
        "Time the submission against the baseline on the visible configs: speedup and fraction "
        "of speed-of-light per config (devices that are not timed say so).",
    ),
    ToolSpec(
        "view",
        "Show the output check of one visible config: errors against the reference, the bound "
        "they are held to, the share of matching elements, the reason it fails.",
        (_CONFIG,),
    ),
    ToolSpec(
        "view_output",
        "Show the submission's output on one visible config against the reference, row by row: "
        "each row's largest error, how many elements are wrong, the first wrong one.",
        (
            _SOME_CONFIG,
            Param(
                "rows",
                "integer",
                f"rows to show, 1 to {MAX_VIEW_ROWS} (default 32)",
                required=False,
            ),
        ),
        tracks=_ACCEL,
    ),
    ToolSpec(
        "instruction_count",
        "Count the instructions the submission executes on one visible config, per unit, next "
        "to the baseline's count.",
        (_SOME_CONFIG,),
        tracks=_ACCEL,
    ),
    ToolSpec(
        "profile",
        "Profile the submission on one visible config in the simulator: cycles against the "
        "baseline and the roofline bound of that config and hardware, busy cycles per unit, "
        "stall cycles by cause, DMA bytes read and written.",
        (_SOME_CONFIG,),
        tracks=_ACCEL,
    ),
    ToolSpec(
        "grep_manual",
        "Search the ISA manual for a regular expression (case-insensitive): whole instruction "
        "entries (format, operands, operation, cost, example) and matching paragraphs.",
        (Param("pattern", "string", "a Python regular expression, e.g. an instruction name"),),
        tracks=_ACCEL,
    ),
    ToolSpec(
        "grep",
        "Search the documents of the workspace (TASK.md, MANUAL.md, reference/, configs.json) "
        "for a regular expression (case-insensitive); prints matching lines with their numbers.",
        (Param("pattern", "string", "a Python regular expression"),),
    ),
    ToolSpec(
        "list_files",
        "List the files of the workspace with their sizes.",
        scope="agent",
    ),
    ToolSpec(
        "read_file",
        "Read a text file of the workspace (with line numbers).",
        (
            Param("path", "string", "path relative to the workspace"),
            Param("offset", "integer", "first line to show, from 1 (default 1)", required=False),
        ),
        scope="agent",
    ),
    ToolSpec(
        "write_file",
        "Write a text file of the workspace, replacing its whole content.",
        (
            Param("path", "string", "path relative to the workspace"),
            Param("content", "string", "the complete new content of the file"),
        ),
        scope="agent",
    ),
    ToolSpec(
        "submit",
        "Finish: the contract's files as they are now are your submission. Call it once, when "
        "you are done.",
        scope="agent",
    ),
)

TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in TOOLS)


def tools_for(track: str, scope: ToolScope | None = None) -> list[ToolSpec]:
    """The tools offered on `track`: those of `scope` only, or every tool when `scope` is None."""
    return [
        t
        for t in TOOLS
        if (t.tracks is None or track in t.tracks) and (scope is None or t.scope == scope)
    ]


class ToolResult(BaseModel):
    """What a tool answered: whether it went well, and its text for the agent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    text: str
    submitted: bool = False
    """Set by `submit` when the contract's files are in place: the agent is done."""


class ToolCallLogged(BaseModel):
    """One line of `.gauntlet-ws.log`."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["tool_call"] = "tool_call"
    schema_version: int = 1
    time: datetime
    caller: str
    """`gauntlet-ws`, `toolcall`, ...: who called."""
    tool: str
    args: dict[str, Any]
    ok: bool
    duration_s: float
    output: str
    """The tool's answer, cut at `LOG_OUTPUT_CHARS` characters."""


class Toolbox:
    """The tools of one workspace, for one task and device.

    Calls are serialized (one at a time). The judge's verdict is cached by the content of the
    contract's files, so `check`, `test`, `bench` and `view` on an unchanged submission judge it
    once. Every new submission draws fresh inputs (the seed moves on), and all tools see the same
    inputs for the same submission: the `accel` tools simulate it with that seed too.
    """

    def __init__(
        self,
        task: Task,
        workspace: Path,
        *,
        device: str = "cpu",
        seed: int = 0,
        judge: JudgeFunction | None = None,
        log_path: Path | None = None,
    ) -> None:
        """Tools for `workspace`.

        Args:
            task: The task (its hidden configs are never used here).
            workspace: The attempt's workspace.
            device: Where the feedback judge runs.
            seed: First seed of the feedback judge's inputs (never the run's secret).
            judge: The judge function (default `gauntlet.judge.judge`).
            log_path: The call log (default `.gauntlet-ws.log` in the workspace).
        """
        self.task = task
        self.workspace = Path(workspace).resolve()
        self.device = device
        self._seed = seed
        self._judge = judge
        self.log_path = log_path if log_path is not None else self.workspace / ".gauntlet-ws.log"
        self._lock = threading.Lock()
        self._cached: tuple[str, Verdict] | None = None
        self._seeded: tuple[str, int] | None = None
        self.calls = 0

    def specs(self, scope: ToolScope | None = None) -> list[ToolSpec]:
        """The tools this task offers."""
        return tools_for(self.task.spec.track, scope)

    def call(
        self,
        name: str,
        args: Mapping[str, Any],
        *,
        caller: str,
        scope: ToolScope | None = None,
    ) -> ToolResult:
        """Run one tool. Bad names or arguments come back as a failed result the agent can read.

        Args:
            name: The tool.
            args: Its arguments (JSON values).
            caller: Who calls, for the log.
            scope: Only tools of this scope may be called (None: every tool of the task).

        Returns:
            The tool's result.
        """
        started = time.monotonic()
        offered = self.specs(scope)
        spec = next((t for t in offered if t.name == name), None)
        if spec is None:
            known = ", ".join(t.name for t in offered)
            result = ToolResult(ok=False, text=f"unknown tool '{name}' (tools: {known})")
        else:
            problem = _argument_problem(spec, args)
            if problem is not None:
                result = ToolResult(ok=False, text=problem)
            else:
                with self._lock:
                    result = getattr(self, f"_tool_{name}")(**args)
        self.calls += 1
        self._log(caller, name, dict(args), result, time.monotonic() - started)
        return result

    # The feedback tools.

    def _refuse_links(self) -> ToolResult | None:
        linked = self._linked_files()
        if not linked:
            return None
        return ToolResult(
            ok=False,
            text=f"contract: failed\n\n{', '.join(linked)}: a symbolic link; the submission must "
            "be regular files in the workspace",
        )

    def _tool_check(self) -> ToolResult:
        # The judge's first three gates only (nothing of the submission runs): fast feedback.
        refused = self._refuse_links()
        if refused is not None:
            return refused
        from gauntlet.judge.pipeline import check_static

        verdict = check_static(self.task, self.workspace, device=self.device)
        lines = [f"{g.name}: {g.state}" for g in verdict.gates if g.state != "skipped"]
        if verdict.status != "pass":
            return ToolResult(ok=False, text="\n".join([*lines, "", verdict.reason]))
        return ToolResult(ok=True, text="\n".join([*lines, "All checks passed."]))

    def _tool_test(self) -> ToolResult:
        refused = self._refuse_links()
        if refused is not None:
            return refused
        verdict = self._verdict()
        lines = [_headline(verdict)]
        for result in verdict.visible():
            lines.append(_config_line(result))
        return ToolResult(ok=verdict.status == "pass", text="\n".join(lines))

    def _tool_bench(self) -> ToolResult:
        refused = self._refuse_links()
        if refused is not None:
            return refused
        verdict = self._verdict()
        lines = [_headline(verdict)]
        if not verdict.timed:
            note = verdict.timing_note or f"device '{verdict.device}' is not timed"
            lines.append(f"not timed: {note}")
            return ToolResult(ok=verdict.status == "pass", text="\n".join(lines))
        for result in verdict.visible():
            lines.append(_timing_line(result))
        if verdict.speedup is not None:
            lines.append(f"geometric mean speedup: {verdict.speedup:.3f}x")
        if verdict.sol_fraction is not None:
            lines.append(f"mean fraction of speed-of-light: {verdict.sol_fraction:.3f}")
        return ToolResult(ok=verdict.status == "pass", text="\n".join(lines))

    def _tool_view(self, config: str) -> ToolResult:
        names = [c.name for c in self.task.visible_configs]
        if config not in names:
            return ToolResult(
                ok=False, text=f"no visible config '{config}' (visible: {', '.join(names)})"
            )
        refused = self._refuse_links()
        if refused is not None:
            return refused
        verdict = self._verdict()
        result = next((r for r in verdict.visible() if r.config.name == config), None)
        if result is None or result.correct is None:
            return ToolResult(
                ok=False,
                text=f"config '{config}' was not checked: {_headline(verdict)}",
            )
        return ToolResult(ok=bool(result.correct), text=_config_detail(result))

    # The accel tools (gauntlet.accel.tools), on the contract's assembly file as it is now.

    def _tool_grep_manual(self, pattern: str) -> ToolResult:
        text = _accel_function(self.task, "grep_manual")(self.task, pattern)
        return ToolResult(ok=True, text=text)

    def _tool_check_syntax(self, config: str | None = None) -> ToolResult:
        source = self._accel_source(config)
        if isinstance(source, ToolResult):
            return source
        text = _accel_function(self.task, "check_syntax")(self.task, source[0], config)
        return ToolResult(ok=_last_line(text).startswith("All checks passed."), text=text)

    def _tool_run_eval(self) -> ToolResult:
        source = self._accel_source(None)
        if isinstance(source, ToolResult):
            return source
        text = _accel_function(self.task, "run_eval")(self.task, source[0], seed=source[1])
        count = len(self.task.visible_configs)
        return ToolResult(ok=_last_line(text).startswith(f"{count}/{count} "), text=text)

    def _tool_view_output(self, config: str | None = None, rows: int = 32) -> ToolResult:
        if not 1 <= rows <= MAX_VIEW_ROWS:
            return ToolResult(ok=False, text=f"rows must be 1 to {MAX_VIEW_ROWS}, not {rows}")
        source = self._accel_source(config)
        if isinstance(source, ToolResult):
            return source
        text = _accel_function(self.task, "view_output")(
            self.task, source[0], config, seed=source[1], rows=rows
        )
        return ToolResult(ok=text.split("\n", 1)[0].endswith(": correct"), text=text)

    def _tool_instruction_count(self, config: str | None = None) -> ToolResult:
        source = self._accel_source(config)
        if isinstance(source, ToolResult):
            return source
        text = _accel_function(self.task, "instruction_count")(
            self.task, source[0], config, seed=source[1]
        )
        return ToolResult(ok=text.split("\n", 1)[0].endswith(" instructions executed"), text=text)

    def _tool_profile(self, config: str | None = None) -> ToolResult:
        source = self._accel_source(config)
        if isinstance(source, ToolResult):
            return source
        text = _accel_function(self.task, "profile")(self.task, source[0], config, seed=source[1])
        return ToolResult(ok="\ncycles: " in text, text=text)

    def _tool_grep(self, pattern: str) -> ToolResult:
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except re.error as err:
            return ToolResult(ok=False, text=f"invalid regular expression {pattern!r}: {err}")
        hits: list[str] = []
        for path in self._doc_files():
            relative = path.relative_to(self.workspace).as_posix()
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if regex.search(line):
                    hits.append(f"{relative}:{number}: {line}")
        if not hits:
            return ToolResult(ok=True, text=f"no match for {pattern!r}")
        more = len(hits) - MAX_GREP_HITS
        shown = hits[:MAX_GREP_HITS] + ([f"[... {more} more matches]"] if more > 0 else [])
        return ToolResult(ok=True, text="\n".join(shown))

    # The agent's own tools (function-calling agents only).

    def _tool_list_files(self) -> ToolResult:
        lines = []
        for path in sorted(self.workspace.rglob("*")):
            relative = path.relative_to(self.workspace)
            if SKIPPED_DIRS & set(relative.parts) or path.name in HARNESS_FILES:
                continue
            if path.is_file():
                lines.append(f"{relative.as_posix()}  ({path.stat().st_size} bytes)")
        return ToolResult(ok=True, text="\n".join(lines) or "(no files)")

    def _tool_read_file(self, path: str, offset: int = 1) -> ToolResult:
        target, problem = self._resolve(path)
        if target is None:
            return ToolResult(ok=False, text=problem)
        if not target.is_file():
            return ToolResult(ok=False, text=f"no file '{path}' in the workspace")
        try:
            text = target.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return ToolResult(ok=False, text=f"'{path}' is not UTF-8 text")
        lines = text.splitlines()
        start = max(offset, 1)
        shown: list[str] = []
        size = 0
        for number in range(start, len(lines) + 1):
            line = f"{number:5d}  {lines[number - 1]}"
            if size + len(line) > MAX_FILE_CHARS:
                shown.append(f"[... cut; call read_file with offset={number} for the rest]")
                break
            shown.append(line)
            size += len(line) + 1
        return ToolResult(ok=True, text="\n".join(shown) if shown else f"('{path}' is empty)")

    def _tool_write_file(self, path: str, content: str) -> ToolResult:
        target, problem = self._resolve(path)
        if target is None:
            return ToolResult(ok=False, text=problem)
        if target.name in HARNESS_FILES and target.parent == self.workspace:
            return ToolResult(ok=False, text=f"'{path}' belongs to the harness; it is not written")
        if len(content) > MAX_FILE_CHARS:
            return ToolResult(
                ok=False, text=f"content of {len(content)} characters is above {MAX_FILE_CHARS}"
            )
        if target.is_dir():
            return ToolResult(ok=False, text=f"'{path}' is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.unlink()
        target.write_text(content, encoding="utf-8")
        return ToolResult(ok=True, text=f"wrote {len(content)} characters to '{path}'")

    def _tool_submit(self) -> ToolResult:
        missing = [f for f in self.task.spec.submission.files if not (self.workspace / f).is_file()]
        if missing:
            return ToolResult(
                ok=False,
                text=f"cannot submit: missing {', '.join(missing)}; write them first",
            )
        names = ", ".join(self.task.spec.submission.files)
        return ToolResult(ok=True, text=f"submitted {names}", submitted=True)

    # Helpers.

    def _linked_files(self) -> list[str]:
        """Contract files that are symbolic links (the judge takes regular files only)."""
        return [f for f in self.task.spec.submission.files if (self.workspace / f).is_symlink()]

    def _accel_source(self, config: str | None) -> tuple[str, int] | ToolResult:
        """The submission's assembly text and the seed of its inputs, or why there is none.

        Args:
            config: The visible config asked for (None: the tool's default).

        Returns:
            (source, seed), or a failed result naming the problem.
        """
        names = [c.name for c in self.task.visible_configs]
        if config is not None and config not in names:
            return ToolResult(
                ok=False, text=f"no visible config '{config}' (visible: {', '.join(names)})"
            )
        refused = self._refuse_links()
        if refused is not None:
            return refused
        name = self.task.spec.submission.files[0]
        try:
            source = (self.workspace / name).read_text(encoding="utf-8")
        except FileNotFoundError:
            return ToolResult(ok=False, text=f"no {name} in the workspace; write it first")
        except UnicodeDecodeError:
            return ToolResult(ok=False, text=f"{name} is not UTF-8 text")
        return source, self._seed_for(self._submission_key())

    def _seed_for(self, key: str) -> int:
        """The seed of the inputs for the submission `key`: the same until it changes."""
        if self._seeded is None or self._seeded[0] != key:
            self._seeded = (key, self._seed)
            self._seed += 1
        return self._seeded[1]

    def _verdict(self) -> Verdict:
        key = self._submission_key()
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        judge = self._judge
        if judge is None:
            from gauntlet.judge import judge as default_judge

            judge = default_judge
        verdict = judge(
            self.task,
            self.workspace,
            device=self.device,
            configs="visible",
            seed=self._seed_for(key),
            mode="feedback",
        )
        self._cached = (key, verdict)
        return verdict

    def _submission_key(self) -> str:
        hasher = hashlib.sha256()
        for name in self.task.spec.submission.files:
            path = self.workspace / name
            hasher.update(name.encode() + b"\0")
            try:
                hasher.update(path.read_bytes() if not path.is_symlink() else b"symlink")
            except OSError:
                hasher.update(b"missing")
            hasher.update(b"\0")
        return hasher.hexdigest()

    def _resolve(self, path: str) -> tuple[Path | None, str]:
        if not path or Path(path).is_absolute():
            return None, f"'{path}': give a path relative to the workspace"
        target = (self.workspace / path).resolve()
        if not target.is_relative_to(self.workspace):
            return None, f"'{path}' is outside the workspace"
        return target, ""

    def _doc_files(self) -> list[Path]:
        names = ["TASK.md", "MANUAL.md", "configs.json"]
        found = [self.workspace / n for n in names if (self.workspace / n).is_file()]
        reference = self.workspace / "reference"
        if reference.is_dir():
            found += sorted(p for p in reference.rglob("*") if p.is_file())
        return found

    def _log(
        self, caller: str, tool: str, args: dict[str, Any], result: ToolResult, duration_s: float
    ) -> None:
        shown = {
            k: (v if not isinstance(v, str) or len(v) < 400 else v[:400] + "...")
            for k, v in args.items()
        }
        record = ToolCallLogged(
            time=datetime.now(UTC),
            caller=caller,
            tool=tool,
            args=shown,
            ok=result.ok,
            duration_s=round(duration_s, 4),
            output=result.text[:LOG_OUTPUT_CHARS],
        )
        try:
            with self.log_path.open("a", encoding="utf-8") as handle:
                handle.write(record.model_dump_json() + "\n")
        except OSError as err:
            logger.warning("cannot append to tool log '%s': %s", self.log_path, err)


def _argument_problem(spec: ToolSpec, args: Mapping[str, Any]) -> str | None:
    """Why `args` do not fit `spec`, in words the agent can act on; None when they fit."""
    known = {p.name: p for p in spec.params}
    extra = sorted(set(args) - set(known))
    if extra:
        names = ", ".join(map(repr, extra))
        return f"tool '{spec.name}' takes no argument {names}; usage: {spec.usage()}"
    for param in spec.params:
        if param.name not in args:
            if param.required:
                return (
                    f"tool '{spec.name}' needs '{param.name}' ({param.description}); "
                    f"usage: {spec.usage()}"
                )
            continue
        value = args[param.name]
        expected = str if param.kind == "string" else int
        if not isinstance(value, expected) or isinstance(value, bool):
            return (
                f"argument '{param.name}' of tool '{spec.name}' must be a {param.kind}, "
                f"not {json.dumps(value)[:80]}"
            )
    return None


def _accel_function(task: Task, name: str) -> Callable[..., str]:
    """The function `name` of `gauntlet.accel.tools`, imported when an accel tool is called.

    Raises:
        ConfigError: gauntlet.accel cannot be imported here.
    """
    try:
        from gauntlet.accel import tools
    except ImportError as err:
        raise ConfigError(
            f"the '{name}' tool of task '{task.task_id}' needs gauntlet.accel, which cannot be "
            f"imported: {err}"
        ) from err
    function: Callable[..., str] = getattr(tools, name)
    return function


def _last_line(text: str) -> str:
    return text.rstrip("\n").rsplit("\n", 1)[-1]


def _headline(verdict: Verdict) -> str:
    passed = [r for r in verdict.visible() if r.correct]
    checked = [r for r in verdict.visible() if r.correct is not None]
    head = f"status: {verdict.status}"
    if checked:
        head += f" ({len(passed)}/{len(checked)} visible configs correct)"
    return head + (f"\nreason: {verdict.reason}" if verdict.reason else "")


def _config_line(result: ConfigResult) -> str:
    state = {True: "PASS", False: "FAIL", None: "not run"}[result.correct]
    line = f"{result.config.label()}: {state}"
    if result.rel_l2_err is not None and result.rel_l2_bound is not None:
        line += f" (rel L2 {result.rel_l2_err:.2e}, bound {result.rel_l2_bound:.2e})"
    if result.correct is False and result.reason:
        line += f"\n    {result.reason}"
    return line


def _timing_line(result: ConfigResult) -> str:
    timing = result.timing
    if timing is None:
        return f"{result.config.label()}: not timed"
    line = (
        f"{result.config.label()}: baseline {timing.baseline:.4g} {timing.unit}, "
        f"yours {timing.candidate:.4g} {timing.unit}, speedup {timing.speedup:.3f}x"
    )
    if timing.speedup_ci is not None:
        low, high = timing.speedup_ci
        line += f" [95% CI {low:.3f}-{high:.3f}]"
    if timing.sol_fraction is not None:
        line += f", {timing.sol_fraction:.1%} of speed-of-light"
    return line


def _config_detail(result: ConfigResult) -> str:
    rows = [
        ("config", result.config.label()),
        ("correct", str(result.correct)),
        ("trials", str(result.trials)),
        ("max abs error", _number(result.max_abs_err)),
        ("max rel error", _number(result.max_rel_err)),
        ("rel L2 error", _number(result.rel_l2_err)),
        ("rel L2 bound", _number(result.rel_l2_bound)),
        (
            "matching elements",
            "-" if result.match_fraction is None else f"{result.match_fraction:.4%}",
        ),
    ]
    width = max(len(k) for k, _ in rows)
    lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
    if result.reason:
        lines.append(f"{'reason'.ljust(width)}  {result.reason}")
    return "\n".join(lines)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3e}"
