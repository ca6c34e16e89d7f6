"""The consensus experiment config: protocols × topologies × compositions × F × T × seeds.

Load it from YAML (``byzllm consensus run CONFIG``) or build it in Python; every field has the
paper's default (§5.2: n = 7 with 4 strong, 2 weak and 1 adversarial agent, F = 3, T = 6, 30
questions, MERG / complete / Erdős–Rényi, SAC vs CP-WBFT). Example YAML::

    protocols: [sac, cp-wbft, debate]
    topologies: [merg, complete]
    compositions:
      - {strong: 4, weak: 2, byzantine: 1, attack: replay}
      - {strong: 4, weak: 1, byzantine: 2, attack: collude, placement: highest-degree}
    F: [3]
    T: [6]
    seeds: [0, 1]
    dataset: {name: synthetic, n: 30}
    agents:
      strong: {backend: simulated}                  # profile: {strength: 0.9} overrides one
      weak: {backend: llm, model: openai/gpt-3.5-turbo, base_url: http://127.0.0.1:8000/v1}

``agents.<group>.profile`` is either a mapping of parameter overrides or the path of a profile
written by ``byzllm sim fit`` (its section for that group is used).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, NamedTuple

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from byzllm.agents.consensus import ATTACKS
from byzllm.errors import ConfigError, InputError
from byzllm.runs import (
    ABSENT_IS_DEFAULT,
    ExperimentConfig,
    ModelConfig,
    config_path,
    recorded_digest,
    validation_problems,
)

__all__ = [
    "AgentBackend",
    "Composition",
    "ConsensusConfig",
    "DatasetConfig",
    "GroupBackends",
    "LabelParts",
    "parse_label",
]

#: A topology: a construction name of :func:`byzllm.graphs.build` (``merg``, ``complete``,
#: ``erdos-renyi``, ``ring-lattice``, ``star``, ``chain``, ...) or ``file:PATH`` for a graph
#: saved with ``byzllm graph build`` / :func:`byzllm.graphs.save_graph` (JSON or edge list); a
#: relative PATH is looked up beside the config file, then in the working directory, and the
#: digest of the graph it holds goes into :attr:`ConsensusConfig.graph_files`.
Topology = str

#: Prefix of a topology read from a saved graph file.
GRAPH_FILE_PREFIX = "file:"


def _check_topology(name: str, info: ValidationInfo) -> str:
    """``name`` normalized (``file:`` paths made absolute by the config path rule, the file
    read as a graph), or a ValueError naming the choices (config validation)."""
    from byzllm.graphs import CONSTRUCTIONS, load_graph_view

    if name.startswith(GRAPH_FILE_PREFIX):
        path = config_path(name[len(GRAPH_FILE_PREFIX) :], info, "file", "graph file")
        try:
            view = load_graph_view(path)  # read here: an error names its item, not graph_files
        except InputError as err:
            raise PydanticCustomError("graph_file", "{message}", {"message": str(err)}) from None
        if view.directed:
            # Refused here, not by every unit of the run (the SAC paper, §3.1).
            raise PydanticCustomError(
                "graph_file",
                "{path}: a directed graph; consensus graphs are undirected (§3.1)",
                {"path": str(path)},
            )
        return f"{GRAPH_FILE_PREFIX}{path}"
    key = name.strip().lower().replace("_", "-")
    if key not in CONSTRUCTIONS:
        raise ValueError(
            f"unknown topology {name!r}; choose from {', '.join(CONSTRUCTIONS)} or file:PATH"
        )
    return key


#: A config's topology, checked one by one: an error names the item (``topologies.1``).
_CheckedTopology = Annotated[Topology, AfterValidator(_check_topology)]

ProtocolName = Literal["sac", "cp-wbft", "debate", "majority", "w-msr"]


class Composition(ExperimentConfig):
    """Who sits on the graph: strong / weak honest counts, adversaries and where they sit."""

    strong: int = Field(default=4, ge=0)
    weak: int = Field(default=2, ge=0)
    byzantine: int = Field(default=1, ge=0)
    attack: str = "replay"
    placement: Literal["random", "highest-degree", "given"] = "random"
    byzantine_nodes: list[int] = Field(default_factory=list)
    defect_round: int = Field(default=2, ge=0, description="round a mimic adversary defects")

    @field_validator("attack")
    @classmethod
    def _known_attack(cls, value: str) -> str:
        if value not in ATTACKS:
            raise ValueError(f"unknown attack {value!r}; choose one of {', '.join(ATTACKS)}")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Composition:
        if self.strong + self.weak < 1:
            # Every metric of the SAC paper (§5.1: accuracy, BFTI, H-Majority) is taken over
            # the honest agents: with none, a run would only report numbers of nothing.
            raise ValueError(
                "a composition needs at least one honest agent (strong + weak >= 1): the "
                "metrics are taken over the honest agents"
            )
        if self.placement == "given":
            nodes = self.byzantine_nodes
            if len(nodes) != self.byzantine or len(set(nodes)) != len(nodes):
                raise ValueError(
                    f"placement 'given' needs {self.byzantine} distinct byzantine_nodes, "
                    f"got {nodes}"
                )
            if any(not 0 <= v < self.n for v in nodes):
                raise ValueError(f"byzantine_nodes must lie in 0..{self.n - 1}, got {nodes}")
        return self

    @property
    def n(self) -> int:
        """Number of agents."""
        return self.strong + self.weak + self.byzantine

    @property
    def label(self) -> str:
        """Short unique name, e.g. ``4s2w1b-replay`` or ``4s1w2b-mimic3@highest-degree``."""
        attack = f"mimic{self.defect_round}" if self.attack == "mimic" else self.attack
        label = f"{self.strong}s{self.weak}w{self.byzantine}b-{attack}"
        if self.placement == "highest-degree":
            label += "@highest-degree"
        elif self.placement == "given":
            label += "@" + ",".join(str(v) for v in sorted(self.byzantine_nodes))
        return label


class LabelParts(NamedTuple):
    """What a composition's :attr:`Composition.label` says, read back by :func:`parse_label`."""

    strong: int
    weak: int
    byzantine: int
    #: The attack's name (``mimic`` without its round).
    attack: str
    #: Mimic's defect round; 0 for every other attack.
    defect_round: int
    #: ``""`` (random), ``highest-degree`` or the given nodes, comma-separated.
    placement: str


_LABEL = re.compile(r"(\d+)s(\d+)w(\d+)b-(.+?)(\d*)(?:@(.*))?")


def parse_label(label: str) -> LabelParts | None:
    """The parts of a composition label (the inverse of :attr:`Composition.label`), or None
    for a string of another shape. Reports read them from records, which keep only the
    label."""
    found = _LABEL.fullmatch(label)
    if found is None:
        return None
    strong, weak, byzantine, attack, defect_round, placement = found.groups()
    if attack != "mimic" and defect_round:  # a digit ending the name of another attack
        attack, defect_round = attack + defect_round, ""
    return LabelParts(
        int(strong), int(weak), int(byzantine), attack, int(defect_round or 0), placement or ""
    )


class DatasetConfig(ExperimentConfig):
    """Which questions: the synthetic family, or a local MATH-500 / GSM8K / Commonsense file."""

    name: Literal["synthetic", "math500", "gsm8k", "commonsense"] = "synthetic"
    path: str | None = None
    n: int = Field(default=30, ge=1, description="questions sampled (synthetic: at most 100,000)")
    seed: int = 0
    level: int | None = Field(default=None, description="MATH-500 level filter (paper: 4)")
    steps: int | tuple[int, int] = Field(
        default=3,
        description="synthetic only: arithmetic steps per question (1-8), or an inclusive "
        "range [low, high] drawn per question",
    )
    digest: str = Field(
        default="",
        description="derived from path: the digest of the records the data-set file holds "
        "(byzllm.tasks.dataset_digest), so that a run folder holds one version of the file; "
        "a value given must match the file",
        json_schema_extra=ABSENT_IS_DEFAULT,
    )

    @field_validator("path")
    @classmethod
    def _resolve_path(cls, value: str | None, info: ValidationInfo) -> str | None:
        # A file (or a folder of Commonsense files); relative: beside the config, then the
        # working directory (docs/experiments.md, Configs). Absolute from here on, so a unit's
        # work finds it from any working directory.
        return str(config_path(value, info, "path", "data set")) if value else value

    @field_validator("n")
    @classmethod
    def _synthetic_size(cls, value: int, info: ValidationInfo) -> int:
        # A file's size bounds its n (asking for more is an error); the synthetic family has
        # none, and builds every question before the run starts: refused here, before any.
        from byzllm.tasks import MAX_TASKS

        if info.data.get("name") == "synthetic" and value > MAX_TASKS:
            raise ValueError(f"the synthetic data set makes at most {MAX_TASKS:,} questions")
        return value

    @field_validator("steps")
    @classmethod
    def _steps_in_range(cls, value: int | tuple[int, int]) -> int | tuple[int, int]:
        low, high = (value, value) if isinstance(value, int) else value
        if not 1 <= low <= high <= 8:
            # Not the value: the config's error adds it as written ([3, 1], not (3, 1)).
            raise ValueError("steps must be 1-8 or a range [low, high] within it")
        return value

    @field_validator("digest")
    @classmethod
    def _data_digest(cls, given: str, info: ValidationInfo) -> str:
        # The path alone let an edited file pass for the data a run used: its units were
        # "already done" and the report showed the old answers' results under the new file.
        # The digest is of the records, not of the file's bytes: reformatting changes nothing.
        from byzllm.tasks import dataset_digest

        name, path = info.data.get("name"), info.data.get("path")
        if name is None or name == "synthetic" or not path:
            return ""
        try:
            digest = dataset_digest(name, path)
        except InputError:
            # Refused when the run loads the file, with the loaders' error naming its line.
            return given
        # A recorded config validated again (sim fit, sim compare, each unit of a run): its
        # results are of the data the file held then.
        return recorded_digest(path, given, digest, "data")

    @model_validator(mode="after")
    def _path_when_needed(self) -> DatasetConfig:
        if self.name != "synthetic" and not self.path:
            raise ValueError(f"dataset {self.name!r} needs a path to its local file")
        if self.level is not None and self.name != "math500":
            # Only MATH-500 has levels: the filter was dropped without a word, and a run
            # said "level 4" of questions drawn from the whole file.
            raise ValueError(f"level filters MATH-500 only; dataset {self.name!r} has no levels")
        return self


class AgentBackend(ModelConfig):
    """How one group of agents is implemented: simulated (default) or an LLM endpoint.

    The LLM keys (``model``, ``base_url``, ``api_key_env``, ``max_concurrency``, ``cache``,
    ``timeout_s``, ``retry``, ...) are those of every experiment (:class:`ModelConfig`).
    """

    backend: Literal["simulated", "llm"] = "simulated"
    profile: dict[str, float] = Field(
        default_factory=dict, description="overrides of the simulated profile's parameters"
    )
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    judging: Literal["verbal", "anchored"] = Field(
        default="verbal",
        description="how LLM agents score and report confidence: 'verbal' (the SAC paper's "
        "B.1 prompt, one number) or 'anchored' (own worked solution beside the judged answer, "
        "P(Yes) from log-probabilities; for small models)",
    )
    refining: Literal["paper", "worked"] = Field(
        default="paper",
        # CP-WBFT adopts the best-rated answer by rule: it never asks an agent to refine.
        description="how LLM agents refine (SAC) and update (debate): 'paper' (the SAC "
        "paper's B.2 prompt, final answer only) or 'worked' (own worked solution shown, the "
        "check written out before the final line; for small models)",
    )

    @field_validator("profile")
    @classmethod
    def _known_profile_fields(cls, value: dict[str, float]) -> dict[str, float]:
        from byzllm.agents.consensus import SimulatedProfile

        unknown = sorted(set(value) - set(SimulatedProfile.model_fields) - {"name"})
        if unknown:
            known = ", ".join(k for k in SimulatedProfile.model_fields if k != "name")
            raise ValueError(f"unknown profile parameter(s) {', '.join(unknown)}; known: {known}")
        return value

    @model_validator(mode="after")
    def _model_when_llm(self) -> AgentBackend:
        if self.backend == "llm" and not self.model:
            raise ValueError("an llm backend needs a model, e.g. openai/gpt-4o-mini")
        return self


class GroupBackends(ExperimentConfig):
    """Backends of the strong and weak groups (the weak one also feeds the replay attack)."""

    strong: AgentBackend = Field(default_factory=AgentBackend)
    weak: AgentBackend = Field(default_factory=AgentBackend)

    @field_validator("strong", "weak", mode="before")
    @classmethod
    def _profile_file(cls, value: object, info: ValidationInfo) -> object:
        # ``profile: fitted.yaml``: the group's section of a `byzllm sim fit` file, inlined so
        # the run (and its unit ids) records the values, not a path whose content may change.
        if isinstance(value, dict) and isinstance(value.get("profile"), str):
            from .._fitting import load_profile_section

            path = config_path(value["profile"], info, "file", "profile file")
            group = str(info.field_name)
            try:
                section = load_profile_section(path, group, "consensus")
            except ConfigError as err:
                raise PydanticCustomError(
                    "profile_file", "{message}", {"message": str(err)}
                ) from None
            return {**value, "profile": section}
        return value

    @model_validator(mode="after")
    def _profiles_in_range(self) -> GroupBackends:
        # The overrides are applied with model_copy (cheap, once per agent), which checks
        # nothing: strength 1.7 ran, and difficulty_correlation 1.5 failed every unit.
        from pydantic import ValidationError

        from byzllm.agents.consensus import STRONG_PROFILE, WEAK_PROFILE, SimulatedProfile

        for group, base in (("strong", STRONG_PROFILE), ("weak", WEAK_PROFILE)):
            overrides = getattr(self, group).profile
            if not overrides:
                continue
            try:
                SimulatedProfile.model_validate({**base.model_dump(), **overrides})
            except ValidationError as err:
                # Named from the section: agents: strong.profile.strength: ... (got 1.7).
                line = validation_problems(err, SimulatedProfile, loc=(group, "profile"))
                raise ValueError(line) from None
        return self


_DEFAULT_PROTOCOLS: tuple[ProtocolName, ...] = ("sac", "cp-wbft")
_DEFAULT_TOPOLOGIES: tuple[Topology, ...] = ("merg", "complete", "erdos-renyi")


class ConsensusConfig(ExperimentConfig):
    """A consensus sweep; one unit = one question × one configuration of the grid."""

    protocols: list[ProtocolName] = Field(default_factory=lambda: list(_DEFAULT_PROTOCOLS))
    topologies: list[_CheckedTopology] = Field(default_factory=lambda: list(_DEFAULT_TOPOLOGIES))
    compositions: list[Composition] = Field(default_factory=lambda: [Composition()])
    F: list[int] = Field(default_factory=lambda: [3])
    T: list[int] = Field(default_factory=lambda: [6])
    seeds: list[int] = Field(default_factory=lambda: [0])
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    agents: GroupBackends = Field(default_factory=GroupBackends)
    cp_wbft_confidence_threshold: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="CP-WBFT: responses reporting less confidence do not vote (authors: 0.5)",
    )
    graph_files: dict[str, str] = Field(
        default_factory=dict,
        description="derived from topologies: each file: graph's path and the digest of the "
        "graph it holds (graph_digest), so that a run folder holds one version of the file; "
        "a value given must match the file",
        json_schema_extra=ABSENT_IS_DEFAULT,
    )

    @field_validator("protocols", "topologies", "compositions", "F", "T", "seeds")
    @classmethod
    def _non_empty(cls, value: list[object]) -> list[object]:
        if not value:
            raise ValueError("must list at least one value")
        return value

    @model_validator(mode="after")
    def _distinct_labels(self) -> ConsensusConfig:
        # The records keep a composition's label only, and the report groups its rows by
        # it: two compositions that differ in a field their attack or placement ignores
        # (defect_round off mimic, byzantine_nodes off 'given', given nodes in another
        # order) ran twice and pooled into one row of twice the questions. Exact repeats
        # are one set of units, like a repeated seed.
        first: dict[str, int] = {}
        for index, composition in enumerate(self.compositions):
            earlier = first.setdefault(composition.label, index)
            if earlier != index and composition != self.compositions[earlier]:
                raise ValueError(
                    f"compositions.{earlier} and compositions.{index} are both "
                    f"{composition.label}: they differ only in what that attack and placement "
                    "do not use (defect_round: mimic; byzantine_nodes: placement 'given'), "
                    "and their results would pool in one row; keep one"
                )
        return self

    @field_validator("graph_files")
    @classmethod
    def _graph_digests(cls, given: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        # The path alone let an edited file pass for the graph a run used: its units were
        # "already done" and the report showed the old graph's results under the new file.
        # The digest is of the graph, not of the file's bytes: reformatting changes nothing.
        from .setup import graph_file_digest

        digests: dict[str, str] = {}
        for topology in info.data.get("topologies", ()):
            if not topology.startswith(GRAPH_FILE_PREFIX):
                continue
            path = topology[len(GRAPH_FILE_PREFIX) :]
            digest = graph_file_digest(path)
            # A recorded config validated again (sim fit, sim compare): its results are of
            # the graph the file held then.
            digests[path] = recorded_digest(
                path, given.get(path, ""), digest, "graph", kind="graph_file"
            )
        return digests

    @field_validator("F", "T")
    @classmethod
    def _non_negative(cls, value: list[int]) -> list[int]:
        if any(v < 0 for v in value):
            raise ValueError("values must be >= 0")  # the error line adds "(got ...)"
        return value

    def unit_grids(self) -> dict[str, dict[str, int]]:
        """One unit per protocol × topology × composition × F × T × seed × question
        (:func:`~byzllm.experiments.consensus.experiment.expand_units`), ``dataset.n``
        questions (a data-set file holding fewer is refused when the run loads it)."""
        return {
            "": {
                "protocols": len(self.protocols),
                "topologies": len(self.topologies),
                "compositions": len(self.compositions),
                "F values": len(self.F),
                "T values": len(self.T),
                "seeds": len(self.seeds),
                "questions (dataset.n)": self.dataset.n,
            }
        }

    @property
    def simulated(self) -> bool:
        """Whether any group runs on simulated agents (results then say *simulated*)."""
        return "simulated" in (self.agents.strong.backend, self.agents.weak.backend)

    @property
    def cpu_bound(self) -> bool:
        """Whether every group runs on simulated agents: the units then compute and call no
        model, so the run engine may spread a large run over worker processes (``--executor
        auto``; :attr:`ExperimentConfig.cpu_bound`)."""
        return self.agents.strong.backend == self.agents.weak.backend == "simulated"
