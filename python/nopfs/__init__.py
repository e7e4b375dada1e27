"""nopfs for Python training code.

nopfs.Dataset: a map-style torch Dataset over an ImageFolder tree or a list
file whose samples come zero-copy from the node's nopfs agent through the C
API (libnopfs), or from the files when there is no agent.

nopfs.report: load and summarise the job reports the agents write.
"""
import importlib

__all__ = ["Dataset", "report"]


def __getattr__(name):
    # Dataset needs torch; nopfs.report does not: each is imported on first use.
    if name == "Dataset":
        return importlib.import_module(".dataset", __name__).Dataset
    if name == "report":
        return importlib.import_module(".report", __name__)
    raise AttributeError(f"module 'nopfs' has no attribute '{name}'")
