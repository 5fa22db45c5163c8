"""The scenario's sections as typed records: `scenario.training.gpus` is an int, `scenario.repair.fix` seconds.

Modules that take a Scenario read its keys through these (an attribute a reader can follow and a type checker
can check) rather than by dotted strings. Durations are seconds, as engine.scenario parses them. Each class
holds exactly the keys of its section in engine/scenario/keys.py (tests/test_scenario_sections.py keeps the
two equal); the failure mix (failures.mix.*) is `Scenario.mix`.
"""

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class ClusterSettings:
    """The `cluster.*` keys."""

    preset: str
    gpus: int
    gpus_per_host: int
    hosts_per_rack: int
    racks_per_pod: int
    racks_per_row: int
    fabric: str
    gpu_model: str
    gpu_tdp_w: float
    rack_power_budget_kw: float


@dataclass(frozen=True)
class SimulationSettings:
    """The `simulation.*` keys."""

    days: float
    seed: int
    start: datetime
    telemetry: bool
    telemetry_resolution: float  # seconds


@dataclass(frozen=True)
class FailuresSettings:
    """The `failures.*` keys."""

    rate_per_1000_node_days: float
    scale: float
    planned_per_day: float
    distribution: str
    weibull_shape: float
    sdc_detection_delay: float  # seconds
    nccl_timeout_detection: float  # seconds
    network_rack_share: float
    bad_host_fraction: float
    bad_host_multiplier: float
    only_while_computing: bool
    burst_per_day: float  # correlated failures of several hosts a day (engine.sim.failures.draw_bursts)
    burst_size_mean: float  # hosts a burst strikes, mean (2 + a geometric count)
    burst_hosts: str  # rack (consecutive hosts) or any
    burst_window: float  # seconds: faults within it are one burst (calibration's grouping)


@dataclass(frozen=True)
class NetworkSettings:
    """The `network.*` keys."""

    gbps_per_gpu: float
    fabric_faults_per_day: float
    link_samples: str
    flap_window: float  # seconds


@dataclass(frozen=True)
class TrainingSettings:
    """The `training.*` keys."""

    name: str
    gpus: int
    placement: str
    checkpoint_interval: float  # seconds
    checkpoint_write: float | None  # seconds
    restart_overhead: float  # seconds
    recovery: str
    work: float | None  # seconds of ideal compute (training.work); None: train until simulation.days


@dataclass(frozen=True)
class RecoverySettings:
    """The `recovery.*` keys."""

    memory_checkpoint_interval: float  # seconds
    memory_copies: int
    replicas: int
    drop_stall: float  # seconds
    rejoin: float  # seconds
    hot_spares: int
    hot_swap: float  # seconds


@dataclass(frozen=True)
class SlowSettings:
    """The `slow.*` keys: fail-slow episodes (engine.sim.slow)."""

    gpu_thermal_rate: float  # per 1,000 host-days
    gpu_thermal_duration: float  # seconds (mean)
    gpu_thermal_factor: float
    gpu_power_rate: float  # per 1,000 host-days
    gpu_power_duration: float  # seconds (mean)
    gpu_power_factor: float
    host_rate: float  # per 1,000 host-days
    host_duration: float  # seconds (mean)
    host_factor: float
    network_rate: float  # per 1,000 host-days
    network_duration: float  # seconds (mean)
    network_factor: float
    gpu_thermal_daily_swing: float
    policy: str
    detect_after: float  # seconds


@dataclass(frozen=True)
class StorageSettings:
    """The `storage.*` keys."""

    checkpoint_gb_per_gpu: float
    bandwidth_gb_per_s: float
    peak_bandwidth_gb_per_s: float


@dataclass(frozen=True)
class SparesSettings:
    """The `spares.*` keys."""

    hosts: int
    preempt_research: bool
    preempt_handover: float  # seconds
    selection: str  # reserved | any_idle: where replacements come from (engine.sim.simulate)
    prefer_healthy: bool


@dataclass(frozen=True)
class RepairSettings:
    """The `repair.*` keys."""

    technicians: int
    drain: float  # seconds
    diagnose: float  # seconds
    fix: float  # seconds
    rma_fraction: float
    rma_time: float  # seconds
    # the repair law by class of cause (engine.sim.repair); None: the overall law's key above
    fix_gpu: float | None  # seconds
    fix_host: float | None  # seconds
    fix_network: float | None  # seconds
    rma_fraction_gpu: float | None
    rma_fraction_host: float | None
    rma_fraction_network: float | None
    rma_time_gpu: float | None  # seconds
    rma_time_host: float | None  # seconds
    rma_time_network: float | None  # seconds
    burn_in: float  # seconds
    lemon_failures: int
    lemon_window: float  # seconds
    automatic: float  # seconds
    escalation: float
    automatic_silent_failure: float
    manual_silent_failure: float


@dataclass(frozen=True)
class DiagnosisSettings:
    """The `diagnosis.*` keys."""

    probability: float
    wrong_host: float
    over_eviction: int


@dataclass(frozen=True)
class RetirementSettings:
    """The `retirement.*` keys."""

    policy: str
    failures: int
    window: float  # seconds


@dataclass(frozen=True)
class ResearchSettings:
    """The `research.*` keys."""

    utilization: float
    median_duration: float  # seconds
    max_hosts: int


@dataclass(frozen=True)
class CostSettings:
    """The `cost.*` keys."""

    gpu_hour_usd: float


SECTION_TYPES: dict[str, type] = {
    "cluster": ClusterSettings,
    "simulation": SimulationSettings,
    "failures": FailuresSettings,
    "network": NetworkSettings,
    "training": TrainingSettings,
    "recovery": RecoverySettings,
    "slow": SlowSettings,
    "storage": StorageSettings,
    "spares": SparesSettings,
    "repair": RepairSettings,
    "diagnosis": DiagnosisSettings,
    "retirement": RetirementSettings,
    "research": ResearchSettings,
    "cost": CostSettings,
}
