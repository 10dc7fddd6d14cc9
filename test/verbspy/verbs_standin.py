# SPDX-License-Identifier: BSD-3-Clause
"""test/verbs_py.sh's stand-in of the rdma-fuzzing framework's lib/verbs.py,
the file `srq-verbs-py --into` writes into: its shape as read there - the
imports first, then helpers, then VerbCall, then its own verb classes, then
module data - with a few classes of its own under the names the generated
ones take. Theirs refuse to generate C here, so that a call reaching one
shows that --into did not put the generated class in its place."""
from fuzzing_api import *  # noqa: F401,F403  (what lib/verbs.py imports)
from fuzzing_api import VerbCall as _StandInBase


def mask_fields_to_c(mask):
    """a helper of the file's own, kept as it is"""
    return " | ".join(mask) if isinstance(mask, (list, tuple)) else str(mask)


class VerbCall(_StandInBase):
    """the file's base class, defined after its imports"""


class _Framework(VerbCall):
    def generate_c(self, ctx):
        raise AssertionError("the framework's own %s reached" % type(self).__name__)


class AllocPD(_Framework):
    MUTABLE_FIELDS = ["pd"]

    def __init__(self, pd=None):
        self.pd = pd


class CreateQP(_Framework):
    def __init__(self, pd=None, qp=None, init_attr_obj=None, remote_qp=None):
        self.pd, self.qp = pd, qp


class ReRegMR(_Framework):
    def __init__(self, mr=None, flags=None, pd=None, addr=None, length=0, access=0):
        self.mr = mr


class QueryGIDEx(VerbCall):
    """a class of the file's that no contract replaces: left alone"""


VERB_FACTORY = {"ibv_alloc_pd": AllocPD}
