# SPDX-License-Identifier: BSD-3-Clause
"""ucx-srq verb contracts: the machine-readable description of every verb
the project wraps or serves (contracts/*.json), and what is built on it.

    import srq_contracts
    contracts = srq_contracts.load()                  # {verb: Contract}
    cls = srq_contracts.verb_class("ibv_post_srq_recv")
    call = cls.from_trace(line)                       # a trace line -> a call
    c_code = call.to_c(srq_contracts.Program())       # the call in C

python3 -m srq_contracts {validate,replay,gen-trace,gen-fuzz,list,verbs-py} (see --help).
Python 3 standard library only.
"""
# ucx-srq's version: configure.ac's AC_INIT says the same (test/version.sh)
__version__ = "0.1.0"

from .contracts import Contract, ContractError, default_dir, load, load_schema
from .schema import SchemaError, validate
from .trace import TraceError, parse_path, split_line
from .calls import Program, VerbCall, call_from_line, class_name, verb_class, verb_classes

__all__ = [
    "__version__",
    "Contract", "ContractError", "default_dir", "load", "load_schema",
    "SchemaError", "validate", "TraceError", "parse_path", "split_line",
    "Program", "VerbCall", "call_from_line", "class_name", "verb_class", "verb_classes",
]
