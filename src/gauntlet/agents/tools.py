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
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from gauntlet.errors import ConfigError, GauntletError
from gauntlet.workspace import (
    BRIEF_FILE,
    CONFIGS_FILE,
    DOCS_DIR,
    MANUAL_FILE,
    WS_CONFIG_FILE,
    UnsafeFileError,
    file_kind,
    read_beneath,
    scan,
    starting_file,
    tool_log_path,
    tools_dir,
    write_beneath,
)

if TYPE_CHECKING:
    from gauntlet.judge.verdict import ConfigResult, Verdict
    from gauntlet.task import Task

logger = logging.getLogger(__name__)

ToolScope = Literal["feedback", "agent"]
ParamKind = Literal["string", "integer"]
JudgeFunction = Callable[..., "Verdict"]

#: Largest file `read_file` returns in one call and `write_file` accepts, in characters.
MAX_FILE_CHARS = 200_000
#: Largest workspace file `read_file` reads at all, in bytes (FIFOs and devices never).
MAX_READ_BYTES = 8 << 20
#: Most lines `grep` returns.
MAX_GREP_HITS = 60
#: Longest pattern `grep` and `grep_manual` take.
MAX_PATTERN_CHARS = 1_000
#: Seconds and bytes of address space a pattern search gets (in its own process).
PATTERN_TIME_LIMIT_S = 1.5
PATTERN_MEMORY_BYTES = 2 << 30
#: Seconds a search process may take to start (import) before its own timer runs.
CHILD_START_ALLOWANCE_S = 30.0
#: Largest document `grep` searches, and task file checked for quotes, in bytes.
MAX_DOCUMENT_BYTES = 4 << 20
#: Most entries `list_files` lists (and files of a folder read for `grep` or quotes).
MAX_LISTED = 2_000
#: Longest answer of a tool, in characters.
MAX_ANSWER_CHARS = 30_000
#: A line of a task file the agent does not see must be this long (stripped) to be withheld.
MIN_QUOTED_CHARS = 16
#: What replaces a line of an answer that quotes a task file the agent does not see.
WITHHELD = "[line withheld: it quotes a file of the task that the agent does not see]"
#: Characters of a tool's output kept in the tool log.
LOG_OUTPUT_CHARS = 4_000
#: Files the harness writes in the workspace; the file tools refuse to write them.
HARNESS_FILES = frozenset({WS_CONFIG_FILE})
#: Folders skipped by `list_files` (caches, not the agent's work).
SKIPPED_DIRS = frozenset({"__pycache__", ".git"})
#: Most rows `view_output` shows.
MAX_VIEW_ROWS = 256
#: Prefix of the private copies of the submission that the judge reads, in the tools folder.
SNAPSHOT_PREFIX = "submission-"


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

    What a tool reads of the workspace it reads through `gauntlet.workspace.read_beneath` (no
    link followed, regular files only, capped); the judge gets a private copy of the contract's
    files, never the workspace; `grep` searches the copies in the tools folder. Every answer
    passes through `_answer`: tracebacks cut to the submission's own frames, lines quoting the
    task's unseen files withheld, the length capped.
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
            log_path: The call log (default `tool-calls.jsonl` in the workspace's tools folder);
                never inside the workspace.

        Raises:
            ConfigError: `log_path` lies inside the workspace, or the tools folder is a link.
        """
        self.task = task
        self.workspace = Path(workspace).resolve()
        self.device = device
        self._seed = seed
        self._judge = judge
        self.tools_dir = tools_dir(self.workspace)
        if self.tools_dir.is_symlink():
            raise ConfigError(
                f"the tools folder '{self.tools_dir}' is a link; rebuild the workspace"
            )
        self.tools_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.log_path = Path(log_path) if log_path is not None else tool_log_path(self.workspace)
        if self.log_path.resolve().is_relative_to(self.workspace):
            raise ConfigError(
                f"the tool log '{self.log_path}' lies inside the workspace '{self.workspace}', "
                "which the agent writes; give a path outside it"
            )
        self._lock = threading.Lock()
        self._cached: tuple[str, Verdict] | None = None
        self._seeded: tuple[str, int] | None = None
        self._unseen: _UnseenLines | None = None
        self.calls = 0
        self.errors: list[str] = []
        """Failures of our own machinery while a tool ran (each also answered to the agent)."""

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

        So does any failure of the harness while the tool runs: it is logged, kept in `errors`,
        and answered as `tool '<name>' failed in the harness: ...`; this method never raises.

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
                    result = self._run(name, dict(args))
        self.calls += 1
        self._log(caller, name, dict(args), result, time.monotonic() - started)
        return result

    def _run(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Run a tool whose arguments fit; its answer, made safe to show (`_answer`)."""
        try:
            result: ToolResult = getattr(self, f"_tool_{name}")(**args)
            return self._answer(result)
        # An agent's tool call must get an answer whatever breaks underneath: our own failures
        # (GauntletError) and our bugs alike are logged, kept in `errors` and answered.
        except Exception as err:  # noqa: BLE001
            message = f"tool '{name}' failed in the harness: {type(err).__name__}: {err}"
            if isinstance(err, GauntletError):
                message = f"tool '{name}' failed in the harness: {err}"
                logger.error("%s (workspace %s)", message, self.workspace)
            else:
                logger.exception("tool '%s' failed (workspace %s)", name, self.workspace)
            self.errors.append(message[:2000])
            try:
                return self._answer(ToolResult(ok=False, text=message))
            except Exception:  # noqa: BLE001 - the answer itself failed: say only that
                return ToolResult(ok=False, text=f"tool '{name}' failed in the harness")

    # The feedback tools.

    def _tool_check(self) -> ToolResult:
        # The judge's first three gates only (nothing of the submission runs): fast feedback.
        snapshot = self._snapshot()
        if isinstance(snapshot, ToolResult):
            return snapshot
        from gauntlet.judge.pipeline import check_static

        with self._copied(snapshot) as folder:
            verdict = check_static(self.task, folder, device=self.device)
        lines = [f"{g.name}: {g.state}" for g in verdict.gates if g.state != "skipped"]
        if verdict.status != "pass":
            return ToolResult(ok=False, text="\n".join([*lines, "", verdict.reason]))
        return ToolResult(ok=True, text="\n".join([*lines, "All checks passed."]))

    def _tool_test(self) -> ToolResult:
        verdict = self._verdict()
        if isinstance(verdict, ToolResult):
            return verdict
        lines = [_headline(verdict)]
        for result in verdict.visible():
            lines.append(_config_line(result))
        return ToolResult(ok=verdict.status == "pass", text="\n".join(lines))

    def _tool_bench(self) -> ToolResult:
        verdict = self._verdict()
        if isinstance(verdict, ToolResult):
            return verdict
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
        verdict = self._verdict()
        if isinstance(verdict, ToolResult):
            return verdict
        result = next((r for r in verdict.visible() if r.config.name == config), None)
        if result is None or result.correct is None:
            return ToolResult(
                ok=False,
                text=f"config '{config}' was not checked: {_headline(verdict)}",
            )
        return ToolResult(ok=bool(result.correct), text=_config_detail(result))

    # The accel tools (gauntlet.accel.tools), on the contract's assembly file as it is now.

    def _tool_grep_manual(self, pattern: str) -> ToolResult:
        if len(pattern) > MAX_PATTERN_CHARS:
            return ToolResult(ok=False, text=_long_pattern(pattern))
        try:
            text = _accel_function(self.task, "grep_manual")(self.task, pattern)
        except PatternError as err:
            return ToolResult(ok=False, text=str(err))
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
        if len(pattern) > MAX_PATTERN_CHARS:
            return ToolResult(ok=False, text=_long_pattern(pattern))
        documents = self._documents()
        if isinstance(documents, ToolResult):
            return documents
        places: list[tuple[str, int, str]] = []
        for relative, text in documents:
            places += [(relative, n, line) for n, line in enumerate(text.splitlines(), start=1)]
        try:
            found, count = search_lines(pattern, [line for _, _, line in places], MAX_GREP_HITS)
        except PatternError as err:
            return ToolResult(ok=False, text=str(err))
        if not found:
            return ToolResult(ok=True, text=f"no match for {pattern!r}")
        hits = [f"{places[i][0]}:{places[i][1]}: {_cut(places[i][2], 400)}" for i in found]
        more = count - len(found)
        return ToolResult(
            ok=True, text="\n".join(hits + ([f"[... {more} more matches]"] if more > 0 else []))
        )

    # The agent's own tools (function-calling agents only).

    def _tool_list_files(self) -> ToolResult:
        entries, cut = scan(self.workspace, max_entries=MAX_LISTED)
        lines = []
        for entry in entries:
            parts = entry.relative.split("/")
            if SKIPPED_DIRS & set(parts) or entry.relative in HARNESS_FILES:
                continue
            mode = entry.status.st_mode
            if stat.S_ISREG(mode):
                lines.append(f"{entry.relative}  ({entry.status.st_size} bytes)")
            elif not stat.S_ISDIR(mode):
                lines.append(f"{entry.relative}  ({file_kind(mode)}; not read by the tools)")
        if cut:
            lines.append(f"[... listing stopped after {len(entries)} entries]")
        return ToolResult(ok=True, text="\n".join(lines) or "(no files)")

    def _tool_read_file(self, path: str, offset: int = 1) -> ToolResult:
        problem = _path_problem(path)
        if problem is not None:
            return ToolResult(ok=False, text=problem)
        try:
            data = read_beneath(self.workspace, path, limit_bytes=MAX_READ_BYTES)
        except UnsafeFileError as err:
            return ToolResult(ok=False, text=str(err))
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return ToolResult(ok=False, text=f"no file '{path}' in the workspace")
        except OSError as err:
            return ToolResult(ok=False, text=f"'{path}' cannot be read: {err.strerror}")
        try:
            text = data.decode("utf-8")
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
        problem = _path_problem(path)
        if problem is not None:
            return ToolResult(ok=False, text=problem)
        if PurePosixPath(path).as_posix() in HARNESS_FILES:
            return ToolResult(ok=False, text=f"'{path}' belongs to the harness; it is not written")
        if len(content) > MAX_FILE_CHARS:
            return ToolResult(
                ok=False, text=f"content of {len(content)} characters is above {MAX_FILE_CHARS}"
            )
        try:
            write_beneath(self.workspace, path, content.encode("utf-8"))
        except UnsafeFileError as err:
            return ToolResult(ok=False, text=str(err))
        except OSError as err:
            return ToolResult(ok=False, text=f"'{path}' cannot be written: {err.strerror}")
        return ToolResult(ok=True, text=f"wrote {len(content)} characters to '{path}'")

    def _tool_submit(self) -> ToolResult:
        snapshot = self._snapshot()
        if isinstance(snapshot, ToolResult):
            return ToolResult(ok=False, text=f"cannot submit: {snapshot.text}")
        missing = [f for f in self.task.spec.submission.files if f not in snapshot]
        if missing:
            return ToolResult(
                ok=False,
                text=f"cannot submit: missing {', '.join(missing)}; write them first",
            )
        names = ", ".join(self.task.spec.submission.files)
        return ToolResult(ok=True, text=f"submitted {names}", submitted=True)

    # Helpers.

    def _snapshot(self) -> dict[str, bytes] | ToolResult:
        """The contract's files as they are now (missing ones left out), or why they are refused.

        Read with `read_beneath`: a link anywhere on a file's path, a FIFO, a device, a folder
        or a file above the contract's size limit is refused, never opened or read whole.
        """
        files: dict[str, bytes] = {}
        problems: list[str] = []
        limit = self.task.spec.submission.max_bytes
        for name in self.task.spec.submission.files:
            try:
                files[name] = read_beneath(self.workspace, name, limit_bytes=limit)
            except (FileNotFoundError, NotADirectoryError):
                continue  # the contract gate names it missing
            except UnsafeFileError as err:
                problems.append(str(err))
            except OSError as err:
                problems.append(f"'{name}' cannot be read: {err.strerror}")
        if problems:
            return ToolResult(
                ok=False,
                text="contract: failed\n\n"
                + "\n".join(problems)
                + "\nThe submission must be regular files in the workspace.",
            )
        return files

    @contextmanager
    def _copied(self, snapshot: Mapping[str, bytes]) -> Iterator[Path]:
        """A private folder (in the tools folder) holding `snapshot`: what the judge reads."""
        with tempfile.TemporaryDirectory(prefix=SNAPSHOT_PREFIX, dir=self.tools_dir) as tmp:
            folder = Path(tmp)
            for name, data in snapshot.items():
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            yield folder

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
        snapshot = self._snapshot()
        if isinstance(snapshot, ToolResult):
            return snapshot
        name = self.task.spec.submission.files[0]
        if name not in snapshot:
            return ToolResult(ok=False, text=f"no {name} in the workspace; write it first")
        try:
            source = snapshot[name].decode("utf-8")
        except UnicodeDecodeError:
            return ToolResult(ok=False, text=f"{name} is not UTF-8 text")
        return source, self._seed_for(_snapshot_key(snapshot))

    def _seed_for(self, key: str) -> int:
        """The seed of the inputs for the submission `key`: the same until it changes."""
        if self._seeded is None or self._seeded[0] != key:
            self._seeded = (key, self._seed)
            self._seed += 1
        return self._seeded[1]

    def _verdict(self) -> Verdict | ToolResult:
        snapshot = self._snapshot()
        if isinstance(snapshot, ToolResult):
            return snapshot
        key = _snapshot_key(snapshot)
        if self._cached is not None and self._cached[0] == key:
            return self._cached[1]
        judge = self._judge
        if judge is None:
            from gauntlet.judge import judge as default_judge

            judge = default_judge
        with self._copied(snapshot) as folder:
            verdict = judge(
                self.task,
                folder,
                device=self.device,
                configs="visible",
                seed=self._seed_for(key),
                mode="feedback",
            )
        self._cached = (key, verdict)
        return verdict

    def _documents(self) -> list[tuple[str, str]] | ToolResult:
        """The documents `grep` searches: the copies made in the tools folder at build time."""
        root = self.tools_dir / DOCS_DIR
        if not root.is_dir() or root.is_symlink():
            return ToolResult(
                ok=False,
                text=f"this workspace has no copies of its documents in '{root}' (it was not made "
                "by gauntlet.workspace.build_workspace); grep has nothing to search",
            )
        found: list[tuple[str, str]] = []
        entries, _ = scan(root, max_entries=MAX_LISTED)
        for entry in sorted(entries, key=lambda e: _document_order(e.relative)):
            if not stat.S_ISREG(entry.status.st_mode):
                continue
            try:
                data = read_beneath(root, entry.relative, limit_bytes=MAX_DOCUMENT_BYTES)
                found.append((entry.relative, data.decode("utf-8")))
            except (OSError, UnsafeFileError, UnicodeDecodeError) as err:
                logger.warning("grep skips '%s': %s", entry.relative, err)
        return found

    def _answer(self, result: ToolResult) -> ToolResult:
        """`result` as the agent may see it.

        Python tracebacks keep the submission's own frames only; private paths read as the
        workspace; a line quoting a line of the task's unseen files (expert, `task.toml`, input
        generator, hidden configs, a reference not shown) is withheld, unless the submission
        holds that line itself; the text is cut at `MAX_ANSWER_CHARS`.
        """
        names = tuple(self.task.spec.submission.files)
        text = _submission_frames(result.text, names)
        text = re.sub(
            re.escape(str(self.tools_dir)) + "/" + SNAPSHOT_PREFIX + r"[^/\s'\"]*",
            lambda _: str(self.workspace),
            text,
        )
        text = text.replace(str(self.tools_dir), "<tools folder>")
        if self._unseen is None:
            self._unseen = _UnseenLines(self.task, self._public_texts())
        snapshot = self._snapshot()
        own = set()
        if isinstance(snapshot, dict):
            for data in snapshot.values():
                own |= {line.strip() for line in data.decode("utf-8", "replace").splitlines()}
        text = self._unseen.withhold(text, own)
        if len(text) > MAX_ANSWER_CHARS:
            text = text[:MAX_ANSWER_CHARS] + f"\n[... answer cut at {MAX_ANSWER_CHARS} characters]"
        return result.model_copy(update={"text": text})

    def _public_texts(self) -> list[str]:
        """What the agent sees of the task: its documents and the starting file."""
        documents = self._documents()
        texts = [text for _, text in documents] if isinstance(documents, list) else []
        starting = starting_file(self.task)
        if starting is not None:
            texts.append(self.task.path(starting).read_text(encoding="utf-8", errors="replace"))
        return texts

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
        line = (record.model_dump_json() + "\n").encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(self.log_path, flags, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as err:
            logger.warning("cannot append to tool log '%s': %s", self.log_path, err)


class PatternError(ValueError):
    """A search pattern that cannot be run: invalid, too long, too complex or too slow."""


def search_lines(pattern: str, lines: Sequence[str], max_hits: int) -> tuple[list[int], int]:
    """Indices of `lines` matching `pattern` (case-insensitive), searched in a separate process.

    Python's `re` cannot be interrupted and holds the interpreter while it backtracks, so the
    search runs in a fresh `python -I -S` whose own timer kills it after
    `PATTERN_TIME_LIMIT_S` seconds, with its address space capped at `PATTERN_MEMORY_BYTES`;
    a pattern nested too deep fails its compilation there, not here.

    Returns:
        The first `max_hits` indices, and how many lines match in all.

    Raises:
        PatternError: The pattern is invalid, too complex, too slow or too long.
    """
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(_long_pattern(pattern))
    reply = run_limited_python(
        _SEARCH_CHILD,
        {"pattern": pattern, "texts": list(lines), "max_hits": max_hits},
        what=f"the pattern {_cut(pattern, 80)!r}",
    )
    return [int(i) for i in reply["hits"]], int(reply["count"])


def run_limited_python(
    code: str, request: dict[str, Any], *, what: str, site: bool = False
) -> dict[str, Any]:
    """Run `code` in a fresh Python, `request` as JSON on its stdin, and return its JSON reply.

    `request` gains `limit_s` (`PATTERN_TIME_LIMIT_S`) and `memory_bytes`; the code arms
    `signal.setitimer(ITIMER_REAL, limit_s)` before the costly part (SIGALRM's default action
    ends the process, whatever C code runs) and answers `{"error": ...}` for what it caught.
    `site` allows the installed packages (for `gauntlet.accel`); the environment is empty but
    for single-threaded math libraries.

    Raises:
        PatternError: The code ran out of time or memory, crashed, or answered an error.
    """
    from gauntlet import process

    payload = {**request, "limit_s": PATTERN_TIME_LIMIT_S, "memory_bytes": PATTERN_MEMORY_BYTES}
    argv = [sys.executable, "-I", *([] if site else ["-S"]), "-c", code]
    env = {"PATH": os.defpath, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    finished = process.run(
        argv,
        timeout_s=PATTERN_TIME_LIMIT_S + CHILD_START_ALLOWANCE_S,
        env=env,
        stdin_data=json.dumps(payload).encode("utf-8"),
        output_limit=4 << 20,
    )
    if finished.timed_out or finished.returncode == -signal.SIGALRM:
        raise PatternError(
            f"{what} ran longer than {PATTERN_TIME_LIMIT_S:g} s and was stopped (a pattern "
            "like '(a+)+$' backtracks without end); simplify it, or search for a plain word"
        )
    if finished.returncode != 0:
        tail = finished.stderr.strip().splitlines()[-1:] or [finished.signal_name or "no output"]
        raise PatternError(
            f"{what} could not be searched for: the search process failed ({_cut(tail[0], 200)})"
        )
    try:
        reply = json.loads(finished.stdout)
    except ValueError as err:
        raise PatternError(f"{what} could not be searched for: {err}") from err
    if not isinstance(reply, dict):
        raise PatternError(f"{what} could not be searched for: a malformed reply")
    if "error" in reply:
        raise PatternError(f"{what}: {reply['error']}")
    return reply


#: The search process of `search_lines` (run by `python -I -S`, standard library only).
_SEARCH_CHILD = """\
import json, re, resource, signal, sys
request = json.loads(sys.stdin.buffer.read())
limit = request["memory_bytes"]
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
signal.setitimer(signal.ITIMER_REAL, request["limit_s"])
try:
    regex = re.compile(request["pattern"], re.IGNORECASE)
    hits = [i for i, line in enumerate(request["texts"]) if regex.search(line)]
except re.error as err:
    reply = {"error": f"invalid regular expression: {err}"}
except (RecursionError, MemoryError, OverflowError) as err:
    reply = {"error": f"too complex a regular expression ({type(err).__name__}); nest less"}
else:
    reply = {"hits": hits[: request["max_hits"]], "count": len(hits)}
signal.setitimer(signal.ITIMER_REAL, 0)
sys.stdout.write(json.dumps(reply))
"""


class _UnseenLines:
    """Lines of the task's files that the agent does not see, to keep out of tool answers.

    Every text file of the task folder counts (the expert, `task.toml` with the hidden configs,
    the input generator, a reference not shown, ...) except the lines the agent sees anyway:
    those of its documents and starting file. Lines shorter than `MIN_QUOTED_CHARS` (once
    stripped) are too common to tell anything and are not kept.
    """

    def __init__(self, task: Task, public_texts: Sequence[str]) -> None:
        public = {line.strip() for text in public_texts for line in text.splitlines()}
        self._by_start: dict[str, set[str]] = {}
        entries, _ = scan(task.root, max_entries=MAX_LISTED)
        for entry in entries:
            if not stat.S_ISREG(entry.status.st_mode) or SKIPPED_DIRS & set(
                entry.relative.split("/")
            ):
                continue
            try:
                data = read_beneath(task.root, entry.relative, limit_bytes=MAX_DOCUMENT_BYTES)
                text = data.decode("utf-8")
            except (OSError, UnsafeFileError, UnicodeDecodeError):
                continue
            for raw in text.splitlines():
                line = raw.strip()
                if len(line) >= MIN_QUOTED_CHARS and line not in public:
                    self._by_start.setdefault(line[:MIN_QUOTED_CHARS], set()).add(line)

    def withhold(self, text: str, allowed: set[str]) -> str:
        """`text` with each line that quotes an unseen line (not in `allowed`) withheld."""
        if not self._by_start:
            return text
        kept: list[str] = []
        for line in text.split("\n"):
            kept.append(WITHHELD if self._quotes(line, allowed) else line)
        return "\n".join(kept)

    def _quotes(self, line: str, allowed: set[str]) -> bool:
        for index in range(len(line) - MIN_QUOTED_CHARS + 1):
            candidates = self._by_start.get(line[index : index + MIN_QUOTED_CHARS])
            if candidates and any(
                line.startswith(c, index) and c not in allowed for c in candidates
            ):
                return True
        return False


#: The frame line of a Python traceback: `  File "PATH", line N, in NAME`.
_FRAME = re.compile(r'^(\s*)File "([^"\n]*)", line (\d+)(.*)$')


def _submission_frames(text: str, names: Sequence[str]) -> str:
    """`text` with each Python traceback cut to the frames of the submission's own files.

    A frame of a contract file (as the judge copies it, `.../submission/<name>`) is kept under
    its contract name with its source line; every other frame (the judge, the task's code,
    libraries) is dropped with its source lines and counted in one line.
    """
    if 'File "' not in text:
        return text
    out: list[str] = []
    dropped = 0
    keep_source: bool | None = None  # None: not inside a frame

    def flush() -> None:
        nonlocal dropped
        if dropped:
            out.append(f"  [{dropped} frame(s) outside the submission not shown]")
            dropped = 0

    for line in text.split("\n"):
        frame = _FRAME.match(line)
        if frame is not None:
            own = _contract_name(frame.group(2), names)
            if own is None:
                dropped += 1
                keep_source = False
                continue
            flush()
            out.append(f'{frame.group(1)}File "{own}", line {frame.group(3)}{frame.group(4)}')
            keep_source = True
            continue
        if keep_source is not None and line.startswith("    "):
            if keep_source:
                out.append(line)
            continue
        keep_source = None
        flush()
        out.append(line)
    flush()
    return "\n".join(out)


def _contract_name(path: str, names: Sequence[str]) -> str | None:
    for name in names:
        if path == name or path.endswith(f"/submission/{name}"):
            return name
    return None


def _snapshot_key(snapshot: Mapping[str, bytes]) -> str:
    hasher = hashlib.sha256()
    for name in sorted(snapshot):
        hasher.update(name.encode() + b"\0" + hashlib.sha256(snapshot[name]).digest())
    return hasher.hexdigest()


def _path_problem(path: str) -> str | None:
    """Why `path` is no path of a workspace file the agent may name; None when it is."""
    if not path or PurePosixPath(path).is_absolute():
        return f"'{path}': give a path relative to the workspace"
    if ".." in PurePosixPath(path).parts:
        return f"'{path}' is outside the workspace ('..' is not followed)"
    return None


def _document_order(relative: str) -> tuple[int, str]:
    order = (BRIEF_FILE, MANUAL_FILE, CONFIGS_FILE)
    return (order.index(relative) if relative in order else len(order), relative)


def _long_pattern(pattern: str) -> str:
    return f"the pattern has {len(pattern)} characters, above the limit of {MAX_PATTERN_CHARS}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


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
