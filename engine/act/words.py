"""Numbers, XIDs and incidents in the words a recommendation's reason, evidence and pricing use."""

from engine.reference import XID_BY_CODE


def n(x: float) -> str:
    """A number for a sentence: whole numbers without decimals, others to two."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.2f}"


def xid_words(xid: int | None, gpu_index: int | None) -> str:
    """`XID 79 (GPU not reachable on PCIe) on GPU 3`: the catalogue's meaning of the code (engine.reference)."""
    if xid is None:
        return ""
    known = XID_BY_CODE.get(int(xid))
    words = f"XID {int(xid)}" + (f" ({known.meaning})" if known else "")
    return words + (f" on GPU {int(gpu_index)}" if gpu_index is not None else "")


def incident_words(r: dict) -> str:
    """`faulty_gpu (XID 79 (GPU not reachable on PCIe) on GPU 3), incident 12`: an incident row in words."""
    xid = f" ({xid_words(r['xid'], r['gpu_index'])})" if r["xid"] is not None else ""
    return f"{r['cause']}{xid}, incident {r['incident_id']}"
