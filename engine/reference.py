"""The published figures Goodput is calibrated to, read from ../shared/reference when present.

The cause table and XID catalogue are small and part of the engine's contract (cause keys are what the store
and `simulate --json` use), so their contents are kept here as code; `tests/test_reference.py` checks that
they match the files in ../shared/reference row for row whenever that folder is present.
"""

from dataclasses import dataclass

# Llama 3 405B pre-training, 54-day snapshot on 16,384 H100 GPUs (2,048 hosts): 419 unexpected interruptions
# by cause (Llama 3 paper, Table 5; ../shared/reference/llama3_interruptions.csv). Counts, not printed percents.
LLAMA3_DAYS = 54
LLAMA3_JOB_HOSTS = 2048
LLAMA3_UNEXPECTED = 419
LLAMA3_PLANNED = 47


@dataclass(frozen=True)
class Cause:
    cause: str
    label: str
    category: str
    count: int


CAUSES: tuple[Cause, ...] = (
    Cause("faulty_gpu", "Faulty GPU", "GPU", 148),
    Cause("gpu_hbm3", "GPU HBM3 memory", "GPU", 72),
    Cause("software_bug", "Software bug", "Dependency", 54),
    Cause("network_switch_cable", "Network switch/cable", "Network", 35),
    Cause("host_maintenance", "Host maintenance (unplanned)", "Unplanned maintenance", 32),
    Cause("gpu_sram", "GPU SRAM memory", "GPU", 19),
    Cause("gpu_system_processor", "GPU system processor", "GPU", 17),
    Cause("nic", "NIC", "Host", 7),
    Cause("nccl_watchdog_timeout", "NCCL watchdog timeouts", "Unknown", 7),
    Cause("silent_data_corruption", "Silent data corruption", "GPU", 6),
    Cause("gpu_thermal", "GPU thermal interface + sensor", "GPU", 6),
    Cause("ssd", "SSD", "Host", 3),
    Cause("power_supply", "Power supply", "Host", 3),
    Cause("server_chassis", "Server chassis", "Host", 2),
    Cause("io_expansion_board", "IO expansion board", "Host", 2),
    Cause("dependency", "Dependency", "Dependency", 2),
    Cause("cpu", "CPU", "Host", 2),
    Cause("system_memory", "System memory", "Host", 2),
)
CAUSE_BY_KEY = {c.cause: c for c in CAUSES}
PLANNED_CAUSE = Cause("planned_maintenance", "Planned maintenance", "Planned", LLAMA3_PLANNED)

# Derived: 419 / 54 days / 2,048 hosts = 3.79 unexpected interruptions per 1,000 host-days (reference README §2).
LLAMA3_RATE_PER_1000_NODE_DAYS = LLAMA3_UNEXPECTED / LLAMA3_DAYS / LLAMA3_JOB_HOSTS * 1000


@dataclass(frozen=True)
class Xid:
    xid: int
    mnemonic: str
    meaning: str
    action: str
    fatal: bool


# ../shared/reference/xid_catalog.csv (NVIDIA XID catalogue, the codes Goodput emits and reads).
XIDS: tuple[Xid, ...] = (
    Xid(13, "GR_EXCEPTION", "Graphics engine exception (often an application fault)", "restart_app", False),
    Xid(31, "MMU_ERR_FLT", "GPU memory page fault", "restart_app", False),
    Xid(43, "RESETCHANNEL_VERIF_ERROR", "GPU stopped processing (channel reset)", "ignore", False),
    Xid(45, "PREEMPTIVE_REMOVAL", "Preemptive cleanup after an earlier error", "ignore", False),
    Xid(48, "GPU_ECC_DBE", "Double-bit ECC error in GPU memory", "reset_gpu", True),
    Xid(61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint", "report_issue", True),
    Xid(62, "PMU_HALT_ERROR", "Internal micro-controller halt", "reset_gpu", True),
    Xid(63, "DRAM_RETIREMENT_EVENT", "Memory page retired or row remapped", "ignore", False),
    Xid(64, "DRAM_RETIREMENT_FAILURE", "Memory page retirement or row remap failed", "reset_gpu", True),
    Xid(74, "NVLINK_ERROR", "NVLink error", "reset_gpu", True),
    Xid(79, "GPU_HAS_FALLEN_OFF_THE_BUS", "GPU not reachable on PCIe", "reboot_host", True),
    Xid(92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", "ignore", False),
    Xid(94, "CONTAINED_ERROR", "Contained ECC error (only the affected app is hit)", "restart_app", False),
    Xid(95, "UNCONTAINED_ERROR", "Uncontained ECC error (all apps on the GPU are hit)", "reset_gpu", True),
    Xid(119, "GSP_RPC_TIMEOUT", "GPU system processor RPC timeout", "reset_gpu", True),
    Xid(120, "GSP_ERROR", "GPU system processor error", "reset_gpu", True),
)
XID_BY_CODE = {x.xid: x for x in XIDS}
