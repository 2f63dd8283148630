"""Run a real tritonserver (NGC container or the nvidia-pytriton wheel) and the frontend."""

from triton_runtime.ports import free_port
from triton_runtime.process import ManagedProcess, ProcessError
from triton_runtime.runtime import TritonRuntime, locate_runtime
from triton_runtime.server import FrontendServer, TritonServer

__all__ = [
    "FrontendServer",
    "ManagedProcess",
    "ProcessError",
    "TritonRuntime",
    "TritonServer",
    "free_port",
    "locate_runtime",
]
