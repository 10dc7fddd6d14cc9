# SPDX-License-Identifier: BSD-3-Clause
"""python3 -m srq_contracts COMMAND ...

    validate [DIR]                  check every contract (schema + consistency)
    replay TRACE [-o PROG.c]        a trace as a C program (srq-verbs-replay)
    gen-trace OUT.h OUT.c           the tracer's formatters (build step)
    gen-fuzz OUT.h                  the fuzzer's contract tables (build step)
    list                            verbs, their failures and post-conditions
    verbs-py [VERB ...] [-o FILE | --into VERBS_PY | --print]
                                    classes for the rdma-fuzzing framework's
                                    verbs.py (all verbs without VERB)
"""
import argparse
import sys

from . import contracts as _contracts
from . import trace as _trace
from . import __version__


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="srq_contracts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--contracts", help="the contracts folder (default: %(default)s)",
                    default=_contracts.default_dir())
    ap.add_argument("--version", action="version",
                    version="srq_contracts (ucx-srq) " + __version__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("validate")
    v.add_argument("dir", nargs="?")
    r = sub.add_parser("replay")
    r.add_argument("trace")
    r.add_argument("-o", "--output")
    t = sub.add_parser("gen-trace")
    t.add_argument("header")
    t.add_argument("source")
    f = sub.add_parser("gen-fuzz")
    f.add_argument("header")
    sub.add_parser("list")
    vp = sub.add_parser("verbs-py")
    vp.add_argument("verbs", nargs="*", metavar="VERB")
    vp.add_argument("-o", "--output")
    vp.add_argument("--into", metavar="VERBS_PY",
                    help="put the classes into the framework's lib/verbs.py, in place of its own")
    vp.add_argument("--print", action="store_true",
                    help="print them with the instructions for pasting by hand (the default)")
    args = ap.parse_args(argv)

    try:
        if args.cmd == "validate":
            cs = _contracts.load(args.dir or args.contracts)
            print("%d contracts valid" % len(cs))
        elif args.cmd == "replay":
            from . import replay
            text = replay.program(_trace.read_lines(args.trace), args.trace,
                                  args.contracts)
            if args.output:
                _write(args.output, text)
            else:
                sys.stdout.write(text)
        elif args.cmd == "gen-trace":
            from . import ctrace
            h, c = ctrace.generate(_contracts.load(args.contracts))
            _write(args.header, h)
            _write(args.source, c)
        elif args.cmd == "gen-fuzz":
            from . import cfuzz
            _write(args.header, cfuzz.generate(_contracts.load(args.contracts)))
        elif args.cmd == "verbs-py":
            from . import verbspy
            try:
                text = verbspy.generate(_contracts.load(args.contracts), args.verbs)
            except KeyError as e:
                raise _contracts.ContractError(e.args[0])
            if args.into:
                print(verbspy.install(args.into, text))
            elif args.output:
                _write(args.output, text)
            else:
                sys.stdout.write(text)
        elif args.cmd == "list":
            for verb, c in sorted(_contracts.load(args.contracts).items()):
                print("%s: %s" % (verb, c.data["summary"]))
                for f in c.data["failures"]:
                    what = f.get("errno") or f.get("wc_status") or f.get("event")
                    print("    fails %-28s %-22s %s" % (f["id"], what, f["condition"]))
                for p in c.data["postconditions"]:
                    print("    then  %-28s %s" % (p["id"], p["doc"]))
    except (_contracts.ContractError, _trace.TraceError) as e:
        print("srq_contracts: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("srq_contracts: %s: %s" % (e.filename, e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
