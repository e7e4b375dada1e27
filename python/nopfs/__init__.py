"""nopfs for Python training code.

nopfs.Dataset: a map-style torch Dataset over an ImageFolder tree or a list
file whose samples come zero-copy from the node's nopfs agent through the C
API (libnopfs), or from the files when there is no agent.

nopfs.report: load and summarise the job reports the agents write.
"""

__all__ = ["Dataset", "report"]


def __getattr__(name):
    # Dataset needs torch; nopfs.report does not: import it on first use.
    if name == "Dataset":
        from .dataset import Dataset

        return Dataset
    if name == "report":
        from . import report

        return report
    raise AttributeError(f"module 'nopfs' has no attribute '{name}'")
