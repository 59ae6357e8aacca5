"""Task folders: the `task.toml` models, their loading and validation.

A task folder holds `task.toml` and the files it names. It is read once, here, into frozen
pydantic models; every later stage receives these models, never the TOML. A malformed task fails
with the file, the key and what was expected (`TaskFormatError`).
"""

from __future__ import annotations

import ast
import math
import random
import tomllib
from collections.abc import Iterable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from gauntlet import expr, knobs, syntax
from gauntlet.errors import TaskFormatError

Track = Literal["triton2triton", "cuda2cuda", "torch2triton", "torch2cuda", "accel"]
Language = Literal["triton", "cuda", "torch", "asm"]
ParamValue = int | float | str | bool

TRACKS: tuple[str, ...] = Track.__args__  # type: ignore[attr-defined]

#: Input distributions the judge knows by name; `make_inputs` receives one of them. `problem`:
#: the imported problem's own generator draws the inputs (GPU MODE's `generate_input`, whose
#: structured inputs, such as planted spectra, are the problem).
DISTRIBUTIONS = (
    "normal", "uniform", "scaled", "heavy_tailed", "special", "ones", "integers", "problem"
)  # fmt: skip
#: The distributions `taskkit.draw` draws (`problem` is the problem's own generator's).
DRAWN_DISTRIBUTIONS = tuple(d for d in DISTRIBUTIONS if d != "problem")

#: Bytes per element of the dtypes task configs may name, for roofline expressions (`itemsize`).
ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
    "bool": 1,
}

#: Default floor of the relative L2 error bound per dtype, when a task states none.
DEFAULT_MIN_REL_L2 = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}

#: What each track's submission is written in, and where it runs by default.
TRACK_LANGUAGE: dict[str, Language] = {
    "triton2triton": "triton",
    "torch2triton": "triton",
    "cuda2cuda": "cuda",
    "torch2cuda": "cuda",
    "accel": "asm",
}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Config(_Model):
    """One concrete instance of a task: its name and parameters (shapes, dtype, hardware)."""

    name: str
    """Short name, unique within the task (`C1`, `H3`, `drawn-2`)."""
    params: dict[str, ParamValue]
    """Shapes, dtype and other parameters, as `make_inputs` and the expressions see them."""
    hidden: bool = False
    """Whether the agent never sees this config."""

    @model_validator(mode="before")
    @classmethod
    def _gather_params(cls, data: Any) -> Any:
        # In task.toml a config is written flat (`{name = "C1", rows = 64}`): every key but
        # `name` is a parameter.
        if isinstance(data, Mapping) and "params" not in data:
            data = dict(data)
            fields = {"name": data.pop("name", None), "hidden": data.pop("hidden", False)}
            return {**fields, "params": data}
        return data

    @property
    def dtype(self) -> str:
        """The config's main dtype (`float32` unless the config names one)."""
        return str(self.params.get("dtype", "float32"))

    def variables(self) -> dict[str, ParamValue]:
        """The names expressions may use: the parameters plus `itemsize` of the dtype."""
        return {**self.params, "itemsize": ITEMSIZE.get(self.dtype, 4)}

    def label(self) -> str:
        """A one-line description for tables and messages."""
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.name} ({shown})"


class CodeRef(_Model):
    """A function in one of the task's Python files."""

    file: str
    """Path relative to the task folder."""
    entry: str
    """Name of the function (or class) in that file."""


class ReferenceSpec(CodeRef):
    """The reference: the ground truth, and how the judge computes it."""

    mode: Literal["float64", "native"] = "float64"
    """`float64`: called on the inputs upcast to float64 (the ground truth of dtype-generic
    code); `native`: called on the inputs as drawn, so the expected values are the reference's
    own in its own dtypes (code that is not dtype-generic, or whose precision is the contract,
    such as GPU MODE's references run under TF32 off)."""


class InputsSpec(CodeRef):
    """The input generator: `make_inputs(config: dict, seed: int, distribution: str)`."""

    entry: str = "make_inputs"
    distributions: list[str] = Field(default_factory=lambda: ["normal"], min_length=1)
    """Input distributions every config is checked under."""

    @field_validator("distributions")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [d for d in value if d not in DISTRIBUTIONS]
        if unknown:
            raise ValueError(f"unknown distribution {unknown} (known: {', '.join(DISTRIBUTIONS)})")
        return value


class SubmissionSpec(_Model):
    """The submission contract: the files the agent must leave and the entry point."""

    files: list[str] = Field(min_length=1)
    """Files the agent must leave in its workspace (relative paths)."""
    entry: str
    """The function the judge calls (Python); for `asm` the program's label or file name."""
    language: Language
    template: str | None = None
    """Task file copied into the workspace as the submission's starting point."""
    max_bytes: int = Field(default=200_000, gt=0)
    """Largest accepted size of one submission file."""
    outputs: list[str] = Field(default_factory=list)
    """Inputs the submission may write: destination buffers it is given to fill (GPU MODE's
    preallocated outputs). Every other input must come back unchanged."""
    adapter: CodeRef | None = None
    """A task function that binds the submission's entry to the call contract, per config:
    `adapter(entry, config_params, device) -> callable(*inputs)`. Task code run in the
    candidate's process, outside the watched calls (KernelBench's `ModelNew`: built with the
    config's init inputs, its state checked with `load_state_dict(strict=True)`)."""


class Domain(_Model):
    """How one parameter of a drawn hidden config is chosen."""

    min: int | None = None
    max: int | None = None
    values: list[ParamValue] | None = None
    multiple_of: int = 1
    """Drawn integers are multiples of this (1: any, so odd and unaligned sizes come up)."""

    @model_validator(mode="after")
    def _one_form(self) -> Domain:
        ranged = self.min is not None and self.max is not None
        if ranged == (self.values is not None):
            raise ValueError("give either both 'min' and 'max', or 'values'")
        if ranged and self.min > self.max:  # type: ignore[operator]
            raise ValueError(f"'min' ({self.min}) is above 'max' ({self.max})")
        if self.values is not None and not self.values:
            raise ValueError("'values' is empty")
        return self

    def draw(self, rng: random.Random) -> ParamValue:
        """One value; integer ranges are drawn log-uniformly so small and large sizes both come."""
        if self.values is not None:
            return rng.choice(self.values)
        low, high = max(int(self.min), 1), int(self.max)  # type: ignore[arg-type]
        value = round(math.exp(rng.uniform(math.log(low), math.log(high))))
        value = max(low, min(high, value))
        return (
            max(low, (value // self.multiple_of) * self.multiple_of)
            if self.multiple_of > 1
            else value
        )


class HiddenSpec(_Model):
    """Hidden configs: a fixed held-out set plus configs drawn from a domain per run."""

    fixed: list[Config] = Field(default_factory=list)
    domain: dict[str, Domain] = Field(default_factory=dict)
    """Per-parameter domains; parameters not named keep the first visible config's value."""
    count: int = Field(default=2, ge=0)
    """How many configs are drawn from the domain per run."""
    constraint: str | None = None
    """An expression over the parameters that every drawn config must satisfy."""

    @model_validator(mode="after")
    def _not_empty(self) -> HiddenSpec:
        if not self.fixed and not (self.domain and self.count):
            raise ValueError("hidden configs need 'fixed' configs or a 'domain' with 'count' > 0")
        return self


class ConfigsSpec(_Model):
    """Visible and hidden configs."""

    visible: list[Config] = Field(min_length=1, max_length=8)
    hidden: HiddenSpec

    @model_validator(mode="after")
    def _unique_names(self) -> ConfigsSpec:
        names = [c.name for c in self.visible + self.hidden.fixed]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"config names must be unique; repeated: {', '.join(repeated)}")
        return self


class Tolerance(_Model):
    """The stated bound for one dtype: |out - ref| <= atol + rtol * |ref| element-wise."""

    atol: float = Field(ge=0)
    rtol: float = Field(ge=0)
    min_rel_l2: float | None = Field(default=None, ge=0)
    """Floor of the relative L2 bound (default per dtype); the bound is
    max(floor, margin x the baseline's own relative L2 error), and never above `max_rel_l2`."""
    max_rel_l2: float | None = Field(default=None, ge=0)
    """The stated ceiling of the relative L2 error (default: no ceiling beyond atol/rtol)."""


class ToleranceSpec(_Model):
    """Per-dtype tolerances and the margin over the baseline's own error."""

    margin: float = Field(default=8.0, ge=1)
    dtypes: dict[str, Tolerance] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, data: Any) -> Any:
        # Written flat in task.toml: `[tolerance] margin = 8` and `[tolerance.float32] ...`.
        if isinstance(data, Mapping) and "dtypes" not in data:
            data = dict(data)
            margin = data.pop("margin", 8.0)
            return {"margin": margin, "dtypes": data}
        return data


class RooflineSpec(_Model):
    """The speed-of-light model: flops and bytes as expressions of the config."""

    flops: str
    bytes: str
    matrix: bool = False
    """Whether the flops run on the matrix units (tensor cores) rather than the vector units."""

    @field_validator("flops", "bytes")
    @classmethod
    def _parses(cls, value: str) -> str:
        expr.parse(value)
        return value


class BackwardSpec(_Model):
    """A backward task: gradients of these inputs are checked."""

    wrt: list[str] = Field(min_length=1)
    """Names of the inputs (from `make_inputs`) whose gradients must match."""


class ExpertSpec(_Model):
    """The shipped expert solution: submission file name -> path in the task folder."""

    files: dict[str, str] = Field(min_length=1)


class BudgetSpec(_Model):
    """A task's default agent budget."""

    wall_s: float = Field(default=1800, gt=0)
    turns: int = Field(default=0, ge=0)
    """Iteration budget (0: the default for the task's level)."""


class DeterminismSpec(_Model):
    """How equal two calls on the same input must be."""

    bitwise: bool = True
    bound: float = Field(default=0.0, ge=0)
    """Largest allowed max-abs difference when `bitwise` is false (atomics)."""


#: Most points a knob space may hold (every point must be enumerable for a search).
MAX_KNOB_POINTS = 100_000


class AutotuneSpec(_Model):
    """Knobs for the `autotune` agent: constants of a template file and the values to try.

    Each knob is a constant the template defines once (`gauntlet.knobs`); the template's own
    value must be one of the knob's values, so the template is a point of the space.
    """

    template: str
    """Task file whose constants are tuned (the expert's or the baseline's file)."""
    file: str | None = None
    """Submission file the tuned template becomes (default: the first submission file)."""
    knobs: dict[str, list[ParamValue]] = Field(min_length=1)
    """Knob name -> the values to try."""
    constraint: str | None = None
    """An expression over the knobs that every tried point must satisfy."""

    @field_validator("knobs")
    @classmethod
    def _values(cls, value: dict[str, list[ParamValue]]) -> dict[str, list[ParamValue]]:
        size = 1
        for name, values in value.items():
            if not name.isidentifier():
                raise ValueError(f"knob name '{name}' is not an identifier")
            if not values:
                raise ValueError(f"knob '{name}' has no values")
            if len(set(map(repr, values))) != len(values):
                raise ValueError(f"knob '{name}' repeats a value: {values}")
            size *= len(values)
        if size > MAX_KNOB_POINTS:
            raise ValueError(f"the knobs span {size} points (at most {MAX_KNOB_POINTS})")
        return value

    @model_validator(mode="after")
    def _constraint_names(self) -> AutotuneSpec:
        if self.constraint is not None:
            unknown = expr.names(self.constraint) - set(self.knobs)
            if unknown:
                raise ValueError(
                    f"constraint '{self.constraint}' uses {sorted(unknown)}, which are not knobs"
                )
        return self


class TaskSpec(_Model):
    """The content of `task.toml`."""

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_\-]*(/[a-z0-9][a-z0-9_\-]*)+$")
    track: Track
    title: str = Field(min_length=1)
    level: Literal[1, 2, 3]
    description: str = Field(min_length=20)
    platform: str | None = None
    """For `accel`: the simulated platform (`npu`, `rvv`)."""
    devices: list[str] | None = None
    """Device kinds the task runs on (`cpu`, `cuda`, `sim:npu`); default from the track."""
    reference: ReferenceSpec
    inputs: InputsSpec
    baseline: CodeRef | None = None
    """The kernel speedups are measured against; `None` for `torch2*` (the reference is)."""
    submission: SubmissionSpec
    configs: ConfigsSpec
    tolerance: ToleranceSpec
    roofline: RooflineSpec
    backward: BackwardSpec | None = None
    check: CodeRef | None = None
    """A custom checker, `check(inputs, output) -> (ok, message)`: task code the judge runs in
    its trusted reference process (never the candidate's) on the trial's own inputs and the
    candidate's output, instead of the element-wise comparison (invariants such as an
    eigendecomposition's residuals, or a source's own tolerance rule)."""
    expert: ExpertSpec | None = None
    budget: BudgetSpec = BudgetSpec()
    autotune: AutotuneSpec | None = None
    """Tuning knobs of a template (constants the `autotune` agent searches)."""
    allowed_calls: list[str] = Field(default_factory=list)
    """Library calls the static guards allow although they could do the task's work."""
    trials: int = Field(default=2, ge=1, le=16)
    """Trials per config and distribution, each on fresh inputs."""
    determinism: DeterminismSpec = DeterminismSpec()
    timeout_s: float = Field(default=120, gt=0)
    """Wall-clock limit of one config's checks in the worker."""
    memory_limit_mb: int = Field(default=4096, gt=0)
    """Host memory a candidate's worker may add past its trusted imports: its address space on
    a `cpu` device, its data segment (heap, host tensors) on a GPU, where device memory, pinned
    memory and the channel's memory files that carry its outputs are not counted."""

    def device_kinds(self) -> list[str]:
        """Device kinds this task can be judged on."""
        if self.devices is not None:
            return self.devices
        if self.track == "accel":
            return [f"sim:{self.platform}"]
        if self.submission.language == "triton":
            return ["cpu", "cuda"]
        return ["cuda"]


class Task(BaseModel):
    """A loaded task: its spec and the folder it lives in."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    spec: TaskSpec
    root: Path

    @property
    def task_id(self) -> str:
        """The task's id (`triton/softmax`)."""
        return self.spec.id

    def path(self, relative: str) -> Path:
        """A file of the task."""
        return self.root / relative

    @cached_property
    def visible_configs(self) -> list[Config]:
        """The configs shown to the agent."""
        return list(self.spec.configs.visible)

    def baseline_files(self) -> dict[str, str]:
        """The submission that *is* the baseline: what the `baseline` agent submits.

        For `torch2*` tracks the baseline is the PyTorch reference, bound to the entry's name.
        The judge recognises exactly these files as the task's own trusted code.
        """
        spec = self.spec
        main = spec.submission.files[0]
        if spec.baseline is not None:
            if spec.baseline.file.endswith(".py") and spec.baseline.entry != spec.submission.entry:
                text = self.path(spec.baseline.file).read_text(encoding="utf-8")
                return {main: f"{text}\n\n{spec.submission.entry} = {spec.baseline.entry}\n"}
            return {main: self.path(spec.baseline.file).read_text(encoding="utf-8")}
        text = self.path(spec.reference.file).read_text(encoding="utf-8")
        return {main: f"{text}\n\n{spec.submission.entry} = {spec.reference.entry}\n"}

    def expert_files(self) -> dict[str, str] | None:
        """The shipped expert solution's files by submission name, if the task has one."""
        if self.spec.expert is None:
            return None
        return {
            name: self.path(rel).read_text(encoding="utf-8")
            for name, rel in self.spec.expert.files.items()
        }

    def hidden_configs(self, seed: int) -> list[Config]:
        """The fixed hidden configs plus those drawn from the domain with `seed`."""
        hidden = self.spec.configs.hidden
        fixed = [c.model_copy(update={"hidden": True}) for c in hidden.fixed]
        return fixed + draw_configs(self, seed, hidden.count)

    def configs(self, which: Literal["visible", "hidden", "all"], seed: int) -> list[Config]:
        """Configs by visibility."""
        if which == "visible":
            return self.visible_configs
        if which == "hidden":
            return self.hidden_configs(seed)
        return self.visible_configs + self.hidden_configs(seed)


def draw_configs(task: Task, seed: int, count: int) -> list[Config]:
    """Draw `count` hidden configs from the task's domain, deterministically in `seed`."""
    hidden = task.spec.configs.hidden
    if not hidden.domain or count == 0:
        return []
    rng = random.Random(f"{task.task_id}:{seed}")
    base = task.spec.configs.visible[0].params
    seen = {tuple(sorted(c.params.items())) for c in task.spec.configs.visible}
    drawn: list[Config] = []
    for _ in range(200 * count):
        params = dict(base)
        params.update({name: dom.draw(rng) for name, dom in hidden.domain.items()})
        key = tuple(sorted(params.items()))
        variables = {**params, "itemsize": ITEMSIZE.get(str(params.get("dtype", "float32")), 4)}
        if key in seen or (hidden.constraint and not expr.evaluate(hidden.constraint, variables)):
            continue
        seen.add(key)
        drawn.append(Config(name=f"drawn-{len(drawn) + 1}", params=params, hidden=True))
        if len(drawn) == count:
            break
    return drawn


def load_task(folder: Path | str, expected_id: str | None = None) -> Task:
    """Load and validate a task folder; raises TaskFormatError naming file, key and problem."""
    root = Path(folder).resolve()
    toml_path = root / "task.toml"
    if not toml_path.is_file():
        raise TaskFormatError(str(toml_path), "", "no task.toml in this folder")
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise TaskFormatError(str(toml_path), "", f"not valid TOML: {err}") from err
    except UnicodeDecodeError as err:
        raise TaskFormatError(str(toml_path), "", "not UTF-8 text") from err
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "missing":
            message = "required key is missing"
        elif first["type"] == "extra_forbidden":
            message = "unknown key (not part of the task format)"
        elif "input" in first and first["type"] not in {"value_error", "assertion_error"}:
            message += f" (found {first['input']!r})"
        more = len(err.errors()) - 1
        raise TaskFormatError(
            str(toml_path), key, message + (f" (and {more} more problems)" if more else "")
        ) from err
    task = Task(spec=spec, root=root)
    _check_track(spec, toml_path)
    _check_files(task, toml_path)
    _check_expressions(task, toml_path)
    _check_autotune(task, toml_path)
    if expected_id is not None and spec.id != expected_id:
        raise TaskFormatError(
            str(toml_path), "id", f"expected '{expected_id}' (the folder's path in the suite)"
        )
    return task


def _check_track(spec: TaskSpec, toml_path: Path) -> None:
    """Rules that tie fields together, each reported at the key to change."""
    where = str(toml_path)
    if spec.track == "accel" and spec.platform is None:
        raise TaskFormatError(where, "platform", "required for track 'accel' (npu, rvv)")
    if spec.track != "accel" and spec.platform is not None:
        raise TaskFormatError(where, "platform", "only allowed for track 'accel'")
    expected = TRACK_LANGUAGE[spec.track]
    if spec.submission.language != expected:
        raise TaskFormatError(
            where,
            "submission.language",
            f"track '{spec.track}' takes submissions in '{expected}', "
            f"not '{spec.submission.language}'",
        )
    if spec.baseline is None and not spec.track.startswith("torch2"):
        raise TaskFormatError(where, "baseline", f"track '{spec.track}' needs a [baseline]")
    if spec.check is not None and spec.backward is not None:
        raise TaskFormatError(
            where, "check", "a checker judges outputs; a backward task's gradients are compared"
        )
    written = set(spec.submission.outputs) & set(spec.backward.wrt if spec.backward else [])
    if written:
        raise TaskFormatError(
            where,
            "submission.outputs",
            f"{sorted(written)} are also in backward.wrt: a buffer the submission fills has "
            "no gradient",
        )


def _check_files(task: Task, toml_path: Path) -> None:
    spec = task.spec
    refs: list[tuple[str, CodeRef]] = [("reference", spec.reference), ("inputs", spec.inputs)]
    if spec.baseline is not None:
        refs.append(("baseline", spec.baseline))
    if spec.submission.adapter is not None:
        refs.append(("submission.adapter", spec.submission.adapter))
    if spec.check is not None:
        refs.append(("check", spec.check))
    for key, ref in refs:
        path = _existing(task, toml_path, f"{key}.file", ref.file)
        if path.suffix == ".py" and ref.entry not in _top_level_names(path, toml_path, key):
            raise TaskFormatError(
                str(toml_path), f"{key}.entry", f"no function or class '{ref.entry}' in {ref.file}"
            )
    if spec.submission.template is not None:
        _existing(task, toml_path, "submission.template", spec.submission.template)
    if spec.expert is not None:
        for name, rel in spec.expert.files.items():
            if name not in spec.submission.files:
                raise TaskFormatError(
                    str(toml_path),
                    f"expert.files.{name}",
                    f"not a submission file (expected one of {spec.submission.files})",
                )
            _existing(task, toml_path, f"expert.files.{name}", rel)


def _existing(task: Task, toml_path: Path, key: str, relative: str) -> Path:
    path = (task.root / relative).resolve()
    if not path.is_relative_to(task.root):
        raise TaskFormatError(str(toml_path), key, f"'{relative}' points outside the task folder")
    if not path.is_file():
        raise TaskFormatError(str(toml_path), key, f"file '{relative}' does not exist")
    return path


def _top_level_names(path: Path, toml_path: Path, key: str) -> set[str]:
    try:
        tree = syntax.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except SyntaxError as err:
        raise TaskFormatError(
            str(path), f"line {err.lineno}", f"{key} file is not valid Python: {err.msg}"
        ) from err
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return found


def _check_expressions(task: Task, toml_path: Path) -> None:
    spec = task.spec
    configs: Iterable[Config] = spec.configs.visible + spec.configs.hidden.fixed
    exprs = {"roofline.flops": spec.roofline.flops, "roofline.bytes": spec.roofline.bytes}
    if spec.configs.hidden.constraint:
        exprs["configs.hidden.constraint"] = spec.configs.hidden.constraint
    for config in configs:
        variables = config.variables()
        for key, source in exprs.items():
            missing = expr.names(source) - set(variables)
            if missing:
                raise TaskFormatError(
                    str(toml_path),
                    key,
                    f"'{source}' uses {sorted(missing)}, which config '{config.name}' does not set",
                )
        if config.dtype not in spec.tolerance.dtypes and spec.track != "accel":
            raise TaskFormatError(
                str(toml_path),
                "tolerance",
                f"no tolerance for dtype '{config.dtype}' of config '{config.name}'",
            )
    for name, domain in spec.configs.hidden.domain.items():
        if name == "dtype" and domain.values is not None:
            for dtype in domain.values:
                if dtype not in spec.tolerance.dtypes and spec.track != "accel":
                    raise TaskFormatError(
                        str(toml_path),
                        f"configs.hidden.domain.{name}",
                        f"dtype '{dtype}' may be drawn but has no [tolerance.{dtype}]",
                    )


def _check_autotune(task: Task, toml_path: Path) -> None:
    """Every knob a constant of the template once, whose value is one of the knob's values."""
    tuning = task.spec.autotune
    if tuning is None:
        return
    where = str(toml_path)
    path = _existing(task, toml_path, "autotune.template", tuning.template)
    target = tuning.file or task.spec.submission.files[0]
    if target not in task.spec.submission.files:
        files = task.spec.submission.files
        raise TaskFormatError(where, "autotune.file", f"'{target}' is not one of {files}")
    entry = task.spec.submission.entry
    if path.suffix == ".py" and entry not in _top_level_names(path, toml_path, "autotune"):
        raise TaskFormatError(
            where, "autotune.template", f"{tuning.template} defines no '{entry}' (the entry)"
        )
    text = path.read_text(encoding="utf-8")
    try:
        point = knobs.template_point(text, tuning.template, tuning.knobs)
    except knobs.KnobError as err:
        raise TaskFormatError(where, "autotune.knobs", str(err)) from err
    if tuning.constraint is not None and not expr.evaluate(tuning.constraint, point):
        raise TaskFormatError(
            where, "autotune.constraint", f"the template's own point {point} breaks it"
        )
