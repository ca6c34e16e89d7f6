"""Configuration of CodeGen experiments: problems, debate, roles, conditions (the rogue-agents
paper, §4.1, §5 Table 1)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from byzllm.agents.codegen import CodeGenSimParams
from byzllm.errors import InputError
from byzllm.monitor.conditions import CONDITIONS, Condition
from byzllm.monitor.features import check_alternatives
from byzllm.runs import ABSENT_IS_DEFAULT, config_path, recorded_digest

from .._agents import AgentsConfig
from .._fitting import profile_file

__all__ = ["CODEGEN_CONDITIONS", "TABLE1_CONDITIONS", "CodeGenCondition", "CodeGenConfig"]

#: ``zero-shot`` (one coder, Table 1's first row) and every monitor condition of
#: :mod:`byzllm.monitor.conditions` (``none`` is the multi-agent debate without intervention).
CodeGenCondition = Literal["zero-shot", Condition]
CODEGEN_CONDITIONS: tuple[str, ...] = ("zero-shot", *CONDITIONS)
#: Table 1's rows: zero-shot prompting, multi-agent, multi-agent + monitor.
TABLE1_CONDITIONS: tuple[CodeGenCondition, ...] = ("zero-shot", "none", "monitor-1")


class CodeGenConfig(AgentsConfig):
    """A CodeGen run: the Table 1 conditions, and the monitor pipeline's collect stage.

    Example YAML::

        problems: HumanEval.jsonl.gz      # the HumanEval file
        livecodebench: null               # a LiveCodeBench file: the test problems
        test_split: humaneval             # HumanEval's held-out test split, or livecodebench
        seed: 0                           # the splits' seed
        test_fraction: 0.3                # held out first: 49 of 164 test problems
        train_fraction: 0.7               # of the rest: 80 train, 35 validation
        n_train: 40                       # null: the whole split
        n_validation: 20
        n_test: 30
        rounds: 3                         # coding rounds (1 initial + 2 with feedback)
        final_rule: tests                 # tests (DyLAN) or vote
        conditions: [zero-shot, none, monitor-1]
        repeats: 1
        execution: auto                   # auto | sandbox | simulated
        agents: simulated                 # or llm (then model, base_url)
        sim: {judge_error_rate: 0.2}      # or a fitted profile: sim: profile.yaml
    """

    problems: str | None = Field(
        default=None, description="HumanEval JSONL(.gz) file (train, validation, default test)"
    )
    monitor_set: str | None = Field(
        default=None,
        description="set from --monitors: the fingerprint of the monitor set evaluated "
        "(MonitorSet.fingerprint), so that a run folder holds one set's results",
    )
    livecodebench: str | None = Field(
        default=None, description="LiveCodeBench JSON(L) file: the test problems"
    )
    problems_digest: str = Field(
        default="",
        description="derived from problems: the digest of the problems the file holds "
        "(byzllm.tasks.problem_file_digest), so that a run folder holds one version of the "
        "file; a value given must match the file",
        json_schema_extra=ABSENT_IS_DEFAULT,
    )
    livecodebench_digest: str = Field(
        default="",
        description="derived from livecodebench, as problems_digest from problems",
        json_schema_extra=ABSENT_IS_DEFAULT,
    )
    test_split: Literal["humaneval", "livecodebench"] = Field(
        default="humaneval",
        description="humaneval: HumanEval's held-out test split (disjoint from train and "
        "validation); livecodebench: the LiveCodeBench file (the paper's test set, §4.1)",
    )
    seed: int = 0
    test_fraction: float = Field(
        default=0.3,
        ge=0.0,
        lt=1.0,
        description="share of HumanEval held out as the test split (test_split: humaneval)",
    )
    train_fraction: float = Field(
        default=0.7, gt=0.0, lt=1.0, description="train share of the rest (the paper's 70-30)"
    )
    n_train: int | None = Field(default=None, ge=1)
    n_validation: int | None = Field(default=None, ge=1)
    n_test: int | None = Field(default=None, ge=1)
    rounds: int = Field(default=3, ge=1, le=10)
    coders: int = Field(default=4, ge=1, le=8)
    final_rule: Literal["tests", "vote"] = "tests"
    conditions: list[CodeGenCondition] = Field(default_factory=lambda: list(TABLE1_CONDITIONS))
    repeats: int = Field(default=1, ge=1)
    collect_repeats: int = Field(default=1, ge=1)
    execution: Literal["auto", "sandbox", "simulated"] = Field(
        default="auto",
        description="auto: the sandbox when it works here, else simulated outcomes "
        "(simulated roles only)",
    )
    sandbox_timeout_s: float = Field(default=10.0, gt=0)
    sandbox_memory_mb: int = Field(default=512, ge=64)
    sim: Annotated[CodeGenSimParams, profile_file("codegen")] = Field(
        default_factory=CodeGenSimParams,
        description="simulated roles' parameters, or a profile file from `byzllm sim fit`",
    )
    top_logprobs: int = Field(default=10, ge=1, description="at most max_top_logprobs")
    max_reprompts: int = Field(default=1, ge=0)
    redo_temperature: float = Field(
        default=0.7,
        ge=0.0,
        le=2.0,
        description="sampling temperature of feedback and tests rewritten after an "
        "intervention (seeded by the attempt): at temperature 0 the same request gets the "
        "same reply",
    )
    max_tokens: int | None = Field(default=1024, ge=1)
    renormalize: bool = True

    def unit_grids(self, problems: Mapping[str, int] | None = None) -> dict[str, dict[str, int]]:
        """The collect stage: one unit per train or validation problem × collect repeat; the
        evaluate stage: one per test problem × condition × repeat
        (:func:`~byzllm.experiments.codegen.collect_units`,
        :func:`~byzllm.experiments.codegen.run_units`). ``problems``: each split's number of
        problems, once its file is read; before, ``n_<split>`` where it is set, and a split
        without it has no axis yet (the units' expansion checks again with the file's
        count)."""
        cut = {"train": self.n_train, "validation": self.n_validation, "test": self.n_test}
        known = dict(problems) if problems is not None else {k: n for k, n in cut.items() if n}
        collect: dict[str, int] = {}
        if "train" in known and "validation" in known:
            collect["train and validation problems"] = known["train"] + known["validation"]
        collect["collect_repeats"] = self.collect_repeats
        evaluate: dict[str, int] = {}
        if "test" in known:
            evaluate["test problems"] = known["test"]
        evaluate |= {"conditions": len(set(self.conditions)), "repeats": self.repeats}
        return {"collect": collect, "evaluate": evaluate}

    @field_validator("problems", "livecodebench")
    @classmethod
    def _resolve(cls, value: str | os.PathLike[str] | None, info: ValidationInfo) -> str | None:
        # The config path rule: relative to the config file when it exists there.
        return None if value is None else str(config_path(value, info, "file", "problem file"))

    @field_validator("problems_digest", "livecodebench_digest")
    @classmethod
    def _file_digest(cls, given: str, info: ValidationInfo) -> str:
        # Units carry their problems, so an edited file makes new units, but the path alone
        # let the config pass for the same one: the rerun ran them beside the old units, and
        # the report pooled both versions of each problem. The digest is of the problems,
        # not of the file's bytes: reformatting changes nothing.
        from byzllm.tasks import problem_file_digest

        assert info.field_name is not None
        path = info.data.get(info.field_name.removesuffix("_digest"))
        if not path:
            return ""
        try:
            digest = problem_file_digest(path)
        except InputError:
            # Refused when the run loads the file, with the loaders' error naming its line.
            return given
        # A recorded config validated again: its results are of the problems the file held
        # then.
        return recorded_digest(path, given, digest, "problems")

    @model_validator(mode="after")
    def _consistent(self) -> CodeGenConfig:
        if self.agents == "llm" and self.execution == "simulated":
            raise ValueError("execution: simulated judges simulated coders only; use sandbox")
        if self.test_split == "livecodebench" and not self.livecodebench:
            raise ValueError("test_split: livecodebench needs livecodebench: FILE")
        if self.test_split == "livecodebench" and self.agents == "simulated":
            raise ValueError(
                "test_split: livecodebench needs agents: llm. A simulated coder's code is the "
                "problem's reference solution or a deliberately broken copy of it, and "
                "LiveCodeBench problems come without a reference solution (the "
                "code_generation_lite release has none), so simulated coders would have no "
                "code to write; run LLM roles (--model) on LiveCodeBench"
            )
        check_alternatives(self.top_logprobs, renormalize=self.renormalize)
        if self.test_split == "humaneval" and self.test_fraction == 0.0:
            raise ValueError(
                "test_split: humaneval needs test_fraction > 0 (the held-out test problems)"
            )
        return self
