# SPDX-License-Identifier: BSD-3-Clause
"""A trace (SRQ_VERBS_TRACE) as a standalone C program that makes the same
calls on any device (srq-verbs-replay)."""
from . import calls as _calls
from . import trace as _trace


def program(lines, source="trace", directory=None):
    """The C text of a program replaying @lines (an iterable of trace lines)"""
    prog = _calls.Program(strict=True)
    body = []
    for lineno, line in enumerate(lines, 1):
        try:
            call = _calls.call_from_line(line, lineno, directory)
            if call is not None:
                body.append(call.to_c(prog))
        except _trace.TraceError as e:
            raise _trace.TraceError("%s:%d: %s" % (source, lineno, e))
    return prog.render("\n".join(body), source)
