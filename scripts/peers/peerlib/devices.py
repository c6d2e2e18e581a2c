"""The device record of a peer report (gdnbench's DeviceInfo) as torch and NVML report it."""

import torch


def _nvml(uuid):
    """(pynvml module, handle) or (None, None) when NVML is not importable."""
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByUUID(uuid)
    except Exception:  # noqa: BLE001 - NVML only adds clocks and the driver version
        return None, None


def _cuda_version_text(v):
    """13000 -> "13.0" (as gdnbench's cuda_info.cu writes it)."""
    return f"{v // 1000}.{v % 1000 // 10}"


def device_info(index):
    p = torch.cuda.get_device_properties(index)
    uuid = f"GPU-{p.uuid}" if getattr(p, "uuid", None) is not None else ""
    free, total = torch.cuda.mem_get_info(index)
    info = {
        "index": index, "name": p.name, "uuid": uuid, "cc_major": p.major, "cc_minor": p.minor,
        "arch": p.major * 10 + p.minor, "sm_count": p.multi_processor_count, "l2_bytes": int(p.L2_cache_size),
        "memory_bytes": int(total), "memory_free_bytes": int(free), "sm_clock_max_mhz": 0, "mem_clock_mhz": 0,
        "mem_bus_width": 0, "driver_version": "", "runtime_version": torch.version.cuda or "",
        # CUPTI is reached through torch.profiler (kineto); torch does not say which version.
        "cupti_version": "torch.profiler",
    }
    nvml, handle = _nvml(uuid)
    if handle is not None:
        for key, call in (
            ("sm_clock_max_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM)),
            ("mem_clock_mhz", lambda: nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_MEM)),
            ("mem_bus_width", lambda: nvml.nvmlDeviceGetMemoryBusWidth(handle)),
            ("driver_version", lambda: _cuda_version_text(nvml.nvmlSystemGetCudaDriverVersion())),
        ):
            try:
                info[key] = call()
            except Exception:  # noqa: BLE001 - a field NVML cannot give stays empty
                pass
    return info
